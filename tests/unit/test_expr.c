/* test_expr.c — the %assert/%score language: parsing, lookups over stored
 * results, reductions, and the messages of false or failing checks; the
 * limits on length and nesting (every chain and nesting kind, evaluated on a
 * small stack), exact and overflowing numbers, and string escapes. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grade/results.h"
#include "grade/expr.h"

/* Two %matmul results (cell 3: naive; cell 5: a tiled sweep), a %histo and a %device. */
static const char *const docs[] = {
    "{\"magic\":\"matmul\",\"params\":{\"size\":64,\"seed\":1},\"device\":{\"name\":\"H200\"},"
    "\"runs\":[{\"variant\":\"naive\",\"tile\":null,\"m\":64,\"gflops\":4.5,\"check\":{\"passed\":true}}]}",
    "{\"magic\":\"matmul\",\"params\":{\"size\":64,\"seed\":1},\"sweep\":{\"varying\":[\"tile\"]},"
    "\"runs\":[{\"variant\":\"tiled\",\"tile\":8,\"m\":64,\"gflops\":10.0,\"check\":{\"passed\":true}},"
    "{\"variant\":\"tiled\",\"tile\":16,\"m\":64,\"gflops\":12.5,\"check\":{\"passed\":false}}]}",
    "{\"magic\":\"histo\",\"params\":{},\"runs\":[{\"variant\":\"cpu\",\"bins\":{\"a-d\":5,\"e-h\":5},"
    "\"list\":[1,2,3],\"big\":[1e308,1e308,-1],\"ints\":[9007199254740993,9007199254740992]},"
    "{\"variant\":\"fast\",\"bins\":{\"a-d\":5,\"e-h\":5},\"list\":[1,2,3],\"big\":[1e308,1e308,-1],"
    "\"ints\":[9007199254740993,9007199254740992]}]}",
    "{\"magic\":\"device\",\"count\":1,\"devices\":[{\"name\":\"H200\",\"sms\":132}]}",
};
static const int cells[] = {3, 5, 6, 7};

static result_store *store(void)
{
    result_store *rs = results_new();
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        json_error_t e;
        json_t *d = json_loads(docs[i], 0, &e);
        assert_non_null(d);
        results_record(rs, d, cells[i]);
        json_decref(d);
    }
    return rs;
}

/* src parsed; a syntax error fails the test. */
static expr *parsed(const char *src)
{
    char msg[400];
    size_t at;
    expr *e = expr_parse(src, msg, sizeof msg, &at);
    if (!e)
        fail_msg("%s: %s", src, msg);
    return e;
}

/* Runs %assert's check; returns its outcome, with the report in *rep. */
static int check(const char *src, expr_report *rep)
{
    expr *e = parsed(src);
    result_store *rs = store();
    int rc = expr_check(e, rs, rep);
    results_free(rs);
    expr_free(e);
    return rc;
}

static void holds(const char *src)
{
    expr_report rep;
    int rc = check(src, &rep);
    if (rc != 1)
        fail_msg("expected true: %s; got %d: %s: %s", src, rc, rep.error.ename, rep.error.evalue);
    json_decref(rep.lines);
}

/* src fails as want says, "ENAME: PART" as a traceback's last line reads: an
 * AssertionError is a false check (rc 0), any other ename an error (rc -1),
 * and the message holds PART. */
static void fails(const char *src, const char *want)
{
    const char *part = strstr(want, ": ");
    assert_non_null(part);
    char ename[64];
    snprintf(ename, sizeof ename, "%.*s", (int)(part - want), want);
    int want_rc = strcmp(ename, "AssertionError") == 0 ? 0 : -1;
    expr_report rep;
    int rc = check(src, &rep);
    if (rc != want_rc || strcmp(rep.error.ename, ename) != 0 || !strstr(rep.error.evalue, part + 2))
        fail_msg("%s: got %d %s: %s", src, rc, rep.error.ename, rep.error.evalue);
    json_decref(rep.lines);
}

static void syntax(const char *src, const char *what, size_t want_at)
{
    char msg[400];
    size_t at;
    expr *e = expr_parse(src, msg, sizeof msg, &at);
    if (e || !strstr(msg, what) || (want_at != SIZE_MAX && at != want_at))
        fail_msg("%s: expected a syntax error with '%s' at %zu, got '%s' at %zu", src,
                 what, want_at, e ? "(parsed)" : msg, at);
}

static void test_syntax_errors(void **state)
{
    syntax("", "missing", SIZE_MAX);
    syntax("   # only a comment", "missing", SIZE_MAX);
    syntax("1 = 2", "'=' is not a comparison", 2);
    syntax("(1 + 2", "expected ')'", 6);
    syntax("1 < 2 < 3", "do not chain", 6);
    syntax("'abc", "never closed", 0);
    syntax("1 @ 2", "unexpected character", 2);
    syntax("matmul[variant=]", "expected a value", SIZE_MAX);
    syntax("matmul.", "field name after '.'", SIZE_MAX);
    syntax("1 2", "after a complete expression", 2);
    syntax("12abc", "not a number", 0);
    syntax("f(1,", "expected a value", SIZE_MAX);
    char deep[400];
    memset(deep, '(', 300);
    strcpy(deep + 300, "1");
    syntax(deep, "nested too deeply", SIZE_MAX);
    char many_not[800] = "";
    for (int i = 0; i < 150; i++)
        strcat(many_not, "not ");
    strcat(many_not, "1");
    syntax(many_not, "nested too deeply", SIZE_MAX);
}

static void test_literals_and_operators(void **state)
{
    holds("1 + 2 * 3 == 7");
    holds("(1 + 2) * 3 == 9");
    holds("7 / 2 == 3.5");
    holds("7 % 3 == 1 and -7 % 3 == 2");
    holds("2^10 == 1024 and 64K == 65536 and 1e3 == 1000");
    holds("-(2) == -2 and --2 == 2");
    holds("'abc' < 'abd' and \"x\" == 'x'");
    holds("true and not false and null == null");
    holds("true + true == 2");
    holds("1 != 2 && 2 >= 2 || false");
    holds("!(1 > 2)");
    holds("abs(-3) == 3 and round(2.567, 2) == 2.57 and round(2.5) == 3");
    holds("min(3, 1, 2) == 1 and max(3, 1, 2) == 3");
    holds("1 == 1 # a comment with 'quotes'");
    holds("'a#b' == 'a#b'");
    fails("1 / 0 > 1", "ZeroDivisionError: division by zero");
    fails("'a' < 1", "TypeError: cannot order");
    fails("'a' + 1", "TypeError: needs numbers");
    fails("1 > 2", "AssertionError: 1 > 2 is false");
    fails("1 + 1e-12 == 1", "AssertionError: 1.000000000001 == 1 is false");
    fails("nosuch(1)", "LookupError: unknown function nosuch()");
    fails("maxx(1, 2)", "LookupError: did you mean max()?");
}

static void test_lookups(void **state)
{
    /* the newest matmul is the tiled sweep; fields with one value collapse */
    holds("matmul.variant == 'tiled' and matmul.m == 64");
    holds("matmul.seed == 1 and matmul.size == 64");            /* from params */
    holds("matmul[variant=naive].device.name == 'H200'");       /* from the document */
    holds("matmul[variant=tiled,tile=16].gflops == 12.5");
    holds("matmul[tile=8].gflops > 2 * matmul[variant=naive].gflops");   /* an older cell's run */
    holds("matmul[variant=naive].tile == null");
    holds("histo.bins['a-d'] == 5 and histo.bins[\"e-h\"] == 5");  /* same in both runs */
    holds("histo[variant=fast].list[-1] == 3 and histo.list[0] == 1");
    holds("len(histo.list) == 3 and len(histo.bins) == 2 and len('abc') == 3");
    holds("device.devices[0].sms == 132 and device.count == 1");
    holds("count(matmul) == 2 and count(histo) == 2 and count(matmul[variant=naive]) == 1");
    holds("max(matmul.gflops) == 12.5 and min(matmul.gflops) == 10 and sum(matmul.gflops) == 22.5");
    holds("mean(matmul.gflops) == 11.25 and mean(histo.list) == 2");
    holds("any(matmul.check.passed) and not all(matmul.check.passed)");
    holds("matmul[0].tile == 8 and matmul[-1].tile == 16");
    holds("not (false and nosuch.field) and (true or nosuch.field)");   /* short-circuit: never looked up */
}

static void test_lookup_errors(void **state)
{
    fails("reduce.check.passed", "LookupError: no %reduce result in this session yet");
    fails("matmull.gflops > 1", "LookupError: did you mean matmul?");
    fails("matmul[variant=tild].gflops", "LookupError: did you mean variant=tiled?");
    fails("matmul[variant=fast].gflops", "LookupError: no %matmul run in this session has variant=fast; "
          "the newest %matmul result (cell 5) has: tile=8; tile=16");
    fails("matmul[tyle=8].gflops", "LookupError: did you mean 'tile'?");
    fails("matmul[variant=naive].gflop", "LookupError: has no field 'gflop'; did you mean 'gflops'?");
    fails("histo.bins['a-e'] == 5", "LookupError: has no key 'a-e'; its keys: 'a-d', 'e-h'");
    fails("histo.list[3] == 1", "IndexError: has 3 items: index 3 is out of range");
    fails("matmul.m.x", "TypeError: which has no fields");
    fails("matmul.gflops > 1", "ValueError: matmul.gflops has 2 values, one per run of %matmul "
          "(10 (tile=8), 12.5 (tile=16))");
    fails("min(histo.bins)", "TypeError: min() needs numbers");
    fails("len(1)", "TypeError: len() needs");
}

static void test_false_explained(void **state)
{
    expr_report rep;
    assert_int_equal(check("matmul[tile=16].gflops > 3 * matmul[variant=naive].gflops", &rep), 0);
    assert_string_equal(rep.error.ename, "AssertionError");
    assert_non_null(strstr(rep.error.evalue, "12.5 > 13.5 is false"));
    const char *want[] = {
        "  where matmul[tile=16].gflops = 12.5, from %matmul in cell 5",
        "  where 3 * matmul[variant=naive].gflops = 13.5",
        "  where matmul[variant=naive].gflops = 4.5, from %matmul in cell 3",
    };
    assert_int_equal(json_array_size(rep.lines), 3);
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(json_string_value(json_array_get(rep.lines, i)), want[i]);
    json_decref(rep.lines);

    /* one value per run must hold in every run: the failing runs are named */
    fails("matmul.check.passed", "AssertionError: is not true for 1 of 2 runs: tile=16");
    fails("matmul.m == 64 and histo.bins['a-d'] == 7", "AssertionError: 5 == 7 is false");
    fails("not matmul[variant=naive].check.passed", "AssertionError: is true");
    fails("1 > 2 or 'a' == 'b'", "AssertionError: 1 > 2 is false, and 'a' == 'b' is false");
}

static void test_score(void **state)
{
    result_store *rs = store();
    const char *srcs[] = {"matmul[variant=naive].check.passed", "(histo.bins['a-d'] == 5) + 0.5",
                          "matmul[tile=8].gflops / 4", "'text'", "matmul.gflops"};
    double want[] = {1, 1.5, 2.5};
    for (int i = 0; i < 5; i++) {
        char msg[200];
        size_t at;
        expr *e = expr_parse(srcs[i], msg, sizeof msg, &at);
        assert_non_null(e);
        double v = -1;
        expr_report rep;
        int rc = expr_number(e, rs, &v, &rep);
        if (i < 3) {
            assert_int_equal(rc, 0);
            assert_true(v == want[i]);
        } else {
            assert_int_equal(rc, -1);
            assert_string_equal(rep.error.ename, i == 3 ? "TypeError" : "ValueError");
        }
        json_decref(rep.lines);
        expr_free(e);
    }
    results_free(rs);
}

static void test_names_for_completion(void **state)
{
    result_store *rs = store();
    json_t *n = expr_names(NULL, rs);       /* what an expression can start with */
    json_t *want = json_pack("[s,s,s,s,s,s,s,s,s,s,s,s,s]", "abs", "all", "any", "count", "device", "histo",
                             "len", "matmul", "max", "mean", "min", "round", "sum");
    assert_true(json_equal(n, want));
    json_decref(n);
    json_decref(want);
    n = expr_names("matmul[variant=naive]", rs);   /* the run's, its document's and its params' */
    want = json_pack("[s,s,s,s,s,s,s,s,s,s]", "check", "device", "gflops", "m", "magic", "params", "runs",
                     "seed", "size", "tile");
    for (size_t i = 0; i < json_array_size(want); i++) {
        bool found = false;
        for (size_t j = 0; j < json_array_size(n); j++)
            found = found || json_equal(json_array_get(n, j), json_array_get(want, i));
        if (!found)
            fail_msg("missing %s", json_string_value(json_array_get(want, i)));
    }
    json_decref(n);
    json_decref(want);
    n = expr_names("histo.bins", rs);
    want = json_pack("[s,s]", "a-d", "e-h");
    assert_true(json_equal(n, want));
    json_decref(n);
    json_decref(want);
    n = expr_names("nosuch(", rs);
    assert_int_equal(json_array_size(n), 0);
    json_decref(n);
    results_free(rs);
}

static void test_store_keeps_newest(void **state)
{
    result_store *rs = results_new();
    for (int i = 0; i < RESULTS_KEEP + 10; i++) {
        json_t *d = json_pack("{s:s, s:i}", "magic", "echo", "i", i);
        results_record(rs, d, i);
        json_decref(d);
    }
    json_t *nameless = json_pack("{s:i}", "i", -1);
    results_record(rs, nameless, 0);          /* not a result: ignored */
    json_decref(nameless);
    assert_int_equal(results_count(rs), RESULTS_KEEP);
    int cell;
    assert_int_equal(json_integer_value(json_object_get(results_get(rs, 0, &cell), "i")), RESULTS_KEEP + 9);
    assert_int_equal(cell, RESULTS_KEEP + 9);
    assert_int_equal(json_integer_value(json_object_get(results_get(rs, RESULTS_KEEP - 1, NULL), "i")), 10);
    assert_null(results_get(rs, RESULTS_KEEP, NULL));
    assert_int_equal(results_evicted(rs, &cell), 10);
    assert_int_equal(cell, 9);
    /* a lookup that misses in such a session says that results were dropped */
    char msg[400];
    size_t at;
    expr *e = expr_parse("matmul[variant=tiled].gflops > 1", msg, sizeof msg, &at);
    assert_non_null(e);
    expr_report rep;
    assert_int_equal(expr_check(e, rs, &rep), -1);
    assert_string_equal(rep.error.ename, "LookupError");
    assert_non_null(strstr(rep.error.evalue, "the 10 oldest results of this session, up to cell 9, were dropped"));
    json_decref(rep.lines);
    expr_free(e);
    results_free(rs);
}


/* ---- limits: no expression can exhaust the stack or the memory ---- */

/* text = head + unit * n + tail, malloc'd */
static char *repeat(const char *head, const char *unit, size_t n, const char *tail)
{
    size_t h = strlen(head), u = strlen(unit), t = strlen(tail);
    char *s = malloc(h + u * n + t + 1);
    assert_non_null(s);
    memcpy(s, head, h);
    for (size_t i = 0; i < n; i++)
        memcpy(s + h + u * i, unit, u);
    memcpy(s + h + u * n, tail, t + 1);
    return s;
}

/* One expression parsed, checked, scored and completed on a thread with a
 * small stack: a walk of the tree that recursed per term would overflow it. */
#define SMALL_STACK (256 << 10)

typedef struct job {
    const char *src;
    const result_store *rs;
    bool parsed;
    char msg[400];
    int check_rc, number_rc;
    double number;
    char ename[32], evalue[1024];
    size_t lines;
} job;

static void *job_run(void *arg)
{
    job *j = arg;
    size_t at;
    expr *e = expr_parse(j->src, j->msg, sizeof j->msg, &at);
    json_decref(expr_names(j->src, j->rs));
    j->parsed = e != NULL;
    if (!e)
        return NULL;
    expr_report rep;
    j->check_rc = expr_check(e, j->rs, &rep);
    snprintf(j->ename, sizeof j->ename, "%s", rep.error.ename);
    snprintf(j->evalue, sizeof j->evalue, "%s", rep.error.evalue);
    j->lines = json_array_size(rep.lines);
    json_decref(rep.lines);
    j->number_rc = expr_number(e, j->rs, &j->number, &rep);
    json_decref(rep.lines);
    expr_free(e);
    return NULL;
}

static job on_small_stack(const char *src)
{
    job j = { .src = src, .rs = store() };
    pthread_attr_t attr;
    pthread_t t;
    assert_int_equal(pthread_attr_init(&attr), 0);
    assert_int_equal(pthread_attr_setstacksize(&attr, SMALL_STACK), 0);
    assert_int_equal(pthread_create(&t, &attr, job_run, &j), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    pthread_attr_destroy(&attr);
    results_free((result_store *)j.rs);
    return j;
}

/* A chain: head, then unit repeated (each unit adds terms terms), then tail. */
static const struct chain_kind { const char *name, *head, *unit, *tail; int terms; } chains[] = {
    {"+", "1", "+1", "", 1}, {"-", "1", "-1", "", 1}, {"*", "1", "*1", "", 1}, {"/", "1", "/1", "", 1},
    {"%", "7", "%5", "", 1}, {"and", "1", " and 1", "", 1}, {"or", "0", " or 0", "", 1},
    {"&&", "1", "&&1", "", 1}, {"||", "0", "||0", "", 1}, {"args", "min(1", ",1", ")", 1},
    {"keys", "count(matmul[m=64", ",m=64", "])", 1}, {"strings", "len('a'", "+'a'", ")", 1},
    {"mixed", "1", "+2*3-4/5%6", "", 7}, {"mixed logic", "1", " and 2 or 0 && 1 || 1", "", 6},
};

/* Nesting: open repeated, then the core, then close repeated; each open adds levels. */
static const struct nest_kind { const char *name, *open, *core, *close; int levels; } nests[] = {
    {"()", "(", "1", ")", 1}, {"-", "-", "1", "", 1}, {"+", "+", "1", "", 1}, {"not", "not ", "1", "", 1},
    {"!", "!", "1", "", 1}, {"calls", "abs(", "1", ")", 1}, {"(1+", "(1+", "1", ")", 1},
    {"fields", "", "device", ".devices", 1}, {"indexes", "", "histo", "[0]", 1},
    {"index exprs", "histo[", "0", "]", 1}, {"not (", "not (", "1", ")", 2},
    {"- abs(", "- abs(", "1", ")", 2},
};

static void test_chains_within_the_limit(void **state)
{
    char *sum = repeat("1", "+1", 999, "");            /* 1000 terms */
    job j = on_small_stack(sum);
    assert_true(j.parsed);
    assert_int_equal(j.number_rc, 0);
    assert_true(j.number == 1000);
    free(sum);
    /* the longest chain of each kind that the limit allows, on a small stack */
    for (size_t k = 0; k < sizeof chains / sizeof chains[0]; k++) {
        const struct chain_kind *c = &chains[k];
        size_t n = (EXPR_MAX_TERMS - 8) / (size_t)c->terms;
        char *src = repeat(c->head, c->unit, n, c->tail);
        j = on_small_stack(src);
        if (!j.parsed)
            fail_msg("a chain of %zu '%s' is within the limit, yet: %s", n, c->name, j.msg);
        free(src);
    }
    char *ors = repeat("1 > 2", " or 1 > 2", 1300, "");   /* a false assertion explained */
    j = on_small_stack(ors);
    assert_true(j.parsed);
    assert_int_equal(j.check_rc, 0);
    assert_string_equal(j.ename, "AssertionError");
    assert_true(strlen(j.evalue) < sizeof j.evalue - 1 || strstr(j.evalue, "1 > 2 is false"));
    free(ors);
}

static void test_chains_past_the_limit(void **state)
{
    for (size_t k = 0; k < sizeof chains / sizeof chains[0]; k++) {
        const struct chain_kind *c = &chains[k];
        size_t n = EXPR_MAX_TERMS / (size_t)c->terms + 1;
        char *src = repeat(c->head, c->unit, n, c->tail);
        job j = on_small_stack(src);
        if (j.parsed || !strstr(j.msg, "too long: more than 4096 terms"))
            fail_msg("a chain of %zu '%s': %s", n, c->name, j.parsed ? "(parsed)" : j.msg);
        free(src);
    }
    char *huge = repeat("1", " ", EXPR_MAX_BYTES, "+1");
    char msg[400];
    size_t at;
    assert_null(expr_parse(huge, msg, sizeof msg, &at));
    assert_non_null(strstr(msg, "too long: 65539 bytes (the limit is 65536)"));
    free(huge);
}

static void test_nesting_within_and_past_the_limit(void **state)
{
    for (size_t k = 0; k < sizeof nests / sizeof nests[0]; k++) {
        const struct nest_kind *n = &nests[k];
        for (int depth = EXPR_MAX_DEPTH; depth <= EXPR_MAX_DEPTH + n->levels; depth += n->levels) {
            size_t units = (size_t)(depth / n->levels);
            char *open = repeat("", n->open, units, ""), *close = repeat("", n->close, units, "");
            size_t len = strlen(open) + strlen(n->core) + strlen(close) + 1;
            char *src = malloc(len);
            assert_non_null(src);
            snprintf(src, len, "%s%s%s", open, n->core, close);
            job j = on_small_stack(src);
            if (depth == EXPR_MAX_DEPTH && !j.parsed)
                fail_msg("%d levels of %s are within the limit, yet: %s", depth, n->name, j.msg);
            if (depth > EXPR_MAX_DEPTH && (j.parsed || !strstr(j.msg, "nested too deeply: more than 64 levels")))
                fail_msg("%d levels of %s: %s", depth, n->name, j.parsed ? "(parsed)" : j.msg);
            free(open);
            free(close);
            free(src);
        }
    }
    job j = on_small_stack("--------------------------------------------------------------1");
    assert_int_equal(j.number_rc, 0);
    assert_true(j.number == 1);
}

/* ---- numbers: exact integers, no inf or NaN, literals in range ---- */

static void score_is(const char *src, double want)
{
    expr *e = parsed(src);
    result_store *rs = store();
    expr_report rep;
    double v = -12345;
    int rc = expr_number(e, rs, &v, &rep);
    if (rc != 0 || v != want)
        fail_msg("%s = %.17g (rc %d: %s: %s), want %.17g", src, v, rc, rep.error.ename, rep.error.evalue, want);
    json_decref(rep.lines);
    results_free(rs);
    expr_free(e);
}

static void test_integers_are_exact(void **state)
{
    holds("9007199254740993 - 9007199254740992 == 1");
    holds("9007199254740993 != 9007199254740992 and 9007199254740993 > 9007199254740992");
    holds("9223372036854775807 - 1 == 9223372036854775806");
    holds("-9223372036854775807 - 1 < 0 and (-9223372036854775807 - 1) % -1 == 0");
    holds("max(histo.ints) == 9007199254740993 and min(histo.ints) == 9007199254740992");
    holds("sum(histo.ints) == 18014398509481985");
    holds("round(9007199254740993) == 9007199254740993 and round(1234, -1) == 1230");
    holds("abs(-9223372036854775807 - 1) == 9223372036854775808.0");
    holds("-(-9223372036854775807 - 1) == 9223372036854775808.0");
    holds("9223372036854775807 + 1 == 9223372036854775808.0");     /* beyond int64: a float */
    holds("3037000500 * 3037000500 > 9223372036854775807");
    score_is("round(1.5, 400)", 1.5);
    score_is("round(1e308, -400)", 0);
    score_is("round(2.567, 2)", 2.57);
    holds("mean(histo.big) > 6.66e307 and mean(histo.big) < 6.67e307");   /* its sum overflows */
}

static void test_no_infinity_or_nan(void **state)
{
    static const char *const overflowing[] = {
        "1e308 * 10", "1e308 + 1e308", "-1e308 - 1e308", "1e308 / 1e-308", "2 * 1e308 * 0",
        "sum(histo.big)", "round(1.7e308, -308)", "1 + 1e308 * 10 > 0", "-(1e308 * 10)",
    };
    for (size_t i = 0; i < sizeof overflowing / sizeof overflowing[0]; i++)
        fails(overflowing[i], "OverflowError: beyond the largest double (about 1.8e308)");
    fails("1e308 * 10", "OverflowError: 1e308 * 10 overflows: 1e+308 * 10");
    fails("1 + 1e308 * 10 > 0", "OverflowError: 1e308 * 10 overflows");
    fails("sum(histo.big)", "OverflowError: sum(histo.big) overflows");
    fails("round(1.5, 0.5)", "TypeError: count of digits must be a whole number");
    fails("1 % 0", "ZeroDivisionError: division by zero");
}

static void test_literals_in_range(void **state)
{
    syntax("18446744073709551616", "the integer 18446744073709551616 is beyond the 64-bit range "
           "(-9223372036854775808 to 9223372036854775807); for a float write 18446744073709551616.0", 0);
    syntax("1 + 18446744073709551616000", "beyond the 64-bit range", 4);
    syntax("2^64", "the integer 2^64 is beyond the 64-bit range", 0);
    syntax("2^63", "beyond the 64-bit range", 0);
    syntax("16777216T", "beyond the 64-bit range", 0);
    syntax("9223372036854775808", "beyond the 64-bit range", 0);
    syntax("1e400", "the number 1e400 is beyond the range of a double", 0);
    syntax("matmul[seed=18446744073709551616]", "beyond the 64-bit range", 12);
    char long_number[200];
    memset(long_number, '9', 150);
    long_number[150] = '\0';
    syntax(long_number, "beyond the 64-bit range", 0);
    holds("1.8446744073709551616e19 == 18446744073709551616.0 and 1e19 > 9223372036854775807");
    holds("2^62 == 4611686018427387904 and 8191P == 9222246136947933184 and 1e18 == 10^18");
    holds("1e-400 == 0");
}

/* ---- strings: the escapes of the cell language, nothing dropped ---- */

/* A syntax error with what, at the backslash of src's one escape. */
static void bad_escape(const char *src, const char *what)
{
    syntax(src, what, (size_t)(strchr(src, '\\') - src));
}

static void test_string_escapes(void **state)
{
    holds("'a\\x41b' == 'aAb' and \"\\u00e9\" == '\xc3\xa9' and '\\U0001F600' == '\xf0\x9f\x98\x80'");
    holds("'\\\\' != '\\'' and len('\\\\') == 1 and len('\\'\\\"') == 2 and '\\n\\t\\r' != 'ntr'");
    holds("'it\\'s' == \"it's\" and len('a\\\nb') == 2");
    bad_escape("'a\\x00b'", "the escape \\x00 means NUL");
    bad_escape("'a\\u0000b'", "the escape \\u0000 means NUL");
    bad_escape("'\\qb'", "unknown escape \\q in a string; the escapes are \\\\ \\' \\\" \\n \\t \\r \\xHH");
    bad_escape("'\\x4'", "the escape \\x needs 2 hex digits");
    bad_escape("'\\u12g4'", "the escape \\u needs 4 hex digits");
    bad_escape("'\\ud800'", "is not a Unicode character");
    bad_escape("'\\U00110000'", "is not a Unicode character");
    bad_escape("'\\\xc3\xa9'", "unknown escape \\\xc3\xa9 in a string");
    bad_escape("matmul[variant='a\\x00']", "means NUL");
}

/* ---- functions: their table (expr_funcs.h) checks calls before they run ---- */

static void test_function_calls_checked(void **state)
{
    fails("nosuch(1)", "LookupError: ; functions: abs, all, any, count, len, max, mean, min, round, sum");
    fails("abs(1, 2)", "TypeError: abs() takes one argument");
    fails("max()", "TypeError: max() takes at least one argument");
    fails("round(1, 2, 3)", "TypeError: round() takes a number and optionally a count of digits");
    fails("abs('a')", "TypeError: abs() needs a number; 'a' is text");
    fails("round(1, 'a')", "TypeError: round() needs a number; 'a' is text");
    fails("abs(matmul.gflops)", "ValueError: abs() needs one: pick a run with a selector, as in matmul[tile=8], "
          "or reduce them with all(), any(), max(), mean() or min()");
    fails("sum(matmul.variant)", "TypeError: sum() needs numbers: matmul.variant holds text");
    holds("max(1, 5, 2) == 5 and min(3, -1) == -1 and len('abc') == 3 and any(matmul.check.passed)");
}

/* gpu.NAME reads the live results where they came from CUDA, else the recorded ones; recorded.NAME
 * only those; with no recording, an EXPR_NO_RECORDING error (which %assert turns into a skip); a
 * magic-less name after the prefix keeps its plain meaning (a field of a result called gpu). */
static void test_gpu_and_recorded_names(void **state)
{
    (void)state;
    result_store *live = results_new(), *rec = results_new();
    json_t *cpu = json_pack("{s:s, s:s, s:[{s:s, s:f}]}", "magic", "matmul", "backend", "cpu", "runs", "variant",
                            "naive", "gflops", 2.0);
    json_t *gpu = json_pack("{s:s, s:s, s:{s:s}, s:[{s:s, s:f}]}", "magic", "matmul", "backend", "cuda", "device",
                            "name", "NVIDIA H200", "runs", "variant", "naive", "gflops", 4000.0);
    results_record(live, cpu, 1);
    results_record(rec, gpu, 1);
    expr_report rep;
    expr *e = parsed("gpu.matmul.gflops > 1000 and recorded.matmul[variant=naive].gflops == 4000 and matmul.gflops == 2");
    assert_int_equal(expr_check_with(e, live, rec, &rep), 1);
    assert_int_equal(expr_check_with(e, live, NULL, &rep), -1);
    assert_string_equal(rep.error.ename, EXPR_NO_RECORDING);
    json_decref(rep.lines);
    expr_free(e);
    e = parsed("gpu.matmul.gflops < 1000");         /* false: the where line names the device */
    assert_int_equal(expr_check_with(e, live, rec, &rep), 0);
    assert_non_null(strstr(json_string_value(json_array_get(rep.lines, 0)), "recorded on NVIDIA H200"));
    json_decref(rep.lines);
    expr_free(e);
    results_record(live, gpu, 2);                   /* a live GPU result: gpu. reads it */
    e = parsed("gpu.matmul.gflops == 4000");
    assert_int_equal(expr_check_with(e, live, NULL, &rep), 1);
    expr_free(e);
    e = parsed("gpu.nosuchmagic == 1");             /* no prefix: a result called gpu, which there is not */
    assert_int_equal(expr_check_with(e, live, rec, &rep), -1);
    assert_string_equal(rep.error.ename, "LookupError");
    json_decref(rep.lines);
    expr_free(e);
    json_decref(cpu);
    json_decref(gpu);
    results_free(live);
    results_free(rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_literals_and_operators),
        cmocka_unit_test(test_lookups),
        cmocka_unit_test(test_lookup_errors),
        cmocka_unit_test(test_false_explained),
        cmocka_unit_test(test_score),
        cmocka_unit_test(test_names_for_completion),
        cmocka_unit_test(test_store_keeps_newest),
        cmocka_unit_test(test_chains_within_the_limit),
        cmocka_unit_test(test_chains_past_the_limit),
        cmocka_unit_test(test_nesting_within_and_past_the_limit),
        cmocka_unit_test(test_integers_are_exact),
        cmocka_unit_test(test_no_infinity_or_nan),
        cmocka_unit_test(test_literals_in_range),
        cmocka_unit_test(test_string_escapes),
        cmocka_unit_test(test_function_calls_checked),
        cmocka_unit_test(test_gpu_and_recorded_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
