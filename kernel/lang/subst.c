/* subst.c — {NAME} and $NAME in a magic line: the session's parameters put
 * back into the text before it is tokenized, with IPython's syntax for line
 * magics (`%matmul --size {size}`, `--tile $tile`):
 *
 *   {NAME} $NAME    the value of parameter NAME (params.h)
 *   {{ }} $$        a literal { } $
 *   anything else   as typed: a { or $ that starts no name ({}, {1}, $5, ${)
 *
 * Where: in a line magic's arguments and a cell magic's first line, outside
 * quotes and inside double quotes, never inside single quotes nor in a '#'
 * comment, as a shell does: the arguments are written as on a command line,
 * single quotes already mean "as typed", and a comment is no argument. Never
 * in a cell magic's body (C++ for %%kernel, text for %%histo and %%echo).
 *
 * A value is one piece of text, never re-read: in arguments it goes in quoted
 * (so spaces, quotes or a '#' in it do not split it or end the line), and in
 * an %assert / %score expression a number, true, false or null goes in as
 * such and any other value as a string literal. The magic's own parser then
 * reads it exactly as if it had been typed there.
 *
 * A name that is not a parameter is an error naming it and the parameters
 * there are (IPython would leave the text as typed, but in a lecture a silent
 * typo in {tlie} is worse than an error that says "did you mean {tile}?").
 *
 * Each replacement is remembered as a span, so that an error found in the
 * expanded text is reported at the column of the reference in the line as typed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "lang/params.h"
#include "lang/parse_internal.h"

typedef struct out {
    subst_text *t;
    size_t cap, span_cap;
    bool oom;
} out;

static void put(out *o, const char *s, size_t n)
{
    subst_text *t = o->t;
    if (o->oom)
        return;
    if (array_grow(&t->text, &o->cap, t->len + n + 1, 1) != 0) {
        o->oom = true;
        return;
    }
    memcpy(t->text + t->len, s, n);
    t->len += n;
    t->text[t->len] = '\0';
}

/* The text s[from, to) became what was put since out_from. */
static void span(out *o, size_t from, size_t to, size_t out_from)
{
    subst_text *t = o->t;
    if (o->oom)
        return;
    if (array_grow(&t->span, &o->span_cap, t->nspan + 1, sizeof *t->span) != 0) {
        o->oom = true;
        return;
    }
    t->span[t->nspan++] = (subst_span){ from, to, out_from, t->len };
}

/* value inside double quotes: a backslash and a quote escaped, so that the
 * quote's escapes give the value back (the cell language's and the
 * expressions' double quotes decode \\ and \" alike). */
static void put_escaped(out *o, const char *v)
{
    for (const char *p = v; *p; p++) {
        if (*p == '\\' || *p == '"')
            put(o, "\\", 1);
        put(o, p, 1);
    }
}

static bool bare_in_expr(const char *v)
{
    long long i;
    double d;
    return strcmp(v, "true") == 0 || strcmp(v, "false") == 0 || strcmp(v, "null") == 0 ||
           (v[0] != '+' && (number_int(v, &i) == NUM_OK || number_float(v, &d) == NUM_OK));
}

static void put_value(out *o, const char *v, enum subst_mode mode, bool in_double)
{
    if (in_double) {
        put_escaped(o, v);
    } else if (mode == SUBST_EXPR && bare_in_expr(v)) {
        put(o, v, strlen(v));
    } else {
        put(o, "\"", 1);
        put_escaped(o, v);
        put(o, "\"", 1);
    }
}

/* A reference at s[i] ('{' or '$'): sets *name, *n and *end (past it) and
 * returns true; false when s[i] starts none (it is then a literal). */
static bool reference(const char *s, size_t i, const char **name, size_t *n, size_t *end)
{
    size_t k = i + 1;
    if (!param_name_char(s[k], true))
        return false;
    while (param_name_char(s[k], false))
        k++;
    if (s[i] == '{' && s[k] != '}')
        return false;
    *name = s + i + 1;
    *n = k - i - 1;
    *end = s[i] == '{' ? k + 1 : k;
    return true;
}

/* The reference s[i, end) names no parameter. */
static int undefined(const param_scope *scope, const char *s, size_t i, size_t end, const char *name, size_t n,
                     error_info *e)
{
    char have[300];
    const char *near = param_scope_nearest(scope, name, n);
    int q = utf8_clip(s + i, end - i < 60 ? end - i : 60);
    const char *close = s[i] == '{' ? "}" : "";
    param_scope_names(scope, have, sizeof have);
    if (near)
        return error_set(e, "NameError", "%.*s is not a parameter; did you mean %c%s%s? (parameters: %s)", q, s + i,
                         s[i], near, close, have);
    if (strcmp(have, "none") == 0)
        return error_set(e, "NameError", "%.*s is not a parameter: none is defined (%%param NAME VALUE defines one; "
                         "write $$ or {{ for a literal $ or {)", q, s + i);
    return error_set(e, "NameError", "%.*s is not a parameter (parameters: %s; write $$ or {{ for a literal $ or {)",
                     q, s + i, have);
}

/* Whether s[from..] has anything to expand: the common line has no $ { }. */
static bool has_specials(const char *s)
{
    return s[strcspn(s, "${}")] != '\0';
}

int subst_expand(const char *s, size_t from, enum subst_mode mode, const param_scope *scope, subst_text *t,
                 error_info *e, size_t *at)
{
    memset(t, 0, sizeof *t);
    *at = SIZE_MAX;
    if (!has_specials(s + from))
        return 0;
    out o = { .t = t };
    put(&o, s, from);
    char quote = 0;                 /* the open quote, or 0 */
    size_t i = from;
    while (s[i] && !o.oom) {
        char c = s[i];
        if (quote == '\'' || (quote == '"' && c == '\\')) {
            /* single quotes: as typed (the expressions' have escapes, the arguments' none);
             * a backslash in double quotes: the escape as typed, never expanded */
            size_t n = c == '\\' && s[i + 1] && (quote == '"' || mode == SUBST_EXPR) ? 2 : 1;
            if (quote == '\'' && c == '\'')
                quote = 0;
            put(&o, s + i, n);
            i += n;
            continue;
        }
        if (quote == '"' && c == '"') {
            quote = 0;
        } else if (!quote && (c == '\'' || c == '"')) {
            quote = c;
        } else if (!quote && c == '#' && (mode == SUBST_EXPR || i == 0 || is_space(s[i - 1]))) {
            put(&o, s + i, strlen(s + i));      /* a comment: the rest as typed */
            break;
        }
        const char *name;
        size_t n, end;
        if ((c == '$' || c == '{' || c == '}') && s[i + 1] == c) {
            size_t mark = t->len;
            put(&o, s + i, 1);
            span(&o, i, i + 2, mark);
            i += 2;
        } else if ((c == '$' || c == '{') && reference(s, i, &name, &n, &end)) {
            const char *v = param_scope_get(scope, name, n);
            if (!v) {
                subst_text_free(t);
                *at = i;
                return undefined(scope, s, i, end, name, n, e);
            }
            size_t mark = t->len;
            put_value(&o, v, mode, quote == '"');
            span(&o, i, end, mark);
            i = end;
        } else {
            put(&o, s + i, 1);
            i++;
        }
        if (t->len > SUBST_MAX_BYTES) {
            subst_text_free(t);
            *at = i;
            return error_set(e, "UsageError", "with its parameters' values the line is longer than %u KiB; a command "
                             "may be at most that", SUBST_MAX_BYTES >> 10);
        }
    }
    if (o.oom) {
        subst_text_free(t);
        return error_set(e, "MemoryError", "out of memory");
    }
    if (t->nspan == 0) {            /* only single '}' or '{' that start nothing: the line as typed */
        subst_text_free(t);
        return 0;
    }
    return 1;
}

size_t subst_origin(const subst_text *t, size_t at)
{
    if (at == SIZE_MAX)
        return at;
    /* the last span that starts at or before at: the spans are in order (binary search, as a parse
     * asks once per token) */
    size_t lo = 0, hi = t->nspan;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->span[mid].out_from <= at)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return at;
    const subst_span *last = &t->span[lo - 1];
    if (at < last->out_to)
        return last->from;
    return last->to + (at - last->out_to);
}

void subst_text_free(subst_text *t)
{
    free(t->text);
    free(t->span);
    memset(t, 0, sizeof *t);
}
