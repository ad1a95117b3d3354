/* sweep_chart.c — the chart of a finished sweep: whether there is one, which
 * kind, and its view.
 *
 * A chart earns its place below the table only when it shows what the table
 * cannot at a glance. So the decision (sweep_chart_choose, the rule in
 * sweep.h) is made once from what the sweep varies and what it measured, and
 * everything downstream reads it: the result document records it, the view
 * says why a chart was left out, and the chart block it yields is what the
 * SVG and the Vega-Lite spec are both drawn from (kernel/render/chart*.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"
#include "magic/sweep.h"
#include "magic/sweep_internal.h"

/* ---- reading the sweep ---- */

/* A number, or one-dimensional dimensions ([256] from --block 256) as their number; else NULL. */
static const json_t *number_of(const json_t *v)
{
    if (json_is_array(v) && json_array_size(v) == 1)
        v = json_array_get(v, 0);
    return json_is_number(v) ? v : NULL;
}

/* How many different numbers a list flag takes; 0 when one of its values is no number. */
static size_t distinct_numbers(const json_t *a)
{
    size_t distinct = 0;
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *v = number_of(json_array_get(a, i));
        if (!v)
            return 0;
        size_t j = 0;
        while (j < i && json_number_value(number_of(json_array_get(a, j))) != json_number_value(v))
            j++;
        distinct += j == i;
    }
    return distinct;
}

static int powers_of_two(const json_t *a)
{
    size_t i;
    json_t *v;
    double lo = INFINITY, hi = 0;
    json_array_foreach(a, i, v) {
        double x = json_number_value(number_of(v));
        if (x <= 0 || x != ldexp(1.0, (int)lround(log2(x))))
            return 0;
        lo = fmin(lo, x);
        hi = fmax(hi, x);
    }
    return hi / lo >= 4;
}

/* The work of one run, in the unit its rate metric counts (bytes for GB/s,
 * flops for GFLOP/s): the metric times the median time it was measured over.
 * INFINITY when the run has no median to tell. */
static double work_of(const json_t *run, double metric)
{
    const json_t *ms = sweep_path_get(run, "time_ms.median");
    return json_is_number(ms) ? metric * json_number_value(ms) * 1e6 : INFINITY;
}

void sweep_real_text(double x, char *buf, size_t len)
{
    json_t *v = json_real(x);
    render_number(v, buf, len);
    json_decref(v);
}

/* ---- the decision ---- */

const char *sweep_chart_kind_name(sweep_chart_kind k)
{
    return k == SWEEP_CHART_LINE ? "line" : k == SWEEP_CHART_BAR ? "bar" : NULL;
}

/* The first varying flag with at least SWEEP_CHART_MIN_RESULTS different
 * numbers: the x axis of a line; NULL when there is none. */
static const char *numeric_axis(const sweep_state *st)
{
    for (size_t i = 0; i < st->pts.nvarying; i++)
        if (distinct_numbers(json_object_get(st->pts.params, st->pts.varying[i])) >= SWEEP_CHART_MIN_RESULTS)
            return st->pts.varying[i];
    return NULL;
}

void sweep_chart_choose(const sweep_state *st, const json_t *runs, const json_t *points, sweep_chart_choice *c)
{
    const sweep_spec *s = st->spec;
    *c = (sweep_chart_choice){ .kind = SWEEP_CHART_NONE };
    size_t n = 0;
    double lo = INFINITY, hi = -INFINITY, most_work = 0;
    for (size_t i = 0; i < json_array_size(runs); i++) {
        const json_t *run = json_array_get(runs, i);
        double y = sweep_metric_of(s, run);
        if (!isfinite(y) || !json_array_get(points, i))
            continue;
        n++;
        lo = fmin(lo, y);
        hi = fmax(hi, y);
        most_work = fmax(most_work, work_of(run, y));
    }
    if (n < SWEEP_CHART_MIN_RESULTS)
        return;                     /* one or two numbers: the table is the picture */
    if (s->rate_of && most_work < SWEEP_CHART_MIN_WORK) {
        snprintf(c->why, sizeof c->why, "no chart: every point does less than 2^20 %s of work, so its %s "
                 "measures fixed costs (a launch, the clock), not the rate; sweep larger sizes to see it",
                 s->rate_of, s->metric_label);
        return;
    }
    if (hi - lo <= SWEEP_CHART_MIN_SPREAD * fmax(fabs(hi), fabs(lo))) {
        char a[32], b[32];
        sweep_real_text(lo, a, sizeof a);
        sweep_real_text(hi, b, sizeof b);
        if (strcmp(a, b) == 0)
            snprintf(c->why, sizeof c->why, "no chart: every %s is %s", s->metric_label, a);
        else
            snprintf(c->why, sizeof c->why, "no chart: every %s lies within %.0f%% of the others (%s to %s)%s",
                     s->metric_label, 100 * SWEEP_CHART_MIN_SPREAD, a, b,
                     s->arithmetic ? "" : ", as near as timing noise");
        return;
    }
    c->x = numeric_axis(st);
    c->kind = c->x ? SWEEP_CHART_LINE : SWEEP_CHART_BAR;
}

/* ---- the view ---- */

/* [16, 8] as "16x8", as the user writes dimensions. */
static void dims_text(const json_t *v, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < json_array_size(v) && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? "x" : "",
                                 (long long)json_integer_value(json_array_get(v, i)));
}

void sweep_point_name(const sweep_state *st, const json_t *point, const char *skip, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < st->pts.nvarying; i++) {
        if (skip && strcmp(st->pts.varying[i], skip) == 0)
            continue;
        const json_t *v = json_object_get(point, st->pts.varying[i]);
        if (!v)
            continue;
        char val[64];
        if (json_is_string(v))
            snprintf(val, sizeof val, "%s", json_string_value(v));
        else if (json_is_array(v) && !number_of(v))
            dims_text(v, val, sizeof val);
        else if (json_is_array(v))
            render_number(number_of(v), val, sizeof val);
        else
            render_number(v, val, sizeof val);
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", used ? ", " : "", val);
    }
    if (!buf[0])
        snprintf(buf, len, "%s", st->spec->magic);
}

/* A line over c->x, one series per combination of the other varying flags;
 * or a bar per run, labelled by every varying flag, in the table's order
 * (--sort ranks them too). */
json_t *sweep_chart_view(const sweep_state *st, const json_t *runs, const json_t *points, const sweep_chart_choice *c)
{
    if (c->kind == SWEEP_CHART_NONE)
        return NULL;
    const char *x = c->kind == SWEEP_CHART_LINE ? c->x : NULL;
    char names[128] = "", title[200];
    for (size_t i = 0; i < st->pts.nvarying; i++) {         /* what the bars are labelled by */
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", st->pts.varying[i]);
    }
    const char *x_label = x ? x : names[0] ? names : "run";
    snprintf(title, sizeof title, "%s by %s", st->spec->metric_label, x_label);
    json_t *view = view_new(NULL);
    int log_x = x && powers_of_two(json_object_get(st->pts.params, x));
    json_t *chart = view_add_chart(view, sweep_chart_kind_name(c->kind), title, x_label, st->spec->metric_label,
                                   log_x ? VIEW_LOG_X : 0);
    size_t *order = sweep_run_order(st->spec, runs, !x && json_is_true(json_object_get(st->pts.params, "sort")));
    for (size_t k = 0; order && k < json_array_size(runs); k++) {
        size_t i = order[k];
        const json_t *run = json_array_get(runs, i);
        double y = sweep_metric_of(st->spec, run);
        const json_t *point = json_array_get(points, i);
        if (!isfinite(y) || !point)
            continue;
        char name[256];
        sweep_point_name(st, point, x, name, sizeof name);
        /* a run that does not use the x flag (a library variant in a tile sweep)
         * says so with null or by leaving it out: it is not plotted at a made-up x */
        const json_t *xv = x ? json_object_get(run, x) : NULL;
        if (x && !number_of(xv))
            xv = json_object_get(point, x);
        xv = number_of(xv);
        if (x && !xv)
            continue;
        if (x)
            view_chart_point(chart, name, json_deep_copy(xv), y);
        else
            view_chart_point(chart, st->spec->metric_label, json_string(name), y);
    }
    free(order);
    return view;
}
