/* reduce.cu — the CUDA backend's %reduce: buffers, the timing loop and the
 * CUB reference, behind cl_cuda_reduce_ops.
 *
 * One run: the input is generated on the device from the seed, then warm-up
 * launches, then timed ones. Before every launch (timed or not) the L2 is
 * flushed by writing a scratch buffer twice its size, outside the events, so
 * a size that fits in L2 is still read from device memory. Events bracket the
 * variant's kernels only (both passes; for CUB, its DeviceReduce call with
 * temp storage allocated beforehand). The result is copied back once, after
 * the last rep: every rep computes the same value.
 */
#include <cuda_runtime.h>
#include <cub/cub.cuh>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cudalab/reduce.h"
#include "common.h"
#include "reduce_kernels.h"

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

/* ---- one run ---- */

typedef struct run_state {
    void *in, *part, *out, *temp;
    size_t temp_bytes;
    cl_cuda_timing t;
} run_state;

static void run_free(run_state *st)
{
    cudaFree(st->in);
    cudaFree(st->part);
    cudaFree(st->out);
    cudaFree(st->temp);
    cl_cuda_timing_free(&st->t);
}

static cudaError_t launch(int v, const reduce_plan *p, const cl_reduce_args *a, run_state *st)
{
    if (v == CL_REDUCE_CUB)
        return cub_reduce(a, st->temp, &st->temp_bytes, st->in, st->out, 0);
    return reduce_launch(p, a, st->in, st->part, st->out, 0);
}

/* Flush, then one launch; timed between the events when ms is not NULL. */
static int one_rep(int v, const reduce_plan *p, const cl_reduce_args *a, run_state *st, int r,
                   float *ms, char *err)
{
    cudaError_t rc;
    if (cl_cuda_flush_l2(&st->t, r, "L2 flush", err) || (ms && cl_cuda_time_start(&st->t, err)))
        return -1;
    if ((rc = launch(v, p, a, st)) != cudaSuccess)
        return cl_cuda_fail(err, v == CL_REDUCE_CUB ? "cub::DeviceReduce" : "kernel launch", rc);
    return ms ? cl_cuda_time_stop(&st->t, ms, "reduction kernel", err) : 0;
}

static void set_launch(cl_launch *l, unsigned grid, unsigned block, size_t smem, int regs, int kernels)
{
    l->grid[0] = (int)grid, l->grid[1] = l->grid[2] = 1;
    l->block[0] = (int)block, l->block[1] = l->block[2] = 1;
    l->smem_bytes = smem;
    l->regs_per_thread = regs;
    l->kernels = kernels;
}

static void describe(int v, const reduce_plan *p, const cl_reduce_args *a, cl_reduce_result *out)
{
    if (v == CL_REDUCE_CUB) {
        snprintf(out->impl, sizeof out->impl, "CUDA: cub::DeviceReduce::%s (CCCL %d.%d.%d, grid chosen by CUB)",
                 cub_name(a->op), CCCL_MAJOR_VERSION, CCCL_MINOR_VERSION, CCCL_PATCH_VERSION);
        return;
    }
    int kernels = p->final_block ? 2 : 1;
    set_launch(&out->launch, p->grid, p->block, p->smem + p->smem_static, p->regs, kernels);
    if (p->final_block) {
        set_launch(&out->final, 1, p->final_block, p->final_smem + p->final_smem_static,
                   p->final_regs, 1);
        snprintf(out->impl, sizeof out->impl, "CUDA: %s (%u x %u) + %s (1 x %u)", p->kernel,
                 p->grid, p->block, p->final_kernel, p->final_block);
    } else {
        snprintf(out->impl, sizeof out->impl, "CUDA: %s (1 x %u)", p->kernel, p->block);
    }
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
    if (v == CL_REDUCE_CPU || v < 0 || v >= CL_REDUCE_NVARIANTS) {
        snprintf(err, CL_ERR_LEN, "variant %d does not run on the GPU (cpu runs on the host)", v);
        return -1;
    }
    int sms = 0, max_grid = 0;
    if (device_facts(&sms, &max_grid, err))
        return -1;
    reduce_plan p = reduce_plan();
    if (v != CL_REDUCE_CUB && reduce_plan_make(v, a, sms, max_grid, &p, err))
        return -1;

    run_state st;
    memset(&st, 0, sizeof st);
    int rc = -1;
    size_t acc = reduce_acc_bytes(a->op, a->dtype);
    cudaError_t crc;
    if (cl_cuda_alloc(&st.in, a->n * 4, "input", err) ||
        cl_cuda_alloc(&st.part, p.grid * acc, "partials", err) ||
        cl_cuda_alloc(&st.out, 8, "result", err) || cl_cuda_timing_init(&st.t, err))
        goto done;
    if (v == CL_REDUCE_CUB) {
        if ((crc = cub_reduce(a, NULL, &st.temp_bytes, st.in, st.out, 0)) != cudaSuccess) {
            cl_cuda_fail(err, "cub::DeviceReduce (temp storage size)", crc);
            goto done;
        }
        if (cl_cuda_alloc(&st.temp, st.temp_bytes, "CUB temp storage", err))
            goto done;
    }
    if ((crc = reduce_fill(st.in, a->n, a->dtype, a->seed, 0)) != cudaSuccess) {
        cl_cuda_fail(err, "input generation", crc);
        goto done;
    }
    for (int w = 0; w < a->warmup; w++)
        if (one_rep(v, &p, a, &st, w, NULL, err))
            goto done;
    for (int r = 0; r < a->reps && r < CL_MAX_REPS; r++) {
        if (one_rep(v, &p, a, &st, r, &out->times.ms[r], err))
            goto done;
        out->times.reps = r + 1;
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
    describe(v, &p, a, out);
    rc = 0;
done:
    run_free(&st);
    return rc;
}

/* Partials for the smallest block (32: one per 64 elements), the L2 flush
 * buffer and CUB's temp storage (a few MiB at most). */
static uint64_t cuda_reduce_overhead(const cl_reduce_args *a)
{
    uint64_t partials = (a->n + 63) / 64 * reduce_acc_bytes(a->op, a->dtype);
    return partials + cl_cuda_flush_budget() + (16u << 20);
}

extern "C" {
extern const cl_reduce_ops cl_cuda_reduce_ops;
}
const cl_reduce_ops cl_cuda_reduce_ops = {cuda_reduce_run, cuda_reduce_overhead};
