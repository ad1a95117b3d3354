/* matmul_async.cu — the FP32 ladder's cp.async rung: the swizzled, warp-tiled
 * kernel fed by cp.async in a 4-stage pipeline (async: 128×128 tiles; async64:
 * 64×64 tiles, 4× the blocks for matrices that 128×128 tiles leave SMs idle on).
 *
 * cp.async copies global memory into shared memory without passing through
 * registers: a thread issues the copies of slice s+3 and goes on multiplying
 * slice s out of another stage, holding no registers for them (fast's double
 * buffering holds the next slice in registers), with one __syncthreads per
 * slice. It copies 16 bytes as they are, so it cannot transpose A's tile as
 * fast and swizzle do: A stays row-major in shared memory and a thread reads
 * its 8 rows along k. Unpadded, the 4 rows a warp reads at once (4 apart, 256
 * bytes) would share banks; so the 16-byte chunk c of row r is stored at chunk
 * c ^ ((r / 4) mod 4), which puts them in 4 different groups of banks (the
 * swizzle variant's trick on the other index; padding would break the chunks'
 * 16-byte alignment, which cp.async needs).
 *
 * cp.async is sm_80+: the kernel traps below it and the runner refuses such
 * devices first (CL_MATMUL_SM80). Edges: copies outside A or B zero-fill
 * (cp.async's source size 0); rows not 16-byte aligned (k or n not a multiple
 * of 4) are copied float by float; C is written only inside m×n.
 */
#include <stdio.h>

#include "matmul_cuda.h"
#include "matmul_device.h"

/* show-source: matmul async,async64 */
/* BM×BN per block, BK-deep slices, WM×WN per warp; a warp is 4×8 threads, each
 * with WM/16 × WN/32 micro-tiles of 4×4 (8×8 for 32×64 warps). */
template <int BM_, int BN_, int BK_, int WM_, int WN_>
struct mm_async_shape {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_;
    static constexpr int WARPS_N = BN / WN, THREADS = 32 * (BM / WM) * WARPS_N;
    static constexpr int WMITER = WM / 16, WNITER = WN / 32;
    static constexpr int LOADS_A = BM * BK / (4 * THREADS), LOADS_B = BK * BN / (4 * THREADS);
    /* at most 128 registers a thread: 2 blocks of 256 threads per SM (4 of 128) */
    static constexpr int MIN_BLOCKS = 512 / THREADS;
    static constexpr int STAGE_FLOATS = BM * BK + BK * BN;
    static_assert(BK % 16 == 0, "the swizzle permutes 4 chunks of 4 floats within a row");
    static_assert(WM % 16 == 0 && WN % 32 == 0 && BM % WM == 0 && BN % WN == 0, "warps tile the block");
    static_assert(LOADS_A >= 1 && LOADS_B >= 1 && BM * BK % (4 * THREADS) == 0 &&
                  BK * BN % (4 * THREADS) == 0, "tile copies split evenly into 16-byte chunks");
};

/* Where chunk c (4 floats) of row r of A's tile lives: chunk c ^ ((r/4) mod 4). */
template <int BK>
__device__ __forceinline__ int mm_swz(int r, int c)
{
    return r * BK + ((c ^ ((r >> 2) & 3)) << 2);
}

/* One slice out of shared memory: As (BM×BK, swizzled) and Bs (BK×BN). A
 * thread's rows wm + it·16 + ty·4 + i all have swizzle ty, so the chunk that
 * holds kk is (kk/4) ^ ty. For each pair of kk: WMITER·4 float2 reads of A
 * (float4s would hold 32 registers beside the 64 accumulators, and spill),
 * then per kk WNITER float4 reads of B and WMITER·WNITER·16 multiply-adds. */
template <class S>
__device__ __forceinline__ void mm_swz_product(const float *__restrict__ As, const float *__restrict__ Bs,
                                               float (&acc)[S::WMITER * 4][S::WNITER * 4], int wm, int wn,
                                               int ty, int tx)
{
    const float *arows = As + (wm + ty * 4) * S::BK;
#pragma unroll
    for (int kp = 0; kp < S::BK; kp += 2) {
        float2 a[S::WMITER * 4];
        const float *acol = arows + ((((kp >> 2) ^ ty) << 2) | (kp & 3));
#pragma unroll
        for (int i = 0; i < S::WMITER * 4; i++)
            a[i] = *reinterpret_cast<const float2 *>(acol + ((i / 4) * 16 + i % 4) * S::BK);
#pragma unroll
        for (int j = 0; j < 2; j++) {
            float b[S::WNITER * 4];
#pragma unroll
            for (int jt = 0; jt < S::WNITER; jt++) {
                float4 v = *reinterpret_cast<const float4 *>(Bs + (kp + j) * S::BN + wn + jt * 32 + tx * 4);
                b[jt * 4 + 0] = v.x, b[jt * 4 + 1] = v.y, b[jt * 4 + 2] = v.z, b[jt * 4 + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < S::WMITER * 4; i++) {
                const float av = j == 0 ? a[i].x : a[i].y;
#pragma unroll
                for (int c = 0; c < S::WNITER * 4; c++)
                    acc[i][c] = fmaf(av, b[c], acc[i][c]);
            }
        }
    }
}

/* The thread's micro-tiles into C: a warp's 8 threads of a row write 128
 * contiguous bytes. */
template <class S>
__device__ __forceinline__ void mm_swz_store(float *__restrict__ C, int m, int n,
                                             const float (&acc)[S::WMITER * 4][S::WNITER * 4], int row0,
                                             int col0, int ty, int tx, bool vec)
{
#pragma unroll
    for (int i = 0; i < S::WMITER * 4; i++) {
        int row = row0 + (i / 4) * 16 + ty * 4 + i % 4;
#pragma unroll
        for (int jt = 0; jt < S::WNITER; jt++)
            mm_store4(C, m, n, row, col0 + jt * 32 + tx * 4,
                      make_float4(acc[i][jt * 4], acc[i][jt * 4 + 1], acc[i][jt * 4 + 2], acc[i][jt * 4 + 3]), vec);
    }
}
/* show-source: end */

/* show-source: matmul async,async64 */
/* STAGES slices in shared memory (dynamic: STAGES · S::STAGE_FLOATS floats). */
template <class S, int STAGES>
__global__ void __launch_bounds__(S::THREADS, S::MIN_BLOCKS)
mm_async_kernel(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int m, int n, int k)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    __trap();                       /* never launched: the runner refuses devices below 8.0 */
#else
    extern __shared__ __align__(16) float mm_stages[];
    float *const As = mm_stages, *const Bs = mm_stages + STAGES * S::BM * S::BK;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = (warp / S::WARPS_N) * S::WM, wn = (warp % S::WARPS_N) * S::WN;
    const int ty = lane / 8, tx = lane % 8;
    const int bm = blockIdx.y * S::BM, bn = blockIdx.x * S::BN;
    const bool vec_a = (k & 3) == 0, vec_b = (n & 3) == 0;
    float acc[S::WMITER * 4][S::WNITER * 4] = {{0.f}};

    auto load = [&](int stage, int k0) {
#pragma unroll
        for (int l = 0; l < S::LOADS_A; l++) {
            int f = tid + l * S::THREADS, r = f / (S::BK / 4), c = f % (S::BK / 4);
            mm_cp_async4(As + stage * S::BM * S::BK + mm_swz<S::BK>(r, c), A, m, k, bm + r, k0 + c * 4, vec_a);
        }
#pragma unroll
        for (int l = 0; l < S::LOADS_B; l++) {
            int f = tid + l * S::THREADS, r = f / (S::BN / 4), c = f % (S::BN / 4) * 4;
            mm_cp_async4(Bs + stage * S::BK * S::BN + r * S::BN + c, B, k, n, k0 + r, bn + c, vec_b);
        }
    };

    const int slices = (k + S::BK - 1) / S::BK;
    /* the first STAGES-1 slices in flight; one group per slice, empty past the end */
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < slices)
            load(s, s * S::BK);
        mm_cp_async_commit();
    }
    for (int s = 0; s < slices; s++) {
        mm_cp_async_wait<STAGES - 2>();     /* this thread's copies of slice s have landed ... */
        __syncthreads();                    /* ... everyone's, and slice s-1's stage is free */
        const int next = s + STAGES - 1;
        if (next < slices)
            load(next % STAGES, next * S::BK);
        mm_cp_async_commit();
        const int st = s % STAGES;
        mm_swz_product<S>(As + st * S::BM * S::BK, Bs + st * S::BK * S::BN, acc, wm, wn, ty, tx);
    }
    mm_swz_store<S>(C, m, n, acc, bm + wm, bn + wn, ty, tx, vec_b);
#endif
}
/* show-source: end */

/* ---- the variants ---- */

typedef mm_async_shape<128, 128, 16, 32, 64> swz128;
typedef mm_async_shape<64, 64, 16, 32, 32> swz64;
#define ASYNC_STAGES 4

template <class S>
static dim3 swz_grid(const mm_problem *p)
{
    return mm_grid(p, S::BM, S::BN);
}

template <class S>
static int async_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    const void *f = (const void *)mm_async_kernel<S, ASYNC_STAGES>;
    const int smem = ASYNC_STAGES * S::STAGE_FLOATS * (int)sizeof(float);
    out->global_loads = cl_matmul_loads_blocked(p->m, p->n, p->k, S::BM, S::BN);
    snprintf(out->impl, sizeof out->impl, "mm_async_kernel<%d×%d, BK %d, warps %d×%d, %d stages>: %d threads, "
             "cp.async into XOR-swizzled tiles", S::BM, S::BN, S::BK, S::WM, S::WN, ASYNC_STAGES, S::THREADS);
    if (mm_dynamic_smem(f, smem, err) || mm_describe(f, swz_grid<S>(p), dim3(S::THREADS, 1, 1), &out->launch, err))
        return -1;
    out->launch.smem_bytes += (size_t)smem;
    return 0;
}

template <class S>
static int async_launch(const mm_problem *p, char *err)
{
    const size_t smem = ASYNC_STAGES * S::STAGE_FLOATS * sizeof(float);
    mm_async_kernel<S, ASYNC_STAGES><<<swz_grid<S>(p), S::THREADS, smem>>>(p->a, p->b, p->c, p->m, p->n, p->k);
    return mm_launched("mm_async_kernel", err);
}

const mm_gpu_impl mm_gpu_async = { async_prepare<swz128>, async_launch<swz128> };
const mm_gpu_impl mm_gpu_async64 = { async_prepare<swz64>, async_launch<swz64> };
