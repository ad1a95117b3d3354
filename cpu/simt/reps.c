/* reps.c — a family's student run on the CPU runner (see simt_launch.h): its
 * reps, each on inputs of its own and with its output poisoned, each checked
 * against the family's CPU reference right after its launch (but the last,
 * whose output the family's own check sees), and the counted launch of
 * --counters.
 *
 * Time and correctness belong to the harness: a kernel that keeps an answer
 * for the run's own inputs, leaves a launch unwritten or otherwise returns a
 * result that depends on which launch it is fails the run with "rep R of N
 * ..." (kernel/student/run.c makes that a CheckError). The last rep runs on the
 * run's own seed, so the family's check of what the run returns is unchanged.
 */
#include "simt_launch.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cudalab/host.h"

static void poison(simt_arena *a, const simt_fill *f)
{
    memset(a->host[f->buffer], f->byte, a->hdr->buffers[f->buffer].bytes);
}

/* The reps' own seeds are hashes of the run's seed at indices no input generator reads as one. */
#define REP_SEED_STREAM (0xC0DAull << 48)

uint64_t simt_rep_seed(uint64_t seed, int r, int n)
{
    if (r == n - 1)
        return seed;
    uint64_t s = cl_hash(seed, REP_SEED_STREAM + (uint64_t)r);
    return s == seed ? s + 1 : s;
}

void simt_student_block(const cl_student_kernel *k, unsigned block[3])
{
    for (int i = 0; i < 3; i++)
        block[i] = k->block[i] > 0 ? (unsigned)k->block[i] : 1;
}

void simt_wrong_element(char *what, double got, double want, const char *element, ...)
{
    va_list ap;
    va_start(ap, element);
    int n = vsnprintf(what, CL_ERR_LEN, element, ap);
    va_end(ap);
    if (n < 0 || n >= CL_ERR_LEN)
        return;
    snprintf(what + n, CL_ERR_LEN - (size_t)n, " = %.9g%s, expected %.9g", isnan(got) ? fabs(got) : got,
             isnan(got) ? " (never written?)" : "", want);
}

/* How many launch limits a counted launch may take: counting an access costs up to about twice
 * what checking it does, so a kernel of nothing but loads runs about three times as long. */
#define COUNTED_LIMITS 4

/* --counters: one more launch, counted (cpu/simt/runtime/count.c), after the timed ones, on the
 * last rep's inputs (the run's own seed): they have shown that the kernel ends within the launch
 * limit, so the counted one may take longer for its counting, and a kernel the runner stops costs
 * no counted launch. One that fails leaves the run's counters unavailable with the reason, never
 * the run failed; the output it left half written, which the family checks, is made again by one
 * more plain launch. 0, or -1 with err (k->diagnosis filled) when that launch fails. */
static int counted_launch(simt_arena *a, const cl_student_kernel *k, const unsigned grid[3], const unsigned block[3],
                          size_t dyn_smem, const cl_simt_arg *args, int nargs, const simt_rep_ops *ops, char *err)
{
    cl_student_kernel counted = *k;
    if (counted.limit_ms > 0)
        counted.limit_ms *= COUNTED_LIMITS;
    char why[CL_ERR_LEN] = "";
    double ms = 0;
    poison(a, &ops->poison);
    a->count = true;
    int rc = simt_launch(a, &counted, grid, block, dyn_smem, args, nargs, &ms, why);
    a->count = false;
    if (rc == 0) {
        simt_counters_took(a);
        return 0;
    }
    simt_counters_failed(why);
    poison(a, &ops->poison);
    return simt_launch(a, k, grid, block, dyn_smem, args, nargs, &ms, err);
}

/* Rep r of n (from 0) of a run of seed returned a wrong result, described in what: why, in words
 * beginning "rep R of N ", into err. An output that is the reference of another rep's inputs (the
 * one before first: a replay) says so. 0, or -1 when a check could not run (err says why). */
static int rep_wrong(simt_arena *a, const simt_rep_ops *ops, void *ctx, uint64_t seed, int r, int n,
                     const char *what, char *err)
{
    char other[CL_ERR_LEN];
    for (int i = 1; i < n; i++) {
        int q = (r - i + n) % n;    /* r-1, r-2, ..., 0, then n-1 down to r+1 */
        int c = ops->check(a, ctx, simt_rep_seed(seed, q, n), other);
        if (c < 0) {
            snprintf(err, CL_ERR_LEN, "%s", other);
            return -1;
        }
        if (c == 0) {
            snprintf(err, CL_ERR_LEN, "rep %d of %d returned a result of other inputs (rep %d's)", r + 1, n, q + 1);
            return 0;
        }
    }
    snprintf(err, CL_ERR_LEN, "rep %d of %d returned a wrong result: %.*s", r + 1, n, CL_ERR_LEN - 64, what);
    return 0;
}

/* The lesson checks' run (simt_lesson_mode): the counted launch alone, on the run's own inputs, its
 * lesson kept even when the runner found something (then the launch's error is the run's). */
static int lesson_launch(simt_arena *a, const cl_student_kernel *k, const unsigned grid[3], const unsigned block[3],
                         size_t dyn_smem, const cl_simt_arg *args, int nargs, uint64_t seed, const simt_rep_ops *ops,
                         void *ctx, cl_times *times, char *err)
{
    if (ops->prepare(a, ctx, seed, err) != 0)
        return -1;
    cl_student_kernel counted = *k;
    if (counted.limit_ms > 0)
        counted.limit_ms *= COUNTED_LIMITS;
    poison(a, &ops->poison);
    double ms = 0;
    a->count = a->quiet = true;
    int rc = simt_launch(a, &counted, grid, block, dyn_smem, args, nargs, &ms, err);
    a->count = a->quiet = false;
    if (a->hdr->report.done)
        simt_counters_took(a);
    else
        simt_counters_failed(err);
    times->ms[times->reps++] = (float)ms;
    times->reps_checked = times->reps;      /* the one launch, the family's check's */
    return rc;
}

int simt_run_student(simt_arena *a, const cl_student_kernel *k, const unsigned grid_rule[3], size_t dyn_smem,
                     const cl_simt_arg *args, int nargs, int reps, uint64_t seed, const simt_rep_ops *ops,
                     void *ctx, cl_times *times, cl_launch *launch, char *err)
{
    unsigned block[3], grid[3];
    simt_student_block(k, block);
    for (int i = 0; i < 3; i++)
        grid[i] = k->grid[0] > 0 ? (unsigned)(k->grid[i] > 0 ? k->grid[i] : 1) : grid_rule[i];
    memset(launch, 0, sizeof *launch);
    for (int i = 0; i < 3; i++)
        launch->grid[i] = (int)grid[i], launch->block[i] = (int)block[i];
    launch->smem_bytes = dyn_smem;
    launch->kernels = 1;
    int n = reps == CL_REPS_AUTO || reps > CL_SIMT_MAX_REPS ? CL_SIMT_MAX_REPS : reps < 1 ? 1 : reps;
    /* under --counters the family checks the counted launch's output, not the last rep's */
    bool counted = simt_counters_due();
    times->reps = 0;
    if (simt_lesson_mode())
        return lesson_launch(a, k, grid, block, dyn_smem, args, nargs, seed, ops, ctx, times, err);
    /* the first rep that returned a wrong result, and why in words */
    int wrong = -1;
    char why[CL_ERR_LEN] = "", what[CL_ERR_LEN];
    for (int r = 0; r < n; r++) {
        uint64_t rs = simt_rep_seed(seed, r, n);
        if (ops->prepare(a, ctx, rs, err) != 0)
            return -1;
        poison(a, &ops->poison);
        double ms = 0;
        if (simt_launch(a, k, grid, block, dyn_smem, args, nargs, &ms, err) != 0)
            return -1;
        times->ms[times->reps++] = (float)ms;
        cl_rep_done();
        if (ops->landed)
            ops->landed(a, ctx);
        if (r == n - 1 && !counted)
            break;                  /* what the run returns: the family checks it */
        int c = ops->check(a, ctx, rs, what);
        if (c < 0) {
            snprintf(err, CL_ERR_LEN, "%s", what);
            return -1;
        }
        if (c > 0 && wrong < 0) {
            if (rep_wrong(a, ops, ctx, seed, r, n, what, why) != 0) {
                snprintf(err, CL_ERR_LEN, "%s", why);
                return -1;
            }
            wrong = r;
            if (r < n - 2)
                r = n - 2;          /* straight to the last rep: with it, what the run returns decides */
        }
    }
    if (counted && counted_launch(a, k, grid, block, dyn_smem, args, nargs, ops, err) != 0)
        return -1;
    /* every rep checked here, the last by the family's check (or here too, under --counters); a wrong
     * rep ends the checks, and the reps before it were right */
    times->reps_checked = wrong < 0 ? times->reps : wrong;
    if (wrong < 0)
        return 0;
    /* a rep was wrong, and what the run returns (the run's own inputs) is right: a result that
     * depends on which launch it is (an answer kept for those inputs, a launch left unwritten, a
     * race), the rep's error; wrong too: a wrong kernel, which the family's check describes as any */
    int c = ops->check(a, ctx, seed, what);
    if (c < 0) {
        snprintf(err, CL_ERR_LEN, "%s", what);
        return -1;
    }
    if (c == 0) {
        snprintf(err, CL_ERR_LEN, "%s", why);
        return -1;
    }
    return 0;
}
