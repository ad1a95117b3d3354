/* measure.h — what every timed family shares, on both sides of the backend ABI:
 * the seeded input generator, the launch description and the raw timings.
 *
 * Inputs are generated from (seed, index) by a counter-based hash, so the GPU
 * fills its buffers in parallel and the CPU reference regenerates exactly the
 * same values without copying them back. Never zeros.
 */
#ifndef CUDALAB_MEASURE_H
#define CUDALAB_MEASURE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __CUDACC__
#define CL_HD __host__ __device__ __forceinline__
#else
#define CL_HD static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define CL_MAX_REPS 1000

/* --reps auto (the default on a GPU): timed reps go on until the median has
 * settled, i.e. its 95% confidence interval lies within CL_REPS_SETTLED of it
 * (relative half-width), after at least CL_REPS_AUTO_MIN reps; or until the
 * reps have timed CL_REPS_AUTO_BUDGET_MS of work, or CL_MAX_REPS, whichever
 * comes first. A run's args carry CL_REPS_AUTO where they would carry a count. */
#define CL_REPS_AUTO 0
#define CL_REPS_AUTO_MIN 10
#define CL_REPS_SETTLED 0.01
#define CL_REPS_AUTO_BUDGET_MS 2000.0

/* On a GPU, the timed reps whose results the harness checks after the timed loop against its own
 * reference on the same inputs (cuda/common.h, cl_cuda_reps, says how they are drawn). Each keeps
 * a device copy of the run's output until then: memory budgets count that many copies. */
#define CL_GPU_CHECKED_REPS 2

/* The copies of a run's output a GPU keeps for the check of its timed reps: CL_GPU_CHECKED_REPS
 * drawn, or under --check-reps all one for each timed rep the run takes: --reps N, or under --reps
 * auto the CL_REPS_AUTO_MIN it always takes (counting its most, CL_MAX_REPS, would refuse every
 * large size that auto settles on long before; the copies of reps past the minimum are allocated as
 * they run, and one that finds no room fails the run saying so), never fewer than the drawn ones
 * (allocated whatever is asked). Memory budgets count this many, so that a size whose copies cannot
 * fit is refused before it runs. */
static inline int cl_gpu_kept_copies(int check_all, int reps)
{
    int n = !check_all ? CL_GPU_CHECKED_REPS
          : reps == CL_REPS_AUTO ? CL_REPS_AUTO_MIN : reps > CL_MAX_REPS ? CL_MAX_REPS : reps;
    return n < CL_GPU_CHECKED_REPS ? CL_GPU_CHECKED_REPS : n;
}

/* A budget's count of kept copies as a family's args carry it (0: not said, the drawn ones). */
static inline int cl_gpu_copies_or_drawn(int kept_copies)
{
    return kept_copies > CL_GPU_CHECKED_REPS ? kept_copies : CL_GPU_CHECKED_REPS;
}

/* splitmix64 of (seed, i): the same 64 random bits on host and device. */
CL_HD uint64_t cl_hash(uint64_t seed, uint64_t i)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform float in [-1, 1), never exactly 0, with 24 random bits. */
CL_HD float cl_uniform(uint64_t seed, uint64_t i)
{
    uint32_t r = (uint32_t)(cl_hash(seed, i) >> 40);          /* 24 bits */
    return ((float)r + 0.5f) * (2.0f / 16777216.0f) - 1.0f;
}

/* Uniform int in [lo, hi]. */
CL_HD int32_t cl_uniform_int(uint64_t seed, uint64_t i, int32_t lo, int32_t hi)
{
    uint64_t span = (uint64_t)((int64_t)hi - lo + 1);
    return (int32_t)(lo + (int64_t)(cl_hash(seed, i) % span));
}

/* How one variant was launched: its main kernel (a family may report a second
 * pass separately, e.g. "launch_final" for a reduction's pass over the partials). */
typedef struct cl_launch {
    int grid[3], block[3];
    size_t smem_bytes;          /* static + dynamic shared memory per block */
    int regs_per_thread;        /* from cudaFuncGetAttributes; 0 on the CPU */
    int kernels;                /* launches per timed run (2 for a two-pass reduction) */
} cl_launch;

/* Raw timings of one run: the caller turns them into statistics. */
typedef struct cl_times {
    int reps;
    int reps_checked;           /* of those, the reps whose result the backend checked on their own inputs (a run
                                   of the check's reference itself, or of the CPU runner's own code, counts all):
                                   what the run's check.reps_checked says, from the backend, never inferred */
    float ms[CL_MAX_REPS];      /* device time of each timed rep (CUDA events around the kernels only,
                                   less what an empty pair of them measures: cl_conditions) */
    double h2d_ms, d2h_ms;      /* transfers, when the command moves data; 0 otherwise */
} cl_times;

/* A run of cudalab's own code (the check's reference itself, or the CPU runner's analogue of a
 * built-in variant, each rep the same computation as the one whose result the family checks):
 * every timed rep counts as checked. */
static inline void cl_times_trusted(cl_times *t)
{
    t->reps_checked = t->reps;
}

static inline int cl_cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The median of sorted[0..n) and the relative half-width of its 95%
 * confidence interval: distribution-free, between the order statistics
 * n/2 -/+ 0.98 sqrt(n) (the binomial bound; no normality assumed, as timings
 * are skewed). 0 for n < 2 or a zero median. */
static inline double cl_median_sorted(const float *sorted, int n)
{
    return n < 1 ? 0 : n % 2 ? sorted[n / 2] : 0.5 * ((double)sorted[n / 2 - 1] + sorted[n / 2]);
}

static inline double cl_median_ci_rel(const float *sorted, int n)
{
    double med = cl_median_sorted(sorted, n);
    if (n < 2 || med <= 0)
        return 0;
    double half = 0.98 * sqrt((double)n);
    int lo = (int)(n / 2.0 - half), hi = (int)ceil(n / 2.0 + half);
    lo = lo < 0 ? 0 : lo;
    hi = hi > n - 1 ? n - 1 : hi;
    return (sorted[hi] - sorted[lo]) / (2 * med);
}

/* Whether the timings in t (t->reps so far) have settled: the median's
 * confidence interval within CL_REPS_SETTLED, after CL_REPS_AUTO_MIN reps. */
static inline int cl_times_settled(const cl_times *t)
{
    int n = t->reps < 0 ? 0 : t->reps > CL_MAX_REPS ? CL_MAX_REPS : t->reps;
    if (n < CL_REPS_AUTO_MIN)
        return 0;
    float s[CL_MAX_REPS];
    memcpy(s, t->ms, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cl_cmp_float);
    return cl_median_ci_rel(s, n) <= CL_REPS_SETTLED;
}

/* Whether a runner takes another timed rep, t->reps counting those taken:
 * reps is the count asked for, or CL_REPS_AUTO (above). Every timed loop is
 *     for (t->reps = 0; cl_rep_more(a->reps, t); t->reps++) { time one rep into t->ms[t->reps] }
 * The settling test runs every 5th rep: a sort of up to CL_MAX_REPS floats
 * between reps is host time, not timed, but no reason to spend it each rep. */
static inline int cl_rep_more(int reps, const cl_times *t)
{
    if (t->reps >= CL_MAX_REPS)
        return 0;
    if (reps != CL_REPS_AUTO)
        return t->reps < reps;
    if (t->reps < CL_REPS_AUTO_MIN)
        return 1;
    double sum = 0;
    for (int i = 0; i < t->reps; i++)
        sum += t->ms[i];
    if (sum >= CL_REPS_AUTO_BUDGET_MS)
        return 0;
    return t->reps % 5 != 0 || !cl_times_settled(t);
}

#ifdef __cplusplus
}
#endif
#endif
