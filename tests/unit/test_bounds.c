/* test_bounds.c — unit tests for what keeps the kernel process bounded and
 * unblocked: the results store's limits and eviction record, the echo bound
 * of a result's parameters, and the worker's non-blocking command writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "magic/magic.h"
#include "grade/results.h"
#include "exec/frame.h"
#include "exec/worker.h"

static void test_results_keep_everything_within_bounds(void **state)
{
    result_store *rs = results_new();
    for (int i = 0; i < 500; i++) {
        json_t *d = json_pack("{s:s, s:i}", "magic", "matmul", "i", i);
        results_record(rs, d, i + 1);
        json_decref(d);
    }
    /* the ring of 64 is gone: an early answer is still there */
    assert_int_equal(results_count(rs), 500);
    int cell;
    assert_int_equal(json_integer_value(json_object_get(results_get(rs, 499, &cell), "i")), 0);
    assert_int_equal(cell, 1);
    assert_int_equal(results_evicted(rs, NULL), 0);
    results_free(rs);
}

static void test_results_evict_the_oldest_past_the_byte_bound_and_say_so(void **state)
{
    result_store *rs = results_new();
    size_t big = 4u << 20;
    char *text = malloc(big + 1);
    memset(text, 'x', big);
    text[big] = '\0';
    size_t n = RESULTS_MAX_BYTES / big + 4;
    for (size_t i = 0; i < n; i++) {
        json_t *d = json_pack("{s:s, s:s, s:i}", "magic", "histo", "blob", text, "i", (int)i);
        results_record(rs, d, (int)i + 1);
        json_decref(d);
    }
    free(text);
    int last;
    size_t evicted = results_evicted(rs, &last);
    assert_true(evicted >= 4);
    assert_int_equal(results_count(rs) + evicted, n);
    assert_int_equal(last, (int)evicted);      /* the newest evicted is cell `evicted` */
    int cell;
    results_get(rs, 0, &cell);
    assert_int_equal(cell, (int)n);
    results_free(rs);
}

/* a sink that keeps the last document it was given */
static json_t *sunk;
static void sink_stream(void *impl, const char *name, const char *text) {}
static void sink_result(void *impl, json_t *doc, json_t *view, const char *id, enum result_mode mode)
{
    json_decref(sunk);
    sunk = doc;
    json_decref(view);
}
static const magic_out sink = { sink_stream, sink_result };

static void test_result_echoes_a_bounded_part_of_a_long_parameter(void **state)
{
    magic_ctx ctx = { .sink.out = &sink };
    size_t big = 100000;
    char *text = malloc(big + 1);
    for (size_t i = 0; i < big; i++)
        text[i] = "\xc3\xa9"[i % 2];           /* é é é ...: a cut must not split one */
    text[big] = '\0';
    magic_result(&ctx, json_pack("{s:s, s:{s:s, s:s, s:i}}", "magic", "histo", "params", "text", text,
                                 "variant", "fast", "size", 7), NULL);
    free(text);
    const char *got = json_string_value(json_object_get(json_object_get(sunk, "params"), "text"));
    assert_non_null(got);
    assert_true(strlen(got) < RESULT_ECHO_MAX + 128);
    assert_non_null(strstr(got, "[... 100000 bytes in all, sha256 "));
    assert_true(json_stringn(got, strlen(got)) != NULL);   /* still valid UTF-8 */
    assert_string_equal(json_string_value(json_object_get(json_object_get(sunk, "params"), "variant")), "fast");
    json_decref(sunk);
    sunk = NULL;
}

static void test_worker_writes_never_block(void **state)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    worker w;
    worker_init(&w);
    w.fd = sv[0];
    /* a command far larger than the socket's buffer, as a 400 KB cell makes */
    size_t big = 4u << 20;
    char *text = malloc(big + 1);
    memset(text, 'a', big);
    text[big] = '\0';
    json_t *msg = json_pack("{s:s, s:s}", "op", "run", "body", text);
    free(text);
    w.out = frame_encode(msg, &w.out_len);
    assert_non_null(w.out);
    assert_int_equal(worker_flush(&w), 1);     /* the reader is stopped: would block */
    assert_true(worker_writing(&w));
    /* the reader reads a while: each flush takes what fits, then the whole frame arrives */
    frame_reader r = { 0 };
    json_t *got = NULL;
    int rc = 0;
    while (rc == 0) {
        int fl = worker_flush(&w);
        assert_true(fl == 0 || fl == 1);
        assert_true(frame_fill(&r, sv[1]) > 0);
        rc = frame_next(&r, &got);
    }
    assert_int_equal(rc, 1);
    assert_true(json_equal(got, msg));
    assert_false(worker_writing(&w));
    json_decref(got);
    json_decref(msg);
    frame_reader_reset(&r);
    /* the worker gone: a write fails instead of blocking (the kernel ignores SIGPIPE) */
    signal(SIGPIPE, SIG_IGN);
    close(sv[1]);
    json_t *small = json_pack("{s:s}", "op", "run");
    w.out = frame_encode(small, &w.out_len);
    w.out_off = 0;
    assert_int_equal(worker_flush(&w), -1);
    json_decref(small);
    free(w.out);
    close(sv[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_results_keep_everything_within_bounds),
        cmocka_unit_test(test_results_evict_the_oldest_past_the_byte_bound_and_say_so),
        cmocka_unit_test(test_result_echoes_a_bounded_part_of_a_long_parameter),
        cmocka_unit_test(test_worker_writes_never_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
