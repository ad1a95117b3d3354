/* matmul_cpu.h — private to cpu/matmul*.c: how the CPU backend describes and
 * runs one %matmul variant. Host threads stand in for CUDA blocks; the loops
 * inside a block keep the GPU kernel's structure (tiles copied to local
 * arrays for shared memory, a local accumulator array for registers).
 */
#ifndef CUDALAB_CPU_MATMUL_CPU_H
#define CUDALAB_CPU_MATMUL_CPU_H

#include "cudalab/matmul.h"

/* The launch of a register-blocked GPU kernel that a blocked analogue mirrors. */
typedef struct cpu_mm_shape {
    int bm, bn, bk;                 /* its block tile of C and slice of k */
    int threads;                    /* its threads per block */
    size_t smem;                    /* its shared memory per block, in bytes */
    cl_matmul_format round;         /* what the inputs are rounded to as tiles are copied (tensor cores) */
} cpu_mm_shape;

typedef struct cpu_mm_problem {
    const float *a, *b;             /* b holds Bᵀ (n×k) for a CL_MATMUL_BT variant */
    float *c;
    int m, n, k, tile;
    int threads;                    /* host threads a launch may use */
    const cpu_mm_shape *shape;      /* the impl's, for the blocked analogues; else NULL */
} cpu_mm_problem;

typedef struct cpu_mm_impl {
    const char *config;             /* the analogue in words (the contract's launch is the GPU's) */
    /* Fills out->launch, out->global_loads and out->impl, and out->precision
     * where it is not the variant's (no timing). */
    void (*configure)(const cpu_mm_problem *p, cl_matmul_result *out);
    void (*run)(const cpu_mm_problem *p);
    const cpu_mm_shape *shape;      /* the GPU kernel's launch, for the blocked analogues */
} cpu_mm_impl;

/* Each row's analogue, cpu_mm_<impl> (the row's impl, matmul.h): in matmul_kernels.c, or a block tile
 * with an accumulator array in matmul_blocked.c for the register-blocked and tensor-core kernels;
 * weak, so a row without one is NULL here. */
#define CPU_MM_WEAK_(id, name, impl, ...) CL_VARIANT_WEAK_(cpu_mm_impl, cpu_mm_, impl)
CL_MATMUL_VARIANTS(CPU_MM_WEAK_)
#undef CPU_MM_WEAK_

static inline int cpu_mm_cdiv(int a, int b)
{
    return (a + b - 1) / b;
}

/* How many host threads a launch of `blocks` blocks gets. */
static inline int cpu_mm_threads_for(const cpu_mm_problem *p, long long blocks)
{
    return blocks < p->threads ? (int)blocks : p->threads;
}

/* x rounded to the format as a GPU rounds it: TF32 to nearest with ties away
 * from zero (cvt.rna.tf32.f32), FP16 and BF16 to nearest even; FP32: x. */
float cpu_mm_round(cl_matmul_format f, float x);

#endif
