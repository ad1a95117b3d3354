/* render.c — the renderer's front door: the MIME bundle a magic publishes, and
 * how a number cell is written.
 *
 * The layout itself lives beside this file: layout.c (cells, tables, numbers,
 * escaping, shared by every output), plain.c (text/plain), html.c (text/html),
 * chart.c and chart_svg.c (chart blocks as a table, Vega-Lite and SVG).
 */
#include <stdio.h>
#include <stdlib.h>

#include "render/render.h"
#include "render/chart.h"
#include "render/layout.h"

void render_number(const json_t *cell, char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    buf[0] = '\0';
    if (json_is_integer(cell))
        snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(cell));
    else if (json_is_real(cell))
        layout_real(json_real_value(cell), buf, len);
}

/* The chart block of a view that holds one chart and nothing else, or NULL.
 * Such a view is published as a picture rather than as a page. */
static const json_t *only_chart(const json_t *view)
{
    const json_t *blocks = json_object_get(view, "blocks");
    const json_t *block = json_array_get(blocks, 0);
    if (json_array_size(blocks) != 1 || !chart_shown(block))
        return NULL;
    return block;
}

/* Sets key to a string value that takes over s (freed here); -1 when s is NULL. */
static int set_text(json_t *bundle, const char *key, char *s)
{
    int rc = s ? json_object_set_new(bundle, key, json_string(s)) : -1;
    free(s);
    return rc;
}

/* A chart alone: text/plain, image/svg+xml and Vega-Lite, no text/html. A
 * client picks the richest it can show: JupyterLab the interactive Vega-Lite
 * chart, nbconvert and the classic notebook the SVG, a terminal the table.
 * With text/html present, those would all pick the HTML instead. */
static int fill_chart(json_t *bundle, const json_t *view, const json_t *chart)
{
    return set_text(bundle, "text/plain", render_text(view))
        || set_text(bundle, "image/svg+xml", chart_svg(chart))
        || json_object_set_new(bundle, "application/vnd.vegalite.v5+json", chart_vegalite(chart));
}

static int fill_page(json_t *bundle, const json_t *view)
{
    return set_text(bundle, "text/plain", render_text(view))
        || set_text(bundle, "text/html", render_html(view));
}

json_t *render_bundle(const json_t *doc, const json_t *view)
{
    json_t *bundle = json_object();
    if (!bundle)
        return NULL;
    const json_t *chart = only_chart(view);
    int failed = (chart ? fill_chart(bundle, view, chart) : fill_page(bundle, view))
        || (doc && json_object_set_new(bundle, RESULT_MIME, json_deep_copy(doc)));
    if (failed) {
        json_decref(bundle);
        return NULL;
    }
    return bundle;
}
