/* matmul_regblock.cu — the first rungs after the lecture's tiled kernel, as in
 * siboehm/SGEMM_CUDA: register blocking in one dimension (reg1d) and in two
 * (reg2d), then float4 loads (vec4). Each thread computes several elements of
 * C, so a value read from shared memory into a register serves several
 * multiply-adds: shared memory, the tiled kernel's bottleneck (two shared loads
 * per multiply-add), stops being one. Every tile element outside A or B loads
 * 0 and C is written only inside m×n, so any m, n, k works.
 */
#include <stdio.h>

#include "matmul_cuda.h"
#include "matmul_device.h"

/* show-source: matmul reg1d */
/* A BM×BN tile of C per block, TM elements of one column per thread
 * (BM·BN/TM threads). Per slice of k each thread loads one element of A's tile
 * and one of B's; then for each kk it reads one value of B into a register and
 * multiplies it by TM values of A (broadcast: a warp's threads share their rows). */
template <int BM, int BN, int BK, int TM>
__global__ void __launch_bounds__(BM * BN / TM)
mm_reg1d_kernel(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                int m, int n, int k)
{
    constexpr int THREADS = BM * BN / TM;
    static_assert(BM * BK == THREADS && BK * BN == THREADS, "one element of each tile per thread");
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tx = tid % BN, ty = tid / BN;     /* column tx, rows ty·TM … ty·TM + TM-1 of the tile */
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const int ar = tid / BK, ac = tid % BK, br = tid / BN, bc = tid % BN;
    float acc[TM] = {0.f};
    for (int k0 = 0; k0 < k; k0 += BK) {
        As[ar][ac] = bm + ar < m && k0 + ac < k ? A[(bm + ar) * k + k0 + ac] : 0.0f;
        Bs[br][bc] = k0 + br < k && bn + bc < n ? B[(k0 + br) * n + bn + bc] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            const float b = Bs[kk][tx];
#pragma unroll
            for (int i = 0; i < TM; i++)
                acc[i] = fmaf(As[ty * TM + i][kk], b, acc[i]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; i++)
        if (bm + ty * TM + i < m && bn + tx < n)
            C[(bm + ty * TM + i) * n + bn + tx] = acc[i];
}
/* show-source: end */

/* show-source: matmul reg2d */
/* A BM×BN tile of C per block, TM×TN per thread. For each kk a thread reads
 * TM values of A and TN of B into registers and does TM·TN multiply-adds:
 * 64 for 16 shared loads at 8×8. Thread (ty, tx) owns rows ty·TM … and columns
 * tx·TN … of the tile: contiguous, simple, and (the next rungs fix it) a warp's
 * reads of B land 8 floats apart, 4 threads to a bank. */
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__(BM * BN / (TM * TN))
mm_reg2d_kernel(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                int m, int n, int k)
{
    constexpr int THREADS = BM * BN / (TM * TN);
    static_assert(BM * BK % THREADS == 0 && BK * BN % THREADS == 0, "tile loads split evenly");
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tx = tid % (BN / TN), ty = tid / (BN / TN);
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    float acc[TM][TN] = {{0.f}};
    float ra[TM], rb[TN];
    for (int k0 = 0; k0 < k; k0 += BK) {
#pragma unroll
        for (int l = 0; l < BM * BK / THREADS; l++) {
            int f = tid + l * THREADS, r = f / BK, c = f % BK;
            As[r][c] = bm + r < m && k0 + c < k ? A[(bm + r) * k + k0 + c] : 0.0f;
        }
#pragma unroll
        for (int l = 0; l < BK * BN / THREADS; l++) {
            int f = tid + l * THREADS, r = f / BN, c = f % BN;
            Bs[r][c] = k0 + r < k && bn + c < n ? B[(k0 + r) * n + bn + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
#pragma unroll
            for (int i = 0; i < TM; i++)
                ra[i] = As[ty * TM + i][kk];
#pragma unroll
            for (int j = 0; j < TN; j++)
                rb[j] = Bs[kk][tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++)
                    acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            if (bm + ty * TM + i < m && bn + tx * TN + j < n)
                C[(bm + ty * TM + i) * n + bn + tx * TN + j] = acc[i][j];
}
/* show-source: end */

/* show-source: matmul vec4 */
/* reg2d with 16-byte accesses. Global loads are float4 (a quarter of the load
 * instructions, whole 32-byte sectors). A's tile is stored transposed, As[k][m],
 * so that a thread's 8 values of A for one kk are contiguous: two float4 shared
 * loads, as for B; C is written as float4s too. */
template <int BM, int BN, int BK>
__global__ void __launch_bounds__(BM * BN / 64)
mm_vec4_kernel(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
               int m, int n, int k)
{
    constexpr int THREADS = BM * BN / 64;       /* 8×8 per thread */
    static_assert(BM * BK % (4 * THREADS) == 0 && BK * BN % (4 * THREADS) == 0, "float4 loads split evenly");
    __shared__ __align__(16) float As[BK][BM];
    __shared__ __align__(16) float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tx = tid % (BN / 8), ty = tid / (BN / 8);
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const bool vec_a = (k & 3) == 0, vec_b = (n & 3) == 0;
    float acc[8][8] = {{0.f}};
    for (int k0 = 0; k0 < k; k0 += BK) {
#pragma unroll
        for (int l = 0; l < BM * BK / (4 * THREADS); l++) {
            int f = tid + l * THREADS, r = f / (BK / 4), c = f % (BK / 4) * 4;
            float4 v = mm_load4(A, m, k, bm + r, k0 + c, vec_a);
            As[c + 0][r] = v.x;
            As[c + 1][r] = v.y;
            As[c + 2][r] = v.z;
            As[c + 3][r] = v.w;
        }
#pragma unroll
        for (int l = 0; l < BK * BN / (4 * THREADS); l++) {
            int f = tid + l * THREADS, r = f / (BN / 4), c = f % (BN / 4) * 4;
            *reinterpret_cast<float4 *>(&Bs[r][c]) = mm_load4(B, k, n, k0 + r, bn + c, vec_b);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            float4 a0 = *reinterpret_cast<const float4 *>(&As[kk][ty * 8]);
            float4 a1 = *reinterpret_cast<const float4 *>(&As[kk][ty * 8 + 4]);
            float4 b0 = *reinterpret_cast<const float4 *>(&Bs[kk][tx * 8]);
            float4 b1 = *reinterpret_cast<const float4 *>(&Bs[kk][tx * 8 + 4]);
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int row = bm + ty * 8 + i, col = bn + tx * 8;
        mm_store4(C, m, n, row, col, make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]), vec_b);
        mm_store4(C, m, n, row, col + 4, make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]), vec_b);
    }
}
/* show-source: end */

/* ---- the variants: one launch shape each ---- */

#define REG1D_BM 64
#define REG1D_BK 8
#define REG1D_TM 8
#define REG2D_BM 128
#define REG2D_BK 8


static int reg1d_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    const int bm = REG1D_BM;
    out->global_loads = cl_matmul_loads_blocked(p->m, p->n, p->k, bm, bm);
    snprintf(out->impl, sizeof out->impl, "mm_reg1d_kernel<%d,%d,%d,%d>: %d threads, %d outputs of a column each",
             bm, bm, REG1D_BK, REG1D_TM, bm * bm / REG1D_TM, REG1D_TM);
    return mm_describe((const void *)mm_reg1d_kernel<REG1D_BM, REG1D_BM, REG1D_BK, REG1D_TM>, mm_grid(p, bm, bm),
                       dim3(bm * bm / REG1D_TM, 1, 1), &out->launch, err);
}

static int reg1d_launch(const mm_problem *p, char *err)
{
    mm_reg1d_kernel<REG1D_BM, REG1D_BM, REG1D_BK, REG1D_TM>
        <<<mm_grid(p, REG1D_BM, REG1D_BM), REG1D_BM * REG1D_BM / REG1D_TM>>>(p->a, p->b, p->c, p->m, p->n, p->k);
    return mm_launched("mm_reg1d_kernel", err);
}

static int reg2d_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    const int bm = REG2D_BM;
    out->global_loads = cl_matmul_loads_blocked(p->m, p->n, p->k, bm, bm);
    snprintf(out->impl, sizeof out->impl, "mm_reg2d_kernel<%d,%d,%d,8,8>: %d threads, 8×8 outputs each",
             bm, bm, REG2D_BK, bm * bm / 64);
    return mm_describe((const void *)mm_reg2d_kernel<REG2D_BM, REG2D_BM, REG2D_BK, 8, 8>, mm_grid(p, bm, bm),
                       dim3(bm * bm / 64, 1, 1), &out->launch, err);
}

static int reg2d_launch(const mm_problem *p, char *err)
{
    mm_reg2d_kernel<REG2D_BM, REG2D_BM, REG2D_BK, 8, 8>
        <<<mm_grid(p, REG2D_BM, REG2D_BM), REG2D_BM * REG2D_BM / 64>>>(p->a, p->b, p->c, p->m, p->n, p->k);
    return mm_launched("mm_reg2d_kernel", err);
}

static int vec4_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    const int bm = REG2D_BM;
    out->global_loads = cl_matmul_loads_blocked(p->m, p->n, p->k, bm, bm);
    snprintf(out->impl, sizeof out->impl, "mm_vec4_kernel<%d,%d,%d>: %d threads, 8×8 outputs each, float4 loads",
             bm, bm, REG2D_BK, bm * bm / 64);
    return mm_describe((const void *)mm_vec4_kernel<REG2D_BM, REG2D_BM, REG2D_BK>, mm_grid(p, bm, bm),
                       dim3(bm * bm / 64, 1, 1), &out->launch, err);
}

static int vec4_launch(const mm_problem *p, char *err)
{
    mm_vec4_kernel<REG2D_BM, REG2D_BM, REG2D_BK>
        <<<mm_grid(p, REG2D_BM, REG2D_BM), REG2D_BM * REG2D_BM / 64>>>(p->a, p->b, p->c, p->m, p->n, p->k);
    return mm_launched("mm_vec4_kernel", err);
}

const mm_gpu_impl mm_gpu_reg1d = { reg1d_prepare, reg1d_launch };
const mm_gpu_impl mm_gpu_reg2d = { reg2d_prepare, reg2d_launch };
const mm_gpu_impl mm_gpu_vec4 = { vec4_prepare, vec4_launch };
