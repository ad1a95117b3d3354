/* grid_plan.h — the arithmetic of a launch configuration for %grid (grid_plan.c):
 * blocks, threads, warps and idle threads for (data, block), validated against
 * the device's limits. Pure, exact on every backend; the kernel's alone (the
 * backends only run the mapping: cudalab/grid.h).
 *
 * The mapping is the lecture's: x is the fastest dimension, threads are
 * numbered into warps as CUDA does (x fastest, then y, then z, warp-size
 * consecutive threads per warp: the device's, 32 on every GPU and in the CPU
 * device model).
 */
#ifndef CUDALAB_MAGICS_GRID_PLAN_H
#define CUDALAB_MAGICS_GRID_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The limits a configuration is validated against, and the warp size that
 * groups its threads. */
typedef struct cl_grid_limits {
    int64_t max_threads_per_block;
    int64_t max_block[3];
    int64_t max_grid[3];
    int64_t warp;
} cl_grid_limits;

/* CUDA's limits for every compute capability since 3.0: what %grid validates
 * against when no backend answers (the CPU backend's device model has them). */
#define CL_GRID_CUDA_DEFAULTS {1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 32}

/* Everything %grid shows for (data, block). */
typedef struct cl_grid_plan {
    int dims;                     /* 1, 2 or 3: how many dimensions the data has */
    int64_t data[3], block[3], grid[3];     /* unused dimensions are 1 */
    int64_t blocks, threads_per_block, threads, elements, idle;
    double idle_pct;
    int64_t warp;                 /* threads per warp (the limits') */
    int64_t warps_per_block;
    int64_t threads_in_last_warp; /* of each block: a whole warp unless the block is not a multiple of it */
    int64_t partial_warps_per_block;        /* 0 or 1: a block's last warp holds fewer than a warp's threads */
    int64_t warps;                /* in the whole grid */
    int64_t warps_with_idle;      /* warps holding at least one idle thread (bounds check false) */
    int64_t warps_all_idle;       /* warps whose every thread is idle */
    int64_t warps_divergent;      /* warps with both idle and working threads */
} cl_grid_plan;

/* Fills p, or writes why the configuration is invalid into err (naming the
 * limit: "--block 32x32x2 has 2048 threads; the limit is 1024 threads per
 * block") and returns -1. Pure arithmetic, no allocation. */
int cl_grid_plan_make(const int64_t *data, int ndata, const int64_t *block, int nblock,
                      const cl_grid_limits *lim, cl_grid_plan *p, char *err, size_t errlen);

#endif
