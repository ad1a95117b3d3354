/* reduce_blocks.c — the CPU analogues of the %reduce kernels: host threads
 * stand in for the grid, a loop over t stands in for a block's threads.
 *
 * Each emulated block does what its CUDA block does, in the same order: the
 * same loads, the same tree (a level of the tree is one loop over t; the end
 * of the loop is the __syncthreads), the same warp-shuffle pattern. A loop
 * over t that skips most of its iterations is what warp divergence costs on a
 * GPU, in miniature. Host threads take contiguous ranges of blocks; a block's
 * "shared memory" is an array on the host thread's stack.
 */
#include <stdlib.h>
#include <string.h>

#include "reduce_cpu.h"

/* Blocks of the fast variant's grid on the CPU: fixed, so that float results
 * do not depend on the host's core count. */
#define CPU_FAST_GRID 128

/* ---- one block ---- */

typedef struct block_job {
    int variant;
    const cl_reduce_args *a;
    const void *in;
    uint64_t grid;
    double *partials;
} block_job;

static double load(const block_job *j, uint64_t i)
{
    return i < j->a->n ? elem(j->in, j->a->dtype, i) : acc_identity(j->a->op);
}

#define APPLY(j, x, y) acc_apply((j)->a->op, (j)->a->dtype, (x), (y))

/* The two trees of the lecture over s[0..b). */
static double tree(const block_job *j, double *s, unsigned b, int divergent)
{
    if (divergent) {
        for (unsigned stride = 1; stride < b; stride *= 2)
            for (unsigned t = 0; t < b; t++)
                if (t % (2 * stride) == 0)
                    s[t] = APPLY(j, s[t], s[t + stride]);
    } else {
        for (unsigned stride = b / 2; stride > 0; stride >>= 1)
            for (unsigned t = 0; t < stride; t++)
                s[t] = APPLY(j, s[t], s[t + stride]);
    }
    return s[0];
}

/* __shfl_down_sync over v[0..32): ascending lanes read only lanes not yet updated. */
static double warp_shuffle(const block_job *j, double *v)
{
    for (unsigned off = 16; off > 0; off >>= 1)
        for (unsigned lane = 0; lane + off < 32; lane++)
            v[lane] = APPLY(j, v[lane], v[lane + off]);
    return v[0];
}

/* The fast kernel's block reduction: per warp, then the first warp over the warps. */
static double block_shuffle(const block_job *j, double *v, unsigned b)
{
    double warps[32];
    for (unsigned w = 0; w < b / 32; w++)
        warps[w] = warp_shuffle(j, v + 32 * w);
    for (unsigned lane = b / 32; lane < 32; lane++)
        warps[lane] = acc_identity(j->a->op);
    return warp_shuffle(j, warps);
}

static double run_block(const block_job *j, uint64_t blk, double *s)
{
    unsigned b = (unsigned)j->a->block;
    double id = acc_identity(j->a->op);
    switch (j->variant) {
    case CL_REDUCE_DIVERGENT:
    case CL_REDUCE_CONVERGENT: {
        uint64_t base = blk * 2 * b;
        for (unsigned t = 0; t < b; t++)
            s[t] = APPLY(j, load(j, base + t), load(j, base + b + t));
        return tree(j, s, b, j->variant == CL_REDUCE_DIVERGENT);
    }
    case CL_REDUCE_MULTIBLOCK: {
        uint64_t base = blk * 2 * CL_REDUCE_COARSEN * b;
        for (unsigned t = 0; t < b; t++) {
            double acc = id;
            for (unsigned k = 0; k < 2 * CL_REDUCE_COARSEN; k++)
                acc = APPLY(j, acc, load(j, base + (uint64_t)k * b + t));
            s[t] = acc;
        }
        return tree(j, s, b, 0);
    }
    default: {   /* fast: grid-stride over 4-element vectors, then shuffles */
        uint64_t nvec = j->a->n / 4, stride = j->grid * b, tail = j->a->n - nvec * 4;
        for (unsigned t = 0; t < b; t++)
            s[t] = id;
        for (uint64_t base = blk * b; base < nvec; base += stride)
            for (unsigned t = 0; t < b && base + t < nvec; t++) {
                uint64_t e = 4 * (base + t);
                double x = APPLY(j, APPLY(j, elem(j->in, j->a->dtype, e), elem(j->in, j->a->dtype, e + 1)),
                                 APPLY(j, elem(j->in, j->a->dtype, e + 2), elem(j->in, j->a->dtype, e + 3)));
                s[t] = APPLY(j, s[t], x);
            }
        for (unsigned t = 0; t < b; t++)
            if (blk * b + t < tail)
                s[t] = APPLY(j, s[t], elem(j->in, j->a->dtype, nvec * 4 + blk * b + t));
        return block_shuffle(j, s, b);
    }
    }
}

static void blocks_range(uint64_t first, uint64_t last, void *ctx)
{
    const block_job *j = ctx;
    double s[1024];
    for (uint64_t blk = first; blk < last; blk++)
        j->partials[blk] = run_block(j, blk, s);
}

/* The second kernel: one block of CL_REDUCE_FINAL_BLOCK threads over the partials. */
static double final_block(const block_job *j)
{
    static const unsigned b = CL_REDUCE_FINAL_BLOCK;
    double s[CL_REDUCE_FINAL_BLOCK], id = acc_identity(j->a->op);
    uint64_t p = j->grid;
    for (unsigned t = 0; t < b; t++) {
        double acc[4] = {id, id, id, id};
        uint64_t i = t;
        for (; i + 3u * b < p; i += 4u * b)
            for (unsigned u = 0; u < 4; u++)
                acc[u] = APPLY(j, acc[u], j->partials[i + u * b]);
        for (; i < p; i += b)
            acc[0] = APPLY(j, acc[0], j->partials[i]);
        s[t] = APPLY(j, APPLY(j, acc[0], acc[1]), APPLY(j, acc[2], acc[3]));
    }
    if (j->variant == CL_REDUCE_FAST)
        return block_shuffle(j, s, b);
    return tree(j, s, b, j->variant == CL_REDUCE_DIVERGENT);
}

/* ---- the launch ---- */

cpu_launch_cfg cpu_reduce_config(int v, const cl_reduce_args *a)
{
    cpu_launch_cfg c = {0, (unsigned)a->block, cl_cpu_threads_for(a->n)};
    uint64_t b = (uint64_t)a->block;
    if (v == CL_REDUCE_FAST) {
        uint64_t need = (a->n / 4 + b - 1) / b;
        c.grid = need < 1 ? 1 : need < CPU_FAST_GRID ? need : CPU_FAST_GRID;
    } else {
        uint64_t seg = 2 * b * (v == CL_REDUCE_MULTIBLOCK ? CL_REDUCE_COARSEN : 1);
        c.grid = (a->n + seg - 1) / seg;
    }
    return c;
}

double cpu_reduce_variant(int v, const cl_reduce_args *a, const cpu_launch_cfg *cfg, const void *in,
                          double *partials, int *ok)
{
    block_job j = {v, a, in, cfg->grid, partials};
    *ok = cl_parallel_ranges(cfg->grid, cfg->threads, blocks_range, &j) > 0;
    return cfg->grid > 1 ? final_block(&j) : partials[0];
}
