/* expr_eval.c — evaluating %assert/%score expressions over the session's
 * results, and saying why an assertion is false (expr.h).
 *
 * Every node keeps its last value, so a false assertion can show what was
 * compared ("3.2 > 9.04 is false") and where each value came from
 * ("where matmul[variant=naive].gflops = 4.52, from %matmul in cell 3").
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "grade/expr_internal.h"
#include "lang/parse_internal.h"

#define WHERE_MAX 12

typedef struct ev {
    const result_store *rs;
    const expr *e;
    expr_report *rep;
} ev;

void val_clear(val *v)
{
    json_decref(v->one);
    json_decref(v->many);
    json_decref(v->labels);
    memset(v, 0, sizeof *v);
}

static int fail(ev *x, const char *ename, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(ev *x, const char *ename, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_setv(&x->rep->error, ename, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- text for messages ---- */

/* The source text from start to end, clipped. */
static const char *src_span(const ev *x, size_t start, size_t end, char *buf, size_t len)
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
static const char *src_of(const ev *x, const node *n, char *buf, size_t len)
{
    return src_span(x, n->start, n->end, buf, len);
}

static void fmt_json(const json_t *j, int prec, char *buf, size_t len)
{
    if (json_is_integer(j)) {
        snprintf(buf, len, "%lld", (long long)json_integer_value(j));
    } else if (json_is_real(j)) {
        /* prec 17 means "every digit that matters": the shortest that reads back the same */
        double d = json_real_value(j);
        for (int p = prec < 17 ? prec : 15; p <= 17; p++) {
            snprintf(buf, len, "%.*g", p, d);
            if (prec < 17 || strtod(buf, NULL) == d)
                break;
        }
    } else if (json_is_string(j)) {
        snprintf(buf, len, "'%.*s'", utf8_clip(json_string_value(j), len > 8 ? len - 8 : 0),
                 json_string_value(j));
    } else if (!j) {
        snprintf(buf, len, "nothing");
    } else {
        char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(6));
        if (s && strlen(s) + 1 > len && len > 4)
            snprintf(buf, len, "%.*s...", utf8_clip(s, len - 4), s);
        else
            snprintf(buf, len, "%s", s ? s : "?");
        free(s);
    }
}

static const char *label_at(const val *v, size_t i)
{
    const char *l = json_string_value(json_array_get(v->labels, i));
    return l ? l : "?";
}

/* A value for people: a number, 'text', a run ("the run variant=naive"),
 * or one value per run ("4.52 (variant=naive), 3.2 (variant=tiled)"). */
static void fmt_val(const val *v, int prec, char *buf, size_t len)
{
    if (v->one && v->runs) {
        snprintf(buf, len, "the run %s of %%%s", label_at(v, 0), v->magic ? v->magic : "?");
        return;
    }
    if (v->one || !v->many) {
        fmt_json(v->one, prec, buf, len);
        return;
    }
    size_t n = json_array_size(v->many), at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && at + 8 < len; i++) {
        char one[96];
        if (v->runs)
            snprintf(one, sizeof one, "run");
        else
            fmt_json(json_array_get(v->many, i), prec, one, sizeof one);
        int w = snprintf(buf + at, len - at, "%s%s (%s)", i ? ", " : "", one, label_at(v, i));
        if (w < 0 || (size_t)w >= len - at) {
            snprintf(buf + (len > 5 ? len - 5 : 0), len > 5 ? 5 : len, "...");
            return;
        }
        at += (size_t)w;
    }
}

static const char *type_name(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "a list";
    case JSON_STRING: return "text";
    case JSON_INTEGER: case JSON_REAL: return "a number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* ---- values ---- */

static bool truthy_json(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_TRUE: return true;
    case JSON_INTEGER: return json_integer_value(j) != 0;
    case JSON_REAL: return json_real_value(j) != 0;
    case JSON_STRING: return json_string_length(j) > 0;
    case JSON_ARRAY: return json_array_size(j) > 0;
    case JSON_OBJECT: return json_object_size(j) > 0;
    default: return false;
    }
}

/* Every value holds (one per run: all of them). */
static bool truthy(const val *v)
{
    if (v->one)
        return truthy_json(v->one);
    size_t i;
    json_t *j;
    json_array_foreach(v->many, i, j)
        if (!truthy_json(j))
            return false;
    return v->many != NULL;
}

static bool is_num(const json_t *j)
{
    return json_is_number(j) || json_is_boolean(j);
}

static double num(const json_t *j)
{
    return json_is_boolean(j) ? (json_is_true(j) ? 1 : 0) : json_number_value(j);
}

/* An integer or a boolean as an exact integer. */
static bool int_of(const json_t *j, long long *out)
{
    if (json_is_integer(j))
        *out = json_integer_value(j);
    else if (json_is_boolean(j))
        *out = json_is_true(j);
    else
        return false;
    return true;
}

/* a <=> b for numbers (true and false count 1 and 0): exact between
 * integers, which doubles are not beyond 2^53; as doubles otherwise. */
static int num_cmp(const json_t *a, const json_t *b)
{
    long long p, q;
    if (int_of(a, &p) && int_of(b, &q))
        return (p > q) - (p < q);
    double x = num(a), y = num(b);
    return (x > y) - (x < y);
}

static bool same(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return num_cmp(a, b) == 0;
    return json_equal((json_t *)a, (json_t *)b);
}

/* A field of a run: the run's own, else its document's, else a parameter. */
static const json_t *run_field(const json_t *doc, const json_t *run, const char *key)
{
    const json_t *v = json_object_get(run, key);
    if (!v && run != doc)
        v = json_object_get(doc, key);
    if (!v)
        v = json_object_get(json_object_get(doc, "params"), key);
    return v;
}

/* "variant=tiled,tile=16": the values that tell a sweep's runs apart. */
static json_t *run_label(const json_t *doc, const json_t *run, size_t index, size_t count)
{
    char buf[160] = "";
    size_t at = 0, i;
    json_t *k;
    json_t *keys = json_object_get(json_object_get(doc, "sweep"), "varying");
    if (json_array_size(keys) == 0 && json_object_get(run, "variant"))
        keys = NULL;
    json_array_foreach(keys, i, k) {
        const json_t *v = json_is_string(k) ? run_field(doc, run, json_string_value(k)) : NULL;
        char one[64];
        fmt_json(v, 6, one, sizeof one);
        if (json_is_string(v))
            snprintf(one, sizeof one, "%s", json_string_value(v));
        int w = snprintf(buf + at, sizeof buf - at, "%s%s=%s", at ? "," : "", json_string_value(k), one);
        if (w < 0 || (size_t)w >= sizeof buf - at)
            break;
        at += (size_t)w;
    }
    if (!keys && json_is_string(json_object_get(run, "variant")))
        snprintf(buf, sizeof buf, "variant=%s", json_string_value(json_object_get(run, "variant")));
    if (!buf[0])
        snprintf(buf, sizeof buf, count > 1 ? "run %zu" : "the only run", index);
    utf8_trim(buf);                 /* a value cut mid-character would make the label vanish */
    return json_string(buf);
}

/* Sets v to its values, collapsed to one when every run has the same. */
static void set_values(val *v, json_t *values /* stolen */, json_t *labels /* stolen */)
{
    size_t n = json_array_size(values);
    bool one = n >= 1;
    for (size_t i = 1; i < n && one; i++)
        one = same(json_array_get(values, 0), json_array_get(values, i));
    if (one) {
        v->one = json_incref(json_array_get(values, 0));
        json_decref(values);
        v->labels = labels;
    } else {
        v->many = values;
        v->labels = labels;
    }
}

/* The value's elements: one per run, or the one value. */
static size_t count_of(const val *v)
{
    return v->one ? 1 : json_array_size(v->many);
}

static const json_t *elem(const val *v, size_t i)
{
    return v->one ? v->one : json_array_get(v->many, i);
}

static int need_one(ev *x, const node *n, const val *v, const char *what)
{
    if (v->one)
        return 0;
    char s[120], vals[400];
    src_of(x, n, s, sizeof s);
    fmt_val(v, 6, vals, sizeof vals);
    return fail(x, "ValueError", "%s has %zu values, one per run of %%%s (%s); %s needs one: pick a run "
                "with a selector, as in %s[%s], or reduce them with min(), max(), mean(), all() or any()",
                s, count_of(v), v->magic ? v->magic : "?", vals, what, v->magic ? v->magic : "name",
                label_at(v, 0));
}

/* ---- names and selectors ---- */

static const json_t *newest(const ev *x, const char *magic, size_t from, size_t *at, int *cell)
{
    for (size_t i = from; i < results_count(x->rs); i++) {
        const json_t *d = results_get(x->rs, i, cell);
        if (strcmp(json_string_value(json_object_get(d, "magic")), magic) == 0) {
            *at = i;
            return d;
        }
    }
    return NULL;
}

/* A lookup that missed, in a session that dropped old results to stay within
 * its bounds (results.h): say so, since the one wanted may be among them. */
static int lookup_missed(ev *x)
{
    int cell;
    size_t dropped = results_evicted(x->rs, &cell);
    size_t at = strlen(x->rep->error.evalue);
    if (dropped && at < sizeof x->rep->error.evalue)
        snprintf(x->rep->error.evalue + at, sizeof x->rep->error.evalue - at,
                 " (note: the %zu oldest results of this session, up to cell %d, were dropped to keep it "
                 "within %d results and %u MiB)", dropped, cell, RESULTS_KEEP, RESULTS_MAX_BYTES >> 20);
    utf8_trim(x->rep->error.evalue);
    return -1;
}

static int unknown_name(ev *x, const char *name)
{
    if (magic_find(name)) {
        fail(x, "LookupError", "no %%%s result in this session yet: run %%%s before this check "
             "(results live as long as the kernel; a restart forgets them)", name, name);
        return lookup_missed(x);
    }
    char have[400] = "";
    size_t at = 0;
    suggest s;
    suggest_init(&s, name);
    for (size_t i = 0; i < results_count(x->rs); i++) {
        const char *m = json_string_value(json_object_get(results_get(x->rs, i, NULL), "magic"));
        suggest_add(&s, m);
        if (!strstr(have, m) && at + strlen(m) + 4 < sizeof have)
            at += (size_t)snprintf(have + at, sizeof have - at, "%s%s", at ? ", " : "", m);
    }
    const char *near = s.best ? s.best : magic_nearest(name);
    char hint[160] = "";
    if (near)
        snprintf(hint, sizeof hint, "; did you mean %s?", near);
    return fail(x, "LookupError", "unknown name '%s': a name is a magic whose result to check "
                "(this session has results of: %s)%s", name, at ? have : "none yet", hint);
}

static bool run_matches(const node *n, const json_t *doc, const json_t *run)
{
    for (int k = 0; k < n->nsel; k++) {
        const json_t *f = run_field(doc, run, n->keys[k]);
        if (!f || !same(f, n->vals[k]))
            return false;
    }
    return true;
}

static json_t *runs_array(const json_t *doc)
{
    const json_t *runs = json_object_get(doc, "runs");
    if (json_is_array(runs) && json_array_size(runs) > 0)
        return json_incref((json_t *)runs);
    return json_pack("[O]", doc);
}

/* The runs of doc that n selects (all of them for a plain name) into v. */
static size_t take_runs(const node *n, const json_t *doc, int cell, val *v)
{
    json_t *runs = runs_array(doc), *keep = json_array(), *labels = json_array();
    size_t i, total = json_array_size(runs);
    json_t *r;
    json_array_foreach(runs, i, r)
        if (n->kind != N_SELECT || run_matches(n, doc, r)) {
            json_array_append(keep, r);
            json_array_append_new(labels, run_label(doc, r, i, total));
        }
    json_decref(runs);
    size_t got = json_array_size(keep);
    v->doc = doc;
    v->runs = true;
    v->cell = cell;
    v->magic = json_string_value(json_object_get(doc, "magic"));
    if (got == 1) {
        v->one = json_incref(json_array_get(keep, 0));
        json_decref(keep);
    } else {
        v->many = keep;
    }
    v->labels = labels;
    return got;
}

static int no_match(ev *x, const node *n, const json_t *doc, int cell)
{
    char want[200] = "", have[400] = "", near[160] = "";
    size_t at = 0;
    for (int k = 0; k < n->nsel; k++) {
        char one[80];
        fmt_json(n->vals[k], 6, one, sizeof one);
        if (json_is_string(n->vals[k]))
            snprintf(one, sizeof one, "%s", json_string_value(n->vals[k]));
        at += (size_t)snprintf(want + at, sizeof want - at, "%s%s=%s", k ? ", " : "", n->keys[k], one);
        if (at >= sizeof want)
            break;
    }
    json_t *runs = runs_array(doc);
    size_t i, total = json_array_size(runs);
    json_t *r;
    at = 0;
    for (int k = 0; k < n->nsel; k++) {
        bool anywhere = false;
        json_array_foreach(runs, i, r)
            anywhere = anywhere || run_field(doc, r, n->keys[k]);
        if (!anywhere) {
            suggest s;
            suggest_init(&s, n->keys[k]);
            const char *key;
            json_t *ignored;
            json_object_foreach(json_array_get(runs, 0), key, ignored)
                suggest_add(&s, key);
            json_decref(runs);
            return fail(x, "LookupError", "no %%%s run has %s: its runs have no field '%s'%s%s%s", n->name,
                        want, n->keys[k], s.best ? "; did you mean '" : "", s.best ? s.best : "",
                        s.best ? "'?" : "");
        }
    }
    for (int k = 0; k < n->nsel && !near[0]; k++) {   /* a mistyped value: the nearest one there is */
        bool found = false;
        suggest s;
        suggest_init(&s, json_is_string(n->vals[k]) ? json_string_value(n->vals[k]) : "");
        json_array_foreach(runs, i, r) {
            const json_t *f = run_field(doc, r, n->keys[k]);
            found = found || (f && same(f, n->vals[k]));
            if (json_is_string(f))
                suggest_add(&s, json_string_value(f));
        }
        if (!found && s.best && json_is_string(n->vals[k]))
            snprintf(near, sizeof near, " (did you mean %s=%s?)", n->keys[k], s.best);
    }
    json_array_foreach(runs, i, r) {
        json_t *l = run_label(doc, r, i, total);
        int w = snprintf(have + at, sizeof have - at, "%s%s", at ? "; " : "", json_string_value(l));
        json_decref(l);
        if (w < 0 || (size_t)w >= sizeof have - at) {
            snprintf(have + (sizeof have - 5), 5, "...");
            break;
        }
        at += (size_t)w;
    }
    json_decref(runs);
    char from[32] = "";
    if (cell > 0)
        snprintf(from, sizeof from, " (cell %d)", cell);
    fail(x, "LookupError", "no %%%s run in this session has %s%s; the newest %%%s result%s has: %s",
         n->name, want, near, n->name, from, have);
    return lookup_missed(x);
}

static int eval_name(ev *x, node *n)
{
    size_t at = 0;
    int cell = 0;
    const json_t *doc = newest(x, n->name, 0, &at, &cell);
    if (!doc)
        return unknown_name(x, n->name);
    if (n->kind == N_NAME) {
        take_runs(n, doc, cell, &n->v);
        return 0;
    }
    /* the newest result with a matching run: an earlier cell's naive run
     * still counts after a later cell ran only tiled */
    const json_t *d = doc;
    int c = cell;
    for (size_t i = at; d; d = newest(x, n->name, i + 1, &i, &c)) {
        if (take_runs(n, d, c, &n->v) > 0)
            return 0;
        val_clear(&n->v);
    }
    return no_match(x, n, doc, cell);
}

/* ---- fields and indexes ---- */

static int missing_field(ev *x, const node *n, const json_t *obj, const char *label)
{
    char s[120], keys[300] = "";
    src_of(x, n->a, s, sizeof s);
    suggest sg;
    suggest_init(&sg, n->name);
    size_t at = 0;
    const char *key;
    json_t *ignored;
    json_object_foreach((json_t *)obj, key, ignored) {
        suggest_add(&sg, key);
        if (at + strlen(key) + 6 < sizeof keys)
            at += (size_t)snprintf(keys + at, sizeof keys - at, "%s%s", at ? ", " : "", key);
        else if (at + 4 < sizeof keys)
            at += (size_t)snprintf(keys + at, sizeof keys - at, "...");
    }
    char hint[120] = "";
    if (sg.best)
        snprintf(hint, sizeof hint, "did you mean '%s'? ", sg.best);
    return fail(x, "LookupError", "%s%s%s has no field '%s'; %sits fields: %s", s, label ? " " : "",
                label ? label : "", n->name, hint, keys);
}

static int eval_field(ev *x, node *n)
{
    const val *b = &n->a->v;
    json_t *values = json_array();
    for (size_t i = 0; i < count_of(b); i++) {
        const json_t *e = elem(b, i), *f;
        char label[160] = "";
        if (b->many)
            snprintf(label, sizeof label, "(run %s)", label_at(b, i));
        if (b->runs) {
            f = run_field(b->doc, e, n->name);
        } else if (json_is_object(e)) {
            f = json_object_get(e, n->name);
        } else {
            char s[120], v[120];
            json_decref(values);
            fmt_json(e, 6, v, sizeof v);
            return fail(x, "TypeError", "%s is %s (%s), which has no fields: '.%s' needs an object",
                        src_of(x, n->a, s, sizeof s), type_name(e), v, n->name);
        }
        if (!f) {
            json_decref(values);
            return missing_field(x, n, e, label[0] ? label : NULL);
        }
        json_array_append(values, (json_t *)f);
    }
    n->v.magic = b->magic;
    n->v.cell = b->cell;
    set_values(&n->v, values, json_incref(b->labels));
    return 0;
}

static int eval_index(ev *x, node *n)
{
    const val *b = &n->a->v, *iv = &n->b->v;
    if (need_one(x, n->b, iv, "an index"))
        return -1;
    const json_t *idx = iv->one;
    char s[120], is[120];
    src_of(x, n->a, s, sizeof s);
    fmt_json(idx, 6, is, sizeof is);
    if (b->runs && b->many && json_is_integer(idx)) {   /* runs[i]: one run of several */
        long long i = json_integer_value(idx), len = (long long)json_array_size(b->many);
        if (i < -len || i >= len)
            return fail(x, "IndexError", "%s has %lld runs: index %lld is out of range", s, len, i);
        i = i < 0 ? i + len : i;
        n->v = (val){ .one = json_incref(json_array_get(b->many, (size_t)i)), .doc = b->doc, .runs = true,
                      .magic = b->magic, .cell = b->cell,
                      .labels = json_pack("[O]", json_array_get(b->labels, (size_t)i)) };
        return 0;
    }
    json_t *values = json_array();
    for (size_t k = 0; k < count_of(b); k++) {
        const json_t *e = elem(b, k), *f = NULL;
        if (json_is_object(e) && json_is_string(idx)) {
            f = json_object_get(e, json_string_value(idx));
            if (!f) {
                char keys[300] = "";
                size_t at = 0;
                const char *key;
                json_t *ignored;
                json_object_foreach((json_t *)e, key, ignored)
                    if (at + strlen(key) + 8 < sizeof keys)
                        at += (size_t)snprintf(keys + at, sizeof keys - at, "%s'%s'", at ? ", " : "", key);
                json_decref(values);
                return fail(x, "LookupError", "%s has no key %s; its keys: %s", s, is, keys);
            }
        } else if (json_is_array(e) && json_is_integer(idx)) {
            long long i = json_integer_value(idx), len = (long long)json_array_size(e);
            if (i < -len || i >= len) {
                json_decref(values);
                return fail(x, "IndexError", "%s has %lld items: index %lld is out of range", s, len, i);
            }
            f = json_array_get(e, (size_t)(i < 0 ? i + len : i));
        } else {
            char v[120];
            fmt_json(e, 6, v, sizeof v);
            json_decref(values);
            return fail(x, "TypeError", "%s is %s (%s): it cannot be indexed by %s %s", s, type_name(e), v,
                        type_name(idx), is);
        }
        json_array_append(values, (json_t *)f);
    }
    n->v.magic = b->magic;
    n->v.cell = b->cell;
    set_values(&n->v, values, json_incref(b->labels));
    return 0;
}

/* ---- functions ---- */

static const char *const functions[] = {"abs", "all", "any", "count", "len", "max", "mean", "min",
                                        "round", "sum", NULL};

/* The numbers a reducing function works on: its one argument's elements (one
 * per run, or a list's items), or its several arguments (borrowed). */
static int numbers_of(ev *x, const node *n, const json_t ***out, size_t *count)
{
    size_t cap = 0;
    *count = 0;
    *out = NULL;
    for (int a = 0; a < n->nargs; a++) {
        const val *v = &n->args[a]->v;
        const json_t *list = n->nargs == 1 && v->one && json_is_array(v->one) ? v->one : NULL;
        size_t m = list ? json_array_size(list) : count_of(v);
        for (size_t i = 0; i < m; i++) {
            const json_t *j = list ? json_array_get(list, i) : elem(v, i);
            if (!is_num(j)) {
                char s[120], t[120];
                fmt_json(j, 6, t, sizeof t);
                free(*out);
                return fail(x, "TypeError", "%s() needs numbers: %s holds %s (%s)", n->name,
                            src_of(x, n->args[a], s, sizeof s), type_name(j), t);
            }
            if (*count == cap) {
                cap = cap ? cap * 2 : 16;
                const json_t **g = realloc(*out, cap * sizeof *g);
                if (!g) {
                    free(*out);
                    return fail(x, "MemoryError", "out of memory");
                }
                *out = g;
            }
            (*out)[(*count)++] = j;
        }
    }
    return 0;
}

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
    if (int_of(j, &i))
        return json_integer(i);
    return number_json(json_real_value(j));
}

/* Past the largest double: an error naming the expression, never inf or NaN
 * (which a score cannot be, and which no JSON document can hold). */
static int overflow(ev *x, const char *what, const char *how)
{
    return fail(x, "OverflowError", "%s overflows: %s is beyond the largest double (about 1.8e308)", what, how);
}

static int call_sum(ev *x, node *n, const json_t **xs, size_t m)
{
    long long total = 0, i;
    size_t k = 0;
    for (; k < m && int_of(xs[k], &i) && !__builtin_add_overflow(total, i, &total); k++)
        ;
    if (k == m) {                   /* exact */
        n->v.one = json_integer(total);
        return 0;
    }
    double sum = 0;
    for (k = 0; k < m; k++)
        sum += num(xs[k]);
    if (!isfinite(sum)) {
        char s[120];
        return overflow(x, src_of(x, n, s, sizeof s), "the sum of its values");
    }
    n->v.one = number_json(sum);
    return 0;
}

static void call_mean(node *n, const json_t **xs, size_t m)
{
    double sum = 0;
    for (size_t k = 0; k < m; k++)
        sum += num(xs[k]);
    if (!isfinite(sum)) {           /* the sum overflows, the mean does not: sum the shares */
        sum = 0;
        for (size_t k = 0; k < m; k++)
            sum += num(xs[k]) / (double)m;
        n->v.one = json_real(sum);
        return;
    }
    n->v.one = json_real(sum / (double)m);
}

static int call_abs(node *n, const json_t *a)
{
    long long i;
    if (!int_of(a, &i))
        n->v.one = json_real(fabs(json_real_value(a)));
    else if (i == INT64_MIN)        /* 2^63 is no int64 */
        n->v.one = json_real(9223372036854775808.0);
    else
        n->v.one = json_integer(i < 0 ? -i : i);
    return 0;
}

/* round(d) and round(d, digits), digits a whole number of either sign. */
static int call_round(ev *x, node *n)
{
    const json_t *a = n->args[0]->v.one, *b = n->nargs == 2 ? n->args[1]->v.one : NULL;
    long long digits = 0, i;
    if (b && !int_of(b, &digits)) {
        char s[120];
        return fail(x, "TypeError", "round()'s count of digits must be a whole number; %s is %s",
                    src_of(x, n->args[1], s, sizeof s), type_name(b));
    }
    if (int_of(a, &i) && digits >= 0) {     /* already whole: exact */
        n->v.one = json_integer(i);
        return 0;
    }
    double d = num(a), r;
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
        return overflow(x, src_of(x, n, s, sizeof s), "the rounded value");
    }
    n->v.one = number_json(r);
    return 0;
}

/* count() and len(): runs, values per run, or a list's, object's or text's length. */
static int call_count(ev *x, node *n, const char *f)
{
    const val *a = &n->args[0]->v;
    size_t c;
    if (a->runs || a->many) {
        c = count_of(a);
    } else if (json_is_array(a->one) || json_is_object(a->one) || json_is_string(a->one)) {
        c = json_is_array(a->one) ? json_array_size(a->one) : json_is_object(a->one)
          ? json_object_size(a->one) : json_string_length(a->one);
    } else {
        char s[120];
        return fail(x, "TypeError", "%s() needs runs, a list, an object or text; %s is %s", f,
                    src_of(x, n->args[0], s, sizeof s), type_name(a->one));
    }
    n->v.one = json_integer((json_int_t)c);
    return 0;
}

static void call_all_any(node *n, const char *f)
{
    const val *a = &n->args[0]->v;
    bool any = f[1] == 'n', r = !any;
    const json_t *list = a->one && json_is_array(a->one) ? a->one : NULL;
    size_t m = list ? json_array_size(list) : count_of(a);
    for (size_t i = 0; i < m; i++) {
        bool t = truthy_json(list ? json_array_get(list, i) : elem(a, i));
        r = any ? r || t : r && t;
    }
    n->v.one = json_boolean(r);
}

static int eval_call(ev *x, node *n)
{
    const char *f = n->name;
    bool known = false;
    for (int i = 0; functions[i]; i++)
        known = known || strcmp(functions[i], f) == 0;
    if (!known) {
        suggest s;
        suggest_init(&s, f);
        for (int i = 0; functions[i]; i++)
            suggest_add(&s, functions[i]);
        return fail(x, "LookupError", "unknown function %s()%s%s%s; functions: abs, all, any, count, len, "
                    "max, mean, min, round, sum", f, s.best ? "; did you mean " : "", s.best ? s.best : "",
                    s.best ? "()?" : "");
    }
    bool one_arg = strcmp(f, "min") != 0 && strcmp(f, "max") != 0 && strcmp(f, "round") != 0;
    if (n->nargs == 0 || (one_arg && n->nargs != 1) || (strcmp(f, "round") == 0 && n->nargs > 2))
        return fail(x, "TypeError", "%s() takes %s", f, one_arg ? "one argument"
                    : strcmp(f, "round") == 0 ? "a number and optionally a count of digits" : "at least one argument");
    if (strcmp(f, "count") == 0 || strcmp(f, "len") == 0)
        return call_count(x, n, f);
    if (strcmp(f, "all") == 0 || strcmp(f, "any") == 0) {
        call_all_any(n, f);
        return 0;
    }
    if (strcmp(f, "abs") == 0 || strcmp(f, "round") == 0) {
        for (int i = 0; i < n->nargs; i++) {
            const val *v = &n->args[i]->v;
            if (need_one(x, n->args[i], v, "abs() and round()"))
                return -1;
            if (!is_num(v->one)) {
                char s[120];
                return fail(x, "TypeError", "%s() needs a number; %s is %s", f,
                            src_of(x, n->args[i], s, sizeof s), type_name(v->one));
            }
        }
        return f[0] == 'a' ? call_abs(n, n->args[0]->v.one) : call_round(x, n);
    }
    const json_t **xs;
    size_t m;
    if (numbers_of(x, n, &xs, &m))
        return -1;
    if (m == 0) {
        free(xs);
        return fail(x, "ValueError", "%s() of nothing: its argument has no values", f);
    }
    int rc = 0;
    if (strcmp(f, "sum") == 0) {
        rc = call_sum(x, n, xs, m);
    } else if (strcmp(f, "mean") == 0) {
        call_mean(n, xs, m);
    } else {
        const json_t *best = xs[0];
        for (size_t i = 1; i < m; i++)
            if (num_cmp(xs[i], best) == (f[1] == 'i' ? -1 : 1))
                best = xs[i];
        n->v.one = number_copy(best);
    }
    free(xs);
    return rc;
}

/* ---- operators ---- */

static int eval(ev *x, node *n);

static const char *const cmp_text[] = {"==", "!=", "<", "<=", ">", ">="};

/* The number operand i of chain n (for i = 0, the first operand of the first operator). */
static int arith_operand(ev *x, const node *n, int i)
{
    const node *o = n->args[i];
    char what[32];
    snprintf(what, sizeof what, "'%c'", n->ops[i > 0 ? i : 1]);
    if (need_one(x, o, &o->v, what))
        return -1;
    if (!is_num(o->v.one)) {
        char s[120], t[120];
        fmt_json(o->v.one, 6, t, sizeof t);
        return fail(x, "TypeError", "%s needs numbers; %s is %s (%s)", what, src_of(x, o, s, sizeof s),
                    type_name(o->v.one), t);
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
    bool ints = int_of(acc, &p) && int_of(b, &q) && op != '/';
    if ((op == '/' || op == '%') && num(b) == 0) {
        char s[120];
        return fail(x, "ZeroDivisionError", "division by zero: %s is 0", src_of(x, n->args[i], s, sizeof s));
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
    double a = num(acc), c = num(b), d;
    switch (op) {
    case '+': d = a + c; break;
    case '-': d = a - c; break;
    case '*': d = a * c; break;
    case '/': d = a / c; break;
    default: d = fmod(a, c); d = d != 0 && (d < 0) != (c < 0) ? d + c : d; break;
    }
    if (!isfinite(d)) {
        char s[160], fa[40], fb[40], how[100];
        fmt_json(acc, 6, fa, sizeof fa);
        fmt_json(b, 6, fb, sizeof fb);
        snprintf(how, sizeof how, "%s %c %s", fa, op, fb);
        return overflow(x, src_span(x, n->start, n->args[i]->end, s, sizeof s), how);
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
            return fail(x, "MemoryError", "out of memory");
    }
    n->v.one = acc;
    return 0;
}

static int eval_neg(ev *x, node *n)
{
    const val *a = &n->a->v;
    if (need_one(x, n->a, a, "'-'"))
        return -1;
    if (!is_num(a->one)) {
        char s[120];
        return fail(x, "TypeError", "'-' needs a number; %s is %s", src_of(x, n->a, s, sizeof s),
                    type_name(a->one));
    }
    long long i;
    if (int_of(a->one, &i))
        n->v.one = i == INT64_MIN ? json_real(9223372036854775808.0) : json_integer(-i);
    else
        n->v.one = json_real(-json_real_value(a->one));
    return 0;
}

static int eval_cmp(ev *x, node *n)
{
    const val *a = &n->a->v, *b = &n->b->v;
    char what[32];
    snprintf(what, sizeof what, "'%s'", cmp_text[n->op]);
    if (need_one(x, n->a, a, what) || need_one(x, n->b, b, what))
        return -1;
    bool r;
    if (n->op == OP_EQ || n->op == OP_NE) {
        r = same(a->one, b->one) == (n->op == OP_EQ);
    } else {
        int c;
        if (is_num(a->one) && is_num(b->one)) {
            c = num_cmp(a->one, b->one);
        } else if (json_is_string(a->one) && json_is_string(b->one)) {
            c = strcmp(json_string_value(a->one), json_string_value(b->one));
        } else {
            char s1[120], s2[120];
            return fail(x, "TypeError", "cannot order %s (%s) and %s (%s) with '%s'", src_of(x, n->a, s1, sizeof s1),
                        type_name(a->one), src_of(x, n->b, s2, sizeof s2), type_name(b->one), cmp_text[n->op]);
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
        t = truthy(&n->args[i]->v);
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
        rc = eval_name(x, n);
        break;
    case N_FIELD:
        rc = eval(x, n->a) ? -1 : eval_field(x, n);
        break;
    case N_INDEX:
        rc = eval(x, n->a) || eval(x, n->b) ? -1 : eval_index(x, n);
        break;
    case N_CALL:
        for (int i = 0; i < n->nargs && rc == 0; i++)
            rc = eval(x, n->args[i]);
        rc = rc ? rc : eval_call(x, n);
        break;
    case N_NEG:
        rc = eval(x, n->a) ? -1 : eval_neg(x, n);
        break;
    case N_NOT:
        if ((rc = eval(x, n->a)) == 0)
            n->v.one = json_boolean(!truthy(&n->a->v));
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
        return fail(x, "MemoryError", "out of memory");
    return rc;
}

/* ---- why an assertion is false ---- */

typedef struct why {
    ev *x;
    json_t *lines;
} why;

/* Adds "  where SRC = VALUE, from %magic in cell N" for n; false when that
 * line is there already. */
static bool where_line(why *w, const node *n)
{
    char s[160], v[400], from[96] = "", line[700];
    src_of(w->x, n, s, sizeof s);
    fmt_val(&n->v, 6, v, sizeof v);
    if (n->v.magic && n->kind != N_ARITH && n->kind != N_NEG && n->kind != N_CALL) {
        if (n->v.cell > 0)
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
    fmt_val(&n->a->v, 6, a, sizeof a);
    fmt_val(&n->b->v, 6, b, sizeof b);
    if (strcmp(a, b) == 0) {        /* 1.0000001 against 1: show every digit */
        fmt_val(&n->a->v, 17, a, sizeof a);
        fmt_val(&n->b->v, 17, b, sizeof b);
    }
    snprintf(buf, len, "%s %s %s is false", a, cmp_text[n->op], b);
}

static void explain_value(why *w, const node *n, char *buf, size_t len)
{
    char s[160], a[400];
    if (n->kind == N_NOT) {
        fmt_val(&n->a->v, 6, a, sizeof a);
        snprintf(buf, len, "not %s is false: %s is %s", src_of(w->x, n->a, s, sizeof s), s, a);
        return;
    }
    src_of(w->x, n, s, sizeof s);
    if (!n->v.many) {
        fmt_val(&n->v, 6, a, sizeof a);
        snprintf(buf, len, "%s is %s", s, a);
        return;
    }
    size_t at = 0, bad = 0, i;
    json_t *j;
    a[0] = '\0';
    json_array_foreach(n->v.many, i, j)
        if (!truthy_json(j)) {
            bad++;
            if (at + 4 < sizeof a)
                at += (size_t)snprintf(a + at, sizeof a - at, "%s%s", at ? "; " : "", label_at(&n->v, i));
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

/* ---- entry points ---- */

static int run(expr *e, const result_store *rs, expr_report *rep, ev *x)
{
    memset(rep, 0, sizeof *rep);
    *x = (ev){ .rs = rs, .e = e, .rep = rep };
    reset(e->root);
    return eval(x, e->root);
}

int expr_check(expr *e, const result_store *rs, expr_report *rep)
{
    ev x;
    if (run(e, rs, rep, &x))
        return -1;
    if (truthy(&e->root->v))
        return 1;
    why w = { .x = &x, .lines = json_array() };
    char because[900];
    explain(&w, e->root, because, sizeof because);
    where(&w, e->root);
    snprintf(rep->error.ename, sizeof rep->error.ename, "AssertionError");
    snprintf(rep->error.evalue, sizeof rep->error.evalue, "%.*s%s: %s", utf8_clip(expr_source(e), 200), expr_source(e),
             strlen(expr_source(e)) > 200 ? "..." : "", because);
    utf8_trim(rep->error.evalue);
    rep->lines = w.lines;
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
        for (int i = 0; functions[i]; i++)
            json_object_set_new(set, functions[i], json_true());
    } else {
        char msg[200];
        size_t at;
        expr *e = expr_parse(src, msg, sizeof msg, &at);
        expr_report rep;
        memset(&rep, 0, sizeof rep);
        ev x;
        if (e && run(e, rs, &rep, &x) == 0) {
            const val *v = &e->root->v;
            for (size_t i = 0; i < count_of(v); i++)
                if (json_is_object(elem(v, i)))
                    add_keys(set, elem(v, i));
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
    ev x;
    if (run(e, rs, rep, &x))
        return -1;
    const val *v = &e->root->v;
    if (need_one(&x, e->root, v, "a score"))
        return -1;
    if (!is_num(v->one)) {
        char t[200];
        fmt_json(v->one, 6, t, sizeof t);
        return fail(&x, "TypeError", "a score must be a number (or true/false); %s is %s (%s)",
                    expr_source(e), type_name(v->one), t);
    }
    *out = num(v->one);
    if (!isfinite(*out))
        return fail(&x, "ValueError", "the score %s is not a finite number", expr_source(e));
    return 0;
}
