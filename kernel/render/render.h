/* render.h — turns a command's result into a Jupyter MIME bundle.
 *
 * A command produces two JSON values: the document (stable names and units,
 * read by notebooks and autograders) and a view (how to show it). The document
 * travels as RESULT_MIME, not application/json: JupyterLab ranks its JSON
 * viewer above HTML, so an application/json entry would replace every table
 * with a JSON tree; a vendor +json type is still stored as JSON by nbformat
 * and read back as JSON by nbclient and nbgrader. The renderer never looks inside the document; it only lays
 * out the view, so every magic gets the same tables in text and HTML.
 *
 * View schema:
 *   {"title": "text",                                   optional
 *    "blocks": [                                        shown in order
 *      {"type": "note",  "text": "line"},               a remark or warning
 *      {"type": "text",  "text": "preformatted lines"},
 *      {"type": "code",  "text": "source", "language": "cuda" | "c"},   as text, verbatim;
 *                                                       in HTML syntax-highlighted
 *      {"type": "table", "title": "optional caption",
 *       "columns": ["name", ...],                       omitted = no header row
 *       "rows": [[cell, ...], ...]}                     cell: string, integer, real, bool or null
 *      {"type": "chart", "kind": "line" | "bar",
 *       "title": "GFLOP/s by tile", "x_label": "tile", "y_label": "GFLOP/s",   each optional
 *       "log_x": false,                                 line: x on a log2 axis
 *       "log_y": false,                                 line, optional: y on a log2 axis
 *       "series": [{"name": "tiled", "points": [[x, y], ...],
 *                   "mark": "line" | "point"}, ...]}    line, optional: the line alone (a bound)
 *    ]}                                                 or the markers alone; absent: both
 *                                                       line: x a number, [x, y, "label"] draws
 *                                                       the label beside the marker; bar: x a
 *                                                       category (a string), several series =
 *                                                       grouped bars
 * Numbers are right-aligned, text left-aligned. text/plain is deterministic:
 * the same view always gives the same bytes.
 *
 * A view may carry "next_input": "text": not shown, it is the text a frontend
 * puts in the next input cell (the shell's set_next_input payload).
 *
 * A chart is shown in text/plain as its title and a table of series (when
 * there are several), x and y, and in text/html as an inline SVG. A view of one
 * chart block and nothing else is published as a picture instead: text/plain,
 * image/svg+xml and application/vnd.vegalite.v5+json, and no text/html, so that
 * JupyterLab shows the interactive chart and nbconvert the SVG. Points that are
 * not [x, y] of the right types are skipped (so is x or y <= 0 on a log2 axis), series
 * of the same name are one; a chart block without a known kind is left out.
 */
#ifndef CUDALAB_RENDER_H
#define CUDALAB_RENDER_H

#include <jansson.h>
#include <stdio.h>

#define RESULT_MIME "application/vnd.cudalab.result+json"

/* {"text/plain": ..., "text/html": ..., RESULT_MIME: doc}, or for a view
 * of one chart {"text/plain", "image/svg+xml", "application/vnd.vegalite.v5+json",
 * RESULT_MIME}. New reference; doc and view are borrowed. doc may be
 * NULL (then no RESULT_MIME). */
json_t *render_bundle(const json_t *doc, const json_t *view);

/* Each returns a malloc'd NUL-terminated string; the caller frees it. */
char *render_text(const json_t *view);
char *render_html(const json_t *view);

/* A chart block (borrowed) as a self-contained, deterministic SVG 640 wide
 * and 360 tall, or only as tall as its bars where many are drawn
 * horizontally (malloc'd; the caller frees it; a "no data" picture when the chart has no
 * point or is no chart), and as a Vega-Lite v5 spec with its data inline (new
 * reference; NULL only when memory runs out). */
char *chart_svg(const json_t *chart);
json_t *chart_vegalite(const json_t *chart);

/* C or CUDA C source as HTML (highlight.c): every byte escaped, comments,
 * strings, numbers, preprocessor lines, keywords, types and CUDA's words in
 * <span class="cl-..." style="..."> elements. highlight_html returns a
 * malloc'd string (the caller frees it), NULL when memory runs out. */
void highlight_code(FILE *f, const char *src);
char *highlight_html(const char *src);

/* How a number cell is written, in text and HTML alike. Writes into buf. */
void render_number(const json_t *cell, char *buf, size_t len);

/* Small builders for magics, so views are written the same way everywhere.
 * view_new returns a new reference (title may be NULL); view_add_table returns
 * the table inside the view (borrowed), to be filled with view_table_row. */
json_t *view_new(const char *title);
json_t *view_add_table(json_t *view, const char *title, json_t *columns /* stolen, may be NULL */);
void view_table_row(json_t *table, json_t *row /* stolen */);
void view_add_note(json_t *view, const char *text);
void view_add_text(json_t *view, const char *text);

/* A chart block of kind "line" or "bar" (else NULL and nothing added), to be
 * filled with view_chart_point; returned borrowed from the view. Titles and
 * labels may be NULL; log_axes is 0 or VIEW_LOG_X and VIEW_LOG_Y or'ed (line
 * charts). view_chart_point appends [x, y] to the series called series,
 * created at the end when new; x is stolen, a non-finite y is dropped.
 * view_chart_labelled_point appends [x, y, label] (label NULL: [x, y]).
 * view_chart_series creates the series drawn with mark ("line" or "point"),
 * or gives an existing one that mark: before its points, for the order. */
enum { VIEW_LOG_X = 1, VIEW_LOG_Y = 2 };
json_t *view_add_chart(json_t *view, const char *kind, const char *title, const char *x_label,
                       const char *y_label, int log_axes);
void view_chart_point(json_t *chart, const char *series, json_t *x /* stolen */, double y);
void view_chart_labelled_point(json_t *chart, const char *series, json_t *x /* stolen */, double y,
                               const char *label);
void view_chart_series(json_t *chart, const char *series, const char *mark);

#endif
