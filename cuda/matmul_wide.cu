/* matmul_wide.cu — the `wide` variant of %matmul, the top of the FP32 ladder:
 * the async kernel's pipeline with a block tile twice as wide (128×256) and
 * 16×8 results per thread, which is what takes plain FP32 code from about 80%
 * to about 90% of cuBLAS on an H100, and A's slice carried through registers,
 * which takes it to 95% on an H200.
 *
 * Why wider: with 8×8 per thread, every k a warp reads 4 float4s of shared
 * memory for 64 FMAs a thread, and the shared-memory pipe is nearly as busy
 * as the FMA pipe (on an H100 each 16-byte warp read takes about 3 of its
 * cycles). 16×8 per thread reads 6 float4s for 128 FMAs: a quarter fewer
 * reads per FMA. The price is registers: 128 accumulators, two sets of
 * fragments and A's next slice (about 225 registers a thread), so one block
 * of 256 threads per SM, and its 8 warps hide latency by the independence of
 * their 128 FMAs rather than by numbers.
 *
 * What runs, per block (256 threads, 8 warps as 2 (m) × 4 (n), each warp a
 * 64×64 tile of C, its lanes 4 (m) × 8 (n); a thread's 16×8 is four rows of
 * 4×4 blocks 16 rows apart, two columns of them 32 apart, so that a warp's
 * fragment reads are 64 or 128 contiguous bytes, the others broadcasts):
 *  - 2 stages of 32-deep slices in dynamic shared memory (97 KiB). Slice s+1
 *    is copied with cp.async while slice s is multiplied out (4 µs of FMAs
 *    on an H100: time enough for the copies); one cp.async.wait_group and one
 *    __syncthreads per slice.
 *  - B's slice is copied as it is, 16 bytes per copy. A's slice is stored
 *    transposed (k-major, rows padded by 4 floats), so a thread's 16 values
 *    of A for one k are four float4 reads. cp.async cannot transpose 16
 *    bytes, so A goes through registers: at the start of slice s each thread
 *    loads four float4 of slice s+1 (16 floats of k of one row; two threads
 *    a row, a warp 16 whole 32-byte rows of sectors), and at its end stores
 *    them to their transposed places (a warp's 32 stores land in 32 different
 *    banks: 132 ≡ 4 mod 32). Copying A in 4-byte cp.asyncs instead, 16 a
 *    thread a slice, kept the load/store queues full (ncu on an H200 at
 *    4096³: lg_throttle and mio_throttle stalls, issue slots 74.5% busy
 *    against cuBLAS's 88%) and ran at 91.1% of cuBLAS; through registers,
 *    95.3%. The EDGES instance keeps the 4-byte cp.asyncs, whose zero-fill
 *    needs no bounds arithmetic in registers and whose rows need no 16-byte
 *    alignment (k not a multiple of 4).
 *  - Fragments are double-buffered in registers: the 16 + 8 values of k+1
 *    are read from shared memory before the 128 FMAs of k, so no FMA waits
 *    on a shared load. The FMAs go column by column (each value of B meets
 *    the 16 of A): the compiler then needs about 210 registers (225 with
 *    A's 16), not 255. At 4096³ on an H100, 32-deep slices in 2 stages in this order ran 1.5%
 *    faster than 16-deep slices in 3 stages, and 3% faster than the same
 *    slices row by row.
 * Edges: where m is not a multiple of 128, n of 256 or k of 32, the EDGES
 * instance runs: its copies outside A or B zero-fill (cp.async's source size
 * 0) and C is written only inside m×n. The other instance tests no bounds.
 */
#include <stdio.h>

#include "matmul_cuda.h"
#include "matmul_device.h"

/* show-source: matmul wide like async */
/* show-source: matmul wide */
#define MMWD_BM 128                 /* rows of C per block */
#define MMWD_BN 256                 /* columns of C per block */
#define MMWD_BK 32                  /* k per slice */
#define MMWD_STAGES 2               /* A's registers hold one slice ahead: two stages exactly */
#define MMWD_THREADS 256            /* 8 warps: 2 (m) × 4 (n), each 64×64 of C */
#define MMWD_WARPS_N 4
#define MMWD_TM 16                  /* rows of C per thread: 4 blocks of 4, 16 apart */
#define MMWD_TN 8                   /* columns per thread: 2 blocks of 4, 32 apart */
#define MMWD_AS_LD (MMWD_BM + 4)    /* A's transposed slice: a row per k, padded */
#define MMWD_A_STAGE (MMWD_BK * MMWD_AS_LD)
#define MMWD_STAGE (MMWD_A_STAGE + MMWD_BK * MMWD_BN)      /* floats */
#define MMWD_SMEM (MMWD_STAGES * MMWD_STAGE * 4)            /* bytes */
#define MMWD_A_ROWS (MMWD_THREADS / 8)          /* rows of A's slice a pass of copies covers: 8 k a row */
#define MMWD_A_QUADS (MMWD_BM * MMWD_BK / 4 / MMWD_THREADS)  /* float4s of A a thread carries a slice */
#define MMWD_B_ROWS (MMWD_THREADS * 4 / MMWD_BN)    /* rows of B's slice a pass covers: 4 floats a copy */

/* The fragments of one k of a stage: 16 values of A, 8 of B. */
__device__ __forceinline__ void mmwd_fragments(const float *As, const float *Bs, int kk, int a_off, int b_off,
                                               float (&a)[MMWD_TM], float (&b)[MMWD_TN])
{
#pragma unroll
    for (int i = 0; i < MMWD_TM / 4; i++) {
        const float4 v = *reinterpret_cast<const float4 *>(As + kk * MMWD_AS_LD + a_off + i * 16);
        a[4 * i] = v.x, a[4 * i + 1] = v.y, a[4 * i + 2] = v.z, a[4 * i + 3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < MMWD_TN / 4; j++) {
        const float4 v = *reinterpret_cast<const float4 *>(Bs + kk * MMWD_BN + b_off + j * 32);
        b[4 * j] = v.x, b[4 * j + 1] = v.y, b[4 * j + 2] = v.z, b[4 * j + 3] = v.w;
    }
}

template <bool EDGES>
__global__ void __launch_bounds__(MMWD_THREADS, 1)
mm_wide_kernel(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int m, int n, int k)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    __trap();                       /* never launched: the runner refuses devices below 8.0 */
#else
    extern __shared__ __align__(16) float mmwd_stages[];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int bm = blockIdx.y * MMWD_BM, bn = blockIdx.x * MMWD_BN;
    const int a_off = (warp / MMWD_WARPS_N) * 64 + (lane / 8) * 4;     /* this thread's fragments */
    const int b_off = (warp % MMWD_WARPS_N) * 64 + (lane % 8) * 4;
    const bool vec_b = (n & 3) == 0;
    const int slices = (k + MMWD_BK - 1) / MMWD_BK;
    static_assert(MMWD_STAGES == 2, "A's registers carry one slice ahead");

    /* Slice sl into stage st by cp.async. A (EDGES only): this thread copies k = a_k + 8c of rows
     * a_row + A_ROWS·r; B: 16 bytes of rows b_row + B_ROWS·r at column b_col. Without EDGES the
     * source is this thread's first one (slice 0, r = 0) plus constant steps. */
    const int a_row = 4 * warp + lane / 8, a_k = lane % 8;
    const int b_row = tid / (MMWD_BN / 4), b_col = (tid % (MMWD_BN / 4)) * 4;
    const float *const b_src = EDGES ? B : B + (size_t)b_row * n + bn + b_col;
    const size_t b_step = (size_t)MMWD_B_ROWS * n;
    auto copy = [&](int st, int sl) {
        float *As = mmwd_stages + st * MMWD_STAGE, *Bs = As + MMWD_A_STAGE;
        const int k0 = sl * MMWD_BK;
        if (EDGES)
#pragma unroll
            for (int r = 0; r < MMWD_BM / MMWD_A_ROWS; r++)
#pragma unroll
                for (int c = 0; c < MMWD_BK / 8; c++)
                    mm_cp_async1(As + (a_k + 8 * c) * MMWD_AS_LD + a_row + MMWD_A_ROWS * r, A, m, k,
                                 bm + a_row + MMWD_A_ROWS * r, k0 + a_k + 8 * c);
#pragma unroll
        for (int r = 0; r < MMWD_BK / MMWD_B_ROWS; r++) {
            float *dst = Bs + (b_row + MMWD_B_ROWS * r) * MMWD_BN + b_col;
            if (EDGES)
                mm_cp_async4(dst, B, k, n, k0 + b_row + MMWD_B_ROWS * r, bn + b_col, vec_b);
            else
                mm_cp_async16_in(dst, b_src + (size_t)k0 * n + r * b_step);
        }
    };
    /* Without EDGES, A's slice through registers: this thread's row q_row, k = 4·(2r + tid%2) .. +3
     * for r < A_QUADS, loaded a slice ahead (load_a) and stored transposed into a stage (store_a). */
    float4 aq[MMWD_A_QUADS];
    const int q_row = tid / 2;
    const float *const q_src = A + (size_t)(bm + q_row) * k + 4 * (tid % 2);
    auto load_a = [&](int sl) {
#pragma unroll
        for (int r = 0; r < MMWD_A_QUADS; r++)
            aq[r] = __ldg(reinterpret_cast<const float4 *>(q_src + sl * MMWD_BK + 8 * r));
    };
    auto store_a = [&](int st) {
        float *dst = mmwd_stages + st * MMWD_STAGE + 4 * (tid % 2) * MMWD_AS_LD + q_row;
#pragma unroll
        for (int r = 0; r < MMWD_A_QUADS; r++) {
            dst[(8 * r) * MMWD_AS_LD] = aq[r].x;
            dst[(8 * r + 1) * MMWD_AS_LD] = aq[r].y;
            dst[(8 * r + 2) * MMWD_AS_LD] = aq[r].z;
            dst[(8 * r + 3) * MMWD_AS_LD] = aq[r].w;
        }
    };

    float acc[MMWD_TM][MMWD_TN] = {{0.f}};
    float fa[2][MMWD_TM], fb[2][MMWD_TN];
    /* slice 0 into stage 0 (k ≥ 1: there is one) */
    if (!EDGES) {
        load_a(0);
        store_a(0);
    }
    copy(0, 0);
    mm_cp_async_commit();
    mm_cp_async_wait<0>();
    __syncthreads();
    mmwd_fragments(mmwd_stages, mmwd_stages + MMWD_A_STAGE, 0, a_off, b_off, fa[0], fb[0]);

    for (int s = 0, rd = 0; s < slices; s++) {
        /* slice s+1 into the other stage, which slice s-1 used: every read of it came before
         * the last __syncthreads (A: into registers, stored there at the end of this slice) */
        if (s + 1 < slices) {
            if (!EDGES)
                load_a(s + 1);
            copy(rd ^ 1, s + 1);
        }
        mm_cp_async_commit();
        const float *As = mmwd_stages + rd * MMWD_STAGE, *Bs = As + MMWD_A_STAGE;
        rd ^= 1;
#pragma unroll
        for (int kk = 0; kk < MMWD_BK; kk++) {
            if (kk + 1 < MMWD_BK) {
                mmwd_fragments(As, Bs, kk + 1, a_off, b_off, fa[(kk + 1) & 1], fb[(kk + 1) & 1]);
            } else if (s + 1 < slices) {
                if (!EDGES)
                    store_a(rd);
                mm_cp_async_wait<0>();      /* slice s+1 has landed, this thread's part ... */
                __syncthreads();            /* ... and everyone's */
                const float *next = mmwd_stages + rd * MMWD_STAGE;
                mmwd_fragments(next, next + MMWD_A_STAGE, 0, a_off, b_off, fa[0], fb[0]);
            }
#pragma unroll
            for (int j = 0; j < MMWD_TN; j++)
#pragma unroll
                for (int i = 0; i < MMWD_TM; i++)
                    acc[i][j] = fmaf(fa[kk & 1][i], fb[kk & 1][j], acc[i][j]);
        }
    }
    mm_cp_async_wait<0>();

    /* C: rows of 4×4 blocks, a warp's 8 lanes of a row writing 128 contiguous bytes */
#pragma unroll
    for (int i = 0; i < MMWD_TM; i++) {
        const int row = bm + a_off + (i / 4) * 16 + i % 4;
#pragma unroll
        for (int j = 0; j < MMWD_TN / 4; j++) {
            const float4 v = make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
            if (EDGES)
                mm_store4(C, m, n, row, bn + b_off + j * 32, v, vec_b);
            else
                *reinterpret_cast<float4 *>(C + (size_t)row * n + bn + b_off + j * 32) = v;
        }
    }
#endif
}
/* show-source: end */

/* ---- the variant ---- */

static bool wide_edges(const mm_problem *p)
{
    return p->m % MMWD_BM || p->n % MMWD_BN || p->k % MMWD_BK;
}

static int wide_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    const bool edges = wide_edges(p);
    const void *f = edges ? (const void *)mm_wide_kernel<true> : (const void *)mm_wide_kernel<false>;
    out->global_loads = cl_matmul_loads_blocked(p->m, p->n, p->k, MMWD_BM, MMWD_BN);
    snprintf(out->impl, sizeof out->impl, "mm_wide_kernel<%s>: %d threads, 16×8 outputs each, %d stages of "
             "%d-deep slices (%s), fragments double-buffered in registers", edges ? "edges" : "no edges",
             MMWD_THREADS, MMWD_STAGES, MMWD_BK,
             edges ? "A and B by cp.async, A in 4-byte copies" : "B by cp.async, A through registers");
    if (mm_dynamic_smem(f, MMWD_SMEM, err) ||
        mm_describe(f, mm_grid(p, MMWD_BM, MMWD_BN), dim3(MMWD_THREADS, 1, 1), &out->launch, err))
        return -1;
    out->launch.smem_bytes += MMWD_SMEM;
    return 0;
}

static int wide_launch(const mm_problem *p, char *err)
{
    const dim3 grid = mm_grid(p, MMWD_BM, MMWD_BN);
    if (wide_edges(p))
        mm_wide_kernel<true><<<grid, MMWD_THREADS, MMWD_SMEM>>>(p->a, p->b, p->c, p->m, p->n, p->k);
    else
        mm_wide_kernel<false><<<grid, MMWD_THREADS, MMWD_SMEM>>>(p->a, p->b, p->c, p->m, p->n, p->k);
    return mm_launched("mm_wide_kernel", err);
}

const mm_gpu_impl mm_gpu_wide = { wide_prepare, wide_launch };
