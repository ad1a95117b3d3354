/* sweep_roofline.c — --roofline: every run of a timed command as a point under the roofs of the
 * device it ran on, in the result document, the table and a chart.
 *
 * The roofs are the device document's own numbers (sweep_device_json): the FP32 peak, and the
 * memory bandwidth a device-to-device copy measured, or the theoretical one where none was
 * measured. A run's point is its arithmetic intensity (FLOPs per byte of device memory) and the
 * GFLOP/s it achieved. The intensity is what --counters counted where it did (FP32 operations over
 * DRAM bytes read and written), else the family's model (sweep_spec.flops: matmul's global loads,
 * as the lecture's CGMA); either way the run says which. Its bound is min(peak, bandwidth ×
 * intensity), the roof above it: memory-bound left of the ridge point, compute-bound right of it.
 * A run with no FP32 work to bound (a histogram, a copy, an integer sum, tensor cores) gets no
 * point, only the reason, so that nothing on the chart is made up.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render/render.h"
#include "magic/sweep.h"
#include "magic/sweep_internal.h"

#define SOURCE_COUNTERS "counters"
#define SOURCE_MODEL "model"

const sweep_column sweep_roofline_columns[] = {
    {.path = "roofline.pct_of_bound", .header = "% of roof", .only_with = "roofline.pct_of_bound"},
    {.path = NULL},
};

/* The roofs: 0 where the device document has no number for one. */
typedef struct roofs {
    double peak_gflops, bandwidth_gbs;
    bool measured;              /* the bandwidth a copy measured, not the theoretical one */
} roofs;

static double number(const json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : 0;
}

static roofs roofs_of(const json_t *device)
{
    roofs r = { .peak_gflops = number(json_object_get(device, "peak_fp32_gflops")),
                .bandwidth_gbs = number(json_object_get(device, "measured_bandwidth_gbs")) };
    r.measured = r.bandwidth_gbs > 0;
    if (!r.measured)
        r.bandwidth_gbs = number(json_object_get(device, "peak_bandwidth_gbs"));
    return r;
}

static json_t *positive_or_null(double x)
{
    return isfinite(x) && x > 0 ? json_real(x) : json_null();
}

static json_t *left_off(const char *why)
{
    return json_pack("{s:s}", "left_off", why);
}

/* The intensity counted under --counters: FP32 operations over DRAM bytes; 0 where nothing was. */
static double counted_intensity(const json_t *run)
{
    const json_t *c = json_object_get(run, "counters");
    double bytes = number(json_object_get(c, "dram_read_bytes")) + number(json_object_get(c, "dram_write_bytes"));
    double flop = number(json_object_get(c, "flop"));
    return flop > 0 && bytes > 0 ? flop / bytes : 0;
}

/* A run's "roofline": its point and bound, or why it has none. */
static json_t *run_roofline(const sweep_spec *s, const json_t *run, const char *backend, const roofs *r)
{
    const char *ran = json_string_value(json_object_get(run, "backend"));
    if (ran && backend && strcmp(ran, backend) != 0)
        return left_off("it ran on the host CPU, under other roofs than this device's");
    if (!json_is_object(json_object_get(run, "time_ms")))
        return left_off("it was stopped before its result (a variant broken on purpose): no time to place it at");
    if (!s->flops)
        return json_pack("{s:o}", "left_off", json_sprintf("%%%s does no floating-point work: no FLOPs to place "
                         "it by (its GB/s against the bandwidth is its measure)", s->magic));
    sweep_flops f = { 0 };
    if (s->flops(run, &f) != 0)
        return left_off(f.why);
    if (!(f.gflops > 0) || !isfinite(f.gflops))
        return left_off("its median time is 0 ms: no GFLOP/s to place it at");
    double intensity = counted_intensity(run);
    const char *source = SOURCE_COUNTERS;
    if (intensity == 0) {
        if (!(f.bytes > 0))
            return left_off("no traffic model says what it moves (--counters on a GPU measures it)");
        intensity = f.flop / f.bytes;
        source = SOURCE_MODEL;
    }
    json_t *j = json_pack("{s:f, s:s, s:f}", "intensity", intensity, "intensity_source", source, "gflops", f.gflops);
    bool roofed = r->peak_gflops > 0 && r->bandwidth_gbs > 0;
    double slope = r->bandwidth_gbs * intensity, bound = fmin(r->peak_gflops, slope);
    json_object_set_new(j, "bound_gflops", roofed ? json_real(bound) : json_null());
    json_object_set_new(j, "pct_of_bound", roofed ? json_real(100 * f.gflops / bound) : json_null());
    json_object_set_new(j, "bound", roofed ? json_string(slope < r->peak_gflops ? "memory" : "compute")
                                           : json_null());
    return j;
}

json_t *sweep_roofline_apply(const sweep_state *st, json_t *runs, const json_t *device)
{
    if (!json_is_true(json_object_get(st->pts.params, "roofline")))
        return NULL;
    roofs r = roofs_of(device);
    const char *backend = json_string_value(json_object_get(device, "backend"));
    size_t i;
    json_t *run;
    json_array_foreach(runs, i, run)
        json_object_set_new(run, "roofline", run_roofline(st->spec, run, backend, &r));
    json_t *doc = json_pack("{s:o, s:o, s:o}", "peak_fp32_gflops", positive_or_null(r.peak_gflops),
                            "bandwidth_gbs", positive_or_null(r.bandwidth_gbs), "ridge_intensity",
                            positive_or_null(r.peak_gflops / r.bandwidth_gbs));
    json_object_set_new(doc, "bandwidth_source", r.bandwidth_gbs > 0
                        ? json_string(r.measured ? "measured" : "theoretical") : json_null());
    return doc;
}

static const char *left_off_reason(const json_t *run)
{
    return json_string_value(json_object_get(json_object_get(run, "roofline"), "left_off"));
}

/* Whether the roofs' bandwidth is the one a copy measured. */
static bool measured(const json_t *roofline)
{
    const char *source = json_string_value(json_object_get(roofline, "bandwidth_source"));
    return source && strcmp(source, "measured") == 0;
}

/* Whether some run has a point. */
static bool placed(const json_t *runs)
{
    size_t i;
    const json_t *run;
    json_array_foreach(runs, i, run)
        if (json_object_get(json_object_get(run, "roofline"), "intensity"))
            return true;
    return false;
}

void sweep_roofline_note(json_t *view, const json_t *roofline, const json_t *runs)
{
    if (!roofline)
        return;
    const json_t *peak = json_object_get(roofline, "peak_fp32_gflops");
    const json_t *bw = json_object_get(roofline, "bandwidth_gbs");
    char note[600], gflops[32], gbs[32], ridge[32];
    if (!json_is_number(peak) || !json_is_number(bw)) {
        snprintf(note, sizeof note, "no roofline chart: the device reports no %s",
                 json_is_number(peak) ? "memory bandwidth (measured or theoretical)" : "FP32 peak");
        view_add_note(view, note);
    } else if (placed(runs)) {
        sweep_real_text(json_number_value(peak), gflops, sizeof gflops);
        sweep_real_text(json_number_value(bw), gbs, sizeof gbs);
        sweep_real_text(json_number_value(json_object_get(roofline, "ridge_intensity")), ridge, sizeof ridge);
        snprintf(note, sizeof note, "roofline: roofs at the FP32 peak, %s GFLOP/s, and the %s, %s GB/s (ridge at "
                 "%s FLOP/byte); each run at its FLOPs per byte of device memory (model: the family's traffic "
                 "model; counters: as counted) and its GFLOP/s; %% of roof = GFLOP/s ÷ min(peak, bandwidth × "
                 "intensity)", gflops, measured(roofline) ? "measured copy bandwidth" : "theoretical bandwidth (no copy was "
                 "measured)", gbs, ridge);
        view_add_note(view, note);
    }
    sweep_reasons_note(view, runs, left_off_reason, "left off the roofline");
}

/* What a run's point is labelled by: the varying flags' values, less those the run does not use (a
 * tile of the naive kernel, which its document says with null), or its variant where none varies. */
static void point_label(const sweep_state *st, const json_t *run, const json_t *point, char *buf, size_t len)
{
    const char *variant = json_string_value(json_object_get(run, "variant"));
    if (st->pts.nvarying == 0 && variant) {
        snprintf(buf, len, "%s", variant);
        return;
    }
    json_t *used = json_copy((json_t *)point);
    for (size_t i = 0; i < st->pts.nvarying; i++)
        if (json_is_null(json_object_get(run, st->pts.varying[i])))
            json_object_del(used, st->pts.varying[i]);
    sweep_point_name(st, used, NULL, buf, len);
    json_decref(used);
}

/* The roofs as two lines meeting at the ridge point, over x from lo to hi. */
static void add_roofs(json_t *chart, const json_t *roofline, double lo, double hi)
{
    double peak = json_number_value(json_object_get(roofline, "peak_fp32_gflops"));
    double bw = json_number_value(json_object_get(roofline, "bandwidth_gbs"));
    double ridge = json_number_value(json_object_get(roofline, "ridge_intensity"));
    char memory[80], compute[80], value[32];
    sweep_real_text(bw, value, sizeof value);
    snprintf(memory, sizeof memory, "memory roof: %s GB/s", value);
    sweep_real_text(peak, value, sizeof value);
    snprintf(compute, sizeof compute, "FP32 peak: %s GFLOP/s", value);
    view_chart_series(chart, memory, "line");
    view_chart_point(chart, memory, json_real(lo), bw * lo);
    view_chart_point(chart, memory, json_real(ridge), peak);
    view_chart_series(chart, compute, "line");
    view_chart_point(chart, compute, json_real(ridge), peak);
    view_chart_point(chart, compute, json_real(hi), peak);
}

/* The roofs, then each run with a point as a labelled marker in the series of its intensity's
 * source; the roofs reach a power of two beyond the points and the ridge on either side. */
json_t *sweep_roofline_view(const sweep_state *st, const json_t *runs, const json_t *points, const json_t *roofline,
                            const json_t *device)
{
    double ridge = number(json_object_get(roofline, "ridge_intensity")), lo = ridge, hi = ridge;
    if (!(ridge > 0) || !placed(runs))
        return NULL;
    size_t i;
    const json_t *run;
    json_array_foreach(runs, i, run) {
        const json_t *x = json_object_get(json_object_get(run, "roofline"), "intensity");
        if (json_is_number(x)) {
            lo = fmin(lo, json_number_value(x));
            hi = fmax(hi, json_number_value(x));
        }
    }
    const char *name = json_string_value(json_object_get(device, "name"));
    char title[160];
    snprintf(title, sizeof title, "Roofline on %s (FP32 peak, %s bandwidth)", name ? name : "?",
             measured(roofline) ? "measured" : "theoretical");
    json_t *view = view_new(NULL);
    json_t *chart = view_add_chart(view, "line", title, "arithmetic intensity (FLOP/byte)", "GFLOP/s",
                                   VIEW_LOG_X | VIEW_LOG_Y);
    add_roofs(chart, roofline, lo / 2, hi * 2);
    json_array_foreach(runs, i, run) {
        const json_t *r = json_object_get(run, "roofline");
        const json_t *x = json_object_get(r, "intensity");
        if (!json_is_number(x))
            continue;
        const char *series = strcmp(json_string_value(json_object_get(r, "intensity_source")), SOURCE_COUNTERS) == 0
                                 ? "measured (counters)" : "model";
        char label[200];
        point_label(st, run, json_array_get(points, i), label, sizeof label);
        view_chart_series(chart, series, "point");
        view_chart_labelled_point(chart, series, json_deep_copy(x), number(json_object_get(r, "gflops")), label);
    }
    return view;
}
