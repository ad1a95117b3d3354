/* test_expr.c — the %assert/%score language: parsing, lookups over stored
 * results, reductions, and the messages of false or failing checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cudalab/results.h"
#include "magics/expr.h"

/* Two %matmul results (cell 3: naive; cell 5: a tiled sweep), a %histo and a %device. */
static const char *const docs[] = {
    "{\"magic\":\"matmul\",\"params\":{\"size\":64,\"seed\":1},\"device\":{\"name\":\"H200\"},"
    "\"runs\":[{\"variant\":\"naive\",\"tile\":null,\"m\":64,\"gflops\":4.5,\"check\":{\"passed\":true}}]}",
    "{\"magic\":\"matmul\",\"params\":{\"size\":64,\"seed\":1},\"sweep\":{\"varying\":[\"tile\"]},"
    "\"runs\":[{\"variant\":\"tiled\",\"tile\":8,\"m\":64,\"gflops\":10.0,\"check\":{\"passed\":true}},"
    "{\"variant\":\"tiled\",\"tile\":16,\"m\":64,\"gflops\":12.5,\"check\":{\"passed\":false}}]}",
    "{\"magic\":\"histo\",\"params\":{},\"runs\":[{\"variant\":\"cpu\",\"bins\":{\"a-d\":5,\"e-h\":5},"
    "\"list\":[1,2,3]},{\"variant\":\"fast\",\"bins\":{\"a-d\":5,\"e-h\":5},\"list\":[1,2,3]}]}",
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

/* Runs %assert's check; returns its outcome, with the report in *rep. */
static int check(const char *src, expr_report *rep)
{
    char msg[400];
    size_t at;
    expr *e = expr_parse(src, msg, sizeof msg, &at);
    if (!e)
        fail_msg("%s: %s", src, msg);
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
        fail_msg("expected true: %s; got %d: %s: %s", src, rc, rep.ename, rep.evalue);
    json_decref(rep.lines);
}

/* false (rc 0) or an error (rc -1) with ename, and evalue containing what */
static void fails(const char *src, int want_rc, const char *ename, const char *what)
{
    expr_report rep;
    int rc = check(src, &rep);
    if (rc != want_rc || strcmp(rep.ename, ename) != 0 || !strstr(rep.evalue, what))
        fail_msg("%s: got %d %s: %s", src, rc, rep.ename, rep.evalue);
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
    fails("1 / 0 > 1", -1, "ZeroDivisionError", "division by zero");
    fails("'a' < 1", -1, "TypeError", "cannot order");
    fails("'a' + 1", -1, "TypeError", "needs numbers");
    fails("1 > 2", 0, "AssertionError", "1 > 2 is false");
    fails("1 + 1e-12 == 1", 0, "AssertionError", "1.000000000001 == 1 is false");
    fails("nosuch(1)", -1, "LookupError", "unknown function nosuch()");
    fails("maxx(1, 2)", -1, "LookupError", "did you mean max()?");
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
    fails("reduce.check.passed", -1, "LookupError", "no %reduce result in this session yet");
    fails("matmull.gflops > 1", -1, "LookupError", "did you mean matmul?");
    fails("matmul[variant=tild].gflops", -1, "LookupError", "did you mean variant=tiled?");
    fails("matmul[variant=fast].gflops", -1, "LookupError",
          "no %matmul run in this session has variant=fast; the newest %matmul result (cell 5) has: "
          "tile=8; tile=16");
    fails("matmul[tyle=8].gflops", -1, "LookupError", "did you mean 'tile'?");
    fails("matmul[variant=naive].gflop", -1, "LookupError", "has no field 'gflop'; did you mean 'gflops'?");
    fails("histo.bins['a-e'] == 5", -1, "LookupError", "has no key 'a-e'; its keys: 'a-d', 'e-h'");
    fails("histo.list[3] == 1", -1, "IndexError", "has 3 items: index 3 is out of range");
    fails("matmul.m.x", -1, "TypeError", "which has no fields");
    fails("matmul.gflops > 1", -1, "ValueError", "matmul.gflops has 2 values, one per run of %matmul "
          "(10 (tile=8), 12.5 (tile=16))");
    fails("min(histo.bins)", -1, "TypeError", "min() needs numbers");
    fails("len(1)", -1, "TypeError", "len() needs");
}

static void test_false_explained(void **state)
{
    expr_report rep;
    assert_int_equal(check("matmul[tile=16].gflops > 3 * matmul[variant=naive].gflops", &rep), 0);
    assert_string_equal(rep.ename, "AssertionError");
    assert_non_null(strstr(rep.evalue, "12.5 > 13.5 is false"));
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
    fails("matmul.check.passed", 0, "AssertionError", "is not true for 1 of 2 runs: tile=16");
    fails("matmul.m == 64 and histo.bins['a-d'] == 7", 0, "AssertionError", "5 == 7 is false");
    fails("not matmul[variant=naive].check.passed", 0, "AssertionError", "is true");
    fails("1 > 2 or 'a' == 'b'", 0, "AssertionError", "1 > 2 is false, and 'a' == 'b' is false");
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
            assert_string_equal(rep.ename, i == 3 ? "TypeError" : "ValueError");
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
    results_free(rs);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
