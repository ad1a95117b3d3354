/* view.c — builders that magics use to write a view (schema in render.h), so
 * every magic produces the same shapes and none spells block keys by hand.
 *
 * Ownership follows jansson: view_new returns a new reference, view_add_table
 * and view_add_chart return a block borrowed from the view, and stolen
 * arguments (columns, row, a chart point's x) are released on every error
 * path, so a magic never has to check the result just to avoid a leak. A NULL or malformed view makes every builder a no-op.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"

/* JSON strings must be UTF-8 and jansson refuses anything else. A name that is
 * not (a Latin-1 file name, a garbled device string) is shown with '?' for each
 * byte beyond ASCII rather than lost. */
static json_t *text_value(const char *s)
{
    json_t *v = json_string(s);
    if (v || !s)
        return v;
    char *copy = strdup(s);
    if (!copy)
        return NULL;
    for (char *p = copy; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    v = json_string(copy);
    free(copy);
    return v;
}

/* Appends block (stolen) to the view's blocks; returns it borrowed, or NULL. */
static json_t *add_block(json_t *view, json_t *block)
{
    json_t *blocks = json_object_get(view, "blocks");
    if (json_array_append_new(blocks, block) != 0)
        return NULL;                        /* block released by jansson */
    return block;
}

json_t *view_new(const char *title)
{
    json_t *view = json_object();
    if (!view)
        return NULL;
    if ((title && json_object_set_new(view, "title", text_value(title)) != 0)
        || json_object_set_new(view, "blocks", json_array()) != 0) {
        json_decref(view);
        return NULL;
    }
    return view;
}

json_t *view_add_table(json_t *view, const char *title, json_t *columns)
{
    json_t *table = json_object();
    if (!table || !json_is_array(json_object_get(view, "blocks"))
        || json_object_set_new(table, "type", json_string("table")) != 0
        || (title && json_object_set_new(table, "title", text_value(title)) != 0)) {
        json_decref(columns);
        json_decref(table);
        return NULL;
    }
    /* From here columns belongs to the table, even when setting it fails. */
    if ((columns && json_object_set_new(table, "columns", columns) != 0)
        || json_object_set_new(table, "rows", json_array()) != 0) {
        json_decref(table);
        return NULL;
    }
    return add_block(view, table);
}

void view_table_row(json_t *table, json_t *row)
{
    /* json_array_append_new releases row when rows is missing or not an array. */
    (void)json_array_append_new(json_object_get(table, "rows"), row);
}

static void add_text_block(json_t *view, const char *type, const char *text)
{
    if (!text || !json_is_array(json_object_get(view, "blocks")))
        return;
    json_t *block = json_object();
    if (!block || json_object_set_new(block, "type", json_string(type)) != 0
        || json_object_set_new(block, "text", text_value(text)) != 0) {
        json_decref(block);
        return;
    }
    add_block(view, block);
}

void view_add_note(json_t *view, const char *text)
{
    add_text_block(view, "note", text);
}

void view_add_text(json_t *view, const char *text)
{
    add_text_block(view, "text", text);
}

/* ---- charts ---- */

json_t *view_add_chart(json_t *view, const char *kind, const char *title, const char *x_label,
                       const char *y_label, int log_axes)
{
    if (!kind || (strcmp(kind, "line") != 0 && strcmp(kind, "bar") != 0)
        || !json_is_array(json_object_get(view, "blocks")))
        return NULL;
    json_t *chart = json_pack("{s:s, s:s}", "type", "chart", "kind", kind);
    if (!chart
        || (title && json_object_set_new(chart, "title", text_value(title)) != 0)
        || (x_label && json_object_set_new(chart, "x_label", text_value(x_label)) != 0)
        || (y_label && json_object_set_new(chart, "y_label", text_value(y_label)) != 0)
        || json_object_set_new(chart, "log_x", json_boolean(log_axes & VIEW_LOG_X)) != 0
        || ((log_axes & VIEW_LOG_Y) && json_object_set_new(chart, "log_y", json_true()) != 0)
        || json_object_set_new(chart, "series", json_array()) != 0) {
        json_decref(chart);
        return NULL;
    }
    return add_block(view, chart);
}

/* The series called name in chart, appended when new; NULL when chart is not one. */
static json_t *chart_series(json_t *chart, const char *name)
{
    json_t *all = json_object_get(chart, "series");
    json_t *s, *v = text_value(name);
    size_t i;
    if (!json_is_array(all) || !v) {
        json_decref(v);
        return NULL;
    }
    json_array_foreach(all, i, s) {
        if (json_equal(json_object_get(s, "name"), v)) {
            json_decref(v);
            return s;
        }
    }
    s = json_pack("{s:o, s:[]}", "name", v, "points");
    return json_array_append_new(all, s) == 0 ? s : NULL;
}

void view_chart_series(json_t *chart, const char *series, const char *mark)
{
    json_t *s = series && mark ? chart_series(chart, series) : NULL;
    (void)json_object_set_new(s, "mark", json_string(mark));
}

void view_chart_labelled_point(json_t *chart, const char *series, json_t *x, double y, const char *label)
{
    json_t *s = x && series && isfinite(y) ? chart_series(chart, series) : NULL;
    json_t *point = s ? json_pack("[O, f]", x, y) : NULL;
    json_decref(x);
    if (point && label)
        (void)json_array_append_new(point, text_value(label));
    (void)json_array_append_new(json_object_get(s, "points"), point);
}

void view_chart_point(json_t *chart, const char *series, json_t *x, double y)
{
    view_chart_labelled_point(chart, series, x, y, NULL);
}
