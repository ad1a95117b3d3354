/* matmul_wmma.cu — tensor cores through WMMA, the teaching way in: the inputs
 * rounded to TF32, FP16 or BF16 as the tiles are stored in shared memory (in
 * the kernel, timed), products of 16×16 fragments accumulated in FP32.
 *
 * A block computes a 128×128 tile of C with 8 warps, each warp 64×32 of it
 * as 4×2 accumulator fragments of 16×16 (64 registers a thread), so one
 * fragment of A serves 2 products and one of B serves 4. 16-deep slices of k
 * are staged as in fast: the next slice is loaded into registers while this
 * one is multiplied out, then rounded and stored into the other of two shared
 * buffers, one __syncthreads per slice. Rows of the tiles are padded by 16
 * bytes so that the fragment loads, which read 8 rows at once, spread over
 * the banks.
 *
 * WMMA's fragments must be stored whole, and C has any m, n (and any
 * alignment): each warp stores an accumulator into its own 16×16 patch of
 * shared memory and copies the part inside m×n to C. Tiles outside A or B load
 * zeros, with scalar loads where rows are not 16-byte aligned.
 *
 * FP16 fragments exist from sm_70; TF32 and BF16 from sm_80: their kernels
 * trap below it and the runner refuses such devices first (CL_MATMUL_SM80).
 * The Hopper way (wgmma, asynchronous warpgroup MMA fed by TMA) is another
 * variant's.
 */
#include <mma.h>
#include <stdio.h>

#include "matmul_cuda.h"
#include "matmul_device.h"

using namespace nvcuda;

/* TF32 and BF16 fragments are declared for sm_80 and the host pass only. */
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define MM_WMMA_SM80 1
#endif

enum mm_wmma_format { MM_WMMA_TF32, MM_WMMA_FP16, MM_WMMA_BF16 };

/* show-source: matmul wmma-tf32,wmma-fp16,wmma-bf16 */
/* Per format: what shared memory holds (elem), the fragment's element type
 * (frag), the depth of one product (K) and the rounding of an input. */
template <int F>
struct mm_wmma_fmt;

template <>
struct mm_wmma_fmt<MM_WMMA_FP16> {
    typedef __half elem;
    typedef __half frag;
    static constexpr int K = 16;
    static __device__ __forceinline__ elem round(float x) { return __float2half_rn(x); }
};

#ifdef MM_WMMA_SM80
template <>
struct mm_wmma_fmt<MM_WMMA_BF16> {
    typedef __nv_bfloat16 elem;
    typedef __nv_bfloat16 frag;
    static constexpr int K = 16;
    static __device__ __forceinline__ elem round(float x) { return __float2bfloat16_rn(x); }
};

/* TF32 is a float with its low 13 bits zero: rounded once here (to nearest,
 * ties away), the fragments loaded from these floats need no conversion. */
template <>
struct mm_wmma_fmt<MM_WMMA_TF32> {
    typedef float elem;
    typedef wmma::precision::tf32 frag;
    static constexpr int K = 8;
    static __device__ __forceinline__ elem round(float x) { return wmma::__float_to_tf32(x); }
};
#endif

/* Four rounded inputs, as they are stored: one 8-byte store for FP16 and BF16, one 16-byte store for TF32. */
template <class T>
struct alignas(4 * sizeof(typename T::elem)) mm_wmma_quad {
    typename T::elem v[4];
};

#define MM_WMMA_BM 128
#define MM_WMMA_BN 128
#define MM_WMMA_BK 16
#define MM_WMMA_THREADS 256

template <int F>
__device__ __forceinline__ void mm_wmma_body(const float *__restrict__ A, const float *__restrict__ B,
                                             float *__restrict__ C, int m, int n, int k)
{
    typedef mm_wmma_fmt<F> T;
    typedef typename T::elem E;
    constexpr int BM = MM_WMMA_BM, BN = MM_WMMA_BN, BK = MM_WMMA_BK, THREADS = MM_WMMA_THREADS;
    constexpr int WM = 64, WN = 32, FM = WM / 16, FN = WN / 16;         /* 2×4 warps */
    constexpr int LDA = BK + 16 / sizeof(E), LDB = BN + 16 / sizeof(E);  /* rows padded by 16 bytes */
    constexpr int LOADS_A = BM * BK / (4 * THREADS), LOADS_B = BK * BN / (4 * THREADS);
    constexpr int BUF = BM * LDA + BK * LDB;                             /* elements per buffer */
    static_assert(2 * BUF * sizeof(E) >= 8 * 256 * sizeof(float), "C's patches fit in the buffers");
    __shared__ __align__(128) unsigned char smem[2 * BUF * sizeof(E)];
    E *const tiles = reinterpret_cast<E *>(smem);

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const bool vec_a = (k & 3) == 0, vec_b = (n & 3) == 0;
    float4 ra[LOADS_A], rb[LOADS_B];
    wmma::fragment<wmma::accumulator, 16, 16, T::K, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int j = 0; j < FN; j++)
            wmma::fill_fragment(acc[i][j], 0.0f);

    auto round4 = [](float4 v) {
        mm_wmma_quad<T> q = {{T::round(v.x), T::round(v.y), T::round(v.z), T::round(v.w)}};
        return q;
    };
    /* the next slice into registers as it is in memory (rounding it here would wait for the loads) ... */
    auto load = [&](int k0) {
#pragma unroll
        for (int l = 0; l < LOADS_A; l++) {
            int f = tid + l * THREADS;
            ra[l] = mm_load4(A, m, k, bm + f / (BK / 4), k0 + f % (BK / 4) * 4, vec_a);
        }
#pragma unroll
        for (int l = 0; l < LOADS_B; l++) {
            int f = tid + l * THREADS;
            rb[l] = mm_load4(B, k, n, k0 + f / (BN / 4), bn + f % (BN / 4) * 4, vec_b);
        }
    };
    /* ... then rounded into shared buffer buf */
    auto store = [&](int buf) {
        E *As = tiles + buf * BUF, *Bs = As + BM * LDA;
#pragma unroll
        for (int l = 0; l < LOADS_A; l++) {
            int f = tid + l * THREADS;
            *reinterpret_cast<mm_wmma_quad<T> *>(As + f / (BK / 4) * LDA + f % (BK / 4) * 4) = round4(ra[l]);
        }
#pragma unroll
        for (int l = 0; l < LOADS_B; l++) {
            int f = tid + l * THREADS;
            *reinterpret_cast<mm_wmma_quad<T> *>(Bs + f / (BN / 4) * LDB + f % (BN / 4) * 4) = round4(rb[l]);
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
        const E *As = tiles + cur * BUF, *Bs = As + BM * LDA;
#pragma unroll 1                    /* TF32's two steps, unrolled, would spill registers */
        for (int kk = 0; kk < BK; kk += T::K) {
            /* B's fragments held, A's one at a time: fewer registers beside the accumulators */
            wmma::fragment<wmma::matrix_b, 16, 16, T::K, typename T::frag, wmma::row_major> fb[FN];
#pragma unroll
            for (int j = 0; j < FN; j++)
                wmma::load_matrix_sync(fb[j], Bs + kk * LDB + wn + j * 16, LDB);
#pragma unroll
            for (int i = 0; i < FM; i++) {
                wmma::fragment<wmma::matrix_a, 16, 16, T::K, typename T::frag, wmma::row_major> fa;
                wmma::load_matrix_sync(fa, As + (wm + i * 16) * LDA + kk, LDA);
#pragma unroll
                for (int j = 0; j < FN; j++)
                    wmma::mma_sync(acc[i][j], fa, fb[j], acc[i][j]);
            }
        }
        if (s + 1 < slices)
            store(cur ^ 1);
        __syncthreads();
    }

    /* C through one 16×16 patch of shared memory per warp (the tiles are free now) */
    float *patch = reinterpret_cast<float *>(smem) + warp * 256;
#pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int j = 0; j < FN; j++) {
            wmma::store_matrix_sync(patch, acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            const int row0 = bm + wm + i * 16 + lane / 16, col = bn + wn + j * 16 + lane % 16;
#pragma unroll 1
            for (int r = 0; r < 16; r += 2)     /* a row of 16 per half-warp, rolled: few registers */
                if (row0 + r < m && col < n)
                    C[(size_t)(row0 + r) * n + col] = patch[(lane / 16 + r) * 16 + lane % 16];
            __syncwarp();
        }
}

template <int F>
__global__ void __launch_bounds__(MM_WMMA_THREADS, 2)
mm_wmma_kernel(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int m, int n, int k)
{
#ifdef MM_WMMA_SM80
    mm_wmma_body<F>(A, B, C, m, n, k);
#else
    if constexpr (F == MM_WMMA_FP16)
        mm_wmma_body<F>(A, B, C, m, n, k);
    else
        __trap();                   /* never launched: the runner refuses devices below 8.0 */
#endif
}
/* show-source: end */

/* ---- the variants ---- */

static const char *const wmma_what[] = {
    [MM_WMMA_TF32] = "TF32 (rounded to nearest, ties away) 16×16×8",
    [MM_WMMA_FP16] = "FP16 (rounded to nearest even) 16×16×16",
    [MM_WMMA_BF16] = "BF16 (rounded to nearest even) 16×16×16",
};

static dim3 wmma_grid(const mm_problem *p)
{
    return mm_grid(p, MM_WMMA_BM, MM_WMMA_BN);
}

template <int F>
static int wmma_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    out->global_loads = cl_matmul_loads_blocked(p->m, p->n, p->k, MM_WMMA_BM, MM_WMMA_BN);
    snprintf(out->impl, sizeof out->impl, "mm_wmma_kernel: %d threads, %s fragments, FP32 accumulators, "
             "4×2 per warp", MM_WMMA_THREADS, wmma_what[F]);
    return mm_describe((const void *)mm_wmma_kernel<F>, wmma_grid(p), dim3(MM_WMMA_THREADS, 1, 1), &out->launch, err);
}

template <int F>
static int wmma_launch(const mm_problem *p, char *err)
{
    mm_wmma_kernel<F><<<wmma_grid(p), MM_WMMA_THREADS>>>(p->a, p->b, p->c, p->m, p->n, p->k);
    return mm_launched("mm_wmma_kernel", err);
}

const mm_gpu_impl mm_gpu_wmma_tf32 = { wmma_prepare<MM_WMMA_TF32>, wmma_launch<MM_WMMA_TF32> };
const mm_gpu_impl mm_gpu_wmma_fp16 = { wmma_prepare<MM_WMMA_FP16>, wmma_launch<MM_WMMA_FP16> };
const mm_gpu_impl mm_gpu_wmma_bf16 = { wmma_prepare<MM_WMMA_BF16>, wmma_launch<MM_WMMA_BF16> };
