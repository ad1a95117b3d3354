/* grid.c — the %grid magic: how a grid of blocks of threads covers a 1D, 2D
 * or 3D data set (dimGrid, idle threads, warps, the index formulas and the
 * bounds check), validated against the device's limits; with --run the
 * mapping is launched and every element is checked to be visited once.
 *
 * The arithmetic lives in grid_plan.c and is exact on every backend; only
 * --run touches the backend (cuda/grid.cu, or cpu/grid_cpu.c on the CPU).
 *
 * --variant names what --run launches: map (ours, the visit counter) and/or a
 * student's picture kernel (%%kernel --for grid, cl_grid_student), which runs
 * on the same plan and implies --run; doc.runs holds one run per variant.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "magic/check.h"
#include "cudalab/cpu_model.h"
#include "cudalab/grid.h"
#include "magics/grid_plan.h"
#include "magic/families.h"
#include "magic/magic.h"
#include "render/render.h"
#include "magic/sweep.h"
#include "student/run.h"
#include "student/sanitize.h"
#include "student/store.h"

static const family_spec grid_family = {
    .magic = "grid",
    .variants = cl_grid_variants,
    .nvariants = CL_GRID_NVARIANTS,
    .student = &cl_grid_student,
    .quick = "--data 67x33 --block 16x16",
    FAMILY_OPS(grid, cl_grid_ops),
    .sources = "cuda/grid.cu and cpu/grid_cpu.c",
};

static const flag_spec grid_flags[] = {
    {.name = "data", .short_name = 'd', .type = FLAG_DIMS, .def = NULL, .imin = 1, .imax = INT32_MAX,
     .opts = FLAG_REQUIRED, .help = "the data's shape, width first: 1000000, 76x62, 512x512x64"},
    {.name = "block", .short_name = 'b', .type = FLAG_DIMS, .def = "256", .imin = 1, .imax = INT32_MAX,
     .help = "threads per block, x first: 256, 16x16, 8x8x8"},
    {.name = "run", .type = FLAG_BOOL, .def = "false",
     .help = "launch the mapping and check that every element is visited exactly once"},
    SWEEP_SEED_FLAG("kept for symmetry with the timed magics (the mapping has no input)"),
    SWEEP_TIMING_FLAGS("timed launches with --run",
                       "untimed launches before them"),
    SWEEP_CHECK_FLAG("with --run, check the visit counts"),
    SWEEP_FORCE_FLAG,
    FAMILY_VARIANT_FLAG(&grid_family, "map"),
    STUDENT_RUN_FLAGS,
    STUDENT_GRID_FLAG,
    {.name = NULL},
};

/* ---- limits ---- */

static void limits_of(magic_ctx *ctx, cl_grid_limits *lim, const char **source, uint64_t *free_mem)
{
    static const cl_grid_limits defaults = CL_GRID_CUDA_DEFAULTS;
    cl_device_props p;
    char err[CL_ERR_LEN];
    *lim = defaults;
    *source = "CUDA defaults for every compute capability since 3.0 (no backend answered)";
    *free_mem = 0;
    memset(&p, 0, sizeof p);
    if (!ctx->backend || ctx->backend->device_props(ctx->dev.index, &p, err) != 0)
        return;
    *free_mem = p.free_mem;
    if (p.max_threads_per_block <= 0 || p.max_block[0] <= 0 || p.max_grid[0] <= 0)
        return;
    lim->max_threads_per_block = p.max_threads_per_block;
    lim->warp = p.warp_size > 0 ? p.warp_size : lim->warp;
    for (int d = 0; d < 3; d++) {
        lim->max_block[d] = p.max_block[d];
        lim->max_grid[d] = p.max_grid[d];
    }
    *source = strcmp(ctx->backend->name, "cpu") == 0
                  ? "the CPU device model (" CL_CPU_MODEL_SM " per logical CPU, with CUDA's limits for "
                    "every compute capability since 3.0)"
                  : "this device (cudaGetDeviceProperties)";
}

static int dims_of(const json_t *v, int64_t *out)
{
    size_t i;
    json_t *x;
    if (json_is_integer(v)) {
        out[0] = json_integer_value(v);
        return 1;
    }
    json_array_foreach(v, i, x)
        if (i < 3)
            out[i] = json_integer_value(x);
    return (int)json_array_size(v);
}

/* ---- document and view ---- */

static void index_text(const cl_grid_plan *p, json_t *idx)
{
    char b[256];
    if (p->dims == 1) {
        json_object_set_new(idx, "i", json_string("i = blockIdx.x * blockDim.x + threadIdx.x"));
        snprintf(b, sizeof b, "if (i < %" PRId64 ")", p->data[0]);
    } else {
        json_object_set_new(idx, "col", json_string("col = blockIdx.x * blockDim.x + threadIdx.x"));
        json_object_set_new(idx, "row", json_string("row = blockIdx.y * blockDim.y + threadIdx.y"));
        if (p->dims == 3) {
            json_object_set_new(idx, "plane", json_string("plane = blockIdx.z * blockDim.z + threadIdx.z"));
            snprintf(b, sizeof b, "if (plane < %" PRId64 " && row < %" PRId64 " && col < %" PRId64 ")",
                     p->data[2], p->data[1], p->data[0]);
        } else {
            snprintf(b, sizeof b, "if (row < %" PRId64 " && col < %" PRId64 ")", p->data[1], p->data[0]);
        }
        json_object_set_new(idx, "element", json_string(
            p->dims == 3 ? "element = (plane * height + row) * width + col" : "element = row * width + col"));
    }
    json_object_set_new(idx, "bounds_check", json_string(b));
}

static json_t *dims_json(const int64_t *v, int n)
{
    json_t *a = json_array();
    for (int d = 0; d < n; d++)
        json_array_append_new(a, json_integer(v[d]));
    return a;
}

static void dims_str(const int64_t *v, int n, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int d = 0; d < n; d++) {
        size_t u = strlen(buf);
        snprintf(buf + u, len - u, "%s%" PRId64, d ? "x" : "", v[d]);
    }
}

static json_t *plan_doc(magic_ctx *ctx, const json_t *params, const cl_grid_plan *p,
                        const cl_grid_limits *lim, const char *source)
{
    json_t *doc = json_pack("{s:s, s:s, s:o, s:O}", "magic", "grid", "backend",
                            ctx->backend ? ctx->backend->name : "none", "device", sweep_device_json(ctx),
                            "params", params);
    json_object_set_new(doc, "backend_note", ctx->dev.note && *ctx->dev.note
                                                 ? json_string(ctx->dev.note) : json_null());
    json_object_set_new(doc, "dims", json_integer(p->dims));
    json_object_set_new(doc, "data", dims_json(p->data, 3));
    json_object_set_new(doc, "block", dims_json(p->block, 3));
    json_object_set_new(doc, "grid", dims_json(p->grid, 3));
    json_t *n = json_pack("{s:I, s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
        "blocks", (json_int_t)p->blocks, "threads_per_block", (json_int_t)p->threads_per_block,
        "threads", (json_int_t)p->threads, "elements", (json_int_t)p->elements,
        "idle_threads", (json_int_t)p->idle, "idle_pct", p->idle_pct,
        "warps_per_block", (json_int_t)p->warps_per_block,
        "threads_in_last_warp", (json_int_t)p->threads_in_last_warp,
        "partial_warps_per_block", (json_int_t)p->partial_warps_per_block,
        "warps", (json_int_t)p->warps, "warps_with_idle", (json_int_t)p->warps_with_idle,
        "warps_all_idle", (json_int_t)p->warps_all_idle, "warps_divergent", (json_int_t)p->warps_divergent);
    json_object_update(doc, n);
    json_decref(n);
    json_t *idx = json_object();
    index_text(p, idx);
    json_object_set_new(doc, "index", idx);
    json_object_set_new(doc, "limits", json_pack("{s:I, s:o, s:o, s:I, s:s}", "max_threads_per_block",
                                                 (json_int_t)lim->max_threads_per_block, "max_block",
                                                 dims_json(lim->max_block, 3), "max_grid",
                                                 dims_json(lim->max_grid, 3), "warp_size", (json_int_t)lim->warp,
                                                 "source", source));
    json_object_set_new(doc, "runs", json_array());
    return doc;
}

static void row(json_t *t, const char *k, const char *v)
{
    view_table_row(t, json_pack("[s,s]", k, v));
}

static json_t *plan_view(const json_t *doc, const cl_grid_plan *p)
{
    char a[128], b[128], c[300];   /* room for both shapes and the words */
    dims_str(p->data, p->dims, a, sizeof a);
    dims_str(p->block, p->dims, b, sizeof b);
    snprintf(c, sizeof c, "Grid for %s elements in blocks of %s threads", a, b);
    json_t *view = view_new(c);
    json_t *t = view_add_table(view, NULL, json_pack("[s,s]", "quantity", "value"));
    dims_str(p->grid, p->dims, a, sizeof a);
    if (p->dims > 1)                /* 5x4 = 20 blocks; in 1D the shape is the count */
        snprintf(c, sizeof c, "%s = %" PRId64 " blocks", a, p->blocks);
    else
        snprintf(c, sizeof c, "%" PRId64 " blocks", p->blocks);
    row(t, "dimGrid", c);
    if (p->dims > 1)
        snprintf(c, sizeof c, "%s = %" PRId64 " threads", b, p->threads_per_block);
    else
        snprintf(c, sizeof c, "%" PRId64 " threads", p->threads_per_block);
    row(t, "dimBlock", c);
    snprintf(c, sizeof c, "%" PRId64 " for %" PRId64 " elements", p->threads, p->elements);
    row(t, "threads", c);
    snprintf(c, sizeof c, "%" PRId64 " (%.2f%%)", p->idle, p->idle_pct);
    row(t, "idle threads", c);
    snprintf(c, sizeof c, "%" PRId64 " (the last holds %" PRId64 " of %" PRId64 " threads)", p->warps_per_block,
             p->threads_in_last_warp, p->warp);
    row(t, "warps per block", c);
    snprintf(c, sizeof c, "%" PRId64, p->partial_warps_per_block);
    row(t, "partially filled warps per block", c);
    snprintf(c, sizeof c, "%" PRId64 ": %" PRId64 " with idle threads (%" PRId64 " divergent at the "
             "bounds check, %" PRId64 " entirely idle)", p->warps, p->warps_with_idle, p->warps_divergent,
             p->warps_all_idle);
    row(t, "warps in the grid", c);
    const json_t *idx = json_object_get(doc, "index");
    char text[600] = "";
    static const char *const keys[] = {"i", "col", "row", "plane", "element", "bounds_check"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const char *s = json_string_value(json_object_get(idx, keys[k]));
        if (s) {
            size_t u = strlen(text);
            snprintf(text + u, sizeof text - u, "%s%s", u ? "\n" : "", s);
        }
    }
    view_add_text(view, text);
    const json_t *lim = json_object_get(doc, "limits");
    snprintf(c, sizeof c, "validated against %s", json_string_value(json_object_get(lim, "source")));
    view_add_note(view, c);
    return view;
}

/* ---- --run ---- */

/* Host work of --run on the CPU backend (the framework's limit, sweep.h), per
 * CPU-second, measured on a 2-core AMD EPYC host (differences of CPU time
 * between runs of 1 and 4 reps of 2^25 threads in blocks of 1x1 to 32x32;
 * estimates): the threads walk the blocks on every core; before each rep the
 * counters are zeroed, after the last they are tallied, on one thread. On a
 * GPU all of it stays on the device. */
#define GRID_RATE_THREADS 2e8       /* logical threads (idle ones too), per core */
#define GRID_RATE_ZERO 5e9          /* bytes of counters zeroed, one thread */
#define GRID_RATE_TALLY 2.2e8       /* counters allocated and tallied, one thread */

static host_work grid_host_work(magic_ctx *ctx, const json_t *point, void *user)
{
    const cl_grid_plan *p = user;
    host_work w = {0};
    if (strcmp(ctx->backend->name, "cpu") != 0)
        return w;
    double cores = host_work_cores(), counters = (double)p->elements;
    w.run = (double)p->threads + 4 * counters * GRID_RATE_THREADS * cores / GRID_RATE_ZERO;  /* in threads */
    w.run_rate = GRID_RATE_THREADS * cores;
    w.setup = counters;
    w.setup_rate = GRID_RATE_TALLY;
    return w;
}

/* A student's picture kernel on the CPU runner (cpu/simt/), every access
 * checked: about 0.08 us a thread per core on the same host (1024x1024 and
 * 2048x2048 pixels in blocks of 16x16), min(reps, CL_SIMT_MAX_REPS) launches
 * with no warm-up; Pin is generated and Pout checked on one thread. */
#define GRID_RATE_RUNNER 1.2e7      /* threads of a student's launch, per core */
#define GRID_RATE_PICTURE 2e8       /* pixels generated, or regenerated and compared, one thread */

static host_work picture_host_work(magic_ctx *ctx, const json_t *point, void *user)
{
    const cl_grid_plan *p = user;
    host_work w = {0};
    if (strcmp(ctx->backend->name, "cpu") != 0)
        return w;
    w.run = (double)p->threads * host_work_runner_share(point);
    w.run_rate = GRID_RATE_RUNNER * host_work_cores();
    w.setup = (double)p->elements;
    w.setup_rate = GRID_RATE_PICTURE;
    w.check = (double)p->elements;
    w.check_rate = GRID_RATE_PICTURE;
    return w;
}

/* --run (the mapping: grid_host_work) or a student's picture kernel
 * (picture_host_work), held to the host-work limit: one point, the data's
 * shape as typed. */
static int check_host_work(magic_ctx *ctx, const json_t *params, const cl_grid_plan *p, host_work_fn fn)
{
    const sweep_spec grid_work = {.magic = "grid", .host_work = fn, .size_flag = "data"};
    char shape[128];
    dims_str(p->data, p->dims, shape, sizeof shape);
    json_t *point = json_pack("{s:s, s:O, s:O, s:O}", "data", shape, "reps", json_object_get(params, "reps"),
                              "warmup", json_object_get(params, "warmup"), "force", json_object_get(params, "force"));
    int rc = point ? host_work_check(ctx, &grid_work, point, (void *)p)
                   : magic_error(ctx, "MemoryError", "out of memory");
    json_decref(point);
    return rc;
}

/* The check of --run: a count array, every element visited exactly once and
 * the idle threads as the plan predicts; which element went wrong is not kept. */
static json_t *map_check(const cl_grid_result *r, const cl_grid_plan *p, bool ok)
{
    json_t *c = check_new(ok, "count array: every element visited exactly once, idle threads as predicted", 0);
    json_object_set_new(c, "visited_once", json_integer((json_int_t)r->visited_once));
    json_object_set_new(c, "never", json_integer((json_int_t)r->never));
    json_object_set_new(c, "multiple", json_integer((json_int_t)r->multiple));
    json_object_set_new(c, "idle_threads", json_integer((json_int_t)r->idle_threads));
    json_object_set_new(c, "idle_expected", json_integer((json_int_t)p->idle));
    if (!ok)
        check_wrong(c, r->never + r->multiple + (r->idle_threads != (uint64_t)p->idle), NULL, NAN, NAN);
    return c;
}

static int run_mapping(magic_ctx *ctx, const json_t *params, const cl_grid_plan *p, uint64_t free_mem,
                       json_t *doc, json_t *view)
{
    const cl_grid_ops *ops = ctx->backend->grid;
    if (!ops)
        return magic_error(ctx, "RuntimeError", "the %s backend was built without %%grid --run "
                           "(rebuild libcudalab_cuda.so with cuda/grid.cu)", ctx->backend->name);
    char fit[64];
    snprintf(fit, sizeof fit, "largest element count that fits: %.0f", (double)free_mem / 4.0);
    mem_need need = {"--run", "the count array, 4 bytes per element",
                     strcmp(ctx->backend->name, "cpu") ? "device" : "host", 4.0 * (double)p->elements,
                     (double)free_mem, fit};
    if (magic_memory_fit(ctx, &need) != 0)
        return -1;
    if (p->elements > (INT64_MAX >> 3))     /* free memory unknown, and no memory holds that */
        return magic_error(ctx, "MemoryError", "--run: a count array of %lld elements (4 bytes each) "
                           "fits in no memory", (long long)p->elements);
    if (check_host_work(ctx, params, p, grid_host_work) != 0)
        return -1;
    cl_grid_args a = {.seed = (uint64_t)json_integer_value(json_object_get(params, "seed")),
                      .reps = sweep_reps(params),
                      .warmup = (int)json_integer_value(json_object_get(params, "warmup"))};
    memcpy(a.data, p->data, sizeof a.data);
    memcpy(a.block, p->block, sizeof a.block);
    memcpy(a.grid, p->grid, sizeof a.grid);
    cl_grid_result *r = calloc(1, sizeof *r);
    char err[CL_ERR_LEN] = "";
    if (!r)
        return magic_error(ctx, "MemoryError", "out of host memory");
    if (MAGIC_TIMED(ctx, err, ops->run(&a, r, err)) != 0) {
        free(r);
        return magic_error(ctx, magic_backend_ename(ctx->backend),
                           "%%grid --run: %s", err);
    }
    bool check = json_is_true(json_object_get(params, "check"));
    bool ok = r->visited_once == (uint64_t)p->elements && r->never == 0 && r->multiple == 0 &&
              r->idle_threads == (uint64_t)p->idle;
    json_t *run = json_pack("{s:s, s:s, s:s, s:o, s:o}", "variant", "map", "backend", ctx->backend->name, "impl",
                            r->impl, "time_ms", stats_json(&r->times), "launch", launch_json(&r->launch));
    sweep_add_conditions(ctx, run);
    json_object_set_new(run, "check", check ? map_check(r, p, ok) : check_skipped(NULL));
    json_array_append_new(json_object_get(doc, "runs"), run);
    char c[300];
    snprintf(c, sizeof c, "--run on %s: median %.4f ms over %d reps; %s", ctx->backend->name,
             stats_median(&r->times), r->times.reps,
             !check ? "not checked (--no-check)"
             : ok ? "every element visited exactly once"
                  : "WRONG: some elements were missed or visited twice");
    view_add_note(view, c);
    view_add_note(view, r->impl);
    free(r);
    return check && !ok ? 1 : 0;
}

/* The check of a student's picture: every pixel exactly 2 * Pin (one correctly rounded product). */
static json_t *picture_check(const cl_grid_plan *p, uint64_t seed, const float *pout, char *first, size_t len)
{
    uint64_t width = (uint64_t)p->data[0], height = (uint64_t)p->data[1], wrong, never;
    int64_t bad = cl_grid_picture_check(pout, width, height, seed, &wrong, &never);
    json_t *c = check_new(bad < 0, "exact: every pixel of Pout against 2 * Pin on the host; Pout filled with NaN "
                          "before every launch and guarded past both ends", 0);
    json_object_set_new(c, "pixels", json_integer((json_int_t)(width * height)));
    json_object_set_new(c, "never_written", json_integer((json_int_t)never));
    first[0] = '\0';
    if (bad >= 0) {
        uint64_t row = (uint64_t)bad / width, col = (uint64_t)bad % width;
        float want = 2.0f * cl_uniform(seed, (uint64_t)bad), got = pout[bad];
        check_wrong(c, wrong, json_pack("{s:I, s:I}", "row", (json_int_t)row, "col", (json_int_t)col), got, want);
        if (got != got)
            snprintf(first, len, "Pout[%" PRIu64 "][%" PRIu64 "] was never written (expected %.9g)", row, col, want);
        else
            snprintf(first, len, "Pout[%" PRIu64 "][%" PRIu64 "] = %.9g, expected %.9g", row, col, got, want);
        check_first_wrong(c, "%s", first);
    }
    return c;
}

/* A student's picture kernel on the plan (its --block and grid). 0, 1 when its
 * picture is wrong (first set), or -1 with the error in ctx. */
static int run_picture(magic_ctx *ctx, const json_t *params, const cl_grid_plan *p, const student_def *d,
                       uint64_t free_mem, json_t *doc, json_t *view, char *first, size_t len)
{
    if (p->dims > 2)
        return magic_error(ctx, "UsageError", "--data: %s is a picture kernel, and a picture is 2D "
                           "(WIDTHxHEIGHT; 1D data is one row)", d->name);
    uint64_t n = (uint64_t)p->elements, seed = (uint64_t)json_integer_value(json_object_get(params, "seed"));
    char fit[64];
    /* Pin and Pout, and on a GPU the copies of Pout that the check of its timed reps keeps */
    bool gpu = strcmp(ctx->backend->name, "cpu") != 0;
    double per = 4.0 * (2 + (gpu ? sweep_kept_copies(params) : 0));
    snprintf(fit, sizeof fit, "largest picture that fits: %.0f pixels", (double)free_mem / per);
    mem_need need = {"--data", gpu ? "Pin, Pout and the check's copies of Pout, 4 bytes a pixel each"
                                   : "Pin and Pout, 4 bytes a pixel each", "device", per * (double)n,
                     (double)free_mem, fit};
    if (magic_memory_fit(ctx, &need) != 0 || check_host_work(ctx, params, p, picture_host_work) != 0)
        return -1;
    float *pout = malloc(n * sizeof *pout);
    cl_grid_result *r = calloc(1, sizeof *r);
    student_launch sl;
    if (!pout || !r) {
        free(pout);
        free(r);
        return magic_error(ctx, "MemoryError", "out of host memory for Pout (%.1f MiB)", (double)n * 4 / 1048576.0);
    }
    if (student_prepare(ctx, d, params, 0, &sl) != 0) {
        free(pout);
        free(r);
        return -1;
    }
    cl_grid_args a = {.seed = seed, .reps = sweep_reps(params),
                      .warmup = (int)json_integer_value(json_object_get(params, "warmup")), .student = &sl.kernel,
                      .pout = pout};
    memcpy(a.data, p->data, sizeof a.data);
    memcpy(a.block, p->block, sizeof a.block);
    memcpy(a.grid, p->grid, sizeof a.grid);
    char err[CL_ERR_LEN] = "";
    int rc = 0;
    if (MAGIC_TIMED(ctx, err, ctx->backend->grid->run(&a, r, err)) != 0) {
        char line[128];
        snprintf(line, sizeof line, "%%grid --data %" PRId64 "x%" PRId64, p->data[0], p->data[1]);
        rc = student_run_failed(ctx, &sl, line, err);
    } else {
        json_t *run = json_pack("{s:s, s:s, s:s, s:o, s:o}", "variant", d->name, "backend", ctx->backend->name,
                                "impl", r->impl, "time_ms", stats_json(&r->times), "launch", launch_json(&r->launch));
        sweep_add_conditions(ctx, run);
        student_run_json(&sl, run);
        json_object_set_new(json_object_get(run, "launch"), "config", json_string(cl_grid_student.launch));
        bool check = json_is_true(json_object_get(params, "check"));
        json_t *c = check ? picture_check(p, seed, pout, first, len) : check_skipped(NULL);
        rc = check && json_is_false(json_object_get(c, "passed"));
        json_object_set_new(run, "check", c);
        json_array_append_new(json_object_get(doc, "runs"), run);
        char note[400];
        snprintf(note, sizeof note, "your picture kernel %s: median %.4f ms over %d reps; %s", d->name,
                 stats_median(&r->times), r->times.reps, !check ? "not checked (--no-check)"
                 : rc ? first : "every pixel of Pout is 2 * Pin");
        view_add_note(view, note);
    }
    student_launch_free(&sl);
    free(pout);
    free(r);
    return rc;
}

/* --variant as names (map, your kernels); a student's kernel only where the backend runs it. */
static json_t *variants_of(magic_ctx *ctx, const json_t *params, bool *students)
{
    json_t *names = family_select(ctx, &grid_family, json_object_get(params, "variant"), NULL, NULL,
                                  ctx->backend ? ctx->backend->name : "none");
    size_t i;
    json_t *v;
    *students = false;
    json_array_foreach(names, i, v)
        if (family_builtin(&grid_family, json_string_value(v)) < 0) {
            *students = true;
            if (!ctx->backend || !family_runs_student(&grid_family, ctx->backend)) {
                family_refuse_student(ctx, json_string_value(v));
                json_decref(names);
                return NULL;
            }
        }
    return names;
}

/* Only --run, a student's kernel or --sanitize launches anything: the plan alone needs the device's
 * limits, never a slot of it (magic_spec.needs_device). */
static bool grid_needs_device(const json_t *params)
{
    if (json_is_true(json_object_get(params, "run")) || json_is_true(json_object_get(params, "sanitize")))
        return true;
    const json_t *v = json_object_get(params, "variant"), *one;
    size_t i;
    if (json_is_string(v))
        return strcmp(json_string_value(v), "map") != 0;
    json_array_foreach(v, i, one)
        if (!json_is_string(one) || strcmp(json_string_value(one), "map") != 0)
            return true;
    return false;
}

static int grid_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    (void)body;
    if (json_is_true(json_object_get(params, "sanitize")))
        return student_sanitize_command(ctx, &grid_family, params);
    const json_t *grids = json_object_get(params, "grid");
    if (json_is_array(grids) && json_is_array(json_array_get(grids, 0)) && json_array_size(grids) > 1)
        return magic_error(ctx, "UsageError", "--grid: %%grid shows one plan, so it takes one grid (give a list "
                           "to a family magic to sweep it)");
    bool students;
    json_t *names = variants_of(ctx, params, &students);
    if (!names)
        return -1;
    int64_t data[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    int nd = dims_of(json_object_get(params, "data"), data);
    int nb = dims_of(json_object_get(params, "block"), block);
    cl_grid_limits lim;
    const char *source;
    uint64_t free_mem;
    limits_of(ctx, &lim, &source, &free_mem);
    cl_grid_plan p;
    char err[512];
    if (cl_grid_plan_make(data, nd, block, nb, &lim, &p, err, sizeof err) != 0) {
        char ds[96], bs[96];
        dims_str(data, nd > 3 ? 3 : nd, ds, sizeof ds);
        dims_str(block, nb > 3 ? 3 : nb, bs, sizeof bs);
        json_decref(names);
        return magic_error(ctx, "UsageError", "--data %s --block %s: %s (limits: %s)", ds, bs, err,
                           source);
    }
    json_t *doc = plan_doc(ctx, params, &p, &lim, source);
    json_t *view = plan_view(doc, &p);
    int rc = 0;
    char first[200] = "", failed[128] = "";
    size_t i;
    json_t *v;
    if ((json_is_true(json_object_get(params, "run")) || students) && ctx->backend)
        json_array_foreach(names, i, v) {
            const char *name = json_string_value(v);
            int one = family_builtin(&grid_family, name) >= 0
                          ? run_mapping(ctx, params, &p, free_mem, doc, view)
                          : run_picture(ctx, params, &p, student_find(ctx->lab, name), free_mem, doc, view, first,
                                        sizeof first);
            if (one < 0) {
                rc = -1;
                break;
            }
            if (one > 0 && !failed[0])
                snprintf(failed, sizeof failed, "%s", name);
            rc |= one;
        }
    json_decref(names);
    if (rc < 0) {
        json_decref(doc);
        json_decref(view);
        return -1;
    }
    magic_result(ctx, doc, view);
    if (rc > 0 && family_builtin(&grid_family, failed) >= 0)
        return magic_error(ctx, "CheckError", "%%grid --run: some elements were not visited exactly once");
    if (rc > 0)
        return magic_error(ctx, "CheckError", "your picture kernel %s computes a wrong picture: %s", failed, first);
    return 0;
}

static const char *const grid_examples[] = {
    "%grid --data 76x62 --block 16x16",
    "%grid --data 76x62 --block 16x16 --run",
    "%grid --data 1000000 --block 256 --run",
    "%grid --data 512x512x64 --block 8x8x8",
    "%grid --data 100 --block 100",
    NULL,
};

const magic_spec magic_grid = {
    .name = "grid",
    .summary = "Map threads to data: dimGrid, idle threads, warps and the index formulas",
    .description =
        "Given the data's shape (--data, width first: 1D, 2D or 3D) and the block's shape (--block), "
        "computes the launch the lecture teaches: dimGrid = ceil(data / block) in each dimension, the "
        "number of blocks and threads, how many threads are idle (they fail the bounds check) and "
        "their share, warps per block (threads are numbered x fastest, the device's warp size, 32, to a "
        "warp) and whether the "
        "last warp is only partly filled, and how many of the grid's warps hold idle threads (they "
        "diverge at the bounds check) or are entirely idle. It writes the index formulas "
        "(col = blockIdx.x * blockDim.x + threadIdx.x, row = ... .y, plane = ... .z) and the bounds "
        "check with the data's sizes filled in.\n\n"
        "The configuration is validated against the device's limits (threads per block, block and "
        "grid dimensions): an invalid one is a UsageError that names the limit. On the CPU backend "
        "they are the CPU device model's, the same as %device shows there (CUDA's limits for every "
        "compute capability since 3.0: 1024 threads per block, blocks up to 1024x1024x64, grids up "
        "to 2147483647x65535x65535), and the output says so. The arithmetic is exact on every "
        "backend.\n\n"
        "--run launches the mapping (on the CPU backend its analogue: host threads walk the blocks "
        "with the same index formulas): every thread that passes the bounds check adds one to its "
        "element's counter, every idle thread is counted, and the check verifies that each element "
        "was visited exactly once and the idle count is the predicted one. The launch is timed "
        "(median of --reps after --warmup, counts zeroed and the L2 flushed outside the timing).\n\n"
        "--variant also runs your picture kernel (a %%kernel --for grid cell), the lecture's exercise: "
        "__global__ void NAME(" CL_GRID_STUDENT_PARAMS ") with Pout[row*width + "
        "col] = 2 * Pin[row*width + col] for every pixel inside the picture, one thread per pixel. It runs "
        "on the plan above (--data WIDTHxHEIGHT, --block, the grid it implies, or --grid), which implies "
        "--run; Pout is filled with NaN before every launch and guarded past both ends, and every pixel is "
        "checked exactly: a pixel never written, a wrong one (rows and columns swapped) or a write past the "
        "picture (a missing bounds check) is named.",
    .flags = grid_flags,
    .mode = MAGIC_LINE,
    .where = MAGIC_WORKER,
    .run = grid_run,
    .examples = grid_examples,
    .attach = student_attach,
    .needs_device = grid_needs_device,
};
