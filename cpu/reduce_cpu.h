/* reduce_cpu.h — what the CPU backend's %reduce files share: the arithmetic
 * every CPU analogue uses, and the emulated launch (host threads from
 * cpu/common as a CUDA grid).
 *
 * Values travel as double. That loses nothing: an int sum of N elements in
 * [-1000, 1000] stays below 2^53 for every N that fits in memory, so it is
 * exact; and rounding the double result of a float addition back to float
 * (acc_apply does) gives exactly the float sum the GPU computes, because a
 * double holds more than twice a float's precision. So one code path serves
 * both types and the float results follow the GPU's float rounding.
 */
#ifndef CUDALAB_CPU_REDUCE_CPU_H
#define CUDALAB_CPU_REDUCE_CPU_H

#include <math.h>
#include <stdint.h>

#include "common/cpu_common.h"
#include "cudalab/reduce.h"

/* KIND(OP, DT) with op and dt turned into constants: each (op, dtype) gets
 * its own copy of the inlined loops KIND expands to, with no switch left
 * inside them. An expression (void, or of one type in every case). */
#define REDUCE_BY_KIND(op, dt, KIND)                                                                         \
    ((dt) == CL_REDUCE_FLOAT                                                                                \
         ? ((op) == CL_REDUCE_SUM   ? KIND(CL_REDUCE_SUM, CL_REDUCE_FLOAT)                                  \
            : (op) == CL_REDUCE_MAX ? KIND(CL_REDUCE_MAX, CL_REDUCE_FLOAT)                                  \
                                    : KIND(CL_REDUCE_MIN, CL_REDUCE_FLOAT))                                 \
         : ((op) == CL_REDUCE_SUM   ? KIND(CL_REDUCE_SUM, CL_REDUCE_INT)                                    \
            : (op) == CL_REDUCE_MAX ? KIND(CL_REDUCE_MAX, CL_REDUCE_INT)                                    \
                                    : KIND(CL_REDUCE_MIN, CL_REDUCE_INT)))

static inline double acc_identity(cl_reduce_op op)
{
    return op == CL_REDUCE_SUM ? 0.0 : op == CL_REDUCE_MAX ? -INFINITY : INFINITY;
}

/* a (op) b, rounded as the variant's accumulator type rounds (float for float input). */
static inline double acc_apply(cl_reduce_op op, cl_reduce_dtype dt, double a, double b)
{
    if (op == CL_REDUCE_SUM) {
        double s = a + b;
        return dt == CL_REDUCE_FLOAT ? (double)(float)s : s;
    }
    if (op == CL_REDUCE_MAX)
        return a > b ? a : b;
    return a < b ? a : b;
}

static inline double elem(const void *in, cl_reduce_dtype dt, uint64_t i)
{
    return dt == CL_REDUCE_FLOAT ? (double)((const float *)in)[i] : (double)((const int32_t *)in)[i];
}

/* One emulated launch of a variant's first pass and, when it has more than
 * one block, of the pass over its partials (cpu/reduce_blocks.c). */
typedef struct cpu_launch_cfg {
    uint64_t grid;               /* blocks of the first pass */
    unsigned block;              /* emulated threads per block */
    int threads;                 /* host threads */
} cpu_launch_cfg;

/* The block analogues' shape (cpu/reduce_blocks.c). */
struct cpu_rd_shape;

/* How the CPU backend runs one row of CL_REDUCE_VARIANTS. */
typedef struct cpu_rd_impl {
    /* The launch for args a, as the CUDA backend would choose it (fast: one "wave" of blocks over
     * the host threads); NULL: one block, a->block threads, the host threads for a->n. */
    cpu_launch_cfg (*config)(const struct cpu_rd_impl *self, const cl_reduce_args *a);
    /* Reduces in[0..n) under cfg; partials has room for cfg->grid values. The result; *ok 0 when
     * host memory ran out. */
    double (*run)(const struct cpu_rd_impl *self, const cl_reduce_args *a, const cpu_launch_cfg *cfg,
                  const void *in, double *partials, int *ok);
    /* out->impl and the launches, for variant v (its id) after a run. */
    void (*describe)(int v, const cl_reduce_args *a, const cpu_launch_cfg *cfg, cl_reduce_result *out);
    const struct cpu_rd_shape *shape;   /* the block analogues' */
} cpu_rd_impl;

/* Each row's analogue, cpu_rd_<impl> (the row's impl, reduce.h): the host loop and the reference in
 * reduce_cpu.c, the kernels' block analogues in reduce_blocks.c; weak, so a row without one is
 * NULL here. */
#define CPU_RD_WEAK_(id, name, impl, ...) CL_VARIANT_WEAK_(cpu_rd_impl, cpu_rd_, impl)
CL_REDUCE_VARIANTS(CPU_RD_WEAK_)
#undef CPU_RD_WEAK_

/* Row v's analogue, or NULL. */
const cpu_rd_impl *cpu_rd_impl_of(int v);

/* Launch configuration of variant v for args a (its impl's config). */
cpu_launch_cfg cpu_reduce_config(int v, const cl_reduce_args *a);

/* Runs variant v (divergent, convergent, multiblock, fast) over in[0..n);
 * partials has room for cfg->grid values. Returns the result; ok is 1. */
double cpu_reduce_variant(int v, const cl_reduce_args *a, const cpu_launch_cfg *cfg, const void *in,
                          double *partials, int *ok);

/* The reference reduction (also `cub` on the CPU): threads over contiguous
 * chunks, double (float input) or int64 accumulators, combined in chunk
 * order, so the result does not depend on the thread count's timing. */
double cpu_reduce_chunked(const cl_reduce_args *a, const void *in, int threads, int *ok);

/* Fills in[0..n) from the seed with the generator the GPU uses. */
int cpu_reduce_fill(void *in, uint64_t n, cl_reduce_dtype dt, uint64_t seed, int threads);

#endif
