/* occupancy.cu — the CUDA backend's %occupancy --kernel: cudaFuncGetAttributes
 * and cudaOccupancyMaxActiveBlocksPerMultiprocessor for our real kernels,
 * behind cl_cuda_occupancy_ops.
 *
 * The reduction kernels are templates in reduce_device.h, so this file
 * instantiates the float-sum ones itself (the same source and flags give the
 * same registers as reduce_kernels.cu's). The %grid mapping kernel comes from
 * grid.cu through cl_grid_map_kernel_ptr, the matmul and histogram kernels
 * through the accessors in matmul_tiled.cu and histo_kernels.cu.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

#include "common.h"
#include "cudalab/histo.h"
#include "cudalab/matmul.h"
#include "cudalab/occupancy.h"
#include "reduce_device.h"

extern "C" const void *cl_grid_map_kernel_ptr(void);
extern "C" const void *cl_mm_kernel_ptr(int variant, int tile);
extern "C" const void *cl_histo_kernel_ptr(int variant, int block, size_t *dyn);

typedef rop<float, float, CL_REDUCE_SUM> occ_sum;

/* The function and its dynamic shared memory for a block of `threads`. */
static const void *kernel_of(int k, int threads, size_t *dyn)
{
    *dyn = 0;
    switch (k) {
    case CL_OCC_REDUCE_DIVERGENT:
        *dyn = (size_t)threads * sizeof(float);
        return (const void *)reduce_tree_kernel<occ_sum, TREE_DIVERGENT>;
    case CL_OCC_REDUCE_CONVERGENT:
        *dyn = (size_t)threads * sizeof(float);
        return (const void *)reduce_tree_kernel<occ_sum, TREE_CONVERGENT>;
    case CL_OCC_REDUCE_MULTIBLOCK:
        *dyn = (size_t)threads * sizeof(float);
        return (const void *)reduce_multiblock_kernel<occ_sum>;
    case CL_OCC_REDUCE_FAST:
        return (const void *)reduce_fast_kernel<occ_sum>;
    case CL_OCC_REDUCE_FINAL:
        return (const void *)reduce_final_kernel<occ_sum, FINAL_SHUFFLE>;
    case CL_OCC_GRID_MAP:
        return cl_grid_map_kernel_ptr();
    case CL_OCC_MATMUL_NAIVE:
        return cl_mm_kernel_ptr(CL_MATMUL_V_NAIVE, 0);
    case CL_OCC_MATMUL_TILED16:
        return cl_mm_kernel_ptr(CL_MATMUL_V_TILED, 16);
    case CL_OCC_MATMUL_TILED32:
        return cl_mm_kernel_ptr(CL_MATMUL_V_TILED, 32);
    case CL_OCC_HISTO_PRIVATIZED:
        return cl_histo_kernel_ptr(CL_HISTO_V_privatized, threads, dyn);
    case CL_OCC_HISTO_WARP:
        return cl_histo_kernel_ptr(CL_HISTO_V_warp, threads, dyn);
    case CL_OCC_HISTO_FAST:
        return cl_histo_kernel_ptr(CL_HISTO_V_fast, threads, dyn);
    }
    return NULL;
}

#define OCC_WHAT_(id, name, threads, what) what,
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
