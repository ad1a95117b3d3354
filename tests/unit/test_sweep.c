/* test_sweep.c — the sweep machinery: cartesian order, progress (its modes,
 * its throttle in time and its size), the document, sorting, statistics,
 * failed checks, the limit on points and the host-work limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "render/render.h"
#include "magic/sweep.h"
#include "magic/sweep_internal.h"

#include "magic_sink.h"

/* ---- a sink that also records how large the sweep's progress grew ---- */

/* The shared sink (modes, charts, the final document), the largest
 * progress update it was shown, and the line the progress display ended with. */
typedef struct sweep_sink {
    sink base;                  /* first: the shared callbacks see a sink */
    size_t progress_rows;       /* the most runs any progress update showed */
    size_t progress_bytes;      /* the largest progress view, as compact JSON */
    char ended[256];            /* the text of the display's last state (RESULT_END) */
} sweep_sink;

/* The rows of a view's last table. */
static size_t table_rows(const json_t *view)
{
    const json_t *blocks = json_object_get(view, "blocks"), *rows = NULL;
    for (size_t i = 0; i < json_array_size(blocks); i++)
        if (json_object_get(json_array_get(blocks, i), "rows"))
            rows = json_object_get(json_array_get(blocks, i), "rows");
    return json_array_size(rows);
}

static void sweep_sink_result(void *impl, json_t *doc, json_t *view, const char *display_id,
                              enum result_mode mode)
{
    sweep_sink *s = impl;
    if (!doc && (mode == RESULT_SHOW || mode == RESULT_UPDATE)) {
        char *text = json_dumps(view, JSON_COMPACT);
        size_t rows = table_rows(view), bytes = text ? strlen(text) : 0;
        s->progress_rows = rows > s->progress_rows ? rows : s->progress_rows;
        s->progress_bytes = bytes > s->progress_bytes ? bytes : s->progress_bytes;
        free(text);
    }
    const char *last = json_string_value(json_object_get(json_array_get(json_object_get(view, "blocks"), 0), "text"));
    if (mode == RESULT_END)     /* never emptied: a saved notebook keeps the display's last state */
        snprintf(s->ended, sizeof s->ended, "%s", last ? last : "");
    sink_result(&s->base, doc, view, display_id, mode);
}
static const magic_out sweep_out = { sink_stream, sweep_sink_result };

/* ---- a clock the points move: each point takes point_ms ---- */

static double fake_now_ms, point_ms;

static double fake_clock(void)
{
    return fake_now_ms;
}

/* ---- a fake family: metric = size * tile, check fails when size == 13 ---- */

static int point(magic_ctx *ctx, const json_t *p, json_t *runs, void *user)
{
    json_int_t size = json_integer_value(json_object_get(p, "size"));
    json_int_t tile = json_integer_value(json_object_get(p, "tile"));
    const char *variant = json_string_value(json_object_get(p, "variant"));
    if (size < 0)
        return magic_error(ctx, "UsageError", "negative");
    cl_times t = { .reps = 3, .ms = { 3, 1, 2 } };
    json_array_append_new(runs, json_pack("{s:s, s:I, s:I, s:f, s:f, s:f, s:o, s:{s:b}}", "variant", variant,
                                          "size", size, "tile", tile, "gflops", (double)(size * tile),
                                          "flat", 1000.0 + (double)size, "tiny", (double)(size * tile) * 1e-4,
                                          "time_ms", stats_json(&t), "check", "passed", size != 13));
    (*(int *)user)++;
    fake_now_ms += point_ms;
    return 0;
}

static const sweep_column cols[] = {
    {.path = "variant", .header = "variant"}, {.path = "size", .header = "size"}, {.path = "tile", .header = "tile"},
    {.path = "gflops", .header = "GFLOP/s"}, {.path = "check.passed", .header = "check"}, {.path = NULL},
};
static const sweep_spec spec = { .magic = "fake", .title = "Fake", .metric = "gflops", .metric_label = "GFLOP/s",
                                 .columns = cols, .run_point = point };

/* The same family measured otherwise: "flat" barely changes (1000 + size),
 * "tiny" is a rate whose work (rate x the 2 ms median) stays under 2^20. */
static const sweep_spec flat_spec = { .magic = "fake", .title = "Fake", .metric = "flat", .metric_label = "GB/s",
                                      .rate_of = "bytes", .columns = cols, .run_point = point };
static const sweep_spec tiny_spec = { .magic = "fake", .title = "Fake", .metric = "tiny", .metric_label = "GB/s",
                                      .rate_of = "bytes", .columns = cols, .run_point = point };

/* Runs a sweep of the given spec; each point takes ms_per_point on the fake clock. */
static int run_timed(const sweep_spec *sp, const char *params_json, double ms_per_point, sweep_sink *s, int *calls,
                     magic_ctx *ctx)
{
    json_t *params = json_loads(params_json, 0, NULL);
    assert_non_null(params);
    memset(s, 0, sizeof *s);
    *ctx = (magic_ctx){ .sink.out = &sweep_out, .sink.impl = s, .backend = cl_cpu_backend(), .dev.note = "test" };
    *calls = 0;
    sweep_clock_ms = fake_clock;
    fake_now_ms = 0;
    point_ms = ms_per_point;
    int rc = sweep_run(ctx, sp, params, calls);
    json_decref(params);
    return rc;
}

static int run(const char *params_json, sweep_sink *s, int *calls, magic_ctx *ctx)
{
    return run_timed(&spec, params_json, 0, s, calls, ctx);
}

/* "[1,2,...,n]" */
static char *int_list(int n)
{
    char *buf = malloc((size_t)n * 8 + 4);
    size_t used = (size_t)sprintf(buf, "[");
    for (int i = 1; i <= n; i++)
        used += (size_t)sprintf(buf + used, "%s%d", i > 1 ? "," : "", i);
    sprintf(buf + used, "]");
    return buf;
}

static void test_single_point(void **state)
{
    sweep_sink s;
    int calls;
    magic_ctx ctx;
    assert_int_equal(run("{\"variant\":\"a\",\"size\":4,\"tile\":2,\"sort\":false}", &s, &calls, &ctx), 0);
    assert_int_equal(calls, 1);
    assert_int_equal(s.base.results, 1);              /* no progress, no chart */
    assert_int_equal(s.base.modes[0], RESULT_PLAIN);
    const json_t *d = s.base.doc;
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
    sink_free(&s.base, &ctx);
}

static void test_cartesian_and_progress(void **state)
{
    sweep_sink s;
    int calls;
    magic_ctx ctx;
    assert_int_equal(run("{\"variant\":[\"a\",\"b\"],\"size\":[4,8,16],\"tile\":2,\"sort\":false}",
                         &s, &calls, &ctx), 0);
    assert_int_equal(calls, 6);
    /* instant points: SHOW at once, no update within SWEEP_PROGRESS_MS, END with what ran, FINAL, then
     * the chart */
    assert_int_equal(s.base.results, 4);
    assert_int_equal(s.base.modes[0], RESULT_SHOW);
    assert_int_equal(s.base.modes[1], RESULT_END);
    assert_non_null(strstr(s.ended, ": 6 points done in "));
    assert_int_equal(s.base.modes[2], RESULT_FINAL);
    assert_int_equal(s.base.charts, 1);
    const json_t *runs = json_object_get(s.base.doc, "runs");
    /* the last flag changes fastest */
    const char *expect_v[] = { "a", "a", "a", "b", "b", "b" };
    const int expect_n[] = { 4, 8, 16, 4, 8, 16 };
    for (int i = 0; i < 6; i++) {
        assert_string_equal(json_string_value(json_object_get(json_array_get(runs, i), "variant")), expect_v[i]);
        assert_int_equal(json_integer_value(json_object_get(json_array_get(runs, i), "size")), expect_n[i]);
    }
    const json_t *varying = json_object_get(json_object_get(s.base.doc, "sweep"), "varying");
    assert_string_equal(json_string_value(json_array_get(varying, 0)), "variant");
    assert_string_equal(json_string_value(json_array_get(varying, 1)), "size");
    sink_free(&s.base, &ctx);
}

static void test_progress_throttled_in_time(void **state)
{
    sweep_sink s;
    int calls;
    magic_ctx ctx;
    /* 10 points of 100 ms: shown before the first, then before points 3, 6 and 9 */
    assert_int_equal(run_timed(&spec, "{\"variant\":\"a\",\"size\":[1,2,3,4,5,6,7,8,9,10],\"tile\":2,"
                               "\"sort\":false}", 100, &s, &calls, &ctx), 0);
    assert_int_equal(calls, 10);
    assert_int_equal(s.base.results, 7);
    assert_int_equal(s.base.modes[0], RESULT_SHOW);
    for (int i = 1; i < 4; i++)
        assert_int_equal(s.base.modes[i], RESULT_UPDATE);
    assert_int_equal(s.base.modes[4], RESULT_END);
    assert_non_null(strstr(s.ended, ": 10 points done in 1.0 s"));     /* the clock the points moved */
    assert_int_equal(s.base.modes[5], RESULT_FINAL);
    assert_int_equal(s.base.charts, 1);
    sink_free(&s.base, &ctx);
}

static void test_progress_stays_small(void **state)
{
    sweep_sink s;
    int calls;
    magic_ctx ctx;
    char *sizes = int_list(1000), params[9000];
    snprintf(params, sizeof params, "{\"variant\":\"a\",\"size\":2,\"tile\":%s,\"sort\":false}", sizes);
    free(sizes);
    /* every point slower than the throttle: an update before each, each with the last few runs only */
    assert_int_equal(run_timed(&spec, params, SWEEP_PROGRESS_MS, &s, &calls, &ctx), 0);
    assert_int_equal(calls, 1000);
    assert_int_equal(s.base.results, 1000 + 3);
    assert_int_equal(s.progress_rows, SWEEP_PROGRESS_ROWS);
    assert_true(s.progress_bytes < 2000);
    /* the final result has every run, in the document and in its table */
    assert_int_equal(json_array_size(json_object_get(s.base.doc, "runs")), 1000);
    assert_int_equal(table_rows(s.base.view), 1000);
    sink_free(&s.base, &ctx);
}

static void test_sorted_table(void **state)
{
    sweep_sink s;
    int calls;
    magic_ctx ctx;
    assert_int_equal(run("{\"variant\":\"a\",\"size\":[4,16,8],\"tile\":2,\"sort\":true}", &s, &calls, &ctx), 0);
    /* rows by GFLOP/s descending: 32, 16, 8 (column 3 of the runs table) */
    const json_t *blocks = json_object_get(s.base.view, "blocks");
    const json_t *rows = NULL;
    for (size_t i = 0; i < json_array_size(blocks); i++)
        if (json_object_get(json_array_get(blocks, i), "rows"))
            rows = json_object_get(json_array_get(blocks, i), "rows");
    assert_int_equal(json_array_size(rows), 3);
    const double expect[] = { 32, 16, 8 };
    for (int i = 0; i < 3; i++)
        assert_true(json_number_value(json_array_get(json_array_get(rows, (size_t)i), 3)) == expect[i]);
    /* the document keeps run order */
    const json_t *runs = json_object_get(s.base.doc, "runs");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(runs, 0), "size")), 4);
    sink_free(&s.base, &ctx);
}

/* doc.sweep.chart as a string ("none" for null), and its note. */
static const char *chart_of(const sweep_sink *s)
{
    const json_t *kind = json_object_get(json_object_get(s->base.doc, "sweep"), "chart");
    return json_is_string(kind) ? json_string_value(kind) : "none";
}

static const char *chart_note_of(const sweep_sink *s)
{
    return json_string_value(json_object_get(json_object_get(s->base.doc, "sweep"), "chart_note"));
}

/* Whether the final view has a note starting with text. */
static int view_has_note(const json_t *view, const char *text)
{
    const json_t *blocks = json_object_get(view, "blocks");
    for (size_t i = 0; i < json_array_size(blocks); i++) {
        const json_t *b = json_array_get(blocks, i);
        const char *t = json_string_value(json_object_get(b, "text"));
        if (strcmp(json_string_value(json_object_get(b, "type")), "note") == 0 && t && strncmp(t, text, strlen(text)) == 0)
            return 1;
    }
    return 0;
}

/* The chart follows what the sweep varies, or is left out where it would be noise. */
static void test_chart_choice(void **state)
{
    static const struct {
        const sweep_spec *spec;
        const char *params;
        const char *chart;                  /* doc.sweep.chart, "none" for null */
        const char *note;                   /* the start of chart_note, NULL: none */
    } cases[] = {
        /* a numeric axis with 3 values: a line; the other flags make its series */
        { &spec, "{\"variant\":\"a\",\"size\":[4,8,16],\"tile\":2}", "line", NULL },
        { &spec, "{\"variant\":[\"a\",\"b\"],\"size\":[4,8,16],\"tile\":2}", "line", NULL },
        /* names only: bars */
        { &spec, "{\"variant\":[\"a\",\"b\",\"c\"],\"size\":4,\"tile\":[2,3]}", "bar", NULL },
        /* a numeric flag with two values is no axis: bars of every combination */
        { &spec, "{\"variant\":[\"a\",\"b\"],\"size\":[4,8],\"tile\":2}", "bar", NULL },
        /* two results: the table says it, no note needed */
        { &spec, "{\"variant\":\"a\",\"size\":[4,8],\"tile\":2}", "none", NULL },
        /* near-identical values: noise */
        { &flat_spec, "{\"variant\":\"a\",\"size\":[4,8,16],\"tile\":2}", "none",
          "no chart: every GB/s lies within 5% of the others (1004 to 1016), as near as timing noise" },
        /* a rate over tiny work: launch and clock, not the rate */
        { &tiny_spec, "{\"variant\":\"a\",\"size\":[4,8,16],\"tile\":2}", "none",
          "no chart: every point does less than 2^20 bytes of work" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sweep_sink s;
        int calls;
        magic_ctx ctx;
        assert_int_equal(run_timed(cases[i].spec, cases[i].params, 0, &s, &calls, &ctx), 0);
        if (strcmp(chart_of(&s), cases[i].chart) != 0)
            fail_msg("%s: chart %s, want %s", cases[i].params, chart_of(&s), cases[i].chart);
        assert_int_equal(s.base.charts, strcmp(cases[i].chart, "none") != 0);
        const char *note = chart_note_of(&s);
        if (cases[i].note) {
            assert_non_null(note);
            if (strncmp(note, cases[i].note, strlen(cases[i].note)) != 0)
                fail_msg("%s: note '%s', want '%s'", cases[i].params, note, cases[i].note);
            assert_true(view_has_note(s.base.view, cases[i].note));
        } else {
            assert_null(note);
            assert_false(view_has_note(s.base.view, "no chart"));
        }
        sink_free(&s.base, &ctx);
    }
}

static void test_failed_check_is_an_error(void **state)
{
    sweep_sink s;
    int calls;
    magic_ctx ctx;
    assert_int_equal(run("{\"variant\":\"a\",\"size\":[4,13],\"tile\":1,\"sort\":false}", &s, &calls, &ctx), -1);
    assert_string_equal(ctx.error.ename, "CheckError");
    assert_non_null(strstr(ctx.error.evalue, "1 of 2 runs"));
    assert_non_null(s.base.doc);               /* the table is still shown */
    char *text = render_text(s.base.view);
    assert_non_null(strstr(text, "FAILED"));
    free(text);
    sink_free(&s.base, &ctx);
}

static void test_point_error_stops(void **state)
{
    sweep_sink s;
    int calls;
    magic_ctx ctx;
    assert_int_equal(run("{\"variant\":\"a\",\"size\":[4,-1,8],\"tile\":1,\"sort\":false}", &s, &calls, &ctx), -1);
    assert_string_equal(ctx.error.ename, "UsageError");
    assert_int_equal(calls, 1);
    sink_free(&s.base, &ctx);
}

static void test_too_many_points(void **state)
{
    json_t *params = json_pack("{s:o, s:o, s:i}", "size", json_array(), "tile", json_array(), "x", 1);
    for (int i = 0; i < 200; i++) {
        json_array_append_new(json_object_get(params, "size"), json_integer(i));
        json_array_append_new(json_object_get(params, "tile"), json_integer(i));
    }
    sweep_sink s;
    memset(&s, 0, sizeof s);
    int calls = 0;
    magic_ctx ctx = { .sink.out = &sweep_out, .sink.impl = &s, .backend = cl_cpu_backend() };
    assert_int_equal(sweep_run(&ctx, &spec, params, &calls), -1);
    assert_string_equal(ctx.error.ename, "UsageError");
    assert_non_null(strstr(ctx.error.evalue, "this sweep has 40000 points (200 × 200: --size, --tile)"));
    assert_non_null(strstr(ctx.error.evalue, "the limit is 10000"));
    assert_int_equal(calls, 0);
    size_t points = 0;
    assert_int_equal(sweep_count(&ctx, params, &points), -1);
    /* a cross product far beyond a size_t is counted, not wrapped */
    json_t *huge = json_object();
    for (int k = 0; k < 8; k++) {
        char key[8];
        snprintf(key, sizeof key, "f%d", k);
        json_object_set_new(huge, key, json_array());
        for (int i = 0; i < 1000; i++)
            json_array_append_new(json_object_get(huge, key), json_integer(i));
    }
    assert_int_equal(sweep_run(&ctx, &spec, huge, &calls), -1);
    assert_non_null(strstr(ctx.error.evalue, "this sweep has 1e+24 points"));
    assert_int_equal(calls, 0);
    json_decref(huge);
    json_decref(params);
    sink_free(&s.base, &ctx);
}

/* ---- host work: a family whose run costs `size` units at 1000 units/s, its
 * check `size` units once per size (shared by the points of one size), its
 * inputs 10 * `tile` units per point, and whose variant "opt" costs ten times more
 * and is optional ---- */

static host_work fake_work(magic_ctx *ctx, const json_t *p, void *user)
{
    double size = (double)json_integer_value(json_object_get(p, "size"));
    bool opt = strcmp(json_string_value(json_object_get(p, "variant")), "opt") == 0;
    double tile = (double)json_integer_value(json_object_get(p, "tile"));
    return (host_work){ .run = opt ? 10 * size : size, .run_rate = 1000, .setup = 10 * tile, .setup_rate = 1000,
                        .check = size, .check_rate = 1000, .check_key = (unsigned long long)size,
                        .optional = opt };
}

static const sweep_spec work_spec = { .magic = "fake", .title = "Fake", .metric = "gflops",
                                      .metric_label = "GFLOP/s", .columns = cols, .run_point = point,
                                      .host_work = fake_work, .size_flag = "size" };

static int run_work(const char *params_json, sweep_sink *s, int *calls, magic_ctx *ctx)
{
    setenv(HOST_WORK_LIMIT_ENV, "1", 1);
    int rc = run_timed(&work_spec, params_json, 0, s, calls, ctx);
    unsetenv(HOST_WORK_LIMIT_ENV);

    sink_free(&s->base, ctx);
    return rc;
}

static void test_host_work_limit(void **state)
{
    sweep_sink s;
    int calls;
    magic_ctx ctx;
    /* 0.4 s of runs, 0.01 s of inputs and 0.4 s of check: under the limit of 1 s */
    assert_int_equal(run_work("{\"variant\":\"a\",\"size\":400,\"tile\":1,\"reps\":1,\"warmup\":0}",
                              &s, &calls, &ctx), 0);
    assert_int_equal(calls, 1);
    /* 0.6 + 0.01 + 0.6 s: refused before anything runs, with the estimate, the limit and the ways out */
    assert_int_equal(run_work("{\"variant\":\"a\",\"size\":600,\"tile\":1,\"reps\":1,\"warmup\":0}",
                              &s, &calls, &ctx), -1);
    assert_int_equal(calls, 0);
    assert_string_equal(ctx.error.ename, "UsageError");
    assert_non_null(strstr(ctx.error.evalue, "%fake --size 600: about 1.2 s of host work, estimated from this host's CPU "
                                       "backend: 1 run (--warmup + --reps) 0.6 s, inputs and set-up 0.01 s, the check's CPU "
                                       "reference 0.6 s; "));
    assert_non_null(strstr(ctx.error.evalue, "the limit is 1.0 s (CUDALAB_HOST_WORK_LIMIT) — use a smaller --size, "
                                       "fewer --reps, or --force"));
    /* --force runs it */
    assert_int_equal(run_work("{\"variant\":\"a\",\"size\":600,\"tile\":1,\"reps\":1,\"warmup\":0,"
                              "\"force\":true}", &s, &calls, &ctx), 0);
    assert_int_equal(calls, 1);
    /* the runs count --warmup + --reps times: 4 × 0.25 + 0.01 + 0.25 s */
    assert_int_equal(run_work("{\"variant\":\"a\",\"size\":250,\"tile\":1,\"reps\":3,\"warmup\":1}",
                              &s, &calls, &ctx), -1);
    assert_non_null(strstr(ctx.error.evalue, "4 runs (--warmup + --reps) 1.0 s"));
}

static void test_host_work_sums_a_sweep(void **state)
{
    sweep_sink s;
    int calls;
    magic_ctx ctx;
    /* two points of one size share the check: 0.3 + 0.01 + 0.3, then 0.3 + 0.02 s */
    assert_int_equal(run_work("{\"variant\":\"a\",\"size\":300,\"tile\":[1,2],\"reps\":1,\"warmup\":0}",
                              &s, &calls, &ctx), 0);
    assert_int_equal(calls, 2);
    /* two sizes: each under the limit, the sum over it */
    assert_int_equal(run_work("{\"variant\":\"a\",\"size\":[300,301],\"tile\":1,\"reps\":1,\"warmup\":0}",
                              &s, &calls, &ctx), -1);
    assert_int_equal(calls, 0);
    assert_non_null(strstr(ctx.error.evalue, "%fake --size 301: about 0.61 s of host work"));
    assert_non_null(strstr(ctx.error.evalue, "the sweep's 2 points: about 1.2 s in all; the limit is 1.0 s"));
    assert_non_null(strstr(ctx.error.evalue, "use fewer points, a smaller --size"));
}

static void test_host_work_optional_points(void **state)
{
    sweep_sink s;
    int calls;
    magic_ctx ctx;
    /* size 80: "a" costs 0.08 + 0.01 + 0.08 s, "opt" 0.81 s more (the check is shared): both run */
    assert_int_equal(run_work("{\"variant\":[\"a\",\"opt\"],\"size\":80,\"tile\":1,\"reps\":1,\"warmup\":0}",
                              &s, &calls, &ctx), 0);
    assert_int_equal(calls, 2);
    /* size 200: "opt" alone is over the limit: left out, not refused */
    assert_int_equal(run_work("{\"variant\":[\"a\",\"opt\"],\"size\":200,\"tile\":1,\"reps\":1,\"warmup\":0}",
                              &s, &calls, &ctx), 0);
    assert_int_equal(calls, 1);
    /* unless forced */
    assert_int_equal(run_work("{\"variant\":[\"a\",\"opt\"],\"size\":200,\"tile\":1,\"reps\":1,\"warmup\":0,"
                              "\"force\":true}", &s, &calls, &ctx), 0);
    assert_int_equal(calls, 2);
}

static void test_host_work_limit_from_env(void **state)
{
    unsetenv(HOST_WORK_LIMIT_ENV);
    assert_true(host_work_limit_s() == HOST_WORK_DEFAULT_LIMIT_S);
    static const char *const bad[] = { "", "abc", "-1", "0", "1e999", "5s" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv(HOST_WORK_LIMIT_ENV, bad[i], 1);
        assert_true(host_work_limit_s() == HOST_WORK_DEFAULT_LIMIT_S);
    }
    setenv(HOST_WORK_LIMIT_ENV, "2.5", 1);
    assert_true(host_work_limit_s() == 2.5);
    unsetenv(HOST_WORK_LIMIT_ENV);
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
        cmocka_unit_test(test_progress_throttled_in_time),
        cmocka_unit_test(test_progress_stays_small),
        cmocka_unit_test(test_sorted_table),
        cmocka_unit_test(test_chart_choice),
        cmocka_unit_test(test_failed_check_is_an_error),
        cmocka_unit_test(test_point_error_stops),
        cmocka_unit_test(test_too_many_points),
        cmocka_unit_test(test_host_work_limit),
        cmocka_unit_test(test_host_work_sums_a_sweep),
        cmocka_unit_test(test_host_work_optional_points),
        cmocka_unit_test(test_host_work_limit_from_env),
        cmocka_unit_test(test_launch_json),
    };
    return cmocka_run_group_tests_name("sweep", tests, NULL, NULL);
}
