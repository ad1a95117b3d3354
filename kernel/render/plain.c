/* plain.c — lays out a view (schema in render.h) as text/plain: deterministic,
 * aligned, never a trailing space, the same bytes for the same view. It is
 * what a terminal, an autograder and a notebook's fallback see.
 *
 * A chart is shown as its title and a table of series, x and y (chart_table),
 * laid out like any other table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memtext.h"
#include "base/utf8.h"
#include "render/render.h"
#include "render/chart.h"
#include "render/layout.h"

/* The text writer holds back spaces until something visible follows them, so
 * no line of text/plain ever ends in a space, whatever the view contains. */
struct text_out {
    FILE *f;
    size_t pending;             /* spaces not yet written */
    int last;                   /* kind of the last group written, 0 = none */
};

enum { GROUP_LINE = 1, GROUP_BLOCK = 2 };   /* title, note | text, table, chart */

/* flat: a table cell, where control characters become spaces so that one
 * cell stays one line and its width stays what was counted. */
static void text_put(struct text_out *o, const char *s, size_t n, int flat)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == ' ' || (flat && (ch < 0x20 || ch == 0x7f))) {
            o->pending++;
            continue;
        }
        for (; o->pending > 0; o->pending--)
            fputc(' ', o->f);
        fputc(ch, o->f);
    }
}

static void text_newline(struct text_out *o)
{
    o->pending = 0;
    fputc('\n', o->f);
}

/* Titles and notes are lines, texts and tables are blocks; a blank line sets
 * every block apart from what is around it. */
static void text_group(struct text_out *o, int kind)
{
    if (o->last && (kind == GROUP_BLOCK || o->last == GROUP_BLOCK))
        text_newline(o);
    o->last = kind;
}

/* Writes s as lines, the first after first, the others after next; trailing
 * newlines are dropped so the output ends with exactly one. */
static void text_lines(struct text_out *o, const char *first, const char *next, const char *s)
{
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '\n')
        n--;
    const char *prefix = first;
    for (;;) {
        const char *nl = memchr(s, '\n', n);
        size_t len = nl ? (size_t)(nl - s) : n;
        text_put(o, prefix, strlen(prefix), 0);
        text_put(o, s, len, 0);
        text_newline(o);
        if (!nl)
            break;
        s += len + 1;
        n -= len + 1;
        prefix = next;
    }
}

/* ---- tables ---- */

struct text_col {
    size_t width;
    int right;
};

static void text_cell(struct text_out *o, const json_t *v, const struct text_col *col, int header)
{
    struct cell c;
    layout_cell_open(&c, v);
    size_t w = utf8_chars(c.s);
    size_t pad = col->width > w ? col->width - w : 0;
    int right = header || c.align == ALIGN_COLUMN ? col->right : c.align == ALIGN_RIGHT;
    if (right)
        o->pending += pad;
    text_put(o, c.s, strlen(c.s), 1);
    if (!right)
        o->pending += pad;
    layout_cell_done(&c);
}

static void text_row(struct text_out *o, const json_t *row, const struct text_col *cols,
                     size_t ncols, int header)
{
    for (size_t j = 0; j < ncols; j++) {
        if (j > 0)
            o->pending += 2;
        text_cell(o, json_array_get(row, j), &cols[j], header);
    }
    text_newline(o);
}

static void widen(struct text_col *cols, size_t ncols, const json_t *row)
{
    for (size_t j = 0; j < ncols && j < json_array_size(row); j++) {
        struct cell c;
        layout_cell_open(&c, json_array_get(row, j));
        size_t w = utf8_chars(c.s);
        if (w > cols[j].width)
            cols[j].width = w;
        layout_cell_done(&c);
    }
}

static void text_table_body(struct text_out *o, const struct table *t, struct text_col *cols)
{
    widen(cols, t->ncols, t->columns);
    for (size_t i = 0; i < layout_table_shown(t); i++)
        widen(cols, t->ncols, layout_table_row(t, i));
    for (size_t j = 0; j < t->ncols; j++)
        cols[j].right = layout_column_right(t, j);

    if (t->columns) {
        text_row(o, t->columns, cols, t->ncols, 1);
        for (size_t j = 0; j < t->ncols; j++) {
            o->pending += j > 0 ? 2 : 0;
            for (size_t k = 0; k < cols[j].width; k++)
                text_put(o, "-", 1, 0);
        }
        text_newline(o);
    }
    for (size_t i = 0; i < layout_table_shown(t); i++) {
        if (i == t->head && t->tail > 0) {
            char msg[128];
            layout_hidden_message(t, msg, sizeof msg);
            text_lines(o, "", "", msg);
        }
        const json_t *row = layout_table_row(t, i);
        if (row)
            text_row(o, row, cols, t->ncols, 0);
    }
}

static void text_table(struct text_out *o, const json_t *block)
{
    struct table t;
    layout_table_open(block, &t);
    if (!t.title && t.ncols == 0)
        return;
    text_group(o, GROUP_BLOCK);
    if (t.title)
        text_lines(o, "", "", t.title);
    if (t.ncols == 0)
        return;
    struct text_col *cols = calloc(t.ncols, sizeof *cols);
    if (!cols) {
        text_lines(o, "", "", "(table not shown: out of memory)");
        return;
    }
    text_table_body(o, &t, cols);
    free(cols);
}

/* ---- blocks ---- */

static void text_chart(struct text_out *o, const json_t *block)
{
    json_t *table = chart_table(block);     /* NULL: not a chart, left out */
    if (table)
        text_table(o, table);
    json_decref(table);
}

static void text_block(struct text_out *o, const json_t *block)
{
    const char *type = json_string_value(json_object_get(block, "type"));
    const char *text = json_string_value(json_object_get(block, "text"));
    if (!type)
        return;
    if (strcmp(type, "table") == 0) {
        text_table(o, block);
    } else if (strcmp(type, "chart") == 0) {
        text_chart(o, block);
    } else if (strcmp(type, "note") == 0 && text) {
        text_group(o, GROUP_LINE);
        text_lines(o, "note: ", "      ", text);
    } else if ((strcmp(type, "text") == 0 || strcmp(type, "code") == 0) && layout_text_shown(text)) {
        text_group(o, GROUP_BLOCK);
        text_lines(o, "", "", text);
    }
}

char *render_text(const json_t *view)
{
    memtext m;
    struct text_out o = { .f = memtext_open(&m) };
    if (!o.f)
        return NULL;

    const char *title = json_string_value(json_object_get(view, "title"));
    if (title && *title) {
        text_group(&o, GROUP_LINE);
        text_lines(&o, "", "", title);
    }
    const json_t *blocks = json_object_get(view, "blocks");
    for (size_t i = 0; i < json_array_size(blocks); i++)
        text_block(&o, json_array_get(blocks, i));

    return memtext_close(&m);
}
