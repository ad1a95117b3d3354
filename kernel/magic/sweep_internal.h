/* sweep_internal.h — private to kernel/magic/sweep.c and host_work.c: the
 * points of a sweep (the cartesian product of the list-valued params, walked
 * like an odometer with the last flag fastest), and the clock that progress
 * updates are throttled by.
 */
#ifndef CUDALAB_MAGICS_SWEEP_INTERNAL_H
#define CUDALAB_MAGICS_SWEEP_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "magic/sweep.h"

typedef struct sweep_points {
    const json_t *params;
    const char **varying;       /* names of list-valued params, in flag order */
    size_t nvarying;
    size_t *index;              /* odometer, one digit per varying param */
    size_t count;               /* points in all */
} sweep_points;

/* Finds the varying params and counts the points, refusing more than
 * SWEEP_MAX_POINTS before anything runs. 0, or -1 with the error in ctx
 * (free with sweep_points_free either way). */
int sweep_points_init(sweep_points *pts, magic_ctx *ctx, const json_t *params);
/* The current point: params with every varying one set to its value (new
 * reference; the lists it does not vary are shared with params, not copied). */
json_t *sweep_points_current(const sweep_points *pts);
void sweep_points_next(sweep_points *pts);
void sweep_points_free(sweep_points *pts);

/* Milliseconds on a monotonic clock; a unit test may point it at its own. */
extern double (*sweep_clock_ms)(void);

/* Whether a point of a sweep, alone, is left out rather than refused (an
 * optional one over the host-work limit: matmul's host loop in `all`). */
bool host_work_skips(magic_ctx *ctx, const sweep_spec *s, const json_t *point, void *user);

#endif
