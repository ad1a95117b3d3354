/* grid_plan.c — the arithmetic of a launch configuration for %grid: dimGrid
 * from the data and block shapes, idle threads, warps and which of them hold
 * idle threads, validated against the device's limits. Exact and
 * backend-free; cudalab/grid.h says what the mapping is.
 */
#include <stdio.h>
#include <string.h>

#include "base/text.h"
#include "cudalab/grid.h"
#include "magics/grid_plan.h"

static const char axis[3] = {'x', 'y', 'z'};

/* Idle threads of each warp of one block whose valid extent is v[] (threads
 * with an index at or past v[d] in some dimension fail the bounds check). */
static void count_warps(const int64_t *block, const int64_t *v, int64_t tpb, int64_t warp, int64_t *with_idle,
                        int64_t *all_idle)
{
    *with_idle = *all_idle = 0;
    for (int64_t w0 = 0; w0 < tpb; w0 += warp) {
        int64_t n = tpb - w0 < warp ? tpb - w0 : warp, idle = 0;
        for (int64_t t = w0; t < w0 + n; t++) {
            int64_t tx = t % block[0], ty = (t / block[0]) % block[1], tz = t / (block[0] * block[1]);
            idle += tx >= v[0] || ty >= v[1] || tz >= v[2];
        }
        *with_idle += idle > 0;
        *all_idle += idle == n;
    }
}

int cl_grid_plan_make(const int64_t *data, int ndata, const int64_t *block, int nblock,
                      const cl_grid_limits *lim, cl_grid_plan *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->dims = ndata > nblock ? ndata : nblock;
    if (p->dims < 1 || p->dims > 3 || ndata < 1 || nblock < 1)
        return fail_into(err, errlen, "--data and --block take 1 to 3 dimensions (got %d and %d)",
                    ndata, nblock);
    p->threads_per_block = 1;
    for (int d = 0; d < 3; d++) {
        p->data[d] = d < ndata ? data[d] : 1;
        p->block[d] = d < nblock ? block[d] : 1;
        if (p->data[d] < 1 || p->block[d] < 1)
            return fail_into(err, errlen, "every dimension must be positive (got %lld and %lld)",
                        (long long)p->data[d], (long long)p->block[d]);
        p->threads_per_block *= p->block[d];
    }
    for (int d = 0; d < 3; d++)
        if (p->block[d] > lim->max_block[d]) {
            snprintf(err, errlen, "blockDim.%c = %lld exceeds the limit of %lld (max block dimensions "
                     "%lldx%lldx%lld)", axis[d], (long long)p->block[d], (long long)lim->max_block[d],
                     (long long)lim->max_block[0], (long long)lim->max_block[1],
                     (long long)lim->max_block[2]);
            return -1;
        }
    if (p->threads_per_block > lim->max_threads_per_block)
        return fail_into(err, errlen, "the block has %lld threads; the limit is %lld threads per block",
                    (long long)p->threads_per_block, (long long)lim->max_threads_per_block);
    p->blocks = 1;
    p->elements = 1;
    for (int d = 0; d < 3; d++) {
        p->grid[d] = (p->data[d] + p->block[d] - 1) / p->block[d];
        if (p->grid[d] > lim->max_grid[d]) {
            snprintf(err, errlen, "dimGrid.%c = ceil(%lld / %lld) = %lld exceeds the limit of %lld (max "
                     "grid dimensions %lldx%lldx%lld): use larger blocks or a grid-stride loop", axis[d],
                     (long long)p->data[d], (long long)p->block[d], (long long)p->grid[d],
                     (long long)lim->max_grid[d], (long long)lim->max_grid[0],
                     (long long)lim->max_grid[1], (long long)lim->max_grid[2]);
            return -1;
        }
        if (__builtin_mul_overflow(p->blocks, p->grid[d], &p->blocks) ||
            __builtin_mul_overflow(p->elements, p->data[d], &p->elements))
            return fail_into(err, errlen, "the grid has more than 2^%d blocks or elements (limit %lld)", 63,
                        (long long)INT64_MAX);
    }
    if (__builtin_mul_overflow(p->blocks, p->threads_per_block, &p->threads))
        return fail_into(err, errlen, "the grid has more than 2^%d threads (limit %lld)", 63,
                    (long long)INT64_MAX);
    p->idle = p->threads - p->elements;
    p->idle_pct = 100.0 * (double)p->idle / (double)p->threads;
    p->warp = lim->warp > 0 ? lim->warp : 32;
    p->warps_per_block = (p->threads_per_block + p->warp - 1) / p->warp;
    p->threads_in_last_warp = p->threads_per_block - (p->warps_per_block - 1) * p->warp;
    p->partial_warps_per_block = p->threads_in_last_warp < p->warp;
    p->warps = p->blocks * p->warps_per_block;
    /* Blocks fall into at most 8 classes: interior or last in each dimension.
     * Only the last block of a dimension can be cut by the bounds check. */
    for (int c = 0; c < 8; c++) {
        int64_t count = 1, v[3];
        for (int d = 0; d < 3; d++) {
            int last = (c >> d) & 1;
            int64_t n = last ? 1 : p->grid[d] - 1;
            count *= n;
            v[d] = last ? p->data[d] - (p->grid[d] - 1) * p->block[d] : p->block[d];
        }
        if (count == 0)
            continue;
        int64_t with_idle, all_idle;
        count_warps(p->block, v, p->threads_per_block, p->warp, &with_idle, &all_idle);
        p->warps_with_idle += count * with_idle;
        p->warps_all_idle += count * all_idle;
    }
    p->warps_divergent = p->warps_with_idle - p->warps_all_idle;
    return 0;
}
