/* coalesce.h — the memory-coalescing family (%coalesce) on both sides of the
 * backend ABI: one copy kernel whose neighbouring threads touch addresses
 * `stride` elements apart, its variants (the family contract, family.h) and
 * the run function.
 *
 * The access pattern: N floats are viewed as a matrix of m = ceil(N/s) rows
 * and s columns (row-major, the last row possibly short), and thread t copies
 * the element at row t % m, column t / m, i.e. index (t % m)·s + t / m. With
 * s = 1 that is index t (fully coalesced); with s > 1 threads t and t+1 are s
 * elements apart, so a warp's 32 accesses spread over up to 32 DRAM bursts
 * instead of 4. Every element is still copied exactly once, so the useful
 * bytes (8·N: read + write) and the memory are the same at every stride and
 * the check is exact: out[i] must equal the input element i bit for bit.
 *
 * %coalesce --layout row|col is the same kernel on an R x C matrix: row-wise
 * traversal is stride 1, column-wise traversal is stride C (the row length).
 *
 * A student's %%kernel (student.h) is one more variant under
 * cl_coalesce_student: it is given the experiment's n and stride and copies
 * every element in whatever order its threads choose, on the same input with
 * the same timing and exact check. Its output is guarded on both sides and
 * filled with a NaN sentinel before every rep, and its warm-up copies a salted
 * input, so an element never written, or one written outside out, is named.
 */
#ifndef CUDALAB_COALESCE_H
#define CUDALAB_COALESCE_H

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

/* X(id, name, impl, launch, what it teaches, flags, block): one row per traversal (family.h).
 * Each belongs to an experiment: --stride runs `stride`, --layout row|col the
 * layout's own; --variant names it beside students' kernels (by default ours). */
#define CL_COALESCE_VARIANTS(X)                                                                     \
    X(CL_COALESCE_STRIDE, "stride", stride, "ceil(N/B) blocks of B, one element per thread (stride 1: " \
      "ceil(N/8B), 8 elements a thread, each a warp's 32 neighbours)",                              \
      "thread t copies element (t % m)*s + t/m: neighbours s elements apart", CL_V_BLOCK, 0)        \
    X(CL_COALESCE_ROW, "row", row, "ceil(R*C/8B) blocks of B, 8 elements a thread, each a warp's "   \
      "32 neighbours",                                                                              \
      "row-wise traversal of an R x C row-major matrix: neighbours 1 element apart",                \
      CL_V_BLOCK, 0)                                                                                \
    X(CL_COALESCE_COL, "col", col, "ceil(R*C/B) blocks of B, one element per thread",               \
      "column-wise traversal: neighbours C elements (one row) apart", CL_V_BLOCK, 0)

typedef enum cl_coalesce_variant_id {
    CL_COALESCE_VARIANTS(CL_VARIANT_ID) CL_COALESCE_NVARIANTS
} cl_coalesce_variant_id;

/* The contract's table, in enum order (each file that reads it has its copy). */
static const cl_variant cl_coalesce_variants[CL_COALESCE_NVARIANTS] = {CL_COALESCE_VARIANTS(CL_VARIANT_ROW)};

/* What a student's %%kernel for %coalesce implements (student.h). n and stride
 * are 64-bit, as ours (an array may pass 2^32 floats): unsigned long long,
 * which is what uint64_t is on the device (size_t is another type). The
 * launch is ours: one thread per element of the ceil(n/stride) x stride view
 * (cl_coalesce_threads), so the lecture's strided copy runs unchanged. */
/* The parameters a student's kernel takes (cl_student_contract.params). */
#define CL_COALESCE_STUDENT_PARAMS "const float *in, float *out, unsigned long long n, unsigned long long stride"
static const cl_student_contract cl_coalesce_student = {
    CL_COALESCE_STUDENT_PARAMS,
    "copy every element, out[i] = in[i] for every i < n, with any mapping of threads to elements (the "
    "traversal is yours; stride is the experiment's: --stride S, 1 under --layout row, the row length C "
    "under col); one thread per element of the ceil(n/stride) x stride view as ours: ceil(n/stride)*stride "
    "threads, up to stride-1 past n (compare with n), in ceil(threads/B) blocks of B = 256 (--block: 1D, "
    "whole warps); --grid overrides",
    {256, 1, 1},
    0,
};

typedef struct cl_coalesce_args {
    uint64_t n;                 /* elements (floats), >= 1 */
    uint64_t stride;            /* elements between neighbouring threads, 1..n */
    int block;                  /* threads per block: multiple of 32, 32..1024 (ours) */
    const cl_student_kernel *student; /* a student's kernel (its own block and grid) instead, else NULL */
    uint64_t seed;
    int reps, warmup;
    int check;                  /* copy the output back and compare it element by element */
} cl_coalesce_args;

typedef struct cl_coalesce_result {
    cl_times times;
    cl_launch launch;
    uint64_t mismatches, first_bad;
    uint64_t unwritten;         /* of the mismatches, outputs still NaN: never written (a student's) */
    float got, want;
    char impl[200];
} cl_coalesce_result;

typedef struct cl_coalesce_ops {
    /* Generates the input from a->seed, runs warmup + reps timed copies (ours,
     * or a->student's under its launch limit) and, with a->check, compares the
     * output with the input. 0, or -1 with a reason in err (a student kernel's
     * writes outside out among them). */
    int (*run)(const cl_coalesce_args *a, cl_coalesce_result *out, char *err);
    /* Whether run() takes students' kernels (a->student). */
    bool runs_student;
} cl_coalesce_ops;

/* The index that thread t copies (t < m*s; the caller skips results >= n). */
CL_HD uint64_t cl_coalesce_index(uint64_t t, uint64_t m, uint64_t s)
{
    return (t % m) * s + t / m;
}

static inline uint64_t cl_coalesce_rows(uint64_t n, uint64_t s) { return (n + s - 1) / s; }

/* The threads of a copy: one per element of the rows x s view, n rounded up to whole rows. */
static inline uint64_t cl_coalesce_threads(uint64_t n, uint64_t s) { return cl_coalesce_rows(n, s) * s; }

/* Our stride-1 copy gives each thread this many elements, t + q*T for q < it (T: the threads of the
 * grid), so a warp's accesses stay 32 neighbours while a thread keeps that many loads in flight:
 * with one, the copy cannot cover the memory's latency and tops out near 70% of the copy bandwidth
 * (H200). The strided copies keep one element a thread: their lesson is the sectors a warp touches. */
#define CL_COALESCE_CONTIGUOUS_PER_THREAD 8

/* The threads of our copy at stride s: a student's launch (and the lesson's) is cl_coalesce_threads. */
static inline uint64_t cl_coalesce_our_threads(uint64_t n, uint64_t s)
{
    return s == 1 ? (n + CL_COALESCE_CONTIGUOUS_PER_THREAD - 1) / CL_COALESCE_CONTIGUOUS_PER_THREAD
                  : cl_coalesce_threads(n, s);
}

/* Compares the copied-back output with the input regenerated from the seed. */
static inline void cl_coalesce_verify(const cl_coalesce_args *a, const float *out, cl_coalesce_result *r)
{
    r->mismatches = r->unwritten = 0;
    for (uint64_t i = 0; i < a->n; i++) {
        float want = cl_uniform(a->seed, i);
        if (out[i] == want)
            continue;
        r->unwritten += out[i] != out[i];
        if (r->mismatches++ == 0) {
            r->first_bad = i;
            r->got = out[i];
            r->want = want;
        }
    }
}

#ifdef __cplusplus
}
#endif
#endif
