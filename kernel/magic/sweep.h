/* sweep.h — the machinery every timed magic shares: sweeps over comma lists,
 * statistics, progress, the result document, table and chart.
 *
 * A magic describes its table once (sweep_spec) and supplies one function that
 * runs a single point (every flag a scalar) and appends run objects. The sweep
 * expands every list-valued flag into the cartesian product (in the order of the
 * params object: a magic that wants its table's order puts params in that order;
 * at most SWEEP_MAX_POINTS points), refuses what would take the host too long
 * (host work, below), shows progress while points run (update_display_data: the
 * first at once, then at most one every SWEEP_PROGRESS_MS, each a progress line
 * and the last SWEEP_PROGRESS_ROWS runs, so that a sweep of 10,000 cheap points
 * sends a handful of small messages), and emits one final result, with every
 * run, that replaces the progress display:
 *   doc  = {"magic", "backend", "backend_note", "device": {...}, "params": {...},
 *           "runs": [ {...}, ... ], "sweep": {"varying": [flag, ...], "points": N},
 *           "roofline": {...} under --roofline (the roofs; each run has its own)}
 *   view = title, notes (backend, PTX warning), a table of the runs (sortable by
 *          the metric with --sort), and a chart of the metric where it shows
 *          something (below; Vega-Lite + SVG fallback in the bundle), and under
 *          --roofline the runs under the device's roofs in one more chart.
 * A run whose "check" object has "passed": false makes the cell fail after the
 * table is shown (ename "CheckError").
 */
#ifndef CUDALAB_SWEEP_H
#define CUDALAB_SWEEP_H

#include <jansson.h>

#include "magic/magic.h"
#include "cudalab/measure.h"

/* The chart of a sweep, chosen by what the sweep varies and what it measured
 * (sweep_chart.c); doc.sweep.chart records the choice ("line", "bar" or null)
 * and doc.sweep.chart_note, with a note in the view, why none was drawn:
 *  - none for fewer than SWEEP_CHART_MIN_RESULTS results with a metric: two
 *    numbers are read off the table faster than off a picture;
 *  - none when the metric is a rate (sweep_spec.rate_of) and no point did
 *    SWEEP_CHART_MIN_WORK units of work (the rate times the median time): a
 *    GB/s over 41 bytes times a launch and the clock, not the memory;
 *  - none when every value lies within SWEEP_CHART_MIN_SPREAD of the largest:
 *    near-identical bars show noise, the table says it in one line;
 *  - a line over the first flag that takes at least SWEEP_CHART_MIN_RESULTS
 *    different numbers (log2 axis for powers of two spanning 4x or more), one
 *    series per combination of the other varying flags;
 *  - else bars, one per run, labelled by the varying flags (variants, shapes,
 *    or a numeric flag with only two values).
 * How the chart is laid out (integer ticks for an integral axis, horizontal
 * bars when there are many) is the renderer's, from the chart block alone. */
#define SWEEP_CHART_MIN_RESULTS 3
#define SWEEP_CHART_MIN_WORK 1048576.0      /* 2^20 bytes or flops */
#define SWEEP_CHART_MIN_SPREAD 0.05

/* The most points a sweep may have: a larger cross product is refused, naming its
 * size, before anything runs. */
#define SWEEP_MAX_POINTS 10000
/* Progress while a sweep runs: at most one update per this many milliseconds... */
#define SWEEP_PROGRESS_MS 250
/* ...each showing only the last few runs (the final result has them all). */
#define SWEEP_PROGRESS_ROWS 5

typedef struct sweep_column {
    const char *path;           /* dotted path into a run: "variant", "time_ms.median", "check.passed" */
    const char *header;         /* "median ms" */
    double scale;               /* a number is shown divided by it (1e6: bytes as MB); 0: as it is */
    const char *only_with;      /* a path: the column is shown only when some run has a number there
                                   (a model beside a --counters count); NULL: always */
    json_t *(*cell)(const json_t *run);  /* the cell worked out from the run (new reference), where the value
                                            at path is not what to show (--launch's "16×16"); NULL: that value */
} sweep_column;

/* ---- host work ----
 * What a command makes the host compute: on the CPU backend every warm-up and
 * timed run, on a GPU the host loops (a `cpu` variant), and everywhere the CPU
 * reference of the check and inputs generated on the host. One estimate serves
 * every family: the family's hook gives one point's work in its own unit
 * (multiply-adds, bytes, elements) with the rate this host's CPU backend does
 * it at (measured, so an estimate; parts that run on every core scale with
 * host_work_cores()); the framework multiplies the runs by --warmup + --reps,
 * adds the point's inputs and its check (once per reference), sums the points,
 * and refuses a command whose estimate is over CUDALAB_HOST_WORK_LIMIT seconds
 * (HOST_WORK_DEFAULT_LIMIT_S by default), per point and in all, unless it is
 * given --force (SWEEP_FORCE_FLAG); the error names the estimate and the limit. */
#define HOST_WORK_DEFAULT_LIMIT 30  /* seconds */
#define HOST_WORK_DEFAULT_LIMIT_S ((double)HOST_WORK_DEFAULT_LIMIT)
#define HOST_WORK_LIMIT_ENV "CUDALAB_HOST_WORK_LIMIT"
#define HOST_WORK_TEXT_(x) #x
#define HOST_WORK_TEXT(x) HOST_WORK_TEXT_(x)

typedef struct host_work {
    double run;             /* one warm-up or timed run on the host (0 where it runs on a GPU) */
    double run_rate;        /* units of run per second on this host (measured) */
    double setup;           /* once per point: inputs made on the host for the runs */
    double setup_rate;
    double check;           /* the check: its CPU reference (regenerating the input) and the comparison */
    double check_rate;
    unsigned long long check_key;  /* nonzero: a point with the previous point's key reuses its
                                      reference (the family caches it), so its check costs nothing */
    bool optional;          /* over the limit on its own, the point is left out, not refused
                               (matmul's host loop brought in by --variant all) */
} host_work;

/* The CPU runner's launches per counted run of a point: it launches a
 * student's kernel min(--reps, CL_SIMT_MAX_REPS) times with no warm-up
 * (cudalab/simt.h), while the framework counts --reps + --warmup runs. */
double host_work_runner_share(const json_t *point);

/* One point's host work: point has scalars only; user is the sweep's. */
typedef host_work (*host_work_fn)(magic_ctx *ctx, const json_t *point, void *user);

/* The flag that runs a command over the host-work limit, for a flag_spec table. */
#define SWEEP_FORCE_FLAG \
    {.name = "force", .type = FLAG_BOOL, .def = "false", \
     .help = "run even where the estimated host work is over the limit (" HOST_WORK_LIMIT_ENV \
             ", " HOST_WORK_TEXT(HOST_WORK_DEFAULT_LIMIT) " s by default)"}

struct sweep_spec;
/* Runs one point: params has scalars only. Appends one or more run objects to
 * runs. Returns 0, or -1 with magic_error() set (the sweep stops). */
typedef int (*sweep_point_fn)(magic_ctx *ctx, const json_t *params, json_t *runs, void *user);

/* The flags every timed magic shares, with one default and range for all of
 * them (each magic says in its help what a run is): in a flag_spec table,
 *   SWEEP_SEED_FLAG("seed of the generated input"),
 *   SWEEP_TIMING_FLAGS("timed runs per point", "untimed runs before them"),
 * or SWEEP_REPS_FLAG alone where a run warms itself up. */
#define SWEEP_SEED_FLAG(help_) \
    {.name = "seed", .type = FLAG_INT, .def = "1", .imin = 0, .imax = INT64_MAX, .help = (help_)}
#define SWEEP_REPS_FLAG(reps_help) \
    {.name = "reps", .type = FLAG_INT, .def = "auto", .cpu_def = SWEEP_CPU_REPS, .imin = 1, .imax = CL_MAX_REPS, \
     .word = "auto", .help = reps_help SWEEP_REPS_AUTO_HELP}
#define SWEEP_TIMING_FLAGS(reps_help, warmup_help) \
    SWEEP_REPS_FLAG(reps_help), \
    {.name = "warmup", .type = FLAG_INT, .def = "3", .cpu_def = "1", .imin = 0, .imax = 100, .help = (warmup_help)}

/* What --reps auto means, said once for every timed magic's help. */
#define SWEEP_REPS_AUTO_HELP \
    " (auto: until the median settles, its 95% confidence interval within 1%, after 10 and at most 1000 " \
    "runs or 2 s of timed work)"

/* The CPU backend's default reps: a host clock over runs of tens of milliseconds
 * settles in a few, and every default cell stays under 2 s without a GPU. */
#define SWEEP_CPU_REPS "5"

/* The check every timed family runs on each result unless --no-check: in a
 * flag_spec table, SWEEP_CHECK_FLAG("compare every bin with the CPU histogram"). */
#define SWEEP_CHECK_FLAG(what) \
    {.name = "check", .type = FLAG_BOOL, .def = "true", .help = what " (--no-check skips it)"}

/* --check-reps: on a GPU, which timed reps' results are checked on their own inputs (cuda/common.h,
 * cl_cuda_reps): CL_GPU_CHECKED_REPS drawn at random (a cell's default), or every one (the class
 * board's runs). The CPU runner checks every rep whichever is asked. Each run's check says how many
 * were, as the backend reported it (check.reps_checked, from cl_times.reps_checked). */
extern const char *const sweep_check_reps_choices[];
#define SWEEP_CHECK_REPS_FLAG \
    {.name = "check-reps", .type = FLAG_CHOICE, .def = "drawn", .choices = sweep_check_reps_choices, \
     .help = "on a GPU, check the result of 2 timed reps drawn at random on their own inputs (drawn), or of " \
             "every timed rep (all: slower, and the copies need device memory; the class board's runs use it); " \
             "the CPU runner checks every rep either way"}

/* The flags every timed family ends its table with: --seed, --reps, --warmup,
 * --check, --sort (the table by its metric) and --force, each family saying in
 * its own words what a seed, a run, the check and the sort are. */
#define SWEEP_MEASURE_FLAGS(seed_help, reps_help, check_help, sort_help) \
    SWEEP_SEED_FLAG(seed_help), \
    SWEEP_TIMING_FLAGS(reps_help, "untimed runs before them"), \
    SWEEP_CHECK_FLAG(check_help), \
    {.name = "sort", .type = FLAG_BOOL, .def = "false", .help = (sort_help)}, \
    SWEEP_FORCE_FLAG, \
    SWEEP_BACKEND_FLAG, \
    SWEEP_COUNTERS_FLAG, \
    SWEEP_ROOFLINE_FLAG, \
    SWEEP_LAUNCH_FLAG, \
    SWEEP_CHECK_REPS_FLAG, \
    {.name = "shared-timing", .type = FLAG_BOOL, .def = "false", \
     .help = "time alongside other kernels' commands (by default each point's timed runs have the GPU to " \
             "themselves, and the wait is reported apart)"}

/* --counters: each run again under the GPU's performance counters, or the CPU runner's simulation of
 * them (never a timed one). */
#define SWEEP_COUNTERS_FLAG \
    {.name = "counters", .type = FLAG_BOOL, .def = "false", \
     .help = "also count what each run did: DRAM bytes read and written, L2 and L1 hit rates, achieved " \
             "occupancy, shared-memory bank conflicts, sectors per global load, warp execution efficiency " \
             "and FP32 operations, read from the GPU's performance counters (CUPTI) while each variant runs " \
             "again, untimed (once per pass the counters need); shown beside the lecture's model. Without a " \
             "GPU, your kernels (and the broken variants) are counted by the CPU runner instead: sectors, " \
             "bank conflicts, warp efficiency and DRAM bytes of a simulation, under the same names"}

/* --roofline: each run as a point under the device's roofs (sweep_roofline.c), one run or a sweep. */
#define SWEEP_ROOFLINE_FLAG \
    {.name = "roofline", .type = FLAG_BOOL, .def = "false", \
     .help = "also draw the roofline: the device's FP32 peak and its memory bandwidth (the measured copy " \
             "bandwidth where there is one, else the theoretical) as the roofs, each run at its arithmetic " \
             "intensity (FLOPs per byte of device memory: counted under --counters, else the family's model) " \
             "and the GFLOP/s it achieved; the table gets each run's % of its roof, the document each run's " \
             "roofline and the roofs"}

/* A run's floating-point work by its family's model, for its point on the roofline (--roofline). */
typedef struct sweep_flops {
    double flop;                /* FP32 operations of one run (an FMA is two, as the counters count it) */
    double bytes;               /* device memory they read and write by the family's traffic model; 0: it
                                   has none (a library's kernels), so only counters can place the run */
    double gflops;              /* achieved: flop over the run's median time (its kernels', copies apart) */
    const char *why;            /* set instead where the run does no FP32 work the roof bounds: why */
} sweep_flops;
/* Fills f from a run of the family: 0, or -1 with f->why set. */
typedef int (*sweep_flops_fn)(const json_t *run, sweep_flops *f);
/* --launch: each run's launch and the occupancy it allows, as columns (sweep_launch.c). */
#define SWEEP_LAUNCH_FLAG \
    {.name = "launch", .type = FLAG_BOOL, .def = "false", \
     .help = "also show each run's launch: grid, block, registers per thread, shared memory per block, and " \
             "the occupancy they allow in theory (resident warps per SM of the most, and what limits them: " \
             "threads, block slots, registers or shared memory), as %occupancy computes it for this device; " \
             "a library call or host code has none, and the CPU backend's analogues no registers"}

/* --backend cpu: the command runs on the CPU backend where a GPU is present
 * (ours as CPU analogues, students' kernels on the CPU runner); the device
 * worker picks the backend by it (worker_exec). */
static const char *const sweep_backend_choices[] = {"cuda", "cpu", NULL};
#define SWEEP_BACKEND_FLAG \
    {.name = "backend", .type = FLAG_CHOICE, .choices = sweep_backend_choices, \
     .help = "where to run, instead of the GPU when there is one: cpu (our kernels' CPU analogues, yours on " \
             "the CPU runner, which explains their bugs); cuda insists on a GPU"}

typedef struct sweep_spec {
    const char *magic;          /* "reduce" */
    const char *title;          /* "Reduction" */
    const char *metric;         /* headline metric path in a run: "gbs", "gflops" */
    const char *metric_label;   /* "GB/s" */
    const char *rate_of;        /* the metric is this work per median time ("bytes" for GB/s, "flops"
                                   for GFLOP/s), so a run's work is metric x time; NULL: not a rate */
    const sweep_column *columns;/* terminated by {NULL} */
    sweep_point_fn run_point;
    bool arithmetic;            /* the magic computes, it does not time: no CPU-backend note */
    const char *subject;        /* a path in the first run naming what the results are of (the title
                                   says "<title> of <it>"), or NULL: "<title> on <device name>" */
    host_work_fn host_work;     /* NULL: the points cost the host nothing worth counting */
    const char *size_flag;      /* the param that sets the work ("size"): named in a refusal */
    sweep_flops_fn flops;       /* --roofline: a run's FLOPs and bytes; NULL: the family does no floating-
                                   point work (its runs are left off, their GB/s is their measure) */
    /* What the family adds to the final result from the command's params, its runs and the
     * sweep's user pointer: tables below the runs table in view (%reduce --steps), parts of doc
     * (%hiding's model); NULL: nothing. */
    void (*more_results)(json_t *doc, json_t *view, const json_t *params, const json_t *runs, void *user);
} sweep_spec;

/* Runs the whole sweep and reports through ctx. Returns 0 or -1 (error set). */
int sweep_run(magic_ctx *ctx, const sweep_spec *s, const json_t *params, void *user);

/* The number of points of params' sweep, in *points: 0, or -1 with a UsageError
 * naming the count and SWEEP_MAX_POINTS. For a magic whose own checks walk the
 * cross product before sweep_run does. */
int sweep_count(magic_ctx *ctx, const json_t *params, size_t *points);

/* The host-work limit: every point of params' sweep estimated with s->host_work,
 * against the limit per point and in all. 0, or -1 with the UsageError set.
 * sweep_run calls it; a magic that runs one point without sweep_run (%grid)
 * calls it itself. */
int host_work_check(magic_ctx *ctx, const sweep_spec *s, const json_t *params, void *user);
/* The limit in seconds: CUDALAB_HOST_WORK_LIMIT when it is a positive number, else
 * HOST_WORK_DEFAULT_LIMIT_S. */
double host_work_limit_s(void);
/* The cores the CPU backend's parallel parts run on (online CPUs, at most 64, as
 * its thread pools): a family multiplies a per-core rate by it. */
double host_work_cores(void);

/* A param's value as a list: an array as it is, a scalar as a one-element array. New reference. */
json_t *sweep_as_list(const json_t *v);

/* {"median", "min", "max", "mean", "stdev", "reps", "ci95_rel", "settled"} of t->ms (ms): ci95_rel is the relative half-width of
 * the median's 95% confidence interval, settled whether that is within CL_REPS_SETTLED
 * (cudalab/measure.h: --reps auto's rule, stated for fixed counts too); and "reps_checked" when the
 * backend checked any, which the sweep moves into the run's check. */
json_t *stats_json(const cl_times *t);

/* Sets run's "conditions" from the backend's account of the run that just returned (call it before
 * any other timed call): the SM and memory clocks NVML read between its reps, the reasons NVML
 * gave for slowing them ("slowed": power or heat), or "clocks": "unavailable: why", and the event
 * pair's own time subtracted from each rep. Nothing on a backend without (the CPU). Under
 * --counters also run's "counters" (sweep_counters.c). */
void sweep_add_conditions(magic_ctx *ctx, json_t *run);
/* The "counters" part of it (sweep_counters.c): what the backend counted of the run under
 * --counters (CL_COUNTERS' names, "source", "kernels", "passes", "flop_per_dram_byte"), or
 * {"source": "unavailable: why"}. Nothing without --counters. */
void sweep_add_counters(magic_ctx *ctx, json_t *run);

/* The point's --reps for a backend's args: the count, or CL_REPS_AUTO for "auto". */
int sweep_reps(const json_t *params);
/* The copies of a run's output a GPU keeps for the check of the point's timed reps (--check-reps,
 * --reps: cl_gpu_kept_copies): what its device memory budget counts. */
int sweep_kept_copies(const json_t *params);
double stats_median(const cl_times *t);

/* {"grid": [x,y,z], "block": [x,y,z], "smem_per_block": B, "regs_per_thread": R, "kernels": K} */
json_t *launch_json(const cl_launch *l);

/* The "device" object of a result document for the backend in ctx (name, cc, arch,
 * sms, peak_fp32_gflops, peak_bandwidth_gbs, measured_bandwidth_gbs, ptx_jit): also the
 * roofs of --roofline. */
json_t *sweep_device_json(magic_ctx *ctx);

#endif
