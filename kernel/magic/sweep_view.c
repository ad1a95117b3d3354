/* sweep_view.c — a finished sweep as the user reads it: the result document
 * (params, device, runs, chart and roofline decisions) and its view (the title,
 * the notes on the backend, unsettled clocks and slowed runs, and the runs table
 * in run or metric order with the columns some run fills). sweep.c runs the
 * points and calls these; its progress updates reuse the table and the notes.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"
#include "magic/sweep.h"
#include "magic/sweep_internal.h"

/* The value at a dotted path ("time_ms.median") inside a run. */
const json_t *sweep_path_get(const json_t *run, const char *path)
{
    char key[64];
    const json_t *v = run;
    while (v && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof key)
            return NULL;
        memcpy(key, path, n);
        key[n] = '\0';
        v = json_object_get(v, key);
        path += n + (path[n] == '.');
    }
    return v;
}

double sweep_metric_of(const sweep_spec *s, const json_t *run)
{
    const json_t *m = sweep_path_get(run, s->metric);
    return json_is_number(m) ? json_number_value(m) : -INFINITY;
}

/* The order runs are shown in: as run, or (--sort) by the metric, highest first,
 * ties in run order. Indices into runs, malloc'd; NULL when out of memory. */
typedef struct ranked { size_t i; double metric; } ranked;

static int cmp_ranked_desc(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->metric != y->metric)
        return (x->metric < y->metric) - (x->metric > y->metric);
    return (x->i > y->i) - (x->i < y->i);
}

size_t *sweep_run_order(const sweep_spec *s, const json_t *runs, int sorted)
{
    size_t n = json_array_size(runs);
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    ranked *r = sorted ? malloc((n ? n : 1) * sizeof *r) : NULL;
    if (!order || (sorted && !r)) {
        free(order);
        free(r);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        order[i] = i;
        if (r)
            r[i] = (ranked){ i, sweep_metric_of(s, json_array_get(runs, i)) };
    }
    if (r) {
        qsort(r, n, sizeof *r, cmp_ranked_desc);
        for (size_t i = 0; i < n; i++)
            order[i] = r[i].i;
        free(r);
    }
    return order;
}

static json_t *cell_of(const json_t *run, const sweep_column *c)
{
    if (c->cell)
        return c->cell(run);
    const char *path = c->path;
    const json_t *v = sweep_path_get(run, path);
    if (json_is_number(v) && c->scale > 0)
        return json_real(json_number_value(v) / c->scale);
    if (strstr(path, "passed") && sweep_broken_cell(run))
        return json_string(sweep_broken_cell(run));
    if (json_is_boolean(v) && strstr(path, "passed"))
        return json_string(json_is_true(v) ? "ok" : "FAILED");
    if (json_is_array(v) || json_is_object(v)) {
        char *s = json_dumps(v, JSON_COMPACT);
        json_t *r = json_string(s ? s : "");
        free(s);
        return r;
    }
    return v ? json_deep_copy(v) : json_null();
}

static bool column_shown(const sweep_column *c, const json_t *runs)
{
    size_t i;
    const json_t *run;
    if (!c->only_with)
        return true;
    json_array_foreach(runs, i, run)
        if (json_is_number(sweep_path_get(run, c->only_with)))
            return true;
    return false;
}

#define TABLE_MAX_COLUMNS 64        /* a family's columns, the counters' and the launch's, with room to spare */

static bool header_shown(const sweep_column *const *shown, size_t n, const char *header)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(shown[i]->header, header) == 0)
            return true;
    return false;
}

/* The runs table: every run from `from` on, as run or (sorted) by the metric; a column with
 * only_with appears when some run has that number (sweep_counter_columns: what was counted;
 * sweep_roofline_columns: a run's % of its roof; sweep_launch_columns: --launch), decided once per
 * table, not once per cell. A family's own column keeps its header (%histo's block and grid): the
 * shared ones do not repeat it. */
void sweep_add_runs_table(json_t *view, const sweep_spec *s, const json_t *runs, int sorted, size_t from,
                          const char *caption)
{
    const sweep_column *parts[] = { s->columns, sweep_counter_columns, sweep_roofline_columns,
                                    sweep_launch_columns };
    const sweep_column *shown[TABLE_MAX_COLUMNS];
    size_t ncols = 0;
    json_t *cols = json_array();
    for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++)
        for (const sweep_column *c = parts[p]; c->path && ncols < TABLE_MAX_COLUMNS; c++)
            if (column_shown(c, runs) && !header_shown(shown, ncols, c->header)) {
                shown[ncols++] = c;
                json_array_append_new(cols, json_string(c->header));
            }
    json_t *table = view_add_table(view, caption, cols);
    size_t n = json_array_size(runs), *order = sweep_run_order(s, runs, sorted);
    if (!order)
        return;
    for (size_t i = from; i < n; i++) {
        json_t *row = json_array();
        for (size_t c = 0; c < ncols; c++)
            json_array_append_new(row, cell_of(json_array_get(runs, order[i]), shown[c]));
        view_table_row(table, row);
    }
    free(order);
}

void sweep_add_notes(json_t *view, const sweep_spec *spec, magic_ctx *ctx, const json_t *device)
{
    if (ctx->backend && strcmp(ctx->backend->name, "cpu") == 0 && !spec->arithmetic) {
        char note[600];
        snprintf(note, sizeof note, "CPU backend: host threads stand in for CUDA threads%s%s",
                 ctx->dev.note && *ctx->dev.note ? " (" : "",
                 ctx->dev.note && *ctx->dev.note ? ctx->dev.note : "");
        if (ctx->dev.note && *ctx->dev.note)
            strcat(note, ")");
        view_add_note(view, note);
    }
    if (ctx->dev.startup_ms > 0) {
        char note[200];
        snprintf(note, sizeof note, "this cell first opened the GPU for its worker (%.2f s: a CUDA context), "
                 "which no time shown includes", ctx->dev.startup_ms / 1e3);
        view_add_note(view, note);
    }
    if (json_is_true(json_object_get(device, "ptx_jit"))) {
        char note[200];
        snprintf(note, sizeof note, "running %s: no SASS was built for this GPU, so the first "
                 "launches include JIT compilation", json_string_value(json_object_get(device, "arch")));
        view_add_note(view, note);
    }
}

void sweep_reasons_note(json_t *view, const json_t *runs, const char *(*reason)(const json_t *run),
                        const char *what)
{
    size_t n = json_array_size(runs);
    for (size_t i = 0; i < n; i++) {
        const char *why = reason(json_array_get(runs, i));
        bool said = false;
        for (size_t j = 0; why && j < i && !said; j++) {
            const char *before = reason(json_array_get(runs, j));
            said = before && strcmp(before, why) == 0;
        }
        if (!why || said)
            continue;               /* no reason, or said already */
        char note[600], who[200] = "";
        size_t count = 0, len = 0;
        for (size_t j = i; j < n; j++) {
            const json_t *run = json_array_get(runs, j);
            const char *other = reason(run), *name = json_string_value(json_object_get(run, "variant"));
            if (!other || strcmp(other, why) != 0)
                continue;
            count++;
            if (name && len < sizeof who - 40 && !strstr(who, name))
                len += (size_t)snprintf(who + len, sizeof who - len, "%s%s", len ? ", " : "", name);
        }
        if (count == n)
            snprintf(note, sizeof note, "%s: %s", what, why);
        else
            snprintf(note, sizeof note, "%s for %s: %s", what, who, why);
        view_add_note(view, note);
    }
}

/* The parameters a run's document repeats: params without the flags that make
 * a command something other than runs (--show-source, --as-kernel,
 * --sanitize), which no run uses. New reference. */
static json_t *doc_params(const json_t *params)
{
    json_t *copy = json_copy((json_t *)params);     /* shallow: the values are shared, not changed */
    json_object_del(copy, "show_source");
    json_object_del(copy, "as_kernel");
    json_object_del(copy, "sanitize");
    return copy;
}

json_t *sweep_make_doc(magic_ctx *ctx, const sweep_state *st, json_t *runs, json_t *device,
                       const sweep_chart_choice *chart, const json_t *roofline)
{
    json_t *varying = json_array();
    for (size_t i = 0; i < st->pts.nvarying; i++)
        json_array_append_new(varying, json_string(st->pts.varying[i]));
    json_t *doc = json_pack("{s:s, s:s, s:O, s:o, s:O, s:{s:o, s:I}}", "magic", st->spec->magic,
                            "backend", ctx->backend ? ctx->backend->name : "none", "device", device,
                            "params", doc_params(st->pts.params), "runs", runs, "sweep", "varying", varying, "points",
                            (json_int_t)st->pts.count);
    json_object_set_new(doc, "backend_note", ctx->dev.note && *ctx->dev.note
                                                 ? json_string(ctx->dev.note) : json_null());
    const char *kind = sweep_chart_kind_name(chart->kind);
    json_t *sweep = json_object_get(doc, "sweep");
    json_object_set_new(sweep, "chart", kind ? json_string(kind) : json_null());
    json_object_set_new(sweep, "chart_note", chart->why[0] ? json_string(chart->why) : json_null());
    json_t *timing = json_object();
    if (ctx->share.shared) {
        /* where a device is shared: whether the timed runs had it alone, and the wait, apart from any time */
        json_object_set_new(timing, "gpu_alone", json_boolean(ctx->share.turn != NULL));
        json_object_set_new(timing, "waited_ms", json_real(ctx->share.wait_ms));
    }
    if (ctx->dev.startup_ms > 0)
        json_object_set_new(timing, "startup_ms", json_real(ctx->dev.startup_ms));
    if (json_object_size(timing))
        json_object_set_new(doc, "timing", timing);
    else
        json_decref(timing);
    if (roofline)
        json_object_set(doc, "roofline", (json_t *)roofline);
    return doc;
}

/* --reps auto that ended at its budget or cap before a median settled: how many runs, the worst
 * spread, and what it means (each run's time_ms has its own ci95_rel and settled). */
static void add_unsettled_note(json_t *view, const sweep_state *st, const json_t *runs)
{
    if (!json_is_string(json_object_get(st->pts.params, "reps")))
        return;                                 /* a count the user chose: its spread is theirs to read */
    size_t i, unsettled = 0;
    double worst = 0;
    json_int_t worst_reps = 0;
    const json_t *run;
    json_array_foreach(runs, i, run) {
        const json_t *t = json_object_get(run, "time_ms");
        if (!t || json_is_true(json_object_get(t, "settled")))
            continue;
        unsettled++;
        double ci = json_number_value(json_object_get(t, "ci95_rel"));
        if (ci >= worst) {
            worst = ci;
            worst_reps = json_integer_value(json_object_get(t, "reps"));
        }
    }
    if (!unsettled)
        return;
    char note[300];
    snprintf(note, sizeof note, "the median of %zu of %zu runs did not settle within ±%g%% (the widest: "
             "±%.1f%% after %lld reps, the most --reps auto takes in its time): the GPU was shared or its "
             "clock varied; each run's time_ms has its spread (ci95_rel)", unsettled, json_array_size(runs),
             100 * CL_REPS_SETTLED, 100 * worst, (long long)worst_reps);
    view_add_note(view, note);
}

/* Runs during which NVML saw the GPU slow itself (power, heat): their times are not the GPU's best. */
static void add_slowed_note(json_t *view, const json_t *runs)
{
    size_t i, slowed = 0;
    int low = 0, limit = 0;
    char reasons[160] = "";
    const json_t *run;
    json_array_foreach(runs, i, run) {
        const json_t *c = json_object_get(run, "conditions");
        if (!json_is_true(json_object_get(c, "slowed")))
            continue;
        slowed++;
        int lo = (int)json_integer_value(json_object_get(json_object_get(c, "sm_clock_mhz"), "min"));
        low = low == 0 || lo < low ? lo : low;
        limit = (int)json_integer_value(json_object_get(c, "sm_clock_limit_mhz"));
        size_t k;
        const json_t *r;
        json_array_foreach(json_object_get(c, "clock_reasons"), k, r) {
            const char *name = json_string_value(r);
            if (name && !strstr(reasons, name) && strlen(reasons) + strlen(name) + 3 < sizeof reasons)
                snprintf(reasons + strlen(reasons), sizeof reasons - strlen(reasons), "%s%s",
                         reasons[0] ? ", " : "", name);
        }
    }
    if (!slowed)
        return;
    char note[400];
    snprintf(note, sizeof note, "the GPU slowed its clocks during %zu of %zu runs (%s; SM clock down to %d MHz "
             "of its %d): their times are slower than the GPU can run; each run's conditions say which",
             slowed, json_array_size(runs), reasons, low, limit);
    view_add_note(view, note);
}

json_t *sweep_make_view(magic_ctx *ctx, const sweep_state *st, const json_t *runs, const json_t *device,
                        const sweep_chart_choice *chart, const json_t *roofline)
{
    char title[160];
    const char *dev = json_string_value(json_object_get(device, "name"));
    if (st->spec->subject && json_is_string(sweep_path_get(json_array_get(runs, 0), st->spec->subject)))
        snprintf(title, sizeof title, "%s of %s", st->spec->title,
                 json_string_value(sweep_path_get(json_array_get(runs, 0), st->spec->subject)));
    else
        snprintf(title, sizeof title, "%s on %s", st->spec->title, dev ? dev : "?");
    json_t *view = view_new(title);
    sweep_add_notes(view, st->spec, ctx, device);
    add_unsettled_note(view, st, runs);
    add_slowed_note(view, runs);
    sweep_counters_note(view, runs);
    sweep_broken_notes(view, st->spec, runs);
    sweep_roofline_note(view, roofline, runs);
    sweep_launch_note(view, runs);
    if (chart->why[0])
        view_add_note(view, chart->why);
    sweep_add_runs_table(view, st->spec, runs, json_is_true(json_object_get(st->pts.params, "sort")), 0, NULL);
    return view;
}
