/* matmul_wgmma.cu — the `wgmma-tf32` variant of %matmul: Hopper's warpgroup
 * MMA (wgmma) fed by the tensor memory accelerator (TMA), the way cuBLAS and
 * CUTLASS reach the TF32 peak of an H100. Built only for sm_90a: wgmma and
 * setmaxnreg exist only in the arch-specific Hopper target (the Makefile
 * compiles this file for sm_90a where CUDA_ARCHS has 90); every other
 * architecture's image holds a stub, and the runtime refuses the variant
 * before launching anything off an sm_90a image (a probe kernel says which
 * image the driver loaded).
 *
 * What runs, per timed product:
 *  1. Bᵀ: wgmma reads TF32 operands from shared memory only K-major (the
 *     transposing modes are for 16-bit types), and B (k×n, row-major) is
 *     N-major, so a transpose kernel writes Bᵀ (n×k) to a scratch buffer
 *     first. It is part of the variant's time: one more pass over B (at
 *     4096³ about 40 µs of some 350). A (m×k, row-major) is K-major as it is.
 *     Where k is not a multiple of 4 the rows are not 16-byte aligned, as
 *     TMA needs: both copies then get rows of k rounded up to 4, zero-padded
 *     (A through a second copying kernel, also timed).
 *  2. The product: each block (384 threads, one 128×256 tile of C) has three
 *     warpgroups. Warpgroup 0 is the producer: one thread issues the TMA
 *     copies (cp.async.bulk.tensor) of a 128×32 slice of A and a 256×32 slice
 *     of Bᵀ into a 4-stage ring of shared memory, 128-byte swizzled (32
 *     floats = 128 bytes is one swizzle row, so wgmma reads without bank
 *     conflicts). Warpgroups 1 and 2 are consumers: each multiplies its 64
 *     rows of the A slice by the whole B slice with four
 *     wgmma.m64n256k8 (k-step 8 for TF32), accumulating 64×256 floats in
 *     registers (128 per thread). Full/empty mbarriers hand stages between
 *     them: the producer waits until a stage is empty, tells its full
 *     barrier how many bytes to expect, and the TMA completes it; a
 *     consumer waits for full, issues its wgmmas, and once the previous
 *     stage's wgmmas have finished (wgmma.wait_group 1) marks that one empty,
 *     so one stage is always being multiplied while the next ones load.
 *     setmaxnreg moves registers from the producer (40) to the consumers (232).
 *  3. Blocks come in clusters of two: adjacent row tiles of C share their
 *     Bᵀ slice, each loading half of it and multicasting it into both
 *     blocks' shared memory. That halves B's traffic from L2, which a
 *     128×256 tile with k-step 32 otherwise pulls at close to L2's bandwidth
 *     (on an H100 at 4096³, 381 TFLOP/s against 356 without clusters).
 *     Clusters are taken in groups of 8 column tiles (mmw_tile), so that
 *     the blocks running at once share their slices in L2.
 * Edges: TMA fills the parts of a box outside A or Bᵀ with zeros (rows
 * beyond m or n, columns beyond k), so partial tiles need no code; C is
 * written only inside m×n.
 *
 * Precision: the tensor cores multiply the TF32 part of each float (10-bit
 * mantissa; the low 13 bits of A and Bᵀ are not used) and accumulate in FP32,
 * so %matmul labels the run tf32 and checks it with CL_MATMUL_TOL_TF32.
 */
#include <cuda.h>           /* CUtensorMap and its enums (types only: libcuda is not linked) */
#include <cudaTypedefs.h>   /* PFN_cuTensorMapEncodeTiled_v12000 */
#include <limits.h>
#include <stdio.h>

#include "matmul_cuda.h"

/* The block's tile, the pipeline and the warpgroups (the top comment says why). */
#define MMW_BM 128                  /* rows of C per block: two consumer warpgroups × 64 */
#define MMW_BN 256                  /* columns of C per block: one wgmma n256 */
#define MMW_BK 32                   /* k per stage: 32 floats = one 128-byte swizzle row */
#define MMW_STAGES 4
#define MMW_CONSUMERS 2             /* warpgroups issuing wgmma */
#define MMW_THREADS (128 * (MMW_CONSUMERS + 1))
#define MMW_CLUSTER 2               /* blocks (adjacent row tiles) sharing each slice of Bᵀ */
#define MMW_GROUP 8                 /* column tiles walked down together (mmw_tile says why) */
#define MMW_A_BYTES (MMW_BM * MMW_BK * 4)       /* one stage of A: 16 KiB */
#define MMW_B_BYTES (MMW_BN * MMW_BK * 4)       /* one stage of Bᵀ: 32 KiB */
#define MMW_STAGE_BYTES (MMW_A_BYTES + MMW_B_BYTES)
/* the ring, 1 KiB to align it (128-byte swizzling repeats every 1024 bytes, and
 * the descriptors assume it starts on such a boundary), and the 2·STAGES barriers */
#define MMW_SMEM_BYTES (1024 + MMW_STAGES * MMW_STAGE_BYTES + 2 * MMW_STAGES * 8)
/* arrivals that empty a stage: every consumer warp of every block of the cluster */
#define MMW_EMPTY_ARRIVALS (MMW_CONSUMERS * 4 * MMW_CLUSTER)

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* show-source: matmul wgmma-tf32 */
/* ---- Hopper's instructions, as PTX ---- */

__device__ __forceinline__ uint32_t mmw_smem(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void mmw_bar_init(uint32_t bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

/* Arrives on bar (this thread's arrival) and adds bytes to the transfer it waits for. */
__device__ __forceinline__ void mmw_bar_expect(uint32_t bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

/* Waits until the phase of bar with this parity has completed. */
__device__ __forceinline__ void mmw_bar_wait(uint32_t bar, unsigned parity)
{
    /* (PTX statements end at ';': no newlines needed, and --show-source shows the text as is) */
    asm volatile("{ .reg .pred done; "
                 "WAIT: mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1; "
                 "@!done bra WAIT; }" ::"r"(bar), "r"(parity) : "memory");
}

/* One arrival on the barrier at the same offset in every block of the cluster.
 * The arrival keeps the default semantics (release at CTA scope): what it
 * announces is that this warp's wgmmas have finished reading a stage, which
 * wgmma.wait_group already guarantees, and nothing this thread wrote needs to
 * become visible to the other block. `.release.cluster` would compile to a
 * MEMBAR.ALL.GPU before every arrival, which measured 2.2× slower overall. */
__device__ __forceinline__ void mmw_bar_arrive_cluster(uint32_t bar)
{
#pragma unroll
    for (unsigned r = 0; r < MMW_CLUSTER; r++) {
        uint32_t remote;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(r));
        asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
    }
}

__device__ __forceinline__ unsigned mmw_cluster_rank(void)
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

/* Every thread of every block of the cluster (not .aligned: the producer's
 * warp arrives from diverged lanes). */
__device__ __forceinline__ void mmw_cluster_sync(void)
{
    asm volatile("barrier.cluster.arrive; barrier.cluster.wait;" ::: "memory");
}

/* The box of tensor map `map` at (x = column, y = row) into shared memory at
 * dst; its bytes complete the transfer of bar. */
__device__ __forceinline__ void mmw_tma_load(uint32_t dst, const CUtensorMap *map, int x, int y, uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar) : "memory");
}

/* The same box into shared memory at dst (and the bytes to bar) in every block of `mask`. */
__device__ __forceinline__ void mmw_tma_load_multicast(uint32_t dst, const CUtensorMap *map, int x, int y,
                                                       uint32_t bar, uint16_t mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
                 ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar), "h"(mask) : "memory");
}

/* The wgmma descriptor of a K-major operand at smem (bits 0-13: address >> 4)
 * laid out as TMA's 128-byte swizzle leaves it: rows of 128 bytes, groups of
 * 8 rows 1024 bytes apart (stride byte offset, bits 32-45, >> 4), the leading
 * byte offset (bits 16-29) unused in this mode but 1 by convention, swizzle
 * mode 1 = 128 bytes (bits 62-63). Base offset (bits 49-51) 0: the ring is
 * 1024-aligned, and a k-step moves the address by 32 bytes within a row. */
__device__ __forceinline__ uint64_t mmw_desc(uint32_t smem)
{
    return (uint64_t)((smem & 0x3FFFF) >> 4) | (uint64_t)1 << 16 | (uint64_t)(1024 >> 4) << 32 |
           (uint64_t)1 << 62;
}

__device__ __forceinline__ void mmw_wgmma_fence(void)
{
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void mmw_wgmma_commit(void)
{
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

template <int PENDING>
__device__ __forceinline__ void mmw_wgmma_wait(void)
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(PENDING) : "memory");
}

/* Keeps the compiler from moving accesses to the accumulators across the asm
 * around them (the wgmmas write them asynchronously, behind its back). */
__device__ __forceinline__ void mmw_fence_acc(float (&d)[128])
{
#pragma unroll
    for (int i = 0; i < 128; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

/* d (64×256 of C across the warpgroup) += A (64×8 at da) · B (8×256, Bᵀ at db), in TF32. */
__device__ __forceinline__ void mmw_wgmma_m64n256k8(float (&d)[128], uint64_t da, uint64_t db)
{
    asm volatile(
        "{ .reg .pred acc; "
        "setp.ne.b32 acc, %130, 0; "
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {"
        "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,"
        "%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,"
        "%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,"
        "%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,"
        "%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,"
        "%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,"
        "%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, acc, 1, 1; "
        "}"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]),
          "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]),
          "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]),
          "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(1));
}

/* ---- the kernel ---- */

/* The tile of C this block computes, as (column tile, row tile): clusters are
 * launched in row-major order of their position in the grid, and taken in
 * groups of MMW_GROUP column tiles, walking down all row tiles of a group
 * before the next. The blocks running at once then share a few Bᵀ column
 * slices and a band of A, which stay in L2, where row-major order sweeps all
 * of Bᵀ for every band of A (at 8192³: 400 TFLOP/s against 338). The two
 * blocks of a cluster keep the same column tile and adjacent row tiles. */
__device__ __forceinline__ void mmw_tile(int &tile_x, int &tile_y)
{
    const int tiles_x = (int)gridDim.x, cluster_rows = (int)gridDim.y / MMW_CLUSTER;
    const int rank = (int)blockIdx.y % MMW_CLUSTER;
    const int id = (int)blockIdx.y / MMW_CLUSTER * tiles_x + (int)blockIdx.x;  /* the cluster's launch order */
    const int per_group = MMW_GROUP * cluster_rows, first = id / per_group * MMW_GROUP;
    const int cols = min(tiles_x - first, MMW_GROUP), at = id % per_group;
    tile_x = first + at % cols;
    tile_y = at / cols * MMW_CLUSTER + rank;
}

/* Producer: one thread keeps the ring full, MMW_STAGES slices ahead of the consumers. */
__device__ __forceinline__ void mmw_produce(const CUtensorMap *tma_a, const CUtensorMap *tma_bt, uint32_t a_ring,
                                            uint32_t b_ring, uint32_t full, uint32_t empty, int a_row, int b_row,
                                            unsigned rank, int slices)
{
    for (int s = 0; s < slices; s++) {
        const int stage = s % MMW_STAGES;
        if (s >= MMW_STAGES)        /* every consumer warp of the cluster is done with its last use */
            mmw_bar_wait(empty + 8 * stage, (unsigned)(s / MMW_STAGES - 1) & 1);
        /* this block's A slice and both halves of the Bᵀ slice (one from each block) */
        mmw_bar_expect(full + 8 * stage, MMW_STAGE_BYTES);
        mmw_tma_load(a_ring + stage * MMW_A_BYTES, tma_a, s * MMW_BK, a_row, full + 8 * stage);
        const int half = MMW_BN / MMW_CLUSTER;
        if (MMW_CLUSTER == 1)
            mmw_tma_load(b_ring + stage * MMW_B_BYTES, tma_bt, s * MMW_BK, b_row, full + 8 * stage);
        else
            mmw_tma_load_multicast(b_ring + stage * MMW_B_BYTES + rank * half * MMW_BK * 4, tma_bt, s * MMW_BK,
                                   b_row + (int)rank * half, full + 8 * stage, (1u << MMW_CLUSTER) - 1);
    }
}

/* Consumer warpgroup cw: rows cw·64 .. cw·64+63 of the tile, all 256 columns. */
__device__ __forceinline__ void mmw_consume(float (&d)[128], uint32_t a_ring, uint32_t b_ring, uint32_t full,
                                            uint32_t empty, int cw, int slices)
{
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int i = 0; i < 128; i++)
        d[i] = 0.f;
    mmw_fence_acc(d);
    for (int s = 0; s < slices; s++) {
        const int stage = s % MMW_STAGES;
        mmw_bar_wait(full + 8 * stage, (unsigned)(s / MMW_STAGES) & 1);
        __syncwarp();               /* lanes leave the wait loop apart; wgmma needs the warp whole */
        const uint32_t a = a_ring + stage * MMW_A_BYTES + cw * 64 * MMW_BK * 4;
        const uint32_t b = b_ring + stage * MMW_B_BYTES;
        mmw_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < MMW_BK / 8; kk++)     /* k-step 8: 32 bytes along the swizzled rows */
            mmw_wgmma_m64n256k8(d, mmw_desc(a + 32 * kk), mmw_desc(b + 32 * kk));
        mmw_wgmma_commit();
        /* the previous slice's wgmmas have finished reading their stage: it may be refilled */
        mmw_wgmma_wait<1>();
        if (s > 0 && lane == 0)
            mmw_bar_arrive_cluster(empty + 8 * ((s - 1) % MMW_STAGES));
    }
    __syncwarp();
    mmw_wgmma_wait<0>();
    mmw_fence_acc(d);
}

/* The accumulators to C: thread t of warp w holds rows 16w + t/4 and +8, columns
 * 8i + 2(t%4) and +1 for i < 32 (wgmma's f32 fragment), stored in pairs. */
__device__ __forceinline__ void mmw_store(const float (&d)[128], float *__restrict__ C, int m, int n, int row0,
                                          int col0)
{
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int r0 = row0 + 16 * warp + lane / 4, c0 = col0 + 2 * (lane % 4);
    const bool pairs = (n & 1) == 0;    /* 8-byte aligned pairs: col is even, so is every row's start */
#pragma unroll
    for (int i = 0; i < 32; i++) {
        const int col = c0 + 8 * i;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int row = r0 + 8 * h;
            if (row >= m || col >= n)
                continue;
            float *dst = C + (size_t)row * n + col;
            const float v0 = d[4 * i + 2 * h], v1 = d[4 * i + 2 * h + 1];
            if (pairs) {
                *reinterpret_cast<float2 *>(dst) = make_float2(v0, v1);
            } else {
                dst[0] = v0;
                if (col + 1 < n)
                    dst[1] = v1;
            }
        }
    }
}
/* show-source: end */
#endif

/* show-source: matmul wgmma-tf32 */
/* Each block computes one 128×256 tile of C (mmw_tile says which); blocks
 * y = 2c and 2c + 1 form a cluster. tma_a maps A (m × k4, k4 = k rounded
 * up to 4), tma_bt maps Bᵀ (n × k4), both in boxes of 32 floats × rows. */
__global__ void __launch_bounds__(MMW_THREADS, 1)
mm_wgmma_kernel(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_bt,
                float *__restrict__ C, int m, int n, int k)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(1024) unsigned char mmw_shared[];
    const uint32_t a_ring = (mmw_smem(mmw_shared) + 1023u) & ~1023u;
    const uint32_t b_ring = a_ring + MMW_STAGES * MMW_A_BYTES;
    const uint32_t full = b_ring + MMW_STAGES * MMW_B_BYTES, empty = full + 8 * MMW_STAGES;
    const int wg = threadIdx.x / 128, slices = (k + MMW_BK - 1) / MMW_BK;
    int tile_x, tile_y;
    mmw_tile(tile_x, tile_y);
    const int row0 = tile_y * MMW_BM, col0 = tile_x * MMW_BN;

    if (threadIdx.x == 0) {
        for (int s = 0; s < MMW_STAGES; s++) {
            mmw_bar_init(full + 8 * s, 1);              /* the producer's arrive_expect_tx */
            mmw_bar_init(empty + 8 * s, MMW_EMPTY_ARRIVALS);
        }
        /* the barriers visible to the other block's multicasts and arrivals, and to TMA */
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    mmw_cluster_sync();
    __syncwarp();                   /* setmaxnreg below needs whole warps */

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0)
            /* the block that pads an odd number of row tiles to whole clusters still loads
             * (inside A) and multicasts its half of Bᵀ; it stores nothing */
            mmw_produce(&tma_a, &tma_bt, a_ring, b_ring, full, empty, row0 < m ? row0 : 0, col0,
                        mmw_cluster_rank(), slices);
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        float d[128];
        mmw_consume(d, a_ring, b_ring, full, empty, wg - 1, slices);
        mmw_store(d, C, m, n, row0 + (wg - 1) * 64, col0);
    }
    __syncwarp();
    /* no block leaves while the other may still multicast into it or arrive on its barriers */
    mmw_cluster_sync();
#else
    __trap();                       /* not an sm_90a image: the host never launches this */
#endif
}
/* show-source: end */

/* Bᵀ (n × k4, zero beyond k) from B (k × n): 32×32 tiles through shared memory,
 * read and written along rows; block (32, 8). Tile t: k tile t % tiles_k. */
__global__ void mm_wgmma_transpose_kernel(const float *__restrict__ B, float *__restrict__ Bt, int k, int n, int k4,
                                          int tiles_k)
{
    __shared__ float tile[32][33];                  /* +1: the column reads hit 32 banks */
    const int k0 = (blockIdx.x % tiles_k) * 32, n0 = (blockIdx.x / tiles_k) * 32;
    for (int i = threadIdx.y; i < 32; i += 8) {
        const int kk = k0 + i, j = n0 + threadIdx.x;
        tile[i][threadIdx.x] = kk < k && j < n ? B[(size_t)kk * n + j] : 0.f;
    }
    __syncthreads();
    for (int i = threadIdx.y; i < 32; i += 8) {
        const int j = n0 + i, kk = k0 + threadIdx.x;
        if (j < n && kk < k4)
            Bt[(size_t)j * k4 + kk] = tile[threadIdx.x][i];
    }
}

/* A with rows of k4 floats, zero beyond k (only where k is not a multiple of 4). */
__global__ void mm_wgmma_pad_kernel(const float *__restrict__ A, float *__restrict__ Ap, int m, int k, int k4)
{
    const size_t count = (size_t)m * k4, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        const size_t row = i / k4;
        const int col = (int)(i % k4);
        Ap[i] = col < k ? A[row * k + col] : 0.f;
    }
}

/* Writes whether the image the driver loaded for this file is sm_90a. */
__device__ int mmw_sm90a_loaded;

__global__ void mm_wgmma_probe_kernel(void)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    mmw_sm90a_loaded = 1;
#else
    mmw_sm90a_loaded = 0;
#endif
}

/* ---- the host side ---- */

typedef PFN_cuTensorMapEncodeTiled_v12000 mmw_encode_fn;

/* cuTensorMapEncodeTiled through the runtime (no link against libcuda), once. */
static mmw_encode_fn mmw_encoder(char *err)
{
    static mmw_encode_fn fn;
    if (fn)
        return fn;
    void *p = NULL;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    cudaError_t rc = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
#else
    cudaError_t rc = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault, &q);
#endif
    if (rc != cudaSuccess) {
        cl_cuda_fail(err, "looking up cuTensorMapEncodeTiled in the driver", rc);
        return NULL;
    }
    if (q != cudaDriverEntryPointSuccess || !p) {
        snprintf(err, CL_ERR_LEN, "wgmma-tf32: the driver has no cuTensorMapEncodeTiled (TMA needs a CUDA 12 "
                 "driver or later)");
        return NULL;
    }
    fn = (mmw_encode_fn)p;
    return fn;
}

/* Whether this device runs the variant: compute capability 9.0, the sm_90a image
 * loaded (a build without it has only the stub), and enough shared memory. */
static int mmw_usable(char *err)
{
    static int probed_dev = -1, probed_sm90a;
    int dev = 0, major = 0, minor = 0, optin = 0;
    cudaError_t rc = cudaGetDevice(&dev);
    if (rc == cudaSuccess)
        rc = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    if (rc == cudaSuccess)
        rc = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (rc == cudaSuccess)
        rc = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "device attributes", rc);
    if (major != 9 || minor != 0) {
        snprintf(err, CL_ERR_LEN, "wgmma-tf32 needs a Hopper GPU (sm_90a); this is sm_%d%d", major, minor);
        return -1;
    }
    if (probed_dev != dev) {
        int loaded = 0;
        mm_wgmma_probe_kernel<<<1, 1>>>();
        rc = cudaGetLastError();
        if (rc == cudaSuccess)
            rc = cudaMemcpyFromSymbol(&loaded, mmw_sm90a_loaded, sizeof loaded);
        if (rc == cudaErrorNoKernelImageForDevice || rc == cudaErrorInvalidKernelImage) {
            (void)cudaGetLastError();
            loaded = 0;
        } else if (rc != cudaSuccess) {
            return cl_cuda_fail(err, "probing the wgmma-tf32 image", rc);
        }
        probed_dev = dev, probed_sm90a = loaded;
    }
    if (!probed_sm90a) {
        snprintf(err, CL_ERR_LEN, "wgmma-tf32: this build has no sm_90a code (built without sm_90a: CUDA_ARCHS "
                 "lacked 90); rebuild with make CUDA_ARCHS=90");
        return -1;
    }
    if (optin < MMW_SMEM_BYTES) {
        snprintf(err, CL_ERR_LEN, "wgmma-tf32 needs %d bytes of shared memory per block; this device allows %d",
                 MMW_SMEM_BYTES, optin);
        return -1;
    }
    return mmw_encoder(err) ? 0 : -1;
}

static int mmw_k4(const mm_problem *p)
{
    return (p->k + 3) & ~3;
}

/* Row tiles rounded up to whole clusters, column tiles. */
static dim3 mmw_grid(const mm_problem *p)
{
    unsigned tiles_m = (unsigned)((p->m + MMW_BM - 1) / MMW_BM);
    tiles_m = (tiles_m + MMW_CLUSTER - 1) / MMW_CLUSTER * MMW_CLUSTER;
    return dim3((unsigned)((p->n + MMW_BN - 1) / MMW_BN), tiles_m, 1);
}

/* Bᵀ (n × k4), then A padded (m × k4) where k4 != k: allocated by the runner with A, B and C. */
static size_t wgmma_scratch(const mm_problem *p)
{
    size_t k4 = (size_t)mmw_k4(p);
    return ((size_t)p->n * k4 + (k4 != (size_t)p->k ? (size_t)p->m * k4 : 0)) * sizeof(float);
}

static int wgmma_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    if (mmw_usable(err))
        return -1;
    cudaError_t rc = cudaFuncSetAttribute(mm_wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          MMW_SMEM_BYTES);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaFuncSetAttribute (dynamic shared memory of mm_wgmma_kernel)", rc);
    bool padded = mmw_k4(p) != p->k;
    /* A once per column tile, Bᵀ once per cluster of row tiles, B once more for the
     * transpose (and A for the padded copy) */
    out->global_loads = cl_matmul_loads_blocked(p->m, p->n, p->k, MMW_BM * MMW_CLUSTER, MMW_BN) +
                        (double)p->k * p->n + (padded ? (double)p->m * p->k : 0);
    snprintf(out->impl, sizeof out->impl, "%smm_wgmma_kernel: wgmma m64n256k8 TF32 from a 4-stage TMA ring, "
             "1 TMA + 2 MMA warpgroups", padded ? "Bᵀ, A padded, " : "Bᵀ, then ");
    if (mm_describe((const void *)mm_wgmma_kernel, mmw_grid(p), dim3(MMW_THREADS, 1, 1), &out->launch, err))
        return -1;
    out->launch.smem_bytes += MMW_SMEM_BYTES;
    out->launch.kernels = padded ? 3 : 2;
    return 0;
}

/* A 2-D tensor map of rows × k4 floats (row-major, 16-byte aligned rows) in boxes
 * of 32 floats × box_rows, 128-byte swizzled; zeros outside. */
static int mmw_map(CUtensorMap *map, const float *base, int rows, int k4, int box_rows, const char *what, char *err)
{
    mmw_encode_fn encode = mmw_encoder(err);
    if (!encode)
        return -1;
    cuuint64_t dims[2] = { (cuuint64_t)k4, (cuuint64_t)rows };
    cuuint64_t strides[1] = { (cuuint64_t)k4 * sizeof(float) };
    cuuint32_t box[2] = { MMW_BK, (cuuint32_t)box_rows };
    cuuint32_t steps[2] = { 1, 1 };
    CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)base, dims, strides, box, steps,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        snprintf(err, CL_ERR_LEN, "cuTensorMapEncodeTiled (%s, %d × %d floats): CUresult %d", what, rows, k4, (int)r);
        return -1;
    }
    return 0;
}

/* show-source: matmul wgmma-tf32 */
static int wgmma_launch(const mm_problem *p, char *err)
{
    const int k4 = mmw_k4(p);
    float *bt = (float *)p->scratch;
    float *ap = k4 != p->k ? bt + (size_t)p->n * k4 : NULL;

    long long tiles_k = (k4 + 31) / 32, tiles = tiles_k * ((p->n + 31) / 32);
    if (tiles > INT_MAX) {
        snprintf(err, CL_ERR_LEN, "wgmma-tf32: Bᵀ takes %lld blocks of 32×32, more than a grid holds", tiles);
        return -1;
    }
    mm_wgmma_transpose_kernel<<<(unsigned)tiles, dim3(32, 8, 1)>>>(p->b, bt, p->k, p->n, k4, (int)tiles_k);
    if (mm_launched("mm_wgmma_transpose_kernel (Bᵀ)", err))
        return -1;
    if (ap) {
        long long blocks = ((long long)p->m * k4 + 255) / 256;
        mm_wgmma_pad_kernel<<<(unsigned)(blocks < 65536 ? blocks : 65536), 256>>>(p->a, ap, p->m, p->k, k4);
        if (mm_launched("mm_wgmma_pad_kernel (A with rows of a multiple of 4)", err))
            return -1;
    }

    CUtensorMap tma_a, tma_bt;
    if (mmw_map(&tma_a, ap ? ap : p->a, p->m, k4, MMW_BM, "A", err) ||
        mmw_map(&tma_bt, bt, p->n, k4, MMW_BN / MMW_CLUSTER, "Bᵀ", err))
        return -1;
    cudaLaunchAttribute cluster[1];
    cluster[0].id = cudaLaunchAttributeClusterDimension;
    cluster[0].val.clusterDim.x = 1;
    cluster[0].val.clusterDim.y = MMW_CLUSTER;
    cluster[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = mmw_grid(p);
    cfg.blockDim = dim3(MMW_THREADS, 1, 1);
    cfg.dynamicSmemBytes = MMW_SMEM_BYTES;
    cfg.stream = 0;
    cfg.attrs = cluster;
    cfg.numAttrs = 1;
    cudaError_t rc = cudaLaunchKernelEx(&cfg, mm_wgmma_kernel, tma_a, tma_bt, p->c, p->m, p->n, p->k);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "launching mm_wgmma_kernel", rc);
    return mm_launched("mm_wgmma_kernel", err);
}
/* show-source: end */

const mm_gpu_impl mm_gpu_wgmma_tf32 = { wgmma_prepare, wgmma_launch, wgmma_scratch };
