/* launch.cu — %launch on a GPU (cudalab/launch.h): the marking kernel
 * launched exactly as asked, and what CUDA says after it, call by call. */
#include <cstdio>
#include <cstring>

#include "common.h"
#include "cudalab/launch.h"

/* Marks out[i] for this thread's global index i over a grid and block of up to
 * three dimensions; the dynamic shared memory is only asked for (the launch's
 * checks are what %launch shows), never used. */
__global__ void cl_launch_mark(unsigned char *out, long long n)
{
    long long block = blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z);
    long long thread = threadIdx.x + (long long)blockDim.x * (threadIdx.y + (long long)blockDim.y * threadIdx.z);
    long long i = block * ((long long)blockDim.x * blockDim.y * blockDim.z) + thread;
    if (i < n)
        out[i] = 1;
}

static void status_of(cudaError_t rc, cl_launch_status *s)
{
    s->code = (int)rc;
    snprintf(s->name, sizeof s->name, "%s", cudaGetErrorName(rc));
    snprintf(s->text, sizeof s->text, "%s", cudaGetErrorString(rc));
}

static int launch_run(const cl_launch_args *a, cl_launch_result *r, char *err)
{
    memset(r, 0, sizeof *r);
    long long threads = 1;
    for (int d = 0; d < 3; d++)
        threads *= (long long)a->block[d] * a->grid[d];
    r->expected = threads < CL_LAUNCH_MAX_OUT ? threads : CL_LAUNCH_MAX_OUT;
    unsigned char *out = NULL, *host = (unsigned char *)malloc((size_t)r->expected);
    cudaError_t rc = cudaGetLastError();            /* an earlier call's error is not this launch's */
    if (!host)
        return snprintf(err, CL_ERR_LEN, "out of host memory"), -1;
    if ((rc = cudaMalloc(&out, (size_t)r->expected)) != cudaSuccess ||
        (rc = cudaMemset(out, 0, (size_t)r->expected)) != cudaSuccess) {
        free(host);
        cudaFree(out);
        return cl_cuda_fail(err, "%launch's output", rc);
    }
    dim3 grid(a->grid[0], a->grid[1], a->grid[2]), block(a->block[0], a->block[1], a->block[2]);
    cl_launch_mark<<<grid, block, a->smem>>>(out, r->expected);
    status_of(cudaGetLastError(), &r->last_error);
    status_of(cudaGetLastError(), &r->again);
    status_of(cudaDeviceSynchronize(), &r->sync);
    rc = cudaMemcpy(host, out, (size_t)r->expected, cudaMemcpyDeviceToHost);
    cudaFree(out);
    if (rc != cudaSuccess) {
        free(host);
        return cl_cuda_fail(err, "reading %launch's output", rc);
    }
    for (long long i = 0; i < r->expected; i++)
        r->written += host[i];
    free(host);
    return 0;
}

extern "C" const cl_launch_ops cl_cuda_launch_ops = { launch_run };
