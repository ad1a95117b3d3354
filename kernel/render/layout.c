/* layout.c — the pieces of layout that text/plain, text/html and charts share
 * (declared in layout.h): number formatting, cells, tables and their
 * truncation, and markup escaping.
 *
 * A view is built by our own magics, but a malformed one must degrade, never
 * crash the kernel: short rows are padded, long rows widen the table, nested
 * values in cells are shown as compact JSON.
 */
#include "render/layout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"

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

/* The most decimals a value below the next power of ten may take so as not
 * to be shown as it (the largest float below 1 is 0.99999994). */
#define MAX_DECIMALS 9

/* 4 significant digits, unless rounding them would carry x onto the next
 * power of ten: the largest of a million floats in [-1, 1) is 0.9999983, and
 * a table that says "1" says the input held a 1. Then as many decimals as it
 * takes to stay below it (0.999998), 9 at most. */
static void fixed_real(double x, double ax, char *buf, size_t len)
{
    for (int decimals = fixed_decimals(ax); decimals <= MAX_DECIMALS; decimals++) {
        snprintf(buf, len, "%.*f", decimals, x);
        double shown = fabs(strtod(buf, NULL));
        if (shown < 1e6 && fixed_decimals(shown) == fixed_decimals(ax))  /* the same decade */
            break;
    }
    strip_zeros(buf);
}

void layout_real(double x, char *buf, size_t len)
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
    else
        fixed_real(x, ax, buf, len);
}

/* ---- cells ---- */

void layout_cell_open(struct cell *c, const json_t *v)
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

void layout_cell_done(struct cell *c)
{
    free(c->owned);
    c->owned = NULL;
}

/* ---- tables ---- */

void layout_table_open(const json_t *block, struct table *t)
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

size_t layout_table_shown(const struct table *t)
{
    return t->head + t->tail;
}

const json_t *layout_table_row(const struct table *t, size_t i)
{
    size_t at = i < t->head ? i : t->nrows - t->tail + (i - t->head);
    const json_t *row = json_array_get(t->rows, at);
    return json_is_array(row) ? row : NULL;
}

/* Numbers without text lean right, so that the header, nulls ("-") and blanks
 * of a numeric column line up with its digits. */
int layout_column_right(const struct table *t, size_t col)
{
    int numbers = 0;
    for (size_t i = 0; i < layout_table_shown(t); i++) {
        const json_t *v = json_array_get(layout_table_row(t, i), col);
        if (json_is_number(v))
            numbers = 1;
        else if (json_is_string(v) || json_is_array(v) || json_is_object(v))
            return 0;
    }
    return numbers;
}

void layout_hidden_message(const struct table *t, char *buf, size_t len)
{
    snprintf(buf, len, "... %zu rows not shown (every row is in the result document) ...",
             t->nrows - layout_table_shown(t));
}

/* ---- text ---- */

int layout_text_shown(const char *text)
{
    return text && text[strspn(text, "\n")] != '\0';
}

void layout_escape(FILE *f, const char *s, int xml)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        switch (ch) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if (xml && ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
                ch = ' ';
            fputc(ch, f);
        }
    }
}
