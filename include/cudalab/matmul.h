/* matmul.h — the %matmul family on both sides of the backend ABI.
 *
 * C = A·B in float32, A m×k, B k×n, C m×n, all row-major. Each backend
 * (cuda/matmul*.cu, cpu/matmul*.c) defines `cl_<backend>_matmul_ops`: a table of
 * variants (one row each: name, launch configuration in words, what it teaches,
 * and a backend-private pointer to the code that runs it) and one run function
 * that generates the inputs from the seed, times the variant and copies C back.
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
#include <string.h>

#include "cudalab/measure.h"

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

/* cl_matmul_variant.flags */
#define CL_MATMUL_USES_TILE 0x1u    /* honours --tile (TILE_WIDTH) */
#define CL_MATMUL_LIBRARY   0x2u    /* a library call (cuBLAS), or the CPU reference standing in for it */
#define CL_MATMUL_TF32      0x4u    /* multiplies in TF32 (10-bit mantissa): checked with a looser tolerance */
#define CL_MATMUL_HOST      0x8u    /* the lecture's host loop (MatrixMulOnHost) */
#define CL_MATMUL_FP64      0x10u   /* accumulates in double (the host loop, the CPU reference) */

/* The TILE_WIDTHs the tiled variant is built for, 0-terminated. */
#define CL_MATMUL_TILES {2, 4, 8, 16, 32, 0}

typedef struct cl_matmul_variant {
    const char *name;               /* "naive", "tiled", "fast", "cublas", ...; NULL ends a table */
    const char *launch;             /* the launch configuration in words */
    const char *description;        /* what the variant shows, one sentence */
    unsigned flags;                 /* CL_MATMUL_* */
    const void *impl;               /* backend-private: how to run it */
} cl_matmul_variant;

typedef struct cl_matmul_args {
    int m, n, k;                    /* >= 1; each of m·k, k·n, m·n < 2^31 (the kernels index with int) */
    int tile;                       /* TILE_WIDTH for CL_MATMUL_USES_TILE variants */
    uint64_t seed;
    int reps;                       /* 1..CL_MAX_REPS timed runs */
    int warmup;                     /* untimed runs before them */
    float *c;                       /* m×n host buffer that receives C after timing, or NULL */
} cl_matmul_args;

typedef struct cl_matmul_result {
    cl_times times;
    cl_launch launch;
    double global_loads;            /* floats read from global memory by one product in the
                                     * lecture's traffic model; 0 when unknown (libraries) */
    char impl[128];                 /* what ran, in words ("cublasSgemm, CUBLAS_DEFAULT_MATH") */
} cl_matmul_result;

typedef struct cl_matmul_ops {
    const cl_matmul_variant *variants;  /* terminated by a row with name NULL */
    /* Generates A and B from a->seed, runs the variant a->warmup times untimed
     * and a->reps times timed, then copies C into a->c (not timed). Returns 0,
     * or -1 with a one-line reason in err (CL_ERR_LEN bytes). */
    int (*run)(const char *variant, const cl_matmul_args *a, cl_matmul_result *out, char *err);
} cl_matmul_ops;

/* Looks a variant up in a table; NULL when absent. */
static inline const cl_matmul_variant *cl_matmul_find(const cl_matmul_variant *table, const char *name)
{
    for (const cl_matmul_variant *v = table; v && v->name; v++)
        if (strcmp(v->name, name) == 0)
            return v;
    return NULL;
}

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

typedef struct cl_matmul_check {
    bool passed;
    const char *method;             /* "full fp64 product" or "freivalds x3" (static strings) */
    double max_rel_err;             /* NaN when C holds a NaN or an infinity */
    double max_abs_err;
    double tol;
    long long worst_row, worst_col; /* where max_rel_err was seen (col -1 for Freivalds) */
} cl_matmul_check;

/* Fills a (m×k) and b (k×n) from the seed, with host threads. */
void cl_matmul_fill(float *a, float *b, int m, int n, int k, uint64_t seed);

/* Checks c (m×n) against A·B regenerated from seed; tf32 picks the looser tolerance.
 * Returns 0, or -1 with err set when host memory runs out. */
int cl_matmul_verify(int m, int n, int k, uint64_t seed, const float *c, bool tf32,
                     cl_matmul_check *out, char *err);

#ifdef __cplusplus
}
#endif
#endif
