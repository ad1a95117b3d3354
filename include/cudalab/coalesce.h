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
 */
#ifndef CUDALAB_COALESCE_H
#define CUDALAB_COALESCE_H

#include <stddef.h>
#include <stdint.h>

#include "cudalab/backend.h"
#include "cudalab/family.h"
#include "cudalab/measure.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(id, name, launch, what it teaches, flags): one row per traversal (family.h).
 * There is no --variant: --stride runs `stride`, --layout row|col the others. */
#define CL_COALESCE_VARIANTS(X)                                                            \
    X(CL_COALESCE_STRIDE, "stride", "ceil(N/B) blocks of B, one element per thread",       \
      "thread t copies element (t % m)*s + t/m: neighbours s elements apart", CL_V_BLOCK)  \
    X(CL_COALESCE_ROW, "row", "ceil(R*C/B) blocks of B, one element per thread",           \
      "row-wise traversal of an R x C row-major matrix: neighbours 1 element apart",       \
      CL_V_BLOCK)                                                                          \
    X(CL_COALESCE_COL, "col", "ceil(R*C/B) blocks of B, one element per thread",           \
      "column-wise traversal: neighbours C elements (one row) apart", CL_V_BLOCK)

typedef enum cl_coalesce_variant_id {
    CL_COALESCE_VARIANTS(CL_VARIANT_ID) CL_COALESCE_NVARIANTS
} cl_coalesce_variant_id;

/* The contract's table, in enum order (each file that reads it has its copy). */
static const cl_variant cl_coalesce_variants[CL_COALESCE_NVARIANTS] = {CL_COALESCE_VARIANTS(CL_VARIANT_ROW)};

typedef struct cl_coalesce_args {
    uint64_t n;                 /* elements (floats), >= 1 */
    uint64_t stride;            /* elements between neighbouring threads, 1..n */
    int block;                  /* threads per block: multiple of 32, 32..1024 */
    uint64_t seed;
    int reps, warmup;
    int check;                  /* copy the output back and compare it element by element */
} cl_coalesce_args;

typedef struct cl_coalesce_result {
    cl_times times;
    cl_launch launch;
    uint64_t mismatches, first_bad;
    float got, want;
    char impl[200];
} cl_coalesce_result;

typedef struct cl_coalesce_ops {
    int (*run)(const cl_coalesce_args *a, cl_coalesce_result *out, char *err);
} cl_coalesce_ops;

/* The index that thread t copies (t < m*s; the caller skips results >= n). */
CL_HD uint64_t cl_coalesce_index(uint64_t t, uint64_t m, uint64_t s)
{
    return (t % m) * s + t / m;
}

static inline uint64_t cl_coalesce_rows(uint64_t n, uint64_t s) { return (n + s - 1) / s; }

/* Compares the copied-back output with the input regenerated from the seed. */
static inline void cl_coalesce_verify(const cl_coalesce_args *a, const float *out, cl_coalesce_result *r)
{
    r->mismatches = 0;
    for (uint64_t i = 0; i < a->n; i++) {
        float want = cl_uniform(a->seed, i);
        if (out[i] != want && r->mismatches++ == 0) {
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
