/* reduce_kernels.h — what cuda/reduce.cu (the runner) needs from a %reduce
 * variant: one rd_gpu_impl per row of CL_REDUCE_VARIANTS, named by the row's
 * impl (rd_gpu_<impl>): our kernels' in cuda/reduce_kernels.cu, CUB's in
 * cuda/reduce.cu.
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
    unsigned block, grid;           /* first pass; grid 0 for a library's call */
    size_t smem;                    /* dynamic shared memory of the first pass */
    size_t smem_static, final_smem_static;
    unsigned final_block;           /* second pass: 0 when the first pass has one block */
    size_t final_smem;
    int regs, final_regs;           /* registers per thread (cudaFuncGetAttributes) */
    const char *kernel, *final_kernel;
} reduce_plan;

/* The device memory of one run: in has a->n elements, part room for the plan's grid
 * accumulators, out one accumulator, temp the CUB temp storage (*temp_bytes). */
typedef struct reduce_bufs {
    const void *in;
    void *part, *out, *temp;
    size_t *temp_bytes;
} reduce_bufs;

struct rd_gpu_impl {
    /* Fills p for variant v (its id) and args a on the current device; sms and max_grid
     * come from the device's attributes. 0, or -1 with a reason in err. */
    int (*plan)(int v, const cl_reduce_args *a, int sms, int max_grid, reduce_plan *p, char *err);
    /* Enqueues the variant's reduction of b->in on stream s. 0, or -1 with err set. */
    int (*launch)(const reduce_plan *p, const cl_reduce_args *a, const reduce_bufs *b, cudaStream_t s,
                  char *err);
    /* out->impl and the launches (out->launch, out->final), after a run. */
    void (*describe)(const reduce_plan *p, const cl_reduce_args *a, cl_reduce_result *out);
    /* For %occupancy --kernel: the float-sum instance of the first pass (instance 0) or of the
     * second (1), or NULL (a library's call). */
    const void *(*kernel)(int instance);
};

/* Each row's implementation, rd_gpu_<impl> (the row's impl, reduce.h); weak, so a row without
 * one (the host loop) is NULL here. */
#define RD_GPU_WEAK_(id, name, impl, ...) CL_VARIANT_WEAK_(rd_gpu_impl, rd_gpu_, impl)
CL_REDUCE_VARIANTS(RD_GPU_WEAK_)
#undef RD_GPU_WEAK_

/* Bytes of one accumulator: 8 for an int sum (int64), 4 otherwise. */
size_t reduce_acc_bytes(cl_reduce_op op, cl_reduce_dtype dtype);

/* Fills in[0..n) from the seed with cl_uniform / cl_uniform_int, on the device. */
cudaError_t reduce_fill(void *in, uint64_t n, cl_reduce_dtype dtype, uint64_t seed,
                        cudaStream_t s);

#endif
