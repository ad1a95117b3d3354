/* reduce_blocks.c — the CPU analogues of the %reduce kernels: host threads
 * stand in for the grid, a loop over t stands in for a block's threads.
 *
 * Each emulated block does what its CUDA block does, in the same order: the
 * same loads, the same tree (a level of the tree is one loop over t; the end
 * of the loop is the __syncthreads), the same warp-shuffle pattern. A loop
 * over t that skips most of its iterations is what warp divergence costs on a
 * GPU, in miniature. Host threads take contiguous ranges of blocks; a block's
 * "shared memory" is an array on the host thread's stack.
 *
 * Every thread's operations stay in its own order, so the results are those
 * of the plain loops to the bit; what is gone is overhead a GPU does not pay:
 * the loops are compiled once per (op, dtype), with no switch inside; where
 * neighbouring threads do the same step (loads, coarsening, the convergent
 * tree, fast's vectors) four threads run side by side in vector lanes; and
 * the input of the next block (fast: the next row) is asked for ahead, as a
 * GPU's other resident blocks (fast: its unrolled loads) keep loads in flight.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce_cpu.h"

/* Blocks of the fast variant's grid on the CPU: fixed, so that float results
 * do not depend on the host's core count. */
#define CPU_FAST_GRID 128

/* Inlined into each copy of the loops (blocks_range), where op and dt are
 * constants: no switch is left in a loop. */
#define KIND_INLINE static inline __attribute__((always_inline))

/* ---- four emulated threads at once ----
 * A vector of LANES doubles (GCC/Clang vector extensions: one AVX2 register
 * in CL_HOT's AVX2 clone) holds one value for each of LANES neighbouring
 * threads; an operation applies lane by lane, so every thread still does its
 * own operations in its own order. The type is aligned as a double, so that
 * s + t can be read and written as one. Vectors go to and from the helpers
 * by address: GCC notes an ABI change for every 32-byte vector argument. */

#define LANES 4
typedef double lanes __attribute__((vector_size(LANES * sizeof(double)), aligned(sizeof(double))));
typedef float lanes_f32 __attribute__((vector_size(LANES * sizeof(float))));
typedef int64_t lanes_mask __attribute__((vector_size(LANES * sizeof(int64_t))));

/* *v = elements i .. i + 3 of the input. */
KIND_INLINE void lanes_elems(lanes *v, const void *in, cl_reduce_dtype dt, uint64_t i)
{
    if (dt == CL_REDUCE_FLOAT) {
        const float *x = (const float *)in + i;
        *v = (lanes){x[0], x[1], x[2], x[3]};
    } else {
        const int32_t *x = (const int32_t *)in + i;
        *v = (lanes){x[0], x[1], x[2], x[3]};
    }
}

/* *a = *a (op) *b, lane by lane, as acc_apply. */
KIND_INLINE void lanes_apply(lanes *a, const lanes *b, cl_reduce_op op, cl_reduce_dtype dt)
{
    if (op == CL_REDUCE_SUM) {
        lanes sum = *a + *b;
        if (dt == CL_REDUCE_FLOAT) {
            lanes_f32 f = __builtin_convertvector(sum, lanes_f32);
            sum = (lanes){f[0], f[1], f[2], f[3]};
        }
        *a = sum;
        return;
    }
    lanes_mask keep_a = op == CL_REDUCE_MAX ? *a > *b : *a < *b;
    *a = (lanes)(((lanes_mask)*a & keep_a) | ((lanes_mask)*b & ~keep_a));
}

/* ---- one block ---- */

/* What a variant's blocks do (the row's analogue, cpu_rd_<impl> below): the loads of the first pass,
 * the in-block tree of both passes (shuffles after vector loads) and the elements of a block. */
typedef enum block_loads { LOAD_PAIRS, LOAD_COARSENED, LOAD_VECTORS } block_loads;
struct cpu_rd_shape {
    block_loads loads;      /* pairs 2B apart, 2*CL_REDUCE_COARSEN elements B apart, or grid-stride vectors */
    int divergent;          /* the divergent tree, else the convergent one (not for vectors: shuffles) */
    unsigned coarsen;       /* a block's segment is 2*B*coarsen elements; 0: one wave, grid-stride */
};

typedef struct block_job {
    const struct cpu_rd_shape *shape;
    const cl_reduce_args *a;
    const void *in;
    uint64_t grid;
    double *partials;
} block_job;

/* Element i, or the identity past the end (a thread of the last block). */
KIND_INLINE double load(const block_job *j, uint64_t i, cl_reduce_op op, cl_reduce_dtype dt)
{
    return i < j->a->n ? elem(j->in, dt, i) : acc_identity(op);
}

/* Asks for the line of element i before it is used (elements are 4 bytes):
 * one block runs at a time here, where a GPU keeps other blocks' loads in
 * flight meanwhile. Nothing past the input. */
KIND_INLINE void fetch_ahead(const block_job *j, uint64_t i)
{
    if (i < j->a->n)
        __builtin_prefetch((const char *)j->in + 4 * i);
}

/* The two trees of the lecture over s[0..b). */
KIND_INLINE double tree(double *s, unsigned b, int divergent, cl_reduce_op op, cl_reduce_dtype dt)
{
    if (divergent) {
        for (unsigned stride = 1; stride < b; stride *= 2)
            for (unsigned t = 0; t < b; t++)
                if (t % (2 * stride) == 0)
                    s[t] = acc_apply(op, dt, s[t], s[t + stride]);
        return s[0];
    }
    unsigned stride = b / 2;
    for (; stride >= LANES; stride >>= 1)
        for (unsigned t = 0; t < stride; t += LANES)
            lanes_apply((lanes *)(s + t), (const lanes *)(s + t + stride), op, dt);
    for (; stride > 0; stride >>= 1)
        for (unsigned t = 0; t < stride; t++)
            s[t] = acc_apply(op, dt, s[t], s[t + stride]);
    return s[0];
}

/* __shfl_down_sync over v[0..32): ascending lanes read only lanes not yet updated. */
KIND_INLINE double warp_shuffle(double *v, cl_reduce_op op, cl_reduce_dtype dt)
{
    for (unsigned off = 16; off > 0; off >>= 1)
        for (unsigned lane = 0; lane + off < 32; lane++)
            v[lane] = acc_apply(op, dt, v[lane], v[lane + off]);
    return v[0];
}

/* The fast kernel's block reduction: per warp, then the first warp over the warps. */
KIND_INLINE double block_shuffle(double *v, unsigned b, cl_reduce_op op, cl_reduce_dtype dt)
{
    double warps[32];
    for (unsigned w = 0; w < b / 32; w++)
        warps[w] = warp_shuffle(v + 32 * w, op, dt);
    for (unsigned lane = b / 32; lane < 32; lane++)
        warps[lane] = acc_identity(op);
    return warp_shuffle(warps, op, dt);
}

/* *out = (a0 op a1, a2 op a3, b0 op b1, b2 op b3). */
KIND_INLINE void pair_up(lanes *out, const lanes *a, const lanes *b, cl_reduce_op op, cl_reduce_dtype dt)
{
    /* element by element rather than __builtin_shufflevector, which GCC has only from 12 (Ubuntu 22.04
     * has 11): the compiler makes the same shuffles of it */
    lanes odd = { (*a)[1], (*a)[3], (*b)[1], (*b)[3] };
    *out = (lanes){ (*a)[0], (*a)[2], (*b)[0], (*b)[2] };
    lanes_apply(out, &odd, op, dt);
}

/* The fast kernel's first step for threads t .. t + 3: each reduces its own
 * 4-element vector (at e, e + 4, ...) as (x0 op x1) op (x2 op x3). */
KIND_INLINE void vector_sums(lanes *out, const void *in, uint64_t e, cl_reduce_op op, cl_reduce_dtype dt)
{
    lanes v[4], p01, p23;
    for (int u = 0; u < 4; u++)
        lanes_elems(&v[u], in, dt, e + 4 * (uint64_t)u);
    pair_up(&p01, &v[0], &v[1], op, dt);    /* x0 op x1, x2 op x3 of threads t, t + 1 */
    pair_up(&p23, &v[2], &v[3], op, dt);
    pair_up(out, &p01, &p23, op, dt);
}

/* Block blk of the first pass; s is its shared memory. A whole block's
 * input runs LANES threads at a time, the last block (which may run past n)
 * one thread at a time. */
KIND_INLINE double run_block(const block_job *j, uint64_t blk, double *s, cl_reduce_op op, cl_reduce_dtype dt)
{
    unsigned b = (unsigned)j->a->block;
    uint64_t n = j->a->n;
    double id = acc_identity(op);
    switch (j->shape->loads) {
    case LOAD_PAIRS: {
        uint64_t base = blk * 2 * b;
        if (base + 2 * (uint64_t)b <= n)
            for (unsigned t = 0; t < b; t += LANES) {
                lanes hi;
                fetch_ahead(j, base + 2 * b + 2 * t);       /* the next block's 2B elements */
                lanes_elems((lanes *)(s + t), j->in, dt, base + t);
                lanes_elems(&hi, j->in, dt, base + b + t);
                lanes_apply((lanes *)(s + t), &hi, op, dt);
            }
        else
            for (unsigned t = 0; t < b; t++)
                s[t] = acc_apply(op, dt, load(j, base + t, op, dt), load(j, base + b + t, op, dt));
        return tree(s, b, j->shape->divergent, op, dt);
    }
    case LOAD_COARSENED: {
        uint64_t base = blk * 2 * CL_REDUCE_COARSEN * b;
        if (base + 2 * CL_REDUCE_COARSEN * (uint64_t)b <= n) {
            for (unsigned t = 0; t < b; t++)
                s[t] = id;
            for (unsigned k = 0; k < 2 * CL_REDUCE_COARSEN; k++)     /* step k of every thread, as warps run it */
                for (unsigned t = 0; t < b; t += LANES) {
                    lanes x;
                    lanes_elems(&x, j->in, dt, base + (uint64_t)k * b + t);
                    lanes_apply((lanes *)(s + t), &x, op, dt);
                }
        } else {
            for (unsigned t = 0; t < b; t++) {
                double acc = id;
                for (unsigned k = 0; k < 2 * CL_REDUCE_COARSEN; k++)
                    acc = acc_apply(op, dt, acc, load(j, base + (uint64_t)k * b + t, op, dt));
                s[t] = acc;
            }
        }
        return tree(s, b, 0, op, dt);
    }
    default: {   /* LOAD_VECTORS, fast: grid-stride over 4-element vectors, then shuffles */
        uint64_t nvec = n / 4, stride = j->grid * b, tail = n - nvec * 4, base = blk * b;
        for (unsigned t = 0; t < b; t++)
            s[t] = id;
        for (; base + b <= nvec; base += stride)
            for (unsigned t = 0; t < b; t += LANES) {
                lanes x;
                fetch_ahead(j, 4 * (base + stride + t));    /* the next row, as the kernel's loads in flight */
                vector_sums(&x, j->in, 4 * (base + t), op, dt);
                lanes_apply((lanes *)(s + t), &x, op, dt);
            }
        for (; base < nvec; base += stride)
            for (unsigned t = 0; t < b && base + t < nvec; t++) {
                uint64_t e = 4 * (base + t);
                double x = acc_apply(op, dt, acc_apply(op, dt, elem(j->in, dt, e), elem(j->in, dt, e + 1)),
                                     acc_apply(op, dt, elem(j->in, dt, e + 2), elem(j->in, dt, e + 3)));
                s[t] = acc_apply(op, dt, s[t], x);
            }
        for (unsigned t = 0; t < b; t++)
            if (blk * b + t < tail)
                s[t] = acc_apply(op, dt, s[t], elem(j->in, dt, nvec * 4 + blk * b + t));
        return block_shuffle(s, b, op, dt);
    }
    }
}

KIND_INLINE void blocks_of_kind(const block_job *j, uint64_t first, uint64_t last, cl_reduce_op op,
                                cl_reduce_dtype dt)
{
    double s[1024];
    for (uint64_t blk = first; blk < last; blk++)
        j->partials[blk] = run_block(j, blk, s, op, dt);
}

/* One copy of the blocks' loops per (op, dtype). */
CL_HOT static void blocks_range(uint64_t first, uint64_t last, void *ctx)
{
    const block_job *j = ctx;
#define BLOCKS(op, dt) blocks_of_kind(j, first, last, op, dt)
    REDUCE_BY_KIND(j->a->op, j->a->dtype, BLOCKS);
#undef BLOCKS
}

/* The second kernel: one block of CL_REDUCE_FINAL_BLOCK threads over the partials. */
static double final_block(const block_job *j)
{
    static const unsigned b = CL_REDUCE_FINAL_BLOCK;
    cl_reduce_op op = j->a->op;
    cl_reduce_dtype dt = j->a->dtype;
    double s[CL_REDUCE_FINAL_BLOCK], id = acc_identity(op);
    uint64_t p = j->grid;
    for (unsigned t = 0; t < b; t++) {
        double acc[4] = {id, id, id, id};
        uint64_t i = t;
        for (; i + 3u * b < p; i += 4u * b)
            for (unsigned u = 0; u < 4; u++)
                acc[u] = acc_apply(op, dt, acc[u], j->partials[i + u * b]);
        for (; i < p; i += b)
            acc[0] = acc_apply(op, dt, acc[0], j->partials[i]);
        s[t] = acc_apply(op, dt, acc_apply(op, dt, acc[0], acc[1]), acc_apply(op, dt, acc[2], acc[3]));
    }
    if (j->shape->loads == LOAD_VECTORS)
        return block_shuffle(s, b, op, dt);
    return tree(s, b, j->shape->divergent, op, dt);
}

/* ---- the launch ---- */

static cpu_launch_cfg blocks_config(const cpu_rd_impl *self, const cl_reduce_args *a)
{
    cpu_launch_cfg c = {0, (unsigned)a->block, cl_cpu_threads_for(a->n)};
    uint64_t b = (uint64_t)a->block;
    if (!self->shape->coarsen) {
        uint64_t need = (a->n / 4 + b - 1) / b;
        c.grid = need < 1 ? 1 : need < CPU_FAST_GRID ? need : CPU_FAST_GRID;
    } else {
        uint64_t seg = 2 * b * self->shape->coarsen;
        c.grid = (a->n + seg - 1) / seg;
    }
    return c;
}

static double blocks_run(const cpu_rd_impl *self, const cl_reduce_args *a, const cpu_launch_cfg *cfg,
                         const void *in, double *partials, int *ok)
{
    block_job j = {self->shape, a, in, cfg->grid, partials};
    *ok = cl_parallel_ranges(cfg->grid, cfg->threads, blocks_range, &j) > 0;
    return cfg->grid > 1 ? final_block(&j) : partials[0];
}

static void blocks_describe(int v, const cl_reduce_args *a, const cpu_launch_cfg *c, cl_reduce_result *out)
{
    int threads = (uint64_t)c->threads < c->grid ? c->threads : (int)c->grid;
    /* the GPU variant's shared memory for the same parameters, not the doubles the emulation keeps */
    size_t acc = cl_reduce_acc_bytes(a->op, a->dtype);
    size_t smem = cl_reduce_smem_per_block(v, (int)c->block, acc);
    out->launch = cl_launch_2d(c->grid, 1, (int)c->block, 1, smem, c->grid > 1 ? 2 : 1);
    if (c->grid > 1)
        out->final = cl_launch_2d(1, 1, CL_REDUCE_FINAL_BLOCK, 1, cl_reduce_final_smem(v, acc), 1);
    snprintf(out->impl, sizeof out->impl,
             "CPU analogue: %d host thread%s run %llu block%s of %u emulated threads%s", threads,
             threads == 1 ? "" : "s", (unsigned long long)c->grid, c->grid == 1 ? "" : "s", c->block,
             c->grid > 1 ? ", then 1 block of 1024 adds the partials" : "");
}

/* The rows' analogues, cpu_rd_<impl> (reduce_cpu.h): (impl, loads, divergent tree, coarsening). */
#define CPU_RD_BLOCKS_(impl, loads, divergent, coarsen)                                     \
    static const struct cpu_rd_shape impl##_shape = {loads, divergent, coarsen};            \
    const cpu_rd_impl cpu_rd_##impl = {blocks_config, blocks_run, blocks_describe, &impl##_shape};
CPU_RD_BLOCKS_(divergent, LOAD_PAIRS, 1, 1)
CPU_RD_BLOCKS_(convergent, LOAD_PAIRS, 0, 1)
CPU_RD_BLOCKS_(multiblock, LOAD_COARSENED, 0, CL_REDUCE_COARSEN)
CPU_RD_BLOCKS_(fast, LOAD_VECTORS, 0, 0)
#undef CPU_RD_BLOCKS_
