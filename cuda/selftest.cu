// selftest.cu — test-only kernels behind %selftest (reachable only with
// CUDALAB_TESTING=1): one that spins for a given time, to show that an
// interrupt stops a long GPU command; one that writes out of bounds, to
// show that a sticky CUDA error costs one worker, not the session; and a
// timed rep whose host stalls before the launch, to show that the timing
// hold keeps the stall out of the figure.
#include <cuda_runtime.h>
#include <stdio.h>
#include <math.h>
#include <time.h>

#include "cudalab/backend.h"
#include "common.h"

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

// One rep timed as the families time theirs, after a warm-up launch (which
// loads the kernel: a lazy load inside the hold waits for it to run out), the
// host asleep for stall_ms between starting the clock and launching a
// one-thread kernel.
static int selftest_stalled_rep(double stall_ms, float *ms, int *lapsed, char *err)
{
    int *out = NULL;
    cl_cuda_timing t;
    int rc = -1;
    if (cl_cuda_alloc((void **)&out, sizeof *out, "output", err) == 0 && cl_cuda_timing_init(&t, err) == 0) {
        spin_kernel<<<1, 1>>>(0, out);
        if (cl_cuda_synchronize("the warm-up launch", err) == 0 && cl_cuda_flush_l2(&t, "L2 flush", err) == 0 &&
            cl_cuda_time_start(&t, err) == 0) {
            struct timespec nap = { (time_t)(stall_ms / 1e3), (long)(fmod(stall_ms, 1e3) * 1e6) };
            nanosleep(&nap, NULL);
            spin_kernel<<<1, 1>>>(0, out);
            cudaError_t launched = cudaGetLastError();
            rc = launched != cudaSuccess ? cl_cuda_fail(err, "launching the kernel", launched)
                                         : cl_cuda_time_stop(&t, ms, "the kernel", err);
        }
        cl_cuda_timing_free(&t);
    }
    cudaFree(out);
    *lapsed = cl_cuda_holds_lapsed();
    return rc;
}

extern "C" const cl_selftest_ops cl_cuda_selftest_ops = { selftest_spin, selftest_fault, selftest_stalled_rep };
