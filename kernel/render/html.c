/* html.c — lays out a view (schema in render.h) as text/html: the same
 * blocks as text/plain, every string escaped; tables and notes take their
 * colours from the notebook's theme.
 *
 * A chart is drawn inline as its SVG (chart_svg), so that a view mixing tables
 * and charts stays one output; a view of one chart alone gets no HTML at all
 * (render_bundle), so that JupyterLab shows the interactive Vega-Lite chart.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memtext.h"
#include "render/render.h"
#include "render/chart.h"
#include "render/layout.h"

static void html_put(FILE *f, const char *s)
{
    layout_escape(f, s, 0);
}

static const char *html_align(int right)
{
    return right ? " style=\"text-align:right\"" : " style=\"text-align:left\"";
}

/* ---- tables ---- */

static void html_row(FILE *f, const json_t *row, const int *right, size_t ncols, int header)
{
    const char *tag = header ? "th" : "td";
    fputs("<tr>", f);
    for (size_t j = 0; j < ncols; j++) {
        struct cell c;
        layout_cell_open(&c, json_array_get(row, j));
        int r = header || c.align == ALIGN_COLUMN ? right[j] : c.align == ALIGN_RIGHT;
        fprintf(f, "<%s%s>", tag, html_align(r));
        html_put(f, c.s);
        fprintf(f, "</%s>", tag);
        layout_cell_done(&c);
    }
    fputs("</tr>", f);
}

static void html_table_body(FILE *f, const struct table *t, int *right)
{
    for (size_t j = 0; j < t->ncols; j++)
        right[j] = layout_column_right(t, j);
    if (t->columns) {
        fputs("<thead>", f);
        html_row(f, t->columns, right, t->ncols, 1);
        fputs("</thead>\n", f);
    }
    fputs("<tbody>\n", f);
    for (size_t i = 0; i < layout_table_shown(t); i++) {
        if (i == t->head && t->tail > 0) {
            char msg[128];
            layout_hidden_message(t, msg, sizeof msg);
            fprintf(f, "<tr><td colspan=\"%zu\" style=\"text-align:center;font-style:italic\">",
                    t->ncols);
            html_put(f, msg);
            fputs("</td></tr>\n", f);
        }
        const json_t *row = layout_table_row(t, i);
        if (row) {
            html_row(f, row, right, t->ncols, 0);
            fputc('\n', f);
        }
    }
    fputs("</tbody>\n", f);
}

static void html_table(FILE *f, const json_t *block)
{
    struct table t;
    layout_table_open(block, &t);
    if (!t.title && t.ncols == 0)
        return;
    fputs("<table class=\"cudalab-table\" style=\"border-collapse:collapse;"
          "font-variant-numeric:tabular-nums;margin:0.4em 0\">\n", f);
    if (t.title) {
        fputs("<caption style=\"caption-side:top;text-align:left;font-weight:bold;"
              "color:inherit\">", f);
        html_put(f, t.title);
        fputs("</caption>\n", f);
    }
    int *right = t.ncols ? calloc(t.ncols, sizeof *right) : NULL;
    if (right)
        html_table_body(f, &t, right);
    free(right);
    fputs("</table>\n", f);
}

/* ---- blocks ---- */

static void html_chart(FILE *f, const json_t *block)
{
    if (!chart_shown(block))
        return;
    char *svg = chart_svg(block);
    if (!svg)
        return;
    fputs("<div class=\"cudalab-chart\" style=\"margin:0.4em 0\">", f);
    fputs(svg, f);
    fputs("</div>\n", f);
    free(svg);
}

static void html_block(FILE *f, const json_t *block)
{
    const char *type = json_string_value(json_object_get(block, "type"));
    const char *text = json_string_value(json_object_get(block, "text"));
    if (!type)
        return;
    if (strcmp(type, "table") == 0) {
        html_table(f, block);
    } else if (strcmp(type, "chart") == 0) {
        html_chart(f, block);
    } else if (strcmp(type, "note") == 0 && text) {
        fputs("<p class=\"cudalab-note\" style=\"margin:0.2em 0;font-style:italic;"
              "white-space:pre-wrap\">", f);
        html_put(f, text);
        fputs("</p>\n", f);
    } else if (strcmp(type, "text") == 0 && layout_text_shown(text)) {
        fputs("<pre style=\"margin:0.4em 0\">", f);
        html_put(f, text);
        fputs("</pre>\n", f);
    } else if (strcmp(type, "code") == 0 && text) {
        fputs("<pre class=\"cudalab-code\" style=\"margin:0.4em 0;line-height:1.35\"><code>", f);
        highlight_code(f, text);
        fputs("</code></pre>\n", f);
    }
}

char *render_html(const json_t *view)
{
    memtext m;
    FILE *f = memtext_open(&m);
    if (!f)
        return NULL;

    fputs("<div class=\"cudalab-result\">\n", f);
    const char *title = json_string_value(json_object_get(view, "title"));
    if (title && *title) {
        fputs("<h4 style=\"margin:0.3em 0\">", f);
        html_put(f, title);
        fputs("</h4>\n", f);
    }
    const json_t *blocks = json_object_get(view, "blocks");
    for (size_t i = 0; i < json_array_size(blocks); i++)
        html_block(f, json_array_get(blocks, i));
    fputs("</div>\n", f);
    return memtext_close(&m);
}
