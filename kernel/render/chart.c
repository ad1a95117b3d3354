/* chart.c — chart blocks (schema in render.h): reading one into the model of
 * chart.h, its textual form, and its Vega-Lite v5 spec. The SVG is drawn in
 * chart_svg.c from the same model.
 *
 * The Vega-Lite spec carries its data inline and the same colours as the SVG,
 * so the interactive chart in JupyterLab and the picture in an exported page
 * show the same thing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"
#include "render/chart.h"

/* Okabe & Ito (2008), ordered for a white background: yellow, the faintest, last. */
static const char *const palette[] = {
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442",
};

size_t chart_ncolours(void)
{
    return sizeof palette / sizeof palette[0];
}

const char *chart_colour(size_t i)
{
    return palette[i % chart_ncolours()];
}

/* The block's names of a series' marks ("mark"), CHART_MARK_BOTH's only in the Vega-Lite data. */
static const char *const mark_names[] = {
    [CHART_MARK_BOTH] = "both", [CHART_MARK_LINE] = "line", [CHART_MARK_POINT] = "point",
};

/* ---- reading ---- */

static const char *label(const json_t *block, const char *key)
{
    const char *s = json_string_value(json_object_get(block, key));
    return s && *s ? s : NULL;
}

/* The category's index, added when new; (size_t)-1 when memory ran out. */
static size_t category(struct chart *c, const char *name)
{
    for (size_t i = 0; i < c->ncats; i++)
        if (strcmp(c->cats[i], name) == 0)
            return i;
    const char **more = realloc(c->cats, (c->ncats + 1) * sizeof *more);
    if (!more)
        return (size_t)-1;
    c->cats = more;
    c->cats[c->ncats] = name;
    return c->ncats++;
}

/* Fills pt from [x, y]; 0 when p is no usable point for this chart. */
static int point_read(struct chart *c, const json_t *p, struct chart_point *pt)
{
    pt->x = json_array_get(p, 0);
    pt->y = json_array_get(p, 1);
    if (!json_is_number(pt->y) || !isfinite(json_number_value(pt->y)))
        return 0;
    pt->yv = json_number_value(pt->y);
    pt->xv = 0;
    pt->cat = 0;
    pt->label = NULL;
    if (c->kind == CHART_BAR) {
        if (!json_is_string(pt->x))
            return 0;
        pt->cat = category(c, json_string_value(pt->x));
        return pt->cat != (size_t)-1;
    }
    if (!json_is_number(pt->x))
        return 0;
    pt->xv = json_number_value(pt->x);
    pt->label = json_string_value(json_array_get(p, 2));
    return isfinite(pt->xv) && (!c->log_x || pt->xv > 0) && (!c->log_y || pt->yv > 0);
}

/* How the block draws a line chart's series: "mark" as it names one, else both. */
static enum chart_mark mark_of(const struct chart *c, const json_t *series)
{
    const char *name = json_string_value(json_object_get(series, "mark"));
    for (int m = CHART_MARK_LINE; c->kind == CHART_LINE && name && m <= CHART_MARK_POINT; m++)
        if (strcmp(name, mark_names[m]) == 0)
            return (enum chart_mark)m;
    return CHART_MARK_BOTH;
}

/* Appends pt to the series called name, which is created (drawn with mark) when new. */
static int series_add(struct chart *c, const char *name, enum chart_mark mark, const struct chart_point *pt)
{
    struct chart_series *s = NULL;
    for (size_t i = 0; i < c->nseries && !s; i++)
        if (strcmp(c->series[i].name, name) == 0)
            s = &c->series[i];
    if (!s) {
        struct chart_series *more = realloc(c->series, (c->nseries + 1) * sizeof *more);
        if (!more)
            return -1;
        c->series = more;
        s = &c->series[c->nseries++];
        *s = (struct chart_series){ .name = name, .mark = mark };
    }
    struct chart_point *pts = realloc(s->points, (s->npoints + 1) * sizeof *pts);
    if (!pts)
        return -1;
    s->points = pts;
    s->points[s->npoints++] = *pt;
    c->npoints++;
    return 0;
}

static int by_x(const void *a, const void *b)
{
    const struct chart_point *p = a, *q = b;
    if (p->xv != q->xv)
        return p->xv < q->xv ? -1 : 1;
    return p->order < q->order ? -1 : p->order > q->order;
}

void chart_free(struct chart *c)
{
    for (size_t i = 0; i < c->nseries; i++)
        free(c->series[i].points);
    free(c->series);
    free(c->cats);
    *c = (struct chart){ .kind = CHART_LINE };
}

/* Slots, not points: a grouped chart keeps a slot for every series in every category. */
size_t chart_bars(const struct chart *c)
{
    return c->kind == CHART_BAR ? c->ncats * (c->nseries ? c->nseries : 1) : 0;
}

/* What the layout follows from the points alone, so that the SVG and the
 * Vega-Lite spec, both drawn from this model, cannot disagree about it. */
static void layout_of(struct chart *c)
{
    c->x_integral = c->kind == CHART_LINE && c->npoints > 0;
    for (size_t i = 0; i < c->nseries && c->x_integral; i++)
        for (size_t j = 0; j < c->series[i].npoints && c->x_integral; j++)
            c->x_integral = c->series[i].points[j].xv == floor(c->series[i].points[j].xv);
    c->horizontal = c->kind == CHART_BAR && c->npoints > CHART_VERTICAL_MAX_BARS;
}

int chart_read(const json_t *block, struct chart *c)
{
    *c = (struct chart){ .kind = CHART_LINE };
    const char *kind = json_string_value(json_object_get(block, "kind"));
    if (!kind || (strcmp(kind, "line") != 0 && strcmp(kind, "bar") != 0))
        return -1;
    c->kind = strcmp(kind, "bar") == 0 ? CHART_BAR : CHART_LINE;
    c->title = label(block, "title");
    c->x_label = label(block, "x_label");
    c->y_label = label(block, "y_label");
    c->log_x = c->kind == CHART_LINE && json_is_true(json_object_get(block, "log_x"));
    c->log_y = c->kind == CHART_LINE && json_is_true(json_object_get(block, "log_y"));

    const json_t *series = json_object_get(block, "series");
    size_t order = 0;
    for (size_t i = 0; i < json_array_size(series); i++) {
        const json_t *s = json_array_get(series, i);
        const char *name = json_string_value(json_object_get(s, "name"));
        const json_t *points = json_object_get(s, "points");
        for (size_t j = 0; j < json_array_size(points) && c->npoints < CHART_MAX_POINTS; j++) {
            struct chart_point pt = { .order = order++ };
            if (point_read(c, json_array_get(points, j), &pt)
                && series_add(c, name ? name : "", mark_of(c, s), &pt) != 0) {
                chart_free(c);
                return -1;
            }
        }
    }
    for (size_t i = 0; c->kind == CHART_LINE && i < c->nseries; i++)
        qsort(c->series[i].points, c->series[i].npoints, sizeof *c->series[i].points, by_x);
    layout_of(c);
    return 0;
}

int chart_shown(const json_t *block)
{
    const char *type = json_string_value(json_object_get(block, "type"));
    const char *kind = json_string_value(json_object_get(block, "kind"));
    return type && kind && strcmp(type, "chart") == 0
        && (strcmp(kind, "line") == 0 || strcmp(kind, "bar") == 0);
}

/* Whether some point has a label. */
static int labelled(const struct chart *c)
{
    for (size_t i = 0; i < c->nseries; i++)
        for (size_t j = 0; j < c->series[i].npoints; j++)
            if (c->series[i].points[j].label)
                return 1;
    return 0;
}

/* ---- the textual form ---- */

json_t *chart_table(const json_t *block)
{
    struct chart c;
    if (!chart_shown(block) || chart_read(block, &c) != 0)
        return NULL;
    int named = c.nseries > 1, labels = labelled(&c);
    json_t *table = json_pack("{s:s, s:[]}", "type", "table", "rows");
    json_t *rows = json_object_get(table, "rows");
    if (c.title)
        json_object_set_new(table, "title", json_string(c.title));
    if (c.npoints == 0)
        json_array_append_new(rows, json_pack("[s]", "(no data)"));
    else {
        json_t *columns = named ? json_pack("[s]", "series") : json_array();
        json_array_append_new(columns, json_string(c.x_label ? c.x_label : "x"));
        json_array_append_new(columns, json_string(c.y_label ? c.y_label : "y"));
        if (labels)
            json_array_append_new(columns, json_string("label"));
        json_object_set_new(table, "columns", columns);
    }
    for (size_t i = 0; i < c.nseries; i++) {
        const struct chart_series *s = &c.series[i];
        for (size_t j = 0; j < s->npoints; j++) {
            json_t *row = named ? json_pack("[s]", s->name) : json_array();
            json_array_append_new(row, json_deep_copy(s->points[j].x));
            json_array_append_new(row, json_deep_copy(s->points[j].y));
            if (labels)
                json_array_append_new(row, s->points[j].label ? json_string(s->points[j].label) : json_null());
            json_array_append_new(rows, row);
        }
    }
    chart_free(&c);
    return table;
}

/* ---- Vega-Lite ---- */

static json_t *series_names(const struct chart *c)
{
    json_t *a = json_array();
    for (size_t i = 0; i < c->nseries; i++)
        json_array_append_new(a, json_string(c->series[i].name));
    return a;
}

static json_t *categories(const struct chart *c)
{
    json_t *a = json_array();
    for (size_t i = 0; i < c->ncats; i++)
        json_array_append_new(a, json_string(c->cats[i]));
    return a;
}

/* Whether the spec needs a layer a mark: series drawn differently, or labels beside the markers. */
static int layered(const struct chart *c)
{
    for (size_t i = 0; i < c->nseries; i++)
        if (c->series[i].mark != CHART_MARK_BOTH)
            return 1;
    return labelled(c);
}

/* Each point with its series, and in a layered spec its series' mark and its label. */
static json_t *vl_values(const struct chart *c)
{
    json_t *values = json_array();
    int layers = layered(c);
    for (size_t i = 0; i < c->nseries; i++)
        for (size_t j = 0; j < c->series[i].npoints; j++) {
            const struct chart_point *p = &c->series[i].points[j];
            json_t *v = json_pack("{s:s, s:o, s:o}", "series", c->series[i].name, "x", json_deep_copy(p->x),
                                  "y", json_deep_copy(p->y));
            if (layers)
                json_object_set_new(v, "mark", json_string(mark_names[c->series[i].mark]));
            if (p->label)
                json_object_set_new(v, "label", json_string(p->label));
            json_array_append_new(values, v);
        }
    return values;
}

/* The axis of the chart's x values: categories for bars, numbers for lines
 * (whole numbers only where every x is one, as the SVG's ticks). */
static json_t *vl_x(const struct chart *c)
{
    /* a null title shows no axis title, as in the SVG */
    json_t *x = json_pack("{s:s, s:s, s:s?}", "field", "x",
                          "type", c->kind == CHART_BAR ? "nominal" : "quantitative",
                          "title", c->x_label);
    if (c->kind == CHART_BAR)
        json_object_set_new(x, "sort", categories(c));
    else if (c->log_x)
        json_object_set_new(x, "scale", json_pack("{s:s, s:i}", "type", "log", "base", 2));
    else
        json_object_set_new(x, "scale", json_pack("{s:b}", "zero", 0));
    if (c->x_integral)
        json_object_set_new(x, "axis", json_pack("{s:i, s:s}", "tickMinStep", 1, "format", "d"));
    return x;
}

static json_t *vl_y(const struct chart *c)
{
    json_t *y = json_pack("{s:s, s:s, s:s?}", "field", "y", "type", "quantitative", "title", c->y_label);
    if (c->log_y)
        json_object_set_new(y, "scale", json_pack("{s:s, s:i}", "type", "log", "base", 2));
    return y;
}

/* One colour per series, the SVG's, in the SVG's order. */
static json_t *vl_colour(const struct chart *c)
{
    json_t *range = json_array();
    for (size_t i = 0; i < c->nseries && i < chart_ncolours(); i++)
        json_array_append_new(range, json_string(chart_colour(i)));
    json_t *colour = json_pack("{s:s, s:s, s:s, s:{s:o, s:o}}", "field", "series",
                               "type", "nominal", "title", "series", "scale",
                               "domain", series_names(c),
                               "range", range);
    if (c->nseries <= 1)
        json_object_set_new(colour, "legend", json_null());
    return colour;
}

static json_t *vl_tooltip(const struct chart *c)
{
    json_t *tooltip = json_pack("[{s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s, s:s}]",
                                "field", "series", "type", "nominal",
                                "field", "x", "type", c->kind == CHART_BAR ? "nominal" : "quantitative",
                                "title", c->x_label ? c->x_label : "x",
                                "field", "y", "type", "quantitative", "title", c->y_label ? c->y_label : "y");
    if (labelled(c))
        json_array_append_new(tooltip, json_pack("{s:s, s:s}", "field", "label", "type", "nominal"));
    return tooltip;
}

/* The layers of a layered spec, as the SVG draws them: the lines of the series drawn with one, the
 * markers of those drawn with them (with the tooltips), and the labels beside their markers. */
static json_t *vl_layers(const struct chart *c)
{
    return json_pack("[{s:[{s:{s:s, s:[s, s]}}], s:{s:s}},"
                     " {s:[{s:{s:s, s:[s, s]}}], s:{s:s, s:b}, s:{s:o}},"
                     " {s:[{s:s}], s:{s:s, s:s, s:i, s:i}, s:{s:{s:s, s:s}}}]",
                     "transform", "filter", "field", "mark", "oneOf", "line", "both",
                     "mark", "type", "line",
                     "transform", "filter", "field", "mark", "oneOf", "point", "both",
                     "mark", "type", "point", "filled", 1, "encoding", "tooltip", vl_tooltip(c),
                     "transform", "filter", "isValid(datum.label)",
                     "mark", "type", "text", "align", "left", "dx", 7, "dy", -7,
                     "encoding", "text", "field", "label", "type", "nominal");
}

/* A horizontal bar chart's height: a row a bar, at most CHART_MAX_PLOT_H in
 * all (Vega-Lite's step is one category's band, its bars side by side). */
static json_t *vl_height(const struct chart *c)
{
    size_t bars = chart_bars(c);
    if (!c->horizontal)
        return json_integer(280);
    if (bars * CHART_BAR_ROW > CHART_MAX_PLOT_H)
        return json_integer(CHART_MAX_PLOT_H);
    return json_pack("{s:i}", "step", (int)(CHART_BAR_ROW * (c->nseries ? c->nseries : 1)));
}

json_t *chart_vegalite(const json_t *block)
{
    struct chart c;
    chart_read(block, &c);                  /* not a chart: an empty line chart */
    /* horizontal bars: the categories run down the y axis, the values along x */
    json_t *encoding = json_pack("{s:o, s:o, s:o}", c.horizontal ? "y" : "x", vl_x(&c),
                                 c.horizontal ? "x" : "y", vl_y(&c), "color", vl_colour(&c));
    json_t *spec = json_pack("{s:s, s:s*, s:i, s:o, s:{s:o}}",
        "$schema", "https://vega.github.io/schema/vega-lite/v5.json",
        "title", c.title, "width", 560, "height", vl_height(&c),
        "data", "values", vl_values(&c));
    if (layered(&c)) {
        json_object_set_new(spec, "encoding", encoding);
        json_object_set_new(spec, "layer", vl_layers(&c));
        chart_free(&c);
        return spec;
    }
    json_object_set_new(encoding, "tooltip", vl_tooltip(&c));
    if (c.kind == CHART_BAR && c.nseries > 1)
        json_object_set_new(encoding, c.horizontal ? "yOffset" : "xOffset", json_pack("{s:s, s:s, s:o}",
            "field", "series", "type", "nominal", "sort", series_names(&c)));
    json_object_set_new(spec, "mark", c.kind == CHART_BAR ? json_pack("{s:s}", "type", "bar")
                                                          : json_pack("{s:s, s:b}", "type", "line", "point", 1));
    json_object_set_new(spec, "encoding", encoding);
    chart_free(&c);
    return spec;
}
