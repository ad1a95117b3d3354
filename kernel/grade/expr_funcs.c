/* expr_funcs.c — the functions of %assert/%score expressions (abs, min, count,
 * ...): one table built from the rows of expr_funcs.h, looked up by name, in
 * the way SQLite's func.c keeps its built-ins. The table checks how many
 * arguments a call has and gathers what its flags ask for (the numbers to
 * reduce, or one number per argument); each fn_NAME only computes.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/text.h"
#include "grade/expr_internal.h"

/* What a function is called with. */
typedef struct call {
    ev *x;
    node *n;                    /* the call: its arguments evaluated; n->v is the result to set */
    const json_t **nums;        /* FN_NUMBERS: the numbers (borrowed), at least one */
    size_t count;
} call;

typedef struct builtin {
    const char *name;
    int fewest, most;           /* arguments; most -1: no limit */
    unsigned flags;             /* FN_* of expr_funcs.h */
    const char *takes;          /* for "NAME() takes ..." */
    int (*fn)(call *c);         /* 0, or -1 with the error in c->x's report */
} builtin;

/* ---- helpers of the functions ---- */

/* The items a function looks at in argument v: a list's items when the list
 * is the call's only argument (min([1, 2])), else v's elements (one per run). */
static size_t items_of(const val *v, bool alone, const json_t **list)
{
    *list = alone && v->one && json_is_array(v->one) ? v->one : NULL;
    return *list ? json_array_size(*list) : val_count(v);
}

static const json_t *item(const val *v, const json_t *list, size_t i)
{
    return list ? json_array_get(list, i) : val_elem(v, i);
}

/* FN_NUMBERS: the numbers of the call's arguments into c->nums. */
static int numbers_of(call *c)
{
    const node *n = c->n;
    size_t cap = 0;
    for (int a = 0; a < n->nargs; a++) {
        const val *v = &n->args[a]->v;
        const json_t *list;
        size_t m = items_of(v, n->nargs == 1, &list);
        for (size_t i = 0; i < m; i++) {
            const json_t *j = item(v, list, i);
            if (!jv_is_num(j)) {
                char s[120], t[120];
                jv_format(j, 6, t, sizeof t);
                return ev_fail(c->x, "TypeError", "%s() needs numbers: %s holds %s (%s)", n->name,
                               ev_src(c->x, n->args[a], s, sizeof s), jv_type(j), t);
            }
            if (array_grow(&c->nums, &cap, c->count + 1, sizeof *c->nums) != 0)
                return ev_fail(c->x, "MemoryError", "out of memory");
            c->nums[c->count++] = j;
        }
    }
    if (c->count == 0)
        return ev_fail(c->x, "ValueError", "%s() of nothing: its argument has no values", n->name);
    return 0;
}

/* FN_SCALARS: every argument one number. */
static int scalars(call *c)
{
    const node *n = c->n;
    char what[40];
    snprintf(what, sizeof what, "%s()", n->name);
    for (int i = 0; i < n->nargs; i++) {
        const val *v = &n->args[i]->v;
        if (ev_need_one(c->x, n->args[i], v, what))
            return -1;
        if (!jv_is_num(v->one)) {
            char s[120];
            return ev_fail(c->x, "TypeError", "%s() needs a number; %s is %s", n->name,
                           ev_src(c->x, n->args[i], s, sizeof s), jv_type(v->one));
        }
    }
    return 0;
}

/* A whole double within 2^53 as an integer, else a real. */
static json_t *number_json(double d)
{
    if (d == floor(d) && fabs(d) < 9007199254740992.0)
        return json_integer((json_int_t)d);
    return json_real(d);
}

/* A number of the arguments as a result: integers stay exact. */
static json_t *number_copy(const json_t *j)
{
    long long i;
    if (jv_int(j, &i))
        return json_integer(i);
    return number_json(json_real_value(j));
}

/* ---- the functions ---- */

static int fn_abs(call *c)
{
    const json_t *a = c->n->args[0]->v.one;
    long long i;
    if (!jv_int(a, &i))
        c->n->v.one = json_real(fabs(json_real_value(a)));
    else if (i == INT64_MIN)        /* 2^63 is no int64 */
        c->n->v.one = json_real(9223372036854775808.0);
    else
        c->n->v.one = json_integer(i < 0 ? -i : i);
    return 0;
}

/* all() and any(): every item true, or one. */
static int truth(call *c, bool any)
{
    const val *a = &c->n->args[0]->v;
    const json_t *list;
    size_t m = items_of(a, true, &list);
    bool r = !any;
    for (size_t i = 0; i < m; i++) {
        bool t = jv_truthy(item(a, list, i));
        r = any ? r || t : r && t;
    }
    c->n->v.one = json_boolean(r);
    return 0;
}

static int fn_all(call *c)
{
    return truth(c, false);
}

static int fn_any(call *c)
{
    return truth(c, true);
}

/* count() and len(): runs, values per run, or a list's, object's or text's length. */
static int fn_count(call *c)
{
    const node *n = c->n;
    const val *a = &n->args[0]->v;
    size_t k;
    if (a->runs || a->many) {
        k = val_count(a);
    } else if (json_is_array(a->one) || json_is_object(a->one) || json_is_string(a->one)) {
        k = json_is_array(a->one) ? json_array_size(a->one) : json_is_object(a->one)
          ? json_object_size(a->one) : json_string_length(a->one);
    } else {
        char s[120];
        return ev_fail(c->x, "TypeError", "%s() needs runs, a list, an object or text; %s is %s", n->name,
                       ev_src(c->x, n->args[0], s, sizeof s), jv_type(a->one));
    }
    c->n->v.one = json_integer((json_int_t)k);
    return 0;
}

static int fn_len(call *c)
{
    return fn_count(c);
}

/* max() and min(): the number that compares as `order` against every other. */
static int extreme(call *c, int order)
{
    const json_t *best = c->nums[0];
    for (size_t i = 1; i < c->count; i++)
        if (jv_cmp(c->nums[i], best) == order)
            best = c->nums[i];
    c->n->v.one = number_copy(best);
    return 0;
}

static int fn_max(call *c)
{
    return extreme(c, 1);
}

static int fn_min(call *c)
{
    return extreme(c, -1);
}

static int fn_mean(call *c)
{
    size_t m = c->count;
    double sum = 0;
    for (size_t k = 0; k < m; k++)
        sum += jv_num(c->nums[k]);
    if (!isfinite(sum)) {           /* the sum overflows, the mean does not: sum the shares */
        sum = 0;
        for (size_t k = 0; k < m; k++)
            sum += jv_num(c->nums[k]) / (double)m;
        c->n->v.one = json_real(sum);
        return 0;
    }
    c->n->v.one = json_real(sum / (double)m);
    return 0;
}

/* round(d) and round(d, digits), digits a whole number of either sign. */
static int fn_round(call *c)
{
    node *n = c->n;
    const json_t *a = n->args[0]->v.one, *b = n->nargs == 2 ? n->args[1]->v.one : NULL;
    long long digits = 0, i;
    if (b && !jv_int(b, &digits)) {
        char s[120];
        return ev_fail(c->x, "TypeError", "round()'s count of digits must be a whole number; %s is %s",
                       ev_src(c->x, n->args[1], s, sizeof s), jv_type(b));
    }
    if (jv_int(a, &i) && digits >= 0) {     /* already whole: exact */
        n->v.one = json_integer(i);
        return 0;
    }
    double d = jv_num(a), r;
    if (digits > 0) {               /* finer than a double holds: d itself */
        double p = pow(10, (double)(digits < 400 ? digits : 400)), scaled = d * p;
        r = isfinite(scaled) ? round(scaled) / p : d;
    } else if (digits < 0) {
        double p = pow(10, (double)(-digits < 400 ? -digits : 400));
        r = isfinite(p) ? round(d / p) * p : 0 * d;
    } else {
        r = round(d);
    }
    if (!isfinite(r)) {
        char s[120];
        return ev_overflow(c->x, ev_src(c->x, n, s, sizeof s), "the rounded value");
    }
    n->v.one = number_json(r);
    return 0;
}

static int fn_sum(call *c)
{
    long long total = 0, i;
    size_t k = 0, m = c->count;
    for (; k < m && jv_int(c->nums[k], &i) && !__builtin_add_overflow(total, i, &total); k++)
        ;
    if (k == m) {                   /* exact */
        c->n->v.one = json_integer(total);
        return 0;
    }
    double sum = 0;
    for (k = 0; k < m; k++)
        sum += jv_num(c->nums[k]);
    if (!isfinite(sum)) {
        char s[120];
        return ev_overflow(c->x, ev_src(c->x, c->n, s, sizeof s), "the sum of its values");
    }
    c->n->v.one = number_json(sum);
    return 0;
}

/* ---- the table ---- */

#define FUNCTION(name, fewest, most, flags, takes, gives) { #name, fewest, most, flags, takes, fn_##name },

static const builtin builtins[] = { EXPR_FUNCTIONS(FUNCTION) };

#define NBUILTINS (sizeof builtins / sizeof builtins[0])

static const builtin *builtin_find(const char *name)
{
    for (size_t i = 0; i < NBUILTINS; i++)
        if (strcmp(builtins[i].name, name) == 0)
            return &builtins[i];
    return NULL;
}

const char *expr_function_name(size_t i)
{
    return i < NBUILTINS ? builtins[i].name : NULL;
}

void expr_functions_text(unsigned with, bool calls, char *buf, size_t len)
{
    size_t at = 0, count = 0, total = 0;
    for (size_t i = 0; i < NBUILTINS; i++)
        total += (builtins[i].flags & with) == with;
    buf[0] = '\0';
    for (size_t i = 0; i < NBUILTINS && at < len; i++) {
        if ((builtins[i].flags & with) != with)
            continue;
        const char *join = count == 0 ? "" : calls && count + 1 == total ? " or " : ", ";
        int w = snprintf(buf + at, len - at, "%s%s%s", join, builtins[i].name, calls ? "()" : "");
        at = w < 0 ? len : at + (size_t)w;
        count++;
    }
}

static int unknown_function(ev *x, const char *name)
{
    suggest s;
    suggest_init(&s, name);
    for (size_t i = 0; i < NBUILTINS; i++)
        suggest_add(&s, builtins[i].name);
    char all[200];
    expr_functions_text(0, false, all, sizeof all);
    return ev_fail(x, "LookupError", "unknown function %s()%s%s%s; functions: %s", name,
                   s.best ? "; did you mean " : "", s.best ? s.best : "", s.best ? "()?" : "", all);
}

int ev_call(ev *x, node *n)
{
    const builtin *f = builtin_find(n->name);
    if (!f)
        return unknown_function(x, n->name);
    if (n->nargs < f->fewest || (f->most >= 0 && n->nargs > f->most))
        return ev_fail(x, "TypeError", "%s() takes %s", f->name, f->takes);
    call c = { .x = x, .n = n };
    int rc = (f->flags & FN_SCALARS) && scalars(&c) ? -1
           : (f->flags & FN_NUMBERS) && numbers_of(&c) ? -1
           : f->fn(&c);
    free(c.nums);
    return rc;
}
