/* matmul_cpu.h — private to cpu/matmul*.c: how the CPU backend describes and
 * runs one %matmul variant. Host threads stand in for CUDA blocks; the loops
 * inside a block keep the GPU kernel's structure (tiles copied to local
 * arrays for shared memory, a local accumulator array for registers).
 */
#ifndef CUDALAB_CPU_MATMUL_CPU_H
#define CUDALAB_CPU_MATMUL_CPU_H

#include "cudalab/matmul.h"

typedef struct cpu_mm_problem {
    const float *a, *b;
    float *c;
    int m, n, k, tile;
    int threads;                    /* host threads a launch may use */
} cpu_mm_problem;

typedef struct cpu_mm_impl {
    /* Fills out->launch, out->global_loads and out->impl, and out->precision
     * where it is not the variant's (no timing). */
    void (*configure)(const cpu_mm_problem *p, cl_matmul_result *out);
    void (*run)(const cpu_mm_problem *p);
} cpu_mm_impl;

extern const cpu_mm_impl cpu_mm_host, cpu_mm_naive, cpu_mm_tiled, cpu_mm_fast, cpu_mm_fast64, cpu_mm_blas,
    cpu_mm_wgmma_tf32;

#endif
