/* common.cu — the helpers in common.h: errors, allocation and the timing
 * of one rep (L2 flush, events), shared by the families' runners. */
#include <stdio.h>
#include <time.h>
#include <string.h>

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

size_t cl_cuda_flush_bytes(char *err)
{
    int dev = 0, l2 = 0;
    cudaError_t rc = cudaGetDevice(&dev);
    if (rc == cudaSuccess)
        rc = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
    if (rc != cudaSuccess) {
        cl_cuda_fail(err, "device attributes", rc);
        return 0;
    }
    return 2 * (size_t)(l2 > 0 ? l2 : 8 << 20);
}

size_t cl_cuda_flush_budget(void)
{
    char err[CL_ERR_LEN];
    size_t b = cl_cuda_flush_bytes(err);
    return b ? b : (size_t)128 << 20;
}

int cl_cuda_timing_init(cl_cuda_timing *t, char *err)
{
    memset(t, 0, sizeof *t);
    if ((t->flush_bytes = cl_cuda_flush_bytes(err)) == 0 ||
        cl_cuda_alloc(&t->flush, t->flush_bytes, "L2 flush buffer", err))
        return -1;
    cudaError_t rc;
    if ((rc = cudaEventCreate(&t->e0)) != cudaSuccess || (rc = cudaEventCreate(&t->e1)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventCreate", rc);
    return 0;
}

int cl_cuda_blocks(uint64_t n, int block, unsigned *blocks, char *err)
{
    uint64_t b = (n + (uint64_t)block - 1) / (uint64_t)block;
    if (b > 2147483647ull) {
        snprintf(err, CL_ERR_LEN, "%llu blocks exceed the grid limit 2^31-1", (unsigned long long)b);
        return -1;
    }
    *blocks = (unsigned)b;
    return 0;
}

int cl_cuda_describe(const void *func, dim3 grid, dim3 block, cl_launch *l, char *err)
{
    cudaFuncAttributes fa;
    memset(&fa, 0, sizeof fa);
    cudaError_t rc = cudaFuncGetAttributes(&fa, func);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaFuncGetAttributes", rc);
    l->grid[0] = (int)grid.x, l->grid[1] = (int)grid.y, l->grid[2] = (int)grid.z;
    l->block[0] = (int)block.x, l->block[1] = (int)block.y, l->block[2] = (int)block.z;
    l->smem_bytes = fa.sharedSizeBytes;
    l->regs_per_thread = fa.numRegs;
    l->kernels = 1;
    return 0;
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

/* ---- the limit ---- */

static double limit_ms;
static char limit_who[128];
static bool abandoned;

void cl_cuda_set_limit(double ms, const char *who)
{
    limit_ms = ms > 0 ? ms : 0;
    snprintf(limit_who, sizeof limit_who, "%s", who ? who : "the kernel");
}

bool cl_cuda_abandoned(void)
{
    return abandoned;
}

/* Polls e until it completes or the limit passes: a short spin first (most
 * waits are microseconds), then sleeps of 100 µs. */
static int cl_cuda_wait_event(cudaEvent_t e, const char *what, char *err)
{
    cudaError_t rc;
    if (limit_ms <= 0) {
        rc = cudaEventSynchronize(e);
        return rc == cudaSuccess ? 0 : cl_cuda_fail(err, what, rc);
    }
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int spins = 0;; spins++) {
        rc = cudaEventQuery(e);
        if (rc == cudaSuccess)
            return 0;
        if (rc != cudaErrorNotReady)
            return cl_cuda_fail(err, what, rc);
        clock_gettime(CLOCK_MONOTONIC, &now);
        double ms = (now.tv_sec - t0.tv_sec) * 1e3 + (now.tv_nsec - t0.tv_nsec) / 1e6;
        if (ms > limit_ms) {
            abandoned = true;
            snprintf(err, CL_ERR_LEN, "%s ran longer than its launch limit of %g s (CUDALAB_KERNEL_TIMEOUT) "
                     "and was abandoned: an endless loop, or a __syncthreads() that not every thread of a "
                     "block reaches?", limit_who, limit_ms / 1e3);
            return -1;
        }
        if (spins > 1000) {
            struct timespec nap = { 0, 100 * 1000 };
            nanosleep(&nap, NULL);
        }
    }
}

int cl_cuda_synchronize(const char *what, char *err)
{
    cudaEvent_t e;
    cudaError_t rc = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, what, rc);
    rc = cudaEventRecord(e, 0);
    int out = rc == cudaSuccess ? cl_cuda_wait_event(e, what, err) : cl_cuda_fail(err, what, rc);
    if (!abandoned)
        cudaEventDestroy(e);
    if (out == 0 && (rc = cudaGetLastError()) != cudaSuccess)
        return cl_cuda_fail(err, what, rc);
    return out;
}

int cl_cuda_time_stop(const cl_cuda_timing *t, float *ms, const char *what, char *err)
{
    cudaError_t rc;
    if ((rc = cudaEventRecord(t->e1, 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventRecord", rc);
    if (cl_cuda_wait_event(t->e1, what, err) != 0)
        return -1;
    if ((rc = cudaEventElapsedTime(ms, t->e0, t->e1)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventElapsedTime", rc);
    return 0;
}
