/* host_work.c — one estimate of the work a command makes the host do, for
 * every family, and the limit it is held to (see sweep.h, "host work").
 *
 * A family knows what one point costs (its hook); this file knows everything
 * else: how many runs a point makes (--warmup + --reps), which points share a
 * check's reference, the sum over a sweep, the limit and its override, and the
 * one refusal that explains the estimate. It runs before anything is
 * allocated, so a cell that would keep the host busy for minutes answers at
 * once, and the next cell works.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudalab/host.h"
#include "cudalab/simt.h"
#include "magic/sweep.h"
#include "magic/sweep_internal.h"

double host_work_limit_s(void)
{
    const char *text = getenv(HOST_WORK_LIMIT_ENV);
    char *end = NULL;
    double v = text ? strtod(text, &end) : 0;
    return text && end != text && *end == '\0' && isfinite(v) && v > 0 ? v : HOST_WORK_DEFAULT_LIMIT_S;
}

/* The timed runs of a point: 1 for a magic without timing flags; for --reps auto, at least its
 * least, which a slow run does not exceed (runs_seconds adds what a quick one may take). */
static double reps_of(const json_t *point)
{
    const json_t *reps = json_object_get(point, "reps");
    return !reps ? 1 : json_is_integer(reps) ? (double)json_integer_value(reps) : CL_REPS_AUTO_MIN;
}

static double warmups_of(const json_t *point)
{
    const json_t *warmup = json_object_get(point, "warmup");
    return json_is_integer(warmup) ? (double)json_integer_value(warmup) : 0;
}

/* Warm-up and timed runs of a point. */
static double runs_of(const json_t *point)
{
    return reps_of(point) + warmups_of(point);
}

/* Seconds of a point's runs, one taking run_s: --reps auto's worst case is its budget of timed
 * work (or its cap of reps) when a run is quicker than the least reps would take. */
static double runs_seconds(const json_t *point, double run_s)
{
    double timed = reps_of(point) * run_s;
    if (json_is_string(json_object_get(point, "reps"))) {
        double most = CL_MAX_REPS * run_s, budget = CL_REPS_AUTO_BUDGET_MS / 1e3;
        double worst = most < budget ? most : budget;
        timed = timed > worst ? timed : worst;
    }
    return timed + warmups_of(point) * run_s;
}

double host_work_runner_share(const json_t *point)
{
    double runs = runs_of(point), r = reps_of(point);
    double launches = r < 1 ? 1 : r > CL_SIMT_MAX_REPS ? CL_SIMT_MAX_REPS : r;
    return runs > 0 ? launches / runs : launches;
}

double host_work_cores(void)
{
    return cl_cpu_threads();        /* what the CPU backend's pool runs on */
}

/* Seconds of one point, split the way a refusal explains them. */
typedef struct estimate {
    double runs_s;          /* warm-up and timed runs on the host */
    double setup_s;         /* inputs made on the host */
    double check_s;         /* the check's reference and comparison */
} estimate;

static double total_of(const estimate *e)
{
    return e->runs_s + e->setup_s + e->check_s;
}

static void add_to(estimate *sum, const estimate *e)
{
    sum->runs_s += e->runs_s;
    sum->setup_s += e->setup_s;
    sum->check_s += e->check_s;
}

static double part(double units, double rate)
{
    return units > 0 && rate > 0 ? units / rate : 0;
}

static estimate seconds_of(const host_work *w, const json_t *point, bool check_shared)
{
    estimate e = {runs_seconds(point, part(w->run, w->run_rate)), part(w->setup, w->setup_rate),
                  check_shared ? 0 : part(w->check, w->check_rate)};
    return e;
}

static bool forced(const json_t *params)
{
    return json_is_true(json_object_get(params, "force"));
}

bool host_work_skips(magic_ctx *ctx, const sweep_spec *s, const json_t *point, void *user)
{
    if (!s->host_work || forced(point))
        return false;
    host_work w = s->host_work(ctx, point, user);
    estimate alone = seconds_of(&w, point, false);
    return w.optional && total_of(&alone) > host_work_limit_s();
}

/* ---- the refusal ---- */

/* "42 s", "3 min", "2.5 h": a duration for people. */
static void fmt_seconds(double s, char *buf, size_t len)
{
    if (s < 1)
        snprintf(buf, len, "%.2g s", s);
    else if (s < 10)
        snprintf(buf, len, "%.1f s", s);
    else if (s < 120)
        snprintf(buf, len, "%.0f s", s);
    else if (s < 7200)
        snprintf(buf, len, "%.0f min", s / 60);
    else if (s < 172800)
        snprintf(buf, len, "%.1f h", s / 3600);
    else
        snprintf(buf, len, "%.3g days", s / 86400);
}

/* A param's value as typed: 2^30 (large powers of two), 4096, 76x62, cpu. */
static void fmt_value(const json_t *v, char *buf, size_t len)
{
    if (json_is_integer(v)) {
        long long n = json_integer_value(v);
        if (n >= 65536 && (n & (n - 1)) == 0)
            snprintf(buf, len, "2^%d", __builtin_ctzll((unsigned long long)n));
        else
            snprintf(buf, len, "%lld", n);
    } else if (json_is_string(v)) {
        snprintf(buf, len, "%s", json_string_value(v));
    } else if (json_is_array(v)) {
        buf[0] = '\0';
        for (size_t i = 0, used = 0; i < json_array_size(v) && used < len; i++, used = strlen(buf))
            snprintf(buf + used, len - used, "%s%lld", i ? "x" : "", json_integer_value(json_array_get(v, i)));
    } else if (json_is_number(v)) {
        snprintf(buf, len, "%g", json_number_value(v));
    } else {
        snprintf(buf, len, "?");
    }
}

/* " --size 2^30", with the flag spelled as typed (params say bin_width). */
static void append_flag(char *buf, size_t len, const char *key, const json_t *v)
{
    char name[64], value[96];
    snprintf(name, sizeof name, "%s", key);
    for (char *c = name; *c; c++)
        if (*c == '_')
            *c = '-';
    fmt_value(v, value, sizeof value);
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, " --%s %s", name, value);
}

/* "%histo --size 2^30 --variant cpu": the magic, its size and what varies at this point. */
static void describe_point(const sweep_spec *s, const sweep_points *pts, const json_t *point, char *buf,
                           size_t len)
{
    snprintf(buf, len, "%%%s", s->magic);
    if (s->size_flag && json_object_get(point, s->size_flag))
        append_flag(buf, len, s->size_flag, json_object_get(point, s->size_flag));
    for (size_t i = 0; i < pts->nvarying; i++)
        if (!s->size_flag || strcmp(pts->varying[i], s->size_flag) != 0)
            append_flag(buf, len, pts->varying[i], json_object_get(point, pts->varying[i]));
}

/* "4 runs (--warmup + --reps) 2.3 min, inputs and set-up 3.0 s, the check's CPU reference 8.0 s" */
static void describe_parts(const estimate *e, const json_t *point, char *buf, size_t len)
{
    char t[32];
    double n = runs_of(point);
    buf[0] = '\0';
    if (e->runs_s > 0) {
        fmt_seconds(e->runs_s, t, sizeof t);
        snprintf(buf, len, "%.0f run%s (--warmup + --reps) %s", n, n == 1 ? "" : "s", t);
    }
    if (e->setup_s > 0) {
        fmt_seconds(e->setup_s, t, sizeof t);
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%sinputs and set-up %s", used ? ", " : "", t);
    }
    if (e->check_s > 0) {
        fmt_seconds(e->check_s, t, sizeof t);
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%sthe check's CPU reference %s", used ? ", " : "", t);
    }
}

static int refuse(magic_ctx *ctx, const sweep_spec *s, const sweep_points *pts, const json_t *worst_pt,
                  const estimate *worst, const estimate *total, size_t counted, double limit)
{
    char what[320], parts[200], t_worst[32], t_total[32], t_limit[32], sum[120] = "", advice[160];
    describe_point(s, pts, worst_pt, what, sizeof what);
    describe_parts(worst, worst_pt, parts, sizeof parts);
    fmt_seconds(total_of(worst), t_worst, sizeof t_worst);
    fmt_seconds(total_of(total), t_total, sizeof t_total);
    fmt_seconds(limit, t_limit, sizeof t_limit);
    if (counted > 1)
        snprintf(sum, sizeof sum, "; the sweep's %zu points: about %s in all", counted, t_total);
    snprintf(advice, sizeof advice, "use %sa smaller --%s%s%s, or --force",
             counted > 1 ? "fewer points, " : "", s->size_flag ? s->size_flag : "size",
             worst->runs_s > 0 && json_object_get(worst_pt, "reps") ? ", fewer --reps" : "",
             worst->check_s > worst->runs_s && json_object_get(worst_pt, "check") ? ", --no-check" : "");
    for (char *c = advice; *c; c++)
        if (*c == '_')
            *c = '-';
    return magic_error(ctx, "UsageError", "%s: about %s of host work, estimated from this host's CPU "
                       "backend: %s%s; the limit is %s (%s) — %s", what, t_worst, parts, sum, t_limit,
                       HOST_WORK_LIMIT_ENV, advice);
}

int host_work_check(magic_ctx *ctx, const sweep_spec *s, const json_t *params, void *user)
{
    if (!s->host_work || forced(params))
        return 0;
    sweep_points pts;
    int rc = sweep_points_init(&pts, ctx, params);
    double limit = host_work_limit_s();
    estimate total = {0, 0, 0}, worst = {0, 0, 0};
    json_t *worst_pt = NULL;
    size_t counted = 0;
    unsigned long long last_key = 0;
    for (size_t p = 0; rc == 0 && p < pts.count; p++, sweep_points_next(&pts)) {
        json_t *pt = sweep_points_current(&pts);
        host_work w = s->host_work(ctx, pt, user);
        estimate e = seconds_of(&w, pt, w.check_key && w.check_key == last_key);
        estimate alone = seconds_of(&w, pt, false);
        if (w.optional && total_of(&alone) > limit) {
            json_decref(pt);            /* left out when it runs: costs nothing */
            continue;
        }
        last_key = w.check_key;
        add_to(&total, &e);
        counted++;
        if (!worst_pt || total_of(&e) > total_of(&worst)) {
            json_decref(worst_pt);
            worst_pt = pt;
            worst = e;
        } else {
            json_decref(pt);
        }
    }
    if (rc == 0 && total_of(&total) > limit)
        rc = refuse(ctx, s, &pts, worst_pt, &worst, &total, counted, limit);
    json_decref(worst_pt);
    sweep_points_free(&pts);
    return rc;
}
