/* reduce_kernels.h — what cuda/reduce.cu (the runner) needs from
 * cuda/reduce_kernels.cu (the kernels): a plan per variant and one launch.
 *
 * A plan fixes the launch configuration of both passes before anything is
 * allocated, so the runner can size the partials buffer and report the launch
 * before timing. Every reduction that needs more than one block writes one
 * partial per block and a second kernel, one block of CL_REDUCE_FINAL_BLOCK
 * threads, reduces the partials on the device: no host loop anywhere.
 */
#ifndef CUDALAB_CUDA_REDUCE_KERNELS_H
#define CUDALAB_CUDA_REDUCE_KERNELS_H

#include <cuda_runtime.h>

#include "cudalab/reduce.h"

typedef struct reduce_plan {
    int variant;
    unsigned block, grid;           /* first pass */
    size_t smem;                    /* dynamic shared memory of the first pass */
    size_t smem_static, final_smem_static;
    unsigned final_block;           /* second pass: 0 when the first pass has one block */
    size_t final_smem;
    int regs, final_regs;           /* registers per thread (cudaFuncGetAttributes) */
    const char *kernel, *final_kernel;
} reduce_plan;

/* Bytes of one accumulator: 8 for an int sum (int64), 4 otherwise. */
size_t reduce_acc_bytes(cl_reduce_op op, cl_reduce_dtype dtype);

/* Fills p for variant v (not cpu, not cub) on the current device. sms and
 * max_grid come from the device properties. 0, or -1 with a reason in err. */
int reduce_plan_make(int v, const cl_reduce_args *a, int sms, int max_grid, reduce_plan *p,
                     char *err);

/* Launches the plan's kernels on stream s: in has a->n elements, partials
 * room for p->grid accumulators, out one accumulator. */
cudaError_t reduce_launch(const reduce_plan *p, const cl_reduce_args *a, const void *in,
                          void *partials, void *out, cudaStream_t s);

/* Fills in[0..n) from the seed with cl_uniform / cl_uniform_int, on the device. */
cudaError_t reduce_fill(void *in, uint64_t n, cl_reduce_dtype dtype, uint64_t seed,
                        cudaStream_t s);

#endif
