/* render.c — lays out a view (schema in render.h) as text/plain and text/html
 * and bundles both with the document into the MIME bundle a magic publishes.
 *
 * Text and HTML share one idea of a table (struct table: which rows are shown,
 * how wide the widest row is) and one idea of a cell (struct cell: what it says
 * and which side it leans to), so the two outputs never disagree about what a
 * view contains. Both are written into an open_memstream buffer.
 *
 * A view is built by our own magics, but a malformed one must degrade, never
 * crash the kernel: unknown or broken blocks are skipped, short rows are padded,
 * long rows widen the table, nested values in cells are shown as compact JSON.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudalab/render.h"

/* A table longer than TRUNC_ABOVE rows shows its first TRUNC_HEAD and last
 * TRUNC_TAIL rows: a long sweep must not flood the notebook, and every row is
 * still in application/json for whoever reads the data. */
enum { TRUNC_ABOVE = 200, TRUNC_HEAD = 100, TRUNC_TAIL = 20 };

enum align { ALIGN_COLUMN, ALIGN_LEFT, ALIGN_RIGHT };

/* ---- numbers ---- */

/* Decimals that give 4 significant digits without dropping integer digits
 * (7953.2 -> 0, 14.83 -> 2, 0.2712 -> 4, 0.001234 -> 6), for 1e-3 <= ax < 1e6.
 * Decided by comparison rather than log10 so that no libm can shift a digit. */
static int fixed_decimals(double ax)
{
    if (ax >= 1000) return 0;
    if (ax >= 100) return 1;
    if (ax >= 10) return 2;
    if (ax >= 1) return 3;
    if (ax >= 0.1) return 4;
    if (ax >= 0.01) return 5;
    return 6;
}

static void strip_zeros(char *s)
{
    if (!strchr(s, '.'))
        return;
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '0')
        s[--n] = '\0';
    if (n > 0 && s[n - 1] == '.')
        s[--n] = '\0';
}

static void format_real(double x, char *buf, size_t len)
{
    double ax = fabs(x);
    if (isnan(x))
        snprintf(buf, len, "nan");
    else if (isinf(x))
        snprintf(buf, len, x < 0 ? "-inf" : "inf");
    else if (x == 0)
        snprintf(buf, len, "0");             /* -0.0 too */
    else if (ax >= 1e6 || ax < 1e-3)
        snprintf(buf, len, "%.4g", x);
    else {
        snprintf(buf, len, "%.*f", fixed_decimals(ax), x);
        strip_zeros(buf);
    }
}

void render_number(const json_t *cell, char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    buf[0] = '\0';
    if (json_is_integer(cell))
        snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(cell));
    else if (json_is_real(cell))
        format_real(json_real_value(cell), buf, len);
}

/* ---- cells and tables, shared by text and HTML ---- */

/* What a cell says. s points into the view, into buf, or at owned (a compact
 * dump of a nested value); cell_done frees owned. */
struct cell {
    const char *s;
    char *owned;
    enum align align;   /* ALIGN_COLUMN: bool, null, missing follow their column */
    char buf[48];
};

static void cell_open(struct cell *c, const json_t *v)
{
    c->s = c->buf;
    c->owned = NULL;
    c->align = ALIGN_COLUMN;
    c->buf[0] = '\0';
    if (json_is_number(v)) {
        render_number(v, c->buf, sizeof c->buf);
        c->align = ALIGN_RIGHT;
    } else if (json_is_string(v)) {
        c->s = json_string_value(v);
        c->align = ALIGN_LEFT;
    } else if (json_is_boolean(v)) {
        c->s = json_is_true(v) ? "yes" : "no";
    } else if (json_is_null(v)) {
        c->s = "-";
    } else if (v) {                          /* array or object: malformed, shown as is */
        c->owned = json_dumps(v, JSON_COMPACT);
        c->s = c->owned ? c->owned : "?";
        c->align = ALIGN_LEFT;
    }
}

static void cell_done(struct cell *c)
{
    free(c->owned);
    c->owned = NULL;
}

struct table {
    const char *title;          /* NULL when absent */
    const json_t *columns;      /* non-empty array or NULL: no header row */
    const json_t *rows;         /* array or NULL */
    size_t nrows, ncols;        /* ncols: the longer of columns and the longest row */
    size_t head, tail;          /* shown: rows [0, head) and [nrows - tail, nrows) */
};

static void table_open(const json_t *block, struct table *t)
{
    const json_t *title = json_object_get(block, "title");
    t->title = json_is_string(title) ? json_string_value(title) : NULL;
    t->columns = json_object_get(block, "columns");
    if (json_array_size(t->columns) == 0)
        t->columns = NULL;
    t->rows = json_object_get(block, "rows");
    t->nrows = json_array_size(t->rows);
    t->ncols = json_array_size(t->columns);
    for (size_t i = 0; i < t->nrows; i++) {
        size_t n = json_array_size(json_array_get(t->rows, i));
        if (n > t->ncols)
            t->ncols = n;
    }
    t->head = t->nrows > TRUNC_ABOVE ? TRUNC_HEAD : t->nrows;
    t->tail = t->nrows > TRUNC_ABOVE ? TRUNC_TAIL : 0;
}

static size_t table_shown(const struct table *t)
{
    return t->head + t->tail;
}

static size_t table_hidden(const struct table *t)
{
    return t->nrows - table_shown(t);
}

/* The i-th shown row (i < table_shown); NULL when that row is not an array. */
static const json_t *table_row(const struct table *t, size_t i)
{
    size_t at = i < t->head ? i : t->nrows - t->tail + (i - t->head);
    const json_t *row = json_array_get(t->rows, at);
    return json_is_array(row) ? row : NULL;
}

/* A column leans right when its shown cells hold numbers and no text, so that
 * its header, nulls ("-") and blanks line up with the digits. */
static int column_right(const struct table *t, size_t col)
{
    int numbers = 0;
    for (size_t i = 0; i < table_shown(t); i++) {
        const json_t *v = json_array_get(table_row(t, i), col);
        if (json_is_number(v))
            numbers = 1;
        else if (json_is_string(v) || json_is_array(v) || json_is_object(v))
            return 0;
    }
    return numbers;
}

static void hidden_message(const struct table *t, char *buf, size_t len)
{
    snprintf(buf, len, "... %zu rows not shown (all rows are in application/json) ...",
             table_hidden(t));
}

/* A text block of nothing but newlines is left out, in text and HTML alike. */
static int text_shown(const char *text)
{
    return text && text[strspn(text, "\n")] != '\0';
}

/* ---- text/plain ---- */

/* The text writer holds back spaces until something visible follows them, so
 * no line of text/plain ever ends in a space, whatever the view contains. */
struct text_out {
    FILE *f;
    size_t pending;             /* spaces not yet written */
    int last;                   /* kind of the last group written, 0 = none */
};

enum { GROUP_LINE = 1, GROUP_BLOCK = 2 };   /* title, note | text, table */

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

/* Display width in code points: "µs" and "×" are one character each. */
static size_t utf8_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

struct text_col {
    size_t width;
    int right;
};

static void text_cell(struct text_out *o, const json_t *v, const struct text_col *col, int header)
{
    struct cell c;
    cell_open(&c, v);
    size_t w = utf8_width(c.s);
    size_t pad = col->width > w ? col->width - w : 0;
    int right = header || c.align == ALIGN_COLUMN ? col->right : c.align == ALIGN_RIGHT;
    if (right)
        o->pending += pad;
    text_put(o, c.s, strlen(c.s), 1);
    if (!right)
        o->pending += pad;
    cell_done(&c);
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
        cell_open(&c, json_array_get(row, j));
        size_t w = utf8_width(c.s);
        if (w > cols[j].width)
            cols[j].width = w;
        cell_done(&c);
    }
}

static void text_table_body(struct text_out *o, const struct table *t, struct text_col *cols)
{
    widen(cols, t->ncols, t->columns);
    for (size_t i = 0; i < table_shown(t); i++)
        widen(cols, t->ncols, table_row(t, i));
    for (size_t j = 0; j < t->ncols; j++)
        cols[j].right = column_right(t, j);

    if (t->columns) {
        text_row(o, t->columns, cols, t->ncols, 1);
        for (size_t j = 0; j < t->ncols; j++) {
            o->pending += j > 0 ? 2 : 0;
            for (size_t k = 0; k < cols[j].width; k++)
                text_put(o, "-", 1, 0);
        }
        text_newline(o);
    }
    for (size_t i = 0; i < table_shown(t); i++) {
        if (i == t->head && t->tail > 0) {
            char msg[128];
            hidden_message(t, msg, sizeof msg);
            text_lines(o, "", "", msg);
        }
        const json_t *row = table_row(t, i);
        if (row)
            text_row(o, row, cols, t->ncols, 0);
    }
}

static void text_table(struct text_out *o, const json_t *block)
{
    struct table t;
    table_open(block, &t);
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

static void text_block(struct text_out *o, const json_t *block)
{
    const char *type = json_string_value(json_object_get(block, "type"));
    const char *text = json_string_value(json_object_get(block, "text"));
    if (!type)
        return;
    if (strcmp(type, "table") == 0) {
        text_table(o, block);
    } else if (strcmp(type, "note") == 0 && text) {
        text_group(o, GROUP_LINE);
        text_lines(o, "note: ", "      ", text);
    } else if (strcmp(type, "text") == 0 && text_shown(text)) {
        text_group(o, GROUP_BLOCK);
        text_lines(o, "", "", text);
    }
}

char *render_text(const json_t *view)
{
    char *buf = NULL;
    size_t size = 0;
    struct text_out o = { .f = open_memstream(&buf, &size) };
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

    int failed = ferror(o.f);
    if (fclose(o.f) != 0 || failed) {
        free(buf);
        return NULL;
    }
    return buf ? buf : strdup("");
}

/* ---- text/html ---- */

/* Escapes everything a string could use to leave its element or attribute. */
static void html_put(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

static const char *html_align(int right)
{
    return right ? " style=\"text-align:right\"" : " style=\"text-align:left\"";
}

static void html_row(FILE *f, const json_t *row, const int *right, size_t ncols, int header)
{
    const char *tag = header ? "th" : "td";
    fputs("<tr>", f);
    for (size_t j = 0; j < ncols; j++) {
        struct cell c;
        cell_open(&c, json_array_get(row, j));
        int r = header || c.align == ALIGN_COLUMN ? right[j] : c.align == ALIGN_RIGHT;
        fprintf(f, "<%s%s>", tag, html_align(r));
        html_put(f, c.s);
        fprintf(f, "</%s>", tag);
        cell_done(&c);
    }
    fputs("</tr>", f);
}

static void html_table_body(FILE *f, const struct table *t, int *right)
{
    for (size_t j = 0; j < t->ncols; j++)
        right[j] = column_right(t, j);
    if (t->columns) {
        fputs("<thead>", f);
        html_row(f, t->columns, right, t->ncols, 1);
        fputs("</thead>\n", f);
    }
    fputs("<tbody>\n", f);
    for (size_t i = 0; i < table_shown(t); i++) {
        if (i == t->head && t->tail > 0) {
            char msg[128];
            hidden_message(t, msg, sizeof msg);
            fprintf(f, "<tr><td colspan=\"%zu\" style=\"text-align:center;font-style:italic\">",
                    t->ncols);
            html_put(f, msg);
            fputs("</td></tr>\n", f);
        }
        const json_t *row = table_row(t, i);
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
    table_open(block, &t);
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

static void html_block(FILE *f, const json_t *block)
{
    const char *type = json_string_value(json_object_get(block, "type"));
    const char *text = json_string_value(json_object_get(block, "text"));
    if (!type)
        return;
    if (strcmp(type, "table") == 0) {
        html_table(f, block);
    } else if (strcmp(type, "note") == 0 && text) {
        fputs("<p class=\"cudalab-note\" style=\"margin:0.2em 0;font-style:italic;"
              "white-space:pre-wrap\">", f);
        html_put(f, text);
        fputs("</p>\n", f);
    } else if (strcmp(type, "text") == 0 && text_shown(text)) {
        fputs("<pre style=\"margin:0.4em 0\">", f);
        html_put(f, text);
        fputs("</pre>\n", f);
    }
}

char *render_html(const json_t *view)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
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

    int failed = ferror(f);
    if (fclose(f) != 0 || failed) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---- the bundle ---- */

json_t *render_bundle(const json_t *doc, const json_t *view)
{
    char *text = render_text(view);
    char *html = render_html(view);
    json_t *bundle = json_object();
    int failed = !text || !html || !bundle
        || json_object_set_new(bundle, "text/plain", json_string(text))
        || json_object_set_new(bundle, "text/html", json_string(html))
        || (doc && json_object_set_new(bundle, "application/json", json_deep_copy(doc)));
    free(text);
    free(html);
    if (failed) {
        json_decref(bundle);
        return NULL;
    }
    return bundle;
}
