/* bandwidth.cu — the measured device-memory bandwidth that memory-bound
 * magics (%reduce's pct_of_bandwidth) compare against.
 *
 * A device-to-device copy of 1 GiB (less when the device has little free
 * memory) by a grid-stride kernel with 16-byte loads and stores, one wave of
 * resident blocks, timed with events; the best of a few reps. GB/s counts the
 * bytes read and the bytes written (1e9 B/s). Measured once per process.
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>

#include "cudalab/backend.h"
#include "common.h"

#define COPY_BYTES (1ull << 30)
#define COPY_MIN_BYTES (64ull << 20)
#define COPY_REPS 5
#define COPY_BLOCK 256

__global__ static void copy_kernel(const float4 *__restrict__ src, float4 *__restrict__ dst, uint64_t n)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + stride < n; i += 2 * stride) {
        float4 a = __ldg(&src[i]), b = __ldg(&src[i + stride]);
        dst[i] = a;
        dst[i + stride] = b;
    }
    if (i < n)
        dst[i] = __ldg(&src[i]);
}

static int fail(char *err, const char *what, cudaError_t rc)
{
    if (err)
        snprintf(err, CL_ERR_LEN, "copy bandwidth: %s: %s", what, cudaGetErrorString(rc));
    (void)cudaGetLastError();
    return -1;
}

/* The copy size: 1 GiB each way when it fits in a quarter of free memory. */
static int copy_bytes(uint64_t *bytes, char *err)
{
    size_t free_b = 0, total_b = 0;
    cudaError_t rc = cudaMemGetInfo(&free_b, &total_b);
    if (rc != cudaSuccess)
        return fail(err, "cudaMemGetInfo", rc);
    uint64_t b = COPY_BYTES;
    while (b > COPY_MIN_BYTES && 4 * b > free_b)
        b /= 2;
    if (4 * b > free_b) {
        if (err)
            snprintf(err, CL_ERR_LEN, "copy bandwidth: only %.0f MiB free on the device",
                     (double)free_b / (1 << 20));
        return -1;
    }
    *bytes = b;
    return 0;
}

static int measure(uint64_t bytes, double *gbs, char *err)
{
    float4 *src = NULL, *dst = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    int ret = -1, dev = 0, sms = 0, per_sm = 0;
    float best = 0;
    uint64_t n = bytes / sizeof(float4);
    cudaError_t rc;
    if ((rc = cudaMalloc(&src, bytes)) != cudaSuccess || (rc = cudaMalloc(&dst, bytes)) != cudaSuccess) {
        fail(err, "cudaMalloc", rc);
        goto done;
    }
    if ((rc = cudaMemset(src, 1, bytes)) != cudaSuccess || (rc = cudaEventCreate(&e0)) != cudaSuccess ||
        (rc = cudaEventCreate(&e1)) != cudaSuccess || (rc = cudaGetDevice(&dev)) != cudaSuccess ||
        (rc = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess ||
        (rc = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, copy_kernel, COPY_BLOCK, 0)) !=
            cudaSuccess) {
        fail(err, "set-up", rc);
        goto done;
    }
    for (int r = 0; r < COPY_REPS + 1; r++) {       /* the first rep is a warm-up */
        unsigned grid = (unsigned)((per_sm > 0 ? per_sm : 1) * sms);
        float ms = 0;
        if ((rc = cudaEventRecord(e0)) != cudaSuccess)
            break;
        copy_kernel<<<grid, COPY_BLOCK>>>(src, dst, n);
        if ((rc = cudaGetLastError()) != cudaSuccess || (rc = cudaEventRecord(e1)) != cudaSuccess ||
            (rc = cudaEventSynchronize(e1)) != cudaSuccess ||
            (rc = cudaEventElapsedTime(&ms, e0, e1)) != cudaSuccess)
            break;
        if (r > 0 && (best == 0 || ms < best))
            best = ms;
    }
    if (rc != cudaSuccess) {
        fail(err, "copy kernel", rc);
        goto done;
    }
    *gbs = best > 0 ? 2.0 * (double)bytes / (best * 1e-3) / 1e9 : 0;
    ret = best > 0 ? 0 : -1;
    if (ret && err)
        snprintf(err, CL_ERR_LEN, "copy bandwidth: the copy took no measurable time");
done:
    cudaFree(src);
    cudaFree(dst);
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    return ret;
}

extern "C" int cl_cuda_copy_bandwidth(double *gbs, char *err)
{
    static double cached;
    if (cached > 0) {
        *gbs = cached;
        return 0;
    }
    if (!cl_cuda_in_use()) {
        if (err)
            snprintf(err, CL_ERR_LEN, "copy bandwidth: the device is not in use by this kernel");
        return -1;
    }
    uint64_t bytes = 0;
    if (copy_bytes(&bytes, err) || measure(bytes, gbs, err))
        return -1;
    cached = *gbs;
    return 0;
}
