/* test_check.c — the one check document every family writes (kernel/magic/check.c):
 * its shape when nothing is wrong, when values are wrong (numbers that JSON
 * cannot hold become null), when the check cannot tell which value, a tool's
 * findings under tools, and the old spellings that %assert names anew.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "magic/check.h"

static const json_t *path(const json_t *o, const char *a, const char *b)
{
    const json_t *x = json_object_get(o, a);
    return b ? json_object_get(x, b) : x;
}

static void passing_check_has_every_field(void **state)
{
    (void)state;
    json_t *c = check_new(true, "exact", 0);
    assert_true(json_is_true(path(c, "passed", NULL)));
    assert_string_equal(json_string_value(path(c, "method", NULL)), "exact");
    assert_true(json_real_value(path(c, "tolerance", NULL)) == 0.0);
    assert_int_equal(json_integer_value(path(c, "wrong", "count")), 0);
    assert_true(json_is_null(path(c, "wrong", "first")));
    assert_null(path(c, "first_wrong", NULL));
    assert_null(path(c, "tools", NULL));
    json_decref(c);
    c = check_new(false, NULL, -1);                 /* a bound that is not one number: null */
    assert_true(json_is_null(path(c, "tolerance", NULL)));
    assert_true(json_is_null(path(c, "method", NULL)));
    json_decref(c);
}

static void wrong_values_name_their_place(void **state)
{
    (void)state;
    json_t *c = check_new(true, "exact", 0);
    check_wrong(c, 7, json_pack("{s:i, s:i}", "row", 3, "col", 64), NAN, 11.5);
    check_first_wrong(c, "C[%d][%d] was never written (expected %g)", 3, 64, 11.5);
    assert_true(json_is_false(path(c, "passed", NULL)));      /* wrong values fail the check */
    const json_t *first = path(c, "wrong", "first");
    assert_int_equal(json_integer_value(path(c, "wrong", "count")), 7);
    assert_int_equal(json_integer_value(path(first, "at", "row")), 3);
    assert_int_equal(json_integer_value(path(first, "at", "col")), 64);
    assert_true(json_is_null(path(first, "got", NULL)));      /* NaN: no JSON number */
    assert_true(json_real_value(path(first, "want", NULL)) == 11.5);
    assert_string_equal(json_string_value(path(c, "first_wrong", NULL)), "C[3][64] was never written (expected 11.5)");
    check_wrong_int(c, 2, json_pack("{s:s, s:i}", "bin", "a-d", "index", 0), 4, 5);
    assert_int_equal(json_integer_value(path(path(c, "wrong", "first"), "got", NULL)), 4);
    check_wrong(c, 3, NULL, INFINITY, 1);                     /* which one is not known */
    assert_int_equal(json_integer_value(path(c, "wrong", "count")), 3);
    assert_true(json_is_null(path(c, "wrong", "first")));
    json_decref(c);
}

static void tools_go_under_one_key(void **state)
{
    (void)state;
    json_t *c = check_new(true, "exact", 0);
    check_tool(c, "racecheck", json_pack("{s:s, s:[s]}", "status", "failed", "findings", "a race"));
    check_tool(c, "cpu-runner", json_pack("{s:s, s:[]}", "status", "passed", "findings"));
    assert_string_equal(json_string_value(path(path(c, "tools", "racecheck"), "status", NULL)), "failed");
    assert_string_equal(json_string_value(path(path(c, "tools", "cpu-runner"), "status", NULL)), "passed");
    assert_int_equal(json_object_size(path(c, "tools", NULL)), 2);
    json_decref(c);
    json_t *skipped = check_skipped(NULL);
    assert_true(json_is_null(path(skipped, "passed", NULL)));
    assert_int_equal(json_object_size(skipped), 2);
    json_decref(skipped);
}

static void old_spellings_name_the_new(void **state)
{
    (void)state;
    const char *more = NULL;
    assert_string_equal(check_renamed("first_mismatch", &more), "check.wrong.first");
    assert_non_null(strstr(more, "check.wrong.first.at.bin"));
    assert_string_equal(check_renamed("mismatches", &more), "check.wrong.count");
    assert_null(more);
    assert_string_equal(check_renamed("tol", NULL), "check.tolerance");
    assert_string_equal(check_renamed("found", NULL), "check.tools.racecheck");
    assert_null(check_renamed("passed", NULL));
    assert_null(check_renamed("gflops", NULL));
}

/* Bug parity: the CPU runner's run of a student's kernel (its lesson run) merged into a run's check,
 * the same on a GPU as on the CPU backend. */
static void cpu_runner_findings_fail_the_check(void **state)
{
    (void)state;
    json_t *c = check_new(true, "exact", 0);            /* a GPU run that passed */
    assert_false(check_cpu_runner(c, "", "", NULL));    /* the runner found nothing */
    assert_true(json_is_true(path(c, "passed", NULL)));
    assert_string_equal(json_string_value(path(path(c, "tools", "cpu-runner"), "status", NULL)), "passed");
    json_t *lines = json_pack("[s]", "data race on shared memory: thread (1,0) of block (0,0) read As[0][0] at line 12");
    assert_true(check_cpu_runner(c, "KernelError", "your kernel k failed on the CPU runner", lines));
    assert_true(json_is_false(path(c, "passed", NULL)));
    const json_t *runner = path(c, "tools", "cpu-runner");
    assert_string_equal(json_string_value(path(runner, "status", NULL)), "failed");
    assert_true(json_equal(path(runner, "findings", NULL), lines));
    json_decref(lines);
    json_decref(c);
    c = check_new(true, "exact", 0);                    /* findings without lines: its message */
    assert_true(check_cpu_runner(c, "KernelError", "out-of-bounds access: C[67][0]", NULL));
    assert_string_equal(json_string_value(json_array_get(path(path(c, "tools", "cpu-runner"), "findings", NULL), 0)),
                        "out-of-bounds access: C[67][0]");
    json_decref(c);
    c = check_new(false, "exact", 0);                   /* a wrong result there too: the check's own business */
    assert_false(check_cpu_runner(c, "CheckError", "C[3][4] = 0, expected 1", NULL));
    assert_string_equal(json_string_value(path(path(c, "tools", "cpu-runner"), "status", NULL)), "passed");
    json_decref(c);
    c = check_new(true, "exact", 0);                    /* the runner could not run it: not the kernel's fault */
    assert_false(check_cpu_runner(c, "CompileError", "no host compiler", NULL));
    assert_true(json_is_true(path(c, "passed", NULL)));
    runner = path(c, "tools", "cpu-runner");
    assert_string_equal(json_string_value(path(runner, "status", NULL)), "unavailable");
    assert_string_equal(json_string_value(path(runner, "reason", NULL)), "no host compiler");
    json_decref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(passing_check_has_every_field),
        cmocka_unit_test(wrong_values_name_their_place),
        cmocka_unit_test(tools_go_under_one_key),
        cmocka_unit_test(old_spellings_name_the_new),
        cmocka_unit_test(cpu_runner_findings_fail_the_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
