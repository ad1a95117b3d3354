/* occupancy.h — the occupancy family (%occupancy): the arithmetic model of
 * how many blocks of a kernel are resident on one SM (kernel/magics/
 * occupancy_model.c, exact on every backend) and the query of our real
 * kernels' attributes through the CUDA occupancy API (cuda/occupancy.cu).
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

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cl_occ_device {
    int64_t sms;
    int64_t max_threads_sm, max_blocks_sm, max_threads_block;
    int64_t regs_sm, regs_block, max_regs_thread;
    int64_t smem_sm, smem_block, smem_reserved;     /* bytes */
    int64_t warp;                 /* 32 */
    int64_t reg_unit;             /* 256 */
    int64_t reg_partitions;       /* 4: the register file is split between the SM's 4 schedulers */
    int64_t smem_unit;            /* 128: shared memory is allocated per block in these (sm_8x/9x) */
    bool reg_per_warp;            /* true: per-warp allocation in reg_unit; false: R * threads */
} cl_occ_device;

typedef struct cl_occ_kernel {
    int64_t threads;              /* per block */
    int64_t regs;                 /* per thread, 0 = not counted */
    int64_t smem;                 /* bytes per block (static + dynamic) */
} cl_occ_kernel;

enum cl_occ_limiter { CL_OCC_THREADS, CL_OCC_BLOCKS, CL_OCC_REGS, CL_OCC_SMEM };

typedef struct cl_occ_result {
    int64_t warps_per_block, threads_in_last_warp;
    double last_warp_idle_pct;    /* share of the last warp's 32 lanes without a thread */
    int64_t regs_per_block;       /* as allocated by the model */
    int64_t by_threads, by_blocks, by_regs, by_smem;   /* blocks per SM each limit allows; INT64_MAX = no limit */
    int64_t blocks_sm;            /* the minimum: resident blocks per SM */
    enum cl_occ_limiter limiter;  /* the first limit (in enum order) equal to the minimum */
    int64_t warps_sm, threads_sm; /* resident */
    double occupancy_pct;         /* warps_sm / (max_threads_sm / 32) */
} cl_occ_result;

/* How a grid of `blocks` spreads over the SMs, round-robin as the block
 * scheduler does when every SM has room: waves of sms * blocks_sm blocks, and
 * in the last wave `sms_more` SMs run `more` blocks while the rest run `less`. */
typedef struct cl_occ_spread {
    int64_t blocks, waves, full_waves;
    int64_t last_wave_blocks, more, sms_more, less, sms_less;
} cl_occ_spread;

/* Checks that one block can run at all (threads per block, registers per
 * thread and per block, shared memory per block); err names the limit. Then
 * fills r. 0, or -1 with err. */
int cl_occ_compute(const cl_occ_device *d, const cl_occ_kernel *k, cl_occ_result *r, char *err,
                   size_t errlen);
void cl_occ_spread_of(const cl_occ_device *d, const cl_occ_result *r, int64_t blocks, cl_occ_spread *s);
const char *cl_occ_limiter_name(enum cl_occ_limiter l);

/* The device the model uses when the backend cannot tell (the CPU backend):
 * an sm_90 (H100) SM. */
void cl_occ_device_default(cl_occ_device *d);

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

/* Our kernels that --kernel can name (X(id, name, threads, what): threads is
 * the block size our magics launch it with by default), listed here so the
 * kernel process (which never loads the CUDA library) can validate and
 * complete them. The reduction kernels are the float-sum instances. */
#define CL_OCC_KERNELS(X)                                                                      \
    X(CL_OCC_REDUCE_DIVERGENT, "reduce.divergent", 256, "reduce_tree_kernel<sum float, divergent>, B floats of shared memory") \
    X(CL_OCC_REDUCE_CONVERGENT, "reduce.convergent", 256, "reduce_tree_kernel<sum float, convergent>, B floats of shared memory") \
    X(CL_OCC_REDUCE_MULTIBLOCK, "reduce.multiblock", 256, "reduce_multiblock_kernel<sum float>, B floats of shared memory") \
    X(CL_OCC_REDUCE_FAST, "reduce.fast", 256, "reduce_fast_kernel<sum float>, 32 floats of static shared memory") \
    X(CL_OCC_REDUCE_FINAL, "reduce.final", 256, "reduce_final_kernel<sum float>, the second pass over the partials") \
    X(CL_OCC_GRID_MAP, "grid.map", 256, "the %grid --run mapping kernel (3D index, bounds check, atomic count)") \
    X(CL_OCC_MATMUL_NAIVE, "matmul.naive", 256, "mm_naive_kernel: one thread per element of C, no shared memory") \
    X(CL_OCC_MATMUL_TILED16, "matmul.tiled16", 256, "mm_tiled_kernel<16>: two 16x16 float tiles of static shared memory") \
    X(CL_OCC_MATMUL_TILED32, "matmul.tiled32", 1024, "mm_tiled_kernel<32>: two 32x32 float tiles of static shared memory") \
    X(CL_OCC_HISTO_PRIVATIZED, "histo.privatized", 256, "histo_privatized: one 256-bin histogram per block in shared memory") \
    X(CL_OCC_HISTO_WARP, "histo.warp", 256, "histo_warp<bytes>: one 256-bin histogram per warp in shared memory") \
    X(CL_OCC_HISTO_FAST, "histo.fast", 256, "histo_fast<bytes>: lane-private sub-histograms, 32 x 256 bins of shared memory")

#define CL_OCC_ENUM_(id, name, threads, what) id,
enum cl_occ_kernel_id { CL_OCC_KERNELS(CL_OCC_ENUM_) CL_OCC_NKERNELS };
#undef CL_OCC_ENUM_

#ifdef __cplusplus
}
#endif
#endif
