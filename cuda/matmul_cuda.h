/* matmul_cuda.h — private to cuda/matmul*.cu: how the runner in
 * matmul.cu sees one variant. Each kernel file defines one mm_gpu_impl per
 * variant, named by its row (mm_gpu_<impl>): prepare() describes the launch for a problem (grid, block, shared
 * memory and registers from cudaFuncGetAttributes, the traffic model) without
 * touching device memory, and launch() enqueues the kernel(s). A variant that
 * needs a buffer of its own (the wgmma variants' staged copies) says how large in scratch().
 */
#ifndef CUDALAB_CUDA_MATMUL_INTERNAL_H
#define CUDALAB_CUDA_MATMUL_INTERNAL_H

#include <cuda_runtime.h>

#include "cudalab/backend.h"
#include "cudalab/matmul.h"
#include "common.h"
#include "student_cuda.h"

struct mm_problem {
    int m, n, k, tile;
    const float *a, *b;             /* device, row-major; for a CL_MATMUL_BT variant b holds Bᵀ (n×k) */
    float *c;
    const cl_student_kernel *student;   /* CL_VARIANT_STUDENT: the kernel, and its loaded handle */
    const void *student_func;
    void *scratch;                  /* device, mm_gpu_impl.scratch(p) bytes; NULL when it needs none */
};

struct mm_gpu_impl {
    /* 0, or -1 with a one-line reason in err (CL_ERR_LEN bytes). */
    int (*prepare)(const mm_problem *p, cl_matmul_result *out, char *err);
    int (*launch)(const mm_problem *p, char *err);
    /* Device memory launch() needs beyond A, B and C (bytes), or NULL for none: the runner
     * allocates it with them, outside the timing, and frees it after. */
    size_t (*scratch)(const mm_problem *p);
};

/* The launch description (cl_cuda_describe), after checking the grid against the device's limits. */
int mm_describe(const void *func, dim3 grid, dim3 block, cl_launch *l, char *err);
/* The grid of rows×cols tiles of C that covers p's m×n. */
static inline dim3 mm_grid(const mm_problem *p, int rows, int cols)
{
    return dim3((unsigned)((p->n + cols - 1) / cols), (unsigned)((p->m + rows - 1) / rows), 1);
}
/* A plain kernel's signature (A, B, C, m, n, k): the tiled ones, one instance per TILE_WIDTH. */
typedef void (*mm_kernel_fn)(const float *, const float *, float *, int, int, int);
/* The error of the launch just made, if any. */
int mm_launched(const char *what, char *err);

/* cudaFuncSetAttribute(func, MaxDynamicSharedMemorySize, bytes), with the
 * carveout at its largest so that the blocks the registers allow also fit in
 * shared memory; 0, or -1 with err set. */
int mm_dynamic_smem(const void *func, int bytes, char *err);

/* The harness's reference for the check of timed reps (common.h, cl_cuda_reps): p's C = A·B (B as
 * B, never Bᵀ) by cublasSgemm in FP32, or by the tiled kernel (TILE 16) where cuBLAS cannot start.
 * 0, or -1 with err set. */
int mm_reference(const mm_problem *p, char *err);

/* The staging passes of the tensor-core variants (matmul_wgmma_stage.cu; enqueued, so timed where
 * a launch() calls them). fmt: what the elements become, FP16 or BF16 (2 bytes), or floats as they
 * are for TF32 and FP32 (4 bytes: mm_stage_elem_bytes). dst gets rows × cols_p elements, zero beyond
 * cols; bt gets Bᵀ, n × k_p elements, zero beyond k (k_p even: its rows are whole 16 bytes, as TMA
 * needs). 0, or -1 with err set. */
int mm_stage_convert(const float *src, void *dst, int rows, int cols, int cols_p, cl_matmul_format fmt, char *err);
int mm_stage_transpose(const float *b, void *bt, int k, int n, int k_p, cl_matmul_format fmt, char *err);
size_t mm_stage_elem_bytes(cl_matmul_format fmt);

/* Each row's implementation, mm_gpu_<impl> (the row's impl, matmul.h), defined in its kernel file;
 * weak, so a row without one (the host loop) is NULL here. */
#define MM_GPU_WEAK_(id, name, impl, ...) CL_VARIANT_WEAK_(mm_gpu_impl, mm_gpu_, impl)
CL_MATMUL_VARIANTS(MM_GPU_WEAK_)
#undef MM_GPU_WEAK_
/* A student's kernel (CL_VARIANT_STUDENT), in matmul.cu. */
extern const mm_gpu_impl mm_gpu_student;

#endif
