/* stencil.h — the stencil family (%stencil) on both sides of the backend ABI:
 * the variants (the family contract, family.h), the arguments of one run, the ops each backend
 * implements and the host check shared by both.
 *
 * 1D: out[i] = sum_{j=-R..R} w[j+R] * in[i+j].
 * 2D: out[y][x] = sum_{dy,dx=-r..r} w[(dy+r)*k + dx+r] * in[y+dy][x+dx]
 *     (correlation order: the filter is not flipped; the lecture's filters
 *     are symmetric, so it is also their convolution).
 * Boundary: zero padding. A ghost cell outside the array reads as 0.
 * Summation order, everywhere (GPU kernels, CPU analogues, reference):
 * terms in ascending j (2D: row by row, dx fastest), each added with one
 * fused multiply-add (fmaf) into a float accumulator that starts at 0. So a
 * correct result equals the reference bit for bit.
 *
 * Inputs: in[i] = cl_uniform(seed, i) with i the linear index (2D: y*nx + x).
 *
 * A student's %%kernel (student.h) is one more variant, run as
 * CL_VARIANT_STUDENT under cl_stencil_student (1D) or cl_stencil_student_2d
 * (%%kernel --dim 2). Its weights come as a pointer (its module cannot see our
 * __constant__ ones), its output is filled with a sentinel before every rep
 * and guarded on both sides, and it may add its terms in any order: its
 * check's tolerance is that of any summation order (cl_stencil_rtol).
 */
#ifndef CUDALAB_STENCIL_H
#define CUDALAB_STENCIL_H

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

#define CL_STENCIL_MAX_RADIUS 1024     /* 1D; and the halo must fit: R <= block */
#define CL_STENCIL_MAX_K 15            /* 2D filter side (odd), k*k weights in constant memory */
#define CL_STENCIL_MAX_WEIGHTS (2 * CL_STENCIL_MAX_RADIUS + 1)
/* fast: the outputs one thread computes, CL_STENCIL_FAST_VX neighbours along x (one float4) times
 * CL_STENCIL_FAST_ROWS rows in 2D (4, not 8: a thread's accumulators and the rows it has in flight
 * must fit the 64 registers a block of 1024 threads allows, or the rows' loads wait one by one); 1D radii up to CL_STENCIL_FAST_MAX_R are unrolled into registers
 * (beyond, a runtime loop slides the window); every 2D filter (k <= CL_STENCIL_MAX_K) is unrolled. */
#define CL_STENCIL_FAST_VX 4
#define CL_STENCIL_FAST_ROWS 4
#define CL_STENCIL_FAST_MAX_R 16
#define CL_STENCIL_STR_(x) #x
#define CL_STENCIL_STR(x) CL_STENCIL_STR_(x)
#define CL_STENCIL_FAST_VX_S CL_STENCIL_STR(CL_STENCIL_FAST_VX)       /* as text: the row's words */
#define CL_STENCIL_FAST_ROWS_S CL_STENCIL_STR(CL_STENCIL_FAST_ROWS)

/* X(id, name, impl, launch, what it teaches, flags, block): one row per variant, in the
 * order `--variant all` runs them (family.h says what is derived from it). */
#define CL_STENCIL_VARIANTS(X)                                                                                  \
    X(CL_STENCIL_NAIVE, "naive", naive, "1D: ceil(N/B) blocks of B; 2D: ceil(W/T) x ceil(H/T) blocks of T x T", \
      "one thread per output reads its 2R+1 (2D: k²) input terms straight from global memory, so "              \
      "every input is loaded 2R+1 (k²) times; the caches absorb part of it, the load "                          \
      "instructions remain", CL_V_BLOCK, 0)                                                                     \
    X(CL_STENCIL_TILED, "tiled", tiled, "as naive, plus (B+2R) or (T+k-1)^2 floats of shared memory",           \
      "the block first copies the inputs its outputs need into shared memory once (1D: "                        \
      "blockDim + 2R floats, its elements plus a halo of R on each side; 2D: a (T+k-1)² tile "                  \
      "for a T x T output tile), __syncthreads, then reads every term from there", CL_V_BLOCK, 0)               \
    X(CL_STENCIL_FAST, "fast", fast, "1D: ceil(N/" CL_STENCIL_FAST_VX_S "B) blocks of B; 2D: ceil(W/"           \
      CL_STENCIL_FAST_VX_S "BX) x ceil(H/" CL_STENCIL_FAST_ROWS_S "BY) blocks of BX x BY",                      \
      "each thread computes " CL_STENCIL_FAST_VX_S " neighbouring outputs (2D: " CL_STENCIL_FAST_VX_S " x "     \
      CL_STENCIL_FAST_ROWS_S ") from a window of the input held in "                                            \
      "registers, read with 16- or 8-byte loads that neighbouring threads coalesce (the halo's rereads hit "    \
      "the L1), the radius unrolled so every weight is an immediate operand: memory-bound, at the "             \
      "copy's roof", CL_V_BLOCK, 0)

typedef enum cl_stencil_variant_id {
    CL_STENCIL_VARIANTS(CL_VARIANT_ID)
    CL_STENCIL_NVARIANTS
} cl_stencil_variant_id;

/* The contract's table, in enum order (each file that reads it has its copy). */
static const cl_variant cl_stencil_variants[CL_STENCIL_NVARIANTS] = {CL_STENCIL_VARIANTS(CL_VARIANT_ROW)};

/* The parameters a student's kernel takes (cl_student_contract.params). */
#define CL_STENCIL_STUDENT_PARAMS "const float *in, float *out, const float *w, int n, int R"
/* What a student's %%kernel for %stencil implements (student.h). */
static const cl_student_contract cl_stencil_student = {
    CL_STENCIL_STUDENT_PARAMS,
    "one thread per output, i = blockIdx.x*blockDim.x + threadIdx.x: out[i] = sum over j = -R..R of "
    "w[j+R]*in[i+j], where in[] outside 0..n-1 reads as 0; block 256, grid ceil(n/256); dynamic shared "
    "memory for blockDim.x + 2R floats unless --smem",
    {256, 1, 1}, 0};
/* The parameters a student's kernel takes (cl_student_contract.params). */
#define CL_STENCIL_STUDENT_2D_PARAMS "const float *in, float *out, const float *w, int width, int height, int r"
static const cl_student_contract cl_stencil_student_2d = {
    CL_STENCIL_STUDENT_2D_PARAMS,
    "one thread per pixel, col = blockIdx.x*blockDim.x + threadIdx.x, row = blockIdx.y*blockDim.y + "
    "threadIdx.y: out[row*width + col] = sum over dy, dx = -r..r of w[(dy+r)*(2r+1) + dx+r]*in[(row+dy)*width "
    "+ col+dx], where pixels outside the image read as 0; block 16x16, grid ceil(width/16) x "
    "ceil(height/16); dynamic shared memory for (blockDim.x + 2r)*(blockDim.y + 2r) floats unless --smem",
    {16, 16, 1}, 0};

/* The dynamic shared memory a student's kernel gets unless --smem: its block's tile with the halo. */
static inline size_t cl_stencil_student_smem(int dim, int radius, const int *block)
{
    size_t x = (size_t)block[0] + 2 * (size_t)radius, y = dim == 1 ? 1 : (size_t)block[1] + 2 * (size_t)radius;
    return x * y * sizeof(float);
}

typedef struct cl_stencil_args {
    int dim;                      /* 1 or 2 */
    uint64_t nx, ny;              /* elements per row and rows (ny = 1 in 1D) */
    int radius;                   /* 1D: R; 2D: (k-1)/2 */
    int k;                        /* 2*radius + 1: weights per row (1D: all of them) */
    const float *weights;         /* 1D: k values; 2D: k*k, row-major */
    int block[2];                 /* threads per block, x and y (1D: B x 1); a 2D tiled block's input
                                     tile is (block[0] + 2r) x (block[1] + 2r) */
    uint64_t seed;
    int reps, warmup;
    const cl_student_kernel *student; /* CL_VARIANT_STUDENT: the kernel (its own block), else NULL */
    int kept_copies;              /* copies of the output the check of the timed reps keeps on a GPU
                                     (cl_gpu_kept_copies): what overhead_bytes counts; 0: the drawn ones */
} cl_stencil_args;

typedef struct cl_stencil_result {
    cl_launch launch;
    cl_times times;
    char impl[160];               /* what ran, in words */
} cl_stencil_result;

typedef struct cl_stencil_ops {
    /* Generates the input from a->seed, runs warmup + reps timed launches of
     * variant v (enum cl_stencil_variant_id, or CL_VARIANT_STUDENT with
     * a->student), and copies the output (nx*ny floats) into out when out is
     * not NULL. 0, or -1 with a reason in err (a student kernel's writes outside
     * out among them). */
    int (*run)(int v, const cl_stencil_args *a, float *out, cl_stencil_result *r, char *err);
    /* Bytes run() allocates beside input and output (cache flush scratch). */
    uint64_t (*overhead_bytes)(const cl_stencil_args *a);
    /* Whether run() takes students' kernels. */
    bool runs_student;
} cl_stencil_ops;

/* The outcome of comparing an output with the host reference (cpu/stencil_cpu.c). */
typedef struct cl_stencil_check {
    uint64_t checked;             /* elements compared (all, or a sample: see sampled) */
    int sampled;                  /* 1 when only a deterministic sample was compared */
    uint64_t mismatches;          /* elements outside the tolerance */
    uint64_t bit_exact;           /* elements equal to the reference bit for bit */
    uint64_t first_bad;           /* linear index of the first mismatch (when any) */
    float got, want;              /* its value and the reference's */
    double max_abs_err, max_rel_err;   /* rel: |out - ref| / sum |w * x| */
    double rtol;
} cl_stencil_check;

/* Relative tolerance of the check, against sum_j |w_j * x_{i+j}| of each element:
 * our kernels add in the reference's order. A student's kernel may add its
 * terms in any order, each rounding at most 2^-24 of the sum of magnitudes:
 * terms * 2^-24 when that is larger. */
#define CL_STENCIL_RTOL 1e-6
static inline double cl_stencil_rtol(const cl_stencil_args *a)
{
    double terms = a->dim == 1 ? a->k : (double)a->k * a->k, any_order = terms * 0x1p-24;
    return a->student && any_order > CL_STENCIL_RTOL ? any_order : CL_STENCIL_RTOL;
}
/* Multiply-adds the check spends at most: beyond it, a deterministic sample. */
#define CL_STENCIL_CHECK_BUDGET (1ull << 28)

/* Regenerates the input of a on the host and compares out with the
 * reference (host threads). 0, or -1 with a reason in err (out of memory). */
int cl_stencil_verify(const cl_stencil_args *a, const float *out, cl_stencil_check *c,
                               char *err);

#ifdef __cplusplus
}
#endif
#endif
