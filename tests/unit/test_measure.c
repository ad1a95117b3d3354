/* test_measure.c — --reps auto's rule (cudalab/measure.h): the median's confidence interval,
 * when a runner takes another rep, and the statistics every timed run reports. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cudalab/measure.h"
#include "magic/sweep.h"

/* A runner's loop, its reps' times drawn from `ms_of` (rep index -> ms); the reps it took. */
static int run_loop(int reps, cl_times *t, float (*ms_of)(int))
{
    memset(t, 0, sizeof *t);
    for (; cl_rep_more(reps, t); t->reps++)
        t->ms[t->reps] = ms_of(t->reps);
    return t->reps;
}

static float steady(int r)
{
    return 1.0f + 0.001f * (float)(r % 3);          /* within 0.2%: settles at once */
}

static float noisy(int r)
{
    return (float)(1.0 + 0.5 * (double)(cl_hash(7, (uint64_t)r) % 1000) / 1000.0);  /* ±25% */
}

static float slow(int r)
{
    (void)r;
    return 300.0f;                                   /* 300 ms a rep: the budget ends it */
}

static void a_fixed_count_is_taken_as_asked(void **state)
{
    (void)state;
    cl_times t;
    assert_int_equal(run_loop(20, &t, noisy), 20);
    assert_int_equal(run_loop(1, &t, steady), 1);
    assert_int_equal(run_loop(CL_MAX_REPS, &t, steady), CL_MAX_REPS);
}

static void auto_stops_once_the_median_settles(void **state)
{
    (void)state;
    cl_times t;
    assert_int_equal(run_loop(CL_REPS_AUTO, &t, steady), CL_REPS_AUTO_MIN);
    assert_true(cl_times_settled(&t));
}

static void auto_goes_on_while_noisy_and_stops_at_the_budget_or_the_cap(void **state)
{
    (void)state;
    cl_times t;
    int n = run_loop(CL_REPS_AUTO, &t, noisy);
    assert_true(n > 4 * CL_REPS_AUTO_MIN);          /* ±25% noise needs many reps to pin the median to 1% */
    assert_true(n <= CL_MAX_REPS);
    n = run_loop(CL_REPS_AUTO, &t, slow);
    assert_int_equal(n, CL_REPS_AUTO_MIN);          /* 10 x 300 ms is past the 2 s budget already */
}

static void confidence_interval_of_the_median(void **state)
{
    (void)state;
    float same[9] = {2, 2, 2, 2, 2, 2, 2, 2, 2};
    assert_true(cl_median_ci_rel(same, 9) == 0);
    float one[1] = {5};
    assert_true(cl_median_ci_rel(one, 1) == 0);
    /* 1..100 ms: median 50.5, the order statistics 50 -/+ 9.8 -> s[40] = 41, s[60] = 61 */
    float ramp[100];
    for (int i = 0; i < 100; i++)
        ramp[i] = (float)(i + 1);
    assert_true(fabs(cl_median_sorted(ramp, 100) - 50.5) < 1e-9);
    assert_true(fabs(cl_median_ci_rel(ramp, 100) - (61.0 - 41.0) / (2 * 50.5)) < 1e-6);
}

static void stats_report_the_interval_and_whether_it_settled(void **state)
{
    (void)state;
    cl_times t;
    run_loop(CL_REPS_AUTO, &t, steady);
    json_t *j = stats_json(&t);
    assert_int_equal(json_integer_value(json_object_get(j, "reps")), CL_REPS_AUTO_MIN);
    assert_true(json_is_true(json_object_get(j, "settled")));
    assert_true(json_real_value(json_object_get(j, "ci95_rel")) <= CL_REPS_SETTLED);
    json_decref(j);
    run_loop(5, &t, noisy);
    j = stats_json(&t);
    assert_true(json_is_false(json_object_get(j, "settled")));     /* fewer than the least auto takes */
    json_decref(j);
}

static void sweep_reps_reads_the_flag(void **state)
{
    (void)state;
    json_t *p = json_pack("{s:s}", "reps", "auto");
    assert_int_equal(sweep_reps(p), CL_REPS_AUTO);
    json_object_set_new(p, "reps", json_integer(7));
    assert_int_equal(sweep_reps(p), 7);
    json_decref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_fixed_count_is_taken_as_asked),
        cmocka_unit_test(auto_stops_once_the_median_settles),
        cmocka_unit_test(auto_goes_on_while_noisy_and_stops_at_the_budget_or_the_cap),
        cmocka_unit_test(confidence_interval_of_the_median),
        cmocka_unit_test(stats_report_the_interval_and_whether_it_settled),
        cmocka_unit_test(sweep_reps_reads_the_flag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
