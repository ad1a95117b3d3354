/* matmul_device.h — private to cuda/matmul*.cu: the device helpers the
 * register-blocked kernels share (vec4, warptile, fast, swizzle, async, and
 * those whose show-source says they are like one of them):
 * four floats of a row in or out of global memory, or copied into shared
 * memory by cp.async, zeros outside the matrix, one 16-byte access where the
 * rows are 16-byte aligned and four scalar ones where they are not (k or n not
 * a multiple of 4). The kernels decide `vec` once per launch, so the branch
 * costs a warp nothing.
 */
#ifndef CUDALAB_CUDA_MATMUL_DEVICE_H
#define CUDALAB_CUDA_MATMUL_DEVICE_H

#include <cuda_runtime.h>

/* show-source: matmul fast,fast64,vec4,warptile,swizzle */
/* Four floats of row `row` of a rows×cols matrix from column col (a multiple of
 * 4), zeros outside; one 16-byte load when rows are 16-byte aligned. */
__device__ __forceinline__ float4 mm_load4(const float *__restrict__ M, int rows, int cols, int row,
                                           int col, bool vec)
{
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (row < rows && col < cols) {
        const float *src = M + (size_t)row * cols + col;
        if (vec) {
            v = __ldg(reinterpret_cast<const float4 *>(src));
        } else {
            v.x = __ldg(src);
            if (col + 1 < cols) v.y = __ldg(src + 1);
            if (col + 2 < cols) v.z = __ldg(src + 2);
            if (col + 3 < cols) v.w = __ldg(src + 3);
        }
    }
    return v;
}
/* show-source: end */

/* show-source: matmul fast,fast64,vec4,warptile,swizzle,async,async64 */
__device__ __forceinline__ void mm_store4(float *__restrict__ C, int m, int n, int row, int col,
                                          float4 v, bool vec)
{
    if (row >= m || col >= n)
        return;
    float *dst = C + (size_t)row * n + col;
    if (vec) {
        *reinterpret_cast<float4 *>(dst) = v;
    } else {
        dst[0] = v.x;
        if (col + 1 < n) dst[1] = v.y;
        if (col + 2 < n) dst[2] = v.z;
        if (col + 3 < n) dst[3] = v.w;
    }
}
/* show-source: end */

/* show-source: matmul async,async64 */
/* Four floats of row `row` of a rows×cols matrix from column col into shared
 * memory at dst, without registers: one 16-byte cp.async (L2 only: .cg) where
 * rows are 16-byte aligned, else four 4-byte ones; a source size of 0 bytes
 * zero-fills what lies outside the matrix (and reads nothing: M stands in). */
__device__ __forceinline__ void mm_cp_async4(float *dst, const float *__restrict__ M, int rows, int cols, int row,
                                             int col, bool vec)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    if (vec) {
        const bool in = row < rows && col < cols;
        const float *src = in ? M + (size_t)row * cols + col : M;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(src), "r"(in ? 16 : 0));
    } else {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const bool in = row < rows && col + e < cols;
            const float *src = in ? M + (size_t)row * cols + col + e : M;
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(s + 4 * e), "l"(src), "r"(in ? 4 : 0));
        }
    }
#endif
}

/* One float, M[row][col], into shared memory at dst, zero outside M: how wide
 * moves A into its transposed place. */
__device__ __forceinline__ void mm_cp_async1(float *dst, const float *__restrict__ M, int rows, int cols, int row,
                                             int col)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const bool in = row < rows && col < cols;
    const float *src = in ? M + (size_t)row * cols + col : M;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(src), "r"(in ? 4 : 0));
#endif
}

/* 16 bytes from src, known to lie inside its matrix, into shared memory at dst:
 * the copy tests nothing (and the caller keeps src's address at hand, so a copy
 * costs no index arithmetic). */
__device__ __forceinline__ void mm_cp_async16_in(float *dst, const float *src)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(src));
#endif
}

/* The copies issued since the last commit become one group ... */
__device__ __forceinline__ void mm_cp_async_commit()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::);
#endif
}

/* ... and this waits until at most N groups are still in flight. */
template <int N>
__device__ __forceinline__ void mm_cp_async_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;" ::"n"(N));
#endif
}
/* show-source: end */

#endif
