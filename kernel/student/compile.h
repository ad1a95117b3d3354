/* compile.h — a student's kernel from a cell's source to machine code for one
 * device (worker side), through a cache.
 *
 * The source is given to NVRTC as the cell has it, after a #line directive so
 * that every diagnostic carries the cell's own line numbers, and followed by
 * a few lines of ours that check the kernel's signature against its family's
 * contract at compile time. Always -lineinfo (the sanitizer and fault reports
 * map back to lines) and ptxas -v (registers, shared memory and spills, read
 * from the log, so they are known without a GPU). The log is translated for a
 * student: line numbers of the cell, demangled names, our own checks in plain
 * words, NVRTC's boilerplate dropped.
 *
 * Builds are cached by a hash of the program, the options, the NVRTC version
 * and the architecture: in memory for the session's life (the worker's
 * session, magic/lab_session.h: the part LAB_BUILDS, ctx->lab), and on disk
 * ($CUDALAB_CACHE_DIR, else $XDG_CACHE_HOME/cudalab/kernels, else
 * ~/.cache/cudalab/kernels) so that re-running a notebook in a new session
 * compiles nothing.
 */
#ifndef CUDALAB_STUDENT_COMPILE_H
#define CUDALAB_STUDENT_COMPILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "cudalab/student.h"
#include "magic/magic.h"
#include "student/source_scan.h"     /* what is read from a source without compiling it */

/* The options a student changes (on the %%kernel line, or per run on the family magic). */
typedef struct student_options {
    json_t *defines;                /* array of "NAME=VALUE" / "NAME" strings (borrowed) */
    int maxrregcount;               /* 0: the compiler's choice */
    int opt_level;                  /* ptxas -O level 0..3; -1: the default (3) */
    bool fast_math;
} student_options;

typedef struct student_resources {
    int registers;                  /* per thread */
    int static_smem;                /* bytes per block */
    int stack;                      /* bytes of stack frame per thread */
    int spill_stores, spill_loads;  /* bytes */
    int barriers;
    bool known;                     /* ptxas reported the entry */
} student_resources;

typedef struct student_build {
    char key[65];                   /* the cache key */
    char arch[16];                  /* "sm_90" */
    void *cubin;
    size_t cubin_bytes;
    char *lowered;                  /* the entry's mangled name */
    json_t *warnings;               /* array of translated lines, [] when none */
    json_t *options;                /* the NVRTC options used, as strings */
    student_resources res;
    double ms;                      /* compile (or cache lookup) time */
    bool cached;
} student_build;

/* What a kernel is: its name, its family's contract and source. first_line is
 * the cell line the source starts on. */
typedef struct student_source {
    const char *name;
    const char *magic;              /* the family's magic ("matmul"), for messages */
    const cl_student_contract *contract;
    const char *text;
    int first_line;
} student_source;

/* Compiles (or finds in the cache) for compute capability cc (90 = sm_90).
 * 0 with *out filled (student_build_free it), or -1 with the error in ctx:
 * CompileError with the translated log as traceback lines, or RuntimeError
 * when NVRTC is missing or fails. */
int student_compile(magic_ctx *ctx, const student_source *src, const student_options *o, int cc,
                    student_build *out);
void student_build_free(student_build *b);

/* Translates an NVRTC log (exposed for tests): diagnostics with the cell's
 * line numbers, into errors and warnings (arrays of lines, appended to); the
 * entry's resources from ptxas -v into *res. Returns the number of errors. */
int student_translate_log(const char *log, const student_source *src, const char *lowered,
                          json_t *errors, json_t *warnings, student_resources *res);

/* The cache's directory (see above) into buf: 0, or -1 when there is none. */
int student_cache_dir(char *buf, size_t len);

#endif
