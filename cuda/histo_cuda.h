/* histo_cuda.h — what the %histo CUDA runner (histo.cu) needs from the
 * kernels (histo_kernels.cu) and the cub reference (histo_cub.cu): a plan per
 * variant (grid, block, shared memory, registers) and one call that enqueues
 * a variant's work on a stream. C++ only, never seen outside cuda/.
 */
#ifndef CUDALAB_CUDA_HISTO_INTERNAL_H
#define CUDALAB_CUDA_HISTO_INTERNAL_H

#include <cuda_runtime.h>

#include <stddef.h>
#include <stdint.h>

#include "cudalab/histo.h"

typedef struct histo_plan {
    int variant;
    int mode, width, nbins;
    unsigned grid, block;
    size_t smem_dynamic, smem_static;
    int regs;
    const char *kernel;             /* the kernel's name, for the result's description */
} histo_plan;

/* A row's kernel (histo_kernels.cu): its function and name counting bytes ([0]) and letters
 * ([1]), and its launch of a plan (the output zeroed first). */
struct hg_gpu_impl {
    const void *kernel[2];
    const char *name[2];
    cudaError_t (*launch)(const histo_plan *p, const uint8_t *in, uint64_t n, unsigned *hist, cudaStream_t s);
};

/* Each row's kernel, hg_gpu_<impl> (the row's impl, histo.h); weak, so a row without one (the host
 * loop; cub, the library call in histo.cu) is NULL here. */
#define HG_GPU_WEAK_(id, name, impl, ...) CL_VARIANT_WEAK_(hg_gpu_impl, hg_gpu_, impl)
CL_HISTO_VARIANTS(HG_GPU_WEAK_)
#undef HG_GPU_WEAK_

/* Row variant's kernel, or NULL (no kernel of ours). */
const hg_gpu_impl *hg_gpu_impl_of(int variant);

/* Chooses the launch of a kernel variant (not cpu, not cub): checks the block
 * against the kernel's limits and fills the grid when a->grid is 0 (SMs x
 * resident blocks). 0, or -1 with err set. */
int histo_plan_make(const cl_histo_args *a, int sms, histo_plan *p, char *err);

/* Enqueues the variant's kernel on s (the output must be zeroed first). */
cudaError_t histo_launch(const histo_plan *p, const uint8_t *in, uint64_t n, unsigned *hist,
                         cudaStream_t s);

/* Fills words 32-bit words of input from (seed, dist) on the device. */
cudaError_t histo_generate(uint32_t *out, uint64_t words, uint64_t seed, int dist, cudaStream_t s);

/* cub::DeviceHistogram::HistogramEven over the same bins. With temp NULL,
 * sets *temp_bytes only. */
cudaError_t histo_cub(void *temp, size_t *temp_bytes, const uint8_t *in, uint64_t n, int mode,
                      int width, unsigned *hist, cudaStream_t s);

/* "CCCL 3.0.1": the library the cub variant ran. */
void histo_cub_version(char *buf, size_t len);

#endif
