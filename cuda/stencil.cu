/* stencil.cu — the CUDA backend's %stencil: 1D stencil and 2D convolution,
 * naive, shared-memory tiled and fast, behind cl_cuda_stencil_ops.
 *
 * fast (a window in registers, 16-byte loads, the radius unrolled) is the rung at the copy's roof.
 *
 * The weights live in __constant__ memory: every thread of a warp reads the
 * same weight at the same time, which the constant cache broadcasts. Ghost
 * cells outside the array are 0 (zero padding). Each term is added with
 * fmaf in the order stencil.h states, so the output equals the host
 * reference bit for bit. One run: input generated on the device, warm-up
 * launches, then timed ones, each on an input of its own generated before an
 * L2 flush, with the output filled with a NaN sentinel, outside the events
 * (cl_cuda_reps in common.h); after the timed loop the reps the harness drew
 * are checked against the naive kernel on their own inputs, then an untimed
 * launch on the seed's input leaves the output that is copied back.
 *
 * A student's kernel (CL_VARIANT_STUDENT) runs in the same reps with its
 * weights in a device buffer passed as a pointer and its output between guard
 * bytes, under its launch limit.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <utility>

#include "cudalab/stencil.h"
#include "common.h"
#include "student_cuda.h"

/* show-source: stencil naive,tiled,fast shown */
__constant__ float c_weights[CL_STENCIL_MAX_WEIGHTS];
/* show-source: end */

__global__ void stencil_fill(float *in, uint64_t n, uint64_t seed)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        in[i] = cl_uniform(seed, i);
}

/* ---- 1D ---- */

/* show-source: stencil naive */
/* One thread per output; 2R+1 global loads per output. */
__global__ void stencil1d_naive(const float *__restrict__ in, float *__restrict__ out, long long n, int R)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float acc = 0.0f;
    for (int j = -R; j <= R; j++) {
        long long p = i + j;
        if (p >= 0 && p < n)
            acc = fmaf(c_weights[j + R], in[p], acc);
    }
    out[i] = acc;
}
/* show-source: end */

/* show-source: stencil tiled */
/* The block's B outputs need inputs [base-R, base+B+R): B+2R floats, each
 * loaded once (R <= B, so at most three strides of the block). */
__global__ void stencil1d_tiled(const float *__restrict__ in, float *__restrict__ out, long long n, int R)
{
    extern __shared__ float tile[];
    int B = blockDim.x, t = threadIdx.x;
    long long base = blockIdx.x * (long long)B;
    for (int s = t; s < B + 2 * R; s += B) {
        long long p = base - R + s;
        tile[s] = p >= 0 && p < n ? in[p] : 0.0f;
    }
    __syncthreads();
    long long i = base + t;
    if (i >= n)
        return;
    /* ghost cells are 0 in the tile, so no term needs a bounds check: w*0 adds
     * nothing (at most it turns a -0 into +0, which the check does not see) */
    const float *win = tile + t;
    float acc = 0.0f;
    for (int j = 0; j <= 2 * R; j++)
        acc = fmaf(c_weights[j], win[j], acc);
    out[i] = acc;
}
/* show-source: end */

/* ---- 2D ---- */

/* show-source: stencil naive 2D */
__global__ void stencil2d_naive(const float *__restrict__ in, float *__restrict__ out, int nx, int ny, int r)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny)
        return;
    int k = 2 * r + 1;
    float acc = 0.0f;
    for (int dy = -r; dy <= r; dy++) {
        int yy = y + dy;
        if (yy < 0 || yy >= ny)
            continue;
        for (int dx = -r; dx <= r; dx++) {
            int xx = x + dx;
            if (xx >= 0 && xx < nx)
                acc = fmaf(c_weights[(dy + r) * k + dx + r], in[(size_t)yy * nx + xx], acc);
        }
    }
    out[(size_t)y * nx + x] = acc;
}
/* show-source: end */

/* show-source: stencil tiled 2D */
/* Output tile blockDim.x x blockDim.y, input tile with its halo of r on every
 * side, loaded cooperatively by the block's threads (ghost cells stored as 0),
 * then one __syncthreads. */
__global__ void stencil2d_tiled(const float *__restrict__ in, float *__restrict__ out, int nx, int ny, int r)
{
    extern __shared__ float tile[];
    int TX = blockDim.x, TY = blockDim.y, SX = TX + 2 * r, SY = TY + 2 * r, k = 2 * r + 1;
    int x0 = blockIdx.x * TX - r, y0 = blockIdx.y * TY - r;
    for (int ty = threadIdx.y; ty < SY; ty += TY) {     /* 2D strides: no division per element */
        int yy = y0 + ty;
        for (int tx = threadIdx.x; tx < SX; tx += TX) {
            int xx = x0 + tx;
            tile[ty * SX + tx] = xx >= 0 && xx < nx && yy >= 0 && yy < ny ? in[(size_t)yy * nx + xx] : 0.0f;
        }
    }
    __syncthreads();
    int x = blockIdx.x * TX + threadIdx.x, y = blockIdx.y * TY + threadIdx.y;
    if (x >= nx || y >= ny)
        return;
    /* ghost cells are 0 in the tile: every term is taken, none needs a check */
    float acc = 0.0f;
    for (int dy = 0; dy < k; dy++) {
        const float *row = tile + (threadIdx.y + dy) * SX + threadIdx.x;
        for (int dx = 0; dx < k; dx++)
            acc = fmaf(c_weights[dy * k + dx], row[dx], acc);
    }
    out[(size_t)y * nx + x] = acc;
}
/* show-source: end */

/* ---- fast: each thread's window in registers ---- */

/* show-source: stencil fast shown */
/* v = in[p .. p+4), ghost cells 0: one 16-byte load where all four lie inside the row of n and
 * the row is 16-byte aligned (p is a multiple of 4 in every caller), else four 4-byte ones. */
__device__ __forceinline__ void load4(const float *__restrict__ in, long long p, long long n, bool aligned, float *v)
{
    if (aligned && p >= 0 && p + 4 <= n) {
        float4 q = __ldg(reinterpret_cast<const float4 *>(in + p));
        v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
        return;
    }
#pragma unroll
    for (int e = 0; e < 4; e++)
        v[e] = p + e >= 0 && p + e < n ? __ldg(in + p + e) : 0.0f;
}

/* out[p .. p+4) = v where it lies inside the row of n: one 16-byte store where it can. */
__device__ __forceinline__ void store4(float *__restrict__ out, long long p, long long n, bool aligned, const float *v)
{
    if (aligned && p + 4 <= n) {
        *reinterpret_cast<float4 *>(out + p) = make_float4(v[0], v[1], v[2], v[3]);
        return;
    }
#pragma unroll
    for (int e = 0; e < 4; e++)
        if (p + e < n)
            out[p + e] = v[e];
}

/* Thread t computes outputs [4t, 4t+4) of the array from the window [4t-RP, 4t+4+RP) (RP: R rounded
 * up to whole float4s), which it reads with 16-byte loads that the warp coalesces; its neighbours
 * read the same halo again, from the L1. R is a template parameter, so the loops unroll and every
 * weight is an immediate operand from the constant bank: no load instruction per term. */
template <int R>
__global__ void stencil1d_fast(const float *__restrict__ in, float *__restrict__ out, long long n)
{
    constexpr int V = CL_STENCIL_FAST_VX, RP = (R + 3) / 4 * 4, W = V + 2 * RP;
    long long i0 = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * V;
    if (i0 >= n)
        return;
    float win[W], acc[V];
#pragma unroll
    for (int q = 0; q < W; q += 4)
        load4(in, i0 - RP + q, n, true, win + q);
#pragma unroll
    for (int o = 0; o < V; o++) {
        acc[o] = 0.0f;
#pragma unroll
        for (int j = 0; j <= 2 * R; j++)
            acc[o] = fmaf(c_weights[j], win[RP - R + o + j], acc[o]);
    }
    store4(out, i0, n, true, acc);
}

/* Radii beyond CL_STENCIL_FAST_MAX_R: the same 4 outputs a thread, the window slid through
 * registers one input at a time (R is known only at run time). */
__global__ void stencil1d_fast_any(const float *__restrict__ in, float *__restrict__ out, long long n, int R)
{
    constexpr int V = CL_STENCIL_FAST_VX;
    long long i0 = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * V;
    if (i0 >= n)
        return;
    float x[V], acc[V];
#pragma unroll
    for (int o = 0; o < V; o++) {
        long long p = i0 - R + o;
        x[o] = p >= 0 && p < n ? __ldg(in + p) : 0.0f;
        acc[o] = 0.0f;
    }
    for (int j = 0; j <= 2 * R; j++) {
        float w = c_weights[j];
#pragma unroll
        for (int o = 0; o < V; o++)
            acc[o] = fmaf(w, x[o], acc[o]);
#pragma unroll
        for (int o = 0; o < V - 1; o++)
            x[o] = x[o + 1];
        long long p = i0 - R + j + V;
        x[V - 1] = p >= 0 && p < n ? __ldg(in + p) : 0.0f;
    }
    store4(out, i0, n, true, acc);
}

/* v = in[p .. p+2), as load4 with 8-byte loads (p even). */
__device__ __forceinline__ void load2(const float *__restrict__ in, long long p, long long n, bool aligned, float *v)
{
    if (aligned && p >= 0 && p + 2 <= n) {
        float2 q = __ldg(reinterpret_cast<const float2 *>(in + p));
        v[0] = q.x, v[1] = q.y;
        return;
    }
#pragma unroll
    for (int e = 0; e < 2; e++)
        v[e] = p + e >= 0 && p + e < n ? __ldg(in + p + e) : 0.0f;
}

/* Input row yy's window [x0-S, x0+W-S) (ghost cells 0) into row: 16-byte loads from x0 - S rounded
 * up to a whole float4, and where S is 2 past one (r = 2, 6) an 8-byte load at each edge — the
 * fewest load instructions that read no column the thread does not add (5x5: 3 a row, not 4). */
template <int S, int W>
__device__ __forceinline__ void load_row(const float *__restrict__ in, int yy, int x0, int nx, int ny, bool aligned,
                                         float *row)
{
    constexpr int EDGE = S % 4 == 2 ? 2 : 0;
    if (yy < 0 || yy >= ny) {
#pragma unroll
        for (int e = 0; e < W; e++)
            row[e] = 0.0f;
        return;
    }
    const float *line = in + (size_t)yy * nx;
    if (EDGE)
        load2(line, x0 - S, nx, aligned, row);
#pragma unroll
    for (int q = EDGE; q < W - EDGE; q += 4)
        load4(line, x0 - S + q, nx, aligned, row + q);
    if (EDGE)
        load2(line, x0 - S + W - 2, nx, aligned, row + W - 2);
}

/* Input row s of a thread's window (row[0] is S columns left of its first output) into the outputs
 * whose filter covers it: output row h takes it as its filter's row s - h, dx ascending. */
template <int r, int H, int V, int W, int S>
__device__ __forceinline__ void add_row(float (&acc)[H][V], const float *row, int s)
{
    constexpr int k = 2 * r + 1;
#pragma unroll
    for (int h = 0; h < H; h++) {
        int dy = s - h;                                 /* known at compile time: unrolled */
        if (dy < 0 || dy >= k)
            continue;
#pragma unroll
        for (int o = 0; o < V; o++)
#pragma unroll
            for (int dx = 0; dx < k; dx++)
                acc[h][o] = fmaf(c_weights[dy * k + dx], row[S - r + o + dx], acc[h][o]);
    }
}

#define ST_FAST_SMALL_BLOCK 256       /* stencil2d_fast's MAXT for blocks up to it; 1024 beyond */
#define ST_FAST_SMALL_BLOCKS_PER_SM 3 /* its blocks a SM holds at once: at most 85 registers a thread */

/* Thread (tx, ty) computes a 4 x H patch of outputs from (4tx, H ty), H = CL_STENCIL_FAST_ROWS: it
 * reads the H + 2r input rows in order, D of them ahead of the one it adds (load_row), adds each
 * row's terms to the outputs whose filter covers it, so every output still sums row by row, dx
 * fastest, and stores an output row as soon as its last input row is in; rows are read once a
 * thread instead of k times. MAXT: the most threads of its block. Under 1024 a thread may have at
 * most 64 registers, too few to keep the next rows' loads in flight while it adds (D = 1); blocks up
 * to 256 threads (the default 16x16 among them) take an instance bounded to three blocks a SM, whose
 * threads load every row's window before adding where the 85 registers that leaves hold them (5x5:
 * unbounded, the compiler took 88, two blocks a SM, and 8192² ran at 71% of the copy, not 83%). */
template <int r, int MAXT>
__global__ void __launch_bounds__(MAXT, MAXT <= ST_FAST_SMALL_BLOCK ? ST_FAST_SMALL_BLOCKS_PER_SM : 1)
    stencil2d_fast(const float *__restrict__ in, float *__restrict__ out, int nx, int ny)
{
    /* the window starts S before x0: r itself where that is 2 past a whole float4 (r = 2, 6: nothing
     * read for nothing), else r rounded up to whole float4s */
    constexpr int V = CL_STENCIL_FAST_VX, H = CL_STENCIL_FAST_ROWS, ROWS = H + 2 * r,
                  S = r % 4 == 2 ? r : (r + 3) / 4 * 4, W = V + 2 * S;
    constexpr int D = MAXT <= ST_FAST_SMALL_BLOCK && ROWS * W <= 96 ? ROWS : 1;
    int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * V, y0 = (blockIdx.y * blockDim.y + threadIdx.y) * H;
    if (x0 >= nx || y0 >= ny)
        return;
    bool aligned = nx % 4 == 0;
    float acc[H][V], win[D][W];
#pragma unroll
    for (int h = 0; h < H; h++)
#pragma unroll
        for (int o = 0; o < V; o++)
            acc[h][o] = 0.0f;
#pragma unroll
    for (int s = 0; s < D; s++)
        load_row<S, W>(in, y0 - r + s, x0, nx, ny, aligned, win[s]);
#pragma unroll
    for (int s = 0; s < ROWS; s++) {
        add_row<r, H, V, W, S>(acc, win[s % D], s);
        int h = s - 2 * r;                              /* output row h has all its input rows */
        if (h >= 0 && y0 + h < ny)
            store4(out + (size_t)(y0 + h) * nx, x0, nx, aligned, acc[h]);
        if (s + D < ROWS)
            load_row<S, W>(in, y0 - r + s + D, x0, nx, ny, aligned, win[s % D]);
    }
}
/* show-source: end */

/* ---- one run ---- */

typedef struct plan plan;
struct plan {
    dim3 grid, block;
    size_t smem;                  /* dynamic shared memory */
    const void *fn;               /* the kernel: ours, or the student's handle */
    const char *name;
    char label[48];               /* name's storage where the kernel is picked per run (fast) */
    cudaError_t (*launch)(const plan *p);   /* enqueues fn */
    const cl_stencil_args *a;
    const float *in, *w;          /* w: the weights on the device, for a student's kernel */
    float *out;
};

/* ---- each row's kernels, st_gpu_<impl> (the row's impl, stencil.h) ---- */

struct st_gpu_impl {
    const void *kernel[2];        /* 1D, 2D */
    const char *name[2];
    bool tile;                    /* dynamic shared memory: the block's input tile with its halo */
    cudaError_t (*launch)(const plan *p);
    int per_thread[2];            /* outputs a thread computes along x and y (2D) */
    void (*pick)(plan *p);        /* where kernel[] is NULL: sets fn and name for the run's radius */
};

/* Declared weak, so a row without kernels here is NULL in the table. */
#define ST_GPU_WEAK_(id, name, impl, ...) CL_VARIANT_WEAK_(st_gpu_impl, st_gpu_, impl)
CL_STENCIL_VARIANTS(ST_GPU_WEAK_)
#undef ST_GPU_WEAK_

static cudaError_t launch_naive(const plan *p)
{
    const cl_stencil_args *a = p->a;
    if (a->dim == 1)
        stencil1d_naive<<<p->grid, p->block>>>(p->in, p->out, (long long)a->nx, a->radius);
    else
        stencil2d_naive<<<p->grid, p->block>>>(p->in, p->out, (int)a->nx, (int)a->ny, a->radius);
    return cudaGetLastError();
}

static cudaError_t launch_tiled(const plan *p)
{
    const cl_stencil_args *a = p->a;
    if (a->dim == 1)
        stencil1d_tiled<<<p->grid, p->block, p->smem>>>(p->in, p->out, (long long)a->nx, a->radius);
    else
        stencil2d_tiled<<<p->grid, p->block, p->smem>>>(p->in, p->out, (int)a->nx, (int)a->ny, a->radius);
    return cudaGetLastError();
}

/* fast: the instance for the run's radius (stencil1d_fast_any beyond CL_STENCIL_FAST_MAX_R). */
template <int... R>
static const void *fast1d_instance(int radius, std::integer_sequence<int, R...>)
{
    static const void *const instances[] = {(const void *)stencil1d_fast<R + 1>...};
    return radius >= 1 && radius <= (int)sizeof...(R) ? instances[radius - 1] : NULL;
}

template <int... r>
static const void *fast2d_instance(int radius, bool small, std::integer_sequence<int, r...>)
{
    static const void *const bounded[] = {(const void *)stencil2d_fast<r, 1024>...};
    static const void *const roomy[] = {(const void *)stencil2d_fast<r, ST_FAST_SMALL_BLOCK>...};
    return radius >= 0 && radius < (int)sizeof...(r) ? (small ? roomy : bounded)[radius] : NULL;
}

static void pick_fast(plan *p)
{
    const cl_stencil_args *a = p->a;
    if (a->dim == 2) {
        bool small = p->block.x * p->block.y <= ST_FAST_SMALL_BLOCK;
        p->fn = fast2d_instance(a->radius, small, std::make_integer_sequence<int, (CL_STENCIL_MAX_K + 1) / 2>());
        snprintf(p->label, sizeof p->label, "stencil2d_fast<%d, %d>", a->radius, small ? ST_FAST_SMALL_BLOCK : 1024);
    } else if ((p->fn = fast1d_instance(a->radius, std::make_integer_sequence<int, CL_STENCIL_FAST_MAX_R>()))) {
        snprintf(p->label, sizeof p->label, "stencil1d_fast<%d>", a->radius);
    } else {
        p->fn = (const void *)stencil1d_fast_any;
        snprintf(p->label, sizeof p->label, "stencil1d_fast_any");
    }
    p->name = p->label;
}

static cudaError_t launch_fast(const plan *p)
{
    const cl_stencil_args *a = p->a;
    long long n = (long long)a->nx;
    int nx = (int)a->nx, ny = (int)a->ny, R = a->radius;
    void *args1[] = {(void *)&p->in, (void *)&p->out, &n, &R};      /* R: stencil1d_fast_any's only */
    void *args2[] = {(void *)&p->in, (void *)&p->out, &nx, &ny};
    return cudaLaunchKernel(p->fn, p->grid, p->block, a->dim == 1 ? args1 : args2, 0, 0);
}

const st_gpu_impl st_gpu_naive = {{(const void *)stencil1d_naive, (const void *)stencil2d_naive},
                                  {"stencil1d_naive", "stencil2d_naive"}, false, launch_naive, {1, 1}, NULL};
const st_gpu_impl st_gpu_tiled = {{(const void *)stencil1d_tiled, (const void *)stencil2d_tiled},
                                  {"stencil1d_tiled", "stencil2d_tiled"}, true, launch_tiled, {1, 1}, NULL};
const st_gpu_impl st_gpu_fast = {{NULL, NULL}, {NULL, NULL}, false, launch_fast,
                                 {CL_STENCIL_FAST_VX, CL_STENCIL_FAST_ROWS}, pick_fast};

/* One entry a row, in row (= id) order. */
#define ST_GPU_IMPL_(id, name, impl, ...) &st_gpu_##impl,
static const st_gpu_impl *const cuda_impls[CL_STENCIL_NVARIANTS] = {CL_STENCIL_VARIANTS(ST_GPU_IMPL_)};
#undef ST_GPU_IMPL_

static const st_gpu_impl *cuda_impl(int v)
{
    return v >= 0 && v < CL_STENCIL_NVARIANTS ? cuda_impls[v] : NULL;
}

static void make_plan(const st_gpu_impl *impl, const cl_stencil_args *a, plan *p)
{
    p->a = a;
    p->block = dim3((unsigned)a->block[0], a->dim == 1 ? 1u : (unsigned)a->block[1]);
    uint64_t across = (uint64_t)p->block.x * impl->per_thread[0],
             down = (uint64_t)p->block.y * (a->dim == 1 ? 1 : impl->per_thread[1]);
    p->grid = dim3((unsigned)((a->nx + across - 1) / across), (unsigned)((a->ny + down - 1) / down));
    p->smem = impl->tile ? cl_stencil_student_smem(a->dim, a->radius, a->block) : 0;
    p->fn = impl->kernel[a->dim == 1 ? 0 : 1];
    p->name = impl->name[a->dim == 1 ? 0 : 1];
    p->launch = impl->launch;
    if (impl->pick)
        impl->pick(p);
}

/* A student's kernel: its weights in a device buffer, passed as a pointer. */
static cudaError_t student_launch(const plan *p)
{
    const cl_stencil_args *a = p->a;
    int n = (int)a->nx, width = (int)a->nx, height = (int)a->ny, r = a->radius;
    void *args1[] = {(void *)&p->in, (void *)&p->out, (void *)&p->w, &n, &r};
    void *args2[] = {(void *)&p->in, (void *)&p->out, (void *)&p->w, &width, &height, &r};
    return cudaLaunchKernel(p->fn, p->grid, p->block, a->dim == 1 ? args1 : args2, p->smem, 0);
}

/* A student's kernel: its block, the launch rule's grid (1D: one thread per
 * output whatever the block's shape) unless --grid, its tile unless --smem. */
static int make_student_plan(const cl_stencil_args *a, plan *p, cl_launch *l, char *err)
{
    const cl_student_kernel *k = a->student;
    p->a = a;
    p->name = k->name;
    p->launch = student_launch;
    if (cl_cuda_student_func(k, &p->fn, err))
        return -1;
    p->block = cl_cuda_student_block(k);
    unsigned long long threads = (unsigned long long)p->block.x * p->block.y * p->block.z;
    dim3 rule = a->dim == 1 ? dim3((unsigned)((a->nx + threads - 1) / threads))
                            : dim3((unsigned)((a->nx + p->block.x - 1) / p->block.x),
                                   (unsigned)((a->ny + p->block.y - 1) / p->block.y));
    p->grid = cl_cuda_student_grid(k, rule);
    int block[2] = {(int)p->block.x, (int)p->block.y};
    p->smem = k->dyn_smem_given ? k->dyn_smem : cl_stencil_student_smem(a->dim, a->radius, block);
    cl_student_kernel sized = *k;
    sized.dyn_smem = p->smem;
    return cl_cuda_student_describe(&sized, p->fn, p->grid, p->block, l, err);
}

static int fill(float *in, uint64_t n, uint64_t seed, char *err)
{
    stencil_fill<<<1024, 256>>>(in, n, seed);
    cudaError_t crc = cudaGetLastError();
    return crc == cudaSuccess ? 0 : cl_cuda_fail(err, "input generation", crc);
}

/* The check's reference (cl_cuda_reps): the naive kernel, weights in __constant__, on the input of
 * seed, into out; blocks of 256 (1D) or 16x16 (2D), whatever the variant's. */
static int reference(const cl_stencil_args *a, float *in, float *out, uint64_t seed, char *err)
{
    if (fill(in, a->nx * a->ny, seed, err))
        return -1;
    if (a->dim == 1)
        stencil1d_naive<<<(unsigned)((a->nx + 255) / 256), 256>>>(in, out, (long long)a->nx, a->radius);
    else
        stencil2d_naive<<<dim3((unsigned)((a->nx + 15) / 16), (unsigned)((a->ny + 15) / 16)), dim3(16, 16)>>>(
            in, out, (int)a->nx, (int)a->ny, a->radius);
    cudaError_t rc = cudaGetLastError();
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "the check's reference (stencil naive)", rc);
}

/* One launch: a timed rep's (ms not NULL: timed between the events) or the final one
 * (CL_CUDA_REP_FINAL) on an input of its own first, a warm-up or counted one (CL_CUDA_REP_WARMUP)
 * on the warm-up's; then the whole output is written again (a NaN sentinel first). */
static int one_rep(const plan *p, cl_cuda_timing *t, cl_cuda_reps *rs, float *in, int rep, float *ms,
                   char *err)
{
    cudaError_t rc;
    uint64_t n = p->a->nx * p->a->ny;
    if (rep != CL_CUDA_REP_WARMUP && fill(in, n, cl_cuda_reps_seed(rs, rep), err))
        return -1;
    if ((rc = cudaMemsetAsync(p->out, 0xFF, n * sizeof(float), 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaMemsetAsync of the output", rc);
    if (cl_cuda_flush_l2(t, "L2 flush", err) || (ms && cl_cuda_time_start(t, err)))
        return -1;
    if ((rc = p->launch(p)) != cudaSuccess) {
        char what[160];
        snprintf(what, sizeof what, "launching %s", p->name);
        return cl_cuda_fail(err, what, rc);
    }
    if (!ms)
        return 0;
    return cl_cuda_time_stop(t, ms, p->name, err) || cl_cuda_reps_keep(rs, rep, err) ? -1 : 0;
}

/* Warm-up (a student's at least once) and the timed reps, the check of the drawn reps, then the
 * final launch on the seed's input, whose output is the run's. */
static int reps(int v, const cl_stencil_args *a, plan *p, cl_cuda_timing *t, cl_cuda_reps *rs, float *in,
                cl_stencil_result *res, char *err)
{
    bool student = v == CL_VARIANT_STUDENT;
    uint64_t n = a->nx * a->ny;
    if (fill(in, n, cl_cuda_reps_seed(rs, CL_CUDA_REP_WARMUP), err))
        return -1;
    for (int w = 0; w < (student && a->warmup < 1 ? 1 : a->warmup); w++)
        if (one_rep(p, t, rs, in, CL_CUDA_REP_WARMUP, NULL, err))
            return -1;
    if (cl_cuda_counted(t, err, [&] { return one_rep(p, t, rs, in, CL_CUDA_REP_WARMUP, NULL, err); }) ||
        (student && cl_cuda_synchronize("warm-up runs", err)))
        return -1;
    cl_times *tm = &res->times;
    for (; cl_rep_more(a->reps, tm); tm->reps++)
        if (one_rep(p, t, rs, in, tm->reps, &tm->ms[tm->reps], err))
            return -1;
    return cl_cuda_reps_verify(rs, tm, err, [&](uint64_t seed) { return reference(a, in, p->out, seed, err); },
                               [&] { return one_rep(p, t, rs, in, CL_CUDA_REP_FINAL, NULL, err); });
}

/* How far an output may lie from the naive kernel's: the check's tolerance against the sum of
 * the terms' magnitudes, at most Σ|w| (|x| < 1), twice (both results may err). */
static double ref_atol(const cl_stencil_args *a, size_t nw)
{
    double w = 0;
    for (size_t j = 0; j < nw; j++)
        w += fabs((double)a->weights[j]);
    return 2 * cl_stencil_rtol(a) * w;
}

static int cuda_stencil_run(int v, const cl_stencil_args *a, float *host_out, cl_stencil_result *res,
                            char *err)
{
    memset(res, 0, sizeof *res);
    bool student = v == CL_VARIANT_STUDENT;
    const st_gpu_impl *impl = student ? NULL : cuda_impl(v);
    if (student ? !a->student : !impl) {
        snprintf(err, CL_ERR_LEN, "unknown stencil variant %d", v);
        return -1;
    }
    size_t nw = a->dim == 1 ? (size_t)a->k : (size_t)a->k * a->k;
    if (nw > CL_STENCIL_MAX_WEIGHTS) {
        snprintf(err, CL_ERR_LEN, "%zu weights do not fit in constant memory (at most %d)", nw,
                 CL_STENCIL_MAX_WEIGHTS);
        return -1;
    }
    plan p;
    memset(&p, 0, sizeof p);
    if (student) {
        if (make_student_plan(a, &p, &res->launch, err))
            return -1;
    } else {
        make_plan(impl, a, &p);
    }
    uint64_t n = a->nx * a->ny;
    float *in = NULL, *out = NULL, *w = NULL;
    void *out_base = NULL;            /* a student's output: between guard bytes */
    cl_cuda_timing t;
    memset(&t, 0, sizeof t);
    cl_cuda_reps rs;
    memset(&rs, 0, sizeof rs);
    int rc = -1;
    cudaError_t crc;
    cudaFuncAttributes fa;
    memset(&fa, 0, sizeof fa);
    if (cl_cuda_alloc((void **)&in, n * 4, "input", err) ||
        (student ? cl_cuda_guarded_alloc(&out_base, (void **)&out, n * 4, "output", err)
                 : cl_cuda_alloc((void **)&out, n * 4, "output", err)) ||
        (student && cl_cuda_alloc((void **)&w, nw * sizeof(float), "weights", err)) || cl_cuda_timing_init(&t, err))
        goto done;
    {
        cl_cuda_output o = { out, (size_t)n, CL_CUDA_F32, ref_atol(a, nw), "out", a->dim == 1 ? 0 : (size_t)a->nx };
        if (cl_cuda_reps_init(&rs, a->seed, &o, v == CL_STENCIL_NAIVE, err))
            goto done;
    }
    /* __constant__ for ours and for the check's reference; a student's kernel reads its own copy */
    crc = cudaMemcpyToSymbol(c_weights, a->weights, nw * sizeof(float));
    if (crc == cudaSuccess && student)
        crc = cudaMemcpy(w, a->weights, nw * sizeof(float), cudaMemcpyHostToDevice);
    if (crc != cudaSuccess) {
        cl_cuda_fail(err, "copying the weights", crc);
        goto done;
    }
    if ((crc = cudaFuncGetAttributes(&fa, p.fn)) != cudaSuccess) {
        cl_cuda_fail(err, "cudaFuncGetAttributes", crc);
        goto done;
    }
    p.in = in, p.out = out, p.w = w;
    if (student)
        cl_cuda_set_limit(a->student->limit_ms, a->student->name);
    rc = reps(v, a, &p, &t, &rs, in, res, err);
    cl_cuda_set_limit(0, NULL);
    if (cl_cuda_abandoned())
        return -1;                    /* the kernel still runs: nothing else may touch the device */
    if (rc == 0 && student)
        rc = cl_cuda_guard_check(a->student, out_base, n * 4, "out", err);
    if (rc == 0 && host_out && (crc = cudaMemcpy(host_out, out, n * 4, cudaMemcpyDeviceToHost)) != cudaSuccess)
        rc = cl_cuda_fail(err, "cudaMemcpy of the output", crc);
    if (rc != 0)
        goto done;
    if (!student) {
        res->launch.grid[0] = (int)p.grid.x, res->launch.grid[1] = (int)p.grid.y, res->launch.grid[2] = 1;
        res->launch.block[0] = (int)p.block.x, res->launch.block[1] = (int)p.block.y, res->launch.block[2] = 1;
        res->launch.smem_bytes = p.smem + fa.sharedSizeBytes;
        res->launch.regs_per_thread = fa.numRegs;
        res->launch.kernels = 1;
    }
    snprintf(res->impl, sizeof res->impl, "CUDA: %s (%u x %u blocks of %u x %u), weights %s", p.name, p.grid.x,
             p.grid.y, p.block.x, p.block.y, student ? "passed as a pointer" : "in __constant__");
done:
    cudaFree(in);
    cudaFree(out_base ? out_base : out);
    cudaFree(w);
    cl_cuda_timing_free(&t);
    cl_cuda_reps_free(&rs);
    return rc;
}

/* The L2 flush buffer, the copies of the checked reps' outputs (cl_cuda_reps) and room for the rest. */
static uint64_t cuda_stencil_overhead(const cl_stencil_args *a)
{
    return cl_cuda_flush_budget() + cl_gpu_copies_or_drawn(a->kept_copies) * a->nx * a->ny * sizeof(float) +
           (16u << 20);
}

extern "C" {
extern const cl_stencil_ops cl_cuda_stencil_ops;
}
const cl_stencil_ops cl_cuda_stencil_ops = {cuda_stencil_run, cuda_stencil_overhead, true};
