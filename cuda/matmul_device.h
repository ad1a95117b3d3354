/* matmul_device.h — private to cuda/matmul*.cu: the device helpers the
 * register-blocked kernels share (vec4, warptile, fast, swizzle, async): four
 * floats of a row in or out of global memory, zeros outside the matrix, one
 * 16-byte access where the rows are 16-byte aligned and four scalar ones where
 * they are not (k or n not a multiple of 4). The kernels decide `vec` once per
 * launch, so the branch costs a warp nothing.
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

#endif
