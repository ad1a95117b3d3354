/* matmul_blocked.c — the CPU analogues of the register-blocked %matmul kernels
 * (reg1d onwards) and of the tensor-core ones (wmma-*, wgmma-*): one
 * BLOCKED(...) line each, below.
 *
 * One analogue for all of them, shaped by each GPU kernel's launch
 * (cpu_mm_shape): host threads take the kernel's blocks (its tiles of C, dealt
 * round-robin), and each steps k in the kernel's slices,
 * copying the slice of A (transposed, as fast stores it) and of B into local
 * arrays, the shared-memory analogue, then accumulating into an array that
 * plays the registers of all the block's threads. The wmma analogues round A
 * and B to TF32, FP16 or BF16 as they copy the tiles, as the GPU kernels do
 * when they store them in shared memory: the precision lost is the GPU's.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/cpu_common.h"
#include "matmul_cpu.h"

#define BLOCKED_BK_MAX 32     /* the deepest slice a shape may have */
#define BLOCKED_MAX 256     /* the widest block tile a shape may have */
#define BLOCKED_BAND 32     /* rows of a block accumulated at a time */

static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

float cpu_mm_round(cl_matmul_format f, float x)
{
    uint32_t u = bits_of(x);
    if (!isfinite(x))
        return x;
    switch (f) {
    case CL_MATMUL_FMT_TF32:        /* 10 of the 23 mantissa bits; half a unit added to the magnitude: ties away */
        return float_of((u + 0x1000u) & ~0x1FFFu);
    case CL_MATMUL_FMT_BF16:        /* 7 of 23, to nearest even */
        return float_of((u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u);
    case CL_MATMUL_FMT_FP16:
        if (fabsf(x) >= 65520.0f)   /* rounds past the largest half, 65504 */
            return copysignf(INFINITY, x);
        if (fabsf(x) < 0x1p-14f)    /* subnormal halves: multiples of 2^-24 (rintf: to nearest even) */
            return rintf(x * 0x1p24f) * 0x1p-24f;
        return float_of((u + 0xFFFu + ((u >> 13) & 1u)) & ~0x1FFFu);
    default:
        return x;
    }
}

/* An element of A or B as a tile copy stores it: rounded to the shape's
 * format, as the wmma kernels round when they store tiles in shared memory. */
static inline float tile_value(const cpu_mm_shape *s, float x)
{
    return s->round == CL_MATMUL_FMT_FP32 ? x : cpu_mm_round(s->round, x);
}

CL_HOT static void blocked_block(long long blk, void *arg)
{
    const cpu_mm_problem *p = arg;
    const cpu_mm_shape *s = p->shape;
    const int bm = s->bm, bn = s->bn, bk = s->bk;
    int gx = cpu_mm_cdiv(p->n, bn);
    int row0 = (int)(blk / gx) * bm, col0 = (int)(blk % gx) * bn;
    /* A's slice is stored k-major (transposed), as the fast kernel stores it. The block's rows go
     * through in bands of BLOCKED_BAND, so the accumulators fit on the stack: thread-local ones
     * of a 128×256 tile (128 KiB in every thread of the process, the kernel's included) left no
     * room in a 256 KiB thread stack. Each element still sums its products in k order. */
    float as[BLOCKED_BK_MAX][BLOCKED_BAND], bs[BLOCKED_BK_MAX][BLOCKED_MAX];
    float acc[BLOCKED_BAND * BLOCKED_MAX];
    for (int r0 = 0; r0 < bm && row0 + r0 < p->m; r0 += BLOCKED_BAND) {
        int rows = bm - r0 < BLOCKED_BAND ? bm - r0 : BLOCKED_BAND;
        memset(acc, 0, (size_t)rows * bn * sizeof *acc);
        for (int k0 = 0; k0 < p->k; k0 += bk) {
            for (int kk = 0; kk < bk; kk++) {
                int q = k0 + kk, row = row0 + r0;
                for (int r = 0; r < rows; r++)
                    as[kk][r] = q < p->k && row + r < p->m ? tile_value(s, p->a[(size_t)(row + r) * p->k + q]) : 0.0f;
                for (int c = 0; c < bn; c++)
                    bs[kk][c] = q < p->k && col0 + c < p->n ? tile_value(s, p->b[(size_t)q * p->n + col0 + c]) : 0.0f;
            }
            for (int kk = 0; kk < bk; kk++)
                for (int r = 0; r < rows; r++) {
                    float a = as[kk][r];
                    float *accrow = acc + (size_t)r * bn;
                    for (int c = 0; c < bn; c++)
                        accrow[c] += a * bs[kk][c];
                }
        }
        for (int r = 0; r < rows && row0 + r0 + r < p->m; r++)
            for (int c = 0; c < bn && col0 + c < p->n; c++)
                p->c[(size_t)(row0 + r0 + r) * p->n + col0 + c] = acc[(size_t)r * bn + c];
    }
}

static void blocked_configure(const cpu_mm_problem *p, cl_matmul_result *out)
{
    const cpu_mm_shape *s = p->shape;
    int gx = cpu_mm_cdiv(p->n, s->bn), gy = cpu_mm_cdiv(p->m, s->bm);
    out->launch = cl_launch_2d(gx, gy, s->threads, 1, s->smem, 1);
    out->global_loads = cl_matmul_loads_blocked(p->m, p->n, p->k, s->bm, s->bn);
    int len = snprintf(out->impl, sizeof out->impl, "host: %d threads over %lld blocks of %d×%d, k slices of %d",
                       cpu_mm_threads_for(p, (long long)gx * gy), (long long)gx * gy, s->bm, s->bn, s->bk);
    if (s->round != CL_MATMUL_FMT_FP32) {
        static const char *const names[CL_MATMUL_NFORMATS] = {
            [CL_MATMUL_FMT_TF32] = "tf32", [CL_MATMUL_FMT_FP16] = "fp16", [CL_MATMUL_FMT_BF16] = "bf16" };
        snprintf(out->impl + len, sizeof out->impl - (size_t)len, ", A and B rounded to %s", names[s->round]);
        snprintf(out->precision, sizeof out->precision, "%s", names[s->round]);
    }
}

static void blocked_run(const cpu_mm_problem *p)
{
    long long blocks = (long long)cpu_mm_cdiv(p->n, p->shape->bn) * cpu_mm_cdiv(p->m, p->shape->bm);
    cl_parallel_for(blocks, p->threads, blocked_block, (void *)p);
}

/* The GPU kernels' launches: block tile, slice, threads and shared memory (cuda/matmul_*.cu), and how
 * the analogue goes about it, in words after "BM×BN blocks dealt to host threads, k in slices of BK". */
#define BLOCKED(name, bm, bn, bk, threads, smem, round, how)                                            \
    _Static_assert(bk <= BLOCKED_BK_MAX && bn <= BLOCKED_MAX, #name "'s tile is larger than the arrays"); \
    static const cpu_mm_shape name##_shape = { bm, bn, bk, threads, smem, round };                     \
    const cpu_mm_impl cpu_mm_##name = { #bm "×" #bn " blocks dealt to host threads, k in slices of " #bk how, \
                                        blocked_configure, blocked_run, &name##_shape };
#define ACC ", a local accumulator array"
#define ROUNDED(f) ", A and B rounded to " f " as they are copied: " f " tensor cores' precision"
BLOCKED(reg1d, 64, 64, 8, 512, 2 * 64 * 8 * 4, CL_MATMUL_FMT_FP32, ACC)
BLOCKED(reg2d, 128, 128, 8, 256, 2 * 128 * 8 * 4, CL_MATMUL_FMT_FP32, ACC)
BLOCKED(vec4, 128, 128, 8, 256, 2 * 128 * 8 * 4, CL_MATMUL_FMT_FP32, ACC)
BLOCKED(warptile, 128, 128, 16, 256, 16 * (132 + 128) * 4, CL_MATMUL_FMT_FP32, ACC)
BLOCKED(fast, 128, 128, 8, 256, 2 * 8 * (132 + 128) * 4, CL_MATMUL_FMT_FP32, ACC)
BLOCKED(fast64, 64, 64, 8, 64, 2 * 8 * (68 + 64) * 4, CL_MATMUL_FMT_FP32, ACC)
BLOCKED(swizzle, 128, 128, 8, 256, 2 * 8 * (128 + 128) * 4, CL_MATMUL_FMT_FP32, ACC)
BLOCKED(async, 128, 128, 16, 256, 4 * 16 * (128 + 128) * 4, CL_MATMUL_FMT_FP32, ACC)
BLOCKED(async64, 64, 64, 16, 128, 4 * 16 * (64 + 64) * 4, CL_MATMUL_FMT_FP32, ACC)
BLOCKED(wide, 128, 256, 32, 256, 2 * 32 * (132 + 256) * 4, CL_MATMUL_FMT_FP32, ACC)
BLOCKED(wmma_tf32, 128, 128, 16, 256, 2 * (128 * 20 + 16 * 132) * 4, CL_MATMUL_FMT_TF32, ROUNDED("TF32"))
BLOCKED(wmma_fp16, 128, 128, 16, 256, 2 * (128 * 24 + 16 * 136) * 2, CL_MATMUL_FMT_FP16, ROUNDED("FP16"))
BLOCKED(wmma_bf16, 128, 128, 16, 256, 2 * (128 * 24 + 16 * 136) * 2, CL_MATMUL_FMT_BF16, ROUNDED("BF16"))
/* Hopper's TF32 kernel: 256×128 tiles of C (it computes Cᵀ in 128×256 ones), 4 stages of 32-deep
 * slices of A and B on the GPU (matmul_wgmma.cu) */
BLOCKED(wgmma_tf32, 256, 128, 16, 384, 4 * 32 * (256 + 128) * 4, CL_MATMUL_FMT_TF32,
        " copied to local arrays rounded to TF32 (10-bit mantissa), float products and sums")
/* its FP16 and BF16 kernels: 128×256 tiles, 64-deep slices of 16-bit elements (the same bytes) */
#define WGMMA_16BIT(f) " copied to local arrays rounded to " f ", float products and sums"
BLOCKED(wgmma_fp16, 128, 256, 16, 384, 4 * 64 * (128 + 256) * 2, CL_MATMUL_FMT_FP16, WGMMA_16BIT("FP16"))
BLOCKED(wgmma_bf16, 128, 256, 16, 384, 4 * 64 * (128 + 256) * 2, CL_MATMUL_FMT_BF16, WGMMA_16BIT("BF16"))
#undef WGMMA_16BIT
#undef ROUNDED
#undef ACC
#undef BLOCKED
