/* test_interact_shell.c — %interact in the shell, against the mock server
 * (shell_mock.h): the first run opens the widget's models and shows the box,
 * comm_info lists them, a control's update re-runs the command as a cell of
 * its own parented to the comm_msg, changes queued during a run are coalesced
 * (the latest runs, the others get their idle, any other request is held and
 * served after), bad updates are answered with the current value, comm_close
 * from the frontend and shutdown close the widget. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "lang/interact.h"
#include "shell_mock.h"

#define CELL "%interact %matmul --size 64 --variant tiled --tile 4,8,16"

/* The comm id of the first comm_open since from whose model is model_name. */
static const char *model_id(const mock *m, const char *model_name)
{
    for (int i = 0; i < m->npubs; i++) {
        const json_t *c = m->pubs[i].content;
        const json_t *st = json_object_get(json_object_get(c, "data"), "state");
        if (strcmp(m->pubs[i].type, "comm_open") == 0 && strcmp(str(st, "_model_name"), model_name) == 0)
            return str(c, "comm_id");
    }
    fail_msg("no %s opened", model_name);
    return NULL;
}

static void worker_result(mock *m, const char *text)
{
    worker_says(m, "{s:s, s:{s:s}, s:{s:[{s:s, s:s}]}, s:i}", "op", "result", "doc", "magic", "matmul", "view",
                "blocks", "type", "text", "text", text, "mode", RESULT_PLAIN);
    worker_done(m);
}

static shell_request update_req(mock *m, const char *comm_id, json_t *index)
{
    return request(m, "comm_msg", PORT_SHELL, json_pack("{s:s, s:{s:s, s:{s:o}}}", "comm_id", comm_id, "data",
                                                        "method", "update", "state", "index", index));
}

static void open_widget(mock *m)
{
    int runs = m->nruns;
    execute(m, CELL);
    assert_int_equal(m->nruns, runs + 1);
    assert_contains(m->run_params[runs % 16], "\"tile\":4");
    worker_result(m, "first run");
    assert_string_equal(str(last_reply(m), "status"), "ok");
}

/* The text of the last Output update since from ("" when none). */
static const char *output_text(const mock *m, int from)
{
    const char *out = model_id(m, "OutputModel");
    const char *text = "";
    for (int i = from; i < m->npubs; i++) {
        const json_t *c = m->pubs[i].content;
        const json_t *data = json_object_get(c, "data");
        if (strcmp(m->pubs[i].type, "comm_msg") == 0 && strcmp(str(c, "comm_id"), out) == 0
            && strcmp(str(data, "method"), "update") == 0) {
            const json_t *o = json_array_get(json_object_get(json_object_get(data, "state"), "outputs"), 0);
            text = str(json_object_get(o, "data"), "text/plain");
            text = text ? text : str(o, "ename");
        }
    }
    return text ? text : "";
}

static void first_run_opens_and_shows(void **state)
{
    mock *m = *state;
    open_widget(m);
    assert_string_equal(pub_types(m, 0), "status:busy execute_input comm_open comm_open comm_open comm_open "
                                         "comm_open display_data status:idle");
    const json_t *shown = json_object_get(pub(m, 0, "display_data"), "data");
    const json_t *view = json_object_get(shown, "application/vnd.jupyter.widget-view+json");
    assert_string_equal(str(view, "model_id"), model_id(m, "VBoxModel"));
    assert_int_equal(num(view, "version_major"), 2);
    assert_contains(str(shown, "text/plain"), "first run");
    const json_t *out = json_object_get(json_object_get(pub(m, 0, "comm_open"), "data"), "state");
    assert_string_equal(str(out, "_model_name"), "LayoutModel");
    send_req(m, "comm_info_request", PORT_SHELL, json_pack("{s:s}", "target_name", "jupyter.widget"));
    assert_int_equal(json_object_size(json_object_get(last_reply(m), "comms")), 5);
    send_req(m, "comm_info_request", PORT_SHELL, json_pack("{s:s}", "target_name", "other"));
    assert_int_equal(json_object_size(json_object_get(last_reply(m), "comms")), 0);
}

static void an_update_reruns_in_place(void **state)
{
    mock *m = *state;
    open_widget(m);
    int from = m->npubs;
    shell_request r = update_req(m, model_id(m, "SelectionSliderModel"), json_integer(2));
    char id[64];
    snprintf(id, sizeof id, "%s", r.msg.msg_id);
    shell_dispatch(m->s, &r);
    assert_int_equal(m->nruns, 2);
    assert_contains(m->run_params[1], "\"tile\":16");
    assert_true(shell_cell_running(m->s));
    worker_result(m, "tile 16");
    assert_false(shell_cell_running(m->s));
    assert_string_equal(pub_types(m, from), "status:busy comm_msg comm_msg status:idle");
    for (int i = from; i < m->npubs; i++)
        assert_string_equal(m->pubs[i].parent, id);
    assert_contains(output_text(m, from), "tile 16");
    assert_int_equal(m->takes, 1);                                  /* what queued meanwhile was read */
}

/* The widget shown and its slider moved to index 2: that change's run is in flight. The slider's model. */
static const char *slider_moved(mock *m)
{
    open_widget(m);
    const char *slider = model_id(m, "SelectionSliderModel");
    shell_request r = update_req(m, slider, json_integer(2));
    shell_dispatch(m->s, &r);
    return slider;
}

static void changes_during_a_run_are_coalesced(void **state)
{
    mock *m = *state;
    const char *slider = slider_moved(m);
    /* while it runs: two more changes and a kernel_info_request queue up */
    m->queued = calloc(3, sizeof *m->queued);
    m->queued[0] = update_req(m, slider, json_integer(0));
    m->queued[1] = update_req(m, slider, json_integer(1));
    m->queued[2] = request(m, "kernel_info_request", PORT_SHELL, json_object());
    char last[64], first[64];
    snprintf(first, sizeof first, "%s", m->queued[0].msg.msg_id);
    snprintf(last, sizeof last, "%s", m->queued[1].msg.msg_id);
    m->nqueued = 3;
    int replies = m->nreplies;
    worker_result(m, "tile 16");
    /* the latest change runs; the kernel_info_request waits for it */
    assert_int_equal(m->nruns, 3);
    assert_contains(m->run_params[2], "\"tile\":8");
    assert_true(shell_cell_running(m->s));
    assert_int_equal(m->nreplies, replies);
    int idles_first = 0;
    for (int i = 0; i < m->npubs; i++)
        idles_first += strcmp(m->pubs[i].parent, first) == 0 && strcmp(m->pubs[i].type, "status") == 0;
    assert_int_equal(idles_first, 2);                               /* busy, then idle: superseded */
    int from = m->npubs;
    worker_result(m, "tile 8");
    assert_contains(output_text(m, from), "tile 8");
    assert_string_equal(m->pubs[from + 1].parent, last);
    assert_false(shell_cell_running(m->s));
    assert_int_equal(m->nreplies, replies + 1);
    assert_string_equal(m->replies[m->nreplies - 1].type, "kernel_info_reply");
    assert_int_equal(m->nruns, 3);
}

static void bad_updates_get_the_current_value(void **state)
{
    mock *m = *state;
    open_widget(m);
    const char *slider = model_id(m, "SelectionSliderModel");
    json_t *bad[] = { json_string("x"), json_integer(3), json_integer(-1), json_real(1.0), json_null() };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int from = m->npubs;
        shell_request r = update_req(m, slider, bad[i]);
        shell_dispatch(m->s, &r);
        assert_string_equal(pub_types(m, from), "status:busy comm_msg status:idle");
        const json_t *data = json_object_get(m->pubs[from + 1].content, "data");
        assert_int_equal(num(json_object_get(data, "state"), "index"), 0);
    }
    assert_int_equal(m->nruns, 1);
    int from = m->npubs;
    send_req(m, "comm_msg", PORT_SHELL, json_pack("{s:s, s:{s:s}}", "comm_id", "nope", "data", "method", "update"));
    send_req(m, "comm_msg", PORT_SHELL, json_pack("{s:s, s:i}", "comm_id", slider, "data", 1));
    send_req(m, "comm_msg", PORT_SHELL, json_pack("{s:s, s:{s:s, s:i}}", "comm_id", slider, "data", "method",
                                                  "update", "state", 1));
    assert_string_equal(pub_types(m, from), "status:busy status:idle status:busy status:idle status:busy status:idle");
    assert_int_equal(m->nruns, 1);
}

static void request_state_sends_everything(void **state)
{
    mock *m = *state;
    open_widget(m);
    const char *slider = model_id(m, "SelectionSliderModel");
    int from = m->npubs;
    send_req(m, "comm_msg", PORT_SHELL, json_pack("{s:s, s:{s:s}}", "comm_id", slider, "data", "method",
                                                  "request_state"));
    assert_string_equal(pub_types(m, from), "status:busy comm_msg status:idle");
    const json_t *data = json_object_get(m->pubs[from + 1].content, "data");
    assert_string_equal(str(data, "method"), "update");
    assert_string_equal(str(json_object_get(data, "state"), "_model_name"), "SelectionSliderModel");
    assert_int_equal(json_array_size(json_object_get(data, "buffer_paths")), 0);
}

static void closing_and_shutdown(void **state)
{
    mock *m = *state;
    open_widget(m);
    int from = m->npubs;
    send_req(m, "comm_close", PORT_SHELL, json_pack("{s:s, s:{}}", "comm_id", model_id(m, "OutputModel"), "data"));
    assert_string_equal(pub_types(m, from), "status:busy comm_close comm_close comm_close comm_close comm_close "
                                            "status:idle");
    send_req(m, "comm_info_request", PORT_SHELL, json_object());
    assert_int_equal(json_object_size(json_object_get(last_reply(m), "comms")), 0);
    execute(m, CELL);
    worker_result(m, "again");
    from = m->npubs;
    send_req(m, "shutdown_request", PORT_CONTROL, json_pack("{s:b}", "restart", 0));
    assert_string_equal(pub_types(m, from), "status:busy comm_close comm_close comm_close comm_close comm_close "
                                            "status:idle");
}

static void the_oldest_closes_past_the_limit(void **state)
{
    mock *m = *state;
    for (int i = 0; i < INTERACT_MAX_LIVE; i++)
        open_widget(m);
    int from = m->npubs;
    open_widget(m);
    assert_contains(streamed(m, from), "closed the %interact widget of cell [1]");
    send_req(m, "comm_info_request", PORT_SHELL, json_object());
    assert_int_equal(json_object_size(json_object_get(last_reply(m), "comms")), 5 * INTERACT_MAX_LIVE);
}

static void a_failed_first_run_fails_the_cell_and_shows_in_the_widget(void **state)
{
    mock *m = *state;
    execute(m, CELL);
    worker_says(m, "{s:s, s:s, s:s}", "op", "error", "ename", "CheckError", "evalue", "wrong");
    worker_done(m);
    assert_string_equal(str(last_reply(m), "ename"), "CheckError");
    assert_non_null(pub(m, 0, "error"));
    int opened = 0;
    for (int i = 0; i < m->npubs; i++)
        opened += strcmp(m->pubs[i].type, "comm_open") == 0;
    assert_int_equal(opened, 5);
}

/* The status of the last reply of type. */
static const char *last_status(const mock *m, const char *type)
{
    for (int i = m->nreplies - 1; i >= 0; i--)
        if (strcmp(m->replies[i].type, type) == 0)
            return str(m->replies[i].content, "status");
    return "(none)";
}

/* "Run all" while a re-run goes on: the requests are held; the first cell fails, and the next one,
 * queued before its reply, is aborted (stop_on_error), whichever queue it waited in. */
static void held_executes_abort_after_a_failed_cell(void **state)
{
    mock *m = *state;
    open_widget(m);
    shell_request r = update_req(m, model_id(m, "SelectionSliderModel"), json_integer(2));
    shell_dispatch(m->s, &r);
    m->queued = calloc(2, sizeof *m->queued);
    m->queued[0] = request(m, "execute_request", PORT_SHELL, json_pack("{s:s}", "code", "%nosuchmagic"));
    m->queued[1] = request(m, "execute_request", PORT_SHELL, json_pack("{s:s}", "code", "%echo second"));
    m->nqueued = 2;
    worker_result(m, "tile 16");
    assert_string_equal(last_status(m, "execute_reply"), "aborted");
    assert_false(shell_cell_running(m->s));
}

/* Changes read in a later batch never overtake held older ones: the user's last choice is what runs last. */
static void the_last_change_runs_last(void **state)
{
    mock *m = *state;
    const char *slider = slider_moved(m);
    m->queued = calloc(3, sizeof *m->queued);
    m->queued[0] = request(m, "kernel_info_request", PORT_SHELL, json_object());
    m->queued[1] = update_req(m, slider, json_integer(1));
    m->queued[2] = update_req(m, slider, json_integer(0));
    m->nqueued = 3;
    worker_result(m, "R1");
    m->queued = calloc(1, sizeof *m->queued);
    m->queued[0] = update_req(m, slider, json_integer(2));     /* the user's latest */
    m->nqueued = 1;
    for (int k = 0; k < 4 && shell_cell_running(m->s); k++)
        worker_result(m, "Rn");
    assert_false(shell_cell_running(m->s));
    assert_contains(m->run_params[(m->nruns - 1) % 16], "\"tile\":16");
}

static void a_silent_request_shows_no_widget(void **state)
{
    mock *m = *state;
    send_req(m, "execute_request", PORT_SHELL, json_pack("{s:s, s:b}", "code", CELL, "silent", 1));
    assert_string_equal(str(last_reply(m), "ename"), "UsageError");
    assert_null(pub(m, 0, "comm_open"));
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(first_run_opens_and_shows),
        T(an_update_reruns_in_place),
        T(changes_during_a_run_are_coalesced),
        T(bad_updates_get_the_current_value),
        T(request_state_sends_everything),
        T(closing_and_shutdown),
        T(the_oldest_closes_past_the_limit),
        T(a_failed_first_run_fails_the_cell_and_shows_in_the_widget),
        T(held_executes_abort_after_a_failed_cell),
        T(the_last_change_runs_last),
        T(a_silent_request_shows_no_widget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
