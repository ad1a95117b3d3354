/* stencil.cu — the CUDA backend's %stencil: 1D stencil and 2D convolution,
 * naive and shared-memory tiled, behind cl_cuda_stencil_ops.
 *
 * The weights live in __constant__ memory: every thread of a warp reads the
 * same weight at the same time, which the constant cache broadcasts. Ghost
 * cells outside the array are 0 (zero padding). Each term is added with
 * fmaf in the order stencil.h states, so the output equals the host
 * reference bit for bit. One run: input generated on the device from the
 * seed, warm-up launches, then timed ones, each after an L2 flush outside the
 * events; the output is copied back once, after the last rep.
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cudalab/stencil.h"
#include "common.h"

/* show-source: stencil naive,tiled shown */
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
/* Output tile T x T, input tile (T+2r)^2 with halo, loaded cooperatively by
 * the T*T threads (ghost cells stored as 0), then one __syncthreads. */
__global__ void stencil2d_tiled(const float *__restrict__ in, float *__restrict__ out, int nx, int ny, int r)
{
    extern __shared__ float tile[];
    int T = blockDim.x, S = T + 2 * r, k = 2 * r + 1;
    int x0 = blockIdx.x * T - r, y0 = blockIdx.y * T - r;
    for (int ty = threadIdx.y; ty < S; ty += T) {       /* 2D strides: no division per element */
        int yy = y0 + ty;
        for (int tx = threadIdx.x; tx < S; tx += T) {
            int xx = x0 + tx;
            tile[ty * S + tx] = xx >= 0 && xx < nx && yy >= 0 && yy < ny ? in[(size_t)yy * nx + xx] : 0.0f;
        }
    }
    __syncthreads();
    int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
    if (x >= nx || y >= ny)
        return;
    /* ghost cells are 0 in the tile: every term is taken, none needs a check */
    float acc = 0.0f;
    for (int dy = 0; dy < k; dy++) {
        const float *row = tile + (threadIdx.y + dy) * S + threadIdx.x;
        for (int dx = 0; dx < k; dx++)
            acc = fmaf(c_weights[dy * k + dx], row[dx], acc);
    }
    out[(size_t)y * nx + x] = acc;
}
/* show-source: end */

/* ---- one run ---- */

typedef struct plan {
    dim3 grid, block;
    size_t smem;
    const void *fn;
    const char *name;
} plan;

static void make_plan(int v, const cl_stencil_args *a, plan *p)
{
    bool tiled = v == CL_STENCIL_TILED;
    if (a->dim == 1) {
        p->block = dim3((unsigned)a->block);
        p->grid = dim3((unsigned)((a->nx + a->block - 1) / a->block));
        p->smem = tiled ? (size_t)(a->block + 2 * a->radius) * sizeof(float) : 0;
        p->fn = tiled ? (const void *)stencil1d_tiled : (const void *)stencil1d_naive;
        p->name = tiled ? "stencil1d_tiled" : "stencil1d_naive";
    } else {
        int T = a->block, S = T + 2 * a->radius;
        p->block = dim3((unsigned)T, (unsigned)T);
        p->grid = dim3((unsigned)((a->nx + T - 1) / T), (unsigned)((a->ny + T - 1) / T));
        p->smem = tiled ? (size_t)S * S * sizeof(float) : 0;
        p->fn = tiled ? (const void *)stencil2d_tiled : (const void *)stencil2d_naive;
        p->name = tiled ? "stencil2d_tiled" : "stencil2d_naive";
    }
}

static cudaError_t launch(int v, const cl_stencil_args *a, const plan *p, const float *in, float *out)
{
    bool tiled = v == CL_STENCIL_TILED;
    if (a->dim == 1) {
        if (tiled)
            stencil1d_tiled<<<p->grid, p->block, p->smem>>>(in, out, (long long)a->nx, a->radius);
        else
            stencil1d_naive<<<p->grid, p->block>>>(in, out, (long long)a->nx, a->radius);
    } else if (tiled) {
        stencil2d_tiled<<<p->grid, p->block, p->smem>>>(in, out, (int)a->nx, (int)a->ny, a->radius);
    } else {
        stencil2d_naive<<<p->grid, p->block>>>(in, out, (int)a->nx, (int)a->ny, a->radius);
    }
    return cudaGetLastError();
}

static int one_rep(int v, const cl_stencil_args *a, const plan *p, cl_cuda_timing *t, const float *in,
                   float *out, int r, float *ms, char *err)
{
    cudaError_t rc;
    if (cl_cuda_flush_l2(t, r, "L2 flush", err) || (ms && cl_cuda_time_start(t, err)))
        return -1;
    if ((rc = launch(v, a, p, in, out)) != cudaSuccess)
        return cl_cuda_fail(err, "stencil kernel launch", rc);
    return ms ? cl_cuda_time_stop(t, ms, "stencil kernel", err) : 0;
}

static int cuda_stencil_run(int v, const cl_stencil_args *a, float *host_out, cl_stencil_result *res,
                            char *err)
{
    memset(res, 0, sizeof *res);
    if (v < 0 || v >= CL_STENCIL_NVARIANTS) {
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
    make_plan(v, a, &p);
    uint64_t n = a->nx * a->ny;
    float *in = NULL, *out = NULL;
    cl_cuda_timing t;
    memset(&t, 0, sizeof t);
    int rc = -1;
    cudaError_t crc;
    cudaFuncAttributes fa;
    memset(&fa, 0, sizeof fa);
    if (cl_cuda_alloc((void **)&in, n * 4, "input", err) || cl_cuda_alloc((void **)&out, n * 4, "output", err) ||
        cl_cuda_timing_init(&t, err))
        goto done;
    if ((crc = cudaMemcpyToSymbol(c_weights, a->weights, nw * sizeof(float))) != cudaSuccess) {
        cl_cuda_fail(err, "cudaMemcpyToSymbol of the weights", crc);
        goto done;
    }
    stencil_fill<<<1024, 256>>>(in, n, a->seed);
    if ((crc = cudaGetLastError()) != cudaSuccess) {
        cl_cuda_fail(err, "input generation", crc);
        goto done;
    }
    if ((crc = cudaFuncGetAttributes(&fa, p.fn)) != cudaSuccess) {
        cl_cuda_fail(err, "cudaFuncGetAttributes", crc);
        goto done;
    }
    for (int w = 0; w < a->warmup; w++)
        if (one_rep(v, a, &p, &t, in, out, w, NULL, err))
            goto done;
    for (int r = 0; r < a->reps && r < CL_MAX_REPS; r++) {
        if (one_rep(v, a, &p, &t, in, out, r, &res->times.ms[r], err))
            goto done;
        res->times.reps = r + 1;
    }
    if (host_out && (crc = cudaMemcpy(host_out, out, n * 4, cudaMemcpyDeviceToHost)) != cudaSuccess) {
        cl_cuda_fail(err, "cudaMemcpy of the output", crc);
        goto done;
    }
    res->launch.grid[0] = (int)p.grid.x, res->launch.grid[1] = (int)p.grid.y, res->launch.grid[2] = 1;
    res->launch.block[0] = (int)p.block.x, res->launch.block[1] = (int)p.block.y, res->launch.block[2] = 1;
    res->launch.smem_bytes = p.smem + fa.sharedSizeBytes;
    res->launch.regs_per_thread = fa.numRegs;
    res->launch.kernels = 1;
    snprintf(res->impl, sizeof res->impl, "CUDA: %s (%u x %u blocks of %u x %u), weights in __constant__",
             p.name, p.grid.x, p.grid.y, p.block.x, p.block.y);
    rc = 0;
done:
    cudaFree(in);
    cudaFree(out);
    cl_cuda_timing_free(&t);
    return rc;
}

static uint64_t cuda_stencil_overhead(const cl_stencil_args *a)
{
    (void)a;
    return cl_cuda_flush_budget() + (16u << 20);
}

extern "C" {
extern const cl_stencil_ops cl_cuda_stencil_ops;
}
const cl_stencil_ops cl_cuda_stencil_ops = {cuda_stencil_run, cuda_stencil_overhead};
