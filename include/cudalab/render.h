/* render.h — turns a command's result into a Jupyter MIME bundle.
 *
 * A command produces two JSON values: the document (stable names and units,
 * published as application/json, read by notebooks and autograders) and a view
 * (how to show it). The renderer never looks inside the document; it only lays
 * out the view, so every magic gets the same tables in text and HTML.
 *
 * View schema:
 *   {"title": "text",                                   optional
 *    "blocks": [                                        shown in order
 *      {"type": "note",  "text": "line"},               a remark or warning
 *      {"type": "text",  "text": "preformatted lines"},
 *      {"type": "table", "title": "optional caption",
 *       "columns": ["name", ...],                       omitted = no header row
 *       "rows": [[cell, ...], ...]}                     cell: string, integer, real, bool or null
 *    ]}
 * Numbers are right-aligned, text left-aligned. text/plain is deterministic:
 * the same view always gives the same bytes.
 */
#ifndef CUDALAB_RENDER_H
#define CUDALAB_RENDER_H

#include <jansson.h>

/* {"text/plain": ..., "text/html": ..., "application/json": doc}. New reference;
 * doc and view are borrowed. doc may be NULL (then no application/json). */
json_t *render_bundle(const json_t *doc, const json_t *view);

/* Each returns a malloc'd NUL-terminated string; the caller frees it. */
char *render_text(const json_t *view);
char *render_html(const json_t *view);

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

#endif
