/* stencil_cpu.c — the CPU backend's %stencil and the host check both backends use.
 *
 * The CPU analogues keep the GPU's partitioning: the output is cut into the
 * same blocks (B outputs in 1D, BX x BY tiles in 2D), and host thread k of T
 * takes the k-th of T contiguous runs of blocks, as SMs share out a grid.
 * naive reads every term from the input array; tiled first copies the
 * block's input tile with its halo (zero padded ghost cells) into a
 * per-thread buffer standing in for shared memory, then reads the terms from
 * there; fast reads them from the input as naive does, in the fast kernel's
 * larger blocks (each GPU thread computes several outputs). A block whose terms all lie inside the array runs vector loops
 * (weigh); one at an edge skips the ghost cells term by term. Each rep is
 * timed with the monotonic clock around the compute only. Terms are added in
 * the order stencil.h states, each rounded as fmaf rounds it (add_term), so
 * the results equal the reference bit for bit.
 *
 * The check regenerates the input from the seed and compares every element,
 * or, when that would cost more than CL_STENCIL_CHECK_BUDGET multiply-adds, every
 * element within 2 halo widths of the array's edges plus every s-th element
 * (s odd, so the sample walks through every position inside a block).
 *
 * A student's kernel (CL_VARIANT_STUDENT) runs on the CPU runner of the CUDA
 * model (cpu/simt/) with the GPU's launch: in, out and w in an arena, the
 * launch rule's grid, the tile with its halo as dynamic shared memory unless
 * --smem, in new and out NaN-filled before every launch, every launch but the
 * last (the run's own seed) checked after it.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu_common.h"
#include "cudalab/stencil.h"
#include "simt/simt_launch.h"

/* ---- one output element, straight from the input (naive and reference) ---- */

static float direct1d(const cl_stencil_args *a, const float *in, int64_t i, double *scale)
{
    int64_t n = (int64_t)a->nx;
    float acc = 0.0f;
    double s = 0;
    for (int j = -a->radius; j <= a->radius; j++) {
        int64_t p = i + j;
        if (p >= 0 && p < n) {
            acc = fmaf(a->weights[j + a->radius], in[p], acc);
            s += fabs((double)a->weights[j + a->radius] * in[p]);
        }
    }
    if (scale)
        *scale = s;
    return acc;
}

static float direct2d(const cl_stencil_args *a, const float *in, int64_t x, int64_t y, double *scale)
{
    int r = a->radius, k = a->k;
    int64_t nx = (int64_t)a->nx, ny = (int64_t)a->ny;
    float acc = 0.0f;
    double s = 0;
    for (int dy = -r; dy <= r; dy++) {
        if (y + dy < 0 || y + dy >= ny)
            continue;
        for (int dx = -r; dx <= r; dx++)
            if (x + dx >= 0 && x + dx < nx) {
                float w = a->weights[(dy + r) * k + dx + r], v = in[(y + dy) * nx + x + dx];
                acc = fmaf(w, v, acc);
                s += fabs((double)w * v);
            }
    }
    if (scale)
        *scale = s;
    return acc;
}

/* ---- one term, as fmaf adds it, in loops that vectorise ---- */

/* fmaf(w, x, acc) for a float acc held in a double, to the bit. CL_HOT's AVX2
 * clone has no FMA instruction, so fmaf would stay a libm call per term and
 * keep every loop around it scalar. In double the product is exact (24 + 24
 * bits); TwoSum gives the sum's rounding error e exactly; the sum rounded to
 * odd (truncated toward zero, last bit set when inexact) then rounds to float
 * as the exact value does, since 53 >= 24 + 2 bits (Boldo & Melquiond). rel is
 * e signed relative to the sum: negative when the sum was rounded away from
 * zero. An inf or NaN sum has a NaN e, which no comparison passes: kept as is.
 * The comparisons are written as masks, a form GCC vectorises. */
static inline __attribute__((always_inline)) double add_term(double w, float x, double acc)
{
    double p = w * (double)x, s = p + acc, sp = s - p, e = (p - (s - sp)) + (acc - sp), rel;
    uint64_t sb, eb;
    memcpy(&sb, &s, sizeof sb);
    memcpy(&eb, &e, sizeof eb);
    eb ^= sb & 0x8000000000000000u;
    memcpy(&rel, &eb, sizeof rel);
    uint64_t toward0 = -(uint64_t)(rel < 0), inexact = (rel < 0) | (rel > 0);
    sb = (sb + toward0) | inexact;
    memcpy(&s, &sb, sizeof s);
    return (float)s;
}

/* Outputs a vector loop takes at once: a constant count, as GCC's -O2 cost
 * model vectorises only loops without a scalar remainder. A row's last
 * len % STRIP outputs take a half strip where they fill one (the 4 to 7 of
 * a narrow 2D block), then one at a time. The helpers of weigh are always
 * inlined: only CL_HOT's own body is built for AVX2. */
enum { STRIP = 8 };

/* sum[t] = fmaf(w, row[t], 0) for t < len: the exact product rounded once
 * (+ 0.0 makes a -0 product +0, as fmaf's 0 + -0 does). */
static inline __attribute__((always_inline)) void first_term(double *restrict sum, const float *restrict row,
                                                             double w, int len)
{
    int whole = len - len % STRIP, half = len - len % (STRIP / 2);
    for (int t = 0; t < whole; t += STRIP)
        for (int u = 0; u < STRIP; u++)
            sum[t + u] = (float)(w * (double)row[t + u] + 0.0);
    for (int t = whole; t < half; t += STRIP / 2)
        for (int u = 0; u < STRIP / 2; u++)
            sum[t + u] = (float)(w * (double)row[t + u] + 0.0);
    for (int t = half; t < len; t++)
        sum[t] = (float)(w * (double)row[t] + 0.0);
}

/* sum[t] = fmaf(w, row[t], sum[t]) for t < len. */
static inline __attribute__((always_inline)) void next_term(double *restrict sum, const float *restrict row,
                                                            double w, int len)
{
    int whole = len - len % STRIP, half = len - len % (STRIP / 2);
    for (int t = 0; t < whole; t += STRIP)
        for (int u = 0; u < STRIP; u++)
            sum[t + u] = add_term(w, row[t + u], sum[t + u]);
    for (int t = whole; t < half; t += STRIP / 2)
        for (int u = 0; u < STRIP / 2; u++)
            sum[t + u] = add_term(w, row[t + u], sum[t + u]);
    for (int t = half; t < len; t++)
        sum[t] = add_term(w, row[t], sum[t]);
}

/* rows x len outputs, out[y*out_stride + x] = the sum over dy < ky, dx < kx of
 * w[dy*kx + dx] * src[(y + dy)*stride + x + dx], terms in that order, every
 * one inside the array (the caller handles the edges). Each term is added to
 * all the outputs before the next, so that the chain of adds an output waits
 * on has rows x len others beside it to overlap with. acc: rows x len doubles
 * of scratch. */
CL_HOT static void weigh(const float *restrict src, size_t stride, int kx, int ky, const double *restrict w,
                         int len, int rows, double *restrict acc, float *restrict out, size_t out_stride)
{
    for (int j = 0; j < kx * ky; j++)
        for (int y = 0; y < rows; y++) {
            const float *row = src + (size_t)(y + j / kx) * stride + j % kx;
            if (j == 0)
                first_term(acc + y * len, row, w[j], len);
            else
                next_term(acc + y * len, row, w[j], len);
        }
    int whole = len - len % STRIP;
    for (int y = 0; y < rows; y++) {
        const double *sum = acc + y * len;
        float *dst = out + y * out_stride;
        for (int t = 0; t < whole; t += STRIP)
            for (int u = 0; u < STRIP; u++)
                dst[t + u] = (float)sum[t + u];
        for (int t = whole; t < len; t++)
            dst[t] = (float)sum[t];
    }
}

/* ---- the blocks of one launch ---- */

typedef struct job job;

/* How the CPU backend runs one row of CL_STENCIL_VARIANTS: its analogue of a block, 1D and 2D. */
typedef struct cpu_st_impl {
    void (*block[2])(const job *j, uint64_t b);   /* block b of a 1D, a 2D launch */
    bool tile;                  /* copies the block's input tile with its halo (the GPU's shared memory) */
    const char *how;            /* what the analogue does beside running the blocks, in words */
    int per_thread[2];          /* outputs a GPU thread computes along x and y: a block's outputs are
                                   block[0] * per_thread[0] (x) by block[1] * per_thread[1] (2D y) */
} cpu_st_impl;

/* Each row's analogue, cpu_st_<impl> (the row's impl, stencil.h); weak, so a row without one is
 * NULL in the table. */
#define CPU_ST_WEAK_(id, name, impl, ...) CL_VARIANT_WEAK_(cpu_st_impl, cpu_st_, impl)
CL_STENCIL_VARIANTS(CPU_ST_WEAK_)
#undef CPU_ST_WEAK_

struct job {
    const cl_stencil_args *a;
    const cpu_st_impl *impl;
    const float *in;
    float *out;
    const double *w;                /* the weights, in double for add_term */
    uint64_t first, last;           /* this thread's blocks: [first, last) */
    float *tile;                    /* stands in for shared memory */
    double *acc;                    /* a block's accumulators (weigh) */
};

/* A block whose terms all lie inside the array takes weigh; one at an edge
 * skips the ghost cells term by term. */
static void naive1d(const job *j, uint64_t b)
{
    const cl_stencil_args *a = j->a;
    int B = a->block[0] * j->impl->per_thread[0], R = a->radius;
    int64_t n = (int64_t)a->nx, base = (int64_t)(b * (uint64_t)B);
    if (base >= R && base + B + R <= n)
        weigh(j->in + base - R, 0, a->k, 1, j->w, B, 1, j->acc, j->out + base, 0);
    else
        for (int t = 0; t < B && base + t < n; t++)
            j->out[base + t] = direct1d(a, j->in, base + t, NULL);
}

static void tiled1d(const job *j, uint64_t b)
{
    const cl_stencil_args *a = j->a;
    int B = a->block[0], R = a->radius;
    int64_t n = (int64_t)a->nx, base = (int64_t)(b * (uint64_t)B);
    if (base >= R && base + B + R <= n) {
        memcpy(j->tile, j->in + base - R, (size_t)(B + 2 * R) * sizeof *j->tile);
        weigh(j->tile, 0, a->k, 1, j->w, B, 1, j->acc, j->out + base, 0);
        return;
    }
    for (int s = 0; s < B + 2 * R; s++) {
        int64_t p = base - R + s;
        j->tile[s] = p >= 0 && p < n ? j->in[p] : 0.0f;
    }
    for (int t = 0; t < B && base + t < n; t++) {
        float acc = 0.0f;
        for (int d = -R; d <= R; d++)
            if (base + t + d >= 0 && base + t + d < n)
                acc = fmaf(a->weights[d + R], j->tile[t + d + R], acc);
        j->out[base + t] = acc;
    }
}

/* Block b of a 2D launch: its TX x TY outputs from (x0, y0), and whether all their terms lie inside
 * the array. */
typedef struct block2d {
    int TX, TY, r, k;
    int64_t nx, ny, x0, y0;
    bool inside;
} block2d;

static block2d block2d_of(const job *j, uint64_t b)
{
    const cl_stencil_args *a = j->a;
    block2d o = {a->block[0] * j->impl->per_thread[0], a->block[1] * j->impl->per_thread[1], a->radius, a->k,
                 (int64_t)a->nx, (int64_t)a->ny, 0, 0, false};
    int64_t bx = (o.nx + o.TX - 1) / o.TX;
    o.x0 = (int64_t)(b % (uint64_t)bx) * o.TX, o.y0 = (int64_t)(b / (uint64_t)bx) * o.TY;
    o.inside = o.x0 >= o.r && o.x0 + o.TX + o.r <= o.nx && o.y0 >= o.r && o.y0 + o.TY + o.r <= o.ny;
    return o;
}

static void naive2d(const job *j, uint64_t b)
{
    block2d o = block2d_of(j, b);
    int64_t nx = o.nx, x0 = o.x0, y0 = o.y0;
    if (o.inside) {
        weigh(j->in + (y0 - o.r) * nx + x0 - o.r, (size_t)nx, o.k, o.k, j->w, o.TX, o.TY, j->acc,
              j->out + y0 * nx + x0, (size_t)nx);
        return;
    }
    for (int ty = 0; ty < o.TY && y0 + ty < o.ny; ty++)
        for (int tx = 0; tx < o.TX && x0 + tx < nx; tx++)
            j->out[(y0 + ty) * nx + x0 + tx] = direct2d(j->a, j->in, x0 + tx, y0 + ty, NULL);
}

static void tiled2d(const job *j, uint64_t b)
{
    block2d o = block2d_of(j, b);
    int TX = o.TX, TY = o.TY, r = o.r, k = o.k, S = TX + 2 * r;
    int64_t nx = o.nx, ny = o.ny, x0 = o.x0, y0 = o.y0;
    if (o.inside) {
        const float *src = j->in + (y0 - r) * nx + x0 - r;
        for (int s = 0; s < TY + 2 * r; s++)
            memcpy(j->tile + s * S, src + s * nx, (size_t)S * sizeof *j->tile);
        weigh(j->tile, (size_t)S, k, k, j->w, TX, TY, j->acc, j->out + y0 * nx + x0, (size_t)nx);
        return;
    }
    for (int s = 0; s < S * (TY + 2 * r); s++) {
        int64_t xx = x0 - r + s % S, yy = y0 - r + s / S;
        j->tile[s] = xx >= 0 && xx < nx && yy >= 0 && yy < ny ? j->in[yy * nx + xx] : 0.0f;
    }
    for (int ty = 0; ty < TY && y0 + ty < ny; ty++)
        for (int tx = 0; tx < TX && x0 + tx < nx; tx++) {
            int64_t x = x0 + tx, y = y0 + ty;
            float acc = 0.0f;
            for (int dy = -r; dy <= r; dy++) {
                if (y + dy < 0 || y + dy >= ny)
                    continue;
                const float *row = j->tile + (ty + dy + r) * S + tx + r;
                for (int dx = -r; dx <= r; dx++)
                    if (x + dx >= 0 && x + dx < nx)
                        acc = fmaf(j->a->weights[(dy + r) * k + dx + r], row[dx], acc);
            }
            j->out[y * nx + x] = acc;
        }
}

/* naive reads every term from the input array; tiled first copies the block's input tile with its
 * halo into a per-thread buffer standing in for shared memory. */
const cpu_st_impl cpu_st_naive = {{naive1d, naive2d}, false, "", {1, 1}};
const cpu_st_impl cpu_st_tiled = {{tiled1d, tiled2d}, true, ", tile + halo copied to a local buffer", {1, 1}};
/* fast: a GPU thread's outputs come from a window of the input it reads itself (registers, no shared
 * memory), as naive's do, in blocks of the fast kernel's outputs (CL_STENCIL_FAST_VX a thread; 2D
 * CL_STENCIL_FAST_VX x CL_STENCIL_FAST_ROWS). */
const cpu_st_impl cpu_st_fast = {{naive1d, naive2d}, false, ", each a fast block's outputs (" CL_STENCIL_FAST_VX_S
                                 " a thread; 2D " CL_STENCIL_FAST_VX_S " x " CL_STENCIL_FAST_ROWS_S ") "
                                 "from the input", {CL_STENCIL_FAST_VX, CL_STENCIL_FAST_ROWS}};

/* One entry a row, in row (= id) order; NULL where this backend has none. */
#define CPU_ST_IMPL_(id, name, impl, ...) &cpu_st_##impl,
static const cpu_st_impl *const cpu_impls[CL_STENCIL_NVARIANTS] = {CL_STENCIL_VARIANTS(CPU_ST_IMPL_)};
#undef CPU_ST_IMPL_

/* Job t of the array at arg: one per host thread, with its own tile and accumulators. */
static void job_main(long long t, void *arg)
{
    const job *j = (const job *)arg + t;
    void (*block)(const job *, uint64_t) = j->impl->block[j->a->dim == 1 ? 0 : 1];
    for (uint64_t b = j->first; b < j->last; b++)
        block(j, b);
}

/* Outputs of one of impl's blocks across and down (1D: down is 1). */
static uint64_t block_x(const cpu_st_impl *impl, const cl_stencil_args *a)
{
    return (uint64_t)a->block[0] * (uint64_t)impl->per_thread[0];
}

static uint64_t block_y(const cpu_st_impl *impl, const cl_stencil_args *a)
{
    return a->dim == 1 ? 1 : (uint64_t)a->block[1] * (uint64_t)impl->per_thread[1];
}

/* Blocks across and down (1D: down is 1). */
static uint64_t blocks_x(const cpu_st_impl *impl, const cl_stencil_args *a)
{
    return (a->nx + block_x(impl, a) - 1) / block_x(impl, a);
}

static uint64_t blocks_y(const cpu_st_impl *impl, const cl_stencil_args *a)
{
    return (a->ny + block_y(impl, a) - 1) / block_y(impl, a);
}

/* Outputs of one block: the accumulators weigh needs. */
static size_t block_outputs(const cpu_st_impl *impl, const cl_stencil_args *a)
{
    return (size_t)(block_x(impl, a) * block_y(impl, a));
}

/* ---- a student's kernel, on the CPU runner ---- */

/* Its reps (simt_rep_ops): in of the rep's seed (w is the stencil's, the same every rep); out against
 * the reference of that input (cl_stencil_verify). */
static int student_prepare(simt_arena *ar, void *ctx, uint64_t seed, char *err)
{
    const cl_stencil_args *a = ctx;
    float *in = ar->host[0];
    (void)err;
    for (uint64_t i = 0; i < a->nx * a->ny; i++)
        in[i] = cl_uniform(seed, i);
    return 0;
}

static int student_check(simt_arena *ar, void *ctx, uint64_t seed, char *what)
{
    cl_stencil_args at = *(const cl_stencil_args *)ctx;
    cl_stencil_check c;
    at.seed = seed;
    if (cl_stencil_verify(&at, ar->host[1], &c, what) != 0)
        return -1;
    if (!c.mismatches)
        return 0;
    if (at.dim == 1)
        simt_wrong_element(what, c.got, c.want, "out[%llu]", (unsigned long long)c.first_bad);
    else
        simt_wrong_element(what, c.got, c.want, "out[%llu][%llu]", (unsigned long long)(c.first_bad / at.nx),
                           (unsigned long long)(c.first_bad % at.nx));
    return 1;
}

/* As the CUDA side (cuda/stencil.cu): in, out and w named as the signature
 * names them (2D: out[row][col]), the grid by the launch rule (1D: one thread
 * per output whatever the block's shape; --grid overrides), the block's tile
 * with its halo unless --smem. */
static int cpu_stencil_student(const cl_stencil_args *a, float *host_out, cl_stencil_result *res, char *err)
{
    const cl_student_kernel *k = a->student;
    uint64_t n = a->nx * a->ny;
    size_t nw = a->dim == 1 ? (size_t)a->k : (size_t)a->k * a->k;
    if (a->nx > INT32_MAX || a->ny > INT32_MAX) {
        snprintf(err, CL_ERR_LEN, "%s takes int sizes: at most %d elements a row", k->name, INT32_MAX);
        return -1;
    }
    int64_t rows = a->dim == 2 ? (int64_t)a->ny : 0, cols = a->dim == 2 ? (int64_t)a->nx : 0;
    simt_buffer bufs[3] = {
        { "in", n * 4, 4, CL_SIMT_IN, rows, cols },
        { "out", n * 4, 4, CL_SIMT_OUT | CL_SIMT_ONE_WRITER, rows, cols },
        { "w", nw * 4, 4, CL_SIMT_IN, 0, 0 },
    };
    simt_arena ar;
    if (simt_arena_open(&ar, bufs, 3, err) != 0)
        return -1;
    memcpy(ar.host[2], a->weights, nw * sizeof(float));
    unsigned block[3];
    simt_student_block(k, block);
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    uint64_t gx = a->dim == 1 ? (a->nx + threads - 1) / threads : (a->nx + block[0] - 1) / block[0];
    uint64_t gy = a->dim == 1 ? 1 : (a->ny + block[1] - 1) / block[1];
    unsigned rule[3] = { gx > UINT32_MAX ? UINT32_MAX : (unsigned)gx, gy > UINT32_MAX ? UINT32_MAX : (unsigned)gy, 1 };
    int tile_block[2] = { (int)block[0], (int)block[1] };
    size_t smem = k->dyn_smem_given ? k->dyn_smem : cl_stencil_student_smem(a->dim, a->radius, tile_block);
    cl_simt_arg args[6] = {
        { CL_SIMT_ARG_BUFFER, 0, { 0 } }, { CL_SIMT_ARG_BUFFER, 1, { 0 } }, { CL_SIMT_ARG_BUFFER, 2, { 0 } },
    };
    int nargs = 3;
    args[nargs++] = (cl_simt_arg){ CL_SIMT_ARG_I32, 0, { .i32 = (int32_t)a->nx } };
    if (a->dim == 2)
        args[nargs++] = (cl_simt_arg){ CL_SIMT_ARG_I32, 0, { .i32 = (int32_t)a->ny } };
    args[nargs++] = (cl_simt_arg){ CL_SIMT_ARG_I32, 0, { .i32 = a->radius } };
    static const simt_rep_ops reps = { student_prepare, NULL, student_check, { 1, SIMT_NAN } };
    int rc = simt_run_student(&ar, k, rule, smem, args, nargs, a->reps, a->seed, &reps, (void *)a, &res->times,
                              &res->launch, err);
    if (rc == 0 && host_out)
        memcpy(host_out, ar.host[1], n * sizeof(float));
    simt_arena_close(&ar);
    snprintf(res->impl, sizeof res->impl, "your kernel %s on %s", k->name, SIMT_CONFIG);
    return rc;
}

/* One launch: host thread k takes the k-th of nt contiguous runs of blocks. */
static void launch(const cpu_st_impl *impl, const cl_stencil_args *a, const float *in, float *out, const double *w, float *tiles,
                   size_t tile_len, double *accs)
{
    int nt = cl_cpu_threads();
    uint64_t blocks = blocks_x(impl, a) * blocks_y(impl, a);
    job jobs[CL_CPU_MAX_THREADS];
    for (int k = 0; k < nt; k++)
        jobs[k] = (job){a, impl, in, out, w, blocks * (uint64_t)k / (uint64_t)nt,
                        blocks * (uint64_t)(k + 1) / (uint64_t)nt, tiles + k * tile_len,
                        accs + (size_t)k * block_outputs(impl, a)};
    cl_parallel_for(nt, nt, job_main, jobs);
}

static int cpu_stencil_run(int v, const cl_stencil_args *a, float *host_out, cl_stencil_result *res, char *err)
{
    memset(res, 0, sizeof *res);
    if (v == CL_VARIANT_STUDENT && a->student)
        return cpu_stencil_student(a, host_out, res, err);
    const cpu_st_impl *impl = v >= 0 && v < CL_STENCIL_NVARIANTS ? cpu_impls[v] : NULL;
    if (!impl) {
        snprintf(err, CL_ERR_LEN, "the CPU backend has no stencil variant %d", v);
        return -1;
    }
    uint64_t n = a->nx * a->ny;
    size_t tile_len = cl_stencil_student_smem(a->dim, a->radius, a->block) / sizeof(float);
    int nt = cl_cpu_threads();
    float *in = malloc(n * sizeof *in), *own = host_out ? NULL : malloc(n * sizeof *own);
    float *tiles = malloc((size_t)nt * tile_len * sizeof *tiles);
    double *accs = malloc((size_t)nt * block_outputs(impl, a) * sizeof *accs), w[CL_STENCIL_MAX_WEIGHTS];
    float *out = host_out ? host_out : own;
    int rc = -1;
    if (!in || !out || !tiles || !accs) {
        snprintf(err, CL_ERR_LEN, "out of host memory for %.1f MiB of input and output",
                 (double)n * 8 / (1024.0 * 1024.0));
        goto done;
    }
    for (uint64_t i = 0; i < n; i++)
        in[i] = cl_uniform(a->seed, i);
    for (int i = 0; i < (a->dim == 1 ? a->k : a->k * a->k); i++)
        w[i] = a->weights[i];
    for (int r = 0; r < a->warmup; r++)
        launch(impl, a, in, out, w, tiles, tile_len, accs);
    for (cl_times *tm = &res->times; cl_rep_more(a->reps, tm); tm->reps++) {
        double t0 = cl_now_ms();
        launch(impl, a, in, out, w, tiles, tile_len, accs);
        tm->ms[tm->reps] = (float)(cl_now_ms() - t0);
        cl_rep_done();
    }
    cl_times_trusted(&res->times);
    res->launch = cl_launch_2d(blocks_x(impl, a), blocks_y(impl, a), a->block[0], a->dim == 1 ? 1 : a->block[1],
                               impl->tile ? tile_len * sizeof(float) : 0, 1);
    snprintf(res->impl, sizeof res->impl, "CPU analogue: %d host threads take runs of the %s blocks%s", nt,
             a->dim == 1 ? "1D" : "2D", impl->how);
    rc = 0;
done:
    free(in);
    free(own);
    free(tiles);
    free(accs);
    return rc;
}

static uint64_t cpu_stencil_overhead(const cl_stencil_args *a)
{
    (void)a;
    return 1u << 20;
}

/* ---- the check ---- */

typedef struct check_job {
    const cl_stencil_args *a;
    const float *in, *out;
    uint64_t lo, hi, stride, band;
    cl_stencil_check c;
} check_job;

static bool in_band(const cl_stencil_args *a, uint64_t i, uint64_t band)
{
    uint64_t x = i % a->nx, y = i / a->nx;
    if (x < band || x + band >= a->nx)
        return true;
    return a->dim == 2 && (y < band || y + band >= a->ny);
}

/* Job t of the array at arg: one per host thread, merged in order afterwards. */
static void check_main(long long t, void *arg)
{
    check_job *j = (check_job *)arg + t;
    const cl_stencil_args *a = j->a;
    for (uint64_t i = j->lo; i < j->hi; i++) {
        if (j->stride > 1 && i % j->stride != 0 && !in_band(a, i, j->band))
            continue;
        double scale;
        float ref = a->dim == 1 ? direct1d(a, j->in, (int64_t)i, &scale)
                                : direct2d(a, j->in, (int64_t)(i % a->nx), (int64_t)(i / a->nx), &scale);
        float got = j->out[i];
        double err = fabs((double)got - ref), rel = scale > 0 ? err / scale : err;
        j->c.checked++;
        j->c.bit_exact += memcmp(&got, &ref, sizeof got) == 0;
        if (!(err <= j->c.rtol * scale) && j->c.mismatches++ == 0) {
            j->c.first_bad = i;
            j->c.got = got;
            j->c.want = ref;
        }
        if (!(err <= j->c.max_abs_err))
            j->c.max_abs_err = isfinite(err) ? err : INFINITY;
        if (!(rel <= j->c.max_rel_err))
            j->c.max_rel_err = isfinite(rel) ? rel : INFINITY;
    }
}

int cl_stencil_verify(const cl_stencil_args *a, const float *out, cl_stencil_check *c, char *err)
{
    memset(c, 0, sizeof *c);
    c->rtol = cl_stencil_rtol(a);
    uint64_t n = a->nx * a->ny, terms = a->dim == 1 ? (uint64_t)a->k : (uint64_t)a->k * a->k;
    float *in = malloc(n * sizeof *in);
    if (!in) {
        snprintf(err, CL_ERR_LEN, "out of host memory for the %.1f MiB reference input", (double)n * 4 / 1048576.0);
        return -1;
    }
    for (uint64_t i = 0; i < n; i++)
        in[i] = cl_uniform(a->seed, i);
    uint64_t stride = 1;
    if (n * terms > CL_STENCIL_CHECK_BUDGET)
        stride = ((n * terms + CL_STENCIL_CHECK_BUDGET - 1) / CL_STENCIL_CHECK_BUDGET) | 1;
    int nt = cl_cpu_threads();
    check_job jobs[CL_CPU_MAX_THREADS];
    for (int k = 0; k < nt; k++)
        jobs[k] = (check_job){a, in, out, n * k / nt, n * (k + 1) / nt, stride, 2 * (uint64_t)a->radius,
                              {.rtol = c->rtol}};
    cl_parallel_for(nt, nt, check_main, jobs);
    for (int k = 0; k < nt; k++) {
        const cl_stencil_check *q = &jobs[k].c;
        if (q->mismatches && !c->mismatches) {
            c->first_bad = q->first_bad;
            c->got = q->got;
            c->want = q->want;
        }
        c->checked += q->checked;
        c->mismatches += q->mismatches;
        c->bit_exact += q->bit_exact;
        if (!(q->max_abs_err <= c->max_abs_err))
            c->max_abs_err = q->max_abs_err;
        if (!(q->max_rel_err <= c->max_rel_err))
            c->max_rel_err = q->max_rel_err;
    }
    c->sampled = stride > 1;
    free(in);
    return 0;
}

/* runs_student: on the CPU runner of the CUDA model (cpu/simt/) */
const cl_stencil_ops cl_cpu_stencil_ops = {cpu_stencil_run, cpu_stencil_overhead, true};
