/* matmul_tiled.cu — the lecture's two matrix kernels: one thread per element
 * of C reading straight from global memory (naive), and the shared-memory
 * tiled kernel, one template instance per TILE_WIDTH, with its two
 * __syncthreads per phase. Both check their bounds, so any m, n, k works:
 * threads outside C compute nothing, and tile elements outside A or B load 0.
 */
#include <stdio.h>

#include "cudalab/occupancy.h"
#include "matmul_cuda.h"

#define NAIVE_BLOCK 16

/* show-source: matmul naive */
/* C[row][col] = sum over i of A[row][i]·B[i][col]: 2 loads per multiply-add. */
__global__ void mm_naive_kernel(const float *A, const float *B, float *C, int m, int n, int k)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m && col < n) {
        float pvalue = 0;
        for (int i = 0; i < k; i++)
            pvalue += A[row * k + i] * B[i * n + col];
        C[row * n + col] = pvalue;
    }
}
/* show-source: end */

/* show-source: matmul tiled */
/* Phase ph: the block loads the TILE×TILE tile of A at (row block, ph) and of
 * B at (ph, column block), waits until every element is in, multiplies the
 * tiles out of shared memory, and waits again before the next phase
 * overwrites them. Each element of A and B is read from global memory once
 * per block instead of once per thread: TILE times less traffic. */
template <int TILE>
__global__ void mm_tiled_kernel(const float *A, const float *B, float *C, int m, int n, int k)
{
    __shared__ float Ads[TILE][TILE];
    __shared__ float Bds[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float pvalue = 0;
    for (int ph = 0; ph < (k + TILE - 1) / TILE; ph++) {
        int ka = ph * TILE + tx, kb = ph * TILE + ty;
        Ads[ty][tx] = row < m && ka < k ? A[row * k + ka] : 0.0f;
        Bds[ty][tx] = kb < k && col < n ? B[kb * n + col] : 0.0f;
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


/* ---- naive ---- */

static int naive_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    out->global_loads = cl_matmul_loads_naive(p->m, p->n, p->k);
    snprintf(out->impl, sizeof out->impl, "mm_naive_kernel, one thread per element of C");
    return mm_describe((const void *)mm_naive_kernel, mm_grid(p, NAIVE_BLOCK, NAIVE_BLOCK),
                       dim3(NAIVE_BLOCK, NAIVE_BLOCK, 1), &out->launch, err);
}

static int naive_launch(const mm_problem *p, char *err)
{
    mm_naive_kernel<<<mm_grid(p, NAIVE_BLOCK, NAIVE_BLOCK), dim3(NAIVE_BLOCK, NAIVE_BLOCK, 1)>>>(
        p->a, p->b, p->c, p->m, p->n, p->k);
    return mm_launched("mm_naive_kernel", err);
}

const mm_gpu_impl mm_gpu_naive = { naive_prepare, naive_launch };

/* ---- tiled ---- */

/* One instance per TILE_WIDTH of the contract's list (matmul.h). */
static mm_kernel_fn tiled_kernel(int tile)
{
#define TILE_CASE_(t) case t: return mm_tiled_kernel<t>;
    switch (tile) {
    CL_MATMUL_TILE_LIST(TILE_CASE_)
    default: return NULL;
    }
#undef TILE_CASE_
}

static int tiled_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    mm_kernel_fn f = tiled_kernel(p->tile);
    if (!f) {
        snprintf(err, CL_ERR_LEN, "no tiled kernel for TILE_WIDTH %d", p->tile);
        return -1;
    }
    out->global_loads = cl_matmul_loads_blocked(p->m, p->n, p->k, p->tile, p->tile);
    snprintf(out->impl, sizeof out->impl, "mm_tiled_kernel<%d>, two __syncthreads per phase", p->tile);
    return mm_describe((const void *)f, mm_grid(p, p->tile, p->tile), dim3(p->tile, p->tile, 1),
                       &out->launch, err);
}

static int tiled_launch(const mm_problem *p, char *err)
{
    mm_kernel_fn f = tiled_kernel(p->tile);
    f<<<mm_grid(p, p->tile, p->tile), dim3(p->tile, p->tile, 1)>>>(p->a, p->b, p->c, p->m, p->n, p->k);
    return mm_launched("mm_tiled_kernel", err);
}

/* For %occupancy --kernel (occupancy.h): the lecture kernels, by the contract's id (and
 * TILE_WIDTH for the tiled one), with static shared memory only; NULL for another. */
extern "C" const void *cl_matmul_kernel_ptr(int variant, int tile, int threads, size_t *dyn)
{
    *dyn = 0;
    if (variant == CL_MATMUL_V_NAIVE)
        return (const void *)mm_naive_kernel;
    if (variant == CL_MATMUL_V_TILED)
        return (const void *)tiled_kernel(tile);
    return NULL;
}

const mm_gpu_impl mm_gpu_tiled = { tiled_prepare, tiled_launch };
