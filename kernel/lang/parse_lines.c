/* parse_lines.c — a cell's physical lines into logical lines, one per command.
 *
 * Blank lines and '#' comment lines between commands are skipped. A line that
 * ends with a continuation backslash, or inside an open quote, goes on with the
 * next physical line: the backslash becomes a space, an open quote keeps the
 * newline as part of its text. Where each physical line starts in the joined
 * text is remembered, so an error found in the joined text is reported at the
 * physical line and column the user sees.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "lang/parse_internal.h"

void logical_free(logical *l)
{
    free(l->text);
    free(l->seg);
    free(l->phys);
    lexed_free(&l->lx);
    memset(l, 0, sizeof *l);
}

static int append(logical *l, const char *s, size_t n)
{
    if (array_grow(&l->text, &l->cap, l->len + n + 1, 1) != 0)
        return -1;
    memcpy(l->text + l->len, s, n);
    l->len += n;
    l->text[l->len] = '\0';
    return 0;
}

static int push_seg(logical *l, const char *phys)
{
    size_t n = (size_t)l->nseg + 1;
    size_t *seg = realloc(l->seg, n * sizeof *seg);
    if (seg)
        l->seg = seg;
    const char **ph = realloc(l->phys, n * sizeof *ph);
    if (ph)
        l->phys = ph;
    if (!seg || !ph)
        return -1;
    l->seg[l->nseg] = l->len;
    l->phys[l->nseg] = phys;
    l->nseg++;
    return 0;
}

static bool skippable(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\v' || *p == '\f'))
        p++;
    return p == e || *p == '#';
}

static void copy_source(parse_error *err, const char *s, size_t n)
{
    if (n > sizeof err->source - 1)
        n = sizeof err->source - 1;
    snprintf(err->source, sizeof err->source, "%.*s", utf8_clip(s, n), s);
}

/* The joined text equals each physical line up to its continuation backslash,
 * so a column counted in the text is also the column in the line as typed. */
void locate(const logical *l, size_t at, parse_error *err)
{
    err->line = l->line;
    err->column = 0;
    err->source[0] = '\0';
    if (!l->text || l->nseg == 0)   /* out of memory before the first byte */
        return;
    if (at == SIZE_MAX) {
        copy_source(err, l->text, l->len);
        return;
    }
    int k = 0;
    while (k + 1 < l->nseg && l->seg[k + 1] <= at)
        k++;
    err->line = l->line + k;
    err->column = 1 + (int)utf8_chars_n(l->text + l->seg[k], (at < l->len ? at : l->len) - l->seg[k]);
    const char *p = l->phys[k];
    size_t n = strcspn(p, "\n");
    copy_source(err, p, n - (n > 0 && p[n - 1] == '\r'));
}

int fail_at(parse_error *err, const logical *l, size_t at, const char *ename, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_setv(&err->error, ename, fmt, ap);
    va_end(ap);
    locate(l, at, err);
    return -1;
}

#define LOGICAL_MAX_LINES 1000
#define LOGICAL_MAX_BYTES (64 << 10)

int reader_next(reader *r, logical *l, parse_error *err)
{
    memset(l, 0, sizeof *l);
    const char *e;
    while (*r->p && skippable(r->p, e = r->p + strcspn(r->p, "\n"))) {
        r->p = *e ? e + 1 : e;
        r->line++;
    }
    if (!*r->p)
        return 0;
    l->line = r->line;
    for (int segments = 1;; segments++) {
        /* each continuation re-lexes the joined line: bound it, so a hostile cell
         * cannot keep the kernel (and its heartbeat) busy for long */
        if (segments > LOGICAL_MAX_LINES || l->len > LOGICAL_MAX_BYTES)
            return fail_at(err, l, SIZE_MAX, "SyntaxError", "one command may span at most %d lines "
                           "and %d KiB; split it into several commands", LOGICAL_MAX_LINES,
                           LOGICAL_MAX_BYTES >> 10);
        e = r->p + strcspn(r->p, "\n");
        size_t n = (size_t)(e - r->p) - (e > r->p && e[-1] == '\r');
        if (push_seg(l, r->p) != 0 || append(l, r->p, n) != 0)
            return fail_at(err, l, SIZE_MAX, "MemoryError", "out of memory");
        r->p = *e ? e + 1 : e;
        r->line++;
        lexed_free(&l->lx);
        if (lex_line(l->text, &l->lx) != 0)
            return fail_at(err, l, SIZE_MAX, "MemoryError", "out of memory");
        if (lexed_is_raw(&l->lx, r->find))     /* its quotes are the expression's */
            l->lx.end = lex_raw_end(l->text, l->lx.tok[0].end, &l->lx.at);
        if (l->lx.end == LEX_ESCAPE)
            return fail_at(err, l, l->lx.at, "SyntaxError", "%s", l->lx.why);
        if (l->lx.end == LEX_DONE)
            break;
        if (!*r->p) {
            if (l->lx.end == LEX_QUOTE)
                fail_at(err, l, l->lx.at, "SyntaxError", "this %c quote is never closed", l->text[l->lx.at]);
            else
                fail_at(err, l, l->lx.at, "SyntaxError", "the line ends with \\ to continue, but the cell ends there");
            return READ_INCOMPLETE;
        }
        if (l->lx.end == LEX_BACKSLASH)
            l->len = l->lx.at;      /* drop the backslash and what follows */
        if (append(l, l->lx.end == LEX_BACKSLASH ? " " : "\n", 1) != 0)
            return fail_at(err, l, SIZE_MAX, "MemoryError", "out of memory");
    }
    l->after = r->p;
    return 1;
}

