/* occupancy.cu — the CUDA backend's %occupancy --kernel: cudaFuncGetAttributes
 * and cudaOccupancyMaxActiveBlocksPerMultiprocessor for our real kernels,
 * behind cl_cuda_occupancy_ops.
 *
 * Each kernel comes from its family's CUDA code (cl_<family>_kernel_ptr,
 * occupancy.h), by its row's id: grid.cu, matmul_tiled.cu, histo_kernels.cu
 * and reduce.cu, from the tables of implementations their runners use.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

#include "common.h"
#include "cudalab/occupancy.h"

/* The function and its dynamic shared memory for a block of `threads`, from its family's CUDA code. */
static const void *kernel_of(int k, int threads, size_t *dyn)
{
    *dyn = 0;
    switch (k) {
#define OCC_CASE_(id, name, threads_, family, variant, instance, what) \
    case id: return cl_##family##_kernel_ptr(variant, instance, threads, dyn);
    CL_OCC_KERNELS(OCC_CASE_)
#undef OCC_CASE_
    }
    return NULL;
}

#define OCC_WHAT_(id, name, threads, family, variant, instance, what) what,
static const char *const occ_what[] = {CL_OCC_KERNELS(OCC_WHAT_)};
#undef OCC_WHAT_

static int cuda_occ_query(int k, int threads, cl_occ_query *out, char *err)
{
    memset(out, 0, sizeof *out);
    size_t dyn;
    const void *f = k >= 0 && k < CL_OCC_NKERNELS ? kernel_of(k, threads, &dyn) : NULL;
    if (!f) {
        snprintf(err, CL_ERR_LEN, "unknown kernel %d", k);
        return -1;
    }
    cudaFuncAttributes at;
    cudaError_t rc;
    int dev, reserved = 0, blocks = 0;
    if ((rc = cudaFuncGetAttributes(&at, f)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaFuncGetAttributes", rc);
    if (threads > at.maxThreadsPerBlock) {
        snprintf(err, CL_ERR_LEN, "this kernel runs at most %d threads per block (its registers or "
                 "__launch_bounds__); %d are too many", at.maxThreadsPerBlock, threads);
        return -1;
    }
    if ((rc = cudaGetDevice(&dev)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaGetDevice", rc);
    if ((rc = cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev)) != cudaSuccess)
        reserved = 0, (void)cudaGetLastError();
    if ((rc = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, threads, dyn)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", rc);
    out->threads = threads;
    out->regs = at.numRegs;
    out->smem_static = (int64_t)at.sharedSizeBytes;
    out->smem_dynamic = (int64_t)dyn;
    out->max_threads_block = at.maxThreadsPerBlock;
    out->api_blocks_sm = blocks;
    out->smem_reserved = reserved;
    snprintf(out->kernel, sizeof out->kernel, "%s", occ_what[k]);
    return 0;
}

extern "C" {
extern const cl_occupancy_ops cl_cuda_occupancy_ops;
}
const cl_occupancy_ops cl_cuda_occupancy_ops = {cuda_occ_query};
