/* expr_select.c — what names, selectors, fields and indexes stand for in
 * %assert/%score expressions: a magic's newest runs (matmul), the newest runs
 * with given values (matmul[variant=tiled]), a field of each (.gflops), an
 * item ([0], ['a-d']); and the LookupErrors that say what there is instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "magic/check.h"
#include "base/text.h"
#include "base/utf8.h"
#include "grade/expr_internal.h"
#include "grade/recorded.h"
#include "lang/lang.h"

/* ---- runs ---- */

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
        jv_plain(v, one, sizeof one);
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
        ev_fail(x, "LookupError", "no %%%s result in this session yet: run %%%s before this check "
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
    return ev_fail(x, "LookupError", "unknown name '%s': a name is a magic whose result to check "
                "(this session has results of: %s)%s", name, at ? have : "none yet", hint);
}

static bool run_matches(const node *n, const json_t *doc, const json_t *run)
{
    for (int k = 0; k < n->nsel; k++) {
        const json_t *f = run_field(doc, run, n->keys[k]);
        if (!f || !jv_same(f, n->vals[k]))
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
        jv_plain(n->vals[k], one, sizeof one);
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
            return ev_fail(x, "LookupError", "no %%%s run has %s: its runs have no field '%s'%s%s%s", n->name,
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
            found = found || (f && jv_same(f, n->vals[k]));
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
    ev_fail(x, "LookupError", "no %%%s run in this session has %s%s; the newest %%%s result%s has: %s",
         n->name, want, near, n->name, from, have);
    return lookup_missed(x);
}

/* Whether doc ran on a GPU: its backend (or its device's) is CUDA's. */
static bool on_gpu(const json_t *doc)
{
    const json_t *b = json_object_get(doc, "backend");
    if (!b)
        b = json_object_get(json_object_get(doc, "device"), "backend");
    return json_is_string(b) && strcmp(json_string_value(b), "cuda") == 0;
}

/* The results n reads (expr.h): the session's, or the recorded ones shown so
 * far; NULL with the error set when it would read recordings and none is loaded. */
static const result_store *results_for(ev *x, const node *n)
{
    size_t at;
    int cell;
    const json_t *live;
    if (n->from == FROM_LIVE
        || (n->from == FROM_GPU && (live = newest(x, n->name, 0, &at, &cell)) != NULL && on_gpu(live)))
        return x->rs;
    if (!x->recorded) {
        ev_fail(x, EXPR_NO_RECORDING, "%s.%s: no GPU ran %%%s here and no recorded GPU results are loaded "
                "(%%recorded NAME loads a notebook's; make record on a GPU machine writes them)",
                n->from == FROM_GPU ? "gpu" : "recorded", n->name, n->name);
        return NULL;
    }
    return x->recorded;
}

/* The device a recorded result ran on, for the "where" lines; NULL for the session's own. */
static const char *recorded_on(const ev *x, const json_t *doc)
{
    if (x->rs != x->recorded)
        return NULL;
    const char *name = json_string_value(json_object_get(json_object_get(doc, "device"), "name"));
    return name ? name : "a GPU";
}

int ev_name(ev *x, node *n)
{
    size_t at = 0;
    int cell = 0;
    const result_store *rs = results_for(x, n);
    if (!rs)
        return -1;
    ev in = *x;                     /* the lookups below, in the results n reads */
    in.rs = rs;
    x = &in;
    const json_t *doc = newest(x, n->name, 0, &at, &cell);
    if (!doc && rs != x->recorded)
        return unknown_name(x, n->name);
    if (!doc)
        return ev_fail(x, "LookupError", "no recorded GPU result of %%%s has been shown in this session: the "
                       "recording has none for the %%%s commands run so far (make record on a GPU machine "
                       "records them)", n->name, n->name);
    /* The newest %NAME ran here without a recorded result (a command added after the recording was
     * made, another GPU's recording): a claim about it is not checked, rather than read from the
     * recorded figures of an earlier command. */
    if (json_is_true(json_object_get(doc, RECORDED_MISSING_KEY)))
        return ev_fail(x, EXPR_NOT_RECORDED, "%s.%s: no GPU ran %%%s here and the recording has no result for "
                       "the %%%s command of cell %d (make record on a GPU machine records it)",
                       n->from == FROM_GPU ? "gpu" : "recorded", n->name, n->name, n->name, cell);
    if (n->kind == N_NAME) {
        take_runs(n, doc, cell, &n->v);
        n->v.device = recorded_on(x, doc);
        return 0;
    }
    /* the newest result with a matching run: an earlier cell's naive run
     * still counts after a later cell ran only tiled */
    const json_t *d = doc;
    int c = cell;
    for (size_t i = at; d; d = newest(x, n->name, i + 1, &i, &c)) {
        if (take_runs(n, d, c, &n->v) > 0) {
            n->v.device = recorded_on(x, d);
            return 0;
        }
        val_clear(&n->v);
    }
    return no_match(x, n, doc, cell);
}

/* ---- fields and indexes ---- */

/* n's values (stolen), one per element of its base b, from the same runs. */
static void derived(node *n, const val *b, json_t *values)
{
    n->v.magic = b->magic;
    n->v.cell = b->cell;
    n->v.device = b->device;
    val_set(&n->v, values, json_incref(b->labels));
}

/* Index i of len items, counting from the end when negative (as Python
 * does): into *at, or false when out of range. */
static bool position(long long i, long long len, size_t *at)
{
    if (i < -len || i >= len)
        return false;
    *at = (size_t)(i < 0 ? i + len : i);
    return true;
}

static int missing_field(ev *x, const node *n, const json_t *obj, const char *label)
{
    char s[120], keys[300] = "";
    ev_src(x, n->a, s, sizeof s);
    /* a check's field as the families spelled it before the check was one document (magic/check.h) */
    bool check = json_object_get(obj, "passed") && json_object_get(obj, "method");
    bool run = json_object_get(obj, "check") != NULL;
    const char *more = NULL, *now = check || run ? check_renamed(n->name, &more) : NULL;
    if (now && (check ? strcmp(n->name, "found") != 0 : strcmp(n->name, "found") == 0))
        return ev_fail(x, "LookupError", "%s%s%s has no field '%s': the check is one document in every family "
                       "now; did you mean %s?%s%s%s", s, label ? " " : "", label ? label : "", n->name, now,
                       more ? " (" : "", more ? more : "", more ? ")" : "");
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
    return ev_fail(x, "LookupError", "%s%s%s has no field '%s'; %sits fields: %s", s, label ? " " : "",
                label ? label : "", n->name, hint, keys);
}

int ev_field(ev *x, node *n)
{
    const val *b = &n->a->v;
    json_t *values = json_array();
    for (size_t i = 0; i < val_count(b); i++) {
        const json_t *e = val_elem(b, i), *f;
        char label[160] = "";
        if (b->many)
            snprintf(label, sizeof label, "(run %s)", val_label(b, i));
        if (b->runs) {
            f = run_field(b->doc, e, n->name);
        } else if (json_is_object(e)) {
            f = json_object_get(e, n->name);
        } else {
            char s[120], v[120];
            json_decref(values);
            jv_format(e, 6, v, sizeof v);
            return ev_fail(x, "TypeError", "%s is %s (%s), which has no fields: '.%s' needs an object",
                        ev_src(x, n->a, s, sizeof s), jv_type(e), v, n->name);
        }
        if (!f) {
            json_decref(values);
            return missing_field(x, n, e, label[0] ? label : NULL);
        }
        json_array_append(values, (json_t *)f);
    }
    derived(n, b, values);
    return 0;
}

int ev_index(ev *x, node *n)
{
    const val *b = &n->a->v, *iv = &n->b->v;
    if (ev_need_one(x, n->b, iv, "an index"))
        return -1;
    const json_t *idx = iv->one;
    char s[120], is[120];
    ev_src(x, n->a, s, sizeof s);
    jv_format(idx, 6, is, sizeof is);
    if (b->runs && b->many && json_is_integer(idx)) {   /* runs[i]: one run of several */
        long long i = json_integer_value(idx), len = (long long)json_array_size(b->many);
        size_t at;
        if (!position(i, len, &at))
            return ev_fail(x, "IndexError", "%s has %lld runs: index %lld is out of range", s, len, i);
        n->v = (val){ .one = json_incref(json_array_get(b->many, at)), .doc = b->doc, .runs = true,
                      .magic = b->magic, .cell = b->cell, .device = b->device,
                      .labels = json_pack("[O]", json_array_get(b->labels, at)) };
        return 0;
    }
    json_t *values = json_array();
    for (size_t k = 0; k < val_count(b); k++) {
        const json_t *e = val_elem(b, k), *f = NULL;
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
                return ev_fail(x, "LookupError", "%s has no key %s; its keys: %s", s, is, keys);
            }
        } else if (json_is_array(e) && json_is_integer(idx)) {
            long long i = json_integer_value(idx), len = (long long)json_array_size(e);
            size_t at;
            if (!position(i, len, &at)) {
                json_decref(values);
                return ev_fail(x, "IndexError", "%s has %lld items: index %lld is out of range", s, len, i);
            }
            f = json_array_get(e, at);
        } else {
            char v[120];
            jv_format(e, 6, v, sizeof v);
            json_decref(values);
            return ev_fail(x, "TypeError", "%s is %s (%s): it cannot be indexed by %s %s", s, jv_type(e), v,
                        jv_type(idx), is);
        }
        json_array_append(values, (json_t *)f);
    }
    derived(n, b, values);
    return 0;
}
