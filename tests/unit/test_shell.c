/* test_shell.c — every shell handler driven in C against a mock server, the
 * way xeus tests its interpreter with test/xmock_server.cpp.
 *
 * The mock server (shell_mock.h, shared with test_interact_shell.c) records
 * every reply and iopub message and stands in for the device worker; requests
 * go in through shell_dispatch, as the server hands them in.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "magic/magic.h"
#include "proto/msg.h"
#include "render/render.h"
#include "shell/shell.h"

#include "shell_mock.h"

/* ---- kernel_info ---- */

static void kernel_info_on_shell_and_control(void **state)
{
    mock *m = *state;
    send_req(m, "kernel_info_request", PORT_SHELL, json_object());
    const json_t *r = last_reply(m);
    assert_string_equal(m->replies[0].type, "kernel_info_reply");
    assert_int_equal(m->replies[0].channel, PORT_SHELL);
    assert_string_equal(str(r, "status"), "ok");
    assert_string_equal(str(r, "protocol_version"), PROTOCOL_VERSION);
    assert_string_equal(str(r, "implementation"), "cudalab");
    assert_string_equal(str(json_object_get(r, "language_info"), "name"), "cudalab");
    assert_string_equal(pub_types(m, 0), "status:busy status:idle");
    assert_string_equal(m->pubs[0].parent, "req-1");
    send_req(m, "kernel_info_request", PORT_CONTROL, json_object());
    assert_int_equal(m->nreplies, 2);
    assert_int_equal(m->replies[1].channel, PORT_CONTROL);
}

/* ---- execute ---- */

static void execute_local_ok(void **state)
{
    mock *m = *state;
    execute(m, "%echo hello\n%echo world");
    assert_string_equal(pub_types(m, 0), "status:busy execute_input stream status:idle");
    const json_t *in = pub(m, 0, "execute_input");
    assert_string_equal(str(in, "code"), "%echo hello\n%echo world");
    assert_int_equal(num(in, "execution_count"), 1);
    assert_string_equal(streamed(m, 0), "hello\nworld\n");         /* coalesced into one message */
    assert_string_equal(str(pub(m, 0, "stream"), "name"), "stdout");
    assert_string_equal(m->replies[0].type, "execute_reply");
    assert_string_equal(str(last_reply(m), "status"), "ok");
    assert_int_equal(num(last_reply(m), "execution_count"), 1);
    assert_int_equal(m->nruns, 0);                                  /* %echo runs in the kernel */
    assert_false(shell_cell_running(m->s));
    execute(m, "%echo again");
    assert_int_equal(num(last_reply(m), "execution_count"), 2);
}

static void execute_parse_error(void **state)
{
    mock *m = *state;
    execute(m, "%echo fine\n%nosuchmagic --x");
    assert_string_equal(pub_types(m, 0), "status:busy execute_input error status:idle");
    const json_t *err = pub(m, 0, "error"), *r = last_reply(m);
    assert_string_equal(str(r, "status"), "error");
    assert_string_equal(str(r, "ename"), str(err, "ename"));
    assert_string_equal(str(r, "evalue"), str(err, "evalue"));
    assert_contains(str(err, "evalue"), "nosuchmagic");
    assert_contains(json_string_value(json_array_get(json_object_get(err, "traceback"), 1)), "in cell line 2");
    assert_int_equal(num(r, "execution_count"), 1);
    assert_int_equal(m->nruns, 0);                      /* nothing ran: the cell is parsed whole first */
    assert_string_equal(streamed(m, 0), "");
}

static void execute_local_error(void **state)
{
    mock *m = *state;
    execute(m, "%echo before\n%assert 1 == 2\n%echo after");
    const json_t *r = last_reply(m);
    assert_string_equal(str(r, "status"), "error");
    assert_string_equal(streamed(m, 0), "before\n");              /* the error ended the cell */
    assert_string_equal(pub_types(m, 0), "status:busy execute_input stream error status:idle");
    assert_contains(json_string_value(json_array_get(json_object_get(r, "traceback"), 1)),
                    "in cell line 2: %assert 1 == 2");
}

/* Two requests queued behind a failing cell: with stop_on_error (the default)
 * the execute is aborted and the other answered; without, neither is touched. */
static void execute_stop_on_error(void **state)
{
    mock *m = *state;
    m->queued = calloc(2, sizeof *m->queued);
    m->queued[0] = request(m, "execute_request", PORT_SHELL, json_pack("{s:s}", "code", "%echo never"));
    m->queued[1] = request(m, "kernel_info_request", PORT_SHELL, json_object());
    m->nqueued = 2;
    execute(m, "%nosuchmagic");
    assert_int_equal(m->takes, 1);
    assert_int_equal(m->nreplies, 3);
    assert_string_equal(m->replies[0].type, "execute_reply");
    assert_string_equal(str(m->replies[0].content, "status"), "error");
    assert_string_equal(m->replies[1].type, "execute_reply");
    assert_string_equal(m->replies[1].parent, "req-1");
    assert_string_equal(str(m->replies[1].content, "status"), "aborted");
    assert_int_equal(num(m->replies[1].content, "execution_count"), 1);
    assert_string_equal(m->replies[2].type, "kernel_info_reply");
    assert_string_equal(streamed(m, 0), "");                        /* the queued cell never ran */
    assert_string_equal(pub_types(m, 0), "status:busy execute_input error status:idle "
                                         "status:busy status:idle status:busy status:idle");
    int before = m->nreplies;
    send_req(m, "execute_request", PORT_SHELL,
             json_pack("{s:s, s:b}", "code", "%nosuchmagic", "stop_on_error", 0));
    assert_int_equal(m->takes, 1);                                  /* nothing taken */
    assert_int_equal(m->nreplies, before + 1);
}

static void execute_silent(void **state)
{
    mock *m = *state;
    send_req(m, "execute_request", PORT_SHELL, json_pack("{s:s, s:b}", "code", "%echo quiet", "silent", 1));
    assert_string_equal(pub_types(m, 0), "status:busy status:idle");   /* no input, no output */
    assert_string_equal(str(last_reply(m), "status"), "ok");
    assert_int_equal(num(last_reply(m), "execution_count"), 0);
    send_req(m, "history_request", PORT_SHELL, json_pack("{s:s}", "hist_access_type", "tail"));
    assert_int_equal(json_array_size(json_object_get(last_reply(m), "history")), 0);
}

static void execute_without_store_history(void **state)
{
    mock *m = *state;
    execute(m, "%echo one");
    send_req(m, "execute_request", PORT_SHELL,
             json_pack("{s:s, s:b}", "code", "%echo two", "store_history", 0));
    assert_int_equal(num(last_reply(m), "execution_count"), 1);        /* not counted */
    assert_contains(streamed(m, 0), "two\n");                          /* but shown */
    send_req(m, "history_request", PORT_SHELL, json_pack("{s:s}", "hist_access_type", "tail"));
    const json_t *h = json_object_get(last_reply(m), "history");
    assert_int_equal(json_array_size(h), 1);
    assert_string_equal(json_string_value(json_array_get(json_array_get(h, 0), 2)), "%echo one");
}

/* A worker command: the cell waits, the worker's frames become its output,
 * "done" moves on to the next command, the last result is Out[n]. */
static void execute_worker_ok(void **state)
{
    mock *m = *state;
    execute(m, "%echo first\n%device\n%echo last");
    assert_int_equal(m->nruns, 1);
    assert_string_equal(m->runs[0], "device");
    assert_true(shell_cell_running(m->s));
    assert_int_equal(m->nreplies, 0);                                  /* not yet */
    worker_says(m, "{s:s, s:s, s:s}", "op", "stream", "name", "stdout", "text", "from ");
    worker_says(m, "{s:s, s:s, s:s}", "op", "stream", "name", "stdout", "text", "the worker\n");
    assert_true(shell_deadline_ms(m->s) > 0);                          /* a flush is pending */
    worker_done(m);
    assert_false(shell_cell_running(m->s));
    assert_string_equal(str(last_reply(m), "status"), "ok");
    assert_string_equal(streamed(m, 0), "first\nfrom the worker\nlast\n");
    /* stream text piles up across commands until other output or the reply */
    assert_string_equal(pub_types(m, 0), "status:busy execute_input stream status:idle");
}

static void execute_worker_result(void **state)
{
    mock *m = *state;
    execute(m, "%device");
    worker_says(m, "{s:s, s:{s:s}, s:{s:[{s:s, s:s}]}, s:i}", "op", "result", "doc", "magic", "device", "view",
                "blocks", "type", "text", "text", "the answer", "mode", RESULT_PLAIN);
    worker_done(m);
    const json_t *res = pub(m, 0, "execute_result");
    assert_non_null(res);
    assert_int_equal(num(res, "execution_count"), 1);
    const json_t *data = json_object_get(res, "data");
    assert_contains(str(data, "text/plain"), "the answer");
    assert_string_equal(str(json_object_get(data, RESULT_MIME), "magic"), "device");
    send_req(m, "history_request", PORT_SHELL, json_pack("{s:s, s:b}", "hist_access_type", "tail", "output", 1));
    const json_t *entry = json_array_get(json_object_get(last_reply(m), "history"), 0);
    assert_contains(json_string_value(json_array_get(json_array_get(entry, 2), 1)), "the answer");
}

static void execute_worker_cannot_start(void **state)
{
    mock *m = *state;
    m->run_rc = -1;
    execute(m, "%device");
    assert_false(shell_cell_running(m->s));
    assert_string_equal(str(last_reply(m), "status"), "error");
    assert_string_equal(str(last_reply(m), "ename"), "WorkerError");
    assert_string_equal(str(pub(m, 0, "error"), "ename"), "WorkerError");
}

static void execute_worker_dies(void **state)
{
    mock *m = *state;
    execute(m, "%device\n%echo never");
    worker_says(m, "{s:s, s:s, s:s}", "op", "stream", "name", "stdout", "text", "partial\n");
    shell_on_worker_exit(m->s, "was killed by signal 11 (Segmentation fault)");
    assert_false(shell_cell_running(m->s));
    const json_t *r = last_reply(m);
    assert_string_equal(str(r, "ename"), "WorkerDied");
    assert_contains(str(r, "evalue"), "%device was killed by signal 11");
    assert_string_equal(streamed(m, 0), "partial\n");                 /* what it said before is kept */
    assert_string_equal(pub_types(m, 0), "status:busy execute_input stream error status:idle");
    int replies = m->nreplies;
    shell_on_worker_exit(m->s, "exited with 1");                       /* no cell: nothing to answer */
    assert_int_equal(m->nreplies, replies);
}

static void execute_worker_reports_error(void **state)
{
    mock *m = *state;
    execute(m, "%echo a\n%device\n%echo b");
    worker_says(m, "{s:s, s:s, s:s, s:[s]}", "op", "error", "ename", "CudaError", "evalue", "an illegal address",
                "traceback", "  at kernel foo");
    worker_done(m);
    const json_t *r = last_reply(m);
    assert_string_equal(str(r, "status"), "error");
    assert_string_equal(str(r, "ename"), "CudaError");
    assert_string_equal(str(r, "evalue"), "an illegal address");
    const json_t *tb = json_object_get(r, "traceback");
    assert_string_equal(json_string_value(json_array_get(tb, 0)), "CudaError: an illegal address");
    assert_string_equal(json_string_value(json_array_get(tb, 1)), "  in cell line 2: %device");
    assert_string_equal(json_string_value(json_array_get(tb, 2)), "  at kernel foo");
    assert_string_equal(streamed(m, 0), "a\n");                       /* %echo b did not run */
}

/* A worker whose CUDA context is poisoned says so with "leaving": it is
 * replaced before the next command could reach it. */
static void execute_worker_leaving(void **state)
{
    mock *m = *state;
    execute(m, "%device");
    worker_says(m, "{s:s, s:b}", "op", "done", "leaving", 1);
    assert_int_equal(m->kills, 1);
    assert_int_equal(m->starts, 1);
    assert_string_equal(str(last_reply(m), "status"), "ok");
}

static void interrupt_while_running(void **state)
{
    mock *m = *state;
    execute(m, "%device\n%echo never");
    m->now += 2500;
    send_req(m, "interrupt_request", PORT_CONTROL, json_object());
    assert_int_equal(m->interrupts, 1);
    assert_string_equal(m->replies[0].type, "interrupt_reply");
    assert_int_equal(m->replies[0].channel, PORT_CONTROL);
    assert_string_equal(str(m->replies[0].content, "status"), "ok");
    assert_true(shell_cell_running(m->s));                             /* the command stops itself */
    assert_true(shell_deadline_ms(m->s) == m->now + 500);             /* or is killed after the grace */
    worker_done(m);
    const json_t *r = last_reply(m);
    assert_string_equal(str(r, "ename"), "KeyboardInterrupt");
    assert_string_equal(str(r, "evalue"),
                        "interrupted by interrupt_request: stopped %device after 2.5 s (the command stopped when asked)");
    assert_string_equal(streamed(m, 0), "");
    assert_int_equal(m->kills, 0);
}

static void interrupt_killed_after_grace(void **state)
{
    mock *m = *state;
    execute(m, "%device");
    shell_interrupt(m->s, "interrupted by SIGINT");
    m->now += 499;
    shell_tick(m->s);
    assert_true(shell_cell_running(m->s));
    m->now += 1;
    shell_tick(m->s);
    assert_false(shell_cell_running(m->s));
    assert_int_equal(m->kills, 1);
    assert_int_equal(m->starts, 1);                                    /* a fresh worker for the next cell */
    assert_string_equal(str(last_reply(m), "ename"), "KeyboardInterrupt");
    assert_contains(str(last_reply(m), "evalue"), "interrupted by SIGINT: stopped %device after 0.5 s");
    assert_contains(str(last_reply(m), "evalue"), "did not stop within 0.5 s and was killed");
}

static void interrupt_twice_kills_at_once(void **state)
{
    mock *m = *state;
    execute(m, "%device");
    shell_interrupt(m->s, "interrupted by SIGINT");
    shell_interrupt(m->s, "interrupted by SIGINT");
    assert_int_equal(m->kills, 1);
    assert_false(shell_cell_running(m->s));
}

static void interrupt_while_idle(void **state)
{
    mock *m = *state;
    send_req(m, "interrupt_request", PORT_CONTROL, json_object());
    assert_int_equal(m->interrupts, 0);
    assert_string_equal(str(last_reply(m), "status"), "ok");
    assert_string_equal(pub_types(m, 0), "status:busy status:idle");
}

/* A fresh session with other limits, executing cell. */
static void restart_executing(mock *m, shell_limits lim, const char *cell)
{
    shell_session_free(m->s);
    m->s = shell_session_new(&m->host, &lim);
    assert_non_null(m->s);
    execute(m, cell);
}

static void execute_timeout(void **state)
{
    mock *m = *state;
    shell_limits lim = default_limits;
    lim.cell_timeout_ms = 3000;
    restart_executing(m, lim, "%device");
    assert_true(shell_deadline_ms(m->s) == m->now + 3000);
    m->now += 2999;
    shell_tick(m->s);
    assert_int_equal(m->interrupts, 0);
    m->now += 1;
    shell_tick(m->s);
    assert_int_equal(m->interrupts, 1);
    worker_done(m);
    const json_t *r = last_reply(m);
    assert_string_equal(str(r, "ename"), "TimeoutError");
    assert_contains(str(r, "evalue"), "the cell ran longer than its limit of 3 s (CUDALAB_CELL_TIMEOUT)");
}

/* Stream text is held at most STREAM_FLUSH_MS, then sent by the tick. */
static void stream_flushed_by_tick(void **state)
{
    mock *m = *state;
    execute(m, "%device");
    worker_says(m, "{s:s, s:s, s:s}", "op", "stream", "name", "stdout", "text", "progress\n");
    assert_string_equal(streamed(m, 0), "");
    assert_true(shell_deadline_ms(m->s) == m->now + 50);
    m->now += 50;
    shell_tick(m->s);
    assert_string_equal(streamed(m, 0), "progress\n");
    assert_true(shell_deadline_ms(m->s) == 0);
    worker_done(m);
}

static void stream_capped(void **state)
{
    mock *m = *state;
    shell_limits lim = default_limits;
    lim.max_output = 8;
    restart_executing(m, lim, "%echo 0123456789");
    assert_contains(streamed(m, 0), "01234567\n[cudalab: output truncated after 8 bytes");
    assert_string_equal(str(last_reply(m), "status"), "ok");
}

/* ---- complete ---- */

static const json_t *complete(mock *m, const char *code, json_int_t cursor)
{
    send_req(m, "complete_request", PORT_SHELL, json_pack("{s:s, s:I}", "code", code, "cursor_pos", cursor));
    assert_string_equal(m->replies[m->nreplies - 1].type, "complete_reply");
    assert_string_equal(str(last_reply(m), "status"), "ok");
    return last_reply(m);
}

static bool has_match(const json_t *reply, const char *word)
{
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(reply, "matches"), i, v)
        if (strcmp(json_string_value(v), word) == 0)
            return true;
    return false;
}

static void complete_magic_name(void **state)
{
    mock *m = *state;
    const json_t *r = complete(m, "%ec", 3);
    assert_true(has_match(r, "%echo"));
    assert_false(has_match(r, "%device"));
    assert_int_equal(num(r, "cursor_start"), 0);
    assert_int_equal(num(r, "cursor_end"), 3);
    assert_string_equal(pub_types(m, 0), "status:busy status:idle");
}

static void complete_flag(void **state)
{
    mock *m = *state;
    const magic_spec *echo = magic_find("echo");
    char code[64];
    snprintf(code, sizeof code, "%%echo --%.2s", echo->flags[0].name);
    char want[64];
    snprintf(want, sizeof want, "--%s", echo->flags[0].name);
    const json_t *r = complete(m, code, (json_int_t)strlen(code));
    assert_true(has_match(r, want));
    assert_int_equal(num(r, "cursor_start"), 6);
}

static void complete_negative_cursor(void **state)
{
    mock *m = *state;
    const json_t *r = complete(m, "%ec", -5);                          /* taken as 0 */
    assert_int_equal(num(r, "cursor_start"), 0);
    assert_int_equal(num(r, "cursor_end"), 0);
    assert_true(has_match(r, "%echo"));
    assert_true(has_match(r, "%device"));
}

static void complete_cursor_past_end(void **state)
{
    mock *m = *state;
    const json_t *r = complete(m, "%ec", 1000);                        /* taken as the end */
    assert_int_equal(num(r, "cursor_end"), 3);
    assert_true(has_match(r, "%echo"));
}

/* Cursor positions are code points, and so are the reply's: in "é\n%de"
 * position 4 is the end (byte 4 is inside nothing, but byte 1 is inside é);
 * in "%echo ééé" position 7 lies between two é, byte 7 inside the first. */
static void complete_after_multibyte(void **state)
{
    mock *m = *state;
    const json_t *r = complete(m, "é\n%de", 4);
    assert_int_equal(num(r, "cursor_start"), 2);
    assert_int_equal(num(r, "cursor_end"), 4);
    assert_true(has_match(r, "%device"));
    r = complete(m, "%echo ééé", 7);                                  /* between two é */
    assert_int_equal(num(r, "cursor_end"), 7);
    assert_true(json_array_size(json_object_get(r, "matches")) == 0);
}

static void complete_empty_code(void **state)
{
    mock *m = *state;
    const json_t *r = complete(m, "", 0);
    size_t i;
    const json_t *v;
    assert_true(json_array_size(json_object_get(r, "matches")) > 3);
    json_array_foreach(json_object_get(r, "matches"), i, v)
        assert_true(json_string_value(v)[0] == '%');
    assert_int_equal(num(r, "cursor_start"), 0);
    assert_int_equal(num(r, "cursor_end"), 0);
}

/* ---- inspect ---- */

static const json_t *inspect(mock *m, const char *code, json_int_t cursor)
{
    send_req(m, "inspect_request", PORT_SHELL,
             json_pack("{s:s, s:I, s:i}", "code", code, "cursor_pos", cursor, "detail_level", 0));
    assert_string_equal(m->replies[m->nreplies - 1].type, "inspect_reply");
    assert_string_equal(str(last_reply(m), "status"), "ok");
    return last_reply(m);
}

static void inspect_cursor_cases(void **state)
{
    mock *m = *state;
    const char *code = "%echo hello\n%device ééé";
    const json_int_t cursors[] = { 3, -7, 1000, 22 /* between two é */ };
    const char *about[] = { "echo", "echo", "device", "device" };
    for (size_t i = 0; i < sizeof cursors / sizeof cursors[0]; i++) {
        const json_t *r = inspect(m, code, cursors[i]);
        if (!json_is_true(json_object_get(r, "found")))
            fail_msg("cursor %lld: not found", (long long)cursors[i]);
        assert_contains(str(json_object_get(r, "data"), "text/plain"), magic_find(about[i])->summary);
    }
}

static void inspect_nothing_to_show(void **state)
{
    mock *m = *state;
    const char *codes[] = { "", "plain words", "%nosuchmagic" };
    for (size_t i = 0; i < 3; i++) {
        const json_t *r = inspect(m, codes[i], 0);
        assert_false(json_is_true(json_object_get(r, "found")));
        assert_int_equal(json_object_size(json_object_get(r, "data")), 0);
    }
}

/* ---- is_complete ---- */

static void is_complete_states(void **state)
{
    mock *m = *state;
    const struct { const char *code, *status; } cases[] = {
        { "%echo hi", "complete" }, { "%echo \"open quote", "incomplete" }, { "%%echo", "incomplete" },
        { "%nosuchmagic", "invalid" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        send_req(m, "is_complete_request", PORT_SHELL, json_pack("{s:s}", "code", cases[i].code));
        const json_t *r = last_reply(m);
        assert_string_equal(m->replies[m->nreplies - 1].type, "is_complete_reply");
        assert_string_equal(str(r, "status"), cases[i].status);
        assert_int_equal(json_object_get(r, "indent") != NULL, strcmp(cases[i].status, "incomplete") == 0);
    }
}

/* ---- history ---- */

static const json_t *history(mock *m, json_t *content)
{
    send_req(m, "history_request", PORT_SHELL, content);
    assert_string_equal(m->replies[m->nreplies - 1].type, "history_reply");
    return json_object_get(last_reply(m), "history");
}

/* "line:input" of each entry, joined by '|'. */
static const char *entries(const json_t *h)
{
    static char buf[1024];
    buf[0] = '\0';
    size_t i;
    const json_t *e;
    json_array_foreach(h, i, e) {
        size_t len = strlen(buf);
        assert_int_equal(json_integer_value(json_array_get(e, 0)), 1);      /* the session */
        snprintf(buf + len, sizeof buf - len, "%s%lld:%s", len ? "|" : "",
                 (long long)json_integer_value(json_array_get(e, 1)), json_string_value(json_array_get(e, 2)));
    }
    return buf;
}

static void history_access_types(void **state)
{
    mock *m = *state;
    execute(m, "%echo a");
    execute(m, "%echo b");
    execute(m, "%echo a");
    execute(m, "%echo c");
    assert_string_equal(entries(history(m, json_pack("{s:s, s:i}", "hist_access_type", "tail", "n", 2))),
                        "3:%echo a|4:%echo c");
    assert_string_equal(entries(history(m, json_pack("{s:s}", "hist_access_type", "tail"))),
                        "1:%echo a|2:%echo b|3:%echo a|4:%echo c");
    assert_string_equal(entries(history(m, json_pack("{s:s, s:i, s:i, s:i}", "hist_access_type", "range",
                                                     "session", 0, "start", 2, "stop", 4))),
                        "2:%echo b|3:%echo a");
    assert_string_equal(entries(history(m, json_pack("{s:s, s:i, s:i}", "hist_access_type", "range",
                                                     "session", 7, "start", 1))), "");
    assert_string_equal(entries(history(m, json_pack("{s:s, s:s}", "hist_access_type", "search",
                                                     "pattern", "%echo [ab]"))),
                        "1:%echo a|2:%echo b|3:%echo a");
    assert_string_equal(entries(history(m, json_pack("{s:s, s:s, s:b}", "hist_access_type", "search",
                                                     "pattern", "%echo [ab]", "unique", 1))),
                        "2:%echo b|3:%echo a");
    assert_string_equal(entries(history(m, json_pack("{s:s, s:s, s:i}", "hist_access_type", "search",
                                                     "pattern", "*", "n", 1))), "4:%echo c");
}

/* ---- shutdown, and what dispatch refuses ---- */

static void shutdown_request(void **state)
{
    mock *m = *state;
    send_req(m, "shutdown_request", PORT_CONTROL, json_pack("{s:b}", "restart", 1));
    assert_string_equal(m->replies[0].type, "shutdown_reply");
    assert_int_equal(m->replies[0].channel, PORT_CONTROL);
    assert_string_equal(str(last_reply(m), "status"), "ok");
    assert_true(json_is_true(json_object_get(last_reply(m), "restart")));
    assert_int_equal(m->kills, 1);                                     /* before the reply */
    assert_int_equal(m->quits, 1);
}

/* A shutdown queued behind a failed cell ends the session: what follows it
 * is not answered. */
static void shutdown_queued_behind_failed_cell(void **state)
{
    mock *m = *state;
    m->queued = calloc(2, sizeof *m->queued);
    m->queued[0] = request(m, "shutdown_request", PORT_SHELL, json_object());
    m->queued[1] = request(m, "execute_request", PORT_SHELL, json_pack("{s:s}", "code", "%echo x"));
    m->nqueued = 2;
    execute(m, "%nosuchmagic");
    assert_int_equal(m->nreplies, 2);
    assert_string_equal(m->replies[1].type, "shutdown_reply");
    assert_int_equal(m->quits, 1);
}

static void malformed_requests(void **state)
{
    mock *m = *state;
    assert_int_equal(send_req(m, "execute_request", PORT_SHELL, json_pack("{s:i}", "code", 5)), 0);
    const json_t *r = last_reply(m);
    assert_string_equal(str(r, "status"), "error");
    assert_string_equal(str(r, "ename"), "ProtocolError");
    assert_contains(str(r, "evalue"), "\"code\" must be a string");
    assert_string_equal(pub_types(m, 0), "status:busy error status:idle");
    assert_int_equal(send_req(m, "comm_msg", PORT_SHELL, json_pack("{s:i}", "comm_id", 5)), -1);
    int replies = m->nreplies, pubs = m->npubs;
    assert_int_equal(send_req(m, "no_such_request", PORT_SHELL, json_object()), 0);
    assert_int_equal(send_req(m, "execute_request", PORT_CONTROL, json_pack("{s:s}", "code", "%echo")), 0);
    assert_int_equal(m->nreplies, replies);                            /* ignored */
    assert_int_equal(m->npubs, pubs);
}

static void comm_open_is_closed(void **state)
{
    mock *m = *state;
    send_req(m, "comm_open", PORT_SHELL, json_pack("{s:s, s:s}", "comm_id", "c1", "target_name", "t"));
    assert_string_equal(pub_types(m, 0), "status:busy comm_close status:idle");
    assert_string_equal(str(pub(m, 0, "comm_close"), "comm_id"), "c1");
    assert_int_equal(m->nreplies, 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(kernel_info_on_shell_and_control),
        T(execute_local_ok),
        T(execute_parse_error),
        T(execute_local_error),
        T(execute_stop_on_error),
        T(execute_silent),
        T(execute_without_store_history),
        T(execute_worker_ok),
        T(execute_worker_result),
        T(execute_worker_cannot_start),
        T(execute_worker_dies),
        T(execute_worker_reports_error),
        T(execute_worker_leaving),
        T(interrupt_while_running),
        T(interrupt_killed_after_grace),
        T(interrupt_twice_kills_at_once),
        T(interrupt_while_idle),
        T(execute_timeout),
        T(stream_flushed_by_tick),
        T(stream_capped),
        T(complete_magic_name),
        T(complete_flag),
        T(complete_negative_cursor),
        T(complete_cursor_past_end),
        T(complete_after_multibyte),
        T(complete_empty_code),
        T(inspect_cursor_cases),
        T(inspect_nothing_to_show),
        T(is_complete_states),
        T(history_access_types),
        T(shutdown_request),
        T(shutdown_queued_behind_failed_cell),
        T(malformed_requests),
        T(comm_open_is_closed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
