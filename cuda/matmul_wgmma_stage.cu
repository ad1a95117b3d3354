/* matmul_wgmma_stage.cu — the passes that put A and B in the form a
 * tensor-core product reads, before it: FP32 to FP16 or BF16 (or left as
 * floats for TF32), rows padded with zeros to a multiple of 16 bytes (TMA's
 * alignment), and for FP16 and BF16 B transposed into Bᵀ (their wgmma reads
 * both operands K-major: matmul_wgmma.cu says why; TF32 reads B as it is).
 * They run inside a variant's launch, so they are
 * timed, and both sides of a comparison pay them: wgmma-fp16 converts A and
 * makes a converted Bᵀ, cublas-fp16 converts A and B (the same bytes read and
 * written), and the ratio of the two is a ratio of whole half-precision
 * products from FP32 inputs.
 *
 * Built for every architecture in CUDA_ARCHS (no sm_90a instruction here).
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <limits.h>
#include <stdio.h>

#include "matmul_cuda.h"

/* x as an element of the staged matrix: TF32 operands stay floats (the tensor cores read their
 * top 19 bits), FP16 and BF16 are rounded to nearest even. */
template <class E>
__device__ __forceinline__ E mm_stage_elem(float x);
template <>
__device__ __forceinline__ float mm_stage_elem<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half mm_stage_elem<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 mm_stage_elem<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

/* Four staged elements, stored at once (8 bytes for 16-bit ones, 16 for floats). */
template <class E>
struct alignas(4 * sizeof(E)) mm_stage_quad {
    E v[4];
};

/* dst (rows × cols_p of E, zero beyond cols) from src (rows × cols floats). Where the rows need
 * no padding the matrix is one run of elements, converted 4 at a time (src and dst are the
 * starts of allocations or 256-byte aligned inside one, so float4 and quad accesses are aligned). */
template <class E>
__global__ void mm_stage_convert_kernel(const float *__restrict__ src, E *__restrict__ dst, int rows, int cols,
                                        int cols_p)
{
    if (cols == cols_p) {
        const size_t count = (size_t)rows * cols, quads = count / 4, stride = (size_t)gridDim.x * blockDim.x;
        for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < quads; i += stride) {
            const float4 v = reinterpret_cast<const float4 *>(src)[i];
            mm_stage_quad<E> q = {{mm_stage_elem<E>(v.x), mm_stage_elem<E>(v.y), mm_stage_elem<E>(v.z),
                                   mm_stage_elem<E>(v.w)}};
            reinterpret_cast<mm_stage_quad<E> *>(dst)[i] = q;
        }
        if (blockIdx.x == 0 && threadIdx.x < count % 4)
            dst[quads * 4 + threadIdx.x] = mm_stage_elem<E>(src[quads * 4 + threadIdx.x]);
        return;
    }
    for (int row = blockIdx.y; row < rows; row += gridDim.y)
        for (int col = blockIdx.x * blockDim.x + threadIdx.x; col < cols_p; col += gridDim.x * blockDim.x)
            dst[(size_t)row * cols_p + col] = col < cols ? mm_stage_elem<E>(src[(size_t)row * cols + col])
                                                         : mm_stage_elem<E>(0.f);
}

/* Two staged elements, stored at once (4 bytes for 16-bit ones, 8 for floats). */
template <class E>
struct alignas(2 * sizeof(E)) mm_stage_pair {
    E v[2];
};

#define MM_STAGE_T 64               /* the transpose's tiles: 64 × 64 elements */

/* Bᵀ (n × k_p of E, zero beyond k) from B (k × n floats): 64×64 tiles through shared memory; block
 * (32, 8). Each thread reads two neighbouring floats of a row of B (one 8-byte load where n is even)
 * and writes two neighbouring elements of a row of Bᵀ (k_p is even: one 4- or 8-byte store), so a
 * warp moves 256 bytes in and 128 or 256 out per instruction, where single elements moved 128 and
 * 64 (on an H200 at 4096³ that took wgmma-fp16 from 90.1% to 92.2% of cublas-fp16). Tile t: k tile
 * t % tiles_k. */
template <class E>
__global__ void mm_stage_transpose_kernel(const float *__restrict__ B, E *__restrict__ Bt, int k, int n, int k_p,
                                          int tiles_k)
{
    __shared__ float tile[MM_STAGE_T][MM_STAGE_T + 1];     /* +1: the column reads spread over the banks */
    const int k0 = (blockIdx.x % tiles_k) * MM_STAGE_T, n0 = (blockIdx.x / tiles_k) * MM_STAGE_T;
    const int c = 2 * threadIdx.x;
    const bool pairs = (n & 1) == 0 && n0 + c + 1 < n;     /* 8-byte aligned: c and every row start even */
    for (int i = threadIdx.y; i < MM_STAGE_T; i += 8) {
        const int kk = k0 + i, j = n0 + c;
        float2 v = make_float2(0.f, 0.f);
        if (kk < k) {
            if (pairs)
                v = *reinterpret_cast<const float2 *>(B + (size_t)kk * n + j);
            else
                v = make_float2(j < n ? B[(size_t)kk * n + j] : 0.f, j + 1 < n ? B[(size_t)kk * n + j + 1] : 0.f);
        }
        tile[i][c] = v.x;
        tile[i][c + 1] = v.y;
    }
    __syncthreads();
    for (int i = threadIdx.y; i < MM_STAGE_T; i += 8) {
        const int j = n0 + i, kk = k0 + c;
        if (j < n && kk < k_p) {    /* k_p even, kk even: kk + 1 < k_p too */
            mm_stage_pair<E> q = {{mm_stage_elem<E>(tile[c][i]), mm_stage_elem<E>(tile[c + 1][i])}};
            *reinterpret_cast<mm_stage_pair<E> *>(Bt + (size_t)j * k_p + kk) = q;
        }
    }
}

/* ---- the host side (matmul_cuda.h) ---- */

int mm_stage_convert(const float *src, void *dst, int rows, int cols, int cols_p, cl_matmul_format fmt, char *err)
{
    const long long quads = ((long long)rows * cols + 3) / 4;
    dim3 grid = cols == cols_p ? dim3((unsigned)(quads / 256 + 1 < 65536 ? quads / 256 + 1 : 65536), 1, 1)
                               : dim3((unsigned)((cols_p + 255) / 256 < 64 ? (cols_p + 255) / 256 : 64),
                                      (unsigned)(rows < 65535 ? rows : 65535), 1);
    switch (fmt) {
    case CL_MATMUL_FMT_FP16:
        mm_stage_convert_kernel<__half><<<grid, 256>>>(src, (__half *)dst, rows, cols, cols_p);
        break;
    case CL_MATMUL_FMT_BF16:
        mm_stage_convert_kernel<__nv_bfloat16><<<grid, 256>>>(src, (__nv_bfloat16 *)dst, rows, cols, cols_p);
        break;
    default:
        mm_stage_convert_kernel<float><<<grid, 256>>>(src, (float *)dst, rows, cols, cols_p);
        break;
    }
    return mm_launched("mm_stage_convert_kernel (an input in the tensor cores' format)", err);
}

int mm_stage_transpose(const float *b, void *bt, int k, int n, int k_p, cl_matmul_format fmt, char *err)
{
    long long tiles_k = (k_p + MM_STAGE_T - 1) / MM_STAGE_T, tiles = tiles_k * ((n + MM_STAGE_T - 1) / MM_STAGE_T);
    if (tiles > INT_MAX) {
        snprintf(err, CL_ERR_LEN, "Bᵀ takes %lld blocks of %d×%d, more than a grid holds", tiles, MM_STAGE_T,
                 MM_STAGE_T);
        return -1;
    }
    const dim3 block(32, 8, 1);
    switch (fmt) {
    case CL_MATMUL_FMT_FP16:
        mm_stage_transpose_kernel<__half><<<(unsigned)tiles, block>>>(b, (__half *)bt, k, n, k_p, (int)tiles_k);
        break;
    case CL_MATMUL_FMT_BF16:
        mm_stage_transpose_kernel<__nv_bfloat16><<<(unsigned)tiles, block>>>(b, (__nv_bfloat16 *)bt, k, n, k_p,
                                                                             (int)tiles_k);
        break;
    default:                        /* TF32 reads B as it is (matmul_wgmma.cu): no transposed copy */
        snprintf(err, CL_ERR_LEN, "Bᵀ is staged for FP16 and BF16 only");
        return -1;
    }
    return mm_launched("mm_stage_transpose_kernel (Bᵀ)", err);
}

size_t mm_stage_elem_bytes(cl_matmul_format fmt)
{
    return fmt == CL_MATMUL_FMT_FP16 || fmt == CL_MATMUL_FMT_BF16 ? 2 : 4;
}
