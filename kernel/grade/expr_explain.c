/* expr_explain.c — why a %assert is false: the clause that failed, with the
 * values it compared ("3.2 > 9.04 is false"), and a "where" line for each
 * value it was made of, saying where it came from
 * ("where matmul[variant=naive].gflops = 4.52, from %matmul in cell 3").
 * Every node keeps its last value (node.v), which is what these read.
 */
#include <stdio.h>
#include <string.h>

#include "base/utf8.h"
#include "grade/expr_internal.h"

#define WHERE_MAX 12

typedef struct why {
    ev *x;
    json_t *lines;
} why;

/* Adds "  where SRC = VALUE, from %magic in cell N" for n; false when that
 * line is there already. */
static bool where_line(why *w, const node *n)
{
    char s[160], v[400], from[200] = "", line[800];
    ev_src(w->x, n, s, sizeof s);
    val_format(&n->v, 6, v, sizeof v);
    if (n->v.magic && n->kind != N_ARITH && n->kind != N_NEG && n->kind != N_CALL) {
        if (n->v.device)
            snprintf(from, sizeof from, ", from %%%s recorded on %s (shown in cell %d)", n->v.magic, n->v.device,
                     n->v.cell);
        else if (n->v.cell > 0)
            snprintf(from, sizeof from, ", from %%%s in cell %d", n->v.magic, n->v.cell);
        else
            snprintf(from, sizeof from, ", from %%%s", n->v.magic);
    }
    snprintf(line, sizeof line, "  where %s = %s%s", s, v, from);
    utf8_trim(line);
    size_t i;
    json_t *l;
    json_array_foreach(w->lines, i, l)
        if (strcmp(json_string_value(l), line) == 0)
            return false;
    json_array_append_new(w->lines, json_string(line));
    return true;
}

static bool where_full(const why *w)
{
    return json_array_size(w->lines) >= WHERE_MAX;
}

/* The values that n is made of, as "where" lines, up to WHERE_MAX. */
static void where(why *w, const node *n)
{
    if (!n || !n->evaluated || n->kind == N_LIT || where_full(w))
        return;
    bool reference = n->kind == N_NAME || n->kind == N_SELECT || n->kind == N_FIELD
                  || n->kind == N_INDEX || n->kind == N_CALL || n->kind == N_ARITH || n->kind == N_NEG;
    if (reference) {
        if (!where_line(w, n))
            return;
        if (n->kind == N_NAME || n->kind == N_SELECT || n->kind == N_FIELD)
            return;                 /* the chain is one reference */
    }
    if (n->kind == N_INDEX) {       /* its base is part of the reference; a computed index is not */
        where(w, n->b);
        return;
    }
    where(w, n->a);
    where(w, n->b);
    for (int i = 0; i < n->nargs && !where_full(w); i++)
        where(w, n->args[i]);
}

static void explain_cmp(const node *n, char *buf, size_t len)
{
    char a[400], b[400];
    val_format(&n->a->v, 6, a, sizeof a);
    val_format(&n->b->v, 6, b, sizeof b);
    if (strcmp(a, b) == 0) {        /* 1.0000001 against 1: show every digit */
        val_format(&n->a->v, 17, a, sizeof a);
        val_format(&n->b->v, 17, b, sizeof b);
    }
    snprintf(buf, len, "%s %s %s is false", a, cmp_op_text[n->op], b);
}

static void explain_value(why *w, const node *n, char *buf, size_t len)
{
    char s[160], a[400];
    if (n->kind == N_NOT) {
        val_format(&n->a->v, 6, a, sizeof a);
        snprintf(buf, len, "not %s is false: %s is %s", ev_src(w->x, n->a, s, sizeof s), s, a);
        return;
    }
    ev_src(w->x, n, s, sizeof s);
    if (!n->v.many) {
        val_format(&n->v, 6, a, sizeof a);
        snprintf(buf, len, "%s is %s", s, a);
        return;
    }
    size_t at = 0, bad = 0, i;
    json_t *j;
    a[0] = '\0';
    json_array_foreach(n->v.many, i, j)
        if (!jv_truthy(j)) {
            bad++;
            if (at + 4 < sizeof a)
                at += (size_t)snprintf(a + at, sizeof a - at, "%s%s", at ? "; " : "", val_label(&n->v, i));
        }
    utf8_trim(a);
    snprintf(buf, len, "%s is not true for %zu of %zu runs: %s", s, bad, json_array_size(n->v.many), a);
}

/* One clause: why node n (false) is false. Recurses only through and/or
 * nested in parentheses: as deep as the nesting. */
static void explain(why *w, const node *n, char *buf, size_t len)
{
    if (n->kind == N_AND) {         /* the operand that stopped it: the last evaluated */
        int i = n->nargs - 1;
        while (i > 0 && !n->args[i]->evaluated)
            i--;
        explain(w, n->args[i], buf, len);
        return;
    }
    if (n->kind == N_OR) {          /* every operand, each false */
        size_t at = 0;
        buf[0] = '\0';
        for (int i = 0; i < n->nargs && at + 8 < len; i++) {
            char part[500];
            explain(w, n->args[i], part, sizeof part);
            int wrote = snprintf(buf + at, len - at, "%s%s", i ? ", and " : "", part);
            at = wrote < 0 ? len : at + (size_t)wrote;
        }
    } else if (n->kind == N_CMP) {
        explain_cmp(n, buf, len);
    } else {
        explain_value(w, n, buf, len);
    }
    utf8_trim(buf);
}

void explain_false(ev *x)
{
    const expr *e = x->e;
    why w = { .x = x, .lines = json_array() };
    char because[900];
    explain(&w, e->root, because, sizeof because);
    where(&w, e->root);
    error_info *err = &x->rep->error;
    snprintf(err->ename, sizeof err->ename, "AssertionError");
    snprintf(err->evalue, sizeof err->evalue, "%.*s%s: %s", utf8_clip(expr_source(e), 200), expr_source(e),
             strlen(expr_source(e)) > 200 ? "..." : "", because);
    utf8_trim(err->evalue);
    x->rep->lines = w.lines;
}
