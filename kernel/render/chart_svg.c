/* chart_svg.c — a chart (the model of chart.h) drawn as a self-contained SVG:
 * what nbconvert, the HTML export and the classic notebook show, and what a
 * view mixing tables and charts shows inline.
 *
 * Self-contained: no fonts, stylesheets, scripts or ids (two charts on one page
 * must not clash), a white card behind everything so that the chart reads the
 * same in light and dark themes. Deterministic: the same chart gives the same
 * bytes, coordinates written with one decimal, ticks and labels found without
 * log10 or pow (chart_axis.c) so that they are the same on every machine. Text
 * widths are guessed (CHAR_W per character), not measured: there is no font.
 * Many bars are drawn horizontally in a picture only as tall as they need
 * (chart.h says when), so that a chart never pushes its table off screen.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memtext.h"
#include "base/utf8.h"
#include "render/render.h"
#include "render/chart.h"
#include "render/layout.h"

enum { WIDTH = 640, HEIGHT = 360, ROW_H = 18 };
enum { TITLE_CHARS = 72, LEGEND_CHARS = 24, CAT_CHARS = 16, HBAR_LABEL_CHARS = 24, POINT_LABEL_CHARS = 20 };
enum { BOTTOM_H = 32 };                     /* below the plot: tick labels and the margin */
#define CHAR_W 7.0                          /* a 12 px sans-serif character, roughly */

static const char INK[] = "#333333", AXIS[] = "#888888", GRID[] = "#e6e6e6";

static double widest_tick(const struct chart_axis *a)
{
    size_t w = 0;
    for (size_t i = 0; i < a->nticks; i++) {
        char label[64];
        chart_axis_label(a, i, label, sizeof label);
        size_t n = utf8_chars(label);
        w = n > w ? n : w;
    }
    return w * CHAR_W;
}

/* ---- the frame ---- */

struct frame {
    double x0, x1, y0, y1;      /* the plot area: left, right, top, bottom */
    double legend_x;            /* 0: no legend */
    int rotate;                 /* bar charts: labels slanted and cut to CAT_CHARS */
};

static size_t widest_name(const struct chart *c, int cats)
{
    size_t w = 0, n = cats ? c->ncats : c->nseries;
    for (size_t i = 0; i < n; i++) {
        size_t k = utf8_chars(cats ? c->cats[i] : c->series[i].name);
        w = k > w ? k : w;
    }
    return w;
}

/* The plot's height for horizontal bars: a row a bar, at most CHART_MAX_PLOT_H. */
static double hbar_plot_h(const struct chart *c)
{
    double h = (double)chart_bars(c) * CHART_BAR_ROW;
    return h < CHART_MAX_PLOT_H ? h : CHART_MAX_PLOT_H;
}

/* The picture's height: a horizontal bar chart only as tall as its bars. */
static int svg_height(const struct chart *c)
{
    if (!c->horizontal || c->npoints == 0)
        return HEIGHT;
    return (int)((c->title ? 44 : 16) + hbar_plot_h(c) + BOTTOM_H + (c->y_label ? 20 : 0));
}

/* The plot's right edge, and the legend beside it when there are several series. */
static void place_legend(struct frame *fr, const struct chart *c)
{
    fr->x1 = WIDTH - 24;
    fr->legend_x = 0;
    if (c->nseries > 1) {
        size_t chars = widest_name(c, 0);
        chars = chars < LEGEND_CHARS ? chars : LEGEND_CHARS;
        fr->x1 = WIDTH - (12 + 24 + chars * CHAR_W + 12);
        fr->legend_x = fr->x1 + 12;
    }
}

/* Horizontal bars: labels on the left, values along the bottom. */
static void frame_place_h(struct frame *fr, const struct chart *c)
{
    size_t chars = widest_name(c, 1);
    chars = chars < HBAR_LABEL_CHARS ? chars : HBAR_LABEL_CHARS;
    fr->y0 = c->title ? 44 : 16;
    fr->y1 = fr->y0 + hbar_plot_h(c);
    fr->x0 = 10 + (c->x_label ? 22 : 0) + chars * CHAR_W + 8;
    fr->rotate = 0;
    place_legend(fr, c);
}

static void frame_place(struct frame *fr, const struct chart *c, const struct chart_axis *y)
{
    if (c->horizontal) {
        frame_place_h(fr, c);
        return;
    }
    fr->y0 = c->title ? 44 : 16;
    fr->x0 = 10 + (c->y_label ? 22 : 0) + widest_tick(y) + 8;
    place_legend(fr, c);
    double ticks_h = 22;
    fr->rotate = 0;
    if (c->kind == CHART_BAR && c->ncats > 0) {
        double band = (fr->x1 - fr->x0) / c->ncats;
        size_t longest = widest_name(c, 1);
        if (longest * CHAR_W > band - 6) {  /* slanted at 35 degrees: sin 0.574, cos 0.819 */
            double w = (longest < CAT_CHARS ? longest : CAT_CHARS) * CHAR_W;
            fr->rotate = 1;
            ticks_h = 16 + w * 0.574;
            fr->x0 = fmax(fr->x0, 10 + w * 0.819 - band / 2);   /* the first label stays in */
        }
    }
    fr->y1 = HEIGHT - 10 - (c->x_label ? 20 : 0) - ticks_h;
}

static double px_x(const struct frame *fr, double t)
{
    return fr->x0 + t * (fr->x1 - fr->x0);
}

static double px_y(const struct frame *fr, double t)
{
    return fr->y1 - t * (fr->y1 - fr->y0);
}

/* ---- text ---- */

static void put(FILE *f, const char *s)
{
    layout_escape(f, s, 1);
}

/* s cut to at most max characters, whole ones, a "…" standing for what is
 * left out: at the end, or in the middle where names differ at both ends
 * ("tiled, 1024, float"). Written into buf when cut. */
static const char *clip(const char *s, size_t max, int middle, char *buf, size_t len)
{
    size_t width = utf8_chars(s);
    if (len < 12)
        return s;
    if (max > (len - 4) / 4)
        max = (len - 4) / 4;                /* 4 bytes a character at most */
    if (width <= max || max == 0)
        return s;
    size_t head = middle ? (max - 1) / 2 : max - 1, tail = max - 1 - head;
    size_t n = utf8_offset(s, head);
    memcpy(buf, s, n);
    memcpy(buf + n, "\u2026", 3);
    const char *rest = s + utf8_offset(s, width - tail);
    memcpy(buf + n + 3, rest, strlen(rest) + 1);
    return buf;
}

/* A hover text: the series, then x and y with their labels. */
static void tooltip(FILE *f, const struct chart *c, const struct chart_series *s,
                    const struct chart_point *p)
{
    char x[64], y[64];
    render_number(p->x, x, sizeof x);
    render_number(p->y, y, sizeof y);
    fputs("<title>", f);
    if (*s->name) {
        put(f, s->name);
        fputc('\n', f);
    }
    if (p->label) {
        put(f, p->label);
        fputc('\n', f);
    }
    put(f, c->x_label ? c->x_label : "x");
    fputs(" = ", f);
    put(f, json_is_string(p->x) ? json_string_value(p->x) : x);
    fputc('\n', f);
    put(f, c->y_label ? c->y_label : "y");
    fputs(" = ", f);
    put(f, y);
    fputs("</title>", f);
}

/* ---- drawing ---- */

static void line(FILE *f, double x1, double y1, double x2, double y2)
{
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x1, y1, x2, y2);
}

static void draw_head(FILE *f, const struct chart *c, int height)
{
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\" "
               "style=\"max-width:100%%;height:auto\">\n", WIDTH, height, WIDTH, height);
    fputs("<title>", f);
    put(f, c->title ? c->title : "chart");
    fputs("</title>\n", f);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" rx=\"4\" fill=\"#ffffff\"/>\n", WIDTH, height);
    if (c->title) {
        char buf[TITLE_CHARS * 4 + 8];
        fprintf(f, "<text x=\"%d\" y=\"26\" text-anchor=\"middle\" font-size=\"15\" "
                   "font-weight=\"bold\" fill=\"%s\">", WIDTH / 2, INK);
        put(f, clip(c->title, TITLE_CHARS, 0, buf, sizeof buf));
        fputs("</text>\n", f);
    }
}

/* The ticks of an axis along the frame's bottom edge (inside the caller's stroke group). */
static void bottom_ticks(FILE *f, const struct frame *fr, const struct chart_axis *x)
{
    for (size_t i = 0; i < x->nticks; i++) {
        double px = px_x(fr, chart_axis_frac(x, x->ticks[i]));
        line(f, px, fr->y1, px, fr->y1 + 5);
    }
}

/* Their labels, centred under them. */
static void bottom_labels(FILE *f, const struct frame *fr, const struct chart_axis *x)
{
    char label[64];
    fprintf(f, "<g fill=\"%s\" text-anchor=\"middle\">\n", INK);
    for (size_t i = 0; i < x->nticks; i++) {
        chart_axis_label(x, i, label, sizeof label);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                px_x(fr, chart_axis_frac(x, x->ticks[i])), fr->y1 + 19, label);
    }
    fputs("</g>\n", f);
}

/* Gridlines behind everything, then the axes with their ticks and labels. */
static void draw_axes(FILE *f, const struct frame *fr, const struct chart_axis *x, const struct chart_axis *y)
{
    fprintf(f, "<g stroke=\"%s\" stroke-width=\"1\">\n", GRID);
    for (size_t i = 0; i < y->nticks; i++) {
        double py = px_y(fr, chart_axis_frac(y, y->ticks[i]));
        line(f, fr->x0, py, fr->x1, py);
    }
    fputs("</g>\n", f);

    fprintf(f, "<g stroke=\"%s\" stroke-width=\"1\">\n", AXIS);
    line(f, fr->x0, fr->y1, fr->x1, fr->y1);
    line(f, fr->x0, fr->y0, fr->x0, fr->y1);
    if (!y->log && y->lo < 0 && y->hi > 0) {    /* bars grow up and down from zero */
        double zero = px_y(fr, chart_axis_frac(y, 0));
        line(f, fr->x0, zero, fr->x1, zero);
    }
    for (size_t i = 0; i < y->nticks; i++) {
        double py = px_y(fr, chart_axis_frac(y, y->ticks[i]));
        line(f, fr->x0 - 5, py, fr->x0, py);
    }
    if (x)
        bottom_ticks(f, fr, x);
    fputs("</g>\n", f);

    char label[64];
    fprintf(f, "<g fill=\"%s\" text-anchor=\"end\">\n", INK);
    for (size_t i = 0; i < y->nticks; i++) {
        chart_axis_label(y, i, label, sizeof label);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", fr->x0 - 8,
                px_y(fr, chart_axis_frac(y, y->ticks[i])) + 4, label);
    }
    fputs("</g>\n", f);
    if (x)
        bottom_labels(f, fr, x);
}

static void draw_categories(FILE *f, const struct chart *c, const struct frame *fr)
{
    double band = (fr->x1 - fr->x0) / c->ncats;
    fprintf(f, "<g fill=\"%s\" text-anchor=\"%s\">\n", INK, fr->rotate ? "end" : "middle");
    for (size_t i = 0; i < c->ncats; i++) {
        char buf[CAT_CHARS * 4 + 8];
        double cx = fr->x0 + band * (i + 0.5);
        if (fr->rotate)
            fprintf(f, "<text transform=\"translate(%.1f %.1f) rotate(-35)\">", cx + 4, fr->y1 + 14);
        else
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", cx, fr->y1 + 19);
        put(f, fr->rotate ? clip(c->cats[i], CAT_CHARS, 1, buf, sizeof buf) : c->cats[i]);
        fputs("</text>\n", f);
    }
    fputs("</g>\n", f);
}

/* The labels of a series' markers, in its colour: right of the marker, or left of it in the
 * plot's right third, where the text would run into the legend. */
static void draw_point_labels(FILE *f, const struct chart_series *s, size_t i, const struct frame *fr,
                              const struct chart_axis *x, const struct chart_axis *y)
{
    fprintf(f, "<g fill=\"%s\" font-size=\"11\">\n", chart_colour(i));
    for (size_t j = 0; j < s->npoints; j++) {
        if (!s->points[j].label)
            continue;
        char buf[POINT_LABEL_CHARS * 4 + 8];
        double t = chart_axis_value_frac(x, s->points[j].xv), px = px_x(fr, t);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\"%s>", t > 2.0 / 3 ? px - 7 : px + 7,
                px_y(fr, chart_axis_value_frac(y, s->points[j].yv)) - 7, t > 2.0 / 3 ? " text-anchor=\"end\"" : "");
        put(f, clip(s->points[j].label, POINT_LABEL_CHARS, 1, buf, sizeof buf));
        fputs("</text>\n", f);
    }
    fputs("</g>\n", f);
}

/* Lines first, then every marker above every line, then the markers' labels. */
static void draw_lines(FILE *f, const struct chart *c, const struct frame *fr,
                       const struct chart_axis *x, const struct chart_axis *y)
{
    for (size_t i = 0; i < c->nseries; i++) {
        const struct chart_series *s = &c->series[i];
        if (s->mark == CHART_MARK_POINT)
            continue;
        fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"2\" stroke-linejoin=\"round\" d=\"",
                chart_colour(i));
        for (size_t j = 0; j < s->npoints; j++)
            fprintf(f, "%s%.1f %.1f", j ? " L" : "M", px_x(fr, chart_axis_value_frac(x, s->points[j].xv)),
                    px_y(fr, chart_axis_value_frac(y, s->points[j].yv)));
        fputs("\"/>\n", f);
    }
    for (size_t i = 0; i < c->nseries; i++) {
        const struct chart_series *s = &c->series[i];
        if (s->mark == CHART_MARK_LINE)
            continue;
        fprintf(f, "<g fill=\"%s\" stroke=\"#ffffff\" stroke-width=\"1\">\n", chart_colour(i));
        for (size_t j = 0; j < s->npoints; j++) {
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\">",
                    px_x(fr, chart_axis_value_frac(x, s->points[j].xv)),
                    px_y(fr, chart_axis_value_frac(y, s->points[j].yv)));
            tooltip(f, c, s, &s->points[j]);
            fputs("</circle>\n", f);
        }
        fputs("</g>\n", f);
    }
    for (size_t i = 0; i < c->nseries; i++)
        if (c->series[i].mark != CHART_MARK_LINE)
            draw_point_labels(f, &c->series[i], i, fr, x, y);
}

/* Grouped bars: each category's band holds one bar a series, in series order. */
static void draw_bars(FILE *f, const struct chart *c, const struct frame *fr, const struct chart_axis *y)
{
    double band = (fr->x1 - fr->x0) / c->ncats;
    double bar = band * 0.8 / c->nseries;
    double gap = c->nseries > 1 && bar > 4 ? 1 : 0;
    double zero = px_y(fr, chart_axis_frac(y, 0));
    for (size_t i = 0; i < c->nseries; i++) {
        const struct chart_series *s = &c->series[i];
        fprintf(f, "<g fill=\"%s\">\n", chart_colour(i));
        for (size_t j = 0; j < s->npoints; j++) {
            double top = px_y(fr, chart_axis_value_frac(y, s->points[j].yv));
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">",
                    fr->x0 + band * (s->points[j].cat + 0.1) + bar * i, fmin(top, zero),
                    bar - gap, fabs(top - zero));
            tooltip(f, c, s, &s->points[j]);
            fputs("</rect>\n", f);
        }
        fputs("</g>\n", f);
    }
}

static void draw_legend(FILE *f, const struct chart *c, const struct frame *fr)
{
    if (fr->legend_x == 0)
        return;
    size_t rows = (size_t)((fr->y1 - fr->y0) / ROW_H);
    rows = rows < 2 ? 2 : rows;
    size_t shown = c->nseries <= rows ? c->nseries : rows - 1;
    double lx = fr->legend_x;
    fprintf(f, "<g fill=\"%s\">\n", INK);
    for (size_t i = 0; i < shown; i++) {
        double y = fr->y0 + 6 + i * ROW_H;
        const char *colour = chart_colour(i);
        if (c->kind == CHART_LINE) {
            if (c->series[i].mark != CHART_MARK_POINT)
                fprintf(f, "<path stroke=\"%s\" stroke-width=\"2\" d=\"M%.1f %.1f h18\"/>", colour, lx, y);
            if (c->series[i].mark != CHART_MARK_LINE)
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>", lx + 9, y, colour);
            fputc('\n', f);
        } else
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n",
                    lx + 3, y - 6, colour);
        char buf[LEGEND_CHARS * 4 + 8];
        const char *name = *c->series[i].name ? c->series[i].name : "(no name)";
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", lx + 24, y + 4);
        put(f, clip(name, LEGEND_CHARS, 1, buf, sizeof buf));
        fputs("</text>\n", f);
    }
    if (shown < c->nseries)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">+%zu more</text>\n", lx + 24,
                fr->y0 + 10 + shown * ROW_H, c->nseries - shown);
    fputs("</g>\n", f);
}

/* The value axis's title below a horizontal bar chart, the categories' at its left. */
static void draw_axis_labels(FILE *f, const struct chart *c, const struct frame *fr, int height)
{
    char buf[80 * 4 + 8];
    const char *bottom = c->horizontal ? c->y_label : c->x_label;
    const char *left = c->horizontal ? c->x_label : c->y_label;
    if (bottom) {
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"13\" fill=\"%s\">",
                (fr->x0 + fr->x1) / 2, height - 12, INK);
        put(f, clip(bottom, 80, 0, buf, sizeof buf));
        fputs("</text>\n", f);
    }
    if (left) {
        fprintf(f, "<text transform=\"translate(20 %.1f) rotate(-90)\" text-anchor=\"middle\" "
                   "font-size=\"13\" fill=\"%s\">", (fr->y0 + fr->y1) / 2, INK);
        put(f, clip(left, (size_t)((fr->y1 - fr->y0) / 8), 0, buf, sizeof buf));
        fputs("</text>\n", f);
    }
}

/* ---- horizontal bars ---- */

/* The value axis along the bottom: gridlines up through the plot, ticks and labels below. */
static void draw_value_axis_h(FILE *f, const struct frame *fr, const struct chart_axis *v)
{
    fprintf(f, "<g stroke=\"%s\" stroke-width=\"1\">\n", GRID);
    for (size_t i = 0; i < v->nticks; i++) {
        double px = px_x(fr, chart_axis_frac(v, v->ticks[i]));
        line(f, px, fr->y0, px, fr->y1);
    }
    fputs("</g>\n", f);
    fprintf(f, "<g stroke=\"%s\" stroke-width=\"1\">\n", AXIS);
    line(f, fr->x0, fr->y1, fr->x1, fr->y1);
    double zero = px_x(fr, chart_axis_frac(v, 0));
    line(f, zero, fr->y0, zero, fr->y1);     /* bars grow from zero, either way */
    bottom_ticks(f, fr, v);
    fputs("</g>\n", f);
    bottom_labels(f, fr, v);
}

/* Each category's band holds one bar a series, its label at the left. */
static void draw_hbars(FILE *f, const struct chart *c, const struct frame *fr, const struct chart_axis *v)
{
    double band = (fr->y1 - fr->y0) / c->ncats;
    double bar = band * 0.8 / c->nseries;
    double zero = px_x(fr, chart_axis_frac(v, 0));
    fprintf(f, "<g fill=\"%s\" text-anchor=\"end\">\n", INK);
    for (size_t i = 0; i < c->ncats; i++) {
        char buf[HBAR_LABEL_CHARS * 4 + 8];
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", fr->x0 - 6, fr->y0 + band * (i + 0.5) + 4);
        put(f, clip(c->cats[i], HBAR_LABEL_CHARS, 1, buf, sizeof buf));
        fputs("</text>\n", f);
    }
    fputs("</g>\n", f);
    for (size_t i = 0; i < c->nseries; i++) {
        const struct chart_series *s = &c->series[i];
        fprintf(f, "<g fill=\"%s\">\n", chart_colour(i));
        for (size_t j = 0; j < s->npoints; j++) {
            double end = px_x(fr, chart_axis_value_frac(v, s->points[j].yv));
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">", fmin(end, zero),
                    fr->y0 + band * (s->points[j].cat + 0.1) + bar * i, fabs(end - zero),
                    bar > 2 ? bar - (c->nseries > 1) : bar);
            tooltip(f, c, s, &s->points[j]);
            fputs("</rect>\n", f);
        }
        fputs("</g>\n", f);
    }
}

static void draw_plot(FILE *f, const struct chart *c, int height)
{
    /* a linear y always shows zero; a log2 one spans the points */
    double xlo = INFINITY, xhi = -INFINITY, ylo = c->log_y ? INFINITY : 0, yhi = c->log_y ? -INFINITY : 0;
    for (size_t i = 0; i < c->nseries; i++)
        for (size_t j = 0; j < c->series[i].npoints; j++) {
            const struct chart_point *p = &c->series[i].points[j];
            xlo = fmin(xlo, p->xv);
            xhi = fmax(xhi, p->xv);
            ylo = fmin(ylo, p->yv);
            yhi = fmax(yhi, p->yv);
        }
    struct chart_axis x, y;
    if (c->log_y)
        chart_axis_log2(&y, ylo, yhi);
    else
        chart_axis_linear(&y, ylo, yhi, 0);
    if (c->log_x)
        chart_axis_log2(&x, xlo, xhi);
    else
        chart_axis_linear(&x, xlo, xhi, c->x_integral ? 1 : 0);
    struct frame fr;
    frame_place(&fr, c, &y);
    if (c->kind == CHART_LINE) {
        draw_axes(f, &fr, &x, &y);
        draw_lines(f, c, &fr, &x, &y);
    } else if (c->horizontal) {
        draw_value_axis_h(f, &fr, &y);
        draw_hbars(f, c, &fr, &y);
    } else {
        draw_axes(f, &fr, NULL, &y);
        draw_categories(f, c, &fr);
        draw_bars(f, c, &fr, &y);
    }
    draw_legend(f, c, &fr);
    draw_axis_labels(f, c, &fr, height);
}

char *chart_svg(const json_t *block)
{
    struct chart c;
    chart_read(block, &c);                  /* not a chart: no points, "no data" */
    memtext m;
    FILE *f = memtext_open(&m);
    if (!f) {
        chart_free(&c);
        return NULL;
    }
    int height = svg_height(&c);
    draw_head(f, &c, height);
    if (c.npoints > 0)
        draw_plot(f, &c, height);
    else
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"14\" fill=\"%s\">"
                   "no data</text>\n", WIDTH / 2, HEIGHT / 2, AXIS);
    fputs("</svg>\n", f);
    chart_free(&c);
    return memtext_close(&m);
}
