/* test_sweep.c — the sweep machinery: cartesian order, progress modes, the
 * document, sorting, statistics and failed checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cudalab/render.h"
#include "cudalab/sweep.h"

/* ---- a sink that records what the sweep shows ---- */

typedef struct sink {
    int modes[64];
    int nresults;
    json_t *final_doc;
    json_t *final_view;
    int charts;
} sink;

static void sink_stream(void *impl, const char *name, const char *text) {}

static void sink_result(void *impl, json_t *doc, json_t *view, const char *display_id,
                        enum result_mode mode)
{
    sink *s = impl;
    if (s->nresults < 64)
        s->modes[s->nresults] = mode;
    s->nresults++;
    if (doc) {
        json_decref(s->final_doc);
        json_decref(s->final_view);
        s->final_doc = doc;
        s->final_view = view;
        return;
    }
    if (mode == RESULT_PLAIN)
        s->charts++;
    json_decref(view);
}

static const magic_out sink_out = { sink_stream, sink_result };

/* ---- a fake family: metric = size * tile, check fails when size == 13 ---- */

static int point(magic_ctx *ctx, const json_t *p, json_t *runs, void *user)
{
    json_int_t size = json_integer_value(json_object_get(p, "size"));
    json_int_t tile = json_integer_value(json_object_get(p, "tile"));
    const char *variant = json_string_value(json_object_get(p, "variant"));
    if (size < 0)
        return magic_error(ctx, "UsageError", "negative");
    cl_times t = { .reps = 3, .ms = { 3, 1, 2 } };
    json_array_append_new(runs, json_pack("{s:s, s:I, s:I, s:f, s:o, s:{s:b}}", "variant", variant,
                                          "size", size, "tile", tile, "gflops", (double)(size * tile),
                                          "time_ms", stats_json(&t), "check", "passed", size != 13));
    (*(int *)user)++;
    return 0;
}

static const sweep_column cols[] = {
    { "variant", "variant" }, { "size", "size" }, { "tile", "tile" }, { "gflops", "GFLOP/s" },
    { "check.passed", "check" }, { NULL, NULL },
};
static const sweep_spec spec = { .magic = "fake", .title = "Fake", .metric = "gflops", .metric_label = "GFLOP/s",
                                 .columns = cols, .run_point = point };

static int run(const char *params_json, sink *s, int *calls, magic_ctx *ctx)
{
    json_t *params = json_loads(params_json, 0, NULL);
    assert_non_null(params);
    memset(s, 0, sizeof *s);
    *ctx = (magic_ctx){ .out = &sink_out, .impl = s, .backend = cl_cpu_backend(), .backend_note = "test" };
    *calls = 0;
    int rc = sweep_run(ctx, &spec, params, calls);
    json_decref(params);
    return rc;
}

static void free_sink(sink *s)
{
    json_decref(s->final_doc);
    json_decref(s->final_view);
}

static void test_single_point(void **state)
{
    sink s;
    int calls;
    magic_ctx ctx;
    assert_int_equal(run("{\"variant\":\"a\",\"size\":4,\"tile\":2,\"sort\":false}", &s, &calls, &ctx), 0);
    assert_int_equal(calls, 1);
    assert_int_equal(s.nresults, 1);              /* no progress, no chart */
    assert_int_equal(s.modes[0], RESULT_PLAIN);
    const json_t *d = s.final_doc;
    assert_string_equal(json_string_value(json_object_get(d, "magic")), "fake");
    assert_string_equal(json_string_value(json_object_get(d, "backend")), "cpu");
    assert_int_equal(json_array_size(json_object_get(d, "runs")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "sweep"), "points")), 1);
    const json_t *tm = json_object_get(json_array_get(json_object_get(d, "runs"), 0), "time_ms");
    assert_true(json_real_value(json_object_get(tm, "median")) == 2.0);
    assert_true(json_real_value(json_object_get(tm, "min")) == 1.0);
    assert_true(json_real_value(json_object_get(tm, "max")) == 3.0);
    assert_true(json_real_value(json_object_get(tm, "stdev")) == 1.0);
    assert_int_equal(json_integer_value(json_object_get(tm, "reps")), 3);
    assert_string_equal(json_string_value(json_object_get(json_object_get(d, "device"), "backend")), "cpu");
    free_sink(&s);
}

static void test_cartesian_and_progress(void **state)
{
    sink s;
    int calls;
    magic_ctx ctx;
    assert_int_equal(run("{\"variant\":[\"a\",\"b\"],\"size\":[4,8,16],\"tile\":2,\"sort\":false}",
                         &s, &calls, &ctx), 0);
    assert_int_equal(calls, 6);
    /* SHOW, 5 UPDATEs, FINAL, then the chart */
    assert_int_equal(s.nresults, 8);
    assert_int_equal(s.modes[0], RESULT_SHOW);
    for (int i = 1; i < 6; i++)
        assert_int_equal(s.modes[i], RESULT_UPDATE);
    assert_int_equal(s.modes[6], RESULT_FINAL);
    assert_int_equal(s.charts, 1);
    const json_t *runs = json_object_get(s.final_doc, "runs");
    /* the last flag changes fastest */
    const char *expect_v[] = { "a", "a", "a", "b", "b", "b" };
    const int expect_n[] = { 4, 8, 16, 4, 8, 16 };
    for (int i = 0; i < 6; i++) {
        assert_string_equal(json_string_value(json_object_get(json_array_get(runs, i), "variant")), expect_v[i]);
        assert_int_equal(json_integer_value(json_object_get(json_array_get(runs, i), "size")), expect_n[i]);
    }
    const json_t *varying = json_object_get(json_object_get(s.final_doc, "sweep"), "varying");
    assert_string_equal(json_string_value(json_array_get(varying, 0)), "variant");
    assert_string_equal(json_string_value(json_array_get(varying, 1)), "size");
    free_sink(&s);
}

static void test_sorted_table(void **state)
{
    sink s;
    int calls;
    magic_ctx ctx;
    assert_int_equal(run("{\"variant\":\"a\",\"size\":[4,16,8],\"tile\":2,\"sort\":true}", &s, &calls, &ctx), 0);
    /* rows by GFLOP/s descending: 32, 16, 8 (column 3 of the runs table) */
    const json_t *blocks = json_object_get(s.final_view, "blocks");
    const json_t *rows = NULL;
    for (size_t i = 0; i < json_array_size(blocks); i++)
        if (json_object_get(json_array_get(blocks, i), "rows"))
            rows = json_object_get(json_array_get(blocks, i), "rows");
    assert_int_equal(json_array_size(rows), 3);
    const double expect[] = { 32, 16, 8 };
    for (int i = 0; i < 3; i++)
        assert_true(json_number_value(json_array_get(json_array_get(rows, (size_t)i), 3)) == expect[i]);
    /* the document keeps run order */
    const json_t *runs = json_object_get(s.final_doc, "runs");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(runs, 0), "size")), 4);
    free_sink(&s);
}

static void test_failed_check_is_an_error(void **state)
{
    sink s;
    int calls;
    magic_ctx ctx;
    assert_int_equal(run("{\"variant\":\"a\",\"size\":[4,13],\"tile\":1,\"sort\":false}", &s, &calls, &ctx), -1);
    assert_string_equal(ctx.ename, "CheckError");
    assert_non_null(strstr(ctx.evalue, "1 of 2 runs"));
    assert_non_null(s.final_doc);               /* the table is still shown */
    char *text = render_text(s.final_view);
    assert_non_null(strstr(text, "FAILED"));
    free(text);
    free_sink(&s);
}

static void test_point_error_stops(void **state)
{
    sink s;
    int calls;
    magic_ctx ctx;
    assert_int_equal(run("{\"variant\":\"a\",\"size\":[4,-1,8],\"tile\":1,\"sort\":false}", &s, &calls, &ctx), -1);
    assert_string_equal(ctx.ename, "UsageError");
    assert_int_equal(calls, 1);
    free_sink(&s);
}

static void test_too_many_points(void **state)
{
    json_t *params = json_pack("{s:o, s:o, s:i}", "size", json_array(), "tile", json_array(), "x", 1);
    for (int i = 0; i < 200; i++) {
        json_array_append_new(json_object_get(params, "size"), json_integer(i));
        json_array_append_new(json_object_get(params, "tile"), json_integer(i));
    }
    sink s;
    memset(&s, 0, sizeof s);
    int calls = 0;
    magic_ctx ctx = { .out = &sink_out, .impl = &s, .backend = cl_cpu_backend() };
    assert_int_equal(sweep_run(&ctx, &spec, params, &calls), -1);
    assert_string_equal(ctx.ename, "UsageError");
    assert_int_equal(calls, 0);
    json_decref(params);
    free_sink(&s);
}

static void test_launch_json(void **state)
{
    cl_launch l = { { 64, 64, 1 }, { 16, 16, 1 }, 2048, 32, 0 };
    json_t *j = launch_json(&l);
    char *s = json_dumps(j, JSON_COMPACT);
    assert_string_equal(s, "{\"grid\":[64,64,1],\"block\":[16,16,1],\"smem_per_block\":2048,"
                           "\"regs_per_thread\":32,\"kernels\":1}");
    free(s);
    json_decref(j);
    cl_times even = { .reps = 4, .ms = { 4, 1, 3, 2 } };
    assert_true(stats_median(&even) == 2.5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_point),
        cmocka_unit_test(test_cartesian_and_progress),
        cmocka_unit_test(test_sorted_table),
        cmocka_unit_test(test_failed_check_is_an_error),
        cmocka_unit_test(test_point_error_stops),
        cmocka_unit_test(test_too_many_points),
        cmocka_unit_test(test_launch_json),
    };
    return cmocka_run_group_tests_name("sweep", tests, NULL, NULL);
}
