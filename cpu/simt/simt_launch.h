/* simt_launch.h — the CPU backend's side of the CPU runner (cpu/simt/): a family's
 * run function lays out the launch's buffers in an arena, fills its inputs,
 * and launches a student's kernel; the runner process (cpu/simt/runtime/)
 * runs it under its checks and leaves a report, which becomes the run's
 * error in the student's terms: block, thread, line, and the element as the
 * family names it (C[4][7]).
 *
 *     simt_arena a;
 *     simt_buffer specs[] = {{"A", m*k*4, 4, CL_SIMT_IN, m, k}, ...};
 *     simt_arena_open(&a, specs, 3, err);        // a.host[i]: fill the inputs here
 *     simt_launch(&a, kernel, grid, block, smem, args, 6, &ms, err);
 *     ... read the output at a.host[2] ...
 *     simt_arena_close(&a);
 */
#ifndef CUDALAB_CPU_SIMT_H
#define CUDALAB_CPU_SIMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cudalab/backend.h"
#include "cudalab/measure.h"
#include "cudalab/simt.h"
#include "cudalab/student.h"

typedef struct simt_buffer {
    const char *name;
    uint64_t bytes;
    uint32_t elem_bytes;
    uint32_t flags;                 /* CL_SIMT_IN / OUT / ONE_WRITER */
    int64_t rows, cols;             /* rows 0: a vector */
} simt_buffer;

typedef struct simt_arena {
    int fd;
    unsigned char *base;
    uint64_t bytes;
    cl_simt_launch *hdr;
    void *host[CL_SIMT_MAX_BUFFERS];  /* each buffer, where the parent fills and reads it */
    bool count;                     /* the next launch is the counted one of --counters */
    bool quiet;                     /* its printf output goes nowhere (the lesson checks' run: the
                                       cell showed the kernel's own run's) */
    int site_line[CL_SIMT_MAX_SITES + 2];   /* after a counted launch: the cell line of each of its
                                               report's lesson.sites, then of its worst_pc and lost_pc
                                               (0: unknown) */
} simt_arena;

/* Lays out n buffers (at most CL_SIMT_MAX_BUFFERS) in a new arena. 0, or -1
 * with err (the arena's limit, out of memory). */
int simt_arena_open(simt_arena *a, const simt_buffer *b, int n, char *err);
void simt_arena_close(simt_arena *a);

/* Runs k (the runner k->host_runner loading k->host_object) over grid × block
 * with dyn_smem bytes of extern __shared__ and the arguments in the contract's
 * order. 0 with the grid's wall time in *ms, measured here (from the runner's
 * last word before the kernel to its exit), and the sandbox's layers in
 * k->sandbox; -1 with a one-line err when the launch is refused (limits)
 * or the runner found something, and then the whole report in k->diagnosis. */
int simt_launch(simt_arena *a, const cl_student_kernel *k, const unsigned grid[3], const unsigned block[3],
                size_t dyn_smem, const cl_simt_arg *args, int nargs, double *ms, char *err);

/* How a student's kernel runs here, in words (a run's config). */
#define SIMT_CONFIG "the CPU runner: threads as fibers with real barriers, blocks in host processes, " \
                    "every access checked (CPU times)"

/* What is written over a buffer before each launch: every byte of it
 * (SIMT_NAN: a NaN in every float, which no kernel computes, so an element a
 * launch leaves unwritten fails the check; 0: bins counted from zero). */
typedef struct simt_fill {
    int buffer;
    unsigned char byte;
} simt_fill;
#define SIMT_NAN 0xFF

/* A family's part in its student run: every rep gets inputs of its own, made
 * from a seed of its own (simt_rep_seed) before the launch and outside its
 * time, and a poisoned output, and is checked against the family's CPU
 * reference of its inputs right after its launch. The last rep runs on the
 * run's own seed: what the run returns (its output, or under --counters the
 * counted launch's on the same inputs) is left to the family's own check in
 * its magic, unchanged. ctx: the family's state. */
typedef struct simt_rep_ops {
    /* The inputs of seed, into the arena. 0, or -1 with err. */
    int (*prepare)(simt_arena *a, void *ctx, uint64_t seed, char *err);
    /* After every timed launch, before its check (NULL: nothing): what the
     * family does with the output as the rep's own work (vecadd's timed copy back). */
    void (*landed)(simt_arena *a, void *ctx);
    /* The output in the arena against the reference of seed's inputs: 0 when
     * right, 1 when wrong with the first wrong element in what ("C[3][4] =
     * 0, expected 1.25"), -1 when it cannot be checked, with why in what. */
    int (*check)(simt_arena *a, void *ctx, uint64_t seed, char *what);
    simt_fill poison;               /* the output, before every launch */
} simt_rep_ops;

/* A rep's wrong element in words, into what (CL_ERR_LEN bytes): "C[3][4] = 0,
 * expected 1.25", a NaN as "nan (never written?)" (the poison). element: the
 * element's name, as printf's format and arguments. */
void simt_wrong_element(char *what, double got, double want, const char *element, ...)
    __attribute__((format(printf, 4, 5)));

/* The seed of rep r (from 0) of n of a run of seed: the run's own for the
 * last, for each other one derived from it and from r. The one rule for every
 * family on the CPU runner. */
uint64_t simt_rep_seed(uint64_t seed, int r, int n);

/* A family's student run: k's block, its grid or the family's rule, then
 * min(reps, CL_SIMT_MAX_REPS) launches as simt_rep_ops says, and under
 * --counters one more on the last rep's inputs, counted (simt_counters_due).
 * Times and the launch as the run reports them. 0 (what the run returns in
 * the arena), or -1 with err: a launch failed (k->diagnosis filled), or a rep
 * returned a wrong result while what the run returns is right (err "rep R of
 * N returned a wrong result: ..." or "rep R of N returned a result of other
 * inputs (rep Q's)"). A kernel wrong on the run's own inputs too returns 0:
 * the family's check says what is wrong, as for any wrong kernel. */
int simt_run_student(simt_arena *a, const cl_student_kernel *k, const unsigned grid_rule[3], size_t dyn_smem,
                     const cl_simt_arg *args, int nargs, int reps, uint64_t seed, const simt_rep_ops *ops,
                     void *ctx, cl_times *times, cl_launch *launch, char *err);

/* The block a student's kernel runs with (its dimensions, missing ones 1). */
void simt_student_block(const cl_student_kernel *k, unsigned block[3]);

/* ---- --counters (counters.c): the CPU backend's simulated counts ---- */
/* cl_backend.set_counters and cl_backend.counters of the CPU backend. Reading a run's counters
 * ends its account: the next run starts uncounted. */
void cl_cpu_set_counters(int on);
int cl_cpu_counters(cl_counters *out);
/* Whether the current run still wants its counted launch (--counters, none made yet). */
bool simt_counters_due(void);
/* The current run is the lesson checks' (cl_cpu_lesson_mode, counters due): one counted launch. */
bool simt_lesson_mode(void);
/* The counted launch's outcome: its report's counts and lesson (in a's header, with the lines of
 * the lesson's instructions and the output it left), or why it failed (err). */
void simt_counters_took(const simt_arena *a);
void simt_counters_failed(const char *err);
/* A counted launch's counts under --counters' names (CL_COUNTERS). */
void simt_counters_of(const cl_simt_counts *c, cl_counters *out);

/* Where a launch's code lay, as the runner said before the kernel started: the student's object
 * and the addresses its code sections were loaded at, for the cell lines of a finding's address. */
#define SIMT_MAX_SECTIONS 64
typedef struct simt_code {
    const char *object;
    struct {
        char name[64];
        uint64_t addr, size;
    } sections[SIMT_MAX_SECTIONS];
    int nsections;
} simt_code;

/* The cell lines of n code addresses (0 where unknown), through addr2line. */
void simt_lines(const simt_code *code, const uint64_t *pcs, int n, int *lines);

/* The report's findings in words, one per line, each with its count
 * (cpu/simt/report.c). code: where the kernel's code lay (NULL: unknown), for
 * the lines of its addresses. Returns the headline (the first finding) in err. */
void simt_explain(const cl_simt_launch *l, const simt_code *code, char *out, size_t len, char *err);

#endif
