/* matmul_warptile.cu — warptiling, the rung between vec4 and fast (siboehm's
 * kernel 10): the block's tile is split into one sub-tile per warp, and a
 * warp's 32 threads, 4 rows × 8 columns of them, each compute 2×2 micro-tiles
 * of 4×4 spread over the warp's sub-tile. For one kk a warp then reads 4
 * consecutive float4s of A and 8 of B from shared memory (one transaction
 * each, no bank conflicts: vec4's threads, 8 floats apart, met four to a
 * bank), and writes C as whole 128-byte rows. Single-buffered: fast adds the
 * double buffering to this layout.
 */
#include <stdio.h>

#include "matmul_cuda.h"
#include "matmul_device.h"

/* show-source: matmul warptile */
/* BM×BN per block, WM×WN per warp, 16×32 per (4×8 threads) sub-tile step:
 * each thread holds WM/16 × WN/32 micro-tiles of 4×4. */
template <int BM, int BN, int BK, int WM, int WN>
struct mm_warptile_shape {
    static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
    static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    static constexpr int WMITER = WM / 16, WNITER = WN / 32;
    static constexpr int LOADS_A = BM * BK / (4 * THREADS), LOADS_B = BK * BN / (4 * THREADS);
    static constexpr int PAD = 4;               /* keeps rows 16-byte aligned for float4 reads */
    static_assert(WM % 16 == 0 && WN % 32 == 0 && BM % WM == 0 && BN % WN == 0, "warps tile the block");
    static_assert(LOADS_A >= 1 && LOADS_B >= 1 && BM * BK % (4 * THREADS) == 0 &&
                  BK * BN % (4 * THREADS) == 0, "tile loads split evenly into float4s");
};

template <int BM, int BN, int BK, int WM, int WN>
__global__ void __launch_bounds__(mm_warptile_shape<BM, BN, BK, WM, WN>::THREADS, 2)
mm_warptile_kernel(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                   int m, int n, int k)
{
    typedef mm_warptile_shape<BM, BN, BK, WM, WN> S;
    __shared__ __align__(16) float As[BK][BM + S::PAD];     /* transposed: As[kk][row] */
    __shared__ __align__(16) float Bs[BK][BN];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = (warp / S::WARPS_N) * WM, wn = (warp % S::WARPS_N) * WN;    /* the warp's sub-tile */
    const int ty = lane / 8, tx = lane % 8;                                    /* the thread in it */
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const bool vec_a = (k & 3) == 0, vec_b = (n & 3) == 0;
    float acc[S::WMITER * 4][S::WNITER * 4] = {{0.f}};

    for (int k0 = 0; k0 < k; k0 += BK) {
#pragma unroll
        for (int l = 0; l < S::LOADS_A; l++) {
            int f = tid + l * S::THREADS, r = f / (BK / 4), c = f % (BK / 4) * 4;
            float4 v = mm_load4(A, m, k, bm + r, k0 + c, vec_a);
            As[c + 0][r] = v.x;
            As[c + 1][r] = v.y;
            As[c + 2][r] = v.z;
            As[c + 3][r] = v.w;
        }
#pragma unroll
        for (int l = 0; l < S::LOADS_B; l++) {
            int f = tid + l * S::THREADS, r = f / (BN / 4), c = f % (BN / 4) * 4;
            *reinterpret_cast<float4 *>(&Bs[r][c]) = mm_load4(B, k, n, k0 + r, bn + c, vec_b);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            float a[S::WMITER * 4], b[S::WNITER * 4];
#pragma unroll
            for (int it = 0; it < S::WMITER; it++) {
                float4 v = *reinterpret_cast<const float4 *>(&As[kk][wm + it * 16 + ty * 4]);
                a[it * 4 + 0] = v.x, a[it * 4 + 1] = v.y, a[it * 4 + 2] = v.z, a[it * 4 + 3] = v.w;
            }
#pragma unroll
            for (int jt = 0; jt < S::WNITER; jt++) {
                float4 v = *reinterpret_cast<const float4 *>(&Bs[kk][wn + jt * 32 + tx * 4]);
                b[jt * 4 + 0] = v.x, b[jt * 4 + 1] = v.y, b[jt * 4 + 2] = v.z, b[jt * 4 + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < S::WMITER * 4; i++)
#pragma unroll
                for (int j = 0; j < S::WNITER * 4; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < S::WMITER * 4; i++) {
        int row = bm + wm + (i / 4) * 16 + ty * 4 + i % 4;
#pragma unroll
        for (int jt = 0; jt < S::WNITER; jt++)
            mm_store4(C, m, n, row, bn + wn + jt * 32 + tx * 4,
                      make_float4(acc[i][jt * 4], acc[i][jt * 4 + 1], acc[i][jt * 4 + 2], acc[i][jt * 4 + 3]),
                      vec_b);
    }
}
/* show-source: end */

/* ---- the variant ---- */

#define WT_BM 128
#define WT_BK 16
#define WT_WM 32
#define WT_WN 64
typedef mm_warptile_shape<WT_BM, WT_BM, WT_BK, WT_WM, WT_WN> wt_shape;

static dim3 warptile_grid(const mm_problem *p)
{
    return mm_grid(p, WT_BM, WT_BM);
}

static int warptile_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    out->global_loads = cl_matmul_loads_blocked(p->m, p->n, p->k, WT_BM, WT_BM);
    snprintf(out->impl, sizeof out->impl, "mm_warptile_kernel<%d,%d,%d,%d,%d>: %d threads, %d×%d per warp, "
             "2×2 micro-tiles of 4×4 per thread", WT_BM, WT_BM, WT_BK, WT_WM, WT_WN, wt_shape::THREADS, WT_WM, WT_WN);
    return mm_describe((const void *)mm_warptile_kernel<WT_BM, WT_BM, WT_BK, WT_WM, WT_WN>, warptile_grid(p),
                       dim3(wt_shape::THREADS, 1, 1), &out->launch, err);
}

static int warptile_launch(const mm_problem *p, char *err)
{
    mm_warptile_kernel<WT_BM, WT_BM, WT_BK, WT_WM, WT_WN>
        <<<warptile_grid(p), wt_shape::THREADS>>>(p->a, p->b, p->c, p->m, p->n, p->k);
    return mm_launched("mm_warptile_kernel", err);
}

const mm_gpu_impl mm_gpu_warptile = { warptile_prepare, warptile_launch };
