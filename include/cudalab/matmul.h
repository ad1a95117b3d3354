/* matmul.h — the %matmul family on both sides of the backend ABI.
 *
 * C = A·B in float32, A m×k, B k×n, C m×n, all row-major. The variants are
 * the rows of CL_MATMUL_VARIANTS (the family contract, family.h). Each backend
 * (cuda/matmul*.cu, cpu/matmul*.c) defines `cl_<backend>_matmul_ops`: which
 * variants it implements and one run function that generates the inputs from
 * the seed, times a variant (by id) and copies C back.
 *
 * The host-side check (cpu/matmul_check.c) regenerates A and B from the same
 * seed with the generators below and compares C against a double-precision
 * product, or by Freivalds' test for large products.
 */
#ifndef CUDALAB_MATMUL_H
#define CUDALAB_MATMUL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cudalab/family.h"
#include "cudalab/measure.h"
#include "cudalab/student.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A and B come from disjoint index ranges of one seeded stream, so A(seed)
 * and B(seed) are independent and the same on host and device. */
#define CL_MATMUL_B_STREAM (1ull << 62)

CL_HD float cl_matmul_a(uint64_t seed, uint64_t i)
{
    return cl_uniform(seed, i);
}

CL_HD float cl_matmul_b(uint64_t seed, uint64_t i)
{
    return cl_uniform(seed, CL_MATMUL_B_STREAM + i);
}

/* X(id, name, impl, launch on a GPU, what it teaches, flags, block): one row per variant, in
 * the order `--variant all` runs them (family.h says what is derived from it).
 * The FP32 ladder climbs one step a row, siboehm/SGEMM_CUDA style: naive,
 * tiled (shared memory), reg1d and reg2d (register blocking), vec4 (float4
 * loads), warptile (a warp owns a sub-tile), fast (double buffering), swizzle
 * (XOR-swizzled shared memory), async (cp.async pipeline), wide (16×8 per
 * thread in 128×256 tiles). The -bt rows are the lecture's corner turning;
 * the wmma rows its tensor cores. */
#define CL_MATMUL_VARIANTS(X)                                                                                   \
    X(CL_MATMUL_V_CPU, "cpu", host, "one host thread, triple loop",                                             \
      "the lecture's MatrixMulOnHost: a row of A times a column of B for each element, "                        \
      "accumulated in double", CL_V_HOST, 0)                                                                    \
    X(CL_MATMUL_V_NAIVE, "naive", naive, "16×16 threads per block, one thread per element of C; "               \
      "grid ⌈n/16⌉×⌈m/16⌉",                                                                                     \
      "each thread reads a row of A and a column of B from global memory: 2 loads per 2 flops", 0, 0)           \
    X(CL_MATMUL_V_NAIVE_BT, "naive-bt", naive_bt, "16×16 threads per block, one thread per element of C, B "    \
      "read from Bᵀ (n×k, row-major); grid ⌈n/16⌉×⌈m/16⌉",                                                      \
      "B stored transposed: the 32 threads of a warp read Bᵀ k floats apart, one DRAM burst each "              \
      "where naive's share one (uncoalesced)", CL_MATMUL_BT, 0)                                                 \
    X(CL_MATMUL_V_TILED, "tiled", tiled, "TILE×TILE threads per block, one per element of C; TILE×TILE "        \
      "tiles of A and B in shared memory; grid ⌈n/TILE⌉×⌈m/TILE⌉",                                              \
      "shared-memory tiling with two __syncthreads per phase: global traffic divided by TILE",                  \
      CL_V_TILE, 0)                                                                                             \
    X(CL_MATMUL_V_TILED_BT, "tiled-bt", tiled_bt, "TILE×TILE threads per block, one per element of C; B's "     \
      "tile read along rows of Bᵀ, stored transposed in shared memory; grid ⌈n/TILE⌉×⌈m/TILE⌉",                 \
      "corner turning: a warp reads consecutive addresses of Bᵀ and writes the tile transposed "                \
      "into shared memory, so B's loads stay coalesced", CL_V_TILE | CL_MATMUL_BT, 0)                           \
    X(CL_MATMUL_V_REG1D, "reg1d", reg1d, "512 threads per block, a 64×64 tile of C per block, 8 elements "      \
      "of a column per thread; grid ⌈n/64⌉×⌈m/64⌉",                                                             \
      "1D register blocking: each value of B read from shared memory serves 8 multiply-adds from "              \
      "registers", 0, 0)                                                                                        \
    X(CL_MATMUL_V_REG2D, "reg2d", reg2d, "256 threads per block, a 128×128 tile of C per block, 8×8 per "       \
      "thread; grid ⌈n/128⌉×⌈m/128⌉",                                                                           \
      "2D register blocking: 8 values of A and 8 of B in registers make 64 multiply-adds (CGMA "                \
      "128)", 0, 0)                                                                                             \
    X(CL_MATMUL_V_VEC4, "vec4", vec4, "256 threads per block, a 128×128 tile of C per block, 8×8 per "          \
      "thread; grid ⌈n/128⌉×⌈m/128⌉",                                                                           \
      "float4 loads: 16 bytes per thread from global memory, A's tile stored transposed so a "                  \
      "thread's 8 values of A are two 16-byte shared loads", 0, 0)                                              \
    X(CL_MATMUL_V_WARPTILE, "warptile", warptile, "256 threads per block, a 128×128 tile of C per block, "      \
      "32×64 per warp, 2×2 micro-tiles of 4×4 per thread; grid ⌈n/128⌉×⌈m/128⌉",                                \
      "warptiling: each warp owns a sub-tile, so its threads read neighbouring float4s of shared "              \
      "memory (no bank conflicts) and write whole 128-byte lines of C", 0, 0)                                   \
    X(CL_MATMUL_V_FAST, "fast", fast, "256 threads per block, a 128×128 tile of C per block, 8×8 per "          \
      "thread; grid ⌈n/128⌉×⌈m/128⌉",                                                                           \
      "the warp-tiled kernel plus double buffering: the next slice is loaded into registers "                   \
      "while this one is multiplied out, one __syncthreads per slice", 0, 0)                                    \
    X(CL_MATMUL_V_FAST64, "fast64", fast64, "64 threads per block, a 64×64 tile of C per block, 8×8 per "       \
      "thread; grid ⌈n/64⌉×⌈m/64⌉",                                                                             \
      "the fast kernel with 64×64 block tiles: 4× more blocks to fill the SMs on small matrices", 0, 0)         \
    X(CL_MATMUL_V_SWIZZLE, "swizzle", swizzle, "256 threads per block, a 128×128 tile of C per block, 8×8 per " \
      "thread, double-buffered; grid ⌈n/128⌉×⌈m/128⌉",                                                          \
      "XOR swizzle instead of padding: the column of A's transposed tile is XORed per row, so the "             \
      "transposing stores spread over all 32 banks with no shared memory spent on padding", 0, 0)               \
    X(CL_MATMUL_V_ASYNC, "async", async, "256 threads per block, a 128×128 tile of C per block, 32×64 "         \
      "per warp, 8×8 per thread, 4 stages of 16 KiB; grid ⌈n/128⌉×⌈m/128⌉; sm_80+",                             \
      "asynchronous copies: cp.async moves tiles global→shared without registers, 3 slices in "                 \
      "flight while one is multiplied out; A row-major, swizzled", CL_MATMUL_SM80, 0)                           \
    X(CL_MATMUL_V_ASYNC64, "async64", async64, "128 threads per block, a 64×64 tile of C per block, 32×32 "     \
      "per warp, 8×4 per thread, 4 stages of 8 KiB; grid ⌈n/64⌉×⌈m/64⌉; sm_80+",                                \
      "the async kernel with 64×64 tiles: 4× more blocks, for matrices too small to fill the SMs "              \
      "with 128×128 tiles", CL_MATMUL_SM80, 0)                                                                  \
    X(CL_MATMUL_V_WIDE, "wide", wide, "256 threads per block, a 128×256 tile of C per block, 64×64 per "        \
      "warp, 16×8 per thread, 2 stages of 48.5 KiB; grid ⌈n/256⌉×⌈m/128⌉; sm_80+",                              \
      "wider tiles: 16×8 results per thread read a quarter less shared memory per FMA than 8×8, "               \
      "fragments double-buffered in registers, A's slice loaded a slice ahead into registers and stored "      \
      "transposed; about 225 registers a thread, one block per SM",                                             \
      CL_MATMUL_SM80, 0)                                                                                        \
    X(CL_MATMUL_V_WMMA_TF32, "wmma-tf32", wmma_tf32, "256 threads per block, a 128×128 tile of C per block, "   \
      "64×32 per warp as 4×2 WMMA fragments of 16×16×8; grid ⌈n/128⌉×⌈m/128⌉; sm_80+",                          \
      "tensor cores through WMMA: A and B rounded to TF32 (10-bit mantissa) as tiles are stored, "              \
      "products accumulated in FP32", CL_MATMUL_TF32 | CL_MATMUL_SM80, 0)                                       \
    X(CL_MATMUL_V_WMMA_FP16, "wmma-fp16", wmma_fp16, "256 threads per block, a 128×128 tile of C per block, "   \
      "64×32 per warp as 4×2 WMMA fragments of 16×16×16; grid ⌈n/128⌉×⌈m/128⌉",                                 \
      "tensor cores on FP16: A and B rounded to half precision (10-bit mantissa, 5-bit exponent), "             \
      "half the bytes of TF32 in shared memory, products accumulated in FP32", CL_MATMUL_FP16, 0)               \
    X(CL_MATMUL_V_WMMA_BF16, "wmma-bf16", wmma_bf16, "256 threads per block, a 128×128 tile of C per block, "   \
      "64×32 per warp as 4×2 WMMA fragments of 16×16×16; grid ⌈n/128⌉×⌈m/128⌉; sm_80+",                         \
      "tensor cores on BF16: FP32's exponent with a 7-bit mantissa, so 8× the rounding error of "               \
      "FP16 but no overflow; products accumulated in FP32", CL_MATMUL_BF16 | CL_MATMUL_SM80, 0)                 \
    X(CL_MATMUL_V_CUBLAS, "cublas", cublas, "chosen by cuBLAS",                                                 \
      "cublasSgemm in FP32 (CUBLAS_DEFAULT_MATH): the reference", CL_V_LIBRARY, 0)                              \
    X(CL_MATMUL_V_CUBLAS_TF32, "cublas-tf32", cublas_tf32, "chosen by cuBLAS",                                  \
      "cublasSgemm on TF32 tensor cores (10-bit mantissa): faster, less exact",                                 \
      CL_V_LIBRARY | CL_MATMUL_TF32, 0)                                                                         \
    X(CL_MATMUL_V_CUBLAS_FP16, "cublas-fp16", cublas_fp16, "A and B converted to FP16 first (timed, as "        \
      "for wgmma-fp16); then chosen by cuBLAS",                                                                 \
      "cublasGemmEx on FP16 inputs with FP32 accumulation (CUBLAS_COMPUTE_32F): the reference for the "         \
      "half-precision rungs", CL_V_LIBRARY | CL_MATMUL_FP16, 0)                                                 \
    X(CL_MATMUL_V_CUBLAS_BF16, "cublas-bf16", cublas_bf16, "A and B converted to BF16 first (timed, as "        \
      "for wgmma-bf16); then chosen by cuBLAS; sm_80+",                                                         \
      "cublasGemmEx on BF16 inputs with FP32 accumulation (CUBLAS_COMPUTE_32F): the reference for "             \
      "the bfloat16 rungs", CL_V_LIBRARY | CL_MATMUL_BF16 | CL_MATMUL_SM80, 0)                                  \
    X(CL_MATMUL_V_WGMMA_TF32, "wgmma-tf32", wgmma_tf32, "Cᵀ = Bᵀ·Aᵀ, B's slices read into registers (no "   \
      "transpose); 384 threads per block, 256×128 tiles of C, clusters of 2, persistent (as many clusters as "  \
      "fit at once)",                                                                                           \
      "Hopper's asynchronous warpgroup MMA fed by TMA: a producer warpgroup streams 128-byte "                  \
      "swizzled tiles into a 4-stage mbarrier ring while two consumer warpgroups run wgmma on "                 \
      "TF32 tensor cores (H100, sm_90a only)", CL_MATMUL_TF32 | CL_MATMUL_SM90A, 0)                             \
    X(CL_MATMUL_V_WGMMA_FP16, "wgmma-fp16", wgmma_fp16, "A to FP16 and B to FP16 Bᵀ first (timed too); then " \
      "384 threads per block, 128×256 tiles of C, clusters of 2, persistent (as many clusters as fit at once)", \
      "the wgmma-tf32 ring on FP16, both operands from shared memory: 64-deep slices in the same "              \
      "128-byte swizzled rows, wgmma m64n256k16 at twice TF32's rate, FP32 accumulation (sm_90a only)",         \
      CL_MATMUL_FP16 | CL_MATMUL_SM90A, 0)                                                                      \
    X(CL_MATMUL_V_WGMMA_BF16, "wgmma-bf16", wgmma_bf16, "A to BF16 and B to BF16 Bᵀ first (timed too); then " \
      "384 threads per block, 128×256 tiles of C, clusters of 2, persistent (as many clusters as fit at once)", \
      "the wgmma-fp16 kernel on BF16: FP32's range with a 7-bit mantissa, the format most "                     \
      "training runs in, at FP16's rate (sm_90a only)", CL_MATMUL_BF16 | CL_MATMUL_SM90A, 0)

/* The family's own variant flags. The first three say what a GPU multiplies
 * in (its inputs rounded to that format, FP32 accumulation); none: FP32. */
#define CL_MATMUL_TF32 CL_V_FAMILY          /* TF32: 10-bit mantissa, FP32's exponent */
#define CL_MATMUL_FP16 (CL_V_FAMILY << 1)   /* IEEE half: 10-bit mantissa, 5-bit exponent */
#define CL_MATMUL_BF16 (CL_V_FAMILY << 2)   /* bfloat16: 7-bit mantissa, FP32's exponent */
#define CL_MATMUL_BT   (CL_V_FAMILY << 3)   /* reads B stored transposed (Bᵀ, n×k row-major), made
                                               from the same generator: the same product */
#define CL_MATMUL_SM80 (CL_V_FAMILY << 4)   /* needs compute capability 8.0 (cp.async, TF32 and BF16
                                               tensor cores): refused on older GPUs */
/* runs only on a compute capability 9.0 GPU (Hopper's sm_90a instructions): `--variant all` leaves
 * it out on other GPUs, and naming it there is the backend's clear error. */
#define CL_MATMUL_SM90A (CL_V_FAMILY << 5)

enum cl_matmul_variant_id { CL_MATMUL_VARIANTS(CL_VARIANT_ID) CL_MATMUL_NVARIANTS };

/* The contract's table, in enum order (each file that reads it has its copy). */
static const cl_variant cl_matmul_variants[CL_MATMUL_NVARIANTS] = {CL_MATMUL_VARIANTS(CL_VARIANT_ROW)};

/* The TILE_WIDTHs the tiled variant is built for (one template instance each), ascending. */
#define CL_MATMUL_TILE_LIST(X) X(2) X(4) X(8) X(16) X(32)
#define CL_MATMUL_TILE_ITEM_(t) t,
#define CL_MATMUL_TILES {CL_MATMUL_TILE_LIST(CL_MATMUL_TILE_ITEM_) 0}
/* Its first and last, the range --tile takes: (2 + 0 * 4 + ... + 0 * 0) and (0 * 0 + 2 * 0 + ... + 32),
 * constant expressions. */
#define CL_MATMUL_TILE_FIRST_(t) t + 0 *
#define CL_MATMUL_TILE_LAST_(t) * 0 + t
#define CL_MATMUL_TILE_MIN (CL_MATMUL_TILE_LIST(CL_MATMUL_TILE_FIRST_) 0)
#define CL_MATMUL_TILE_MAX (0 CL_MATMUL_TILE_LIST(CL_MATMUL_TILE_LAST_))

/* The parameters a student's kernel takes (cl_student_contract.params). */
#define CL_MATMUL_STUDENT_PARAMS "const float *A, const float *B, float *C, int M, int N, int K"
/* What a student's %%kernel for %matmul implements (student.h). */
static const cl_student_contract cl_matmul_student = {
    CL_MATMUL_STUDENT_PARAMS,
    "one thread per element of C: row = blockIdx.y·blockDim.y + threadIdx.y, col = blockIdx.x·blockDim.x "
    "+ threadIdx.x; grid ⌈N/block.x⌉ × ⌈M/block.y⌉ (--grid overrides); --tile T gives a T×T block "
    "and -D TILE=T",
    {16, 16, 1},
    CL_V_TILE,
};
/* A %%kernel --for matmul --bt kernel: B passed stored transposed, as naive-bt and tiled-bt read it
 * (the lecture's corner turning). */
#define CL_MATMUL_STUDENT_BT_PARAMS "const float *A, const float *Bt, float *C, int M, int N, int K"
static const cl_student_contract cl_matmul_student_bt = {
    CL_MATMUL_STUDENT_BT_PARAMS,
    "as without --bt, but B comes stored transposed: Bt is N×K row-major, B[k][col] = Bt[col·K + k]",
    {16, 16, 1},
    CL_V_TILE | CL_MATMUL_BT,
};

typedef struct cl_matmul_args {
    int m, n, k;                    /* >= 1; each of m·k, k·n, m·n < 2^31 (the kernels index with int) */
    int tile;                       /* TILE_WIDTH for CL_V_TILE variants */
    const cl_student_kernel *student; /* the kernel run as CL_VARIANT_STUDENT, else NULL */
    uint64_t seed;
    int reps;                       /* 1..CL_MAX_REPS timed runs */
    int warmup;                     /* untimed runs before them */
    float *c;                       /* m×n host buffer that receives C after timing, or NULL */
} cl_matmul_args;

typedef struct cl_matmul_result {
    cl_times times;
    cl_launch launch;
    double global_loads;            /* floats read from global memory by one product in the
                                     * lecture's traffic model; 0 when it has none (libraries,
                                     * and the host loop, which has no global memory) */
    char impl[128];                 /* what ran, in words ("cublasSgemm, CUBLAS_DEFAULT_MATH") */
    char config[160];               /* the launch in words: the row's on a GPU, the analogue's on the CPU */
    char precision[8];              /* what the run computed in: "fp32" (cuBLAS, and the CPU's
                                     * stand-in for it, cblas_sgemm), "tf32", "fp16" or "bf16" (inputs
                                     * rounded to that format, FP32 accumulation: checked with that
                                     * format's looser tolerance), "fp64" (the host loop, and the
                                     * stand-in where no BLAS is installed: the double-precision
                                     * reference) */
} cl_matmul_result;

typedef struct cl_matmul_ops {
    /* Whether this backend implements variant v (enum cl_matmul_variant_id). */
    bool (*has)(int v);
    /* Generates A and B from a->seed, runs variant v a->warmup times untimed
     * and a->reps times timed, then copies C into a->c (not timed). Returns 0,
     * or -1 with a one-line reason in err (CL_ERR_LEN bytes). */
    int (*run)(int v, const cl_matmul_args *a, cl_matmul_result *out, char *err);
    /* Whether run() takes students' kernels (CL_VARIANT_STUDENT, the kernel in args->student). */
    bool runs_student;
} cl_matmul_ops;

/* The lecture's traffic model: floats read from global memory by one product.
 * One thread per element reads a row of A and a column of B: 2·m·n·k. With
 * bm×bn blocks, each block reads its bm rows of A and bn columns of B once:
 * m·k·⌈n/bn⌉ + k·n·⌈m/bm⌉, which is 2·m·n·k/TILE for square tiles that divide. */
CL_HD double cl_matmul_loads_naive(int m, int n, int k)
{
    return 2.0 * m * n * k;
}

CL_HD double cl_matmul_loads_blocked(int m, int n, int k, int bm, int bn)
{
    return (double)m * k * ((n + bn - 1) / bn) + (double)k * n * ((m + bm - 1) / bm);
}

/* ---- host-side check (cpu/matmul_check.c) ---- */

/* Up to this many multiply-adds the check computes the full product in double;
 * beyond it, Freivalds' test with three random vectors. */
#define CL_MATMUL_FULL_CHECK_MAX (512.0 * 512.0 * 512.0)

/* Tolerances on the error relative to the scale of each dot product,
 * |c - ref| / sum_k |a_ik·b_kj| (for Freivalds, the same with C·r and A·(B·r)). */
#define CL_MATMUL_TOL_FP32       1e-5
#define CL_MATMUL_TOL_FP32_FREI  1e-6
#define CL_MATMUL_TOL_TF32       5e-3

/* What a run's inputs were rounded to before they were multiplied (FP32
 * accumulation in every case). X(id, precision name, significand bits p,
 * counting the implicit one): the unit roundoff is u = 2^-p. */
#define CL_MATMUL_FORMATS(X)                                                                        \
    X(CL_MATMUL_FMT_FP32, "fp32", 24)                                                               \
    X(CL_MATMUL_FMT_TF32, "tf32", 11)                                                               \
    X(CL_MATMUL_FMT_FP16, "fp16", 11)                                                               \
    X(CL_MATMUL_FMT_BF16, "bf16", 8)
#define CL_MATMUL_FMT_ID_(id, name, bits) id,
typedef enum cl_matmul_format { CL_MATMUL_FORMATS(CL_MATMUL_FMT_ID_) CL_MATMUL_NFORMATS } cl_matmul_format;

/* The format of a run's precision field ("tf32", "fp16", "bf16"); FP32 for
 * "fp32" and "fp64" (a double accumulation of float inputs) and anything else. */
cl_matmul_format cl_matmul_format_of(const char *precision);

/* The precision a GPU variant computes in, from its row's flags: "tf32",
 * "fp16", "bf16" or "fp32". */
static inline const char *cl_matmul_flags_precision(unsigned flags)
{
    return flags & CL_MATMUL_TF32 ? "tf32" : flags & CL_MATMUL_FP16 ? "fp16" : flags & CL_MATMUL_BF16 ? "bf16" : "fp32";
}

/* The check's tolerance for a format: FP32's (full product or Freivalds), or
 * for a rounded format CL_MATMUL_TOL_TF32 · 2^(11-p) (cpu/matmul_check.c says why). */
double cl_matmul_tolerance(cl_matmul_format f, bool full);

typedef struct cl_matmul_check {
    bool passed;
    const char *method;             /* "full fp64 product" or "freivalds x3" (static strings) */
    double max_rel_err;             /* NaN when C holds a NaN or an infinity */
    double max_abs_err;
    double tol;
    long long worst_row, worst_col; /* where max_rel_err was seen (col -1 for Freivalds) */
    long long first_row, first_col; /* the first wrong element in row-major order (full check
                                     * only), -1 when none is known */
    double first_value, first_expected;
    long long wrong;                /* elements outside the tolerance (full check), or rows of C whose
                                     * random-vector products are (Freivalds: it cannot tell elements) */
    long long wrong_rows;           /* rows of C outside the tolerance */
} cl_matmul_check;

/* Fills a (m×k) and b (k×n) from the seed, with host threads. With
 * transposed, b receives Bᵀ instead (n×k row-major: b[j·k + i] = B[i][j]). */
void cl_matmul_fill(float *a, float *b, int m, int n, int k, uint64_t seed, bool transposed);

/* Checks c (m×n) against A·B regenerated from seed, with the tolerance of the
 * format the run's inputs were rounded to (cl_matmul_tolerance).
 * Returns 0, or -1 with err set when host memory runs out. */
int cl_matmul_verify(int m, int n, int k, uint64_t seed, const float *c, cl_matmul_format fmt,
                     cl_matmul_check *out, char *err);

#ifdef __cplusplus
}
#endif
#endif
