/* coalesce.c — the %coalesce magic: a copy kernel whose neighbouring threads
 * touch addresses --stride elements apart, and the row-wise vs column-wise
 * traversal of a matrix (--layout), showing what uncoalesced access costs.
 *
 * Two experiments share one kernel (cudalab/coalesce.h): --stride s copies N
 * floats with neighbours s apart; --layout row|col copies an R x C row-major
 * matrix row-wise (stride 1) or column-wise (stride C). run() picks the
 * experiment, validates sizes before anything is allocated and hands the
 * sweep to sweep_run(); point() runs one configuration.
 *
 * --variant names the experiment's own traversal (stride; under --layout the
 * layout's, row or col: ours by default) and students' %%kernel copies
 * (cl_coalesce_student), which run at every point of the experiment with its
 * n and stride, through the same input, timing and exact check.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "magic/family_run.h"
#include "magic/check.h"
#include "magic/families.h"
#include "cudalab/coalesce.h"
#include "render/render.h"
#include "magic/show_source.h"
#include "magic/sweep.h"
#include "student/run.h"
#include "student/sanitize.h"
#include "student/store.h"

static const char *const layout_choices[] = {"row", "col", NULL};

static const family_spec coalesce_family = {
    .magic = "coalesce",
    .variants = cl_coalesce_variants,
    .nvariants = CL_COALESCE_NVARIANTS,
    .student = &cl_coalesce_student,
    .quick = "--size 100003 --stride 7",
    FAMILY_OPS(coalesce, cl_coalesce_ops),
    .sources = "cuda/coalesce.cu and cpu/coalesce_cpu.c",
};

/* Flag order is sweep order: stride first, so the chart's x axis is the stride
 * (and --variant late: ours and yours side by side at each stride). */
static const flag_spec coalesce_flags[] = {
    {.name = "stride", .short_name = 's', .type = FLAG_INT, .def = NULL, .imin = 1, .imax = 1 << 30,
     .opts = FLAG_LIST, .help = "elements between neighbouring threads' addresses (default 1,2,4,8,16,32)"},
    {.name = "layout", .type = FLAG_CHOICE, .def = NULL, .choices = layout_choices, .opts = FLAG_LIST,
     .help = "matrix experiment instead: row (coalesced) and/or col (strided by the row length)"},
    /* on the CPU 2^23 still spills every cache (32 MiB each way) and keeps the six strides under 2 s */
    {.name = "size", .short_name = 'n', .type = FLAG_INT, .def = "2^24", .cpu_def = "2^23", .imin = 1,
     .imax = INT64_MAX, .opts = FLAG_LIST, .help = "floats to copy in the stride experiment"},
    {.name = "rows", .type = FLAG_INT, .def = "4096", .imin = 1, .imax = INT32_MAX,
     .help = "matrix rows R for --layout"},
    {.name = "cols", .type = FLAG_INT, .def = "4096", .imin = 1, .imax = INT32_MAX,
     .help = "matrix columns C (the row length) for --layout"},
    {.name = "block", .type = FLAG_DIMS, .imin = 1, .imax = 1024, .opts = FLAG_LIST,
     .help = "threads per block (256 by default; your kernels: the %%kernel line's): one dimension, a "
             "multiple of 32 up to 1024 (the copy is 1D)"},
    {.name = "variant", .short_name = 'v', .type = FLAG_CHOICE, .def = NULL, .family = &coalesce_family,
     .opts = FLAG_LIST, .help = "the traversals to run: the experiment's own (stride; under --layout, row "
                                "and col: the default) and your kernels; all: ours"},
    STUDENT_RUN_FLAGS,
    STUDENT_GRID_FLAG,
    SWEEP_MEASURE_FLAGS("seed of the input generated on the device",
                        "timed runs per point",
                        "compare every copied element with the input, exactly",
                        "sort the table by GB/s"),
    SHOW_SOURCE_FLAGS,
    {.name = NULL},
};

static const sweep_column coalesce_columns[] = {
    {.path = "variant", .header = "traversal"},
    {.path = "stride", .header = "stride"},
    {.path = "size", .header = "size"},
    {.path = "block", .header = "block"},
    {.path = "time_ms.median", .header = "median ms"},
    {.path = "gbs", .header = "GB/s"},
    {.path = "pct_of_bandwidth", .header = "% of copy BW"},
    {.path = "model.sectors_per_warp", .header = "32B sectors / warp"},
    {.path = "check.passed", .header = "check"},
    {.path = NULL},
};

/* Threads per block when --block is not given. */
#define CO_BLOCK_DEFAULT 256

typedef struct co_env {
    const cl_coalesce_ops *ops;
    uint64_t seed;
    int reps, warmup, check;
    double bw_gbs;
    json_t *student_firsts;         /* ours run at these values of -D only */
} co_env;

static bool given(const json_t *params, const char *key)
{
    const json_t *v = json_object_get(params, key);
    return v && !json_is_null(v);
}

/* ---- validation ---- */

static int check_fit(magic_ctx *ctx, const char *what, uint64_t n, double per, double fixed, uint64_t avail,
                     const char *where)
{
    double fit = ((double)avail - fixed) / per;
    char point[96], largest[64];
    snprintf(point, sizeof point, "%s (%" PRIu64 " floats)", what, n);
    snprintf(largest, sizeof largest, "largest size that fits: %" PRIu64 " floats", fit > 0 ? (uint64_t)fit : 0);
    mem_need need = {point, NULL, where, (double)n * per + fixed, (double)avail, largest};
    return magic_memory_fit(ctx, &need);
}

static int check_size(magic_ctx *ctx, const json_t *params, const char *what, uint64_t n)
{
    char err[CL_ERR_LEN] = "";
    cl_device_props dev, host;
    memset(&host, 0, sizeof host);
    if (magic_device_props(ctx, &dev) != 0)
        return -1;
    if (strcmp(ctx->backend->name, "cpu") == 0)
        return check_fit(ctx, what, n, 8, 64 << 20, dev.free_mem, "host");
    if (cl_cpu_backend()->device_props(0, &host, err) != 0)
        return magic_error(ctx, "RuntimeError", "host: %s", err);
    /* in and out, and the copies of out that the check of timed reps keeps */
    return check_fit(ctx, what, n, 4.0 * (2 + sweep_kept_copies(params)), 2.0 * dev.l2_bytes, dev.free_mem, "device") ||
           check_fit(ctx, what, n, 4, 0, host.free_mem, "host");
}

/* --block is dimensions, as in every magic; the copy kernels index in x only,
 * so a block is B x 1 x 1, whole warps. */
static int check_blocks(magic_ctx *ctx, const json_t *params)
{
    json_t *blocks = sweep_as_list(json_object_get(params, "block")), *v;
    size_t i;
    int rc = 0;
    json_array_foreach(blocks, i, v) {
        if (!json_is_array(v))
            continue;               /* not given: 256 */
        json_int_t x = json_integer_value(json_array_get(v, 0));
        if (json_integer_value(json_array_get(v, 1)) > 1 || json_integer_value(json_array_get(v, 2)) > 1)
            rc = magic_error(ctx, "UsageError", "--block: %%coalesce's copy is one-dimensional: give --block B "
                             "threads (threadIdx.x alone numbers the threads)");
        else if (x < 32 || x % 32 != 0)
            rc = magic_error(ctx, "UsageError", "--block %" JSON_INTEGER_FORMAT ": threads per block must be "
                             "a multiple of the warp size 32, from 32 to 1024", x);
        if (rc)
            break;
    }
    json_decref(blocks);
    return rc;
}

/* ---- --variant ---- */

/* The built-in traversals of this command's experiment: stride, or the layouts
 * --layout names (what `all` stands for); students' kernels always. */
static bool in_experiment(const cl_variant *v, size_t index, void *user)
{
    const json_t *layouts = user;
    if (index >= CL_COALESCE_NVARIANTS)
        return (v->flags & CL_V_RUNTIME) != 0;
    return layouts ? family_list_has(layouts, v->name) : index == CL_COALESCE_STRIDE;
}

/* A built-in name --variant gives must be of the experiment (family_run refused
 * a student's kernel this backend cannot run). */
static int check_variant(magic_ctx *ctx, const char *name, const json_t *layouts)
{
    if (strcmp(name, "all") == 0)
        return 0;
    int b = family_builtin(&coalesce_family, name);
    if (b < 0)
        return 0;
    if (!layouts && b != CL_COALESCE_STRIDE)
        return magic_error(ctx, "UsageError", "--variant %s: row and col are the traversals of the matrix "
                           "experiment (--layout %s --rows R --cols C); the stride experiment's own is stride",
                           name, name);
    if (layouts && b == CL_COALESCE_STRIDE)
        return magic_error(ctx, "UsageError", "--variant stride is the traversal of the stride experiment "
                           "(--stride S); under --layout ours is the layout's own: row, col");
    if (layouts && !family_list_has(layouts, name))
        return magic_error(ctx, "UsageError", "--variant %s runs at --layout %s: add %s to --layout", name, name,
                           name);
    return 0;
}

/* --variant as the points take it: not given, ours (stride, or null: each
 * layout's own); else the names, distinct, `all` standing for ours. */
static int resolve_variants(magic_ctx *ctx, json_t *params)
{
    const json_t *asked = json_object_get(params, "variant");
    json_t *layouts = given(params, "layout") ? sweep_as_list(json_object_get(params, "layout")) : NULL;
    if (json_is_null(asked)) {
        json_object_set_new(params, "variant", layouts ? json_null() : json_string("stride"));
        json_decref(layouts);
        return 0;
    }
    json_t *names = sweep_as_list(asked), *v, *list = NULL;
    size_t i;
    int rc = 0;
    json_array_foreach(names, i, v)
        if ((rc = check_variant(ctx, json_string_value(v), layouts)))
            break;
    if (rc == 0 && !(list = family_select(ctx, &coalesce_family, asked, in_experiment, layouts, ctx->backend->name)))
        rc = -1;
    bool ours_only = true;          /* under --layout: every layout's own, as by default */
    json_array_foreach(list, i, v)
        ours_only &= family_builtin(&coalesce_family, json_string_value(v)) >= 0;
    json_array_foreach(layouts, i, v)
        ours_only &= list && family_list_has(list, json_string_value(v));
    if (list && layouts && ours_only)
        json_object_set_new(params, "variant", json_null());
    else if (list && json_array_size(list) == 1 && !json_is_array(asked))
        json_object_set(params, "variant", json_array_get(list, 0));     /* one: nothing varies */
    else if (list)
        json_object_set(params, "variant", list);
    json_decref(list);
    json_decref(names);
    json_decref(layouts);
    return rc;
}

/* Chooses the experiment and fills in what it implies; params is a private copy. */
static int plan(magic_ctx *ctx, json_t *params)
{
    if (check_blocks(ctx, params))
        return -1;
    if (given(params, "layout")) {
        if (given(params, "stride"))
            return magic_error(ctx, "UsageError", "--stride and --layout are two experiments: run "
                               "--stride S on --size N, or --layout row,col on --rows R --cols C");
        uint64_t r = (uint64_t)json_integer_value(json_object_get(params, "rows"));
        uint64_t c = (uint64_t)json_integer_value(json_object_get(params, "cols"));
        json_object_set_new(params, "stride", json_null());
        json_object_set_new(params, "size", json_integer((json_int_t)(r * c)));
        char what[96];
        snprintf(what, sizeof what, "a %" PRIu64 " x %" PRIu64 " matrix", r, c);
        return resolve_variants(ctx, params) || check_size(ctx, params, what, r * c) ? -1 : 0;
    }
    if (!given(params, "stride"))
        json_object_set_new(params, "stride", json_pack("[i,i,i,i,i,i]", 1, 2, 4, 8, 16, 32));
    json_object_set_new(params, "layout", json_null());
    json_object_set_new(params, "rows", json_null());
    json_object_set_new(params, "cols", json_null());
    if (resolve_variants(ctx, params))
        return -1;
    json_t *sizes = sweep_as_list(json_object_get(params, "size")), *strides = sweep_as_list(json_object_get(params, "stride"));
    json_t *v;
    size_t i;
    uint64_t max_stride = 0;
    int rc = 0;
    json_array_foreach(strides, i, v)
        if ((uint64_t)json_integer_value(v) > max_stride)
            max_stride = (uint64_t)json_integer_value(v);
    json_array_foreach(sizes, i, v) {
        uint64_t n = (uint64_t)json_integer_value(v);
        if (max_stride > n) {
            rc = magic_error(ctx, "UsageError", "--stride %" PRIu64 " is larger than --size %" PRIu64
                             ": neighbouring threads would fall outside the array", max_stride, n);
            break;
        }
        if ((rc = check_size(ctx, params, "--size", n)))
            break;
    }
    json_decref(sizes);
    json_decref(strides);
    return rc;
}

/* ---- one point ---- */

/* The experiment of a point (CL_COALESCE_*) and its launch arguments. */
static int point_args(const co_env *env, const json_t *pt, cl_coalesce_args *a)
{
    const char *layout = json_string_value(json_object_get(pt, "layout"));
    int v = !layout ? CL_COALESCE_STRIDE : strcmp(layout, "row") == 0 ? CL_COALESCE_ROW : CL_COALESCE_COL;
    *a = (cl_coalesce_args){
        .n = (uint64_t)json_integer_value(json_object_get(pt, "size")),
        .stride = v == CL_COALESCE_STRIDE ? (uint64_t)json_integer_value(json_object_get(pt, "stride"))
                : v == CL_COALESCE_ROW ? 1 : (uint64_t)json_integer_value(json_object_get(pt, "cols")),
        .block = json_is_array(json_object_get(pt, "block"))
                     ? (int)json_integer_value(json_array_get(json_object_get(pt, "block"), 0)) : CO_BLOCK_DEFAULT,
        .seed = env->seed, .reps = env->reps, .warmup = env->warmup, .check = env->check,
    };
    return v;
}

/* Whether a point runs: a student's kernel at every point; ours at the points
 * of its own traversal (row at --layout row) and the first value of -D. */
static bool point_runs(const co_env *env, const json_t *pt, int traversal)
{
    const char *name = json_string_value(json_object_get(pt, "variant"));
    int b = name ? family_builtin(&coalesce_family, name) : traversal;
    if (b < 0)
        return true;
    return b == traversal && student_at_first(env->student_firsts, pt);
}

/* The check: every element exact; a student's out NaN-filled and guarded too. */
static json_t *check_json(bool student, const cl_coalesce_result *r)
{
    json_t *check = check_new(true, student ? "exact: every element of out against the input regenerated from the "
                                              "seed on the host; out filled with NaN before every rep and guarded "
                                              "past both ends"
                                            : "exact: every copied element against the input regenerated from the "
                                              "seed on the host", 0);
    if (student)
        json_object_set_new(check, "never_written", json_integer((json_int_t)r->unwritten));
    if (!r->mismatches)
        return check;
    check_wrong(check, r->mismatches, json_pack("{s:I}", "index", (json_int_t)r->first_bad), r->got, r->want);
    if (r->got != r->got)
        check_first_wrong(check, "out[%" PRIu64 "] was never written (expected %.9g)", r->first_bad, (double)r->want);
    else
        check_first_wrong(check, "out[%" PRIu64 "] = %.9g, expected %.9g", r->first_bad, (double)r->got,
                          (double)r->want);
    return check;
}

/* The point as a student would type it, for a failed run's message. */
static void point_line(const json_t *pt, const cl_coalesce_args *a, char *buf, size_t len)
{
    const char *layout = json_string_value(json_object_get(pt, "layout"));
    if (layout)
        snprintf(buf, len, "%%coalesce --layout %s --rows %" JSON_INTEGER_FORMAT " --cols %" JSON_INTEGER_FORMAT,
                 layout, json_integer_value(json_object_get(pt, "rows")),
                 json_integer_value(json_object_get(pt, "cols")));
    else
        snprintf(buf, len, "%%coalesce --size %" PRIu64 " --stride %" PRIu64, a->n, a->stride);
}

/* A student's kernel takes 1D blocks of whole warps, as ours: its threads are numbered by x alone. */
static int check_student_block(magic_ctx *ctx, const cl_student_kernel *k)
{
    if (k->block[1] <= 1 && k->block[2] <= 1 && k->block[0] % 32 == 0)
        return 0;
    return magic_error(ctx, "UsageError", "%s: a block of %dx%dx%d threads; %%coalesce runs 1D blocks of "
                       "whole warps (--block B, a multiple of 32 up to 1024, on the %%%%kernel line or here)",
                       k->name, k->block[0], k->block[1], k->block[2]);
}

static json_t *run_json(magic_ctx *ctx, const co_env *env, const json_t *pt, const char *name, int traversal,
                        const cl_coalesce_args *a, const cl_coalesce_result *r)
{
    const char *layout = json_string_value(json_object_get(pt, "layout"));
    double med = stats_median(&r->times), gbs = med > 0 ? 8.0 * (double)a->n / (med * 1e6) : 0;
    /* one warp's 32 loads of 4 bytes: 4 sectors of 32 bytes when contiguous, one each from stride 8 */
    uint64_t sectors = a->stride >= 8 ? 32 : 4 * a->stride;
    json_t *run = json_pack("{s:s, s:I, s:I, s:i, s:s, s:s}", "variant", name, "stride", (json_int_t)a->stride,
                            "size", (json_int_t)a->n, "block", a->block, "backend", ctx->backend->name,
                            "impl", r->impl);
    json_object_set_new(run, "layout", layout ? json_string(layout) : json_null());
    json_object_set_new(run, "rows", layout ? json_deep_copy(json_object_get(pt, "rows")) : json_null());
    json_object_set_new(run, "cols", layout ? json_deep_copy(json_object_get(pt, "cols")) : json_null());
    json_object_set_new(run, "time_ms", stats_json(&r->times));
    sweep_add_conditions(ctx, run);
    json_object_set_new(run, "gbs", json_real(gbs));
    json_object_set_new(run, "bandwidth_gbs", env->bw_gbs > 0 ? json_real(env->bw_gbs) : json_null());
    json_object_set_new(run, "pct_of_bandwidth", env->bw_gbs > 0 ? json_real(100.0 * gbs / env->bw_gbs)
                                                                 : json_null());
    /* the sector model is our traversal's; a student's kernel traverses as it likes */
    json_object_set_new(run, "model", a->student
                        ? json_pack("{s:n, s:I, s:n}", "sectors_per_warp", "useful_bytes", (json_int_t)(8 * a->n),
                                    "traffic_per_useful_byte")
                        : json_pack("{s:I, s:I, s:f}", "sectors_per_warp", (json_int_t)sectors, "useful_bytes",
                                    (json_int_t)(8 * a->n), "traffic_per_useful_byte", sectors / 4.0));
    json_t *launch = launch_json(&r->launch);
    json_object_set_new(launch, "config", json_string(a->student ? cl_coalesce_student.launch
                                                                 : cl_coalesce_variants[traversal].launch));
    json_object_set_new(run, "launch", launch);
    json_object_set_new(run, "check", env->check ? check_json(a->student != NULL, r) : check_skipped(NULL));
    return run;
}

static int co_point(magic_ctx *ctx, const json_t *pt, json_t *runs, void *user)
{
    co_env *env = user;
    cl_coalesce_args a;
    int traversal = point_args(env, pt, &a);
    if (!point_runs(env, pt, traversal))
        return 0;
    const char *name = json_string_value(json_object_get(pt, "variant"));
    const student_def *def = name && family_builtin(&coalesce_family, name) < 0 ? student_find(ctx->lab, name) : NULL;
    if (name && !def && family_builtin(&coalesce_family, name) < 0)
        return magic_error(ctx, "RuntimeError", "%%coalesce has no variant '%s'", name);
    if (!def)
        name = cl_coalesce_variants[traversal].name;
    student_launch sl;
    if (def && student_prepare(ctx, def, pt, 0, &sl) != 0)
        return -1;
    if (def && check_student_block(ctx, &sl.kernel) != 0) {
        student_launch_free(&sl);
        return -1;
    }
    if (def) {
        a.student = &sl.kernel;
        a.block = sl.kernel.block[0];
    }
    cl_coalesce_result *r = calloc(1, sizeof *r);
    char err[CL_ERR_LEN] = "";
    int rc = 0;
    if (!r) {
        rc = magic_error(ctx, "MemoryError", "out of host memory");
    } else if (MAGIC_TIMED(ctx, err, env->ops->run(&a, r, err)) != 0) {
        char line[160];
        point_line(pt, &a, line, sizeof line);
        rc = def ? student_run_failed(ctx, &sl, line, err)
                 : magic_error(ctx, magic_backend_ename(ctx->backend),
                               "%%coalesce %s (stride %" PRIu64 ", size %" PRIu64 "): %s", name, a.stride, a.n, err);
    } else {
        json_t *run = run_json(ctx, env, pt, name, traversal, &a, r);
        if (def)
            student_run_json(&sl, run);
        json_array_append_new(runs, run);
    }
    if (def)
        student_launch_free(&sl);
    free(r);
    return rc;
}

/* ---- host work (the framework's limit, sweep.h) ----
 * Elements copied per CPU-second on the CPU backend by stride, measured on a
 * 2-core AMD EPYC host (differences of CPU time between runs of 1 and 4 reps
 * of 2^25 floats, out of cache; estimates), interpolated between the strides
 * measured on a log scale; copies and the input's generation run on every
 * core, the check on one thread. */
static const struct { double stride, per_core; } co_rates[] = {
    {1, 6.7e8}, {2, 6.7e8}, {8, 4.7e8}, {32, 6.6e7}, {1024, 2.6e7},
};
#define CO_NRATES (sizeof co_rates / sizeof co_rates[0])
#define CO_RATE_INPUT 2e8           /* floats generated, per core */
#define CO_RATE_CHECK 6e8           /* floats regenerated and compared, one thread */
/* A student's copy on the CPU runner (cpu/simt/), every access checked: about
 * 0.08 us a thread per core on the same host, at any stride (2^20 and 2^22
 * floats, strides 1 and 32); min(reps, CL_SIMT_MAX_REPS) launches, no warm-up. */
#define CO_RATE_RUNNER 1.2e7        /* threads of a student's copy, per core */

static double copy_rate(double stride)
{
    if (stride >= co_rates[CO_NRATES - 1].stride)
        return co_rates[CO_NRATES - 1].per_core;
    size_t i = 0;
    while (stride > co_rates[i + 1].stride)
        i++;
    double t = log(stride / co_rates[i].stride) / log(co_rates[i + 1].stride / co_rates[i].stride);
    return co_rates[i].per_core * pow(co_rates[i + 1].per_core / co_rates[i].per_core, t);
}

static host_work co_host_work(magic_ctx *ctx, const json_t *pt, void *user)
{
    const co_env *env = user;
    host_work w = {0};
    cl_coalesce_args a;
    if (!point_runs(env, pt, point_args(env, pt, &a)))
        return w;
    double cores = host_work_cores(), rate = copy_rate((double)a.stride);
    const char *name = json_string_value(json_object_get(pt, "variant"));
    bool student = name && family_builtin(&coalesce_family, name) < 0;
    if (strcmp(ctx->backend->name, "cpu") == 0 && student) {
        w.run = (double)cl_coalesce_threads(a.n, a.stride) * host_work_runner_share(pt);
        w.run_rate = CO_RATE_RUNNER * cores;
        w.setup = (double)a.n;
        w.setup_rate = CO_RATE_INPUT;       /* the arena's input, on one thread */
    } else if (strcmp(ctx->backend->name, "cpu") == 0) {
        w.run = (double)a.n;
        w.run_rate = rate * cores;
        w.setup = (double)a.n;
        w.setup_rate = CO_RATE_INPUT * cores;
    }
    if (env->check) {
        w.check = (double)a.n;
        w.check_rate = CO_RATE_CHECK;
    }
    return w;
}

/* ---- the command ---- */

static const sweep_spec coalesce_sweep = {
    .magic = "coalesce", .title = "Coalescing: a copy with strided neighbours", .metric = "gbs",
    .metric_label = "GB/s", .rate_of = "bytes", .columns = coalesce_columns, .run_point = co_point,
    .host_work = co_host_work, .size_flag = "size",
};

static int co_prepare(magic_ctx *ctx, const json_t *given, json_t *p, void *env_)
{
    (void)given;
    co_env *env = env_;
    *env = (co_env){
        .ops = ctx->backend->coalesce,
        .seed = (uint64_t)json_integer_value(json_object_get(p, "seed")),
        .reps = sweep_reps(p),
        .warmup = (int)json_integer_value(json_object_get(p, "warmup")),
        .check = json_is_true(json_object_get(p, "check")),
    };
    char err[CL_ERR_LEN];
    if (magic_copy_bandwidth(ctx, ctx->backend, &env->bw_gbs, err) != 0)
        env->bw_gbs = 0;
    return plan(ctx, p);
}

static const family_command coalesce_command = {
    .family = &coalesce_family, .sweep = &coalesce_sweep, FAMILY_ENV(co_env), .prepare = co_prepare,
};

static int coalesce_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    return family_run(ctx, &coalesce_command, params, body);
}

static const char *const coalesce_examples[] = {
    "%coalesce",
    "%coalesce --stride 1,2,4,8,16,32 --size 2^26",
    "%coalesce --stride 1,2,3,4,5,6,7,8 --size 2^24",
    "%coalesce --layout row,col --rows 4096 --cols 4096",
    "%coalesce --layout row,col --rows 8192 --cols 8192",
    "%coalesce --stride 1,32 --variant stride --backend cpu",
    NULL,
};

const magic_spec magic_coalesce = {
    .name = "coalesce",
    .summary = "Copy bandwidth as neighbouring threads' addresses spread apart (memory coalescing)",
    .description =
        "DRAM delivers data in bursts, and the GPU fetches memory in 32-byte sectors: when the 32 "
        "threads of a warp load 32 consecutive floats (128 bytes), the hardware combines them into 4 "
        "sectors, one coalesced access. When neighbouring threads' addresses are s elements apart, the "
        "same warp touches 4·s sectors (32 from s = 8 on), each carrying 4 useful bytes of 32: the copy "
        "moves up to 8 times more data than it uses and its useful bandwidth falls accordingly.\n\n"
        "--stride s (default 1,2,4,8,16,32): a copy of --size N floats where thread t copies element "
        "(t % m)·s + t/m, m = ceil(N/s): every element is copied exactly once at every stride, so "
        "the useful bytes (8·N, read + write) and the memory are the same and only the access pattern "
        "changes. GB/s counts useful bytes; % of copy BW compares with the device's measured copy "
        "bandwidth; the model column gives the 32-byte sectors one warp touches.\n\n"
        "--layout row,col with --rows R --cols C: the same copy of an R x C row-major matrix traversed "
        "row-wise (neighbouring threads walk along a row: coalesced) or column-wise (they walk down a "
        "column, a whole row of C floats apart: uncoalesced) — the lecture's reason to make threadIdx.x "
        "index the column.\n\n"
        "Timing: CUDA events around the kernel only, median of --reps after --warmup, the L2 flushed "
        "before every launch; the input is generated on the device from --seed. Every run is checked "
        "unless --no-check: the whole output is copied back and compared with the input, element by "
        "element, exactly. Without a GPU the CPU backend runs the same access pattern with host "
        "threads; there the penalty comes from cache lines and prefetchers, not DRAM bursts.\n\n"
        "--variant names the traversals to run: the experiment's own (stride; under --layout the layout's, "
        "row or col), which is the default, and your own copies (a %%kernel --for coalesce cell): "
        "__global__ void NAME(" CL_COALESCE_STUDENT_PARAMS ") "
        "copies every element, out[i] = in[i] for every i < n, with whatever mapping of threads to "
        "elements you choose; stride is the experiment's (--stride S, 1 under --layout row, the row length "
        "C under col), n and stride 64-bit as ours (unsigned long long, not size_t). It is launched as ours: "
        "one thread per element of the ceil(n/stride) x stride view (up to stride-1 threads past n: compare "
        "with n), ceil(threads/B) blocks of B = 256 threads (--block, 1D whole warps; --grid overrides), so "
        "--stride 1,2,4,8,16,32 --variant stride,mycopy shows your copy's GB/s beside ours at every "
        "stride. Same input, timing and exact check; out is filled with NaN before every rep and guarded "
        "past both ends, and the warm-up copies another input, so an element never written or a write "
        "outside out is named. --show-source stride --as-kernel gives the lecture's strided copy as such a "
        "cell.",
    .flags = coalesce_flags,
    .mode = MAGIC_LINE,
    .where = MAGIC_WORKER,
    .run = coalesce_run,
    .examples = coalesce_examples,
    .attach = student_attach,
};
