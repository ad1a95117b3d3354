/* histo.h — the histogram family (%histo): its variants, its input generator
 * and bin mapping (shared by host and device), and the ops table that each
 * backend implements (cl_cuda_histo_ops in cuda/histo.cu, cl_cpu_histo_ops in
 * cpu/histo_cpu.c).
 *
 * The input is n bytes: either generated from (seed, dist) by the counter-based
 * hash of measure.h, on the device, or a text the user gave (copied host to
 * device, its H2D time reported apart). Every variant counts the same bins and
 * is checked exactly against cl_histo_reference().
 *
 * The variants are the rows of CL_HISTO_VARIANTS (the family contract,
 * family.h). Adding a variant = one row below + what runs it in each backend,
 * named by its impl (hg_gpu_<impl> in cuda/histo_cuda.h, cpu_hg_<impl> in
 * cpu/histo_cpu.h; both tables generated from the rows).
 */
#ifndef CUDALAB_HISTO_H
#define CUDALAB_HISTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cudalab/backend.h"
#include "cudalab/family.h"
#include "cudalab/measure.h"
#include "cudalab/student.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(id, name, impl, launch on a GPU, what it teaches, flags, block): one row per variant, in
 * teaching order, the order `--variant all` runs them (family.h says what is
 * derived from it). The CPU backend says in its result how its analogue runs.
 * fast's block (the others': 256): 2 blocks of 1024 per SM (64 warps) keep
 * more loads in flight than 6 of 256, each block with its 32 KiB of lane
 * copies; on an H100 at 2^28 bytes 2946 GB/s against 2812 (88% of the peak
 * against 84%). */
#define CL_HISTO_VARIANTS(X)                                                                                 \
    X(CL_HISTO_V_cpu, "cpu", cpu, "1 host thread",                                                           \
      "the sequential loop as taught: one pass, hist[bin(data[i])]++ on the host", CL_V_HOST, 0)             \
    X(CL_HISTO_V_sectioned, "sectioned", sectioned, "grid x block threads, global atomics",                  \
      "each thread counts a contiguous section of the input: neighbouring threads read "                     \
      "addresses a whole section apart, so no load is coalesced", CL_V_BLOCK, 0)                             \
    X(CL_HISTO_V_interleaved, "interleaved", interleaved, "grid x block threads, global atomics",            \
      "thread i reads i, i+stride, ... (grid-stride): a warp reads 32 neighbouring bytes, "                  \
      "coalesced, but every byte is still an atomic on the one global histogram", CL_V_BLOCK, 0)             \
    X(CL_HISTO_V_privatized, "privatized", privatized, "grid x block threads, 1 shared histogram per block", \
      "each block counts into its own histogram in shared memory and merges it into the "                    \
      "global one with one atomic per bin at the end", CL_V_BLOCK, 0)                                        \
    X(CL_HISTO_V_warp, "warp", warp, "16-byte loads, 1 shared histogram per warp, run aggregation",          \
      "per-warp sub-histograms in shared memory, 16-byte vector loads, and runs of equal "                   \
      "bytes within a thread counted with one atomic (aggregation): helps skewed input",                     \
      CL_V_BLOCK, 0)                                                                                         \
    X(CL_HISTO_V_fast, "fast", fast, "16-byte loads, 32 lane copies per block (conflict-free atomics)",      \
      "every lane of a warp owns a copy of the block's histogram laid out so that lane l "                   \
      "always hits bank l: no bank conflicts and no same-address collisions in a warp, for "                 \
      "any data; 16-byte vector loads, two in flight per thread", CL_V_BLOCK, 1024)                          \
    X(CL_HISTO_V_cub, "cub", cub, "cub::DeviceHistogram::HistogramEven",                                     \
      "the library reference: cub::DeviceHistogram::HistogramEven, temp storage allocated "                  \
      "outside the timed region", CL_V_LIBRARY, 0)

enum cl_histo_variant_id { CL_HISTO_VARIANTS(CL_VARIANT_ID) CL_HISTO_NVARIANTS };

/* The contract's table, in enum order (each file that reads it has its copy). */
static const cl_variant cl_histo_variants[CL_HISTO_NVARIANTS] = {CL_HISTO_VARIANTS(CL_VARIANT_ROW)};
/* Each row's threads per block where --block is not given (0: the family's, 256). */
static const int cl_histo_variant_blocks[CL_HISTO_NVARIANTS] = {CL_HISTO_VARIANTS(CL_VARIANT_BLOCK)};

enum cl_histo_dist { CL_HISTO_UNIFORM, CL_HISTO_TEXT, CL_HISTO_SKEWED };
/* show-source: histo sectioned,interleaved,privatized,warp,fast */
enum cl_histo_mode { CL_HISTO_BYTES, CL_HISTO_LETTERS };
/* show-source: end */

#define CL_HISTO_MAX_BINS 256
/* Counters are 32-bit and cub takes an int sample count. */
#define CL_HISTO_MAX_SIZE 2147483647ull
/* The byte that skewed input is mostly made of ('e', so letter bins skew too). */
#define CL_HISTO_SKEW_BYTE 0x65u

/* ---- input generator: 4 bytes per hash, 16 random bits per byte ---- */

/* One byte of dist from 16 random bits. text: spaces (18%) and lowercase
 * letters with English frequencies; skewed: 90% one byte, the rest uniform. */
CL_HD uint8_t cl_histo_symbol(int dist, uint32_t r)
{
    if (dist == CL_HISTO_UNIFORM)
        return (uint8_t)(r & 0xFFu);
    if (dist == CL_HISTO_SKEWED)
        return r < 58982u ? (uint8_t)CL_HISTO_SKEW_BYTE : (uint8_t)(r & 0xFFu);
    /* cumulative thresholds out of 65536, most frequent first */
    if (r < 11796u) return ' ';
    if (r < 18622u) return 'e';
    if (r < 23489u) return 't';
    if (r < 27878u) return 'a';
    if (r < 31912u) return 'o';
    if (r < 35656u) return 'i';
    if (r < 39283u) return 'n';
    if (r < 42683u) return 's';
    if (r < 45958u) return 'h';
    if (r < 49175u) return 'r';
    if (r < 51461u) return 'd';
    if (r < 53624u) return 'l';
    if (r < 55119u) return 'c';
    if (r < 56601u) return 'u';
    if (r < 57894u) return 'm';
    if (r < 59162u) return 'w';
    if (r < 60360u) return 'f';
    if (r < 61443u) return 'g';
    if (r < 62503u) return 'y';
    if (r < 63540u) return 'p';
    if (r < 64342u) return 'b';
    if (r < 64867u) return 'v';
    if (r < 65282u) return 'k';
    if (r < 65365u) return 'j';
    if (r < 65445u) return 'x';
    if (r < 65496u) return 'q';
    return 'z';
}

/* Bytes 4w..4w+3 of the input, little-endian in one word. */
CL_HD uint32_t cl_histo_word(uint64_t seed, int dist, uint64_t w)
{
    uint64_t h = cl_hash(seed, w);
    uint32_t out = 0;
    for (int j = 0; j < 4; j++)
        out |= (uint32_t)cl_histo_symbol(dist, (uint32_t)(h >> (16 * j)) & 0xFFFFu) << (8 * j);
    return out;
}

CL_HD uint8_t cl_histo_byte(uint64_t seed, int dist, uint64_t i)
{
    return (uint8_t)(cl_histo_word(seed, dist, i >> 2) >> (8 * (i & 3)));
}

/* ---- bins ---- */

/* show-source: histo sectioned,interleaved,privatized,warp,fast */
/* letters: a-z (either case) in bins of width letters; everything else: -1. */
CL_HD int cl_histo_bin(uint8_t c, int mode, int width)
{
    if (mode == CL_HISTO_BYTES)
        return c;
    unsigned k = (unsigned)(c | 0x20u) - 'a';
    return k < 26u ? (int)(k / (unsigned)width) : -1;
}

CL_HD int cl_histo_nbins(int mode, int width)
{
    return mode == CL_HISTO_BYTES ? 256 : (26 + width - 1) / width;
}
/* show-source: end */

/* ---- shared memory per block, as the GPU's kernels use it ----
 * privatized keeps one copy of the bins, warp one per warp of the block (a
 * whole number of warps: --block is a multiple of 32), fast 32 interleaved
 * copies, each of nbins 4-byte counters (dynamic shared memory); warp and fast
 * counting letters also keep the byte-to-bin table lut[256] (static; counting
 * bytes never reads it, and the compiler drops it). The CPU analogues report
 * these figures for the same parameters. */
#define CL_HISTO_WARP 32
#define CL_HISTO_LUT_BYTES 256

CL_HD size_t cl_histo_smem_dynamic(int variant, int nbins, int block)
{
    size_t bins = (size_t)nbins * 4u;
    return variant == CL_HISTO_V_privatized ? bins
         : variant == CL_HISTO_V_warp       ? bins * (size_t)(block / CL_HISTO_WARP)
         : variant == CL_HISTO_V_fast       ? bins * CL_HISTO_WARP
                                            : 0;
}

CL_HD size_t cl_histo_smem_per_block(int variant, int mode, int nbins, int block)
{
    bool lut = mode == CL_HISTO_LETTERS && (variant == CL_HISTO_V_warp || variant == CL_HISTO_V_fast);
    return cl_histo_smem_dynamic(variant, nbins, block) + (lut ? CL_HISTO_LUT_BYTES : 0);
}

/* ---- a student's kernel (a %%kernel cell for %histo, student.h) ----
 * The signature has no mode: a kernel counts one kind of bins, the lecture's
 * letters a-d, e-h, ..., y-z (width CL_HISTO_STUDENT_WIDTH, 7 bins), case
 * folded as cl_histo_bin folds it. Runs with other bins are refused. */
#define CL_HISTO_STUDENT_WIDTH 4
#define CL_HISTO_STUDENT_NBINS 7

/* The parameters a student's kernel takes (cl_student_contract.params). */
#define CL_HISTO_STUDENT_PARAMS "const unsigned char *data, long long n, unsigned int *histo"
static const cl_student_contract cl_histo_student = {
    CL_HISTO_STUDENT_PARAMS,
    "histo[] gets the lecture's letter bins (--bins letters --bin-width 4): a byte c that is a letter, "
    "either case, adds 1 to histo[((c | 0x20) - 'a') / 4] (a-d: 0, e-h: 1, ..., y-z: 6); every other "
    "byte is not counted. The 7 bins are zeroed before every launch. Block 256 threads; grid = SMs × "
    "blocks resident per SM (--grid overrides), usually fewer threads than bytes: loop with a grid "
    "stride (i += gridDim.x·blockDim.x) over data[0 .. n)",
    {256, 1, 1},
    0,
};

/* ---- the ops table ---- */

typedef struct cl_histo_args {
    int variant;                /* enum cl_histo_variant_id, or CL_VARIANT_STUDENT */
    const cl_student_kernel *student; /* the kernel run as CL_VARIANT_STUDENT, else NULL */
    uint64_t n;                 /* input bytes, 1..CL_HISTO_MAX_SIZE */
    uint64_t seed;
    int dist;                   /* enum cl_histo_dist; ignored when text is set */
    const uint8_t *text;        /* host bytes to count instead of generated input, or NULL */
    int mode;                   /* enum cl_histo_mode */
    int width;                  /* letters per bin (letters mode) */
    int block;                  /* threads per block, a multiple of 32 (a student's: student->block) */
    int grid;                   /* blocks; 0 = SMs x resident blocks (a student's: student->grid first) */
    int warmup, reps;           /* reps in 1..CL_MAX_REPS */
} cl_histo_args;

typedef struct cl_histo_result {
    uint64_t counts[CL_HISTO_MAX_BINS]; /* the last timed run's histogram */
    int nbins;
    cl_times times;             /* h2d_ms: the text's copy, when text was given */
    cl_launch launch;
    char impl[160];             /* what actually ran, e.g. "CPU analogue: 2 host threads ..." */
    char config[160];           /* the launch in words: the row's on a GPU, the analogue's on the CPU */
} cl_histo_result;

typedef struct cl_histo_ops {
    /* Runs one variant: builds the input, warm-up, timed reps, the histogram.
     * 0, or -1 with err set (CUDA errors carry cudaGetErrorString). */
    int (*run)(const cl_histo_args *a, cl_histo_result *r, char *err);
    /* Bytes of device memory a run needs beyond the input itself (flush
     * buffer, histogram, library temp storage). */
    uint64_t (*overhead)(void);
    /* Whether run() takes CL_VARIANT_STUDENT (a student's compiled kernel). */
    bool runs_student;
} cl_histo_ops;

/* The exact CPU histogram of the input a describes (generated from seed and
 * dist, or a->text), in host threads (cpu/histo_ref.c). counts gets nbins
 * entries; the rest are zeroed. 0, or -1 with err set. */
int cl_histo_reference(const cl_histo_args *a, uint64_t counts[CL_HISTO_MAX_BINS], char *err);

/* Fills buf[0..n) with the generated input, in host threads (cpu/histo_ref.c). */
void cl_histo_fill(uint8_t *buf, uint64_t n, uint64_t seed, int dist);

#ifdef __cplusplus
}
#endif
#endif
