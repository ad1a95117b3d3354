/* device.cu — the CUDA backend's table and its device queries (%device).
 *
 * This file owns the one exported symbol of libcudalab_cuda.so, cl_cuda_backend(),
 * which the device worker finds with dlsym. The other files in cuda/ add their
 * families' entry points to the table as the ABI grows.
 *
 * CUDA 13 removed cudaDeviceProp.clockRate and .memoryClockRate (among others),
 * so clocks come from cudaDeviceGetAttribute; everything else still comes from
 * cudaGetDeviceProperties. Every failure is reported with cudaGetErrorString.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

#include "cudalab/backend.h"
#include "common.h"

#define CL_EXPORT extern "C" __attribute__((visibility("default")))

static int cuda_device_count(int *count, char *err)
{
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess) {
        /* No prefix: the text is what users look up ("CUDA driver version is
         * insufficient for CUDA runtime version", "no CUDA-capable device is detected"). */
        if (err)
            snprintf(err, CL_ERR_LEN, "%s", cudaGetErrorString(rc));
        (void)cudaGetLastError();
        return -1;
    }
    if (n == 0) {
        if (err)
            snprintf(err, CL_ERR_LEN, "the CUDA driver reports no device");
        return -1;
    }
    *count = n;
    return 0;
}

/* FP32 lanes per SM for a compute capability, as in the CUDA Programming
 * Guide's throughput table; 0 when the architecture is not known here. */
static int cores_per_sm(int major, int minor)
{
    switch (major) {
    case 3:  return 192;                                /* Kepler */
    case 5:  return 128;                                /* Maxwell */
    case 6:  return minor == 0 ? 64 : 128;              /* Pascal: GP100 vs GP10x */
    case 7:  return 64;                                 /* Volta, Turing */
    case 8:  return minor == 0 ? 64 : 128;              /* Ampere GA100 vs GA10x, Ada */
    case 9:  return 128;                                /* Hopper */
    case 10: case 11: case 12: return 128;              /* Blackwell */
    default: return 0;
    }
}

static int device_attr(int dev, cudaDeviceAttr attr, int *out, char *err, const char *what)
{
    cudaError_t rc = cudaDeviceGetAttribute(out, attr, dev);
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, what, rc);
}

/* The device in use (cuda_use_device), -1 before: only its context exists,
 * so only it is asked what needs one (free memory, the code image). */
static int in_use = -1;

bool cl_cuda_in_use(void)
{
    return in_use >= 0;
}

static int cuda_use_device(int dev, char *err)
{
    cudaError_t rc = cudaSetDevice(dev);   /* creates the primary context (CUDA 12+) */
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaSetDevice", rc);
    in_use = dev;
    return 0;
}

/* Free memory of the device in use; 0 (unknown) for any other, whose context
 * admission has not given this worker. */
static int device_free_mem(int dev, uint64_t *free_bytes, char *err)
{
    *free_bytes = 0;
    if (dev != in_use)
        return 0;
    size_t free_b = 0, total_b = 0;
    cudaError_t rc = cudaMemGetInfo(&free_b, &total_b);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaMemGetInfo", rc);
    *free_bytes = free_b;
    return 0;
}

static void copy_props(const cudaDeviceProp *p, cl_device_props *out)
{
    snprintf(out->name, sizeof out->name, "%s", p->name);
    out->cc_major = p->major;
    out->cc_minor = p->minor;
    out->sm_count = p->multiProcessorCount;
    out->cores_per_sm = cores_per_sm(p->major, p->minor);
    out->total_mem = p->totalGlobalMem;
    out->l2_bytes = p->l2CacheSize;
    out->smem_per_block = p->sharedMemPerBlock;
    out->smem_per_block_optin = p->sharedMemPerBlockOptin;
    out->smem_per_sm = p->sharedMemPerMultiprocessor;
    out->regs_per_block = p->regsPerBlock;
    out->regs_per_sm = p->regsPerMultiprocessor;
    out->max_threads_per_block = p->maxThreadsPerBlock;
    out->max_threads_per_sm = p->maxThreadsPerMultiProcessor;
    out->max_blocks_per_sm = p->maxBlocksPerMultiProcessor;
    out->warp_size = p->warpSize;
    for (int i = 0; i < 3; i++) {
        out->max_grid[i] = p->maxGridSize[i];
        out->max_block[i] = p->maxThreadsDim[i];
    }
    out->async_engines = p->asyncEngineCount;
    out->ecc = p->ECCEnabled;
    out->integrated = p->integrated;
}

/* What a device is does not change while the process runs: read once per device (cudaGetDeviceProperties
 * takes about a millisecond, and a cell asks several times), its free memory every time. */
#define KEPT_DEVICES 16

static int read_props(int dev, cl_device_props *out, char *err)
{
    memset(out, 0, sizeof *out);
    out->index = dev;

    cudaDeviceProp p;
    cudaError_t rc = cudaGetDeviceProperties(&p, dev);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaGetDeviceProperties", rc);
    copy_props(&p, out);

    if (device_attr(dev, cudaDevAttrClockRate, &out->clock_khz, err, "SM clock") ||
        device_attr(dev, cudaDevAttrMemoryClockRate, &out->mem_clock_khz, err, "memory clock") ||
        device_attr(dev, cudaDevAttrGlobalMemoryBusWidth, &out->mem_bus_width_bits, err,
                    "memory bus width"))
        return -1;

    rc = cudaDeviceGetPCIBusId(out->pci_bus_id, (int)sizeof out->pci_bus_id, dev);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaDeviceGetPCIBusId", rc);
    return 0;
}

static int cuda_device_props(int dev, cl_device_props *out, char *err)
{
    static cl_device_props kept[KEPT_DEVICES];
    static bool known[KEPT_DEVICES];
    bool keep = dev >= 0 && dev < KEPT_DEVICES;
    if (keep && known[dev])
        *out = kept[dev];
    else if (read_props(dev, out, err) != 0)
        return -1;
    else if (keep) {
        kept[dev] = *out;
        known[dev] = true;
    }
    return device_free_mem(dev, &out->free_mem, err);
}

/* Exists only so cudaFuncGetAttributes can tell which code image the driver
 * picked for this device. */
__global__ static void cl_probe_kernel(int *p)
{
    if (p)
        *p = 0;
}

/* Which code runs on dev. With the Makefile's -gencode lines every sm_XY cubin
 * is built from compute_XY, so:
 *   binaryVersion == cc, ptxVersion == cc   the cubin for this exact device;
 *   binaryVersion != cc                     a cubin for an older minor of the same
 *                                           major (binary compatible);
 *   ptxVersion < binaryVersion == cc        the driver JIT-compiled the PTX.
 * A PTX image for exactly this cc is indistinguishable from its cubin; the
 * Makefile always ships both, so "SASS" is the honest answer there. */
static void describe_arch(int cc, const cudaFuncAttributes *a, char *buf, size_t len)
{
    if (a->binaryVersion != cc)
        snprintf(buf, len, "sm_%d SASS (binary-compatible with sm_%d)", a->binaryVersion, cc);
    else if (a->ptxVersion < a->binaryVersion)
        snprintf(buf, len, "compute_%d PTX (JIT-compiled for sm_%d)", a->ptxVersion, cc);
    else
        snprintf(buf, len, "sm_%d SASS", cc);
}

static int code_arch(int dev, char *buf, size_t len, char *err)
{
    int major = 0, minor = 0;
    if (device_attr(dev, cudaDevAttrComputeCapabilityMajor, &major, err, "compute capability") ||
        device_attr(dev, cudaDevAttrComputeCapabilityMinor, &minor, err, "compute capability"))
        return -1;
    int cc = major * 10 + minor;

    if (dev != in_use) {
        if (in_use < 0)
            snprintf(buf, len, "not known until this kernel uses the device");
        else
            snprintf(buf, len, "not known: this kernel uses device %d", in_use);
        return 0;
    }
    cudaFuncAttributes a;
    memset(&a, 0, sizeof a);
    cudaError_t rc = cudaFuncGetAttributes(&a, cl_probe_kernel);

    /* Neither is fatal for %device: the properties are still worth showing,
     * and the text says what to do. Later launches will fail with the same error. */
    if (rc == cudaErrorNoKernelImageForDevice) {
        snprintf(buf, len, "no code for sm_%d (rebuild with CUDA_ARCHS=%d)", cc, cc);
        (void)cudaGetLastError();
        return 0;
    }
    if (rc == cudaErrorUnsupportedPtxVersion) {
        snprintf(buf, len, "PTX newer than the driver (add CUDA_ARCHS=%d)", cc);
        (void)cudaGetLastError();
        return 0;
    }
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaFuncGetAttributes", rc);
    describe_arch(cc, &a, buf, len);
    return 0;
}

static int cuda_versions(int dev, cl_versions *out, char *err)
{
    memset(out, 0, sizeof *out);
    cudaError_t rc = cudaDriverGetVersion(&out->driver);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaDriverGetVersion", rc);
    rc = cudaRuntimeGetVersion(&out->runtime);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaRuntimeGetVersion", rc);
    return code_arch(dev, out->arch, sizeof out->arch, err);
}

/* Defined by the family files; weak, so a family not built is NULL rather than a link error. */
extern "C" {
CL_FAMILIES(CL_BACKEND_WEAK_CUDA_)
int cl_cuda_copy_bandwidth(double *gbs, char *err) __attribute__((weak));
}

/* A sticky error stays in the context: every later call returns it. */
static int cuda_healthy(char *err)
{
    if (cl_cuda_abandoned()) {      /* a kernel still runs: waiting for it would never end */
        snprintf(err, CL_ERR_LEN, "a kernel past its launch limit is still running");
        return -1;
    }
    cudaError_t rc = cudaDeviceSynchronize();
    if (rc == cudaSuccess)
        rc = cudaGetLastError();
    if (rc == cudaSuccess)
        return 0;
    snprintf(err, CL_ERR_LEN, "%s", cudaGetErrorString(rc));
    return -1;
}

static const cl_backend cuda_backend = {
    "cuda",
    CL_BACKEND_ABI,
    cuda_device_count,
    cuda_device_props,
    cuda_versions,
    cl_cuda_copy_bandwidth,
    cuda_healthy,
    cuda_use_device,
    cl_cuda_set_rep_hook,
    cl_cuda_conditions,
    cl_cuda_set_counters,
    cl_cuda_counters,
    CL_FAMILIES(CL_BACKEND_OPS_CUDA_)
    cl_cuda_set_check_reps,
};

CL_EXPORT const cl_backend *cl_cuda_backend(void)
{
    return &cuda_backend;
}
