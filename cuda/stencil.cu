/* stencil.cu — the CUDA backend's %stencil: 1D stencil and 2D convolution,
 * naive and shared-memory tiled, behind cl_cuda_stencil_ops.
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

#include "cudalab/stencil.h"
#include "common.h"
#include "student_cuda.h"

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

/* ---- one run ---- */

typedef struct plan plan;
struct plan {
    dim3 grid, block;
    size_t smem;                  /* dynamic shared memory */
    const void *fn;               /* the kernel: ours, or the student's handle */
    const char *name;
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

const st_gpu_impl st_gpu_naive = {{(const void *)stencil1d_naive, (const void *)stencil2d_naive},
                                  {"stencil1d_naive", "stencil2d_naive"}, false, launch_naive};
const st_gpu_impl st_gpu_tiled = {{(const void *)stencil1d_tiled, (const void *)stencil2d_tiled},
                                  {"stencil1d_tiled", "stencil2d_tiled"}, true, launch_tiled};

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
    p->grid = dim3((unsigned)((a->nx + p->block.x - 1) / p->block.x),
                   (unsigned)((a->ny + p->block.y - 1) / p->block.y));
    p->smem = impl->tile ? cl_stencil_student_smem(a->dim, a->radius, a->block) : 0;
    p->fn = impl->kernel[a->dim == 1 ? 0 : 1];
    p->name = impl->name[a->dim == 1 ? 0 : 1];
    p->launch = impl->launch;
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
    return cl_cuda_reps_verify(rs, tm->reps, err, [&](uint64_t seed) { return reference(a, in, p->out, seed, err); },
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

/* The L2 flush buffer, the copies of the drawn reps' outputs (cl_cuda_reps) and room for the rest. */
static uint64_t cuda_stencil_overhead(const cl_stencil_args *a)
{
    return cl_cuda_flush_budget() + CL_GPU_CHECKED_REPS * a->nx * a->ny * sizeof(float) + (16u << 20);
}

extern "C" {
extern const cl_stencil_ops cl_cuda_stencil_ops;
}
const cl_stencil_ops cl_cuda_stencil_ops = {cuda_stencil_run, cuda_stencil_overhead, true};
