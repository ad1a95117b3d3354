/* run.h — a student's kernel as one more variant of its family (worker side).
 *
 * A family magic that meets a student variant in a sweep point asks
 * student_prepare for the kernel to launch: the %%kernel line's options with
 * the point's own on top (STUDENT_RUN_FLAGS), compiled for this device through
 * the cache, with its block, grid, shared memory and launch limit. The run's
 * object then carries student_run_json: "source": "student", the source's
 * hash, the compile and the resources.
 */
#ifndef CUDALAB_STUDENT_RUN_H
#define CUDALAB_STUDENT_RUN_H

#include <jansson.h>
#include <stdbool.h>

#include "cudalab/student.h"
#include "magic/magic.h"
#include "student/compile.h"
#include "student/host_build.h"
#include "student/store.h"

/* The launch limit of a student kernel: CUDALAB_KERNEL_TIMEOUT seconds. */
#define STUDENT_LIMIT_ENV "CUDALAB_KERNEL_TIMEOUT"
#define STUDENT_LIMIT_DEFAULT_S 5.0

/* The flags a family magic adds for student kernels (each a per-run override of
 * the %%kernel line; built-in variants ignore them and run once). The family
 * has its own --block (dimensions, a list), and --grid: its own, or STUDENT_GRID_FLAG. */
#define STUDENT_RUN_FLAGS                                                                          \
    {.name = "define", .short_name = 'D', .type = FLAG_STRING, .opts = FLAG_LIST,                   \
     .help = "your kernels only: -D NAME=VALUE for the compiler; a list sweeps the values "         \
             "(-D UNROLL=1,2,4)"},                                                                  \
    {.name = "smem", .type = FLAG_INT, .imin = 0, .imax = 1 << 20,                                  \
     .help = "your kernels only: dynamic shared memory per block, bytes"},                           \
    {.name = "maxrregcount", .type = FLAG_INT, .imin = 16, .imax = 255,                             \
     .help = "your kernels only: at most this many registers per thread"},                          \
    {.name = "opt-level", .type = FLAG_INT, .imin = 0, .imax = 3,                                   \
     .help = "your kernels only: ptxas optimisation level (-Xptxas -O<n>)"},                         \
    {.name = "fast-math", .type = FLAG_BOOL, .def = "false",                                        \
     .help = "your kernels only: compile with --use_fast_math"},                                     \
    {.name = "sanitize", .type = FLAG_BOOL, .def = "false",                                         \
     .help = "instead of timing: run your kernels at the quick-check size under compute-sanitizer "  \
             "(memcheck, racecheck, synccheck, initcheck) and show what it finds, by line"}, \
    {.name = "cpu-check", .type = FLAG_BOOL, .def = "true",                                         \
     .help = "your kernels only: --no-cpu-check skips their run on the CPU runner at the quick-check " \
             "size (the lesson checks and, on a GPU, its findings: races, uninitialised shared "    \
             "memory, ...) for a live speed demo (so does the %%kernel line's)"}

/* --grid for a family whose built-in variants have none. */
#define STUDENT_GRID_FLAG                                                                          \
    {.name = "grid", .type = FLAG_DIMS, .imin = 1, .imax = 2147483647, .opts = FLAG_LIST,            \
     .help = "your kernels only: blocks in the grid, instead of the family's launch rule; a list sweeps"}

/* The %%kernel line's compile options (also the defaults of a family run). */
#define STUDENT_COMPILE_FLAGS                                                                      \
    {.name = "define", .short_name = 'D', .type = FLAG_STRING, .opts = FLAG_REPEAT,                 \
     .help = "NAME=VALUE (or NAME) defined for the compiler; give -D as many times as needed"},     \
    {.name = "maxrregcount", .type = FLAG_INT, .imin = 16, .imax = 255,                             \
     .help = "at most this many registers per thread"},                                             \
    {.name = "opt-level", .type = FLAG_INT, .imin = 0, .imax = 3,                                   \
     .help = "ptxas optimisation level (-Xptxas -O<n>; 3 by default)"},                              \
    {.name = "fast-math", .type = FLAG_BOOL, .def = "false", .help = "compile with --use_fast_math"}

#define STUDENT_DIAGNOSIS_LEN 4096

typedef struct student_launch {
    const student_def *def;
    student_build build;
    host_build host;                /* the CPU backend's runner (host.path empty on a GPU) */
    cl_student_kernel kernel;       /* points into build, host and def */
    char diagnosis[STUDENT_DIAGNOSIS_LEN];  /* the backend's long explanation of a failed run */
    char sandbox[256];              /* the CPU runner's sandbox layers at the last launch ("a,b,c") */
    json_t *point;                  /* the point it was prepared for (a reference), for the CPU runner's
                                       run of a failed launch on a GPU (student_run_failed) */
} student_launch;

/* The compute capability to compile for (90 for sm_90): the backend's device
 * 0, or 90 where there is no GPU (*modelled set). */
int student_target_cc(const cl_backend *b, int dev, bool *modelled);
/* Everything a backend needs to launch d for one point (tile > 0: a
 * tile×tile block and -D TILE). 0, or -1 with the error in ctx. */
int student_prepare(magic_ctx *ctx, const student_def *d, const json_t *point, int tile, student_launch *out);
void student_launch_free(student_launch *l);
/* {"source": "student", "source_hash", "compile": {...}, "resources": {...}} merged into a run object. */
void student_run_json(const student_launch *l, json_t *run);
json_t *student_resources_json(const student_resources *r);
/* The CPU runner's build of l and its last launch: {"ms", "cached", "one_process"} (its host
 * compile and audit), "sandbox": the layers the launch ran under. */
json_t *student_runner_json(const student_launch *l);

/* Flags that only student kernels honour (keys, NULL-terminated: "define", and
 * "block" where built-in variants have no --block): a built-in variant runs
 * once, at the first value of each. The first values of params, and whether a
 * point is at them. */
json_t *student_first_values(const json_t *params, const char *const *keys);
bool student_at_first(const json_t *firsts, const json_t *point);

/* A student kernel's run failed with the backend's err: the cell error, in a
 * student's terms: TimeoutError past the launch limit; on the CPU runner a
 * KernelError whose traceback is its findings (the backend's diagnosis);
 * else CudaError, with what the CUDA error usually means and what to try; but where the CPU
 * runner's run of the kernel at its quick check's size (the lesson run, cached) finds the bug, its
 * KernelError, as on the CPU backend (bug parity; not under --no-cpu-check).
 * point is the run as the user would write it ("%matmul --m 67 --n 33 --k
 * 129"). Returns -1. */
int student_run_failed(magic_ctx *ctx, const student_launch *l, const char *point, const char *err);


#endif
