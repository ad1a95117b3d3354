/* reduce_internal.h — private to kernel/magics/reduce*.c: what %reduce
 * resolves once per command (the backends, bandwidths, the reference cache)
 * and the function that runs one sweep point.
 */
#ifndef CUDALAB_MAGICS_REDUCE_INTERNAL_H
#define CUDALAB_MAGICS_REDUCE_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "magic/families.h"
#include "magic/magic.h"
#include "cudalab/reduce.h"
#include "magic/sweep.h"

typedef struct rd_env {
    const cl_backend *backend;
    const cl_reduce_ops *ops;       /* the selected backend's table */
    const cl_reduce_ops *host_ops;  /* the CPU backend's: runs `cpu` whatever the backend */
    uint64_t seed;
    int reps, warmup;
    bool check;
    int first_block;                /* variants that take no --block run at this one only */
    json_t *student_firsts;         /* built-in variants run at these values of -D only */
    double bw_gbs, host_bw_gbs;     /* measured copy bandwidth; 0 = not measured (yet) */
    bool host_bw_tried;
    /* the reference of the last (size, dtype): every op and variant of a size shares it */
    bool ref_valid;
    uint64_t ref_n;
    cl_reduce_dtype ref_dtype;
    cl_reduce_ref ref;
} rd_env;

/* The family as the framework serves it (reduce.c). */
extern const family_spec reduce_family;

/* The first pass's threads per block when --block is not given (a row's own, cl_reduce_variant_blocks, first). */
#define RD_BLOCK_DEFAULT 256
/* A point's threads per block for the built-in variants (its --block's x). */
int rd_block_of(const json_t *point);

/* The sweep's point function: runs one (size, dtype, op, block, variant). */
int rd_point(magic_ctx *ctx, const json_t *pt, json_t *runs, void *user);

/* What one point makes the host do (the sweep's host_work hook; user is the rd_env). */
host_work rd_host_work(magic_ctx *ctx, const json_t *pt, void *user);

/* A run's FLOPs and bytes for --roofline (the sweep's flops hook). */
int rd_flops(const json_t *run, sweep_flops *f);

/* ---- --steps (reduce_steps.c) ---- */

/* One step of a block's tree, counted thread by thread by the kernel's condition. */
typedef struct rd_step {
    unsigned stride;
    unsigned active_threads;        /* threads that add at this step */
    unsigned active_warps;          /* warps with at least one of them: each issues the step */
    unsigned full_warps;            /* ... with all 32 */
    unsigned divergent_warps;       /* active, not full */
    unsigned idle_warps;            /* none active: they wait at the barrier */
    unsigned wasted_lanes;          /* lanes of the active warps that do not add */
} rd_step;

/* Steps of the largest block's tree: log2(1024). */
#define RD_MAX_STEPS 10

/* The block tree of variant v's first pass (divergent; convergent and multiblock: the convergent
 * tree) for `block` threads (a power of two from 32 to 1024), in the kernel's order; the number of
 * steps, 0 for a variant without one. */
int rd_tree_steps(int v, unsigned block, rd_step steps[RD_MAX_STEPS]);
/* A run's "steps": [{step, stride, active_threads, active_warps, full_warps, divergent_warps,
 * idle_warps, wasted_lanes}, ...], or NULL for a variant without a block tree. */
json_t *rd_steps_json(int v, unsigned block);
/* Under --steps, one table per variant and block below the runs table (sweep_spec.more_results). */
void rd_steps_tables(json_t *doc, json_t *view, const json_t *params, const json_t *runs, void *user);

/* The check object of one result (cpu/reduce_ref.c's reference, cached in env).
 * NULL with the error set when the reference could not be computed. */
json_t *rd_check(magic_ctx *ctx, rd_env *env, const cl_reduce_args *a, const cl_reduce_result *r);

#endif
