/* layout.h — private to kernel/render: what text/plain, text/html and charts
 * share, so that the outputs never disagree about what a view contains.
 *
 * One idea of a number (layout_real: 4 significant digits, the same in every
 * output), one idea of a cell (struct cell: what it says and which side it
 * leans to), one idea of a table (struct table: which rows are shown, how wide
 * the widest row is) and one way of escaping markup (HTML and SVG alike).
 */
#ifndef CUDALAB_RENDER_LAYOUT_H
#define CUDALAB_RENDER_LAYOUT_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* A table longer than TRUNC_ABOVE rows shows its first TRUNC_HEAD and last
 * TRUNC_TAIL rows: a long sweep must not flood the notebook, and every row is
 * still in the result document for whoever reads the data. */
enum { TRUNC_ABOVE = 200, TRUNC_HEAD = 100, TRUNC_TAIL = 20 };

enum align { ALIGN_COLUMN, ALIGN_LEFT, ALIGN_RIGHT };

/* ---- numbers ---- */

/* A real as every output writes it: nan, inf, 0, %.4g below 1e-3 and from
 * 1e6 on, else 4 significant digits without trailing zeros (7953.2 -> 7953,
 * 0.2712 -> 0.2712, 2.50 -> 2.5), and more where 4 would round onto the next
 * power of ten (0.9999983 -> 0.999998, not 1; 9.99961 -> 9.9996, not 10). */
void layout_real(double x, char *buf, size_t len);

/* ---- cells ---- */

/* What a cell says. s points into the view, into buf, or at owned (a compact
 * dump of a nested value); layout_cell_done frees owned. */
struct cell {
    const char *s;
    char *owned;
    enum align align;   /* ALIGN_COLUMN: bool, null, missing follow their column */
    char buf[48];
};

void layout_cell_open(struct cell *c, const json_t *v);
void layout_cell_done(struct cell *c);

/* ---- tables ---- */

struct table {
    const char *title;          /* NULL when absent */
    const json_t *columns;      /* non-empty array or NULL: no header row */
    const json_t *rows;         /* array or NULL */
    size_t nrows, ncols;        /* ncols: the longer of columns and the longest row */
    size_t head, tail;          /* shown: rows [0, head) and [nrows - tail, nrows) */
};

/* Reads a table block (borrowed; t points into it). */
void layout_table_open(const json_t *block, struct table *t);
size_t layout_table_shown(const struct table *t);
/* The i-th shown row (i < layout_table_shown); NULL when that row is not an array. */
const json_t *layout_table_row(const struct table *t, size_t i);
/* 1 when the column leans right: its shown cells hold numbers and no text. */
int layout_column_right(const struct table *t, size_t col);
/* "... N rows not shown ..." for a truncated table. */
void layout_hidden_message(const struct table *t, char *buf, size_t len);

/* ---- text ---- */

/* A text block of nothing but newlines is left out, in text and HTML alike. */
int layout_text_shown(const char *text);


/* Writes s with everything escaped that could leave an element or an
 * attribute (& < > " '). xml: also replaces the control characters XML 1.0
 * forbids (all below 0x20 but tab, newline, return) with spaces, so that an
 * SVG stays well-formed whatever a name contains. */
void layout_escape(FILE *f, const char *s, int xml);

#endif
