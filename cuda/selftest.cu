// selftest.cu — test-only kernels behind %selftest (reachable only with
// CUDALAB_TESTING=1): one that spins for a given time, to show that an
// interrupt stops a long GPU command, and one that writes out of bounds, to
// show that a sticky CUDA error costs one worker, not the session.
#include <cuda_runtime.h>
#include <stdio.h>

#include "cudalab/backend.h"

static int fail(char *err, const char *what, cudaError_t rc)
{
    snprintf(err, CL_ERR_LEN, "%s: %s", what, cudaGetErrorString(rc));
    return -1;
}

__global__ void spin_kernel(long long cycles, int *out)
{
    long long start = clock64();
    while (clock64() - start < cycles)
        ;
    *out = 1;
}

__global__ void fault_kernel(int *p)
{
    // far past any allocation: an illegal address, reported at the next sync
    p[(size_t)1 << 40] = 42;
}

static int selftest_spin(double ms, char *err)
{
    int dev = 0, khz = 0;
    cudaError_t rc = cudaGetDevice(&dev);
    if (rc == cudaSuccess)
        rc = cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev);
    if (rc != cudaSuccess)
        return fail(err, "clock rate", rc);
    int *out = NULL;
    if ((rc = cudaMalloc(&out, sizeof *out)) != cudaSuccess)
        return fail(err, "cudaMalloc", rc);
    spin_kernel<<<1, 1>>>((long long)(ms * khz), out);
    rc = cudaGetLastError();
    if (rc == cudaSuccess)
        rc = cudaDeviceSynchronize();
    cudaFree(out);
    return rc == cudaSuccess ? 0 : fail(err, "spin kernel", rc);
}

static int selftest_fault(char *err)
{
    int *p = NULL;
    cudaError_t rc = cudaMalloc(&p, 4096);
    if (rc != cudaSuccess)
        return fail(err, "cudaMalloc", rc);
    fault_kernel<<<1, 1>>>(p);
    rc = cudaGetLastError();
    if (rc == cudaSuccess)
        rc = cudaDeviceSynchronize();
    cudaFree(p);
    return rc == cudaSuccess ? 0 : fail(err, "fault kernel", rc);
}

extern "C" const cl_selftest_ops cl_cuda_selftest_ops = { selftest_spin, selftest_fault };
