/* grid.h — the thread<->data mapping family (%grid) across the backend ABI:
 * the one operation a backend runs for `--run`: launch the mapping and count
 * how often each element is visited. (The pure arithmetic of a launch
 * configuration, exact on every backend, is the kernel's: kernel/magics/grid_plan.h.)
 *
 * The mapping is the lecture's: x is the fastest dimension,
 *   col = blockIdx.x*blockDim.x + threadIdx.x   (and row, plane for y, z),
 * a thread touches element (plane*H + row)*W + col only when every index is
 * inside the data (the bounds check), and threads are numbered into warps as
 * CUDA does: x fastest, then y, then z, 32 consecutive threads per warp.
 */
#ifndef CUDALAB_GRID_H
#define CUDALAB_GRID_H

#include <stdbool.h>
#include <stdint.h>

#include "cudalab/backend.h"
#include "cudalab/measure.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What one --run launch covers. */
typedef struct cl_grid_args {
    int64_t data[3], block[3], grid[3];
    uint64_t seed;                /* unused by the mapping; kept for symmetry with the timed families */
    int reps, warmup;
} cl_grid_args;

typedef struct cl_grid_result {
    uint64_t visited_once;        /* elements whose count is exactly 1 */
    uint64_t never;               /* elements no thread visited */
    uint64_t multiple;            /* elements visited more than once */
    uint64_t idle_threads;        /* threads that failed the bounds check (counted by the kernel) */
    cl_launch launch;
    cl_times times;
    char impl[160];
} cl_grid_result;

typedef struct cl_grid_ops {
    /* Zeroes a count per element, runs warmup + reps launches of the mapping
     * (each rep on zeroed counts, timed around the kernel only), then counts
     * the elements visited 0, 1, >1 times after the last rep. 0, or -1 with a
     * reason in err. */
    int (*run)(const cl_grid_args *a, cl_grid_result *out, char *err);
} cl_grid_ops;

#ifdef __cplusplus
}
#endif
#endif
