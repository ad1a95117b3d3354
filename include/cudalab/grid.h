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
 *
 * A student's %%kernel is the lecture's picture kernel (cl_grid_student): it
 * scales every pixel of a width x height picture by 2 through the same
 * mapping, run as CL_VARIANT_STUDENT on the same grid; Pout is guarded on both
 * sides and filled with a NaN sentinel before every launch.
 */
#ifndef CUDALAB_GRID_H
#define CUDALAB_GRID_H

#include <stdbool.h>
#include <stdint.h>

#include "cudalab/backend.h"
#include "cudalab/family.h"
#include "cudalab/measure.h"
#include "cudalab/student.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(id, name, impl, launch, what it teaches, flags, block): the kernels --run launches (family.h). */
#define CL_GRID_VARIANTS(X)                                                                            \
    X(CL_GRID_MAP, "map", map, "ceil(data / block) blocks in each dimension, one thread per position", \
      "counts how often each element is visited: exactly once, with the bounds check", CL_V_BLOCK, 0)

typedef enum cl_grid_variant_id {
    CL_GRID_VARIANTS(CL_VARIANT_ID)
    CL_GRID_NVARIANTS
} cl_grid_variant_id;

/* The contract's table, in enum order (each file that reads it has its copy). */
static const cl_variant cl_grid_variants[CL_GRID_NVARIANTS] = {CL_GRID_VARIANTS(CL_VARIANT_ROW)};

/* The parameters a student's kernel takes (cl_student_contract.params). */
#define CL_GRID_STUDENT_PARAMS "const float *Pin, float *Pout, int width, int height"
/* What a student's %%kernel for %grid implements (student.h): the picture kernel. */
static const cl_student_contract cl_grid_student = {
    CL_GRID_STUDENT_PARAMS,
    "one thread per pixel, col = blockIdx.x*blockDim.x + threadIdx.x, row = blockIdx.y*blockDim.y + "
    "threadIdx.y: Pout[row*width + col] = 2 * Pin[row*width + col] for every row < height and col < width "
    "(the bounds check); block 16x16 (--block), grid ceil(width/block.x) x ceil(height/block.y) as %grid "
    "computes it (--grid overrides); 1D data is one row (height 1)",
    {16, 16, 1}, 0};

/* What one --run launch covers. */
typedef struct cl_grid_args {
    int64_t data[3], block[3], grid[3];
    uint64_t seed;                /* the mapping has no input; the picture's pixels are cl_uniform(seed, i) */
    int reps, warmup;
    const cl_student_kernel *student; /* CL_VARIANT_STUDENT: the picture kernel (its own block), else NULL */
    float *pout;                  /* student: host room for Pout (width*height), copied back after the run */
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
     * the elements visited 0, 1, >1 times after the last rep. With a->student:
     * the picture kernel instead, Pout copied to a->pout (the counts stay 0).
     * 0, or -1 with a reason in err (a student's writes outside Pout among them). */
    int (*run)(const cl_grid_args *a, cl_grid_result *out, char *err);
    /* Whether run() takes students' kernels. */
    bool runs_student;
} cl_grid_ops;

/* The first pixel of pout (width x height, from seed) that is not 2 * Pin:
 * its index, or -1; *wrong counts them, *never those still NaN (never written). */
static inline int64_t cl_grid_picture_check(const float *pout, uint64_t width, uint64_t height, uint64_t seed,
                                            uint64_t *wrong, uint64_t *never)
{
    int64_t first = -1;
    *wrong = *never = 0;
    for (uint64_t i = 0; i < width * height; i++) {
        float want = 2.0f * cl_uniform(seed, i);
        if (pout[i] == want)
            continue;
        ++*wrong;
        *never += pout[i] != pout[i];
        if (first < 0)
            first = (int64_t)i;
    }
    return first;
}

#ifdef __cplusplus
}
#endif
#endif
