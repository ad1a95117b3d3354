/* matmul_cublas.cu — the reference: cublasSgemm, in plain FP32
 * (CUBLAS_DEFAULT_MATH: no TF32) and on TF32 tensor cores
 * (CUBLAS_TF32_TENSOR_OP_MATH), which %matmul labels and checks more loosely;
 * cublasGemmEx on FP16 and BF16 inputs with FP32 accumulation, the references
 * of the half-precision wgmma rungs (A and B converted inside the timed launch,
 * as those rungs convert theirs: matmul_wgmma_stage.cu); and in FP32 the
 * harness's reference for the check of timed reps (mm_reference).
 *
 * cuBLAS is column-major. A row-major m×n matrix is the same memory as a
 * column-major n×m one, its transpose, so row-major C = A·B is column-major
 * Cᵀ = Bᵀ·Aᵀ: one Sgemm with the operands swapped and no transposition.
 *
 * The handle is created once per process, on the first cuBLAS run and outside
 * its timing, and kept: creating it costs milliseconds and some memory.
 */
#include <cublas_v2.h>
#include <stdio.h>

#include "matmul_cuda.h"

static cublasHandle_t mm_handle;

static int cublas_fail(char *err, const char *what, cublasStatus_t st)
{
    snprintf(err, CL_ERR_LEN, "%s: %s", what, cublasGetStatusString(st));
    return -1;
}

static int cublas_prepare(const mm_problem *p, cl_matmul_result *out, char *err, bool tf32)
{
    cublasStatus_t st;
    if (!mm_handle && (st = cublasCreate(&mm_handle)) != CUBLAS_STATUS_SUCCESS) {
        mm_handle = NULL;
        return cublas_fail(err, "cublasCreate", st);
    }
    st = cublasSetMathMode(mm_handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
    if (st != CUBLAS_STATUS_SUCCESS)
        return cublas_fail(err, "cublasSetMathMode", st);
    if ((st = cublasSetStream(mm_handle, 0)) != CUBLAS_STATUS_SUCCESS)
        return cublas_fail(err, "cublasSetStream", st);
    /* cuBLAS picks its kernels and launches: nothing to describe but the call */
    out->launch.kernels = 1;
    out->global_loads = 0;
    snprintf(out->impl, sizeof out->impl, "cublasSgemm, %s", tf32 ? "CUBLAS_TF32_TENSOR_OP_MATH (TF32 tensor cores)"
                                                                  : "CUBLAS_DEFAULT_MATH (FP32, no TF32)");
    return 0;
}

/* show-source: matmul cublas,cublas-tf32 */
static int cublas_launch(const mm_problem *p, char *err)
{
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st = cublasSgemm(mm_handle, CUBLAS_OP_N, CUBLAS_OP_N, p->n, p->m, p->k, &one,
                                    p->b, p->n, p->a, p->k, &zero, p->c, p->n);
    if (st != CUBLAS_STATUS_SUCCESS)
        return cublas_fail(err, "cublasSgemm", st);
    return mm_launched("cublasSgemm", err);
}
/* show-source: end */

/* ---- FP16 and BF16: A and B converted (timed), then GemmEx with FP32 accumulation ---- */

/* Where B's converted copy starts in the scratch buffer: after A's, 256-byte aligned. */
static size_t half_b_offset(const mm_problem *p)
{
    return ((size_t)p->m * p->k * 2 + 255) & ~(size_t)255;
}

static size_t half_scratch(const mm_problem *p)
{
    return half_b_offset(p) + (size_t)p->k * p->n * 2;
}

static int half_prepare(const mm_problem *p, cl_matmul_result *out, char *err, cl_matmul_format fmt)
{
    if (cublas_prepare(p, out, err, false))
        return -1;
    out->launch.kernels = 3;        /* A's and B's conversions, then cuBLAS's (at least one) */
    snprintf(out->impl, sizeof out->impl, "A and B to %s, then cublasGemmEx (%s inputs, CUBLAS_COMPUTE_32F)",
             fmt == CL_MATMUL_FMT_FP16 ? "FP16" : "BF16", fmt == CL_MATMUL_FMT_FP16 ? "CUDA_R_16F" : "CUDA_R_16BF");
    return 0;
}

/* show-source: matmul cublas-fp16,cublas-bf16 */
static int half_launch(const mm_problem *p, cl_matmul_format fmt, char *err)
{
    void *ah = p->scratch, *bh = (char *)p->scratch + half_b_offset(p);
    if (mm_stage_convert(p->a, ah, p->m, p->k, p->k, fmt, err) || mm_stage_convert(p->b, bh, p->k, p->n, p->n, fmt, err))
        return -1;
    const cudaDataType type = fmt == CL_MATMUL_FMT_FP16 ? CUDA_R_16F : CUDA_R_16BF;
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st = cublasGemmEx(mm_handle, CUBLAS_OP_N, CUBLAS_OP_N, p->n, p->m, p->k, &one, bh, type, p->n,
                                     ah, type, p->k, &zero, p->c, CUDA_R_32F, p->n, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS)
        return cublas_fail(err, "cublasGemmEx", st);
    return mm_launched("cublasGemmEx", err);
}
/* show-source: end */

static int fp16_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    return half_prepare(p, out, err, CL_MATMUL_FMT_FP16);
}

static int bf16_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    return half_prepare(p, out, err, CL_MATMUL_FMT_BF16);
}

static int fp16_launch(const mm_problem *p, char *err)
{
    return half_launch(p, CL_MATMUL_FMT_FP16, err);
}

static int bf16_launch(const mm_problem *p, char *err)
{
    return half_launch(p, CL_MATMUL_FMT_BF16, err);
}

static int fp32_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    return cublas_prepare(p, out, err, false);
}

static int tf32_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    return cublas_prepare(p, out, err, true);
}

/* The reference (matmul_cuda.h): FP32 math on the shared handle, whose mode is the variant's
 * (set by its prepare, before its launches) and is given back after. */
int mm_reference(const mm_problem *p, char *err)
{
    if (!mm_handle && cublasCreate(&mm_handle) != CUBLAS_STATUS_SUCCESS) {
        mm_handle = NULL;
        mm_problem tiled = *p;
        tiled.tile = 16;
        return mm_gpu_tiled.launch(&tiled, err);
    }
    cublasMath_t mode = CUBLAS_DEFAULT_MATH;
    cublasStatus_t st = cublasGetMathMode(mm_handle, &mode);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasSetMathMode(mm_handle, CUBLAS_DEFAULT_MATH);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasSetStream(mm_handle, 0);
    if (st != CUBLAS_STATUS_SUCCESS)
        return cublas_fail(err, "the reference's cuBLAS math mode", st);
    int rc = cublas_launch(p, err);
    if ((st = cublasSetMathMode(mm_handle, mode)) != CUBLAS_STATUS_SUCCESS && rc == 0)
        rc = cublas_fail(err, "cublasSetMathMode", st);
    return rc;
}

const mm_gpu_impl mm_gpu_cublas = { fp32_prepare, cublas_launch };
const mm_gpu_impl mm_gpu_cublas_tf32 = { tf32_prepare, cublas_launch };
const mm_gpu_impl mm_gpu_cublas_fp16 = { fp16_prepare, fp16_launch, half_scratch };
const mm_gpu_impl mm_gpu_cublas_bf16 = { bf16_prepare, bf16_launch, half_scratch };
