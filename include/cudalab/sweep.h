/* sweep.h — the machinery every timed magic shares: sweeps over comma lists,
 * statistics, progress, the result document, table and chart.
 *
 * A magic describes its table once (sweep_spec) and supplies one function that
 * runs a single point (every flag a scalar) and appends run objects. The sweep
 * expands every list-valued flag into the cartesian product (in the order of the
 * params object: a magic that wants its table's order puts params in that order),
 * shows progress while points run (update_display_data), and emits one final
 * result that replaces the progress display:
 *   doc  = {"magic", "backend", "backend_note", "device": {...}, "params": {...},
 *           "runs": [ {...}, ... ], "sweep": {"varying": [flag, ...], "points": N}}
 *   view = title, notes (backend, PTX warning), a table of the runs (sortable by
 *          the metric with --sort), and a chart of the metric when a numeric
 *          flag varies (Vega-Lite + SVG fallback in the bundle).
 * A run whose "check" object has "passed": false makes the cell fail after the
 * table is shown (ename "CheckError").
 */
#ifndef CUDALAB_SWEEP_H
#define CUDALAB_SWEEP_H

#include <jansson.h>

#include "cudalab/magic.h"
#include "cudalab/measure.h"

typedef struct sweep_column {
    const char *path;           /* dotted path into a run: "variant", "time_ms.median", "check.passed" */
    const char *header;         /* "median ms" */
} sweep_column;

struct sweep_spec;
/* Runs one point: params has scalars only. Appends one or more run objects to
 * runs. Returns 0, or -1 with magic_error() set (the sweep stops). */
typedef int (*sweep_point_fn)(magic_ctx *ctx, const json_t *params, json_t *runs, void *user);

/* The flags every timed magic shares, with one default and range for all of
 * them (each magic says in its help what a run is): in a flag_spec table,
 *   SWEEP_SEED_FLAG("seed of the generated input"),
 *   SWEEP_TIMING_FLAGS("timed runs per point", "untimed runs before them"), */
#define SWEEP_SEED_FLAG(help_) \
    {.name = "seed", .type = FLAG_INT, .def = "1", .imin = 0, .imax = INT64_MAX, .help = (help_)}
#define SWEEP_TIMING_FLAGS(reps_help, warmup_help) \
    {.name = "reps", .type = FLAG_INT, .def = "20", .imin = 1, .imax = CL_MAX_REPS, .help = (reps_help)}, \
    {.name = "warmup", .type = FLAG_INT, .def = "3", .imin = 0, .imax = 100, .help = (warmup_help)}

typedef struct sweep_spec {
    const char *magic;          /* "reduce" */
    const char *title;          /* "Reduction" */
    const char *metric;         /* headline metric path in a run: "gbs", "gflops" */
    const char *metric_label;   /* "GB/s" */
    const sweep_column *columns;/* terminated by {NULL} */
    sweep_point_fn run_point;
    bool arithmetic;            /* the magic computes, it does not time: no CPU-backend note */
    const char *subject;        /* a path in the first run naming what the results are of (the title
                                   says "<title> of <it>"), or NULL: "<title> on <device name>" */
} sweep_spec;

/* Runs the whole sweep and reports through ctx. Returns 0 or -1 (error set). */
int sweep_run(magic_ctx *ctx, const sweep_spec *s, const json_t *params, void *user);

/* A param's value as a list: an array as it is, a scalar as a one-element array. New reference. */
json_t *sweep_as_list(const json_t *v);

/* --variant all -> every variant: `choices` lists the variants in table order
 * and ends with "all" and NULL. Returns the given names with "all" expanded and
 * duplicates dropped (new reference), or NULL with a UsageError in ctx. */
json_t *sweep_expand_all(magic_ctx *ctx, const json_t *given, const char *const *choices);

/* {"median", "min", "max", "mean", "stdev", "reps"} of t->ms (ms). */
json_t *stats_json(const cl_times *t);
double stats_median(const cl_times *t);

/* {"grid": [x,y,z], "block": [x,y,z], "smem_per_block": B, "regs_per_thread": R, "kernels": K} */
json_t *launch_json(const cl_launch *l);

/* The "device" object of a result document for the backend in ctx (name, cc, arch,
 * sms, peak_fp32_gflops, peak_bandwidth_gbs, measured_bandwidth_gbs, ptx_jit). */
json_t *sweep_device_json(magic_ctx *ctx);

#endif
