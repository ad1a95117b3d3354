/* cpu_model.h — the one device the CPU backend presents, written once.
 *
 * Without a GPU every magic runs a CPU analogue of CUDA's execution model,
 * not of the host: threads come in warps of 32, a block holds up to 1024 of
 * them, shared memory and registers are an SM's. So the device the CPU
 * backend describes is that model: one SM per logical CPU (the host threads
 * that take blocks round-robin, as SMs do), the host's clock and memory, and
 * every per-SM and per-block limit of an sm_90 (H100) SM, the GPU the
 * lectures' numbers come from.
 *
 * Read by: the CPU backend's device_props (cpu/device_cpu.c), hence %device,
 * %grid's limits and %occupancy's SM on the CPU backend; the occupancy model's
 * default device (kernel/magic/occupancy_model.c); and the CPU runner's
 * limits on a student's launch (cudalab/simt.h). Change a number here and
 * all of them change together. Plain macros: the runner's C, the kernel's C
 * and nvcc all include this header.
 */
#ifndef CUDALAB_CPU_MODEL_H
#define CUDALAB_CPU_MODEL_H

/* Which GPU the per-SM numbers are, in words (views and notes say it). */
#define CL_CPU_MODEL_SM_NAME "sm_90 (H100) SM"
#define CL_CPU_MODEL_SM "an " CL_CPU_MODEL_SM_NAME
/* Its SM count: only where no backend can say how many SMs there are (the
 * occupancy model's default device); the CPU backend's SMs are its logical CPUs. */
#define CL_CPU_MODEL_REFERENCE_SMS 132

#define CL_CPU_MODEL_WARP 32
#define CL_CPU_MODEL_MAX_THREADS_PER_BLOCK 1024
#define CL_CPU_MODEL_MAX_BLOCK_X 1024
#define CL_CPU_MODEL_MAX_BLOCK_Y 1024
#define CL_CPU_MODEL_MAX_BLOCK_Z 64
#define CL_CPU_MODEL_MAX_GRID_X 2147483647
#define CL_CPU_MODEL_MAX_GRID_Y 65535
#define CL_CPU_MODEL_MAX_GRID_Z 65535

#define CL_CPU_MODEL_MAX_THREADS_PER_SM 2048
#define CL_CPU_MODEL_MAX_BLOCKS_PER_SM 32
#define CL_CPU_MODEL_REGS_PER_SM 65536
#define CL_CPU_MODEL_REGS_PER_BLOCK 65536
#define CL_CPU_MODEL_MAX_REGS_PER_THREAD 255

/* Shared memory, bytes: a block's static __shared__ (and its default limit),
 * a block's opt-in limit (static + dynamic), an SM's, and what the driver
 * reserves per resident block. */
#define CL_CPU_MODEL_SMEM_PER_BLOCK 49152u
#define CL_CPU_MODEL_SMEM_PER_BLOCK_OPTIN (227u << 10)
#define CL_CPU_MODEL_SMEM_PER_SM (228u << 10)
#define CL_CPU_MODEL_SMEM_RESERVED 1024u

/* Allocation granularity of sm_7x-9x, for the occupancy model: registers per
 * warp in units of 256, split between 4 schedulers; shared memory in 128 B. */
#define CL_CPU_MODEL_REG_UNIT 256
#define CL_CPU_MODEL_REG_PARTITIONS 4
#define CL_CPU_MODEL_SMEM_UNIT 128

#endif
