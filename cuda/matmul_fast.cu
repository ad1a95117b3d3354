/* matmul_fast.cu — register blocking with double buffering: the rung after
 * warptile that brings plain FP32 code close to cuBLAS (fast, and fast64 with
 * 64×64 tiles), and the same kernel with its transposed tile of A
 * XOR-swizzled instead of padded (swizzle).
 *
 * Each block computes a BM×BN tile of C; each of its threads an 8×8
 * micro-tile held in 64 registers. Per 8-deep slice of k a thread reads 8
 * values of A and 8 of B from shared memory (four float4 loads) and does 64
 * FMAs with them, so shared memory is no longer the bottleneck the tiled
 * kernel hits (2 shared loads per FMA there). The block reads each element of A
 * once per BN columns and of B once per BM rows: CGMA = 2·BM·BN/(BM+BN),
 * 128 for 128×128.
 *
 * Details that matter on the hardware:
 *  - global loads are float4 (16 bytes per thread, coalesced); A's tile is
 *    stored transposed (k-major) so that a thread's 8 values of A are two
 *    float4 reads; its rows are padded by 4 floats so the transposing
 *    stores do not collide in a bank;
 *  - double buffering: the next slice is loaded from global memory into
 *    registers while the current one is multiplied out of shared memory,
 *    then stored into the other shared buffer, one __syncthreads per slice;
 *  - a thread's 8 rows are two groups of 4, BM/2 apart (and its columns two
 *    groups of 4, BN/2 apart), and a warp covers 4×8 threads, so a warp's
 *    shared reads are 64 or 128 contiguous bytes (no bank conflicts) and its
 *    stores to C are whole 128-byte lines.
 * Edges: a tile that crosses the border of A or B loads zeros there, with
 * scalar loads where a row is not 16-byte aligned (k or n not a multiple of 4);
 * C is written only inside m×n.
 */
#include <stdio.h>

#include "matmul_cuda.h"
#include "matmul_device.h"

/* show-source: matmul fast,fast64 */
template <int BM, int BN, int BK>
struct mm_fast_shape {
    static constexpr int TM = 8, TN = 8;                /* the micro-tile of one thread */
    static constexpr int THREADS_N = BN / TN, THREADS_M = BM / TM;
    static constexpr int THREADS = THREADS_N * THREADS_M;
    static constexpr int WARPS_N = THREADS_N / 8;       /* a warp is 4 (m) × 8 (n) threads */
    static constexpr int LOADS_A = BM * BK / 4 / THREADS;   /* float4 loads per thread per slice */
    static constexpr int LOADS_B = BK * BN / 4 / THREADS;
    static constexpr int PAD = 4;
    /* blocks per SM the register budget must allow: 128 registers a thread at 256
     * threads (the accumulators alone take 64), about 168 for smaller blocks */
    static constexpr int MIN_BLOCKS = THREADS >= 256 ? 2 : 65536 / (THREADS * 168);
    static_assert(THREADS_N % 8 == 0 && THREADS_M % 4 == 0, "a warp covers 4×8 threads");
    static_assert(LOADS_A >= 1 && LOADS_B >= 1 && BM * BK % (4 * THREADS) == 0 &&
                  BK * BN % (4 * THREADS) == 0, "tile loads split evenly into float4s");
};

template <int BM, int BN, int BK>
__global__ void __launch_bounds__(mm_fast_shape<BM, BN, BK>::THREADS, mm_fast_shape<BM, BN, BK>::MIN_BLOCKS)
mm_fast_kernel(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
               int m, int n, int k)
{
    typedef mm_fast_shape<BM, BN, BK> S;
    __shared__ __align__(16) float As[2][BK][BM + S::PAD];
    __shared__ __align__(16) float Bs[2][BK][BN];

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int tx = (warp % S::WARPS_N) * 8 + lane % 8;
    const int ty = (warp / S::WARPS_N) * 4 + lane / 8;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const bool vec_a = (k & 3) == 0, vec_b = (n & 3) == 0;

    float4 ra[S::LOADS_A], rb[S::LOADS_B];
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
            acc[i][j] = 0.f;

    /* the slice of k starting at k0 into registers ... */
    auto load = [&](int k0) {
#pragma unroll
        for (int i = 0; i < S::LOADS_A; i++) {
            int f = tid + i * S::THREADS;
            ra[i] = mm_load4(A, m, k, bm + f / (BK / 4), k0 + f % (BK / 4) * 4, vec_a);
        }
#pragma unroll
        for (int i = 0; i < S::LOADS_B; i++) {
            int f = tid + i * S::THREADS;
            rb[i] = mm_load4(B, k, n, k0 + f / (BN / 4), bn + f % (BN / 4) * 4, vec_b);
        }
    };
    /* ... and from registers into shared buffer buf, A transposed */
    auto store = [&](int buf) {
#pragma unroll
        for (int i = 0; i < S::LOADS_A; i++) {
            int f = tid + i * S::THREADS, r = f / (BK / 4), c = f % (BK / 4) * 4;
            As[buf][c + 0][r] = ra[i].x;
            As[buf][c + 1][r] = ra[i].y;
            As[buf][c + 2][r] = ra[i].z;
            As[buf][c + 3][r] = ra[i].w;
        }
#pragma unroll
        for (int i = 0; i < S::LOADS_B; i++) {
            int f = tid + i * S::THREADS;
            *reinterpret_cast<float4 *>(&Bs[buf][f / (BN / 4)][f % (BN / 4) * 4]) = rb[i];
        }
    };

    const int slices = (k + BK - 1) / BK;
    load(0);
    store(0);
    __syncthreads();
    for (int s = 0; s < slices; s++) {
        const int cur = s & 1;
        if (s + 1 < slices)
            load((s + 1) * BK);     /* in flight while this slice is multiplied out */
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            float4 a0 = *reinterpret_cast<const float4 *>(&As[cur][kk][ty * 4]);
            float4 a1 = *reinterpret_cast<const float4 *>(&As[cur][kk][BM / 2 + ty * 4]);
            float4 b0 = *reinterpret_cast<const float4 *>(&Bs[cur][kk][tx * 4]);
            float4 b1 = *reinterpret_cast<const float4 *>(&Bs[cur][kk][BN / 2 + tx * 4]);
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (s + 1 < slices)
            store(cur ^ 1);         /* the other buffer: nobody reads it during this slice */
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 8; i++) {
        int row = bm + (i < 4 ? ty * 4 + i : BM / 2 + ty * 4 + i - 4);
        mm_store4(C, m, n, row, bn + tx * 4, make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]), vec_b);
        mm_store4(C, m, n, row, bn + BN / 2 + tx * 4,
                  make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]), vec_b);
    }
}
/* show-source: end */

/* show-source: matmul swizzle */
/* Where fast pads each row of the transposed A tile by 4 floats, swizzle XORs
 * the column: column r of row kk is stored at r ^ 16 in rows 4…7. A thread
 * stores its float4 of A into rows c…c+3 (c = 0 or 4) of column r; the warp's
 * 16 values of r meet the same 16 banks in rows kk and kk+4, and the XOR sends
 * rows 4…7 to the other 16. Reads stay float4s (the XOR moves whole groups of
 * 16 floats), and no shared memory goes to padding. */
template <int BK>
__device__ __forceinline__ int mm_swizzle_col(int kk, int r)
{
    static_assert(BK == 8, "two float4s of A per row of the tile: rows 0…3 and 4…7");
    return r ^ ((kk & 4) << 2);
}

template <int BM, int BN, int BK>
__global__ void __launch_bounds__(mm_fast_shape<BM, BN, BK>::THREADS, mm_fast_shape<BM, BN, BK>::MIN_BLOCKS)
mm_swizzle_kernel(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                  int m, int n, int k)
{
    typedef mm_fast_shape<BM, BN, BK> S;
    __shared__ __align__(16) float As[2][BK][BM];
    __shared__ __align__(16) float Bs[2][BK][BN];

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int tx = (warp % S::WARPS_N) * 8 + lane % 8;
    const int ty = (warp / S::WARPS_N) * 4 + lane / 8;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const bool vec_a = (k & 3) == 0, vec_b = (n & 3) == 0;
    float4 ra[S::LOADS_A], rb[S::LOADS_B];
    float acc[8][8] = {{0.f}};

    auto load = [&](int k0) {
#pragma unroll
        for (int i = 0; i < S::LOADS_A; i++) {
            int f = tid + i * S::THREADS;
            ra[i] = mm_load4(A, m, k, bm + f / (BK / 4), k0 + f % (BK / 4) * 4, vec_a);
        }
#pragma unroll
        for (int i = 0; i < S::LOADS_B; i++) {
            int f = tid + i * S::THREADS;
            rb[i] = mm_load4(B, k, n, k0 + f / (BN / 4), bn + f % (BN / 4) * 4, vec_b);
        }
    };
    auto store = [&](int buf) {
#pragma unroll
        for (int i = 0; i < S::LOADS_A; i++) {
            int f = tid + i * S::THREADS, r = f / (BK / 4), c = f % (BK / 4) * 4;
            As[buf][c + 0][mm_swizzle_col<BK>(c + 0, r)] = ra[i].x;
            As[buf][c + 1][mm_swizzle_col<BK>(c + 1, r)] = ra[i].y;
            As[buf][c + 2][mm_swizzle_col<BK>(c + 2, r)] = ra[i].z;
            As[buf][c + 3][mm_swizzle_col<BK>(c + 3, r)] = ra[i].w;
        }
#pragma unroll
        for (int i = 0; i < S::LOADS_B; i++) {
            int f = tid + i * S::THREADS;
            *reinterpret_cast<float4 *>(&Bs[buf][f / (BN / 4)][f % (BN / 4) * 4]) = rb[i];
        }
    };

    const int slices = (k + BK - 1) / BK;
    load(0);
    store(0);
    __syncthreads();
    for (int s = 0; s < slices; s++) {
        const int cur = s & 1;
        if (s + 1 < slices)
            load((s + 1) * BK);
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            float4 a0 = *reinterpret_cast<const float4 *>(&As[cur][kk][mm_swizzle_col<BK>(kk, ty * 4)]);
            float4 a1 = *reinterpret_cast<const float4 *>(&As[cur][kk][mm_swizzle_col<BK>(kk, BM / 2 + ty * 4)]);
            float4 b0 = *reinterpret_cast<const float4 *>(&Bs[cur][kk][tx * 4]);
            float4 b1 = *reinterpret_cast<const float4 *>(&Bs[cur][kk][BN / 2 + tx * 4]);
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (s + 1 < slices)
            store(cur ^ 1);
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 8; i++) {
        int row = bm + (i < 4 ? ty * 4 + i : BM / 2 + ty * 4 + i - 4);
        mm_store4(C, m, n, row, bn + tx * 4, make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]), vec_b);
        mm_store4(C, m, n, row, bn + BN / 2 + tx * 4,
                  make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]), vec_b);
    }
}
/* show-source: end */

/* ---- the variants ---- */

template <int BM, int BN, int BK>
static int fast_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    typedef mm_fast_shape<BM, BN, BK> S;
    out->global_loads = cl_matmul_loads_blocked(p->m, p->n, p->k, BM, BN);
    snprintf(out->impl, sizeof out->impl, "mm_fast_kernel<%d,%d,%d>: %d threads, 8×8 outputs each, "
             "float4 loads, double-buffered shared memory", BM, BN, BK, S::THREADS);
    dim3 grid((unsigned)((p->n + BN - 1) / BN), (unsigned)((p->m + BM - 1) / BM), 1);
    return mm_describe((const void *)mm_fast_kernel<BM, BN, BK>, grid, dim3(S::THREADS, 1, 1),
                       &out->launch, err);
}

template <int BM, int BN, int BK>
static int fast_launch(const mm_problem *p, char *err)
{
    typedef mm_fast_shape<BM, BN, BK> S;
    dim3 grid((unsigned)((p->n + BN - 1) / BN), (unsigned)((p->m + BM - 1) / BM), 1);
    mm_fast_kernel<BM, BN, BK><<<grid, S::THREADS>>>(p->a, p->b, p->c, p->m, p->n, p->k);
    return mm_launched("mm_fast_kernel", err);
}

static int swizzle_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    typedef mm_fast_shape<128, 128, 8> S;
    out->global_loads = cl_matmul_loads_blocked(p->m, p->n, p->k, 128, 128);
    snprintf(out->impl, sizeof out->impl, "mm_swizzle_kernel<128,128,8>: %d threads, 8×8 outputs each, "
             "A's transposed tile XOR-swizzled instead of padded", S::THREADS);
    dim3 grid((unsigned)((p->n + 127) / 128), (unsigned)((p->m + 127) / 128), 1);
    return mm_describe((const void *)mm_swizzle_kernel<128, 128, 8>, grid, dim3(S::THREADS, 1, 1), &out->launch, err);
}

static int swizzle_launch(const mm_problem *p, char *err)
{
    dim3 grid((unsigned)((p->n + 127) / 128), (unsigned)((p->m + 127) / 128), 1);
    mm_swizzle_kernel<128, 128, 8><<<grid, mm_fast_shape<128, 128, 8>::THREADS>>>(p->a, p->b, p->c, p->m, p->n, p->k);
    return mm_launched("mm_swizzle_kernel", err);
}

const mm_gpu_impl mm_gpu_fast = { fast_prepare<128, 128, 8>, fast_launch<128, 128, 8> };
const mm_gpu_impl mm_gpu_fast64 = { fast_prepare<64, 64, 8>, fast_launch<64, 64, 8> };
const mm_gpu_impl mm_gpu_swizzle = { swizzle_prepare, swizzle_launch };
