/* reduce_ref.c — the host side's exact view of a %reduce input: the seeded
 * generator on the host, and the double-precision reference every result is
 * checked against (which is also what `cub` means on the CPU backend).
 *
 * The reference regenerates elements from (seed, index) as it goes, so
 * checking a 2^30-element GPU run needs no host copy of the input. Work is cut
 * into fixed chunks, not per-thread ranges, and chunk results are combined in
 * chunk order: the result is the same whatever the host's core count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce_cpu.h"

#define CHUNK (1u << 16)

/* ---- the generator ---- */

typedef struct fill_job {
    void *in;
    cl_reduce_dtype dt;
    uint64_t seed;
} fill_job;

static void fill_range(uint64_t first, uint64_t last, void *ctx)
{
    const fill_job *j = ctx;
    if (j->dt == CL_REDUCE_FLOAT)
        for (uint64_t i = first; i < last; i++)
            ((float *)j->in)[i] = cl_uniform(j->seed, i);
    else
        for (uint64_t i = first; i < last; i++)
            ((int32_t *)j->in)[i] = cl_uniform_int(j->seed, i, CL_REDUCE_INT_LO, CL_REDUCE_INT_HI);
}

int cpu_reduce_fill(void *in, uint64_t n, cl_reduce_dtype dt, uint64_t seed, int threads)
{
    fill_job j = {in, dt, seed};
    return cl_parallel_ranges(n, threads, fill_range, &j) > 0 ? 0 : -1;
}

/* ---- one reduction of a buffer, in chunks ---- */

typedef struct chunk_job {
    const cl_reduce_args *a;
    const void *in;
    double *part;
} chunk_job;

/* Whole chunks from c on, GROUP at a time side by side: one accumulator per
 * chunk, each still adding its chunk's elements in order, so that the
 * additions of different chunks overlap instead of waiting on each other.
 * Inlined with op and dt constant: no switch in the loop. Returns the first
 * chunk left. */
#define GROUP 4

static inline __attribute__((always_inline)) uint64_t chunk_groups(const chunk_job *j, uint64_t c, uint64_t last,
                                                                   cl_reduce_op op, cl_reduce_dtype dt)
{
    for (; c + GROUP <= last && (c + GROUP) * CHUNK <= j->a->n; c += GROUP) {
        double acc[GROUP];
        for (int g = 0; g < GROUP; g++)
            acc[g] = acc_identity(op);
        for (uint64_t i = c * CHUNK; i < (c + 1) * CHUNK; i++) {
#pragma GCC unroll 4
            for (int g = 0; g < GROUP; g++)   /* in double: no rounding to float */
                acc[g] = acc_apply(op, CL_REDUCE_INT, acc[g], elem(j->in, dt, i + (uint64_t)g * CHUNK));
        }
        for (int g = 0; g < GROUP; g++)
            j->part[c + (uint64_t)g] = acc[g];
    }
    return c;
}

CL_HOT static void chunk_range(uint64_t first, uint64_t last, void *ctx)
{
    const chunk_job *j = ctx;
    cl_reduce_op op = j->a->op;
#define GROUPS(op_, dt) chunk_groups(j, first, last, op_, dt)
    uint64_t c = REDUCE_BY_KIND(op, j->a->dtype, GROUPS);
#undef GROUPS
    for (; c < last; c++) {
        uint64_t lo = c * CHUNK, hi = lo + CHUNK < j->a->n ? lo + CHUNK : j->a->n;
        double acc = acc_identity(op);
        for (uint64_t i = lo; i < hi; i++)   /* in double: no rounding to float */
            acc = acc_apply(op, CL_REDUCE_INT, acc, elem(j->in, j->a->dtype, i));
        j->part[c] = acc;
    }
}

double cpu_reduce_chunked(const cl_reduce_args *a, const void *in, int threads, int *ok)
{
    uint64_t chunks = (a->n + CHUNK - 1) / CHUNK;
    double *part = malloc(chunks * sizeof *part);
    *ok = part != NULL;
    if (!part)
        return NAN;
    chunk_job j = {a, in, part};
    cl_parallel_ranges(chunks, threads, chunk_range, &j);
    double acc = acc_identity(a->op);
    for (uint64_t c = 0; c < chunks; c++)
        acc = acc_apply(a->op, CL_REDUCE_INT, acc, part[c]);
    free(part);
    return acc;
}

/* ---- the reference: every operation at once, generated on the fly ---- */

typedef struct ref_job {
    uint64_t n, seed;
    cl_reduce_dtype dt;
    cl_reduce_ref *part;
} ref_job;

static void ref_range(uint64_t first, uint64_t last, void *ctx)
{
    const ref_job *j = ctx;
    for (uint64_t c = first; c < last; c++) {
        uint64_t lo = c * CHUNK, hi = lo + CHUNK < j->n ? lo + CHUNK : j->n;
        cl_reduce_ref r = {0, -INFINITY, INFINITY, 0, INT64_MIN, INT64_MAX, 0};
        if (j->dt == CL_REDUCE_FLOAT) {
            for (uint64_t i = lo; i < hi; i++) {
                double x = cl_uniform(j->seed, i);
                r.sum += x;
                r.sum_sq += x * x;
                r.max = x > r.max ? x : r.max;
                r.min = x < r.min ? x : r.min;
            }
        } else {
            for (uint64_t i = lo; i < hi; i++) {
                int64_t x = cl_uniform_int(j->seed, i, CL_REDUCE_INT_LO, CL_REDUCE_INT_HI);
                r.isum += x;
                r.imax = x > r.imax ? x : r.imax;
                r.imin = x < r.imin ? x : r.imin;
            }
        }
        j->part[c] = r;
    }
}

int cl_reduce_reference(uint64_t n, cl_reduce_dtype dtype, uint64_t seed, cl_reduce_ref *out,
                        char *err)
{
    uint64_t chunks = (n + CHUNK - 1) / CHUNK;
    cl_reduce_ref *part = malloc((chunks ? chunks : 1) * sizeof *part);
    if (!part) {
        snprintf(err, CL_ERR_LEN, "out of host memory for the reference (%llu chunks)",
                 (unsigned long long)chunks);
        return -1;
    }
    ref_job j = {n, seed, dtype, part};
    cl_parallel_ranges(chunks, cl_cpu_threads(), ref_range, &j);
    cl_reduce_ref r = {0, -INFINITY, INFINITY, 0, INT64_MIN, INT64_MAX, 0};
    for (uint64_t c = 0; c < chunks; c++) {
        r.sum += part[c].sum;
        r.sum_sq += part[c].sum_sq;
        r.max = part[c].max > r.max ? part[c].max : r.max;
        r.min = part[c].min < r.min ? part[c].min : r.min;
        r.isum += part[c].isum;
        r.imax = part[c].imax > r.imax ? part[c].imax : r.imax;
        r.imin = part[c].imin < r.imin ? part[c].imin : r.imin;
    }
    free(part);
    *out = r;
    return 0;
}

/* ---- a student kernel's partials ----
 * Serial, in the order a student reads them: only student runs, whose inputs
 * fit an int, and the first wrong one ends the walk. */
void cl_reduce_partials_check(uint64_t n, uint64_t seed, uint64_t section, const float *partials,
                              uint64_t count, cl_reduce_partial_check *out)
{
    out->index = -1;
    double lg = log2((double)section);
    double rtol = 1e-5 * (lg > 1 ? lg : 1);
    for (uint64_t b = 0; b < count && out->index < 0; b++) {
        uint64_t lo = b * section, hi = lo + section < n ? lo + section : n;
        double sum = 0, sum_sq = 0;
        for (uint64_t i = lo; i < hi; i++) {
            double x = cl_uniform(seed, i);
            sum += x;
            sum_sq += x * x;
        }
        double scale = fabs(sum) > sqrt(sum_sq) ? fabs(sum) : sqrt(sum_sq);
        double got = partials[b];
        if (!isfinite(got) || !(fabs(got - sum) <= rtol * scale)) {
            out->index = (int64_t)b;
            out->got = got;
            out->want = sum;
        }
    }
}
