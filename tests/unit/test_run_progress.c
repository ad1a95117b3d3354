/* test_run_progress.c — the line a long command shows while it runs (kernel/exec/run_progress.c):
 * its text (where the run is, the time so far, the time left from the point's runs so far), and the
 * thread that says it: nothing in the first second, then SHOW with the reps the backend counted,
 * quiet while the command waits for the GPU, and END when the command ends. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "cudalab/host.h"
#include "exec/run_progress.h"
#include "render/render.h"

/* The line's text at a moment of a run: run_progress_text's arguments and what it must say. */
static const struct progress_case {
    const char *magic;
    double elapsed_ms;
    size_t point, points;
    long reps, warmup;
    unsigned long done;
    double rep_ms;
    const char *want;
} progress_cases[] = {
    /* before any rep: the time so far */
    { "matmul", 2500, 0, 1, 20, 3, 0, 0, "running %matmul: 2.5 s so far (interrupt to stop)" },
    /* 3 warm-up + 5 timed runs in 8 s: 1 s a run, 15 timed runs left */
    { "matmul", 9000, 0, 1, 20, 3, 5, 8000,
      "running %matmul: rep 5 of 20; 9.0 s so far, about 15 s left (interrupt to stop)" },
    /* point 2 of 3: this point's 15 runs and one more point of 23 */
    { "reduce", 130000, 1, 3, 20, 3, 5, 8000,
      "running %reduce: point 2 of 3, rep 5 of 20; 2 min 10 s so far, about 38 s left (interrupt to stop)" },
    /* every rep done, the last point: the check is what runs, no estimate */
    { "histo", 3000, 0, 1, 4, 0, 4, 2000, "running %histo: rep 4 of 4; 3.0 s so far (interrupt to stop)" },
    /* a magic without reps */
    { "kernel", 42000, 0, 1, 0, 0, 0, 0, "running %kernel: 42 s so far (interrupt to stop)" },
    /* --reps auto: the rep it is on, and no time left (the count is not known in advance) */
    { "matmul", 9000, 1, 2, RUN_PROGRESS_AUTO, 3, 37, 8000,
      "running %matmul: point 2 of 2, rep 37, until the median settles; 9.0 s so far (interrupt to stop)" },
};

static void text_says_where_the_run_is_and_the_time(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof progress_cases / sizeof progress_cases[0]; i++) {
        const struct progress_case *c = &progress_cases[i];
        char t[256];
        run_progress_text(t, sizeof t, c->magic, c->elapsed_ms, c->point, c->points, c->reps, c->warmup, c->done,
                          c->rep_ms);
        if (strcmp(t, c->want) != 0)
            fail_msg("case %zu: got  %s\nwant %s", i, t, c->want);
    }
}

/* ---- the thread, against a sink that keeps what it says ---- */

static struct said {
    int shows, updates, ends;
    char last[256];
} said;

static void keep(void *impl, json_t *doc, json_t *view, const char *display_id, enum result_mode mode)
{
    (void)impl;
    assert_non_null(display_id);
    assert_null(doc);
    said.shows += mode == RESULT_SHOW;
    said.updates += mode == RESULT_UPDATE;
    said.ends += mode == RESULT_END;
    if (mode == RESULT_END)         /* the line's last state: what ran, never emptied */
        assert_non_null(view);
    const char *text = json_string_value(json_object_get(json_array_get(json_object_get(view, "blocks"), 0), "text"));
    if (text)
        snprintf(said.last, sizeof said.last, "%s", text);
    json_decref(view);
}

static void nothing(void *impl, const char *name, const char *text)
{
    (void)impl, (void)name, (void)text;
}

static const magic_out keeper = { nothing, keep };

static void nap_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static void the_thread_says_the_reps_and_ends_the_line(void **state)
{
    (void)state;
    memset(&said, 0, sizeof said);
    magic_ctx ctx = { .sink.out = &keeper };
    run_progress_begin(&ctx, "matmul");
    assert_non_null(ctx.sink.run_point);
    json_t *point = json_pack("{s:i, s:i}", "reps", 10, "warmup", 0);
    ctx.sink.run_point(&ctx, 0, 1, point);
    nap_ms(600);
    assert_int_equal(said.shows, 0);               /* nothing in the first second */
    /* the three reps well before the first line (at 1 s), which must count them all; the next line
     * (at 2 s) not yet due */
    for (int r = 0; r < 3; r++) {
        cl_rep_done();
        nap_ms(50);
    }
    nap_ms(1100);
    assert_int_equal(said.shows, 1);
    assert_non_null(strstr(said.last, "running %matmul: rep 3 of 10; "));
    assert_non_null(strstr(said.last, "left (interrupt to stop)"));
    run_progress_wait(true);                       /* a wait's own line speaks meanwhile */
    int before = said.updates;
    nap_ms(1300);
    assert_int_equal(said.updates, before);
    run_progress_wait(false);
    run_progress_end();
    assert_int_equal(said.ends, 1);
    assert_non_null(strstr(said.last, "%matmul ran for "));
    assert_null(ctx.sink.run_point);
    json_decref(point);
}

static void a_quick_command_says_nothing(void **state)
{
    (void)state;
    memset(&said, 0, sizeof said);
    magic_ctx ctx = { .sink.out = &keeper };
    run_progress_begin(&ctx, "device");
    nap_ms(100);
    run_progress_end();
    assert_int_equal(said.shows + said.updates + said.ends, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(text_says_where_the_run_is_and_the_time),
        cmocka_unit_test(the_thread_says_the_reps_and_ends_the_line),
        cmocka_unit_test(a_quick_command_says_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
