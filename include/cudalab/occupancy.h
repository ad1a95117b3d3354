/* occupancy.h — the occupancy family (%occupancy) across the backend ABI:
 * the query of our real kernels' attributes through the CUDA occupancy API
 * (cuda/occupancy.cu), and the list of kernels --kernel can name. The
 * arithmetic model beside it is the kernel's (kernel/magic/occupancy_model.h):
 *
 * The model: a block is resident when the SM has room for its threads (in
 * whole warps), a block slot, its registers and its shared memory; the
 * smallest of the four limits wins and is named. Registers are allocated per
 * warp in units of reg_unit (256 on sm_7x-sm_9x): a warp of a kernel using R
 * registers per thread takes ceil(32*R / 256)*256 of them, and the register
 * file is split between the SM's 4 sub-partitions (schedulers), so the SM
 * holds 4 * floor((regs_sm / 4) / regs_per_warp) warps' registers (as the
 * CUDA occupancy calculator counts); with reg_per_warp = false the lecture's
 * simple product R * threads per block out of regs_sm is used instead.
 * Shared memory is allocated per block, rounded up to smem_unit (128 bytes on
 * sm_8x/sm_9x), with smem_reserved bytes more (1 KiB on sm_8x/sm_9x, which
 * the driver keeps per block; 0 for a hypothetical device unless given).
 */
#ifndef CUDALAB_OCCUPANCY_H
#define CUDALAB_OCCUPANCY_H

#include <stdbool.h>
#include <stdint.h>

#include "cudalab/backend.h"
#include "cudalab/grid.h"
#include "cudalab/histo.h"
#include "cudalab/matmul.h"
#include "cudalab/reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One of our kernels, as cudaFuncGetAttributes and the occupancy API see it. */
typedef struct cl_occ_query {
    int threads;                  /* block size asked for */
    int regs;                     /* per thread */
    int64_t smem_static, smem_dynamic;
    int max_threads_block;        /* of this kernel (launch bounds, registers) */
    int api_blocks_sm;            /* cudaOccupancyMaxActiveBlocksPerMultiprocessor */
    int64_t smem_reserved;        /* cudaDevAttrReservedSharedMemoryPerBlock */
    char kernel[96];              /* the function, in words */
} cl_occ_query;

typedef struct cl_occupancy_ops {
    /* Kernel k (enum cl_occ_kernel_id) in blocks of `threads`: 0, or -1 with err
     * ("... has at most N threads per block", CUDA errors, "needs the CUDA backend"). */
    int (*query)(int k, int threads, cl_occ_query *out, char *err);
} cl_occupancy_ops;

/* Our kernels that --kernel can name, listed here so the kernel process (which
 * never loads the CUDA library) can validate and complete them.
 * X(id, name, threads, family, variant, instance, what): threads is the block
 * size our magics launch it with by default; the kernel is the one of the
 * family's row `variant` (its id), which the family's CUDA code hands over
 * (cl_<family>_kernel_ptr, below): instance picks among a row's kernels
 * (matmul: TILE_WIDTH; reduce: 1 for the second pass over the partials). The
 * reduction kernels are the float-sum instances, histo's those counting bytes. */
#define CL_OCC_KERNELS(X)                                                                      \
    X(CL_OCC_REDUCE_DIVERGENT, "reduce.divergent", 256, reduce, CL_REDUCE_DIVERGENT, 0,       \
      "reduce_tree_kernel<sum float, divergent>, B floats of shared memory")                  \
    X(CL_OCC_REDUCE_CONVERGENT, "reduce.convergent", 256, reduce, CL_REDUCE_CONVERGENT, 0,    \
      "reduce_tree_kernel<sum float, convergent>, B floats of shared memory")                 \
    X(CL_OCC_REDUCE_MULTIBLOCK, "reduce.multiblock", 256, reduce, CL_REDUCE_MULTIBLOCK, 0,    \
      "reduce_multiblock_kernel<sum float>, B floats of shared memory")                       \
    X(CL_OCC_REDUCE_FAST, "reduce.fast", 256, reduce, CL_REDUCE_FAST, 0,                      \
      "reduce_fast_kernel<sum float>, 32 floats of static shared memory")                     \
    X(CL_OCC_REDUCE_FINAL, "reduce.final", 256, reduce, CL_REDUCE_FAST, 1,                    \
      "reduce_final_kernel<sum float>, the second pass over the partials")                    \
    X(CL_OCC_GRID_MAP, "grid.map", 256, grid, CL_GRID_MAP, 0,                                 \
      "the %grid --run mapping kernel (3D index, bounds check, atomic count)")                \
    X(CL_OCC_MATMUL_NAIVE, "matmul.naive", 256, matmul, CL_MATMUL_V_NAIVE, 0,                 \
      "mm_naive_kernel: one thread per element of C, no shared memory")                       \
    X(CL_OCC_MATMUL_TILED16, "matmul.tiled16", 256, matmul, CL_MATMUL_V_TILED, 16,            \
      "mm_tiled_kernel<16>: two 16x16 float tiles of static shared memory")                   \
    X(CL_OCC_MATMUL_TILED32, "matmul.tiled32", 1024, matmul, CL_MATMUL_V_TILED, 32,           \
      "mm_tiled_kernel<32>: two 32x32 float tiles of static shared memory")                   \
    X(CL_OCC_HISTO_PRIVATIZED, "histo.privatized", 256, histo, CL_HISTO_V_privatized, 0,      \
      "histo_privatized: one 256-bin histogram per block in shared memory")                   \
    X(CL_OCC_HISTO_WARP, "histo.warp", 256, histo, CL_HISTO_V_warp, 0,                        \
      "histo_warp<bytes>: one 256-bin histogram per warp in shared memory")                   \
    X(CL_OCC_HISTO_FAST, "histo.fast", 256, histo, CL_HISTO_V_fast, 0,                        \
      "histo_fast<bytes>: lane-private sub-histograms, 32 x 256 bins of shared memory")

#define CL_OCC_ENUM_(id, ...) id,
enum cl_occ_kernel_id { CL_OCC_KERNELS(CL_OCC_ENUM_) CL_OCC_NKERNELS };
#undef CL_OCC_ENUM_

/* In cuda/, beside each family's kernels: the function of row `variant`'s kernel (instance as in
 * CL_OCC_KERNELS) and its dynamic shared memory for a block of `threads`; NULL for none. */
#define CL_OCC_KERNEL_PTR_(f) \
    const void *cl_##f##_kernel_ptr(int variant, int instance, int threads, size_t *dyn);
CL_OCC_KERNEL_PTR_(reduce) CL_OCC_KERNEL_PTR_(grid) CL_OCC_KERNEL_PTR_(matmul) CL_OCC_KERNEL_PTR_(histo)
#undef CL_OCC_KERNEL_PTR_

#ifdef __cplusplus
}
#endif
#endif
