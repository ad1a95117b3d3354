/* hiding.c — %hiding: how many warps hide memory latency, as the lecture
 * reckons it and as this device measures it (cudalab/latency.h).
 *
 * The lecture's arithmetic: while one warp waits `latency` cycles for its
 * load, the others must keep the SM issuing; a warp with `independent`
 * instructions between its loads keeps it busy independent x issue cycles,
 * so ceil(latency / (independent x issue)) warps hide the wait (G80: 200
 * cycles, 4 instructions of 4 cycles: 13 warps).
 *
 * The measurement: a streaming read with exactly --warps resident warps on
 * every SM, each thread with --ilp loads in flight, one run per point; its
 * GB/s rises with the warps until the loads in flight cover bandwidth x
 * latency (Little's law) and then stays flat. Below the runs, both
 * reckonings: the lecture's, and Little's law with this device's DRAM
 * latency (a %latency chase) and the sweep's best bandwidth, beside the
 * fewest warps that measured 90% of it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "cudalab/latency.h"
#include "magic/check.h"
#include "magic/families.h"
#include "magic/magic.h"
#include "magic/sweep.h"
#include "render/render.h"

/* The share of the best bandwidth at which the latency counts as hidden, in percent. */
#define HIDDEN_PCT 90

static const sweep_column hiding_columns[] = {
    {.path = "warps_per_sm", .header = "warps / SM"},
    {.path = "ilp", .header = "loads / thread"},
    {.path = "loads_in_flight_per_sm", .header = "loads in flight / SM"},
    {.path = "blocks_per_sm", .header = "blocks / SM"},
    {.path = "time_ms.median", .header = "median ms"},
    {.path = "gbs", .header = "GB/s"},
    {.path = "pct_of_bandwidth", .header = "% of copy BW"},
    {.path = "check.passed", .header = "check"},
    {.path = NULL},
};

typedef struct hd_env {
    const cl_latency_ops *ops;
    uint64_t seed;
    int reps, warmup, check;
    double bw_gbs;                  /* the device's measured copy bandwidth (0: none) */
    double dram_ns;                 /* a DRAM chase's ns per load (0: not measured, why in dram_why) */
    char dram_why[CL_ERR_LEN];
    double warp_load_bytes;         /* from the runs: what one warp's load brings in */
    int sms;
} hd_env;

static json_t *check_json(const cl_stream_args *a, const cl_stream_result *r, bool cpu)
{
    /* float sums per thread, added in double: well inside n x 2^-20 of the host's double sum */
    double tol = cpu ? 0 : (double)a->n * 0x1p-20;
    json_t *c = check_new(true, cpu ? "exact: every chase ends where next[] says one walked alone would"
                                    : "the threads' sums added up against the host's double sum of the input, "
                                      "within n x 2^-20 (tolerance: that absolute bound)", tol);
    if (!cpu) {
        json_object_set_new(c, "sum", json_real_or_null(r->sum));
        json_object_set_new(c, "want", json_real_or_null(r->want));
    }
    if (!(fabs(r->sum - r->want) <= tol))
        check_wrong(c, 1, json_object(), r->sum, r->want);
    return c;
}

static int hd_point(magic_ctx *ctx, const json_t *pt, json_t *runs, void *user)
{
    hd_env *env = user;
    cl_stream_args a = {
        .n = (uint64_t)json_integer_value(json_object_get(pt, "size")),
        .warps_per_sm = (int)json_integer_value(json_object_get(pt, "warps")),
        .ilp = (int)json_integer_value(json_object_get(pt, "ilp")),
        .seed = env->seed, .reps = env->reps, .warmup = env->warmup, .check = env->check,
    };
    cl_stream_result *r = calloc(1, sizeof *r);
    char err[CL_ERR_LEN] = "";
    if (!r)
        return magic_error(ctx, "MemoryError", "%%hiding: out of host memory");
    if (MAGIC_TIMED(ctx, err, env->ops->stream(&a, r, err)) != 0) {
        free(r);
        return magic_error(ctx, magic_backend_ename(ctx->backend),
                           "%%hiding --warps %d --ilp %d: %s", a.warps_per_sm, a.ilp, err);
    }
    double ms = stats_median(&r->times), gbs = ms > 0 ? r->bytes / (ms * 1e6) : 0;
    json_t *run = json_pack("{s:i, s:i, s:I, s:I, s:i, s:o, s:s, s:s}", "warps_per_sm", a.warps_per_sm, "ilp",
                            a.ilp, "loads_in_flight_per_sm", (json_int_t)a.warps_per_sm * 32 * a.ilp, "size",
                            (json_int_t)a.n, "blocks_per_sm", r->blocks_per_sm, "launch", launch_json(&r->launch),
                            "backend", ctx->backend->name, "impl", r->impl);
    json_object_set_new(run, "time_ms", stats_json(&r->times));
    sweep_add_conditions(ctx, run);
    json_object_set_new(run, "bytes", json_real(r->bytes));
    json_object_set_new(run, "gbs", json_real(gbs));
    json_object_set_new(run, "pct_of_bandwidth", env->bw_gbs > 0 ? json_real(100.0 * gbs / env->bw_gbs) : json_null());
    json_object_set_new(run, "check", env->check ? check_json(&a, r, strcmp(ctx->backend->name, "cpu") == 0)
                                                 : check_skipped(NULL));
    env->warp_load_bytes = r->warp_load_bytes;
    env->sms = r->sms;
    free(r);
    json_array_append_new(runs, run);
    return 0;
}

/* The lecture's reckoning, from the flags. */
static void lecture_table(json_t *doc, json_t *view, const json_t *params)
{
    double lat = json_number_value(json_object_get(params, "latency"));
    double ind = json_number_value(json_object_get(params, "independent"));
    double issue = json_number_value(json_object_get(params, "issue"));
    int warps = cl_warps_to_hide(lat, ind, issue);
    json_object_set_new(doc, "model", json_pack("{s:f, s:f, s:f, s:i}", "latency_cycles", lat, "independent", ind,
                                                "issue_cycles", issue, "warps_needed", warps));
    json_t *t = view_add_table(view, "The lecture's reckoning: warps that hide a latency",
                               json_pack("[s, s]", "", "value"));
    json_t *rows = json_object_get(t, "rows");
    json_array_append_new(rows, json_pack("[s, f]", "load latency, cycles (--latency)", lat));
    json_array_append_new(rows, json_pack("[s, f]", "independent instructions between loads (--independent)", ind));
    json_array_append_new(rows, json_pack("[s, f]", "cycles to issue one for a warp (--issue)", issue));
    json_array_append_new(rows, json_pack("[s, o]", "cycles one warp keeps the SM busy",
                                          json_sprintf("%g x %g = %g", ind, issue, ind * issue)));
    json_array_append_new(rows, json_pack("[s, o]", "warps needed",
                                          json_sprintf("ceil(%g / %g) = %d", lat, ind * issue, warps)));
}

/* Little's law per --ilp: the loads in flight the sweep's best bandwidth needs at the measured DRAM
 * latency, as warps per SM, beside the fewest warps that measured HIDDEN_PCT% of that best. */
static void little_table(json_t *doc, json_t *view, const json_t *runs, const hd_env *env)
{
    if (env->dram_ns <= 0) {
        char note[CL_ERR_LEN + 64];
        snprintf(note, sizeof note, "Little's law left out: the DRAM latency could not be measured (%s)", env->dram_why);
        view_add_note(view, note);
        return;
    }
    json_t *per_ilp = json_array(), *table = view_add_table(
        view, "Little's law on this device: loads in flight = bandwidth x latency",
        json_pack("[s, s, s, s, s, s]", "loads / thread", "best GB/s", "DRAM latency ns", "bytes in flight / SM",
                  "warps needed / SM", "measured: " STR(HIDDEN_PCT) "% of best at"));
    size_t i, j;
    const json_t *run, *other;
    json_array_foreach(runs, i, run) {
        json_int_t ilp = json_integer_value(json_object_get(run, "ilp"));
        bool seen = false;
        json_array_foreach(runs, j, other)
            seen |= j < i && json_integer_value(json_object_get(other, "ilp")) == ilp;
        if (seen)
            continue;
        double best = 0;
        json_array_foreach(runs, j, other)
            if (json_integer_value(json_object_get(other, "ilp")) == ilp)
                best = fmax(best, json_number_value(json_object_get(other, "gbs")));
        json_int_t knee = 0;
        json_array_foreach(runs, j, other) {
            json_int_t w = json_integer_value(json_object_get(other, "warps_per_sm"));
            if (json_integer_value(json_object_get(other, "ilp")) == ilp &&
                json_number_value(json_object_get(other, "gbs")) >= HIDDEN_PCT / 100.0 * best && (!knee || w < knee))
                knee = w;
        }
        /* GB/s x ns = bytes */
        double per_sm = best * env->dram_ns / (env->sms > 0 ? env->sms : 1);
        double warps = per_sm / (env->warp_load_bytes * (double)ilp);
        json_array_append_new(per_ilp, json_pack("{s:I, s:f, s:f, s:f, s:f, s:I}", "ilp", ilp, "best_gbs", best,
                                                 "dram_ns", env->dram_ns, "bytes_in_flight_per_sm", per_sm,
                                                 "warps_needed", warps, "measured_warps", knee));
        json_array_append_new(json_object_get(table, "rows"),
                              json_pack("[I, f, f, f, f, I]", ilp, best, env->dram_ns, per_sm, warps, knee));
    }
    json_object_set_new(doc, "littles_law", per_ilp);
    json_int_t most = 0;
    json_array_foreach(runs, i, run)
        if (json_integer_value(json_object_get(run, "warps_per_sm")) > most)
            most = json_integer_value(json_object_get(run, "warps_per_sm"));
    json_array_foreach(per_ilp, i, run)
        if (json_integer_value(json_object_get(run, "measured_warps")) == most && json_array_size(runs) > 1) {
            view_add_note(view, "the best GB/s came at the most warps swept: the curve may not have flattened "
                                "yet, and the latency may not be hidden at any --warps of this sweep");
            break;
        }
    char note[240];
    snprintf(note, sizeof note, "a warp's load brings in %g bytes, so warps needed = bytes in flight per SM / (%g x "
             "loads per thread); the last column is the fewest --warps whose GB/s reached " STR(HIDDEN_PCT)
             "%% of the best",
             env->warp_load_bytes, env->warp_load_bytes);
    view_add_note(view, note);
}

static void hd_more(json_t *doc, json_t *view, const json_t *params, const json_t *runs, void *user)
{
    lecture_table(doc, view, params);
    little_table(doc, view, runs, user);
}

/* The DRAM latency for Little's law: one chase of the dram level. */
static void measure_dram(magic_ctx *ctx, hd_env *env)
{
    cl_latency_args a = {.level = CL_LAT_DRAM, .seed = env->seed, .reps = 3};
    cl_latency_result *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(env->dram_why, sizeof env->dram_why, "out of host memory");
        return;
    }
    if (MAGIC_TIMED(ctx, env->dram_why, env->ops->chase(&a, r, env->dram_why)) == 0)
        env->dram_ns = stats_median(&r->ns);
    free(r);
}

/* --warps within this device's SM, --ilp a power of two the kernels are built for. */
static int plan(magic_ctx *ctx, json_t *p)
{
    cl_device_props dev = {0};
    char err[CL_ERR_LEN] = "";
    if (ctx->backend->device_props(ctx->dev.index, &dev, err) != 0)
        return magic_error(ctx, magic_backend_ename(ctx->backend), "%%hiding: the device's limits: %s", err);
    int max = dev.max_threads_per_sm / 32;
    json_t *warps = json_object_get(p, "warps"), *v;
    size_t i;
    if (json_is_null(warps)) {
        json_t *list = json_array();
        for (int w = 1; w <= max; w *= 2)
            json_array_append_new(list, json_integer(w));
        json_object_set_new(p, "warps", list);
    } else {
        json_t *list = sweep_as_list(warps);
        int rc = 0;
        json_array_foreach(list, i, v)
            if (json_integer_value(v) > max && !rc)
                rc = magic_error(ctx, "UsageError", "--warps %" JSON_INTEGER_FORMAT ": an SM of this device holds "
                                 "at most %d warps (%d threads)", json_integer_value(v), max, dev.max_threads_per_sm);
        json_decref(list);
        if (rc)
            return -1;
    }
    json_t *ilps = sweep_as_list(json_object_get(p, "ilp"));
    int rc = 0;
    json_array_foreach(ilps, i, v) {
        json_int_t k = json_integer_value(v);
        if ((k & (k - 1)) != 0 && !rc)
            rc = magic_error(ctx, "UsageError", "--ilp %" JSON_INTEGER_FORMAT ": loads in flight per thread are "
                             "1, 2, 4 or 8", k);
    }
    json_decref(ilps);
    return rc;
}

static int hiding_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    (void)body;
    if (!ctx->backend || !ctx->backend->latency)
        return magic_error(ctx, "RuntimeError", "the %s backend has no %%hiding",
                           ctx->backend ? ctx->backend->name : "no");
    json_t *p = json_deep_copy(params);
    hd_env env = {.ops = ctx->backend->latency,
                  .seed = (uint64_t)json_integer_value(json_object_get(params, "seed")),
                  .reps = sweep_reps(params),
                  .warmup = (int)json_integer_value(json_object_get(params, "warmup")),
                  .check = json_is_true(json_object_get(params, "check"))};
    int rc = plan(ctx, p);
    if (rc == 0) {
        char err[CL_ERR_LEN];
        if (magic_copy_bandwidth(ctx, ctx->backend, &env.bw_gbs, err) != 0)
            env.bw_gbs = 0;
        measure_dram(ctx, &env);
        static const sweep_spec spec = {
            .magic = "hiding", .title = "Latency hiding", .metric = "gbs", .metric_label = "GB/s",
            .rate_of = "bytes", .columns = hiding_columns, .run_point = hd_point, .size_flag = "size",
            .more_results = hd_more,
        };
        rc = sweep_run(ctx, &spec, p, &env);
        env.ops->stream_release();
    }
    json_decref(p);
    return rc;
}

static const flag_spec hiding_flags[] = {
    {.name = "warps", .short_name = 'w', .type = FLAG_INT, .def = NULL, .imin = 1, .imax = 1024, .opts = FLAG_LIST,
     .help = "resident warps on every SM (default 1, 2, 4, ... up to what an SM holds)"},
    {.name = "ilp", .type = FLAG_INT, .def = "1", .imin = 1, .imax = CL_STREAM_MAX_ILP, .opts = FLAG_LIST,
     .help = "independent loads each thread has in flight: 1, 2, 4 or 8 (more loads per warp hide the same "
             "latency with fewer warps)"},
    {.name = "size", .short_name = 'n', .type = FLAG_INT, .def = "2^26", .cpu_def = "2^22", .imin = 1024,
     .imax = 1ll << 32, .help = "floats to read, far past the L2 (the CPU: its cycle spans at least 4x the host's largest cache)"},
    {.name = "latency", .type = FLAG_FLOAT, .def = "200", .fmin = 1, .fmax = 1e6,
     .help = "the lecture's reckoning: the load latency to hide, cycles (200: G80's global memory)"},
    {.name = "independent", .type = FLAG_FLOAT, .def = "4", .fmin = 1, .fmax = 1e6,
     .help = "the lecture's reckoning: independent instructions a warp has between loads"},
    {.name = "issue", .type = FLAG_FLOAT, .def = "4", .fmin = 0.01, .fmax = 1e6,
     .help = "the lecture's reckoning: cycles to issue one instruction for a whole warp (4: G80's 8 lanes per SM)"},
    SWEEP_MEASURE_FLAGS("seed of the input generated on the device", "timed reads of the input per point",
                        "add up what the threads read and compare it with the host's sum of the input",
                        "sort the table by GB/s"),
    {.name = NULL},
};

static const char *const hiding_examples[] = {
    "%hiding",
    "%hiding --ilp 1,4",
    "%hiding --warps 4,8,16 --latency 400 --independent 2",
    NULL,
};

const magic_spec magic_hiding = {
    .name = "hiding",
    .summary = "How many warps hide memory latency: the lecture's reckoning and a measured curve",
    .description =
        "The lecture's reckoning: while a warp waits --latency cycles for a load, the SM must keep "
        "issuing for other warps; a warp with --independent instructions between its loads, each taking "
        "--issue cycles, keeps it busy independent x issue cycles, so ceil(latency / (independent x "
        "issue)) warps hide the wait (G80: 200 / (4 x 4), 13 warps).\n\n"
        "The measurement: a streaming read of --size floats with exactly --warps warps resident on every "
        "SM (one or two blocks per SM, held apart by the shared memory they ask for), each thread with "
        "--ilp independent loads in flight before it uses one, one run per point; GB/s rises with the "
        "warps until the loads in flight cover bandwidth x latency (Little's law) and then stays flat. "
        "Below the runs: both reckonings, Little's law with this device's DRAM latency (a %latency "
        "chase) and the sweep's best GB/s, beside the fewest warps that measured " STR(HIDDEN_PCT) "% of it. Timing: "
        "CUDA events around the kernel, the L2 flushed before each rep; the check adds up what the "
        "threads read. Without a GPU the CPU backend follows warps x ilp independent pointer chases in "
        "one host thread: a core hides latency with loads in flight too, as many as its L1 can track.",
    .flags = hiding_flags,
    .mode = MAGIC_LINE,
    .where = MAGIC_WORKER,
    .run = hiding_run,
    .examples = hiding_examples,
};
