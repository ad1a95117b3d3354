/* reduce.h — the reduction family (%reduce) on both sides of the backend ABI:
 * the variants (the family contract, family.h), the operations and element
 * types, and the one run function each backend implements.
 *
 * The variants are the rows of CL_REDUCE_VARIANTS; each backend's table of
 * implementations is generated from the rows' impl (rd_gpu_<impl> in
 * cuda/reduce_kernels.h, cpu_rd_<impl> in cpu/reduce_cpu.h). Adding a
 * variant = its row here, its kernel in cuda/, its CPU analogue in cpu/.
 *
 * A student's %%kernel (student.h) is one more variant, run as
 * CL_VARIANT_STUDENT under the contract cl_reduce_student: float sum only.
 * Its partials come back to the host, which adds them in double and checks
 * each against the expected sum of its block's section (cl_reduce_partials_check).
 * With a second student kernel (%reduce --second NAME, the same signature) the
 * partials are also reduced on the device: after the timed reps the backend
 * launches it once, one block, over the last rep's partials (input = the
 * partials, n = their count) into one float, which becomes the run's value.
 *
 * Inputs: float from cl_uniform (in [-1, 1)), int from cl_uniform_int in
 * [CL_REDUCE_INT_LO, CL_REDUCE_INT_HI]. Integer sums accumulate in int64 on
 * both backends (the device too), so no size that fits in memory can
 * overflow: |sum| <= 1000 * N < 2^63 for every N below 2^53.
 */
#ifndef CUDALAB_REDUCE_H
#define CUDALAB_REDUCE_H

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

#define CL_REDUCE_INT_LO (-1000)
#define CL_REDUCE_INT_HI 1000

/* Thread coarsening of the multiblock variant: each thread adds this many
 * pairs of elements before the tree (a block's segment is 2 * block * this). */
#define CL_REDUCE_COARSEN 8
/* Threads of the single block that reduces the partials (second pass). */
#define CL_REDUCE_FINAL_BLOCK 1024

/* X(id, name, impl, launch on a GPU, what it teaches, flags, block): one row per variant, in
 * the order `--variant all` runs them (family.h says what is derived from it).
 * The launch is the same on the CPU backend, whose analogues keep the grid.
 * fast's block: its one wave of 1024-thread blocks read 2^26 floats at 102% of
 * CUB's GB/s on an H100, of 256-thread blocks at 99%. */
#define CL_REDUCE_VARIANTS(X)                                                                       \
    X(CL_REDUCE_CPU, "cpu", cpu, "1 host thread",                                                   \
      "host loop as taught: one thread, one accumulator (double for float)", CL_V_HOST, 0)          \
    X(CL_REDUCE_DIVERGENT, "divergent", divergent, "ceil(N/2B) blocks of B + 1 block of 1024",      \
      "in-block tree, stride doubling, if (t % (2*stride) == 0): warps diverge", CL_V_BLOCK, 0)     \
    X(CL_REDUCE_CONVERGENT, "convergent", convergent, "ceil(N/2B) blocks of B + 1 block of 1024",   \
      "in-block tree, stride halving from B/2, if (t < stride): active threads packed",             \
      CL_V_BLOCK, 0)                                                                                \
    X(CL_REDUCE_MULTIBLOCK, "multiblock", multiblock, "ceil(N/16B) blocks of B + 1 block of 1024",  \
      "convergent tree after each thread adds 16 elements; a 2nd kernel adds partials",             \
      CL_V_BLOCK, 0)                                                                                \
    X(CL_REDUCE_FAST, "fast", fast, "1 wave of B-thread blocks + 1 block of 1024",                  \
      "16-byte grid-stride loads, 4 in flight, warp shuffles (__shfl_down_sync), one "              \
      "partial per block", CL_V_BLOCK, 1024)                                                        \
    X(CL_REDUCE_CUB, "cub", cub, "chosen by CUB",                                                   \
      "cub::DeviceReduce::Sum/Max/Min, the library reference (temp storage allocated "              \
      "outside the timing)", CL_V_LIBRARY, 0)

typedef enum cl_reduce_variant_id {
    CL_REDUCE_VARIANTS(CL_VARIANT_ID)
    CL_REDUCE_NVARIANTS
} cl_reduce_variant_id;

/* The contract's table, in enum order (each file that reads it has its copy). */
static const cl_variant cl_reduce_variants[CL_REDUCE_NVARIANTS] = {CL_REDUCE_VARIANTS(CL_VARIANT_ROW)};
/* Each row's threads per block where --block is not given (0: the family's, 256). */
static const int cl_reduce_variant_blocks[CL_REDUCE_NVARIANTS] = {CL_REDUCE_VARIANTS(CL_VARIANT_BLOCK)};

/* The parameters a student's kernel takes (cl_student_contract.params). */
#define CL_REDUCE_STUDENT_PARAMS "const float *input, float *partial, int n"
/* What a student's %%kernel for %reduce implements (student.h): a float sum. */
static const cl_student_contract cl_reduce_student = {
    CL_REDUCE_STUDENT_PARAMS,
    "B threads per block (--block, 256 by default; B = the block's threads), grid ⌈n/(2B)⌉ (--grid "
    "overrides): block b sums input[2Bb, 2Bb + 2B) ∩ [0, n) and writes partial[b]; the harness adds "
    "the partials on the host, in double (--second NAME2: your kernel NAME2 reduces them on the device, one block)",
    {256, 1, 1},
    0,
};

/* The elements block b of a student's kernel sums, by the launch rule: 2B. */
static inline uint64_t cl_reduce_student_section(int threads) { return 2 * (uint64_t)threads; }
/* Partials after a student kernel's on the device, filled with a sentinel and checked after the run. */
#define CL_REDUCE_GUARD 1024

typedef enum cl_reduce_op { CL_REDUCE_SUM, CL_REDUCE_MAX, CL_REDUCE_MIN } cl_reduce_op;
typedef enum cl_reduce_dtype { CL_REDUCE_FLOAT, CL_REDUCE_INT } cl_reduce_dtype;

/* Bytes of one accumulator on a GPU: integer sums add in int64, every other
 * (op, dtype) in the element's own 4 bytes. */
CL_HD size_t cl_reduce_acc_bytes(cl_reduce_op op, cl_reduce_dtype dtype)
{
    return op == CL_REDUCE_SUM && dtype == CL_REDUCE_INT ? 8 : 4;
}

/* The warp partials of a block reduced with shuffles: block_shuffle's
 * __shared__ A warp_vals[32] (cuda/reduce_device.h), one per warp of the
 * largest block. */
#define CL_REDUCE_WARP_SLOTS 32

/* Shared memory per block of variant v's first pass on a GPU, in bytes, for a
 * block of `block` threads and accumulators of acc bytes: the tree variants
 * keep one accumulator per thread (dynamic shared memory), fast one per warp
 * slot (static), the host loop and the library none of their own. The CPU
 * analogues report these, not what their emulation allocates. */
CL_HD size_t cl_reduce_smem_dynamic(int v, int block, size_t acc)
{
    return v == CL_REDUCE_DIVERGENT || v == CL_REDUCE_CONVERGENT || v == CL_REDUCE_MULTIBLOCK
               ? (size_t)block * acc : 0;
}

CL_HD size_t cl_reduce_smem_per_block(int v, int block, size_t acc)
{
    return cl_reduce_smem_dynamic(v, block, acc) + (v == CL_REDUCE_FAST ? CL_REDUCE_WARP_SLOTS * acc : 0);
}

/* The same for the second pass over the partials (one block of
 * CL_REDUCE_FINAL_BLOCK threads): a tree for the tree variants, shuffles for fast. */
CL_HD size_t cl_reduce_final_smem_dynamic(int v, size_t acc)
{
    return v == CL_REDUCE_FAST ? 0 : (size_t)CL_REDUCE_FINAL_BLOCK * acc;
}

CL_HD size_t cl_reduce_final_smem(int v, size_t acc)
{
    return cl_reduce_final_smem_dynamic(v, acc) + (v == CL_REDUCE_FAST ? CL_REDUCE_WARP_SLOTS * acc : 0);
}

/* What one timed run reduces and how. Every element is 4 bytes (float or int32). */
typedef struct cl_reduce_args {
    uint64_t n;                   /* elements, >= 1 */
    cl_reduce_op op;
    cl_reduce_dtype dtype;
    int block;                    /* threads per block of the first pass: power of two, 32..1024 */
    const cl_student_kernel *student; /* CL_VARIANT_STUDENT: the kernel (float sum), else NULL */
    const cl_student_kernel *second;  /* student: the kernel of the second pass over the partials
                                         (one block, its own threads), else NULL: added on the host */
    float *partials;              /* student: host room for the partials, copied back after the run */
    uint64_t npartials;           /* its length: at least the kernel's grid */
    uint64_t seed;
    int reps;                     /* 1..CL_MAX_REPS */
    int warmup;
    int kept_copies;              /* copies of the output the check of the timed reps keeps on a GPU
                                     (cl_gpu_kept_copies): what overhead_bytes counts; 0: the drawn ones */
} cl_reduce_args;

typedef struct cl_reduce_result {
    double fvalue;                /* float result (as the variant computed it, widened) */
    int64_t ivalue;               /* int result */
    cl_launch launch;             /* the first (main) pass */
    cl_launch final;              /* the pass that reduces the partials; kernels == 0 when none */
    cl_times times;
    char impl[160];               /* what actually ran, in words ("CUDA kernels ...", "CPU analogue ...") */
    uint64_t partials;            /* student: partials written to a->partials (the grid) */
    int64_t guard_hit;            /* student: the first partial past the grid that was written, else -1 */
    int64_t final_guard_hit;      /* second pass: the first slot past its one result written, else -1 */
} cl_reduce_result;

typedef struct cl_reduce_ops {
    /* Generates the input from a->seed, runs a->warmup untimed and a->reps timed
     * reductions with variant v (enum cl_reduce_variant_id), and fills out. 0, or -1 with a reason in err. */
    int (*run)(int v, const cl_reduce_args *a, cl_reduce_result *out, char *err);
    /* Bytes run() allocates for args a beside the input itself (partials,
     * cache-flush scratch, library temp storage): for the size check. */
    uint64_t (*overhead_bytes)(const cl_reduce_args *a);
    /* Whether run() takes students' kernels (CL_VARIANT_STUDENT, the kernel in the args). */
    bool runs_student;
} cl_reduce_ops;

/* Exact facts about one seeded input, computed on the host (cpu/reduce_ref.c). */
typedef struct cl_reduce_ref {
    double sum, max, min;         /* float input: accumulated in double */
    int64_t isum, imax, imin;     /* int input: exact */
    double sum_sq;                /* sum of squares (float input): sqrt is the check's scale */
} cl_reduce_ref;

/* Regenerates the input of (n, dtype, seed) on the host with the same
 * generator as the device and reduces it with every operation. Uses host
 * threads; deterministic. 0, or -1 with a reason in err (out of memory). */
int cl_reduce_reference(uint64_t n, cl_reduce_dtype dtype, uint64_t seed, cl_reduce_ref *out,
                        char *err);

/* The first of count partials (block b summed input[section·b, section·b + section) ∩ [0, n)
 * of the float input of seed) off its expected sum in double by more than
 * rtol · max(|sum|, sqrt(Σx²)) of its section, rtol = 1e-5 · log2(section);
 * index -1 when every partial is right. */
typedef struct cl_reduce_partial_check {
    int64_t index;
    double got, want;
} cl_reduce_partial_check;
void cl_reduce_partials_check(uint64_t n, uint64_t seed, uint64_t section, const float *partials,
                              uint64_t count, cl_reduce_partial_check *out);

#ifdef __cplusplus
}
#endif
#endif
