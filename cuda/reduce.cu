/* reduce.cu — the CUDA backend's %reduce: buffers, the timing loop and the
 * CUB reference, behind cl_cuda_reduce_ops.
 *
 * One run: the input is generated on the device from the seed, then warm-up
 * launches, then timed ones. Before every launch (timed or not) the L2 is
 * flushed by writing a scratch buffer twice its size, outside the events, so
 * a size that fits in L2 is still read from device memory. Events bracket the
 * variant's kernels only (both passes; for CUB, its DeviceReduce call with
 * temp storage allocated beforehand). Each launch reduces an input of its
 * own, generated before its flush (cl_cuda_reps in common.h); after the timed
 * loop the reps the harness drew are checked against CUB on their own inputs
 * (a student's partials against the sums of their sections, in double), then
 * an untimed launch reduces the run's input. The result is copied back once,
 * from that last launch.
 *
 * A student's kernel (CL_VARIANT_STUDENT, float sum) runs through the same
 * reps under its launch limit: one pass of ⌈n/2B⌉ blocks writing one partial
 * each (the partials filled with a sentinel before every launch, outside the
 * events, and followed by guard partials); the partials are copied back and
 * added on the host in double, outside the timing.
 */
#include <cuda_runtime.h>
#include <cub/cub.cuh>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cudalab/reduce.h"
#include "common.h"
#include "reduce_kernels.h"
#include "student_cuda.h"

/* ---- CUB ---- */
/* show-source: reduce cub */

/* DeviceReduce with an int count where it fits (CUB's usual offsets), 64-bit beyond. */
template <typename N>
static cudaError_t cub_reduce_n(const cl_reduce_args *a, void *temp, size_t *bytes, const void *in,
                                void *out, N n, cudaStream_t s)
{
    if (a->dtype == CL_REDUCE_FLOAT) {
        const float *x = static_cast<const float *>(in);
        float *y = static_cast<float *>(out);
        if (a->op == CL_REDUCE_SUM)
            return cub::DeviceReduce::Sum(temp, *bytes, x, y, n, s);
        if (a->op == CL_REDUCE_MAX)
            return cub::DeviceReduce::Max(temp, *bytes, x, y, n, s);
        return cub::DeviceReduce::Min(temp, *bytes, x, y, n, s);
    }
    const int *x = static_cast<const int *>(in);
    if (a->op == CL_REDUCE_SUM)     /* int64 output: CUB accumulates in the output type */
        return cub::DeviceReduce::Sum(temp, *bytes, x, static_cast<long long *>(out), n, s);
    if (a->op == CL_REDUCE_MAX)
        return cub::DeviceReduce::Max(temp, *bytes, x, static_cast<int *>(out), n, s);
    return cub::DeviceReduce::Min(temp, *bytes, x, static_cast<int *>(out), n, s);
}
/* show-source: end */

static cudaError_t cub_reduce(const cl_reduce_args *a, void *temp, size_t *bytes, const void *in,
                              void *out, cudaStream_t s)
{
    if (a->n <= (uint64_t)INT32_MAX)
        return cub_reduce_n(a, temp, bytes, in, out, (int)a->n, s);
    return cub_reduce_n(a, temp, bytes, in, out, (long long)a->n, s);
}

static const char *cub_name(cl_reduce_op op)
{
    return op == CL_REDUCE_SUM ? "Sum" : op == CL_REDUCE_MAX ? "Max" : "Min";
}

/* The cub variant: no kernels of ours to plan, its temp storage the run's. */
static int cub_plan(int v, const cl_reduce_args *, int, int, reduce_plan *p, char *)
{
    *p = reduce_plan();
    p->variant = v;
    return 0;
}

static int cub_launch(const reduce_plan *, const cl_reduce_args *a, const reduce_bufs *b, cudaStream_t s, char *err)
{
    cudaError_t rc = cub_reduce(a, b->temp, b->temp_bytes, b->in, b->out, s);
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "cub::DeviceReduce", rc);
}

static void cub_describe(const reduce_plan *, const cl_reduce_args *a, cl_reduce_result *out)
{
    snprintf(out->impl, sizeof out->impl, "CUDA: cub::DeviceReduce::%s (CCCL %d.%d.%d, grid chosen by CUB)",
             cub_name(a->op), CCCL_MAJOR_VERSION, CCCL_MINOR_VERSION, CCCL_PATCH_VERSION);
}

const rd_gpu_impl rd_gpu_cub = {cub_plan, cub_launch, cub_describe, NULL};

/* ---- what runs each variant of the contract (reduce.h), by id ---- */

/* One entry a row, in row (= id) order; NULL where this backend has none (the host loop, CL_V_HOST,
 * runs on the CPU backend). */
#define RD_GPU_IMPL_(id, name, impl, ...) &rd_gpu_##impl,
static const rd_gpu_impl *const cuda_impls[CL_REDUCE_NVARIANTS] = {CL_REDUCE_VARIANTS(RD_GPU_IMPL_)};
#undef RD_GPU_IMPL_

static const rd_gpu_impl *cuda_impl(int v)
{
    return v >= 0 && v < CL_REDUCE_NVARIANTS ? cuda_impls[v] : NULL;
}

/* For %occupancy --kernel (occupancy.h): the float-sum instance of a variant's first pass, or with
 * instance 1 of its second, and its dynamic shared memory for a block of `threads`. */
extern "C" const void *cl_reduce_kernel_ptr(int variant, int instance, int threads, size_t *dyn)
{
    const rd_gpu_impl *impl = cuda_impl(variant);
    *dyn = instance ? cl_reduce_final_smem_dynamic(variant, sizeof(float))
                    : cl_reduce_smem_dynamic(variant, threads, sizeof(float));
    return impl && impl->kernel ? impl->kernel(instance) : NULL;
}

/* ---- one run ---- */

typedef struct run_state {
    void *in, *part, *out, *temp;
    size_t temp_bytes;
    cl_cuda_timing t;
    const void *student_func;       /* a student's kernel: its handle and launch */
    dim3 grid, block;
    size_t npart;                   /* its partials (the grid's blocks) */
    cl_cuda_reps reps;              /* each launch's input; the drawn reps' results */
} run_state;

static void run_free(run_state *st)
{
    cudaFree(st->in);
    cudaFree(st->part);
    cudaFree(st->out);
    cudaFree(st->temp);
    cl_cuda_timing_free(&st->t);
    cl_cuda_reps_free(&st->reps);
}

static int launch(int v, const reduce_plan *p, const cl_reduce_args *a, run_state *st, char *err)
{
    if (v == CL_VARIANT_STUDENT) {
        const float *in = (const float *)st->in;
        float *part = (float *)st->part;
        int n = (int)a->n;
        void *args[] = { &in, &part, &n };
        return cl_cuda_student_launch(a->student, st->student_func, st->grid, st->block, args, err);
    }
    reduce_bufs b = {st->in, st->part, st->out, st->temp, &st->temp_bytes};
    return cuda_impl(v)->launch(p, a, &b, 0, err);
}

/* The input of launch `rep` (cl_cuda_reps_seed). */
static int fill(const cl_reduce_args *a, run_state *st, int rep, char *err)
{
    cudaError_t rc = reduce_fill(st->in, a->n, a->dtype, cl_cuda_reps_seed(&st->reps, rep), 0);
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "input generation", rc);
}

/* ---- the reference for the check of drawn reps (cl_cuda_reps) ---- */

/* A student's partials as the contract defines them: partial[b] = the sum of input[section·b,
 * section·b + section) ∩ [0, n), added in double, one warp per partial. */
__global__ static void reduce_sections_kernel(const float *in, unsigned long long n, unsigned long long section,
                                              float *partial, unsigned long long count)
{
    unsigned lane = threadIdx.x % 32;
    unsigned long long warp = (blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x) / 32;
    unsigned long long warps = gridDim.x * (unsigned long long)blockDim.x / 32;
    for (unsigned long long b = warp; b < count; b += warps) {      /* the same b in a whole warp */
        unsigned long long lo = b * section, hi = lo + section < n ? lo + section : n;
        double sum = 0;
        for (unsigned long long i = lo + lane; i < hi; i += 32)
            sum += in[i];
        for (int o = 16; o > 0; o /= 2)
            sum += __shfl_down_sync(0xffffffffu, sum, o);
        if (lane == 0)
            partial[b] = (float)sum;
    }
}

/* The reference's result on the input of seed, where the variant leaves its own: CUB into out,
 * or for a student's kernel its partials' sums. */
static int reference(int v, const cl_reduce_args *a, run_state *st, uint64_t seed, char *err)
{
    cudaError_t rc = reduce_fill(st->in, a->n, a->dtype, seed, 0);
    if (rc == cudaSuccess && v == CL_VARIANT_STUDENT) {
        uint64_t section = cl_reduce_student_section((int)(st->block.x * st->block.y * st->block.z));
        size_t blocks = (st->npart + 7) / 8;      /* 8 warps a block */
        reduce_sections_kernel<<<(unsigned)(blocks < 8192 ? blocks : 8192), 256>>>(
            (const float *)st->in, a->n, section, (float *)st->part, st->npart);
        rc = cudaGetLastError();
    } else if (rc == cudaSuccess) {
        rc = cub_reduce(a, st->temp, &st->temp_bytes, st->in, st->out, 0);
    }
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "the check's reference reduction", rc);
}

/* One launch: a timed rep's (ms not NULL: timed between the events) or the final one
 * (CL_CUDA_REP_FINAL) on an input of its own first; a warm-up or counted one
 * (CL_CUDA_REP_WARMUP) on the warm-up's. Then the output gets the sentinel (a student's
 * partials with their guards), the L2 is flushed and the variant launched. */
static int one_rep(int v, const reduce_plan *p, const cl_reduce_args *a, run_state *st, int rep,
                   float *ms, char *err)
{
    cudaError_t rc;
    if (rep != CL_CUDA_REP_WARMUP && fill(a, st, rep, err))
        return -1;
    if ((rc = v == CL_VARIANT_STUDENT
                  ? cudaMemsetAsync(st->part, 0xFF, (st->npart + CL_REDUCE_GUARD) * sizeof(float), 0)
                  : cudaMemsetAsync(st->out, 0xFF, 8, 0)) != cudaSuccess)
        return cl_cuda_fail(err, "filling the output with the sentinel", rc);
    if (cl_cuda_flush_l2(&st->t, "L2 flush", err) || (ms && cl_cuda_time_start(&st->t, err)))
        return -1;
    if (launch(v, p, a, st, err))
        return -1;
    if (!ms)
        return 0;
    return cl_cuda_time_stop(&st->t, ms, "reduction kernel", err) || cl_cuda_reps_keep(&st->reps, rep, err) ? -1 : 0;
}

/* Warm-up and timed reps (a student's kernel under its launch limit). */
static int all_reps(int v, const reduce_plan *p, const cl_reduce_args *a, run_state *st, cl_reduce_result *out,
                    char *err)
{
    if (a->student)
        cl_cuda_set_limit(a->student->limit_ms, a->student->name);
    int rc = fill(a, st, CL_CUDA_REP_WARMUP, err);
    for (int w = 0; w < a->warmup && rc == 0; w++)
        rc = one_rep(v, p, a, st, CL_CUDA_REP_WARMUP, NULL, err);
    if (rc == 0)
        rc = cl_cuda_counted(&st->t, err, [&] { return one_rep(v, p, a, st, CL_CUDA_REP_WARMUP, NULL, err); });
    cl_times *tm = &out->times;
    for (; rc == 0 && cl_rep_more(a->reps, tm); tm->reps += rc == 0)
        rc = one_rep(v, p, a, st, tm->reps, &tm->ms[tm->reps], err);
    /* the drawn reps against the reference on their own inputs; the result: the run's input, untimed */
    if (rc == 0)
        rc = cl_cuda_reps_verify(&st->reps, tm, err,
                                 [&](uint64_t seed) { return reference(v, a, st, seed, err); },
                                 [&] { return one_rep(v, p, a, st, CL_CUDA_REP_FINAL, NULL, err); });
    if (rc == 0 && a->student)
        rc = cl_cuda_synchronize("your kernel", err);
    cl_cuda_set_limit(0, NULL);
    return rc;
}

/* Where a launch leaves its result, and how far it may lie from the reference's: exact for
 * integers, a minimum or a maximum; for a float sum (of all n, or of a student's section, in any
 * order: atomics) twice the host check's tolerance, rtol·max(|sum|, sqrt(Σx²)) with rtol =
 * 1e-5·log2(terms) (both results may err), taking |sum| up to 2·sqrt(terms) (|x| < 1: 3.5
 * standard deviations). */
static cl_cuda_output result_of(int v, const cl_reduce_args *a, const run_state *st)
{
    bool fsum = a->dtype == CL_REDUCE_FLOAT && a->op == CL_REDUCE_SUM;
    if (v == CL_VARIANT_STUDENT) {
        double terms = (double)cl_reduce_student_section((int)(st->block.x * st->block.y * st->block.z));
        double atol = 4e-5 * fmax(log2(terms), 1) * sqrt(terms);
        cl_cuda_output o = { st->part, st->npart, CL_CUDA_F32, atol, "partial", 0 };
        return o;
    }
    double terms = (double)a->n;
    cl_cuda_value type = a->dtype == CL_REDUCE_FLOAT ? CL_CUDA_F32
                       : reduce_acc_bytes(a->op, a->dtype) == 8 ? CL_CUDA_I64 : CL_CUDA_I32;
    const char *name = a->op == CL_REDUCE_SUM ? "the sum" : a->op == CL_REDUCE_MAX ? "the maximum" : "the minimum";
    cl_cuda_output o = { st->out, 1, type, fsum ? 4e-5 * fmax(log2(terms), 1) * sqrt(terms) : 0, name, 0 };
    return o;
}

/* ---- a student's kernel ---- */

/* Its launch by the family's rule (⌈n/2B⌉ blocks of B threads) unless --grid,
 * checked against what the kernel and the device allow. */
static int student_plan(const cl_reduce_args *a, run_state *st, cl_reduce_result *out, char *err)
{
    const cl_student_kernel *k = a->student;
    if (!k || a->op != CL_REDUCE_SUM || a->dtype != CL_REDUCE_FLOAT || a->n > 2147483647u) {
        snprintf(err, CL_ERR_LEN, "a student's reduction sums floats, n <= 2^31 - 1");
        return -1;
    }
    if (cl_cuda_student_func(k, &st->student_func, err))
        return -1;
    st->block = cl_cuda_student_block(k);
    uint64_t section = cl_reduce_student_section((int)(st->block.x * st->block.y * st->block.z));
    uint64_t blocks = (a->n + section - 1) / section;
    st->grid = cl_cuda_student_grid(k, dim3(blocks > 0xffffffffu ? 0xffffffffu : (unsigned)blocks));
    st->npart = (size_t)st->grid.x * st->grid.y * st->grid.z;
    if (st->npart > a->npartials || !a->partials) {
        snprintf(err, CL_ERR_LEN, "room for %llu partials, the grid has %zu blocks",
                 (unsigned long long)a->npartials, st->npart);
        return -1;
    }
    if (cl_cuda_student_describe(k, st->student_func, st->grid, st->block, &out->launch, err))
        return -1;
    snprintf(out->impl, sizeof out->impl, "CUDA: your kernel %s (%zu x %u); the partials added on the host "
             "in double, outside the timing", k->name, st->npart, st->block.x * st->block.y * st->block.z);
    return 0;
}

/* The first of the CL_REDUCE_GUARD sentinels after `count` results at d that a kernel wrote
 * (its index from the buffer's start), else -1; -2 with err when they cannot be read. */
static int64_t guard_written(const float *d, size_t count, char *err)
{
    static float guard[CL_REDUCE_GUARD];
    cudaError_t rc = cudaMemcpy(guard, d + count, sizeof guard, cudaMemcpyDeviceToHost);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaMemcpy of the guards", rc) - 1;
    for (int k = 0; k < CL_REDUCE_GUARD; k++) {
        uint32_t bits;
        memcpy(&bits, &guard[k], 4);
        if (bits != 0xFFFFFFFFu)
            return (int64_t)count + k;
    }
    return -1;
}

/* The partials back into a->partials, their guards checked, their sum. */
static int student_collect(const cl_reduce_args *a, const run_state *st, cl_reduce_result *out, char *err)
{
    cudaError_t rc = cudaMemcpy(a->partials, st->part, st->npart * sizeof(float), cudaMemcpyDeviceToHost);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaMemcpy of the partials", rc);
    if ((out->guard_hit = guard_written((const float *)st->part, st->npart, err)) < -1)
        return -1;
    double sum = 0;
    for (size_t b = 0; b < st->npart; b++)
        sum += a->partials[b];
    out->fvalue = sum;
    out->partials = st->npart;
    return 0;
}

/* The second pass (a->second): one block of the kernel's threads over the run's partials, left on
 * the device by its last launch, into one float with guards after it; the run's value. Untimed. */
static int student_second(const cl_reduce_args *a, const run_state *st, cl_reduce_result *out, char *err)
{
    const cl_student_kernel *k = a->second;
    const void *func;
    dim3 block = cl_cuda_student_block(k), one(1, 1, 1);
    float *result = NULL, value;
    int rc = -1;
    cudaError_t crc;
    if (cl_cuda_student_func(k, &func, err) || cl_cuda_student_describe(k, func, one, block, &out->final, err) ||
        cl_cuda_alloc((void **)&result, (1 + CL_REDUCE_GUARD) * sizeof(float), "second pass's result", err))
        goto done;
    if ((crc = cudaMemset(result, 0xFF, (1 + CL_REDUCE_GUARD) * sizeof(float))) != cudaSuccess) {
        cl_cuda_fail(err, "filling the second pass's result with the sentinel", crc);
        goto done;
    }
    {
        const float *in = (const float *)st->part;
        int n = (int)st->npart;
        void *args[] = { &in, &result, &n };
        cl_cuda_set_limit(k->limit_ms, k->name);
        rc = cl_cuda_student_launch(k, func, one, block, args, err) || cl_cuda_synchronize("your second pass", err)
                 ? -1 : 0;
        cl_cuda_set_limit(0, NULL);
        if (rc && cl_cuda_abandoned())
            return -1;              /* the kernel still runs: nothing else may touch the device */
    }
    if (rc == 0 && (crc = cudaMemcpy(&value, result, sizeof value, cudaMemcpyDeviceToHost)) != cudaSuccess)
        rc = cl_cuda_fail(err, "cudaMemcpy of the second pass's result", crc);
    if (rc == 0 && (out->final_guard_hit = guard_written(result, 1, err)) < -1)
        rc = -1;
    if (rc == 0) {
        out->fvalue = value;
        snprintf(out->impl, sizeof out->impl, "CUDA: your kernel %s (%zu x %u), then %s (1 x %u) over its "
                 "partials; the second pass outside the timing", a->student->name, st->npart,
                 st->block.x * st->block.y * st->block.z, k->name, block.x * block.y * block.z);
    }
done:
    cudaFree(result);
    return rc;
}

static int device_facts(int *sms, int *max_grid, char *err)
{
    int dev = 0;
    cudaError_t rc = cudaGetDevice(&dev);
    if (rc == cudaSuccess)
        rc = cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev);
    if (rc == cudaSuccess)
        rc = cudaDeviceGetAttribute(max_grid, cudaDevAttrMaxGridDimX, dev);
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "device attributes", rc);
}

static int cuda_reduce_run(int v, const cl_reduce_args *a, cl_reduce_result *out, char *err)
{
    memset(out, 0, sizeof *out);
    out->guard_hit = out->final_guard_hit = -1;
    bool student = v == CL_VARIANT_STUDENT;
    const rd_gpu_impl *impl = cuda_impl(v);
    if (!student && !impl) {
        snprintf(err, CL_ERR_LEN, "variant %d does not run on the GPU (cpu runs on the host)", v);
        return -1;
    }
    int sms = 0, max_grid = 0;
    if (device_facts(&sms, &max_grid, err))
        return -1;
    reduce_plan p = reduce_plan();
    run_state st;
    memset(&st, 0, sizeof st);
    if (student ? student_plan(a, &st, out, err) : impl->plan(v, a, sms, max_grid, &p, err))
        return -1;

    int rc = -1;
    size_t acc = reduce_acc_bytes(a->op, a->dtype);
    size_t part_bytes = student ? (st.npart + CL_REDUCE_GUARD) * sizeof(float) : p.grid * acc;
    cudaError_t crc;
    if (cl_cuda_alloc(&st.in, a->n * 4, "input", err) ||
        cl_cuda_alloc(&st.part, part_bytes, "partials", err) ||
        cl_cuda_alloc(&st.out, 8, "result", err) || cl_cuda_timing_init(&st.t, err))
        goto done;
    if (!student) {     /* CUB's temp storage: the cub variant's, and the reference's for the others */
        if ((crc = cub_reduce(a, NULL, &st.temp_bytes, st.in, st.out, 0)) != cudaSuccess) {
            cl_cuda_fail(err, "cub::DeviceReduce (temp storage size)", crc);
            goto done;
        }
        if (cl_cuda_alloc(&st.temp, st.temp_bytes, "CUB temp storage", err))
            goto done;
    }
    {
        cl_cuda_output res = result_of(v, a, &st);
        bool library = !student && (cl_reduce_variants[v].flags & CL_V_LIBRARY);  /* CUB: the reference itself */
        if (cl_cuda_reps_init(&st.reps, a->seed, &res, library, err))
            goto done;
    }
    if (all_reps(v, &p, a, &st, out, err)) {
        if (cl_cuda_abandoned())
            return -1;              /* the kernel still runs: nothing else may touch the device */
        goto done;
    }
    if (student) {
        rc = student_collect(a, &st, out, err);
        if (rc == 0 && a->second && (rc = student_second(a, &st, out, err)) != 0 && cl_cuda_abandoned())
            return -1;              /* the kernel still runs: nothing else may touch the device */
        goto done;
    }
    {
        unsigned char val[8] = {0};
        if ((crc = cudaMemcpy(val, st.out, acc, cudaMemcpyDeviceToHost)) != cudaSuccess) {
            cl_cuda_fail(err, "cudaMemcpy of the result", crc);
            goto done;
        }
        if (a->dtype == CL_REDUCE_FLOAT) {
            float f;
            memcpy(&f, val, 4);
            out->fvalue = f;
        } else if (acc == 8) {
            long long i;
            memcpy(&i, val, 8);
            out->ivalue = i;
        } else {
            int i;
            memcpy(&i, val, 4);
            out->ivalue = i;
        }
    }
    impl->describe(&p, a, out);
    rc = 0;
done:
    run_free(&st);
    return rc;
}

/* Partials for the smallest block (32: one per 64 elements), and as many again for each rep the
 * check keeps (a student's partials are its output), the L2 flush buffer and CUB's temp storage
 * (a few MiB at most). */
static uint64_t cuda_reduce_overhead(const cl_reduce_args *a)
{
    uint64_t partials = (a->n + 63) / 64 * reduce_acc_bytes(a->op, a->dtype);
    return (1 + (uint64_t)cl_gpu_copies_or_drawn(a->kept_copies)) * partials + cl_cuda_flush_budget() + (16u << 20);
}

extern "C" {
extern const cl_reduce_ops cl_cuda_reduce_ops;
}
const cl_reduce_ops cl_cuda_reduce_ops = {cuda_reduce_run, cuda_reduce_overhead, true};
