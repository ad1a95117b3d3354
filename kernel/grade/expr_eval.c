/* expr_eval.c — evaluating %assert/%score expressions over the session's
 * results (expr.h): the walk of the tree, the operators, and the entry points.
 * What names, fields and indexes stand for is expr_select.c's, the functions
 * are expr_funcs.c's, and why an assertion is false is expr_explain.c's.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "grade/expr_internal.h"

int ev_fail(ev *x, const char *ename, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_setv(&x->rep->error, ename, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- text for messages ---- */

/* The source text from start to end, clipped. */
const char *ev_span(const ev *x, size_t start, size_t end, char *buf, size_t len)
{
    size_t l = end > start ? end - start : 0;
    size_t max = len > 4 ? len - 4 : 0;
    if (l > max)
        snprintf(buf, len, "%.*s...", utf8_clip(x->e->src + start, max), x->e->src + start);
    else
        snprintf(buf, len, "%.*s", (int)l, x->e->src + start);
    return buf;
}

/* The node's source text, clipped. */
const char *ev_src(const ev *x, const node *n, char *buf, size_t len)
{
    return ev_span(x, n->start, n->end, buf, len);
}

int ev_need_one(ev *x, const node *n, const val *v, const char *what)
{
    if (v->one)
        return 0;
    char s[120], vals[400], reducers[120];
    ev_src(x, n, s, sizeof s);
    val_format(v, 6, vals, sizeof vals);
    expr_functions_text(FN_REDUCES, true, reducers, sizeof reducers);
    return ev_fail(x, "ValueError", "%s has %zu values, one per run of %%%s (%s); %s needs one: pick a run "
                "with a selector, as in %s[%s], or reduce them with %s",
                s, val_count(v), v->magic ? v->magic : "?", vals, what, v->magic ? v->magic : "name",
                val_label(v, 0), reducers);
}

/* Past the largest double: an error naming the expression, never inf or NaN
 * (which a score cannot be, and which no JSON document can hold). */
int ev_overflow(ev *x, const char *what, const char *how)
{
    return ev_fail(x, "OverflowError", "%s overflows: %s is beyond the largest double (about 1.8e308)", what, how);
}

/* ---- operators ---- */

static int eval(ev *x, node *n);

const char *const cmp_op_text[] = {"==", "!=", "<", "<=", ">", ">="};

/* The number operand i of chain n (for i = 0, the first operand of the first operator). */
static int arith_operand(ev *x, const node *n, int i)
{
    const node *o = n->args[i];
    char what[32];
    snprintf(what, sizeof what, "'%c'", n->ops[i > 0 ? i : 1]);
    if (ev_need_one(x, o, &o->v, what))
        return -1;
    if (!jv_is_num(o->v.one)) {
        char s[120], t[120];
        jv_format(o->v.one, 6, t, sizeof t);
        return ev_fail(x, "TypeError", "%s needs numbers; %s is %s (%s)", what, ev_src(x, o, s, sizeof s),
                    jv_type(o->v.one), t);
    }
    return 0;
}

/* acc ops[i] args[i] into *out: exact when both are whole and the result fits
 * in 64 bits, else a double, which must be finite. */
static int arith_step(ev *x, const node *n, int i, const json_t *acc, json_t **out)
{
    const json_t *b = n->args[i]->v.one;
    char op = n->ops[i];
    long long p = 0, q = 0, r = 0;
    bool ints = jv_int(acc, &p) && jv_int(b, &q) && op != '/';
    if ((op == '/' || op == '%') && jv_num(b) == 0) {
        char s[120];
        return ev_fail(x, "ZeroDivisionError", "division by zero: %s is 0", ev_src(x, n->args[i], s, sizeof s));
    }
    bool over = ints && (op == '+' ? __builtin_add_overflow(p, q, &r) : op == '-' ? __builtin_sub_overflow(p, q, &r)
                         : op == '*' ? __builtin_mul_overflow(p, q, &r) : false);
    if (ints && op == '%') {
        r = q == -1 ? 0 : p % q;    /* INT64_MIN % -1 traps in C */
        r = r != 0 && (r < 0) != (q < 0) ? r + q : r;
    }
    if (ints && !over) {
        *out = json_integer(r);
        return 0;
    }
    double a = jv_num(acc), c = jv_num(b), d;
    switch (op) {
    case '+': d = a + c; break;
    case '-': d = a - c; break;
    case '*': d = a * c; break;
    case '/': d = a / c; break;
    default: d = fmod(a, c); d = d != 0 && (d < 0) != (c < 0) ? d + c : d; break;
    }
    if (!isfinite(d)) {
        char s[160], fa[40], fb[40], how[100];
        jv_format(acc, 6, fa, sizeof fa);
        jv_format(b, 6, fb, sizeof fb);
        snprintf(how, sizeof how, "%s %c %s", fa, op, fb);
        return ev_overflow(x, ev_span(x, n->start, n->args[i]->end, s, sizeof s), how);
    }
    *out = json_real(d);
    return 0;
}

/* A chain of + - or * / %, left to right: each operand is evaluated, then
 * joined to what came before it. */
static int eval_arith(ev *x, node *n)
{
    json_t *acc = NULL;
    for (int i = 0; i < n->nargs; i++) {
        json_t *next = NULL;
        if (eval(x, n->args[i]) || arith_operand(x, n, i)
            || (i > 0 && arith_step(x, n, i, acc, &next))) {
            json_decref(acc);
            return -1;
        }
        if (i == 0)
            next = json_incref(n->args[0]->v.one);
        json_decref(acc);
        if (!(acc = next))
            return ev_fail(x, "MemoryError", "out of memory");
    }
    n->v.one = acc;
    return 0;
}

static int eval_neg(ev *x, node *n)
{
    const val *a = &n->a->v;
    if (ev_need_one(x, n->a, a, "'-'"))
        return -1;
    if (!jv_is_num(a->one)) {
        char s[120];
        return ev_fail(x, "TypeError", "'-' needs a number; %s is %s", ev_src(x, n->a, s, sizeof s),
                    jv_type(a->one));
    }
    long long i;
    if (jv_int(a->one, &i))
        n->v.one = i == INT64_MIN ? json_real(9223372036854775808.0) : json_integer(-i);
    else
        n->v.one = json_real(-json_real_value(a->one));
    return 0;
}

static int eval_cmp(ev *x, node *n)
{
    const val *a = &n->a->v, *b = &n->b->v;
    char what[32];
    snprintf(what, sizeof what, "'%s'", cmp_op_text[n->op]);
    if (ev_need_one(x, n->a, a, what) || ev_need_one(x, n->b, b, what))
        return -1;
    bool r;
    if (n->op == OP_EQ || n->op == OP_NE) {
        r = jv_same(a->one, b->one) == (n->op == OP_EQ);
    } else {
        int c;
        if (jv_is_num(a->one) && jv_is_num(b->one)) {
            c = jv_cmp(a->one, b->one);
        } else if (json_is_string(a->one) && json_is_string(b->one)) {
            c = strcmp(json_string_value(a->one), json_string_value(b->one));
        } else {
            char s1[120], s2[120];
            return ev_fail(x, "TypeError", "cannot order %s (%s) and %s (%s) with '%s'", ev_src(x, n->a, s1, sizeof s1),
                        jv_type(a->one), ev_src(x, n->b, s2, sizeof s2), jv_type(b->one), cmp_op_text[n->op]);
        }
        r = n->op == OP_LT ? c < 0 : n->op == OP_LE ? c <= 0 : n->op == OP_GT ? c > 0 : c >= 0;
    }
    n->v.one = json_boolean(r);
    return 0;
}

/* and / or over a chain: operands left to right until one decides. */
static int eval_logic(ev *x, node *n)
{
    bool and = n->kind == N_AND, t = and;
    for (int i = 0; i < n->nargs && t == and; i++) {
        if (eval(x, n->args[i]))
            return -1;
        t = val_truthy(&n->args[i]->v);
    }
    n->v.one = json_boolean(t);
    return 0;
}

static void reset(node *n)
{
    if (!n)
        return;
    val_clear(&n->v);
    n->evaluated = false;
    reset(n->a);
    reset(n->b);
    for (int i = 0; i < n->nargs; i++)
        reset(n->args[i]);
}

/* Recurses through n's operands: only as deep as the tree, which expr_parse
 * bounds (EXPR_MAX_DEPTH); chains are walked in loops. */
static int eval(ev *x, node *n)
{
    int rc = 0;
    switch (n->kind) {
    case N_LIT:
        n->v.one = json_incref(n->lit);
        break;
    case N_NAME: case N_SELECT:
        rc = ev_name(x, n);
        break;
    case N_FIELD:
        rc = eval(x, n->a) ? -1 : ev_field(x, n);
        break;
    case N_INDEX:
        rc = eval(x, n->a) || eval(x, n->b) ? -1 : ev_index(x, n);
        break;
    case N_CALL:
        for (int i = 0; i < n->nargs && rc == 0; i++)
            rc = eval(x, n->args[i]);
        rc = rc ? rc : ev_call(x, n);
        break;
    case N_NEG:
        rc = eval(x, n->a) ? -1 : eval_neg(x, n);
        break;
    case N_NOT:
        if ((rc = eval(x, n->a)) == 0)
            n->v.one = json_boolean(!val_truthy(&n->a->v));
        break;
    case N_ARITH:
        rc = eval_arith(x, n);
        break;
    case N_CMP:
        rc = eval(x, n->a) || eval(x, n->b) ? -1 : eval_cmp(x, n);
        break;
    case N_AND: case N_OR:
        rc = eval_logic(x, n);
        break;
    }
    n->evaluated = rc == 0;
    if (rc == 0 && !n->v.one && !n->v.many)
        return ev_fail(x, "MemoryError", "out of memory");
    return rc;
}

/* ---- entry points ---- */

static int run(expr *e, const result_store *rs, const result_store *recorded, expr_report *rep, ev *x)
{
    memset(rep, 0, sizeof *rep);
    *x = (ev){ .rs = rs, .recorded = recorded, .e = e, .rep = rep };
    reset(e->root);
    return eval(x, e->root);
}

int expr_check(expr *e, const result_store *rs, expr_report *rep)
{
    return expr_check_with(e, rs, NULL, rep);
}

int expr_check_with(expr *e, const result_store *rs, const result_store *recorded, expr_report *rep)
{
    ev x;
    if (run(e, rs, recorded, rep, &x))
        return -1;
    if (val_truthy(&e->root->v))
        return 1;
    explain_false(&x);
    return 0;
}

static void add_keys(json_t *set, const json_t *obj)
{
    const char *key;
    json_t *ignored;
    json_object_foreach((json_t *)obj, key, ignored)
        json_object_set_new(set, key, json_true());
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *expr_names(const char *src, const result_store *rs)
{
    json_t *set = json_object(), *out = json_array();
    if (!src) {
        for (size_t i = 0; i < results_count(rs); i++)
            json_object_set_new(set, json_string_value(json_object_get(results_get(rs, i, NULL), "magic")),
                                json_true());
        for (size_t i = 0; expr_function_name(i); i++)
            json_object_set_new(set, expr_function_name(i), json_true());
    } else {
        char msg[200];
        size_t at;
        expr *e = expr_parse(src, msg, sizeof msg, &at);
        expr_report rep;
        memset(&rep, 0, sizeof rep);
        ev x;
        if (e && run(e, rs, NULL, &rep, &x) == 0) {
            const val *v = &e->root->v;
            for (size_t i = 0; i < val_count(v); i++)
                if (json_is_object(val_elem(v, i)))
                    add_keys(set, val_elem(v, i));
            if (v->runs) {
                add_keys(set, v->doc);
                add_keys(set, json_object_get(v->doc, "params"));
            }
        }
        json_decref(rep.lines);
        expr_free(e);
    }
    size_t n = json_object_size(set), i = 0;
    const char **names = malloc((n ? n : 1) * sizeof *names);
    const char *key;
    json_t *ignored;
    json_object_foreach(set, key, ignored)
        if (names)
            names[i++] = key;
    if (names) {
        qsort(names, n, sizeof *names, cmp_str);
        for (i = 0; i < n; i++)
            json_array_append_new(out, json_string(names[i]));
    }
    free(names);
    json_decref(set);
    return out;
}

int expr_number(expr *e, const result_store *rs, double *out, expr_report *rep)
{
    return expr_number_with(e, rs, NULL, out, rep);
}

int expr_number_with(expr *e, const result_store *rs, const result_store *recorded, double *out,
                     expr_report *rep)
{
    ev x;
    if (run(e, rs, recorded, rep, &x))
        return -1;
    const val *v = &e->root->v;
    if (ev_need_one(&x, e->root, v, "a score"))
        return -1;
    if (!jv_is_num(v->one)) {
        char t[200];
        jv_format(v->one, 6, t, sizeof t);
        return ev_fail(&x, "TypeError", "a score must be a number (or true/false); %s is %s (%s)",
                    expr_source(e), jv_type(v->one), t);
    }
    *out = jv_num(v->one);
    if (!isfinite(*out))
        return ev_fail(&x, "ValueError", "the score %s is not a finite number", expr_source(e));
    return 0;
}
