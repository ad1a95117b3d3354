/* coalesce.cu — the CUDA backend's %coalesce behind cl_cuda_coalesce_ops: a
 * copy kernel whose neighbouring threads are `stride` elements apart.
 *
 * The input is generated on the device from the seed; each rep flushes the L2
 * (outside the events), then times one copy of all N elements. Stride 1 runs
 * a plain copy (index = t); other strides run the permuted copy of
 * coalesce.h, with 32-bit index arithmetic when the matrix fits in 2^32
 * elements so that the division does not cost more than the memory traffic
 * being demonstrated. The output is copied back once, after the last rep,
 * and compared on the host with the input regenerated from the seed.
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudalab/coalesce.h"
#include "common.h"

__global__ void coalesce_fill(float *x, uint64_t n, uint64_t seed)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        x[i] = cl_uniform(seed, i);
}

/* show-source: coalesce stride,row,col */
__global__ void coalesce_copy_contiguous(const float *__restrict__ in, float *__restrict__ out, uint64_t n)
{
    uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n)
        out[t] = in[t];
}

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

static int cuda_coalesce_run(const cl_coalesce_args *a, cl_coalesce_result *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (a->n < 1 || a->stride < 1 || a->block < 32 || a->block > 1024) {
        snprintf(err, CL_ERR_LEN, "bad %%coalesce arguments");
        return -1;
    }
    unsigned blocks;
    if (cl_cuda_blocks(cl_coalesce_rows(a->n, a->stride) * a->stride, a->block, &blocks, err))
        return -1;
    float *in = NULL, *dout = NULL, *host = NULL;
    cl_cuda_timing t;
    memset(&t, 0, sizeof t);
    int ret = -1;
    cudaError_t rc;
    if (cl_cuda_alloc((void **)&in, a->n * 4, "input", err) ||
        cl_cuda_alloc((void **)&dout, a->n * 4, "output", err) || cl_cuda_timing_init(&t, err))
        goto done;
    coalesce_fill<<<1024, 256>>>(in, a->n, a->seed);
    if ((rc = cudaGetLastError()) != cudaSuccess || (rc = cudaMemset(dout, 0, a->n * 4)) != cudaSuccess) {
        cl_cuda_fail(err, "input generation", rc);
        goto done;
    }
    for (int w = 0; w < a->warmup; w++) {
        if (cl_cuda_flush_l2(&t, w, "L2 flush", err))
            goto done;
        if ((rc = launch(a, in, dout, blocks)) != cudaSuccess) {
            cl_cuda_fail(err, "copy kernel launch", rc);
            goto done;
        }
    }
    for (int r = 0; r < a->reps && r < CL_MAX_REPS; r++) {
        if (cl_cuda_flush_l2(&t, r, "L2 flush", err) || cl_cuda_time_start(&t, err))
            goto done;
        if ((rc = launch(a, in, dout, blocks)) != cudaSuccess) {
            cl_cuda_fail(err, "copy kernel launch", rc);
            goto done;
        }
        if (cl_cuda_time_stop(&t, &out->times.ms[r], "copy kernel", err))
            goto done;
        out->times.reps = r + 1;
    }
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
    return ret;
}

extern "C" {
extern const cl_coalesce_ops cl_cuda_coalesce_ops;
const cl_coalesce_ops cl_cuda_coalesce_ops = {cuda_coalesce_run};
}
