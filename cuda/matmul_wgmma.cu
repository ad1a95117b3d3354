/* matmul_wgmma.cu — the `wgmma-tf32`, `wgmma-fp16` and `wgmma-bf16` variants
 * of %matmul: Hopper's warpgroup MMA (wgmma) fed by the tensor memory
 * accelerator (TMA), the way cuBLAS and CUTLASS reach the tensor-core peak of
 * an H100. One kernel, a template on the element type the tensor cores read
 * (float for TF32, __half, __nv_bfloat16): a slice of k is one 128-byte
 * swizzle row whatever the type (32 floats or 64 halves), so the ring, the
 * descriptors and the 32-byte k-steps are the same, and only the wgmma
 * instruction (m64n256k8 for TF32, m64n256k16 for 16-bit types), the
 * tensor maps' element type and where TF32 takes one operand from differ.
 * Built only for sm_90a: wgmma and setmaxnreg exist only in the
 * arch-specific Hopper target (the Makefile compiles this file for sm_90a
 * where CUDA_ARCHS has 90); every other architecture's image holds a stub,
 * and the runtime refuses the variant before launching anything off an
 * sm_90a image (a probe kernel says which image the driver loaded).
 *
 * wgmma multiplies M (64 rows a warpgroup) by N (up to 256 columns), and
 * reads its N operand from shared memory only K-major (k contiguous) for TF32;
 * its M operand may come from shared memory, K-major too, or from registers,
 * in any order the threads load them. A (m×k, row-major) is K-major, and B
 * (k×n, row-major) is N-major. So:
 *  - FP16 and BF16 compute C = A·B with both operands in shared memory:
 *    the inputs are FP32 and must be converted anyway, and the pass that
 *    converts B also transposes it into Bᵀ (n×k), K-major; A is converted
 *    (rows of k rounded up to 8). Both passes are timed
 *    (matmul_wgmma_stage.cu; cublas-fp16 and cublas-bf16 convert A and B
 *    inside their time too).
 *  - TF32 computes Cᵀ = Bᵀ·Aᵀ: A, K-major as it is, is the N operand in
 *    shared memory, and B is the M operand, loaded by each consumer thread
 *    from the TMA's boxes into its fragment registers (mmw_frag_col), so B
 *    needs no transposing pass. The SS form with a timed Bᵀ pass ran at
 *    88.8% of cublas-tf32 at 4096³ on an H200, the pass about 9% of that.
 *    Where k (or n) is not a multiple of 4, A's (or B's) rows are not
 *    16-byte aligned, as TMA needs: a copying kernel (timed) pads them
 *    with zeros.
 *
 * The product: each block (384 threads, one 128×256 tile of the product
 * the kernel sees: C, or for TF32 Cᵀ, i.e. 256 rows × 128 columns of C) has
 * three warpgroups. Warpgroup 0 is the producer: one thread issues the TMA
 * copies (cp.async.bulk.tensor) of a 128-row slice of the M operand and a
 * 256-row slice of the N operand, 128 bytes of k each, into a 4-stage ring
 * of shared memory, 128-byte swizzled (one swizzle row a slice row, so
 * wgmma reads without bank conflicts; for TF32's B, 32 k-rows of 32 columns
 * a box, which the fragment loads read without conflicts either).
 * Warpgroups 1 and 2 are consumers: each multiplies its 64 rows of the M
 * slice by the whole N slice with four wgmma m64n256 (k-step 8 for TF32, 16
 * for 16-bit types), accumulating 64×256 floats in registers (128 per
 * thread). Full/empty mbarriers hand stages between them: the producer waits
 * until a stage is empty, tells its full barrier how many bytes to expect,
 * and the TMA completes it; a consumer waits for full, issues its wgmmas,
 * and once the previous stage's wgmmas have finished (wgmma.wait_group 1)
 * marks that one empty, so one stage is always being multiplied while the
 * next ones load. setmaxnreg moves registers from the producer (40) to the
 * consumers (232).
 * Blocks come in clusters of two: adjacent row tiles share their slice of
 * the N operand, each loading half of it and multicasting it into both
 * blocks' shared memory. That halves its traffic from L2, which a 128×256
 * tile with k-step 32 otherwise pulls at close to L2's bandwidth (on an
 * H100 at 4096³, 381 TFLOP/s against 356 without clusters). Clusters are
 * taken in groups of 8 column tiles (mmw_tile), so that the blocks running
 * at once share their slices in L2.
 * The kernel is persistent: as many clusters as fit at once are launched,
 * and each walks the cluster tiles c, c + P, …; the producer runs on into
 * the next tile's slices while the consumers store the last one's C (on an
 * H200 at 4096³: wgmma-fp16 from 92.3% to 93.4% of cublas-fp16, wgmma-bf16
 * from 92.3% to 94.0%, a block a tile before).
 * Edges: TMA fills the parts of a box outside its matrix with zeros (rows
 * beyond m or n, columns beyond k), so partial tiles need no code; C is
 * written only inside m×n.
 *
 * Precision: the tensor cores multiply the TF32 part of each float (10-bit
 * mantissa; the low 13 bits of A and B are not used), or the FP16 or BF16
 * values the staging pass rounded to nearest even, and accumulate in FP32,
 * so %matmul labels the run tf32, fp16 or bf16 and checks it with that
 * format's tolerance (cl_matmul_tolerance).
 */
#include <cuda.h>           /* CUtensorMap and its enums (types only: libcuda is not linked) */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudaTypedefs.h>   /* PFN_cuTensorMapEncodeTiled_v12000 */
#include <limits.h>
#include <stdio.h>

#include "matmul_cuda.h"

/* The block's tile, the pipeline and the warpgroups (the top comment says why). */
#define MMW_BM 128                  /* rows of C per block: two consumer warpgroups × 64 */
#define MMW_BN 256                  /* columns of C per block: one wgmma n256 */
#define MMW_ROW 128                 /* bytes of k per stage: one 128-byte swizzle row */
#define MMW_BK(E) (MMW_ROW / (int)sizeof(E))   /* k per stage: 32 floats, 64 halves */
#define MMW_STAGES 4
#define MMW_CONSUMERS 2             /* warpgroups issuing wgmma */
#define MMW_THREADS (128 * (MMW_CONSUMERS + 1))
#define MMW_CLUSTER 2               /* blocks (adjacent row tiles) sharing each slice of the N operand */
#define MMW_GROUP 8                 /* column tiles walked down together (mmw_tile says why) */
#define MMW_A_BYTES (MMW_BM * MMW_ROW)          /* one stage of the M operand (A; TF32: B): 16 KiB */
#define MMW_B_BYTES (MMW_BN * MMW_ROW)          /* one stage of the N operand (Bᵀ; TF32: A): 32 KiB */
#define MMW_BOX_BYTES (32 * MMW_ROW)            /* TF32's boxes of B: 32 rows of k × 32 columns */
#define MMW_M_BOXES (MMW_BM / 32)               /* of them in a stage */
#define MMW_STAGE_BYTES (MMW_A_BYTES + MMW_B_BYTES)
/* the ring, 1 KiB to align it (128-byte swizzling repeats every 1024 bytes, and
 * the descriptors assume it starts on such a boundary), and the 2·STAGES barriers */
#define MMW_SMEM_BYTES (1024 + MMW_STAGES * MMW_STAGE_BYTES + 2 * MMW_STAGES * 8)
/* arrivals that empty a stage: every consumer warp of every block of the cluster */
#define MMW_EMPTY_ARRIVALS (MMW_CONSUMERS * 4 * MMW_CLUSTER)

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* show-source: matmul wgmma-tf32,wgmma-fp16,wgmma-bf16 */
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

/* The accumulators of a wgmma m64n256 with FP32 results: 128 registers a thread, as the
 * instruction's text names them and as asm operands 0-127. */
#define MMW_D_TEXT \
    "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26," \
    "%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50," \
    "%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74," \
    "%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98," \
    "%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118," \
    "%119,%120,%121,%122,%123,%124,%125,%126,%127"
#define MMW_D_OPERANDS(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
    "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
    "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
    "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
    "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
    "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
    "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
    "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
    "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
    "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

/* d (64×256 of C across the warpgroup) += A (64×16 at da) · B (16×256, Bᵀ at db), both K-major
 * in shared memory, for E's wgmma (FP16 or BF16: 32 bytes of k). Its immediates after scale-d:
 * scale A, scale B, transpose A, transpose B (0: K-major as TMA left them). */
template <class E>
__device__ __forceinline__ void mmw_wgmma(float (&d)[128], uint64_t da, uint64_t db);

#define MMW_WGMMA(E, shape)                                                                                    \
template <>                                                                                                    \
__device__ __forceinline__ void mmw_wgmma<E>(float (&d)[128], uint64_t da, uint64_t db)                       \
{                                                                                                              \
    asm volatile("{ .reg .pred acc; setp.ne.b32 acc, %130, 0; "                                               \
                 "wgmma.mma_async.sync.aligned." shape " {" MMW_D_TEXT "}, %128, %129, acc, 1, 1, 0, 0; }"      \
                 : MMW_D_OPERANDS(d)                                                                           \
                 : "l"(da), "l"(db), "r"(1));                                                                  \
}
MMW_WGMMA(__half, "m64n256k16.f32.f16.f16")
MMW_WGMMA(__nv_bfloat16, "m64n256k16.f32.bf16.bf16")
#undef MMW_WGMMA

/* d (64×256 of Cᵀ across the warpgroup) += a (64×8 of Bᵀ as TF32 fragments in registers: a[0..3] of
 * this thread, laid out as mmw_frag_col says) · Aᵀ (8×256, A K-major in shared memory at db). */
__device__ __forceinline__ void mmw_wgmma_tf32_regs(float (&d)[128], const uint32_t *a, uint64_t db)
{
    asm volatile("{ .reg .pred acc; setp.ne.b32 acc, %133, 0; "
                 "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {" MMW_D_TEXT "}, "
                 "{%128, %129, %130, %131}, %132, acc, 1, 1; }"
                 : MMW_D_OPERANDS(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

/* ---- the kernel ---- */

/* The tile this block computes for cluster tile `id`, as (column tile, row tile) of the product the
 * kernel sees (C, or Cᵀ for TF32): the clusters running at once take consecutive ids, and ids go
 * through the tiles in groups of MMW_GROUP column tiles, walking down all row tiles of a group
 * before the next. The blocks running at once then share a few slices of the N operand and a band of
 * the M operand, which stay in L2, where row-major order sweeps the whole N operand for every band
 * (at 8192³: 400 TFLOP/s against 338). The two blocks of a cluster keep the same column tile and
 * adjacent row tiles. */
__device__ __forceinline__ void mmw_tile(int id, int tiles_x, int cluster_rows, int rank, int &tile_x, int &tile_y)
{
    const int per_group = MMW_GROUP * cluster_rows, first = id / per_group * MMW_GROUP;
    const int cols = min(tiles_x - first, MMW_GROUP), at = id % per_group;
    tile_x = first + at % cols;
    tile_y = at / cols * MMW_CLUSTER + rank;
}

/* Producer: one thread keeps the ring full, MMW_STAGES slices ahead of the consumers, across the
 * tiles of the block (it: the slices the ring has taken so far, which say the stage and phase).
 * A slice is this block's 128 rows of the M operand (A's rows: one box; for TF32 B's columns:
 * MMW_M_BOXES boxes of 32 columns × 32 rows of k, read by the consumers into registers) and the
 * cluster's 256 rows of the N operand (Bᵀ, or for TF32 A), half loaded by each block and
 * multicast to both. */
template <class E, bool M_FROM_REGS>
__device__ __forceinline__ void mmw_produce(const CUtensorMap *tma_m, const CUtensorMap *tma_n, uint32_t m_ring,
                                            uint32_t n_ring, uint32_t full, uint32_t empty, int m_row, int n_row,
                                            unsigned rank, int slices, unsigned &it)
{
    for (int s = 0; s < slices; s++, it++) {
        const int stage = (int)(it % MMW_STAGES);
        if (it >= MMW_STAGES)       /* every consumer warp of the cluster is done with its last use */
            mmw_bar_wait(empty + 8 * stage, (it / MMW_STAGES - 1) & 1);
        mmw_bar_expect(full + 8 * stage, MMW_STAGE_BYTES);
        if constexpr (M_FROM_REGS)
#pragma unroll
            for (int box = 0; box < MMW_M_BOXES; box++)
                mmw_tma_load(m_ring + stage * MMW_A_BYTES + box * MMW_BOX_BYTES, tma_m, m_row + box * MMW_BK(E),
                             s * MMW_BK(E), full + 8 * stage);
        else
            mmw_tma_load(m_ring + stage * MMW_A_BYTES, tma_m, s * MMW_BK(E), m_row, full + 8 * stage);
        const int half = MMW_BN / MMW_CLUSTER;
        if (MMW_CLUSTER == 1)
            mmw_tma_load(n_ring + stage * MMW_B_BYTES, tma_n, s * MMW_BK(E), n_row, full + 8 * stage);
        else
            mmw_tma_load_multicast(n_ring + stage * MMW_B_BYTES + rank * half * MMW_ROW, tma_n, s * MMW_BK(E),
                                   n_row + (int)rank * half, full + 8 * stage, (1u << MMW_CLUSTER) - 1);
    }
}

/* The stage the consumers release once the wgmmas reading it have finished: every consumer warp of
 * the cluster arrives (lane 0 for its warp). */
__device__ __forceinline__ void mmw_release(uint32_t empty, unsigned it)
{
    if (threadIdx.x % 32 == 0)
        mmw_bar_arrive_cluster(empty + 8 * (it % MMW_STAGES));
}

/* A consumer's tile starts: its accumulators zero. */
__device__ __forceinline__ void mmw_tile_start(float (&d)[128])
{
#pragma unroll
    for (int i = 0; i < 128; i++)
        d[i] = 0.f;
    mmw_fence_acc(d);
}

/* Waits until slice `it` is in its stage of the ring; returns the stage. */
__device__ __forceinline__ int mmw_slice_ready(uint32_t full, unsigned it)
{
    const int stage = (int)(it % MMW_STAGES);
    mmw_bar_wait(full + 8 * stage, (it / MMW_STAGES) & 1);
    __syncwarp();                   /* lanes leave the wait loop apart; wgmma needs the warp whole */
    return stage;
}

/* A consumer's tile ends: its last wgmmas done, their accumulators d, their stage (slice it - 1) released. */
__device__ __forceinline__ void mmw_tile_end(float (&d)[128], uint32_t empty, unsigned it)
{
    __syncwarp();
    mmw_wgmma_wait<0>();
    mmw_fence_acc(d);
    mmw_release(empty, it - 1);
}

/* Consumer warpgroup cw: rows cw·64 .. cw·64+63 of the tile, all 256 columns (it: as for the
 * producer). Every stage it reads is marked empty once its wgmmas are done, the tile's last one too,
 * so that the producer fills the ring for the block's next tile while this one is stored. */
template <class E>
__device__ __forceinline__ void mmw_consume(float (&d)[128], uint32_t m_ring, uint32_t n_ring, uint32_t full,
                                            uint32_t empty, int cw, int slices, unsigned &it)
{
    mmw_tile_start(d);
    for (int s = 0; s < slices; s++, it++) {
        const int stage = mmw_slice_ready(full, it);
        const uint32_t a = m_ring + stage * MMW_A_BYTES + cw * 64 * MMW_ROW;
        const uint32_t b = n_ring + stage * MMW_B_BYTES;
        mmw_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < MMW_ROW / 32; kk++)   /* k-steps of 32 bytes along the swizzled rows */
            mmw_wgmma<E>(d, mmw_desc(a + 32 * kk), mmw_desc(b + 32 * kk));
        mmw_wgmma_commit();
        /* the previous slice's wgmmas have finished reading their stage: it may be refilled */
        mmw_wgmma_wait<1>();
        if (s > 0)
            mmw_release(empty, it - 1);
    }
    mmw_tile_end(d, empty, it);
}

/* TF32's M operand in registers. Fragment register a[2q + h] of lane t (of warp w of consumer cw)
 * holds row t/4 + 8h of the warp's 16 rows of wgmma's M (columns of C), k = t%4 + 4q of the k-step.
 * Which column of the block's 128 a fragment row is, is ours to choose (C is stored to match):
 * mmw_frag_col picks them so that the 32 lanes of every fragment load hit 32 different banks
 * of the 128-byte swizzled boxes the TMA wrote (32 k-rows of 32 columns each): lanes 0-15
 * (rows 0-3) and 16-31 (rows 4-7) take 16-byte chunks whose index differs in bit 2, the bit the
 * swizzle of k-rows 0-3 (4-7) leaves (flips) alike, and t%4 selects the k-row, whose swizzle moves
 * the chunk's low bits. */
__device__ __forceinline__ int mmw_frag_col(int cw, int h)
{
    const int warp = (threadIdx.x / 32) % 4, g = threadIdx.x % 32 / 4;
    const int chunk = g / 4 * 4 + warp % 2 * 2 + h;     /* the 16-byte chunk of the box's 128-byte rows */
    return cw * 64 + warp / 2 * 32 + chunk * 4 + g % 4;
}

/* Where fragment register a[j] (j = 2q + h) of this thread is in a stage of B's boxes, at k-step 0
 * (k-step kk: + kk·8 rows of 128 bytes; the swizzle repeats every 8 rows). */
__device__ __forceinline__ uint32_t mmw_frag_offset(int cw, int j)
{
    const int col = mmw_frag_col(cw, j % 2), krow = threadIdx.x % 4 + 4 * (j / 2);
    return (uint32_t)(col / 32 * MMW_BOX_BYTES + krow * MMW_ROW + ((col % 32 / 4) ^ krow) * 16 + col % 4 * 4);
}

/* Keeps the compiler from reusing fragment registers an unfinished wgmma still reads. */
__device__ __forceinline__ void mmw_fence_frags(uint32_t (&f)[16])
{
#pragma unroll
    for (int i = 0; i < 16; i++)
        asm volatile("" : "+r"(f[i])::"memory");
}

/* One slice for the TF32 consumer: its fragments of the stage's B into f (4 k-steps × 4 registers),
 * the four wgmmas; then, once the previous slice's wgmmas are done, their stage released and their
 * fragments (prev) free for the next slice's loads. */
__device__ __forceinline__ void mmw_slice_regs(float (&d)[128], uint32_t (&f)[16], uint32_t (&prev)[16],
                                               uint32_t m_ring, uint32_t n_ring, uint32_t full, uint32_t empty,
                                               const uint32_t (&off)[4], bool first, unsigned it)
{
    const int stage = mmw_slice_ready(full, it);
    const uint32_t m = m_ring + stage * MMW_A_BYTES, b = n_ring + stage * MMW_B_BYTES;
#pragma unroll
    for (int kk = 0; kk < MMW_ROW / 32; kk++)   /* k-steps of 8 floats: 8 k-rows of the boxes each */
#pragma unroll
        for (int j = 0; j < 4; j++)
            asm volatile("ld.shared.b32 %0, [%1];" : "=r"(f[4 * kk + j]) : "r"(m + off[j] + kk * 8 * MMW_ROW) : "memory");
    mmw_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < MMW_ROW / 32; kk++)
        mmw_wgmma_tf32_regs(d, &f[4 * kk], mmw_desc(b + 32 * kk));
    mmw_wgmma_commit();
    mmw_wgmma_wait<1>();
    mmw_fence_frags(prev);
    if (!first)
        mmw_release(empty, it - 1);
}

/* Consumer warpgroup cw for TF32: columns mmw_frag_col of the block's 128 of C, 256 rows of C
 * (Cᵀ's 64 × 256 in d), slices in pairs so that one slice's fragments load while the last one's
 * wgmmas still read theirs. */
__device__ __forceinline__ void mmw_consume_regs(float (&d)[128], uint32_t m_ring, uint32_t n_ring, uint32_t full,
                                                 uint32_t empty, int cw, int slices, unsigned &it)
{
    uint32_t off[4], f0[16] = {}, f1[16] = {};
#pragma unroll
    for (int j = 0; j < 4; j++)
        off[j] = mmw_frag_offset(cw, j);
    mmw_tile_start(d);
    int s = 0;
    for (; s + 1 < slices; s += 2, it += 2) {
        mmw_slice_regs(d, f0, f1, m_ring, n_ring, full, empty, off, s == 0, it);
        mmw_slice_regs(d, f1, f0, m_ring, n_ring, full, empty, off, false, it + 1);
    }
    if (s < slices)
        mmw_slice_regs(d, f0, f1, m_ring, n_ring, full, empty, off, s == 0, it++);
    mmw_tile_end(d, empty, it);
    mmw_fence_frags(f0);            /* kept until the wgmmas reading them are done */
    mmw_fence_frags(f1);
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

/* TF32's accumulators (Cᵀ) to C: d[4i + 2h + j] is C's row row0 + 8i + 2(t%4) + j, column
 * col0 + mmw_frag_col(cw, h). */
__device__ __forceinline__ void mmw_store_transposed(const float (&d)[128], float *__restrict__ C, int m, int n,
                                                     int row0, int col0, int cw)
{
    const int r0 = row0 + 2 * (threadIdx.x % 4);
    const int cols[2] = { col0 + mmw_frag_col(cw, 0), col0 + mmw_frag_col(cw, 1) };
#pragma unroll
    for (int i = 0; i < 32; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const int row = r0 + 8 * i + j;
            if (row >= m)
                continue;
#pragma unroll
            for (int h = 0; h < 2; h++)
                if (cols[h] < n)
                    C[(size_t)row * n + cols[h]] = d[4 * i + 2 * h + j];
        }
}
/* show-source: end */
#endif

/* show-source: matmul wgmma-tf32,wgmma-fp16,wgmma-bf16 */
/* Persistent: cluster c (blocks y = 2c and 2c + 1) computes the cluster tiles c, c + P, c + 2P …
 * (P clusters launched, as many as fit at once), each block one 128×256 tile of each (mmw_tile
 * says which), so the ring runs on from one tile into the next while C is stored. The product the
 * kernel sees is C = A·B for FP16 and BF16 (tma_m maps A, m × k_p; tma_n maps Bᵀ, n × k_p; both in
 * boxes of 128 bytes × rows) and Cᵀ = Bᵀ·Aᵀ for TF32 (M_FROM_REGS: tma_m maps B, k × n_p, in boxes
 * of 32 × 32 floats; tma_n maps A), its tiles 128 columns × 256 rows of C. */
template <class E, bool M_FROM_REGS>
__global__ void __launch_bounds__(MMW_THREADS, 1)
mm_wgmma_kernel(const __grid_constant__ CUtensorMap tma_m, const __grid_constant__ CUtensorMap tma_n,
                float *__restrict__ C, int m, int n, int k)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(1024) unsigned char mmw_shared[];
    const uint32_t m_ring = (mmw_smem(mmw_shared) + 1023u) & ~1023u;
    const uint32_t n_ring = m_ring + MMW_STAGES * MMW_A_BYTES;
    const uint32_t full = n_ring + MMW_STAGES * MMW_B_BYTES, empty = full + 8 * MMW_STAGES;
    const int rows = M_FROM_REGS ? n : m, cols = M_FROM_REGS ? m : n;     /* the product the kernel sees */
    const int wg = threadIdx.x / 128, slices = (k + MMW_BK(E) - 1) / MMW_BK(E);
    const int tiles_x = (cols + MMW_BN - 1) / MMW_BN;
    const int cluster_rows = ((rows + MMW_BM - 1) / MMW_BM + MMW_CLUSTER - 1) / MMW_CLUSTER;
    const int tiles = tiles_x * cluster_rows, launched = (int)gridDim.y / MMW_CLUSTER;
    const int rank = (int)blockIdx.y % MMW_CLUSTER;
    unsigned it = 0;

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
            for (int id = (int)blockIdx.y / MMW_CLUSTER; id < tiles; id += launched) {
                int tile_x, tile_y;
                mmw_tile(id, tiles_x, cluster_rows, rank, tile_x, tile_y);
                const int row0 = tile_y * MMW_BM;
                /* the block that pads an odd number of row tiles to whole clusters still loads
                 * (inside its operand) and multicasts its half of the N operand; it stores nothing */
                mmw_produce<E, M_FROM_REGS>(&tma_m, &tma_n, m_ring, n_ring, full, empty, row0 < rows ? row0 : 0,
                                            tile_x * MMW_BN, mmw_cluster_rank(), slices, it);
            }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        float d[128];
        for (int id = (int)blockIdx.y / MMW_CLUSTER; id < tiles; id += launched) {
            int tile_x, tile_y;
            mmw_tile(id, tiles_x, cluster_rows, rank, tile_x, tile_y);
            if constexpr (M_FROM_REGS) {
                mmw_consume_regs(d, m_ring, n_ring, full, empty, wg - 1, slices, it);
                mmw_store_transposed(d, C, m, n, tile_x * MMW_BN, tile_y * MMW_BM, wg - 1);
            } else {
                mmw_consume<E>(d, m_ring, n_ring, full, empty, wg - 1, slices, it);
                mmw_store(d, C, m, n, tile_y * MMW_BM + (wg - 1) * 64, tile_x * MMW_BN);
            }
        }
    }
    __syncwarp();
    /* no block leaves while the other may still multicast into it or arrive on its barriers */
    mmw_cluster_sync();
#else
    __trap();                       /* not an sm_90a image: the host never launches this */
#endif
}
/* show-source: end */

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
        snprintf(err, CL_ERR_LEN, "wgmma: the driver has no cuTensorMapEncodeTiled (TMA needs a CUDA 12 "
                 "driver or later)");
        return NULL;
    }
    fn = (mmw_encode_fn)p;
    return fn;
}

/* Whether this device runs the variant: compute capability 9.0, the sm_90a image
 * loaded (a build without it has only the stub), and enough shared memory. */
static int mmw_usable(const char *name, char *err)
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
        snprintf(err, CL_ERR_LEN, "%s needs a Hopper GPU (sm_90a); this is sm_%d%d", name, major, minor);
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
            return cl_cuda_fail(err, "probing the wgmma image", rc);
        }
        probed_dev = dev, probed_sm90a = loaded;
    }
    if (!probed_sm90a) {
        snprintf(err, CL_ERR_LEN, "%s: this build has no sm_90a code (built without sm_90a: CUDA_ARCHS "
                 "lacked 90); rebuild with make CUDA_ARCHS=90", name);
        return -1;
    }
    if (optin < MMW_SMEM_BYTES) {
        snprintf(err, CL_ERR_LEN, "%s needs %d bytes of shared memory per block; this device allows %d", name,
                 MMW_SMEM_BYTES, optin);
        return -1;
    }
    return mmw_encoder(err) ? 0 : -1;
}

/* What differs between the three variants, host side: the element the tensor cores read, as
 * staged (matmul_wgmma_stage.cu), TMA's name for it, and which product the kernel computes. */
struct mmw_format {
    const char *name;               /* the row's */
    cl_matmul_format fmt;
    CUtensorMapDataType tma_type;
    const char *mma;                /* the instruction, for the impl line */
    bool m_from_regs;               /* TF32: Cᵀ = Bᵀ·Aᵀ with B's slices in registers (no Bᵀ pass) */
    const void *kernel;             /* mm_wgmma_kernel<E, m_from_regs> */
};

static const mmw_format mmw_tf32 = { "wgmma-tf32", CL_MATMUL_FMT_TF32, CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                                     "m64n256k8 TF32", true, (const void *)mm_wgmma_kernel<float, true> };
static const mmw_format mmw_fp16 = { "wgmma-fp16", CL_MATMUL_FMT_FP16, CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                     "m64n256k16 FP16", false, (const void *)mm_wgmma_kernel<__half, false> };
static const mmw_format mmw_bf16 = { "wgmma-bf16", CL_MATMUL_FMT_BF16, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                                     "m64n256k16 BF16", false, (const void *)mm_wgmma_kernel<__nv_bfloat16, false> };

/* x rounded up to whole 16-byte rows (TMA's alignment): 4 floats, 8 halves. */
static int mmw_row16(int x, const mmw_format *f)
{
    const int per16 = 16 / (int)mm_stage_elem_bytes(f->fmt);
    return (x + per16 - 1) / per16 * per16;
}

/* Whether the inputs are converted (FP16, BF16: both always staged); TF32 reads the floats as they are. */
static bool mmw_converted(const mmw_format *f)
{
    return f->fmt != CL_MATMUL_FMT_TF32;
}

/* Whether A goes through a staging pass: converted, or its rows (k) padded to 16 bytes. */
static bool mmw_stages_a(const mm_problem *p, const mmw_format *f)
{
    return mmw_converted(f) || mmw_row16(p->k, f) != p->k;
}

/* Whether B goes through one: converted (into Bᵀ), or for TF32 its rows (n) padded to 16 bytes. */
static bool mmw_stages_b(const mm_problem *p, const mmw_format *f)
{
    return mmw_converted(f) || mmw_row16(p->n, f) != p->n;
}

/* The product the kernel sees, rows × cols: C (m × n), or Cᵀ (n × m) for TF32. */
static void mmw_dims(const mm_problem *p, const mmw_format *f, int *rows, int *cols)
{
    *rows = f->m_from_regs ? p->n : p->m;
    *cols = f->m_from_regs ? p->m : p->n;
}

/* The launch: blocks of MMW_THREADS in clusters of MMW_CLUSTER along y, the dynamic shared memory. */
static cudaLaunchConfig_t mmw_config(dim3 grid, cudaLaunchAttribute *cluster)
{
    cluster->id = cudaLaunchAttributeClusterDimension;
    cluster->val.clusterDim.x = 1;
    cluster->val.clusterDim.y = MMW_CLUSTER;
    cluster->val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(MMW_THREADS, 1, 1);
    cfg.dynamicSmemBytes = MMW_SMEM_BYTES;
    cfg.stream = 0;
    cfg.attrs = cluster;
    cfg.numAttrs = 1;
    return cfg;
}

/* The persistent grid: as many clusters as run at once on this device (cudaOccupancyMaxActiveClusters,
 * asked once per kernel: not every pair of SMs can hold a cluster), at most one per cluster tile
 * (row tiles rounded up to whole clusters × column tiles). 0 with *grid set, or -1 with err set. */
static int mmw_grid(const mm_problem *p, const mmw_format *f, dim3 *grid, char *err)
{
    static int active[CL_MATMUL_NFORMATS];    /* per kernel (one per format); 0: not asked yet */
    int *fit = &active[f->fmt];
    if (!*fit) {
        cudaLaunchAttribute cluster;
        cudaLaunchConfig_t cfg = mmw_config(dim3(1, MMW_CLUSTER, 1), &cluster);
        cudaError_t rc = cudaOccupancyMaxActiveClusters(fit, f->kernel, &cfg);
        if (rc != cudaSuccess)
            return cl_cuda_fail(err, "cudaOccupancyMaxActiveClusters (mm_wgmma_kernel)", rc);
        if (*fit < 1) {
            snprintf(err, CL_ERR_LEN, "%s: no cluster of %d blocks of %d bytes of shared memory fits on this device",
                     f->name, MMW_CLUSTER, MMW_SMEM_BYTES);
            *fit = 0;
            return -1;
        }
    }
    int rows, cols;
    mmw_dims(p, f, &rows, &cols);
    long long tiles = (long long)((cols + MMW_BN - 1) / MMW_BN) *
                      (((rows + MMW_BM - 1) / MMW_BM + MMW_CLUSTER - 1) / MMW_CLUSTER);
    *grid = dim3(1, (unsigned)(tiles < *fit ? tiles : *fit) * MMW_CLUSTER, 1);
    return 0;
}

/* Bytes of B's staged copy: Bᵀ (n × k_p), or for TF32 B padded (k × n_p) where it is. */
static size_t mmw_b_bytes(const mm_problem *p, const mmw_format *f)
{
    if (!mmw_stages_b(p, f))
        return 0;
    const size_t elem = mm_stage_elem_bytes(f->fmt);
    return f->m_from_regs ? (size_t)p->k * mmw_row16(p->n, f) * elem : (size_t)p->n * mmw_row16(p->k, f) * elem;
}

/* Where A's staged copy starts in the scratch buffer: after B's, 256-byte aligned. */
static size_t mmw_a_offset(const mm_problem *p, const mmw_format *f)
{
    return (mmw_b_bytes(p, f) + 255) & ~(size_t)255;
}

/* B's staged copy, then A's, where they are: allocated by the runner with A, B and C. */
static size_t mmw_scratch(const mm_problem *p, const mmw_format *f)
{
    return mmw_a_offset(p, f) +
           (mmw_stages_a(p, f) ? (size_t)p->m * mmw_row16(p->k, f) * mm_stage_elem_bytes(f->fmt) : 0);
}

/* The impl line's first part: what is staged before the product. */
static const char *mmw_staging(const mm_problem *p, const mmw_format *f)
{
    if (mmw_converted(f))
        return "A and Bᵀ converted, then ";
    static const char *const padded[2][2] = { { "", "A padded, then " }, { "B padded, then ", "A and B padded, then " } };
    return padded[mmw_stages_b(p, f)][mmw_stages_a(p, f)];
}

static int mmw_prepare(const mm_problem *p, cl_matmul_result *out, const mmw_format *f, char *err)
{
    if (mmw_usable(f->name, err))
        return -1;
    cudaError_t rc = cudaFuncSetAttribute(f->kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, MMW_SMEM_BYTES);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaFuncSetAttribute (dynamic shared memory of mm_wgmma_kernel)", rc);
    const bool staged_a = mmw_stages_a(p, f), staged_b = mmw_stages_b(p, f);
    /* the M operand once per column tile, the N operand once per cluster of row tiles (in C's
     * terms 256 × 256 either way), and one more pass over what is staged */
    out->global_loads = cl_matmul_loads_blocked(p->m, p->n, p->k, MMW_BM * MMW_CLUSTER, MMW_BN) +
                        (staged_b ? (double)p->k * p->n : 0) + (staged_a ? (double)p->m * p->k : 0);
    if (f->m_from_regs)
        snprintf(out->impl, sizeof out->impl, "%smm_wgmma_kernel: Cᵀ = Bᵀ·Aᵀ by wgmma %s, B's slices from "
                 "registers and A's from a 4-stage TMA ring, 1 TMA + 2 MMA warpgroups", mmw_staging(p, f), f->mma);
    else
        snprintf(out->impl, sizeof out->impl, "%smm_wgmma_kernel: wgmma %s from a 4-stage TMA ring, "
                 "1 TMA + 2 MMA warpgroups", mmw_staging(p, f), f->mma);
    dim3 grid;
    if (mmw_grid(p, f, &grid, err) || mm_describe(f->kernel, grid, dim3(MMW_THREADS, 1, 1), &out->launch, err))
        return -1;
    out->launch.smem_bytes += MMW_SMEM_BYTES;
    out->launch.kernels = 1 + staged_a + staged_b;
    return 0;
}

/* A 2-D tensor map of rows × cols elements (row-major, cols a multiple of 16 bytes) in boxes of
 * 128 bytes × box_rows, 128-byte swizzled; zeros outside. */
static int mmw_map(CUtensorMap *map, const void *base, int rows, int cols, int box_rows, const mmw_format *f,
                   const char *what, char *err)
{
    mmw_encode_fn encode = mmw_encoder(err);
    if (!encode)
        return -1;
    const size_t elem = mm_stage_elem_bytes(f->fmt);
    cuuint64_t dims[2] = { (cuuint64_t)cols, (cuuint64_t)rows };
    cuuint64_t strides[1] = { (cuuint64_t)cols * elem };
    cuuint32_t box[2] = { (cuuint32_t)(MMW_ROW / elem), (cuuint32_t)box_rows };
    cuuint32_t steps[2] = { 1, 1 };
    CUresult r = encode(map, f->tma_type, 2, (void *)base, dims, strides, box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        snprintf(err, CL_ERR_LEN, "cuTensorMapEncodeTiled (%s, %d × %d elements): CUresult %d", what, rows, cols,
                 (int)r);
        return -1;
    }
    return 0;
}

/* show-source: matmul wgmma-tf32,wgmma-fp16,wgmma-bf16 */
/* The staging passes, the tensor maps and the persistent launch. TF32: B (k × n_p) as the M
 * operand in boxes of 32 × 32 floats, A (m × k_p) as the N operand; FP16 and BF16: A (m × k_p)
 * and Bᵀ (n × k_p), converted. */
static int mmw_launch(const mm_problem *p, const mmw_format *f, char *err)
{
    const int k_p = mmw_row16(p->k, f), n_p = mmw_row16(p->n, f);
    void *bs = mmw_stages_b(p, f) ? p->scratch : NULL;
    void *as = mmw_stages_a(p, f) ? (char *)p->scratch + mmw_a_offset(p, f) : NULL;
    if (bs && (f->m_from_regs ? mm_stage_convert(p->b, bs, p->k, p->n, n_p, f->fmt, err)
                              : mm_stage_transpose(p->b, bs, p->k, p->n, k_p, f->fmt, err)))
        return -1;
    if (as && mm_stage_convert(p->a, as, p->m, p->k, k_p, f->fmt, err))
        return -1;

    CUtensorMap tma_m, tma_n;
    const void *a = as ? as : p->a, *b = bs ? bs : p->b;
    if (f->m_from_regs ? mmw_map(&tma_m, b, p->k, n_p, MMW_BOX_BYTES / MMW_ROW, f, "B", err) ||
                             mmw_map(&tma_n, a, p->m, k_p, MMW_BN / MMW_CLUSTER, f, "A", err)
                       : mmw_map(&tma_m, a, p->m, k_p, MMW_BM, f, "A", err) ||
                             mmw_map(&tma_n, b, p->n, k_p, MMW_BN / MMW_CLUSTER, f, "Bᵀ", err))
        return -1;
    dim3 grid;
    if (mmw_grid(p, f, &grid, err))
        return -1;
    cudaLaunchAttribute cluster;
    cudaLaunchConfig_t cfg = mmw_config(grid, &cluster);
    void *args[] = { (void *)&tma_m, (void *)&tma_n, (void *)&p->c, (void *)&p->m, (void *)&p->n, (void *)&p->k };
    cudaError_t rc = cudaLaunchKernelExC(&cfg, f->kernel, args);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "launching mm_wgmma_kernel", rc);
    return mm_launched("mm_wgmma_kernel", err);
}
/* show-source: end */

/* One prepare, launch and scratch a variant, for the runner's table (matmul_cuda.h). */
#define MMW_VARIANT(fmt)                                                                                       \
    static int fmt##_prepare(const mm_problem *p, cl_matmul_result *out, char *err)                            \
    {                                                                                                          \
        return mmw_prepare(p, out, &mmw_##fmt, err);                                                           \
    }                                                                                                          \
    static int fmt##_launch(const mm_problem *p, char *err)                                                    \
    {                                                                                                          \
        return mmw_launch(p, &mmw_##fmt, err);                                                                 \
    }                                                                                                          \
    static size_t fmt##_scratch(const mm_problem *p)                                                           \
    {                                                                                                          \
        return mmw_scratch(p, &mmw_##fmt);                                                                     \
    }                                                                                                          \
    const mm_gpu_impl mm_gpu_wgmma_##fmt = { fmt##_prepare, fmt##_launch, fmt##_scratch };
MMW_VARIANT(tf32)
MMW_VARIANT(fp16)
MMW_VARIANT(bf16)
#undef MMW_VARIANT
