/* vecadd.h — the vector-add family (%vecadd) on both sides of the backend ABI:
 * the operations (add in float, daxpy in double), the host input generator,
 * the exact expected value of every element, and the one run function each
 * backend implements.
 *
 * Unlike the other timed families, the inputs are generated on the HOST from
 * the seed: the lecture's lesson is host data travelling to the device and
 * back, so every rep times the host-to-device copies, the kernel and the
 * device-to-host copy separately (CUDA events on the GPU; the monotonic clock
 * around memcpy and the host threads on the CPU).
 *
 * The variants (--variant) are the kernels that compute it: ours, and a
 * student's %%kernel (student.h), which implements add only, under the
 * contract cl_vecadd_student. Its output is filled with a sentinel before
 * every rep and followed on the device by guard elements that are checked
 * after the run, so an element never written or one written past the end of
 * C (a missing bounds check) fails the check.
 *
 * Both sides compute daxpy with an explicit fused multiply-add (fma() on the
 * device and in C99 on the host, both correctly rounded), so every element
 * must match the host's value bit for bit; a float add is one correctly
 * rounded operation everywhere. The check is therefore exact, tolerance 0.
 */
#ifndef CUDALAB_VECADD_H
#define CUDALAB_VECADD_H

#include <math.h>
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

/* X(id, name, impl, launch, what it teaches, flags, block): one row per operation, the
 * family contract's shape (family.h); --op chooses among them. */
#define CL_VECADD_OPS(X)                                                                            \
    X(CL_VECADD_ADD, "add", add, "ceil(N/B) blocks of B, one element per thread",                   \
      "z[i] = x[i] + y[i] in float: 8 bytes in, 4 bytes out per element", CL_V_BLOCK, 0)            \
    X(CL_VECADD_DAXPY, "daxpy", daxpy, "ceil(N/B) blocks of B, one element per thread",             \
      "y[i] = a*x[i] + y[i] in double (one fma): 16 bytes in, 8 bytes out per element",             \
      CL_V_BLOCK, 0)

typedef enum cl_vecadd_op { CL_VECADD_OPS(CL_VARIANT_ID) CL_VECADD_NOPS } cl_vecadd_op;

/* The operations' table, in enum order (each file that reads it has its copy). */
static const cl_variant cl_vecadd_op_rows[CL_VECADD_NOPS] = {CL_VECADD_OPS(CL_VARIANT_ROW)};

/* X(id, name, impl, launch, what it teaches, flags, block): the family contract's variants
 * (family.h), the kernels --variant chooses; a student's kernel is one more. */
#define CL_VECADD_VARIANTS(X)                                                                             \
    X(CL_VECADD_V_BUILTIN, "builtin", builtin, "ceil(N/B) blocks of B (--block), one element per thread", \
      "the lecture's vecAddKernel: i = blockIdx.x*blockDim.x + threadIdx.x; if (i < n) ...",              \
      CL_V_BLOCK, 0)

enum cl_vecadd_variant_id { CL_VECADD_VARIANTS(CL_VARIANT_ID) CL_VECADD_NVARIANTS };

static const cl_variant cl_vecadd_variants[CL_VECADD_NVARIANTS] = {CL_VECADD_VARIANTS(CL_VARIANT_ROW)};

/* The parameters a student's kernel takes (cl_student_contract.params). */
#define CL_VECADD_STUDENT_PARAMS "const float *A, const float *B, float *C, int n"
/* What a student's %%kernel for %vecadd implements (student.h): --op add only. */
static const cl_student_contract cl_vecadd_student = {
    CL_VECADD_STUDENT_PARAMS,
    "one thread per element: i = blockIdx.x·blockDim.x + threadIdx.x, C[i] = A[i] + B[i] for i < n; "
    "block 256 (--block), grid ⌈n/threads per block⌉ (--grid overrides)",
    {256, 1, 1},
    0,
};

/* Guard elements after a student kernel's C on the device, and the bit
 * pattern they and C hold before each rep (a NaN no addition produces). */
#define CL_VECADD_GUARD 4096
#define CL_VECADD_SENTINEL 0xFFFFFFFFu

typedef struct cl_vecadd_args {
    uint64_t n;                 /* elements, >= 1 */
    cl_vecadd_op op;
    int pinned;                 /* host buffers: 1 = page-locked (cudaMallocHost), 0 = malloc */
    int block;                  /* threads per block: multiple of 32, 32..1024 (built-in kernel) */
    const cl_student_kernel *student; /* --op add with a student's kernel instead, else NULL */
    double alpha;               /* daxpy's a */
    uint64_t seed;
    int reps, warmup;
    int check;                  /* compare the copied-back result with the host's, element by element */
} cl_vecadd_args;

typedef struct cl_vecadd_result {
    cl_times h2d, kernel, d2h;  /* per rep, ms */
    cl_launch launch;
    uint64_t mismatches;        /* elements whose result differs from the host's (check only) */
    uint64_t first_bad;         /* index of the first one */
    double got, want;           /* its value and the expected one */
    int64_t guard_hit;          /* student kernels: the first element past the end of C that was
                                 * written (n + k), -1 when the guards are intact */
    char impl[200];             /* what ran, in words */
} cl_vecadd_result;

typedef struct cl_vecadd_ops {
    int (*run)(const cl_vecadd_args *a, cl_vecadd_result *out, char *err);
    /* Whether run() takes students' kernels (a->student). */
    bool runs_student;
} cl_vecadd_ops;

/* Bytes per element: host->device, device->host, and kept on the device by a run: x, y, and z for
 * add, plus for a student's kernel (add only) the copies of C that the check of its timed reps
 * keeps on a GPU (copies: cl_gpu_kept_copies; the built-in kernels are the check's reference: none). */
static inline uint64_t cl_vecadd_in_bytes(cl_vecadd_op op) { return op == CL_VECADD_DAXPY ? 16 : 8; }
static inline uint64_t cl_vecadd_out_bytes(cl_vecadd_op op) { return op == CL_VECADD_DAXPY ? 8 : 4; }
static inline uint64_t cl_vecadd_device_bytes(cl_vecadd_op op, bool student, int copies)
{
    return op == CL_VECADD_DAXPY ? 16 : 12 + (student ? 4 * (uint64_t)copies : 0);
}

/* The inputs, on the host: x from even counters, y from odd ones. */
static inline float cl_vecadd_xf(uint64_t seed, uint64_t i) { return cl_uniform(seed, 2 * i); }
static inline float cl_vecadd_yf(uint64_t seed, uint64_t i) { return cl_uniform(seed, 2 * i + 1); }

/* Uniform double in [-1, 1) with 53 random bits, never 0. */
static inline double cl_vecadd_double(uint64_t seed, uint64_t i)
{
    uint64_t r = cl_hash(seed, i) >> 11;
    return ((double)r + 0.5) * (2.0 / 9007199254740992.0) - 1.0;
}
static inline double cl_vecadd_xd(uint64_t seed, uint64_t i) { return cl_vecadd_double(seed, 2 * i); }
static inline double cl_vecadd_yd(uint64_t seed, uint64_t i) { return cl_vecadd_double(seed, 2 * i + 1); }

/* Fills the host inputs of (op, n, seed): float x, y for add, double for daxpy. */
static inline void cl_vecadd_fill(cl_vecadd_op op, uint64_t n, uint64_t seed, void *x, void *y)
{
    for (uint64_t i = 0; i < n; i++) {
        if (op == CL_VECADD_DAXPY) {
            ((double *)x)[i] = cl_vecadd_xd(seed, i);
            ((double *)y)[i] = cl_vecadd_yd(seed, i);
        } else {
            ((float *)x)[i] = cl_vecadd_xf(seed, i);
            ((float *)y)[i] = cl_vecadd_yf(seed, i);
        }
    }
}

/* Compares out (the copied-back result) with the host's exact values,
 * regenerating the inputs from the seed; fills the mismatch fields of r. */
static inline void cl_vecadd_verify(const cl_vecadd_args *a, const void *out, cl_vecadd_result *r)
{
    r->mismatches = 0;
    for (uint64_t i = 0; i < a->n; i++) {
        double got, want;
        int same;
        if (a->op == CL_VECADD_DAXPY) {
            got = ((const double *)out)[i];
            want = fma(a->alpha, cl_vecadd_xd(a->seed, i), cl_vecadd_yd(a->seed, i));
            same = got == want;
        } else {
            float g = ((const float *)out)[i];
            float w = cl_vecadd_xf(a->seed, i) + cl_vecadd_yf(a->seed, i);
            same = g == w;
            got = g, want = w;
        }
        if (!same && r->mismatches++ == 0) {
            r->first_bad = i;
            r->got = got;
            r->want = want;
        }
    }
}

#ifdef __cplusplus
}
#endif
#endif
