/* sweep_internal.h — private to kernel/magic/sweep*.c and host_work.c: the
 * points of a sweep (the cartesian product of the list-valued params, walked
 * like an odometer with the last flag fastest), the clock that progress
 * updates are throttled by, reading runs, notes, --counters and --launch, and
 * the chart (sweep_chart.c).
 */
#ifndef CUDALAB_MAGICS_SWEEP_INTERNAL_H
#define CUDALAB_MAGICS_SWEEP_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
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

typedef struct sweep_state {
    const sweep_spec *spec;
    sweep_points pts;
} sweep_state;

/* The value at a dotted path ("time_ms.median") inside a run, or NULL. */
const json_t *sweep_path_get(const json_t *run, const char *path);
/* A run's metric; -INFINITY when it has none. */
double sweep_metric_of(const sweep_spec *s, const json_t *run);
/* The order runs are shown in: as run, or (sorted: --sort) by the metric,
 * highest first, ties in run order. Indices into runs, malloc'd; NULL when
 * out of memory. */
size_t *sweep_run_order(const sweep_spec *s, const json_t *runs, int sorted);

/* One note per distinct reason reason() gives for some runs (NULL: none): "WHAT: why" when every
 * run has it, else "WHAT for a, b: why", naming their variants (--counters, --roofline). */
void sweep_reasons_note(json_t *view, const json_t *runs, const char *(*reason)(const json_t *run),
                        const char *what);

/* ---- --counters (sweep_counters.c) ---- */
/* The columns every counted table ends with (each shown where some run has its count). */
extern const sweep_column sweep_counter_columns[];
/* The notes of a counted sweep: how the counts were taken, and why a run has none. */
void sweep_counters_note(json_t *view, const json_t *runs);

/* ---- variants broken on purpose (sweep_broken.c) ---- */
/* After a point ran (rc its result; runs[from..] its runs): the runs of a variant
 * broken on purpose marked as expected wrong, with their outcome; a run the CPU
 * runner or a guard stopped becomes a run that says so. Returns rc, or 0 when its
 * error was the bug found. */
int sweep_broken_point(magic_ctx *ctx, const sweep_spec *s, const json_t *point, int rc, json_t *runs,
                       size_t from);
/* Whether a run is expected wrong (its failed check fails no cell). */
bool sweep_broken_expected(const json_t *run);
/* The check cell of such a run ("wrong (expected)", ...), or NULL for any other run. */
const char *sweep_broken_cell(const json_t *run);
/* A note per broken variant and outcome: the bug, what happened, what was found. */
void sweep_broken_notes(json_t *view, const sweep_spec *s, const json_t *runs);

/* ---- --roofline (sweep_roofline.c) ---- */
/* The column a roofline adds to the table (shown where some run has a point under roofs). */
extern const sweep_column sweep_roofline_columns[];
/* Under --roofline (NULL without it): sets each run's "roofline" (its point and bound under the
 * device's roofs, or "left_off": why) and returns the document's (new reference): the roofs,
 * {"peak_fp32_gflops", "bandwidth_gbs", "bandwidth_source", "ridge_intensity"}. */
json_t *sweep_roofline_apply(const sweep_state *st, json_t *runs, const json_t *device);
/* The notes of a roofline (nothing for NULL): which numbers the roofs are, why a run has no point. */
void sweep_roofline_note(json_t *view, const json_t *roofline, const json_t *runs);
/* The roofline chart's view (new reference), NULL where the roofs or every point are unknown;
 * points[i] holds the sweep point of runs[i]. */
json_t *sweep_roofline_view(const sweep_state *st, const json_t *runs, const json_t *points, const json_t *roofline,
                            const json_t *device);

/* ---- --launch (sweep_launch.c) ---- */
/* The columns of a table under --launch (shown where some run has launch.occupancy). */
extern const sweep_column sweep_launch_columns[];
/* Under the point's --launch: launch.occupancy in each run from `from` on, the theoretical occupancy of
 * its launch on this device (%occupancy's arithmetic), or nulls and a note saying why there is none. */
void sweep_add_launch(magic_ctx *ctx, const sweep_spec *s, const json_t *point, json_t *runs, size_t from);
/* The notes of a table under --launch: where the occupancy comes from, and why a run has none. */
void sweep_launch_note(json_t *view, const json_t *runs);

/* ---- the chart (sweep_chart.c) ----
 * Which chart a finished sweep gets, decided once from what it varies and
 * what it measured (sweep.h states the rule), then drawn from that decision:
 * the document records it, the view says why a chart was left out. */
typedef enum sweep_chart_kind { SWEEP_CHART_NONE, SWEEP_CHART_BAR, SWEEP_CHART_LINE } sweep_chart_kind;

typedef struct sweep_chart_choice {
    sweep_chart_kind kind;
    const char *x;              /* line: the numeric flag on the x axis (borrowed from the params) */
    char why[240];              /* none: why, for a note; "" when too few results to need saying */
} sweep_chart_choice;

/* points[i] holds the sweep point of runs[i]. */
void sweep_chart_choose(const sweep_state *st, const json_t *runs, const json_t *points, sweep_chart_choice *c);
/* "line", "bar" or NULL. */
const char *sweep_chart_kind_name(sweep_chart_kind k);
/* The chart's view (new reference), NULL for SWEEP_CHART_NONE. */
json_t *sweep_chart_view(const sweep_state *st, const json_t *runs, const json_t *points, const sweep_chart_choice *c);

/* ---- the document and the view of a finished sweep (sweep_view.c) ---- */
/* The runs table into view: runs[from..] in run order, or (sorted) by the metric; caption NULL
 * for the whole table's. */
void sweep_add_runs_table(json_t *view, const sweep_spec *s, const json_t *runs, int sorted, size_t from,
                          const char *caption);
/* The notes every view of the sweep starts with (the backend's, the device's). */
void sweep_add_notes(json_t *view, const sweep_spec *spec, magic_ctx *ctx, const json_t *device);
/* The result document and its view (new references). */
json_t *sweep_make_doc(magic_ctx *ctx, const sweep_state *st, json_t *runs, json_t *device,
                       const sweep_chart_choice *chart, const json_t *roofline);
json_t *sweep_make_view(magic_ctx *ctx, const sweep_state *st, const json_t *runs, const json_t *device,
                        const sweep_chart_choice *chart, const json_t *roofline);

/* "tiled, 16": the values of the varying flags at a point, other than skip (NULL: none) and those
 * the point lacks; the magic's name where that leaves none. */
void sweep_point_name(const sweep_state *st, const json_t *point, const char *skip, char *buf, size_t len);
/* x as a table cell shows it. */
void sweep_real_text(double x, char *buf, size_t len);

/* Milliseconds on a monotonic clock; a unit test may point it at its own. */
extern double (*sweep_clock_ms)(void);

/* Whether a point of a sweep, alone, is left out rather than refused (an
 * optional one over the host-work limit: matmul's host loop in `all`). */
bool host_work_skips(magic_ctx *ctx, const sweep_spec *s, const json_t *point, void *user);

#endif
