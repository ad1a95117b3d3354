/* chart.h — private to kernel/render: a chart block (schema in render.h) read
 * into one model that the SVG, the Vega-Lite spec and the textual form all
 * draw from, so the three never disagree about which points a chart has.
 *
 * Reading is where malformed input is dealt with, once: a point that is not
 * [x, y] with the right types is skipped, series with the same name are one
 * series, a series with no usable point is dropped.
 */
#ifndef CUDALAB_RENDER_CHART_H
#define CUDALAB_RENDER_CHART_H

#include <stddef.h>

#include <jansson.h>

/* Beyond this many points a chart is unreadable and its SVG huge; the rest are
 * left out of the picture (the data stays in the result document). */
enum { CHART_MAX_POINTS = 10000 };

enum chart_kind { CHART_LINE, CHART_BAR };

/* How a line chart draws a series: its line with a marker a point (the default), the line alone
 * (a bound: a roofline's roofs) or the markers alone (measurements no line joins: its runs). */
enum chart_mark { CHART_MARK_BOTH, CHART_MARK_LINE, CHART_MARK_POINT };

/* More bars (points) than this are drawn horizontally, a compact row each with its
 * label beside it, so that a sweep of 16 variants stays a short picture
 * instead of a wall of slanted labels. */
enum { CHART_VERTICAL_MAX_BARS = 8 };
/* A horizontal bar chart's plot: this many pixels a bar, at most this tall
 * in all (more bars get thinner, not taller). */
enum { CHART_BAR_ROW = 14, CHART_MAX_PLOT_H = 280 };

struct chart_point {
    const json_t *x, *y;        /* borrowed from the block, as given */
    double xv, yv;              /* their values (xv: line charts only) */
    const char *label;          /* line charts: drawn beside the marker ([x, y, "label"]), or NULL */
    size_t cat;                 /* bar charts: index into chart.cats */
    size_t order;               /* position in the block: sorting stays stable */
};

struct chart_series {
    const char *name;           /* "" when the block gives none */
    enum chart_mark mark;       /* line charts: as the series' first appearance in the block says */
    struct chart_point *points; /* line charts: sorted by x */
    size_t npoints;
};

struct chart {
    enum chart_kind kind;
    const char *title;          /* NULL when absent or empty, like the labels */
    const char *x_label, *y_label;
    int log_x, log_y;           /* line charts only; every x (y) is then > 0 */
    int x_integral;             /* line charts: every x is a whole number, so ticks are too */
    int horizontal;             /* bar charts of more than CHART_VERTICAL_MAX_BARS points */
    struct chart_series *series;
    size_t nseries;
    const char **cats;          /* bar charts: categories in first-seen order */
    size_t ncats;
    size_t npoints;             /* over all series */
};

/* The bar slots of a bar chart: one per category and series (0 for a line). */
size_t chart_bars(const struct chart *c);

/* Reads block (borrowed: the model points into it until chart_free). Returns
 * 0, or -1 when block is not a chart (no known "kind") or memory ran out; c
 * is then an empty line chart, still safe to draw and to free. */
int chart_read(const json_t *block, struct chart *c);
void chart_free(struct chart *c);

/* 1 when block is a chart that a view shows: a "chart" block of a known kind,
 * with or without points. Other chart blocks are left out like any broken block. */
int chart_shown(const json_t *block);

/* The textual form: a table block (new reference) titled like the chart, with
 * columns series (only when there are several), x and y; one row "(no data)"
 * when the chart has no point. NULL when block is not shown (chart_shown). */
json_t *chart_table(const json_t *block);

/* The colour of the i-th series: Okabe-Ito, safe for colour-blind readers,
 * reused in order when there are more series than colours. */
const char *chart_colour(size_t i);
size_t chart_ncolours(void);

/* ---- axes (chart_axis.c) ---- */

enum { CHART_MAX_TICKS = 12 };

/* lo, hi and ticks are in axis units: values, or exponents of 2 when log. */
struct chart_axis {
    int log;
    double lo, hi;              /* the domain shown, lo < hi */
    size_t nticks;
    double ticks[CHART_MAX_TICKS];
};

/* Round ticks (1, 2 or 5 times a power of ten, and at least min_step apart:
 * 1 on an integral axis, 0 for any) over [lo, hi], the domain widened to the
 * outer ticks; lo == hi is widened first. */
void chart_axis_linear(struct chart_axis *a, double lo, double hi, double min_step);
/* Powers of two over [lo, hi], both > 0. */
void chart_axis_log2(struct chart_axis *a, double lo, double hi);
/* Where u (axis units) or v (a value) lies: 0 at lo, 1 at hi. */
double chart_axis_frac(const struct chart_axis *a, double u);
double chart_axis_value_frac(const struct chart_axis *a, double v);
/* The label of the i-th tick: "16", "0.25", "2²⁰". */
void chart_axis_label(const struct chart_axis *a, size_t i, char *buf, size_t len);

#endif
