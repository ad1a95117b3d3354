/* common.cu — the helpers in common.h: errors, allocation and the timing
 * of one rep (L2 flush, events), shared by the families' runners. */
#include <stdio.h>

#include "common.h"

int cl_cuda_fail(char *err, const char *what, cudaError_t rc)
{
    if (err)
        snprintf(err, CL_ERR_LEN, "%s: %s", what, cudaGetErrorString(rc));
    /* Clear the non-sticky error so the next call starts clean. */
    (void)cudaGetLastError();
    return -1;
}

int cl_cuda_alloc(void **p, size_t bytes, const char *what, char *err)
{
    cudaError_t rc = cudaMalloc(p, bytes ? bytes : 16);
    if (rc == cudaSuccess)
        return 0;
    *p = NULL;
    snprintf(err, CL_ERR_LEN, "cudaMalloc of %.1f MiB for the %s: %s", (double)bytes / (1024.0 * 1024.0),
             what, cudaGetErrorString(rc));
    (void)cudaGetLastError();
    return -1;
}

void cl_cuda_timing_free(cl_cuda_timing *t)
{
    cudaFree(t->flush);
    if (t->e0)
        cudaEventDestroy(t->e0);
    if (t->e1)
        cudaEventDestroy(t->e1);
}

int cl_cuda_flush_l2(const cl_cuda_timing *t, int r, const char *what, char *err)
{
    cudaError_t rc = cudaMemsetAsync(t->flush, r & 0xff, t->flush_bytes, 0);
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, what, rc);
}

int cl_cuda_time_start(const cl_cuda_timing *t, char *err)
{
    cudaError_t rc = cudaEventRecord(t->e0, 0);
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "cudaEventRecord", rc);
}

int cl_cuda_time_stop(const cl_cuda_timing *t, float *ms, const char *what, char *err)
{
    cudaError_t rc;
    if ((rc = cudaEventRecord(t->e1, 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventRecord", rc);
    if ((rc = cudaEventSynchronize(t->e1)) != cudaSuccess)
        return cl_cuda_fail(err, what, rc);
    if ((rc = cudaEventElapsedTime(ms, t->e0, t->e1)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventElapsedTime", rc);
    return 0;
}
