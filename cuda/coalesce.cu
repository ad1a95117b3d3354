/* coalesce.cu — the CUDA backend's %coalesce behind cl_cuda_coalesce_ops: a
 * copy kernel whose neighbouring threads are `stride` elements apart.
 *
 * The input is generated on the device; each rep generates one of its own and
 * sets the output to NaN, flushes the L2 (outside the events), then times one
 * copy of all N elements (cl_cuda_reps in common.h: after the timed loop the
 * reps the harness drew are compared, exactly, with their own input copied by
 * cudaMemcpy, then an untimed launch copies the seed's input). Stride 1 runs
 * a plain copy (index = t); other strides run the permuted copy of
 * coalesce.h, with 32-bit index arithmetic when the matrix fits in 2^32
 * elements so that the division does not cost more than the memory traffic
 * being demonstrated. The plain copy gives each thread several elements, each
 * load still a warp's neighbours (CL_COALESCE_CONTIGUOUS_PER_THREAD says why).
 * The output is copied back once, from that last launch, and compared on the
 * host with the input regenerated from the seed.
 * The check's reference for both, ours and a student's: the input of the rep's
 * seed, copied into out by cudaMemcpyAsync (device to device).
 *
 * A student's kernel (a->student) runs in the same reps through the launch of
 * ours (one thread per element of the rows x stride view) unless its --grid
 * says otherwise, under its launch limit: out lies between guard bytes and is
 * filled with a NaN sentinel before every launch (outside the events), so that
 * a kernel which leaves elements unwritten or writes outside out is named.
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudalab/coalesce.h"
#include "common.h"
#include "student_cuda.h"

__global__ void coalesce_fill(float *x, uint64_t n, uint64_t seed)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        x[i] = cl_uniform(seed, i);
}

/* show-source: coalesce stride,row,col shown */
/* Thread t copies elements t + q*T (T: the grid's threads), q < CL_COALESCE_CONTIGUOUS_PER_THREAD:
 * every load is still a warp's 32 neighbours; the loads come first, so they are all in flight at once. */
__global__ void coalesce_copy_contiguous(const float *__restrict__ in, float *__restrict__ out, uint64_t n)
{
    constexpr int E = CL_COALESCE_CONTIGUOUS_PER_THREAD;
    uint64_t T = (uint64_t)gridDim.x * blockDim.x, t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    float v[E];
#pragma unroll
    for (int q = 0; q < E; q++)
        if (t + q * T < n)
            v[q] = in[t + q * T];
#pragma unroll
    for (int q = 0; q < E; q++)
        if (t + q * T < n)
            out[t + q * T] = v[q];
}
/* show-source: end */

/* show-source: coalesce stride,row,col */
template <typename I>
__global__ void coalesce_copy_strided(const float *__restrict__ in, float *__restrict__ out, I n, I m, I s)
{
    I t = (I)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= m * s)
        return;
    I i = (t % m) * s + t / m;          /* neighbours t, t+1 are s elements apart */
    if (i < n)
        out[i] = in[i];
}

/* show-source: end */
/* The check's reference (cl_cuda_reps): the input of seed regenerated, then copied into out. */
static int reference(float *in, float *out, uint64_t n, uint64_t seed, char *err)
{
    coalesce_fill<<<1024, 256>>>(in, n, seed);
    cudaError_t rc = cudaGetLastError();
    if (rc == cudaSuccess)
        rc = cudaMemcpyAsync(out, in, n * sizeof(float), cudaMemcpyDeviceToDevice, 0);
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "the check's reference copy", rc);
}

/* The output every launch leaves, as the check names it. */
static cl_cuda_output output_of(float *out, uint64_t n)
{
    cl_cuda_output o = { out, (size_t)n, CL_CUDA_F32, 0, "out", 0 };
    return o;
}

static cudaError_t launch(const cl_coalesce_args *a, const float *in, float *out, unsigned grid)
{
    uint64_t m = cl_coalesce_rows(a->n, a->stride), total = m * a->stride;
    if (a->stride == 1)
        coalesce_copy_contiguous<<<grid, a->block>>>(in, out, a->n);
    else if (total <= 0xffffffffull)
        coalesce_copy_strided<uint32_t><<<grid, a->block>>>(in, out, (uint32_t)a->n, (uint32_t)m,
                                                            (uint32_t)a->stride);
    else
        coalesce_copy_strided<uint64_t><<<grid, a->block>>>(in, out, a->n, m, a->stride);
    return cudaGetLastError();
}

/* The kernel launch() runs for a, and its name. */
static const void *copy_kernel(const cl_coalesce_args *a, const char **name)
{
    uint64_t total = cl_coalesce_rows(a->n, a->stride) * a->stride;
    if (a->stride == 1)
        return *name = "coalesce_copy_contiguous", (const void *)coalesce_copy_contiguous;
    if (total <= 0xffffffffull)
        return *name = "coalesce_copy_strided<u32>", (const void *)coalesce_copy_strided<uint32_t>;
    return *name = "coalesce_copy_strided<u64>", (const void *)coalesce_copy_strided<uint64_t>;
}

/* ---- a student's kernel ---- */

typedef struct student_copy {
    const cl_student_kernel *k;
    const void *func;
    dim3 grid, block;
    float *in;
    float *out;                   /* between guard bytes: out_base is what cudaFree takes */
    void *out_base;
    unsigned long long n, stride; /* its arguments */
    cl_cuda_timing t;
    cl_cuda_reps reps;            /* each launch's input; the drawn reps' out */
} student_copy;

static int student_fill(const student_copy *s, uint64_t seed, char *err)
{
    coalesce_fill<<<1024, 256>>>(s->in, s->n, seed);
    cudaError_t rc = cudaGetLastError();
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "input generation", rc);
}

/* A timed rep's (ms not NULL) or the final launch's (CL_CUDA_REP_FINAL) input of its own, or a
 * warm-up's or counted one's (CL_CUDA_REP_WARMUP) the warm-up's; the sentinel in out (outside the
 * events), a flush, one launch; timed when ms is not NULL. */
static int student_rep(student_copy *s, int rep, float *ms, char *err)
{
    if (rep != CL_CUDA_REP_WARMUP && student_fill(s, cl_cuda_reps_seed(&s->reps, rep), err))
        return -1;
    cudaError_t rc = cudaMemsetAsync(s->out, 0xFF, s->n * sizeof(float), 0);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "filling out with the sentinel", rc);
    void *args[] = {(void *)&s->in, (void *)&s->out, &s->n, &s->stride};
    if (cl_cuda_flush_l2(&s->t, "L2 flush", err) || (ms && cl_cuda_time_start(&s->t, err)) ||
        cl_cuda_student_launch(s->k, s->func, s->grid, s->block, args, err))
        return -1;
    if (!ms)
        return 0;
    return cl_cuda_time_stop(&s->t, ms, s->k->name, err) || cl_cuda_reps_keep(&s->reps, rep, err) ? -1 : 0;
}

/* Its launch (ours: ceil(rows*stride / threads per block) blocks, unless
 * --grid), checked against what the kernel and the device allow, and its
 * buffers. */
static int student_setup(const cl_coalesce_args *a, student_copy *s, cl_coalesce_result *out, char *err)
{
    unsigned blocks;
    s->block = cl_cuda_student_block(s->k);
    if (cl_cuda_blocks(cl_coalesce_threads(a->n, a->stride), (int)(s->block.x * s->block.y * s->block.z), &blocks,
                       err))
        return -1;
    s->grid = cl_cuda_student_grid(s->k, dim3(blocks));
    if (cl_cuda_student_func(s->k, &s->func, err) ||
        cl_cuda_student_describe(s->k, s->func, s->grid, s->block, &out->launch, err) ||
        cl_cuda_alloc((void **)&s->in, a->n * sizeof(float), "input", err) ||
        cl_cuda_guarded_alloc(&s->out_base, (void **)&s->out, a->n * sizeof(float), "out", err) ||
        cl_cuda_timing_init(&s->t, err))
        return -1;
    cl_cuda_output o = output_of(s->out, a->n);
    return cl_cuda_reps_init(&s->reps, a->seed, &o, false, err);
}

/* Warm-up (at least once), the timed reps, the check of the drawn reps, then the final launch on
 * the seed's input. */
static int student_reps(const cl_coalesce_args *a, student_copy *s, cl_coalesce_result *out, char *err)
{
    if (student_fill(s, cl_cuda_reps_seed(&s->reps, CL_CUDA_REP_WARMUP), err))
        return -1;
    cl_cuda_set_limit(s->k->limit_ms, s->k->name);
    int rc = 0;
    for (int w = 0; w < (a->warmup < 1 ? 1 : a->warmup) && rc == 0; w++)
        rc = student_rep(s, CL_CUDA_REP_WARMUP, NULL, err);
    if (rc == 0)
        rc = cl_cuda_synchronize("warm-up runs", err) || cl_cuda_counted(&s->t, err, [&] {
                 void *args[] = {(void *)&s->in, (void *)&s->out, &s->n, &s->stride};
                 return cl_cuda_student_launch(s->k, s->func, s->grid, s->block, args, err);
             });
    cl_times *tm = &out->times;
    for (; rc == 0 && cl_rep_more(a->reps, tm); tm->reps += rc == 0)
        rc = student_rep(s, tm->reps, &tm->ms[tm->reps], err);
    /* the drawn reps against their own input; out: the seed's input, untimed */
    if (rc == 0)
        rc = cl_cuda_reps_verify(&s->reps, tm, err,
                                 [&](uint64_t seed) { return reference(s->in, s->out, s->n, seed, err); },
                                 [&] { return student_rep(s, CL_CUDA_REP_FINAL, NULL, err); });
    if (rc == 0)
        rc = cl_cuda_synchronize("your kernel", err);
    cl_cuda_set_limit(0, NULL);
    return rc;
}

static int student_run(const cl_coalesce_args *a, cl_coalesce_result *out, char *err)
{
    student_copy s;
    memset(&s, 0, sizeof s);
    s.k = a->student;
    s.n = a->n;
    s.stride = a->stride;
    float *host = NULL;
    int rc = student_setup(a, &s, out, err);
    if (rc == 0)
        rc = student_reps(a, &s, out, err);
    if (cl_cuda_abandoned())
        return -1;                  /* the kernel still runs: nothing else may touch the device */
    if (rc == 0)
        rc = cl_cuda_guard_check(s.k, s.out_base, a->n * sizeof(float), "out", err);
    if (rc == 0 && a->check) {
        cudaError_t e;
        if (!(host = (float *)malloc(a->n * sizeof(float)))) {
            snprintf(err, CL_ERR_LEN, "malloc of %.1f MiB for the check failed", a->n * 4 / 1048576.0);
            rc = -1;
        } else if ((e = cudaMemcpy(host, s.out, a->n * sizeof(float), cudaMemcpyDeviceToHost)) != cudaSuccess) {
            rc = cl_cuda_fail(err, "cudaMemcpy of out", e);
        } else {
            cl_coalesce_verify(a, host, out);
        }
    }
    if (rc == 0)
        snprintf(out->impl, sizeof out->impl, "CUDA: your kernel %s (%u x %u); out NaN-filled before every rep "
                 "and guarded", s.k->name, s.grid.x * s.grid.y * s.grid.z, s.block.x * s.block.y * s.block.z);
    free(host);
    cudaFree(s.in);
    cudaFree(s.out_base);
    cl_cuda_timing_free(&s.t);
    cl_cuda_reps_free(&s.reps);
    return rc;
}

/* ---- the run ---- */

static int cuda_coalesce_run(const cl_coalesce_args *a, cl_coalesce_result *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (a->student && a->n >= 1 && a->stride >= 1)
        return student_run(a, out, err);
    if (a->n < 1 || a->stride < 1 || a->block < 32 || a->block > 1024) {
        snprintf(err, CL_ERR_LEN, "bad %%coalesce arguments");
        return -1;
    }
    unsigned blocks;
    if (cl_cuda_blocks(cl_coalesce_our_threads(a->n, a->stride), a->block, &blocks, err))
        return -1;
    float *in = NULL, *dout = NULL, *host = NULL;
    cl_cuda_timing t;
    memset(&t, 0, sizeof t);
    cl_cuda_reps rs;
    memset(&rs, 0, sizeof rs);
    int ret = -1;
    cudaError_t rc;
    /* a launch's input (cl_cuda_reps_seed) and the output set to NaN, before the flush */
    auto inputs = [&](int rep) {
        coalesce_fill<<<1024, 256>>>(in, a->n, cl_cuda_reps_seed(&rs, rep));
        cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess)
            e = cudaMemsetAsync(dout, 0xFF, a->n * 4, 0);
        return e == cudaSuccess ? 0 : cl_cuda_fail(err, "input generation", e);
    };
    /* the final launch: the seed's input, untimed (cl_cuda_reps_verify runs it) */
    auto last = [&] {
        if (inputs(CL_CUDA_REP_FINAL))
            return -1;
        cudaError_t e = launch(a, in, dout, blocks);
        return e == cudaSuccess ? 0 : cl_cuda_fail(err, "copy kernel launch", e);
    };
    cl_cuda_output o;
    if (cl_cuda_alloc((void **)&in, a->n * 4, "input", err) ||
        cl_cuda_alloc((void **)&dout, a->n * 4, "output", err) || cl_cuda_timing_init(&t, err))
        goto done;
    o = output_of(dout, a->n);
    if (cl_cuda_reps_init(&rs, a->seed, &o, false, err) || inputs(CL_CUDA_REP_WARMUP))
        goto done;
    for (int w = 0; w < a->warmup; w++) {
        if (cl_cuda_flush_l2(&t, "L2 flush", err))
            goto done;
        if ((rc = launch(a, in, dout, blocks)) != cudaSuccess) {
            cl_cuda_fail(err, "copy kernel launch", rc);
            goto done;
        }
    }
    if (cl_cuda_counted(&t, err, [&] {
            cudaError_t e = launch(a, in, dout, blocks);
            return e == cudaSuccess ? 0 : cl_cuda_fail(err, "copy kernel launch", e);
        }))
        goto done;
    for (cl_times *tm = &out->times; cl_rep_more(a->reps, tm); tm->reps++) {
        if (inputs(tm->reps) || cl_cuda_flush_l2(&t, "L2 flush", err) || cl_cuda_time_start(&t, err))
            goto done;
        if ((rc = launch(a, in, dout, blocks)) != cudaSuccess) {
            cl_cuda_fail(err, "copy kernel launch", rc);
            goto done;
        }
        if (cl_cuda_time_stop(&t, &tm->ms[tm->reps], "copy kernel", err) || cl_cuda_reps_keep(&rs, tm->reps, err))
            goto done;
    }
    /* the drawn reps against their own input; the output: the seed's input, untimed */
    if (cl_cuda_reps_verify(&rs, &out->times, err,
                            [&](uint64_t seed) { return reference(in, dout, a->n, seed, err); }, last))
        goto done;
    if (a->check) {
        if (!(host = (float *)malloc(a->n * 4))) {
            snprintf(err, CL_ERR_LEN, "malloc of %.1f MiB for the check failed", a->n * 4 / 1048576.0);
            goto done;
        }
        if ((rc = cudaMemcpy(host, dout, a->n * 4, cudaMemcpyDeviceToHost)) != cudaSuccess) {
            cl_cuda_fail(err, "cudaMemcpy of the output", rc);
            goto done;
        }
        cl_coalesce_verify(a, host, out);
    }
    {
        const char *name = "";
        if (cl_cuda_describe(copy_kernel(a, &name), dim3(blocks), dim3(a->block), &out->launch, err))
            goto done;
        snprintf(out->impl, sizeof out->impl, "CUDA: %s (%llu x %d)", name, (unsigned long long)blocks, a->block);
    }
    ret = 0;
done:
    free(host);
    cudaFree(in);
    cudaFree(dout);
    cl_cuda_timing_free(&t);
    cl_cuda_reps_free(&rs);
    return ret;
}

extern "C" {
extern const cl_coalesce_ops cl_cuda_coalesce_ops;
const cl_coalesce_ops cl_cuda_coalesce_ops = {cuda_coalesce_run, true};
}
