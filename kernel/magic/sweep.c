/* sweep.c — running a timed magic over every combination of its list flags.
 *
 * The magic supplies one function that runs a single point; this file owns
 * everything around it, so %matmul, %histo, %reduce and the rest look and
 * behave alike: the cartesian product in flag order (and its limit), progress
 * while points run, the result document and its view (sweep_view.c: the runs
 * table, optionally sorted by the metric, and the notes), a chart of the metric
 * (sweep_chart.c), and failing the cell when a check failed.
 *
 * Progress costs the same at the 10,000th point as at the first: it is
 * throttled in time (SWEEP_PROGRESS_MS) and shows a progress line and the last
 * few runs, never the whole table; points share the params' lists instead of
 * copying them. So a sweep of cheap points runs as fast in a notebook as on
 * the command line, and iopub carries a handful of small updates.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "render/render.h"
#include "magic/student_hooks.h"
#include "magic/sweep.h"
#include "magic/sweep_internal.h"

/* ---- statistics ---- */

static int sorted_times(const cl_times *t, float *out)
{
    int n = t->reps < 0 ? 0 : t->reps > CL_MAX_REPS ? CL_MAX_REPS : t->reps;
    memcpy(out, t->ms, (size_t)n * sizeof *out);
    qsort(out, (size_t)n, sizeof *out, cl_cmp_float);
    return n;
}

double stats_median(const cl_times *t)
{
    float s[CL_MAX_REPS];
    return cl_median_sorted(s, sorted_times(t, s));
}

json_t *stats_json(const cl_times *t)
{
    float s[CL_MAX_REPS];
    int n = sorted_times(t, s);
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++)
        sum += s[i];
    double mean = n ? sum / n : 0;
    for (int i = 0; i < n; i++)
        sq += (s[i] - mean) * (s[i] - mean);
    double ci = cl_median_ci_rel(s, n);
    json_t *j = json_pack("{s:f, s:f, s:f, s:f, s:f, s:i, s:f, s:b}", "median", cl_median_sorted(s, n), "min",
                          n ? (double)s[0] : 0.0, "max", n ? (double)s[n - 1] : 0.0, "mean", mean,
                          "stdev", n > 1 ? sqrt(sq / (n - 1)) : 0.0, "reps", n, "ci95_rel", ci,
                          "settled", n >= CL_REPS_AUTO_MIN && ci <= CL_REPS_SETTLED);
    if (t->reps_checked > 0)        /* the sweep moves it to the run's check (add_reps_checked) */
        json_object_set_new(j, "reps_checked", json_integer(t->reps_checked < n ? t->reps_checked : n));
    return j;
}

/* The reasons NVML gives that slow a run down (the rest say how clocks are set, or that the GPU
 * idled: it does between reps, when the clocks are read). */
#define CLOCK_SLOWDOWNS (0x4ull | 0x8ull | 0x20ull | 0x40ull | 0x80ull)
#define CLOCK_BETWEEN_REPS 0x1ull           /* gpu_idle: every reading after a rep sees it */

void sweep_add_conditions(magic_ctx *ctx, json_t *run)
{
    cl_conditions c;
    const char *ran = json_string_value(json_object_get(run, "backend"));
    sweep_add_counters(ctx, run);
    if (!ctx->backend || !ctx->backend->conditions || (ran && strcmp(ran, ctx->backend->name) != 0) ||
        ctx->backend->conditions(&c) != 0)
        return;                     /* a host row of a GPU run: the CPU backend ran it */
    json_t *j = json_object();
    if (c.samples > 0) {
        json_t *reasons = json_array();
#define CL_REASON_NAME_(bit, name) \
        if (c.reasons & (bit) & ~CLOCK_BETWEEN_REPS) \
            json_array_append_new(reasons, json_string(name));
        CL_CLOCK_REASONS(CL_REASON_NAME_)
#undef CL_REASON_NAME_
        json_object_set_new(j, "clocks", json_string("nvml"));
        json_object_set_new(j, "sm_clock_mhz", json_pack("{s:i, s:i}", "min", c.sm_mhz_min, "max", c.sm_mhz_max));
        json_object_set_new(j, "sm_clock_limit_mhz", json_integer(c.sm_mhz_limit));
        json_object_set_new(j, "mem_clock_mhz", json_integer(c.mem_mhz));
        json_object_set_new(j, "clock_reasons", reasons);
        json_object_set_new(j, "slowed", json_boolean(c.reasons & CLOCK_SLOWDOWNS));
    } else {
        char why[200];
        snprintf(why, sizeof why, "unavailable: %s", c.unavailable);
        json_object_set_new(j, "clocks", json_string(why));
    }
    if (c.corrected_reps > 0)
        json_object_set_new(j, "event_overhead_ms", json_real(c.event_overhead_ms));
    json_object_set_new(run, "conditions", j);
}

const char *const sweep_check_reps_choices[] = {"drawn", "all", NULL};

static bool check_reps_all(const json_t *params)
{
    const char *v = json_string_value(json_object_get(params, "check_reps"));
    return v && strcmp(v, "all") == 0;
}

/* check.reps_checked of the runs from before, as the backend said it: the timed reps whose result
 * it checked on their own inputs (cl_times.reps_checked, which stats_json leaves in time_ms and
 * this moves to the check: said once); check.reps_check "all" when that is every timed rep, else
 * "drawn" (CL_GPU_CHECKED_REPS drawn at random, or fewer than asked: the board does not rank
 * those). A check that did not run (--no-check) checked none and says nothing. */
static void add_reps_checked(json_t *runs, size_t before)
{
    for (size_t r = before; r < json_array_size(runs); r++) {
        json_t *run = json_array_get(runs, r), *check = json_object_get(run, "check");
        json_t *times = json_object_get(run, "time_ms");
        json_int_t reps = json_integer_value(json_object_get(times, "reps"));
        json_int_t checked = json_integer_value(json_object_get(times, "reps_checked"));
        json_object_del(times, "reps_checked");
        if (!json_is_object(check) || json_is_null(json_object_get(check, "passed")) || reps <= 0)
            continue;
        json_object_set_new(check, "reps_checked", json_integer(checked));
        json_object_set_new(check, "reps_check", json_string(checked >= reps ? "all" : "drawn"));
    }
}

int sweep_kept_copies(const json_t *params)
{
    /* the most of any point, where --check-reps or --reps is swept (a list) */
    json_t *checks = sweep_as_list(json_object_get(params, "check_reps"));
    json_t *reps = sweep_as_list(json_object_get(params, "reps"));
    int most = CL_GPU_CHECKED_REPS;
    size_t i, j;
    json_t *c, *r;
    json_array_foreach(checks, i, c) {
        json_array_foreach(reps, j, r) {
            int all = json_is_string(c) && strcmp(json_string_value(c), "all") == 0;
            int n = cl_gpu_kept_copies(all, json_is_integer(r) ? (int)json_integer_value(r) : CL_REPS_AUTO);
            most = n > most ? n : most;
        }
    }
    json_decref(checks);
    json_decref(reps);
    return most;
}

int sweep_reps(const json_t *params)
{
    const json_t *r = json_object_get(params, "reps");
    return json_is_integer(r) ? (int)json_integer_value(r) : CL_REPS_AUTO;
}

json_t *launch_json(const cl_launch *l)
{
    return json_pack("{s:[i,i,i], s:[i,i,i], s:I, s:i, s:i}", "grid", l->grid[0], l->grid[1],
                     l->grid[2], "block", l->block[0], l->block[1], l->block[2], "smem_per_block",
                     (json_int_t)l->smem_bytes, "regs_per_thread", l->regs_per_thread, "kernels",
                     l->kernels > 0 ? l->kernels : 1);
}

/* ---- params ---- */

json_t *sweep_as_list(const json_t *v)
{
    return json_is_array(v) ? json_incref((json_t *)v) : json_pack("[O]", v);
}

/* ---- the device a sweep ran on (measured once per process) ---- */

static json_t *device_summary(magic_ctx *ctx, const cl_backend *b, int dev)
{
    cl_device_props p;
    cl_versions v;
    char err[CL_ERR_LEN];
    memset(&p, 0, sizeof p);
    memset(&v, 0, sizeof v);
    if (b->device_props(dev, &p, err))
        return json_pack("{s:s, s:s}", "backend", b->name, "error", err);
    if (b->versions(dev, &v, err))
        snprintf(v.arch, sizeof v.arch, "unknown");
    double bw = 0;
    if (magic_copy_bandwidth(ctx, b, &bw, err))
        bw = 0;
    double peak_flops = magic_peak_fp32_gflops(&p), peak_bw = magic_peak_bandwidth_gbs(&p);
    json_t *d = json_pack("{s:s, s:s, s:s, s:i, s:b}", "backend", b->name, "name", p.name, "arch",
                          v.arch, "sms", p.sm_count, "ptx_jit", strstr(v.arch, "PTX") != NULL);
    json_object_set_new(d, "cc", p.cc_major ? json_sprintf("%d.%d", p.cc_major, p.cc_minor) : json_null());
    json_object_set_new(d, "peak_fp32_gflops", peak_flops > 0 ? json_real(peak_flops) : json_null());
    json_object_set_new(d, "peak_bandwidth_gbs", peak_bw > 0 ? json_real(peak_bw) : json_null());
    json_object_set_new(d, "measured_bandwidth_gbs", bw > 0 ? json_real(bw) : json_null());
    return d;
}

json_t *sweep_device_json(magic_ctx *ctx)
{
    static json_t *cached;
    static const cl_backend *cached_for;
    if (!ctx->backend)
        return json_null();
    if (!ctx->dev.open)          /* asked without a context: what can be known now, not kept */
        return device_summary(ctx, ctx->backend, ctx->dev.index);
    if (!cached || cached_for != ctx->backend) {
        json_decref(cached);
        cached = device_summary(ctx, ctx->backend, ctx->dev.index);
        cached_for = ctx->backend;
    }
    return json_deep_copy(cached);
}

/* ---- points ---- */



/* "100 × 100 × 100 (--threads, --regs, --smem)": the factors of a count, for its refusal. */
static void describe_product(const json_t *params, char *buf, size_t len)
{
    char sizes[160] = "", names[200] = "";
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)params, key, v) {
        if (!json_is_array(v) || json_array_size(v) == 0)
            continue;
        size_t a = strlen(sizes), b = strlen(names);
        snprintf(sizes + a, sizeof sizes - a, "%s%zu", a ? " × " : "", json_array_size(v));
        snprintf(names + b, sizeof names - b, "%s--%s", b ? ", " : "", key);
    }
    for (char *c = names; *c; c++)      /* params say bin_width, users type --bin-width */
        if (*c == '_')
            *c = '-';
    snprintf(buf, len, "%s: %s", sizes, names);
}

int sweep_points_init(sweep_points *pts, magic_ctx *ctx, const json_t *params)
{
    memset(pts, 0, sizeof *pts);
    pts->params = params;
    pts->count = 1;
    pts->varying = calloc(json_object_size(params) + 1, sizeof *pts->varying);
    pts->index = calloc(json_object_size(params) + 1, sizeof *pts->index);
    if (!pts->varying || !pts->index)
        return magic_error(ctx, "MemoryError", "out of memory planning the sweep");
    double product = 1;                 /* a double: 10^6 × 10^6 must not wrap */
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)params, key, v) {
        if (!json_is_array(v) || json_array_size(v) == 0)
            continue;
        pts->varying[pts->nvarying++] = key;
        product *= (double)json_array_size(v);
    }
    if (product > SWEEP_MAX_POINTS) {
        char factors[400];
        describe_product(params, factors, sizeof factors);
        return magic_error(ctx, "UsageError", product < 1e15 ? "this sweep has %.0f points (%s); the limit "
                           "is %d: shorten the comma lists" : "this sweep has %.3g points (%s); the limit is "
                           "%d: shorten the comma lists", product, factors, SWEEP_MAX_POINTS);
    }
    pts->count = (size_t)product;
    return 0;
}

json_t *sweep_points_current(const sweep_points *pts)
{
    json_t *p = json_copy((json_t *)pts->params);
    for (size_t i = 0; p && i < pts->nvarying; i++)
        json_object_set(p, pts->varying[i],
                        json_array_get(json_object_get(pts->params, pts->varying[i]), pts->index[i]));
    return p;
}

void sweep_points_next(sweep_points *pts)
{
    for (size_t i = pts->nvarying; i-- > 0;) {
        size_t n = json_array_size(json_object_get(pts->params, pts->varying[i]));
        if (++pts->index[i] < n)
            return;
        pts->index[i] = 0;
    }
}

void sweep_points_free(sweep_points *pts)
{
    free(pts->varying);
    free(pts->index);
    pts->varying = NULL;
    pts->index = NULL;
}

int sweep_count(magic_ctx *ctx, const json_t *params, size_t *points)
{
    sweep_points pts;
    int rc = sweep_points_init(&pts, ctx, params);
    *points = pts.count;
    sweep_points_free(&pts);
    return rc;
}

/* ---- progress ---- */

#define PROGRESS_BAR 24             /* characters of the bar */

double (*sweep_clock_ms)(void) = monotonic_ms;

typedef struct progress {
    char display_id[80];
    double started_ms, shown_ms;
    bool shown;
} progress;

/* What an update shows: where the sweep is and its last few runs. Its size does
 * not grow with the sweep, so the 10,000th update costs what the first did. */
static json_t *progress_view(magic_ctx *ctx, const sweep_state *st, const json_t *runs,
                             const json_t *device, size_t done, double elapsed_ms)
{
    char title[200], line[PROGRESS_BAR * 3 + 160], caption[96];
    snprintf(title, sizeof title, "%s — running %zu of %zu", st->spec->title, done + 1, st->pts.count);
    json_t *view = view_new(title);
    sweep_add_notes(view, st->spec, ctx, device);
    size_t filled = done * PROGRESS_BAR / st->pts.count, used = 0;
    for (size_t i = 0; i < PROGRESS_BAR; i++)
        used += (size_t)snprintf(line + used, sizeof line - used, "%s", i < filled ? "█" : "░");
    snprintf(line + used, sizeof line - used, " %3.0f%%  %zu of %zu points done in %.1f s",
             100.0 * (double)done / (double)st->pts.count, done, st->pts.count, elapsed_ms / 1e3);
    view_add_text(view, line);
    size_t n = json_array_size(runs);
    if (n == 0)
        return view;
    size_t from = n > SWEEP_PROGRESS_ROWS ? n - SWEEP_PROGRESS_ROWS : 0;
    snprintf(caption, sizeof caption, from ? "the last %zu of %zu runs (the whole table comes at the end)"
                                           : "the runs so far", n - from, n);
    sweep_add_runs_table(view, st->spec, runs, 0, from, caption);
    return view;
}

/* Before point `done`: the first display at once, then at most one update per
 * SWEEP_PROGRESS_MS, however cheap the points are. */
static void progress_before(magic_ctx *ctx, const sweep_state *st, progress *pr, const json_t *runs,
                            const json_t *device, size_t done)
{
    if (st->pts.count < 2)
        return;
    double now = sweep_clock_ms();
    if (pr->shown && now - pr->shown_ms < SWEEP_PROGRESS_MS)
        return;
    magic_progress(ctx, pr->display_id, NULL, progress_view(ctx, st, runs, device, done, now - pr->started_ms),
                   pr->shown ? RESULT_UPDATE : RESULT_SHOW);
    pr->shown = true;
    pr->shown_ms = now;
}

/* The progress display's last state, before the final result: what ran and in how long. */
static void progress_end(magic_ctx *ctx, const sweep_state *st, const progress *pr)
{
    if (!pr->shown)
        return;
    char line[300];
    snprintf(line, sizeof line, "%s: %zu points done in %.1f s", st->spec->title, st->pts.count,
             (sweep_clock_ms() - pr->started_ms) / 1e3);
    json_t *view = view_new(NULL);
    view_add_text(view, line);
    magic_progress(ctx, pr->display_id, NULL, view, RESULT_END);
}

static void progress_init(progress *pr)
{
    /* unique for the session: a later sweep (in the same long-lived worker, or a
     * fresh one that got the same pid) must never update an earlier one's output */
    static unsigned long sweeps;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    memset(pr, 0, sizeof *pr);
    snprintf(pr->display_id, sizeof pr->display_id, "cudalab-%d-%lu-%llx%09ld", (int)getpid(), ++sweeps,
             (unsigned long long)now.tv_sec, (long)now.tv_nsec);
    pr->started_ms = sweep_clock_ms();
}

/* ---- the sweep ---- */

static int report_failed_checks(magic_ctx *ctx, const sweep_spec *s, const json_t *runs)
{
    size_t i, failed = 0, first = 0;
    json_t *run;
    json_array_foreach(runs, i, run)
        if (json_is_false(sweep_path_get(run, "check.passed")) && !sweep_broken_expected(run) && failed++ == 0)
            first = i;
    if (!failed)
        return 0;
    run = json_array_get(runs, first);
    const char *variant = json_string_value(json_object_get(run, "variant"));
    char *check = json_dumps(json_object_get(run, "check"), JSON_COMPACT | JSON_REAL_PRECISION(6));
    magic_error(ctx, "CheckError", "%zu of %zu runs gave a wrong result; first: variant %s: %s",
                failed, json_array_size(runs), variant ? variant : "?", check ? check : "");
    free(check);
    return -1;
}

int sweep_run(magic_ctx *ctx, const sweep_spec *s, const json_t *params, void *user)
{
    sweep_state st = { .spec = s };
    int rc = sweep_points_init(&st.pts, ctx, params);
    if (rc == 0)
        rc = host_work_check(ctx, s, params, user);
    if (rc != 0) {
        sweep_points_free(&st.pts);
        return rc;
    }
    json_t *runs = json_array(), *points = json_array();
    json_t *device = sweep_device_json(ctx);
    progress pr;
    progress_init(&pr);
    for (size_t p = 0; rc == 0 && p < st.pts.count; p++) {
        if (magic_cancelled()) {
            rc = magic_error(ctx, "KeyboardInterrupt", "%%%s interrupted after %zu of %zu points", s->magic,
                             p, st.pts.count);
            break;
        }
        progress_before(ctx, &st, &pr, runs, device, p);
        json_t *pp = sweep_points_current(&st.pts);
        if (ctx->sink.run_point)
            ctx->sink.run_point(ctx, p, st.pts.count, pp);
        if (!host_work_skips(ctx, s, pp, user)) {
            ctx->counters = json_is_true(json_object_get(pp, "counters"));
            if (ctx->backend && ctx->backend->set_counters)
                ctx->backend->set_counters(ctx->counters);
            bool all_reps = check_reps_all(pp);
            if (ctx->backend && ctx->backend->set_check_reps)
                ctx->backend->set_check_reps(all_reps);
            size_t before = json_array_size(runs);
            rc = s->run_point(ctx, pp, runs, user);
            add_reps_checked(runs, before);
            sweep_add_launch(ctx, s, pp, runs, before);
            for (size_t r = before; rc == 0 && magic_student()->lesson && r < json_array_size(runs); r++)
                rc = magic_student()->lesson(ctx, json_array_get(runs, r), pp);
            if (rc != 0 && ctx->share.error.ename[0]) {
                /* a wait for a timed turn (MAGIC_TIMED) that ended without one (an interrupt, CUDALAB_GPU_WAIT,
                 * an admission directory not to be trusted): not the backend's error */
                error_clear(&ctx->error);
                rc = magic_error(ctx, ctx->share.error.ename, "%%%s %s", s->magic, ctx->share.error.evalue);
            } else {
                rc = sweep_broken_point(ctx, s, pp, rc, runs, before);
            }
        }
        ctx->counters = false;
        if (ctx->backend && ctx->backend->set_counters)
            ctx->backend->set_counters(0);
        if (ctx->backend && ctx->backend->set_check_reps)
            ctx->backend->set_check_reps(0);
        while (json_array_size(points) < json_array_size(runs))
            json_array_append(points, pp);
        json_decref(pp);
        sweep_points_next(&st.pts);
    }
    if (rc == 0) {
        sweep_chart_choice chart = { .kind = SWEEP_CHART_NONE };
        if (st.pts.count > 1)
            sweep_chart_choose(&st, runs, points, &chart);
        json_t *roofline = sweep_roofline_apply(&st, runs, device);
        json_t *view = sweep_make_view(ctx, &st, runs, device, &chart, roofline);
        json_t *doc = sweep_make_doc(ctx, &st, runs, device, &chart, roofline);
        if (s->more_results)
            s->more_results(doc, view, st.pts.params, runs, user);
        if (st.pts.count > 1) {
            progress_end(ctx, &st, &pr);
            magic_progress(ctx, pr.display_id, doc, view, RESULT_FINAL);
            json_t *chart_view = sweep_chart_view(&st, runs, points, &chart);
            if (chart_view)
                magic_result(ctx, NULL, chart_view);
        } else {
            magic_result(ctx, doc, view);
        }
        json_t *roofline_view = roofline ? sweep_roofline_view(&st, runs, points, roofline, device) : NULL;
        if (roofline_view)
            magic_result(ctx, NULL, roofline_view);
        json_decref(roofline);
        rc = report_failed_checks(ctx, s, runs);
    }
    json_decref(runs);
    json_decref(points);
    json_decref(device);
    sweep_points_free(&st.pts);
    return rc;
}
