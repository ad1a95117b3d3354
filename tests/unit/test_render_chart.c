/* test_render_chart.c — unit tests for chart blocks (kernel/render/chart*.c):
 * the exact Vega-Lite spec of small charts, the SVG checked without a parser
 * (tags balanced, text escaped, one path and one marker per point, log2
 * ticks), the textual form, the MIME bundle of chart-only and mixed views,
 * the builders, malformed charts that must degrade, never crash, and a
 * roofline's log-log chart of lines alone and labelled markers alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"

#include "render_helpers.h"

#define VEGALITE "application/vnd.vegalite.v5+json"

/* ---- helpers ---- */

static void expect_dump(const json_t *v, const char *want)
{
    char *got = json_dumps(v, JSON_COMPACT);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* Checks an SVG without parsing it: one <svg> root, every tag closed in
 * order, no '<' or '>' outside a tag (so no text escaped its element), every
 * '&' an entity, no control character XML forbids, valid UTF-8. Fails the
 * test when not. */
static void expect_well_formed(const char *svg)
{
    char stack[16][16];
    int depth = 0, roots = 0;
    assert_non_null(svg);
    assert_true(strncmp(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\" ", 40) == 0);
    assert_string_equal(svg + strlen(svg) - 7, "</svg>\n");
    for (const char *p = svg; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch < 0x20 && ch != '\n' && ch != '\t' && ch != '\r')
            fail_msg("control character %#x in the SVG", ch);
        if (ch == '>')
            fail_msg("'>' outside a tag: %.40s", p);
        if (ch == '&' && strncmp(p, "&amp;", 5) && strncmp(p, "&lt;", 4) && strncmp(p, "&gt;", 4)
            && strncmp(p, "&quot;", 6) && strncmp(p, "&#39;", 5))
            fail_msg("bare '&': %.40s", p);
        if (ch != '<')
            continue;
        const char *end = strchr(p, '>');
        assert_non_null(end);
        if (memchr(p + 1, '<', (size_t)(end - p - 1)))
            fail_msg("'<' inside a tag: %.40s", p);
        int closing = p[1] == '/';
        const char *name = p + 1 + closing;
        size_t n = strcspn(name, " />");
        assert_true(n > 0 && n < sizeof stack[0]);
        if (closing) {
            assert_true(depth > 0);
            depth--;
            if (strncmp(stack[depth], name, n) != 0 || stack[depth][n] != '\0')
                fail_msg("</%.*s> closes <%s>", (int)n, name, stack[depth]);
        } else if (end[-1] != '/') {
            assert_true(depth < 16);
            if (depth == 0)
                roots++;
            memcpy(stack[depth], name, n);
            stack[depth++][n] = '\0';
        }
        p = end;
    }
    assert_int_equal(depth, 0);
    assert_int_equal(roots, 1);
    json_t *utf8 = json_string(svg);         /* jansson takes valid UTF-8 only */
    assert_non_null(utf8);
    json_decref(utf8);
}

/* The texts of the <text> elements in the group that starts with group (the
 * first such group), in order; returns how many, at most max. xs gets each
 * one's x attribute. */
static size_t group_texts(const char *svg, const char *group, char out[][16], double *xs, size_t max)
{
    const char *p = strstr(svg, group);
    const char *end = p ? strstr(p, "</g>") : NULL;
    size_t n = 0;
    while (p && n < max && (p = strstr(p, "<text x=\"")) && p < end) {
        xs[n] = strtod(p + 9, NULL);
        const char *open = strchr(p, '>') + 1, *close = strstr(open, "</text>");
        snprintf(out[n++], 16, "%.*s", (int)(close - open), open);
        p = close;
    }
    return n;
}

static const char *const tiny_line =
    "{\"type\": \"chart\", \"kind\": \"line\", \"title\": \"GFLOP/s by tile\","
    " \"x_label\": \"tile\", \"y_label\": \"GFLOP/s\", \"log_x\": true, \"series\": ["
    " {\"name\": \"naive\", \"points\": [[16, 520.5], [8, 505]]},"
    " {\"name\": \"tiled\", \"points\": [[8, 4800], [16, 7953.25]]}]}";

/* ---- Vega-Lite ---- */

static void test_vegalite_line(void **state)
{
    json_t *chart = parse(tiny_line);
    json_t *spec = chart_vegalite(chart);
    expect_dump(spec,
        "{\"$schema\":\"https://vega.github.io/schema/vega-lite/v5.json\","
        "\"title\":\"GFLOP/s by tile\",\"width\":560,\"height\":280,"
        "\"data\":{\"values\":["
        "{\"series\":\"naive\",\"x\":8,\"y\":505},"
        "{\"series\":\"naive\",\"x\":16,\"y\":520.5},"
        "{\"series\":\"tiled\",\"x\":8,\"y\":4800},"
        "{\"series\":\"tiled\",\"x\":16,\"y\":7953.25}]},"
        "\"mark\":{\"type\":\"line\",\"point\":true},"
        "\"encoding\":{"
        "\"x\":{\"field\":\"x\",\"type\":\"quantitative\",\"title\":\"tile\","
        "\"scale\":{\"type\":\"log\",\"base\":2},\"axis\":{\"tickMinStep\":1,\"format\":\"d\"}},"
        "\"y\":{\"field\":\"y\",\"type\":\"quantitative\",\"title\":\"GFLOP/s\"},"
        "\"color\":{\"field\":\"series\",\"type\":\"nominal\",\"title\":\"series\","
        "\"scale\":{\"domain\":[\"naive\",\"tiled\"],\"range\":[\"#0072B2\",\"#E69F00\"]}},"
        "\"tooltip\":[{\"field\":\"series\",\"type\":\"nominal\"},"
        "{\"field\":\"x\",\"type\":\"quantitative\",\"title\":\"tile\"},"
        "{\"field\":\"y\",\"type\":\"quantitative\",\"title\":\"GFLOP/s\"}]}}");
    json_decref(spec);
    json_decref(chart);
}

static void test_vegalite_bar(void **state)
{
    /* Grouped bars: categories in first-seen order, one offset per series. */
    json_t *chart = parse("{\"type\": \"chart\", \"kind\": \"bar\", \"y_label\": \"GB/s\", \"series\": ["
                          " {\"name\": \"2^20\", \"points\": [[\"shared\", 880], [\"atomics\", 120]]},"
                          " {\"name\": \"2^24\", \"points\": [[\"warp\", 2600.5], [\"shared\", 1300]]}]}");
    json_t *spec = chart_vegalite(chart);
    expect_dump(spec,
        "{\"$schema\":\"https://vega.github.io/schema/vega-lite/v5.json\","
        "\"width\":560,\"height\":280,"
        "\"data\":{\"values\":["
        "{\"series\":\"2^20\",\"x\":\"shared\",\"y\":880},"
        "{\"series\":\"2^20\",\"x\":\"atomics\",\"y\":120},"
        "{\"series\":\"2^24\",\"x\":\"warp\",\"y\":2600.5},"
        "{\"series\":\"2^24\",\"x\":\"shared\",\"y\":1300}]},"
        "\"mark\":{\"type\":\"bar\"},"
        "\"encoding\":{"
        "\"x\":{\"field\":\"x\",\"type\":\"nominal\",\"title\":null,"
        "\"sort\":[\"shared\",\"atomics\",\"warp\"]},"
        "\"y\":{\"field\":\"y\",\"type\":\"quantitative\",\"title\":\"GB/s\"},"
        "\"color\":{\"field\":\"series\",\"type\":\"nominal\",\"title\":\"series\","
        "\"scale\":{\"domain\":[\"2^20\",\"2^24\"],\"range\":[\"#0072B2\",\"#E69F00\"]}},"
        "\"tooltip\":[{\"field\":\"series\",\"type\":\"nominal\"},"
        "{\"field\":\"x\",\"type\":\"nominal\",\"title\":\"x\"},"
        "{\"field\":\"y\",\"type\":\"quantitative\",\"title\":\"GB/s\"}],"
        "\"xOffset\":{\"field\":\"series\",\"type\":\"nominal\",\"sort\":[\"2^20\",\"2^24\"]}}}");
    json_decref(spec);
    json_decref(chart);

    /* One series: no legend, no offset; a linear x does not start at zero. */
    chart = parse("{\"type\": \"chart\", \"kind\": \"line\", \"series\": [{\"points\": [[1024.5, 1.5]]}]}");
    spec = chart_vegalite(chart);
    json_t *enc = json_object_get(spec, "encoding");
    expect_dump(json_object_get(enc, "color"),
        "{\"field\":\"series\",\"type\":\"nominal\",\"title\":\"series\","
        "\"scale\":{\"domain\":[\"\"],\"range\":[\"#0072B2\"]},\"legend\":null}");
    expect_dump(json_object_get(enc, "x"),
        "{\"field\":\"x\",\"type\":\"quantitative\",\"title\":null,\"scale\":{\"zero\":false}}");
    assert_null(json_object_get(enc, "xOffset"));
    assert_null(json_object_get(spec, "title"));
    json_decref(spec);
    json_decref(chart);
}

/* ---- SVG ---- */

static void test_svg_line(void **state)
{
    json_t *chart = parse(tiny_line);
    char *svg = chart_svg(chart);
    expect_well_formed(svg);
    assert_non_null(strstr(svg, " width=\"640\" height=\"360\" viewBox=\"0 0 640 360\""));
    assert_non_null(strstr(svg, "<title>GFLOP/s by tile</title>"));
    assert_non_null(strstr(svg, "<rect width=\"640\" height=\"360\" rx=\"4\" fill=\"#ffffff\"/>"));
    /* one line per series, two points each, a marker with a tooltip per point */
    assert_int_equal(count(svg, "stroke-linejoin=\"round\" d=\"M"), 2);
    assert_int_equal(count(svg, "<path fill=\"none\" stroke=\"#0072B2\""), 1);
    assert_int_equal(count(svg, "<path fill=\"none\" stroke=\"#E69F00\""), 1);
    assert_int_equal(count(svg, " L"), 2);
    assert_int_equal(count(svg, "r=\"4\"><title>"), 4);
    assert_non_null(strstr(svg, "<title>tiled\ntile = 16\nGFLOP/s = 7953</title></circle>"));
    assert_non_null(strstr(svg, "<title>naive\ntile = 8\nGFLOP/s = 505</title></circle>"));
    /* a legend of two entries, axis labels */
    assert_int_equal(count(svg, ">naive</text>"), 1);
    assert_int_equal(count(svg, ">tiled</text>"), 1);
    assert_int_equal(count(svg, ">tile</text>"), 1);
    assert_non_null(strstr(svg, "rotate(-90)\" text-anchor=\"middle\" font-size=\"13\" "
                                "fill=\"#333333\">GFLOP/s</text>"));
    /* round y ticks from zero */
    char labels[16][16];
    double xs[16];
    size_t n = group_texts(svg, "text-anchor=\"end\">", labels, xs, 16);
    assert_int_equal(n, 5);
    const char *want_y[] = { "0", "2000", "4000", "6000", "8000" };
    for (size_t i = 0; i < n; i++)
        assert_string_equal(labels[i], want_y[i]);
    /* the same chart, the same bytes */
    char *again = chart_svg(chart);
    assert_string_equal(svg, again);
    free(again);
    free(svg);
    json_decref(chart);
}

static void test_svg_log2_ticks(void **state)
{
    json_t *view = view_new(NULL);
    json_t *chart = view_add_chart(view, "line", NULL, "tile", "GB/s", 1);
    for (int tile = 2; tile <= 32; tile *= 2)
        view_chart_point(chart, "s", json_integer(tile), 100.0 / tile);
    char *svg = chart_svg(chart);
    expect_well_formed(svg);

    char labels[16][16];
    double xs[16];
    size_t n = group_texts(svg, "text-anchor=\"middle\">", labels, xs, 16);
    const char *want[] = { "2", "4", "8", "16", "32" };
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(labels[i], want[i]);
        if (i > 1)                           /* evenly spaced: a log axis */
            assert_true(fabs((xs[i] - xs[i - 1]) - (xs[1] - xs[0])) < 0.15);
    }
    assert_true(xs[1] - xs[0] > 50);
    assert_int_equal(count(svg, ">s</text>"), 0);     /* one series: no legend */
    free(svg);

    /* A wide range labels every 4th power, all as 2 with a superscript once
     * one of them would be a long number. */
    view_chart_point(chart, "s", json_integer(1), 1);
    view_chart_point(chart, "s", json_integer(1 << 24), 1);
    svg = chart_svg(chart);
    expect_well_formed(svg);
    n = group_texts(svg, "text-anchor=\"middle\">", labels, xs, 16);
    const char *wide[] = { "2\u2070", "2\u2074", "2\u2078", "2\u00b9\u00b2", "2\u00b9\u2076",
                           "2\u00b2\u2070", "2\u00b2\u2074" };
    assert_int_equal(n, 7);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(labels[i], wide[i]);
    free(svg);
    json_decref(view);

    /* Fractions: numbers down to 1/8; a single point gets a power on each side. */
    json_t *small = parse("{\"type\": \"chart\", \"kind\": \"line\", \"log_x\": true, \"series\":"
                          " [{\"name\": \"s\", \"points\": [[0.25, 1], [3, 2]]}]}");
    svg = chart_svg(small);
    n = group_texts(svg, "text-anchor=\"middle\">", labels, xs, 16);
    const char *fractions[] = { "0.25", "0.5", "1", "2", "4" };
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(labels[i], fractions[i]);
    free(svg);
    json_decref(small);
    small = parse("{\"type\": \"chart\", \"kind\": \"line\", \"log_x\": true, \"series\":"
                  " [{\"name\": \"s\", \"points\": [[16, 1]]}]}");
    svg = chart_svg(small);
    n = group_texts(svg, "text-anchor=\"middle\">", labels, xs, 16);
    assert_int_equal(n, 3);
    assert_string_equal(labels[0], "8");
    assert_string_equal(labels[2], "32");
    free(svg);
    json_decref(small);
}

static void test_svg_bars(void **state)
{
    json_t *chart = parse("{\"type\": \"chart\", \"kind\": \"bar\", \"title\": \"GB/s\", \"series\": ["
                          " {\"name\": \"a\", \"points\": [[\"x\", 3], [\"y\", -2]]},"
                          " {\"name\": \"b\", \"points\": [[\"x\", 5]]},"
                          " {\"name\": \"c\", \"points\": [[\"z\", 1]]}]}");
    char *svg = chart_svg(chart);
    expect_well_formed(svg);
    assert_int_equal(count(svg, "\"><title>"), 4);               /* one bar a point */
    assert_int_equal(count(svg, "<g fill=\"#0072B2\">"), 1);
    assert_int_equal(count(svg, "<g fill=\"#E69F00\">"), 1);
    assert_int_equal(count(svg, "<g fill=\"#009E73\">"), 1);
    assert_non_null(strstr(svg, "<title>a\nx = y\ny = -2</title></rect>"));
    /* categories once each, under the bars; legend swatches are squares */
    assert_int_equal(count(svg, ">x</text>"), 1);
    assert_int_equal(count(svg, ">z</text>"), 1);
    assert_int_equal(count(svg, "width=\"12\" height=\"12\""), 3);
    assert_null(strstr(svg, "nan"));
    free(svg);
    json_decref(chart);
}

/* A line over a whole-numbered axis ticks whole numbers: two strides are 1
 * and 2, not 1, 1.2, ..., 2; the Vega-Lite axis says the same. */
static void test_integral_axis(void **state)
{
    static const struct { const char *points; const char *want[8]; size_t n; int integral; } cases[] = {
        { "[[1, 50], [2, 14]]", { "1", "2" }, 2, 1 },
        { "[[1, 50], [2, 14], [3, 9]]", { "1", "2", "3" }, 3, 1 },
        { "[[0.5, 50], [1, 14], [1.5, 9]]", { "0.4", "0.6", "0.8", "1", "1.2", "1.4", "1.6" }, 7, 0 },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[256];
        snprintf(text, sizeof text, "{\"type\": \"chart\", \"kind\": \"line\", \"x_label\": \"stride\","
                 " \"series\": [{\"name\": \"s\", \"points\": %s}]}", cases[k].points);
        json_t *chart = parse(text);
        char *svg = chart_svg(chart);
        expect_well_formed(svg);
        char labels[16][16];
        double xs[16];
        size_t n = group_texts(svg, "text-anchor=\"middle\">", labels, xs, 16);
        assert_int_equal(n, cases[k].n);
        for (size_t i = 0; i < n; i++)
            assert_string_equal(labels[i], cases[k].want[i]);
        json_t *spec = chart_vegalite(chart);
        const json_t *axis = json_object_get(json_object_get(json_object_get(spec, "encoding"), "x"), "axis");
        if (cases[k].integral)
            expect_dump(axis, "{\"tickMinStep\":1,\"format\":\"d\"}");
        else
            assert_null(axis);
        json_decref(spec);
        free(svg);
        json_decref(chart);
    }
}

/* Many bars lie down in a picture only as tall as they need, at most
 * CHART_MAX_PLOT_H of plot; the Vega-Lite spec turns the same way. */
static void test_many_bars_horizontal(void **state)
{
    static const struct { int bars; int height; } cases[] = {
        { 8, 360 },                         /* few: upright, the usual picture */
        { 16, 16 + 16 * 14 + 32 + 20 },     /* top, a row a bar, ticks, the value axis's title */
        { 40, 16 + 280 + 32 + 20 },         /* capped: thinner bars, not a taller picture */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        json_t *view = view_new(NULL);
        json_t *c = view_add_chart(view, "bar", NULL, "variant", "GB/s", 0);
        for (int i = 0; i < cases[k].bars; i++) {
            char name[32];
            snprintf(name, sizeof name, "v%d", i);
            view_chart_point(c, "GB/s", json_string(name), 100 + i);
        }
        char *svg = chart_svg(c);
        expect_well_formed(svg);
        char want[96];
        snprintf(want, sizeof want, " width=\"640\" height=\"%d\" viewBox=\"0 0 640 %d\"", cases[k].height,
                 cases[k].height);
        if (!strstr(svg, want))
            fail_msg("%d bars: want%s in\n%.300s", cases[k].bars, want, svg);
        assert_int_equal(count(svg, "\"><title>"), cases[k].bars);
        json_t *spec = chart_vegalite(c);
        const json_t *enc = json_object_get(spec, "encoding");
        int horizontal = cases[k].bars > 8;
        assert_string_equal(json_string_value(json_object_get(json_object_get(enc, horizontal ? "y" : "x"), "type")),
                            "nominal");
        assert_string_equal(json_string_value(json_object_get(json_object_get(enc, horizontal ? "x" : "y"), "type")),
                            "quantitative");
        const json_t *height = json_object_get(spec, "height");
        if (cases[k].bars == 16)
            expect_dump(height, "{\"step\":14}");
        else
            assert_int_equal(json_integer_value(height), 280);
        json_decref(spec);
        free(svg);
        json_decref(view);
    }
}

static void test_svg_escapes(void **state)
{
    const char *evil = "</text><script>alert(\"x\")</script> & 'y'\x01";
    const char *safe = "&lt;/text&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39; ";

    json_t *view = view_new(NULL);
    json_t *line = view_add_chart(view, "line", evil, evil, evil, 0);
    view_chart_point(line, evil, json_integer(1), 1);
    view_chart_point(line, "other", json_integer(2), 2);
    json_t *bar = view_add_chart(view, "bar", NULL, NULL, NULL, 0);
    view_chart_point(bar, evil, json_string(evil), 1);

    char *svg = chart_svg(line);
    expect_well_formed(svg);
    assert_null(strstr(svg, "<script"));
    /* whole: the svg's title, the title, the x label, and in the tooltips the
     * series once and both labels twice; cut at the end to fit: the y label */
    assert_int_equal(count(svg, safe), 8);
    assert_int_equal(count(svg, "&lt;/text&gt;&lt;script&gt;al"), 9);
    assert_int_equal(count(svg, ">&lt;/text&gt;&lt;scr\u2026"), 1);     /* the legend, cut */
    free(svg);

    svg = chart_svg(bar);
    expect_well_formed(svg);
    assert_null(strstr(svg, "<script"));
    assert_int_equal(count(svg, safe), 3);   /* the category; the tooltip's series and x */
    free(svg);

    char *html = render_html(view);
    assert_null(strstr(html, "<script"));
    assert_int_equal(count(html, "<svg "), 2);
    free(html);
    json_decref(view);
}

/* A bar chart of n bars named "variant number i, tile 2^i" added to view, drawn (and well-formed). */
static char *long_named_bars(json_t *view, int n)
{
    json_t *c = view_add_chart(view, "bar", NULL, NULL, NULL, 0);
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "variant number %d, tile %d", i, 1 << i);
        view_chart_point(c, "GB/s", json_string(name), i);
    }
    char *svg = chart_svg(c);
    expect_well_formed(svg);
    return svg;
}

static void test_svg_long_names(void **state)
{
    /* Cut to fit on whole characters, an ellipsis for what is left out: in the
     * middle of names, at the end of titles; tooltips keep them whole. */
    char mu[2 * 30 + 1] = "", times[2 * 100 + 1] = "";
    for (int i = 0; i < 30; i++)
        strcat(mu, "\u00b5");
    for (int i = 0; i < 100; i++)
        strcat(times, "\u00d7");
    json_t *view = view_new(NULL);
    json_t *c = view_add_chart(view, "line", times, NULL, NULL, 0);
    view_chart_point(c, mu, json_integer(1), 1);
    view_chart_point(c, "b", json_integer(2), 2);
    char *svg = chart_svg(c);
    expect_well_formed(svg);
    char want[256];
    snprintf(want, sizeof want, ">%.*s\u2026%.*s</text>", 11 * 2, mu, 12 * 2, mu);  /* legend: 24 */
    assert_int_equal(count(svg, want), 1);
    snprintf(want, sizeof want, ">%.*s\u2026</text>", 71 * 2, times);   /* title: 72 */
    assert_int_equal(count(svg, want), 1);
    snprintf(want, sizeof want, "<title>%s\n", mu);
    assert_int_equal(count(svg, want), 1);
    free(svg);

    /* Bar categories too long for their band are slanted and cut. */
    svg = long_named_bars(view, 8);
    assert_int_equal(count(svg, " rotate(-35)\">variant\u2026"), 8);    /* 7 + 1 + 8 */
    assert_int_equal(count(svg, ">variant\u2026, tile 1</text>"), 1);
    assert_int_equal(count(svg, ">variant\u2026tile 128</text>"), 1);
    free(svg);

    /* More bars lie down: each label beside its bar, cut to 24 characters. */
    svg = long_named_bars(view, 12);
    assert_int_equal(count(svg, "rotate(-35)"), 0);
    assert_int_equal(count(svg, ">variant number 0, tile 1</text>"), 1);
    assert_int_equal(count(svg, ">variant num\u20261, tile 2048</text>"), 1);
    free(svg);
    json_decref(view);
}

static void test_svg_no_data(void **state)
{
    const char *empty[] = {
        "{\"type\": \"chart\", \"kind\": \"line\", \"title\": \"nothing yet\"}",
        "{\"type\": \"chart\", \"kind\": \"bar\", \"series\": [{\"name\": \"a\", \"points\": []}]}",
        "{\"type\": \"chart\", \"kind\": \"pie\", \"series\": [{\"points\": [[1, 2]]}]}",
        "{}", "[]", "null",
    };
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
        json_t *chart = parse(empty[i]);
        char *svg = chart_svg(chart);
        expect_well_formed(svg);
        assert_int_equal(count(svg, ">no data</text>"), 1);
        assert_null(strstr(svg, "<circle"));
        free(svg);
        json_t *spec = chart_vegalite(chart);
        assert_int_equal(json_array_size(json_object_get(json_object_get(spec, "data"), "values")), 0);
        assert_non_null(json_object_get(spec, "$schema"));
        json_decref(spec);
        json_decref(chart);
    }
    char *svg = chart_svg(NULL);
    expect_well_formed(svg);
    assert_non_null(strstr(svg, ">no data</text>"));
    free(svg);
    json_decref(chart_vegalite(NULL));
}

/* ---- text and bundles ---- */

static void test_text_form(void **state)
{
    json_t *view = view_new("matmul");
    view_add_note(view, "backend: cpu");
    json_t *chart = parse(tiny_line);
    json_array_append_new(json_object_get(view, "blocks"), chart);
    json_t *one = view_add_chart(view, "bar", NULL, NULL, "ms", 0);
    view_chart_point(one, "only", json_string("naive"), 2.5);
    view_add_chart(view, "line", "empty", NULL, NULL, 0);

    char *text = render_text(view);
    assert_string_equal(text,
        "matmul\n"
        "note: backend: cpu\n"
        "\n"
        "GFLOP/s by tile\n"
        "series  tile  GFLOP/s\n"
        "------  ----  -------\n"
        "naive      8      505\n"
        "naive     16    520.5\n"
        "tiled      8     4800\n"
        "tiled     16     7953\n"
        "\n"
        "x       ms\n"
        "-----  ---\n"
        "naive  2.5\n"
        "\n"
        "empty\n"
        "(no data)\n");
    free(text);
    json_decref(view);
}

static void test_bundle_chart_only(void **state)
{
    json_t *view = view_new(NULL);
    json_array_append_new(json_object_get(view, "blocks"), parse(tiny_line));
    const json_t *chart = json_array_get(json_object_get(view, "blocks"), 0);

    json_t *bundle = render_bundle(NULL, view);
    assert_non_null(bundle);
    assert_int_equal(json_object_size(bundle), 3);
    assert_null(json_object_get(bundle, "text/html"));
    char *text = render_text(view);
    assert_string_equal(json_string_value(json_object_get(bundle, "text/plain")), text);
    assert_true(strncmp(text, "GFLOP/s by tile\nseries  tile  GFLOP/s\n", 38) == 0);
    free(text);
    char *svg = chart_svg(chart);
    assert_string_equal(json_string_value(json_object_get(bundle, "image/svg+xml")), svg);
    free(svg);
    json_t *spec = chart_vegalite(chart);
    assert_true(json_equal(json_object_get(bundle, VEGALITE), spec));
    json_decref(spec);
    json_decref(bundle);

    /* with a document, and with a view title: still a picture */
    json_object_set_new(view, "title", json_string("sweep"));
    json_t *doc = parse("{\"magic\": \"matmul\"}");
    bundle = render_bundle(doc, view);
    assert_int_equal(json_object_size(bundle), 4);
    assert_true(json_equal(json_object_get(bundle, RESULT_MIME), doc));
    assert_null(json_object_get(bundle, "text/html"));
    assert_true(strncmp(json_string_value(json_object_get(bundle, "text/plain")),
                        "sweep\n\nGFLOP/s by tile\n", 23) == 0);
    json_decref(bundle);
    json_decref(doc);

    /* an empty chart alone is still a chart: "no data" */
    json_decref(view);
    view = view_new(NULL);
    view_add_chart(view, "bar", "t", NULL, NULL, 0);
    bundle = render_bundle(NULL, view);
    assert_int_equal(json_object_size(bundle), 3);
    assert_non_null(strstr(json_string_value(json_object_get(bundle, "image/svg+xml")), "no data"));
    assert_string_equal(json_string_value(json_object_get(bundle, "text/plain")), "t\n(no data)\n");
    json_decref(bundle);
    json_decref(view);
}

static void test_bundle_mixed(void **state)
{
    /* a table and a chart: a page, the chart inline as SVG */
    json_t *view = view_new("sweep");
    json_t *t = view_add_table(view, NULL, json_pack("[s]", "GFLOP/s"));
    view_table_row(t, json_pack("[i]", 7953));
    json_array_append_new(json_object_get(view, "blocks"), parse(tiny_line));
    json_t *bundle = render_bundle(NULL, view);
    assert_int_equal(json_object_size(bundle), 2);
    assert_null(json_object_get(bundle, "image/svg+xml"));
    assert_null(json_object_get(bundle, VEGALITE));
    const char *html = json_string_value(json_object_get(bundle, "text/html"));
    assert_int_equal(count(html, "<div class=\"cudalab-chart\" style=\"margin:0.4em 0\"><svg xmlns="), 1);
    assert_int_equal(count(html, "</svg>\n</div>\n"), 1);
    assert_int_equal(count(html, "<table "), 1);
    assert_non_null(strstr(json_string_value(json_object_get(bundle, "text/plain")),
                           "\n\nGFLOP/s by tile\nseries  tile  GFLOP/s\n"));
    json_decref(bundle);
    json_decref(view);

    /* two charts: a page too (one bundle holds one picture) */
    view = view_new(NULL);
    json_array_append_new(json_object_get(view, "blocks"), parse(tiny_line));
    json_array_append_new(json_object_get(view, "blocks"), parse(tiny_line));
    bundle = render_bundle(NULL, view);
    assert_int_equal(count(json_string_value(json_object_get(bundle, "text/html")), "<svg "), 2);
    assert_null(json_object_get(bundle, "image/svg+xml"));
    json_decref(bundle);
    json_decref(view);

    /* a chart of no known kind is left out like any broken block */
    view = parse("{\"blocks\": [{\"type\": \"chart\", \"series\": [{\"points\": [[1, 2]]}]}]}");
    bundle = render_bundle(NULL, view);
    assert_int_equal(json_object_size(bundle), 2);
    assert_string_equal(json_string_value(json_object_get(bundle, "text/plain")), "");
    assert_null(strstr(json_string_value(json_object_get(bundle, "text/html")), "<svg"));
    json_decref(bundle);
    json_decref(view);
}

/* ---- builders ---- */

static void test_builders(void **state)
{
    json_t *view = view_new(NULL);
    json_t *c = view_add_chart(view, "line", "t", "x", NULL, 1);
    assert_non_null(c);
    view_chart_point(c, "a", json_integer(8), 1.5);
    view_chart_point(c, "b", json_integer(8), 2);
    view_chart_point(c, "a", json_integer(16), 3);
    view_chart_point(c, "a", json_integer(32), NAN);        /* dropped, x released */
    view_chart_point(c, "a", json_integer(32), INFINITY);
    view_chart_point(c, NULL, json_integer(1), 1);
    view_chart_point(c, "a", NULL, 1);
    view_chart_point(c, "caf\xe9", json_integer(1), 1);     /* not UTF-8: '?' */
    json_t *bar = view_add_chart(view, "bar", NULL, NULL, NULL, 0);
    view_chart_point(bar, "GB/s", json_string("shared"), 880);
    expect_dump(view,
        "{\"blocks\":["
        "{\"type\":\"chart\",\"kind\":\"line\",\"title\":\"t\",\"x_label\":\"x\",\"log_x\":true,"
        "\"series\":[{\"name\":\"a\",\"points\":[[8,1.5],[16,3.0]]},"
        "{\"name\":\"b\",\"points\":[[8,2.0]]},"
        "{\"name\":\"caf?\",\"points\":[[1,1.0]]}]},"
        "{\"type\":\"chart\",\"kind\":\"bar\",\"log_x\":false,"
        "\"series\":[{\"name\":\"GB/s\",\"points\":[[\"shared\",880.0]]}]}]}");
    json_decref(view);
}

static void test_builders_on_bad_input(void **state)
{
    /* Stolen x is released wherever the point cannot go: ASan and valgrind
     * report a leak here if not. */
    json_t *view = view_new(NULL);
    assert_null(view_add_chart(view, "pie", "t", NULL, NULL, 0));
    assert_null(view_add_chart(view, NULL, "t", NULL, NULL, 0));
    assert_null(view_add_chart(NULL, "line", "t", NULL, NULL, 0));
    json_t *not_view = json_array();
    assert_null(view_add_chart(not_view, "line", "t", NULL, NULL, 0));
    assert_int_equal(json_array_size(json_object_get(view, "blocks")), 0);

    json_t *table = view_add_table(view, NULL, NULL);
    view_chart_point(NULL, "a", json_integer(1), 1);
    view_chart_point(not_view, "a", json_integer(1), 1);
    view_chart_point(table, "a", json_string("x"), 1);       /* a table has no series */
    expect_dump(view, "{\"blocks\":[{\"type\":\"table\",\"rows\":[]}]}");
    assert_int_equal(json_array_size(not_view), 0);
    json_decref(not_view);
    json_decref(view);
}

/* ---- malformed charts ---- */

static void test_malformed(void **state)
{
    /* Each keeps the points that are right and only those: want[i] points. */
    static const struct { const char *json; size_t points; } cases[] = {
        { "{\"type\": \"chart\", \"kind\": \"line\", \"series\": 5}", 0 },
        { "{\"type\": \"chart\", \"kind\": \"line\", \"series\": [5, null, {\"points\": 3},"
          " {\"name\": 7, \"points\": [[1, 2]]}]}", 1 },
        { "{\"type\": \"chart\", \"kind\": \"line\", \"series\": [{\"name\": \"a\", \"points\":"
          " [[1], [\"1\", 2], [1, \"2\"], [1, null], [true, 2], {}, 7, [], [[1], 2], [3, 4, 5], [6, 7]]}]}", 2 },
        { "{\"type\": \"chart\", \"kind\": \"line\", \"log_x\": true, \"series\": [{\"name\": \"a\","
          " \"points\": [[0, 1], [-4, 2], [0.5, 3], [4, 4]]}]}", 2 },
        { "{\"type\": \"chart\", \"kind\": \"bar\", \"series\": [{\"name\": \"a\","
          " \"points\": [[1, 2], [\"ok\", 3], [null, 4], [\"\", 5]]}]}", 2 },
        { "{\"type\": \"chart\", \"kind\": \"line\", \"series\": [{\"name\": \"a\","
          " \"points\": [[-1e308, -1e308], [1e308, 1e308]]}]}", 2 },
        { "{\"type\": \"chart\", \"kind\": \"line\", \"series\": [{\"name\": \"a\","
          " \"points\": [[5, 0], [5, 0], [5, 0]]}]}", 3 },
        { "{\"type\": \"chart\", \"kind\": \"line\", \"series\": [{\"name\": \"a\","
          " \"points\": [[1e-300, 4e-320], [2e-300, 5e-324]]}]}", 2 },
        { "{\"type\": \"chart\", \"kind\": \"bar\", \"series\": [{\"name\": \"a\", \"points\": [[\"n\", -5]]},"
          " {\"name\": \"a\", \"points\": [[\"m\", -7]]}]}", 2 },
        { "{\"type\": \"chart\", \"kind\": \"line\", \"log_x\": \"yes\", \"title\": [], \"x_label\": 5,"
          " \"series\": [{\"name\": \"\", \"points\": [[0, 1]]}]}", 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *chart = parse(cases[i].json);
        char *svg = chart_svg(chart);
        expect_well_formed(svg);
        assert_null(strstr(svg, "nan"));
        assert_null(strstr(svg, "inf"));
        json_t *spec = chart_vegalite(chart);
        size_t got = json_array_size(json_object_get(json_object_get(spec, "data"), "values"));
        if (got != cases[i].points)
            fail_msg("case %zu: %zu points, want %zu", i, got, cases[i].points);
        if (got > 0)
            assert_int_equal(count(svg, "><title>"), got);
        free(svg);
        json_decref(spec);

        json_t *view = view_new(NULL);
        json_array_append(json_object_get(view, "blocks"), chart);
        json_t *bundle = render_bundle(NULL, view);
        assert_non_null(json_object_get(bundle, "image/svg+xml"));
        json_decref(bundle);
        json_decref(view);
        json_decref(chart);
    }
}

static void test_too_many_points(void **state)
{
    json_t *view = view_new(NULL);
    json_t *c = view_add_chart(view, "line", NULL, NULL, NULL, 0);
    for (int i = 0; i < 10050; i++)
        view_chart_point(c, i % 2 ? "odd" : "even", json_integer(i), i);
    json_t *spec = chart_vegalite(c);
    assert_int_equal(json_array_size(json_object_get(json_object_get(spec, "data"), "values")), 10000);
    json_decref(spec);
    char *svg = chart_svg(c);
    expect_well_formed(svg);
    assert_int_equal(count(svg, "r=\"4\"><title>"), 10000);
    free(svg);
    json_decref(view);
}

/* ---- log-log, marks and labels (a roofline) ---- */

/* Two roofs drawn as lines alone, runs as labelled markers alone, both axes log2. */
static json_t *tiny_roofline(json_t *view)
{
    json_t *c = view_add_chart(view, "line", "Roofline", "FLOP/byte", "GFLOP/s", VIEW_LOG_X | VIEW_LOG_Y);
    view_chart_series(c, "memory roof", "line");
    view_chart_point(c, "memory roof", json_real(0.125), 4);
    view_chart_point(c, "memory roof", json_real(2), 64);
    view_chart_series(c, "compute roof", "line");
    view_chart_point(c, "compute roof", json_real(2), 64);
    view_chart_point(c, "compute roof", json_real(16), 64);
    view_chart_series(c, "model", "point");
    view_chart_labelled_point(c, "model", json_real(0.25), 6, "naive");
    view_chart_labelled_point(c, "model", json_real(4), 40, "tiled, <16>");
    return c;
}

static void test_roofline_chart(void **state)
{
    json_t *view = view_new(NULL);
    json_t *c = tiny_roofline(view);
    expect_dump(c,
        "{\"type\":\"chart\",\"kind\":\"line\",\"title\":\"Roofline\",\"x_label\":\"FLOP/byte\","
        "\"y_label\":\"GFLOP/s\",\"log_x\":true,\"log_y\":true,\"series\":["
        "{\"name\":\"memory roof\",\"points\":[[0.125,4.0],[2.0,64.0]],\"mark\":\"line\"},"
        "{\"name\":\"compute roof\",\"points\":[[2.0,64.0],[16.0,64.0]],\"mark\":\"line\"},"
        "{\"name\":\"model\",\"points\":[[0.25,6.0,\"naive\"],[4.0,40.0,\"tiled, <16>\"]],\"mark\":\"point\"}]}");

    /* the SVG: a path per roof and no marker on it, a marker per run and no path through them,
     * each run's label beside it (escaped), y ticks powers of two (no zero line) */
    char *svg = chart_svg(c);
    expect_well_formed(svg);
    assert_int_equal(count(svg, "stroke-linejoin=\"round\" d=\"M"), 2);
    assert_int_equal(count(svg, "r=\"4\"><title>"), 2);
    assert_non_null(strstr(svg, "<title>model\nnaive\nFLOP/byte = 0.25\nGFLOP/s = 6</title></circle>"));
    assert_non_null(strstr(svg, ">naive</text>"));
    assert_non_null(strstr(svg, ">tiled, &lt;16&gt;</text>"));
    char labels[16][16];
    double xs[16];
    size_t n = group_texts(svg, "text-anchor=\"end\">", labels, xs, 16);
    const char *want_y[] = { "4", "8", "16", "32", "64" };
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(labels[i], want_y[i]);
    /* the legend: lines alone for the roofs, a marker alone for the runs */
    assert_int_equal(count(svg, " h18\"/>\n"), 2);
    assert_int_equal(count(svg, " r=\"4\" fill=\"#009E73\"/>\n"), 1);
    free(svg);

    /* Vega-Lite: the same, as layers: lines, markers with tooltips, labels */
    json_t *spec = chart_vegalite(c);
    assert_null(json_object_get(spec, "mark"));
    expect_dump(json_object_get(json_object_get(spec, "encoding"), "y"),
                "{\"field\":\"y\",\"type\":\"quantitative\",\"title\":\"GFLOP/s\",\"scale\":{\"type\":\"log\",\"base\":2}}");
    json_t *values = json_object_get(json_object_get(spec, "data"), "values");
    assert_int_equal(json_array_size(values), 6);
    expect_dump(json_array_get(values, 0), "{\"series\":\"memory roof\",\"x\":0.125,\"y\":4.0,\"mark\":\"line\"}");
    expect_dump(json_array_get(values, 4),
                "{\"series\":\"model\",\"x\":0.25,\"y\":6.0,\"mark\":\"point\",\"label\":\"naive\"}");
    json_t *layers = json_object_get(spec, "layer");
    assert_int_equal(json_array_size(layers), 3);
    expect_dump(json_object_get(json_array_get(layers, 0), "transform"),
                "[{\"filter\":{\"field\":\"mark\",\"oneOf\":[\"line\",\"both\"]}}]");
    assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(layers, 2), "mark"), "type")),
                        "text");
    json_decref(spec);

    /* the textual form names each run */
    char *text = render_text(view);
    assert_non_null(strstr(text, "series        FLOP/byte  GFLOP/s  label\n"));
    assert_non_null(strstr(text, "model              0.25        6  naive\n"));
    free(text);
    json_decref(view);

    /* y <= 0 has no place on a log axis: skipped, as x <= 0 on one */
    json_t *bad = parse("{\"type\": \"chart\", \"kind\": \"line\", \"log_y\": true, \"series\":"
                        " [{\"name\": \"s\", \"mark\": \"blob\", \"points\": [[1, 0], [2, -1], [3, 2, 7]]}]}");
    spec = chart_vegalite(bad);
    expect_dump(json_object_get(json_object_get(spec, "data"), "values"), "[{\"series\":\"s\",\"x\":3,\"y\":2}]");
    json_decref(spec);
    json_decref(bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vegalite_line),
        cmocka_unit_test(test_vegalite_bar),
        cmocka_unit_test(test_svg_line),
        cmocka_unit_test(test_svg_log2_ticks),
        cmocka_unit_test(test_svg_bars),
        cmocka_unit_test(test_integral_axis),
        cmocka_unit_test(test_many_bars_horizontal),
        cmocka_unit_test(test_svg_escapes),
        cmocka_unit_test(test_svg_long_names),
        cmocka_unit_test(test_svg_no_data),
        cmocka_unit_test(test_text_form),
        cmocka_unit_test(test_bundle_chart_only),
        cmocka_unit_test(test_bundle_mixed),
        cmocka_unit_test(test_builders),
        cmocka_unit_test(test_builders_on_bad_input),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_too_many_points),
        cmocka_unit_test(test_roofline_chart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
