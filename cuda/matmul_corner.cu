/* matmul_corner.cu — the lecture's DRAM bursts, shown on B stored transposed:
 * both kernels read Bᵀ (n×k, row-major: Bt[j·k + i] = B[i][j]), which the
 * runner generates in place of B from the same seed, so C and its check are
 * those of every other variant.
 *
 * naive-bt reads Bᵀ as naive reads B, one column of B per thread: a warp's
 * threads now read addresses k floats apart, one DRAM burst each, where naive's
 * 32 reads fall in one or two. tiled-bt loads the tile of B by corner turning:
 * the threads of a warp read consecutive addresses along a row of Bᵀ (coalesced)
 * and each writes its value transposed into shared memory, so the multiply
 * loop is the tiled kernel's, unchanged.
 */
#include <stdio.h>

#include "matmul_cuda.h"

#define NAIVE_BLOCK 16

/* show-source: matmul naive-bt */
/* C[row][col] = sum over i of A[row][i]·Bt[col][i]: consecutive threads (col)
 * read Bt k floats apart, so each load of a warp touches 32 DRAM bursts. */
__global__ void mm_naive_bt_kernel(const float *A, const float *Bt, float *C, int m, int n, int k)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m && col < n) {
        float pvalue = 0;
        for (int i = 0; i < k; i++)
            pvalue += A[row * k + i] * Bt[col * k + i];
        C[row * n + col] = pvalue;
    }
}
/* show-source: end */

/* show-source: matmul tiled-bt */
/* The tiled kernel with B's tile loaded by corner turning. Thread (ty, tx)
 * reads element tx of row ty of the Bᵀ tile, so a warp's reads are consecutive
 * addresses, and stores it at Bds[tx][ty]: Bds[i][j] = B[ph·TILE + i][col0 + j],
 * what the tiled kernel's loop reads. That store walks a column of Bds, TILE
 * floats apart; the padding column puts consecutive tx in different banks. */
template <int TILE>
__global__ void mm_tiled_bt_kernel(const float *A, const float *Bt, float *C, int m, int n, int k)
{
    __shared__ float Ads[TILE][TILE];
    __shared__ float Bds[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    int bt_row = blockIdx.x * TILE + ty;        /* the row of Bt (column of B) this thread loads */
    float pvalue = 0;
    for (int ph = 0; ph < (k + TILE - 1) / TILE; ph++) {
        int kk = ph * TILE + tx;
        Ads[ty][tx] = row < m && kk < k ? A[row * k + kk] : 0.0f;
        Bds[tx][ty] = bt_row < n && kk < k ? Bt[bt_row * k + kk] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int i = 0; i < TILE; i++)
            pvalue += Ads[ty][i] * Bds[i][tx];
        __syncthreads();
    }
    if (row < m && col < n)
        C[row * n + col] = pvalue;
}
/* show-source: end */


/* ---- naive-bt ---- */

static int naive_bt_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    out->global_loads = cl_matmul_loads_naive(p->m, p->n, p->k);
    snprintf(out->impl, sizeof out->impl, "mm_naive_bt_kernel, one thread per element of C, B read from Bᵀ");
    return mm_describe((const void *)mm_naive_bt_kernel, mm_grid(p, NAIVE_BLOCK, NAIVE_BLOCK),
                       dim3(NAIVE_BLOCK, NAIVE_BLOCK, 1), &out->launch, err);
}

static int naive_bt_launch(const mm_problem *p, char *err)
{
    mm_naive_bt_kernel<<<mm_grid(p, NAIVE_BLOCK, NAIVE_BLOCK), dim3(NAIVE_BLOCK, NAIVE_BLOCK, 1)>>>(
        p->a, p->b, p->c, p->m, p->n, p->k);
    return mm_launched("mm_naive_bt_kernel", err);
}

const mm_gpu_impl mm_gpu_naive_bt = { naive_bt_prepare, naive_bt_launch };

/* ---- tiled-bt ---- */

/* One instance per TILE_WIDTH of the contract's list (matmul.h). */
static mm_kernel_fn tiled_bt_kernel(int tile)
{
#define TILE_CASE_(t) case t: return mm_tiled_bt_kernel<t>;
    switch (tile) {
    CL_MATMUL_TILE_LIST(TILE_CASE_)
    default: return NULL;
    }
#undef TILE_CASE_
}

static int tiled_bt_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    mm_kernel_fn f = tiled_bt_kernel(p->tile);
    if (!f) {
        snprintf(err, CL_ERR_LEN, "no tiled-bt kernel for TILE_WIDTH %d", p->tile);
        return -1;
    }
    out->global_loads = cl_matmul_loads_blocked(p->m, p->n, p->k, p->tile, p->tile);
    snprintf(out->impl, sizeof out->impl, "mm_tiled_bt_kernel<%d>, B's tile corner-turned from Bᵀ", p->tile);
    return mm_describe((const void *)f, mm_grid(p, p->tile, p->tile), dim3(p->tile, p->tile, 1),
                       &out->launch, err);
}

static int tiled_bt_launch(const mm_problem *p, char *err)
{
    mm_kernel_fn f = tiled_bt_kernel(p->tile);
    f<<<mm_grid(p, p->tile, p->tile), dim3(p->tile, p->tile, 1)>>>(p->a, p->b, p->c, p->m, p->n, p->k);
    return mm_launched("mm_tiled_bt_kernel", err);
}

const mm_gpu_impl mm_gpu_tiled_bt = { tiled_bt_prepare, tiled_bt_launch };
