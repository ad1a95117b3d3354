/* execute.c — execute_request: a cell runs command by command.
 *
 * The cell is parsed and validated whole before anything runs, so a typo on
 * the last line costs nothing. Local magics run at once; worker magics are
 * sent to the device worker and the cell waits (the loop keeps serving
 * control and heartbeat) until the worker says "done". The first error ends
 * the cell; with stop_on_error, the execute requests that arrived before its
 * reply went out are then aborted. Arrival order on the kernel's side decides,
 * as in ipykernel: a header's date is the client's clock, which may be minutes
 * off ours, and must not decide which cells run.
 * What the cell shows is cell_output.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/utf8.h"
#include "lang/interact.h"
#include "lang/lang.h"
#include "shell/interact.h"
#include "shell/session.h"

#define CELL_ECHO_MAX (64u << 10)       /* bytes of a cell that execute_input repeats */
#define TRACEBACK_SOURCE_MAX 400        /* bytes of a command's line that an error quotes */

/* ---- finishing ---- */

static void cell_free(struct cell *c)
{
    wire_msg_free(&c->req.msg);
    strbuf_free(&c->pend);
    commands_free(c->cmds, c->ncmds);
    commands_free(c->sub, c->sub ? 1 : 0);
    json_decref(c->error);
    json_decref(c->next_input);
    free(c);
}

/* Records the cell's error: published on iopub now, repeated in the reply (a
 * %interact re-run shows it in its widget instead, interact_settle). */
static void cell_fail(shell_session *s, const char *ename, const char *evalue, const json_t *extra)
{
    struct cell *c = s->cell;
    json_t *tb = json_array();
    json_array_append_new(tb, json_sprintf("%s: %s", ename, evalue));
    size_t i;
    json_t *line;
    json_array_foreach(extra, i, line)
        if (json_is_string(line))
            json_array_append(tb, line);
    stream_flush(s);
    json_decref(c->error);
    c->error = json_pack("{s:s, s:s, s:o}", "ename", ename, "evalue", evalue, "traceback", tb);
    if (c->kind == CELL_EXECUTE)
        session_publish(s, &c->req.msg, "error", json_deep_copy(c->error));
}

/* A %interact re-run has no reply: its result is in the widget, its comm_msg
 * gets idle, and what was queued meanwhile is read (interact.h). */
static void rerun_finish(shell_session *s)
{
    struct cell *c = s->cell;
    session_status(s, &c->req.msg, "idle");
    s->cell = NULL;
    cell_free(c);
    session_take_queued(s, false);  /* the changes made during the run: the latest of each runs */
    session_resume(s);
}

static void cell_finish(shell_session *s)
{
    struct cell *c = s->cell;
    json_t *reply;
    stream_flush(s);
    if (c->ia)
        interact_settle(s);
    if (c->kind == CELL_INTERACT) {
        rerun_finish(s);
        return;
    }
    if (c->error) {
        reply = json_deep_copy(c->error);
        json_object_set_new(reply, "status", json_string("error"));
    } else {
        reply = json_pack("{s:s, s:{}, s:[]}", "status", "ok", "user_expressions", "payload");
        if (c->next_input)      /* a command's text for the next cell (--as-kernel) */
            json_array_append_new(json_object_get(reply, "payload"),
                                  json_pack("{s:s, s:O, s:b}", "source", "set_next_input", "text",
                                            c->next_input, "replace", 0));
        if (c->ask_exit)        /* jupyter console leaves, and stops the kernel */
            json_array_append_new(json_object_get(reply, "payload"),
                                  json_pack("{s:s, s:b}", "source", "ask_exit", "keepkernel", 0));
    }
    json_object_set_new(reply, "execution_count", json_integer(c->count));
    /* Before the reply goes out: whatever a client sends after seeing it is
     * newer, and whatever it queued before ("Run all") is aborted: the
     * requests already here or arriving within moments are drained now. */
    if (c->error && c->stop_on_error) {
        session_take_queued(s, true);
        s->abort_held = s->nheld;   /* held already (read during a widget's run) or now: all came before */
    }
    session_reply(s, &c->req, "execute_reply", reply);
    session_status(s, &c->req.msg, "idle");
    s->cell = NULL;
    cell_free(c);
    session_resume(s);
}

/* A worker command has its answer: its settled step (magic.h). 0, or -1 with the error in ctx. */
static int command_settled(magic_ctx *ctx, const command *cmd, const char *ename)
{
    return cmd->magic->settled ? cmd->magic->settled(ctx, cmd, ename) : 0;
}

/* The settled step of a command that already failed: its own error is the cell's. */
static void settled_after_error(shell_session *s, const command *cmd, const char *ename)
{
    magic_ctx quiet = { .lab = s->lab, .grading.results = s->results };     /* a failed quick check's
                                                                               * result is there (the class view) */
    if (command_settled(&quiet, cmd, ename) != 0)
        klog("%%%s settled after %s: %s: %s", cmd->magic->name, ename, quiet.error.ename, quiet.error.evalue);
    json_decref(quiet.traceback);
}

/* The command's line as a traceback quotes it: a line of a 50 MB cell is cut. */
static json_t *where_line(const command *cmd)
{
    int n = utf8_clip(cmd->source, TRACEBACK_SOURCE_MAX);
    return json_sprintf("  in cell line %d: %.*s%s", cmd->line, n, cmd->source,
                        cmd->source[n] ? " [...]" : "");
}

static void fail_command(shell_session *s, const command *cmd, const char *ename, const char *evalue,
                         const json_t *extra)
{
    json_t *tb = json_array();
    json_array_append_new(tb, where_line(cmd));
    size_t i;
    json_t *line;
    json_array_foreach(extra, i, line)
        json_array_append(tb, line);
    cell_fail(s, ename, evalue, tb);
    json_decref(tb);
}

/* A worker command: its attach step here (magic.h), then the worker. 0 when
 * it was sent, -1 when the cell failed. */
static int send_command(shell_session *s, const command *cmd)
{
    json_t *kernels = NULL;
    magic_ctx ctx = { .sink.out = &cell_out, .sink.impl = s, .lab = s->lab, .grading.results = s->results,
                      .grading.recording = s->recording };
    s->runs++;
    if (cmd->magic->attach && cmd->magic->attach(&ctx, cmd, &kernels) != 0) {
        fail_command(s, cmd, ctx.error.ename, ctx.error.evalue, ctx.traceback);
        json_decref(ctx.traceback);
        return -1;
    }
    int rc = s->host->worker_run(s->host->server, cmd, kernels);
    json_decref(kernels);
    if (rc != 0) {
        fail_command(s, cmd, "WorkerError", "cannot start the device worker (see the kernel log)", NULL);
        settled_after_error(s, cmd, "WorkerError");
    }
    return rc;
}

/* Runs commands until one goes to the worker (returns) or the cell ends. */
static void cell_advance(shell_session *s)
{
    struct cell *c = s->cell;
    for (; c->next < c->ncmds; c->next++) {
        const command *cmd = &c->cmds[c->next];
        if (interact_is(cmd)) {
            error_info err;
            if (interact_begin(s, cmd, &err) != 0) {
                fail_command(s, cmd, err.ename, err.evalue, NULL);
                break;
            }
            if (send_command(s, c->sub) == 0) {
                c->waiting = true;
                return;
            }
            break;
        }
        if (cmd->magic->where == MAGIC_WORKER) {
            if (send_command(s, cmd) == 0) {
                c->waiting = true;
                return;
            }
            break;
        }
        magic_ctx ctx = { .sink.out = &cell_out, .sink.impl = s, .lab = s->lab, .grading.results = s->results,
                          .grading.recording = s->recording, .body_line = cmd->body_line };
        int rc = cmd->magic->run(&ctx, cmd->params, cmd->body);
        if (rc) {
            fail_command(s, cmd, ctx.error.ename, ctx.error.evalue, ctx.traceback);
            json_decref(ctx.traceback);
            break;
        }
    }
    cell_finish(s);
}

void cell_start(shell_session *s, struct cell *c)
{
    s->cell = c;
    cell_advance(s);
}

void cell_discard(shell_session *s)
{
    if (s->cell)
        cell_free(s->cell);
    s->cell = NULL;
}

/* ---- events from the loop ---- */

/* The error that ends a stopped cell: the stop's reason, and how the worker went. */
static void fail_stopped(shell_session *s, const char *how)
{
    struct cell *c = s->cell;
    const command *cmd = cell_cmd(c);
    char evalue[640];
    snprintf(evalue, sizeof evalue, "%s: stopped %%%s after %.1f s%s", c->stop_why, cmd->magic->name,
             (session_now_ms(s) - c->started_ms) / 1e3, how);
    json_decref(c->error);
    c->error = NULL;
    fail_command(s, cmd, c->stop_ename, evalue, NULL);
    settled_after_error(s, cmd, c->stop_ename);
}

void shell_on_worker_frame(shell_session *s, json_t *f)
{
    struct cell *c = s->cell;
    const char *op = json_string_value(json_object_get(f, "op"));
    if (!c || !c->waiting || !op) {
        klog("worker frame with no command waiting: ignored");
        return;
    }
    if (strcmp(op, "stream") == 0) {
        cell_out.stream(s, json_string_value(json_object_get(f, "name")),
                        json_string_value(json_object_get(f, "text")));
    } else if (strcmp(op, "result") == 0) {
        json_t *doc = json_object_get(f, "doc"), *view = json_object_get(f, "view");
        const json_t *mode = json_object_get(f, "mode");
        json_int_t m = json_is_integer(mode) ? json_integer_value(mode) : RESULT_PLAIN;
        cell_out.result(s, json_is_null(doc) ? NULL : json_incref(doc), json_incref(view),
                        json_string_value(json_object_get(f, "display_id")),
                        m >= RESULT_PLAIN && m <= RESULT_END ? (enum result_mode)m : RESULT_PLAIN);
    } else if (strcmp(op, "error") == 0) {
        json_decref(c->error);
        c->error = json_incref(f);
    } else if (strcmp(op, "done") == 0) {
        c->waiting = false;
        if (json_is_true(json_object_get(f, "leaving"))) {
            /* its context is poisoned and it is exiting: replace it before the
             * next command could be sent to it */
            s->host->worker_kill(s->host->server);
            s->host->worker_start(s->host->server);
        }
        json_t *err = c->error;
        c->error = NULL;
        if (c->stop_ename[0]) {
            fail_stopped(s, " (the command stopped when asked)");
        } else if (err) {
            const char *ename = json_string_value(json_object_get(err, "ename"));
            const char *evalue = json_string_value(json_object_get(err, "evalue"));
            fail_command(s, cell_cmd(c), ename ? ename : "Error", evalue ? evalue : "",
                         json_object_get(err, "traceback"));
            settled_after_error(s, cell_cmd(c), ename ? ename : "Error");
        } else {
            magic_ctx ctx = { .sink.out = &cell_out, .sink.impl = s, .lab = s->lab, .grading.results = s->results,
                              .grading.recording = s->recording };
            if (command_settled(&ctx, cell_cmd(c), NULL) != 0)
                fail_command(s, cell_cmd(c), ctx.error.ename, ctx.error.evalue, ctx.traceback);
            json_decref(ctx.traceback);
        }
        json_decref(err);
        if (c->error) {
            cell_finish(s);
            return;
        }
        if (c->ia)                  /* a %interact run has its answer: its widget shows it */
            interact_settle(s);
        c->next++;
        cell_advance(s);
    }
}

void shell_on_worker_exit(shell_session *s, const char *how)
{
    struct cell *c = s->cell;
    if (!c || !c->waiting)
        return;
    c->waiting = false;
    char text[256];
    if (c->stop_ename[0]) {
        snprintf(text, sizeof text, " (its worker %s; a fresh one starts for the next command)", how);
        fail_stopped(s, text);
    } else {
        const command *cmd = cell_cmd(c);
        char evalue[512];
        snprintf(evalue, sizeof evalue,
                 "the device worker running %%%s %s; a fresh worker starts for the next command",
                 cmd->magic->name, how);
        json_decref(c->error);
        c->error = NULL;
        fail_command(s, cmd, "WorkerDied", evalue, NULL);
        settled_after_error(s, cmd, "WorkerDied");
    }
    cell_finish(s);
}

/* Asks the worker to stop (SIGINT: the command polls magic_cancelled()) and
 * gives it a grace period; shell_tick() kills it when the grace runs out. A
 * second stop while one is pending kills at once. */
static void cell_stop(shell_session *s, const char *ename, const char *why)
{
    struct cell *c = s->cell;
    if (!c || !c->waiting) {
        kinfo("%s while idle: nothing to stop", why);
        return;
    }
    if (c->stop_ename[0]) {
        c->kill_at_ms = session_now_ms(s);
        shell_tick(s);
        return;
    }
    snprintf(c->stop_ename, sizeof c->stop_ename, "%s", ename);
    snprintf(c->stop_why, sizeof c->stop_why, "%s", why);
    c->kill_at_ms = session_now_ms(s) + s->lim.grace_ms;
    s->host->worker_interrupt(s->host->server);
}

void shell_interrupt(shell_session *s, const char *why)
{
    cell_stop(s, "KeyboardInterrupt", why);
}

static double earliest(double a, double b)
{
    return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

double shell_deadline_ms(const shell_session *s)
{
    const struct cell *c = s->cell;
    if (!c)
        return 0;
    double d = c->flush_at_ms;
    if (c->waiting)
        d = earliest(d, c->stop_ename[0] ? c->kill_at_ms : c->timeout_at_ms);
    return d;
}

void shell_tick(shell_session *s)
{
    struct cell *c = s->cell;
    if (!c)
        return;
    double now = session_now_ms(s);
    if (c->flush_at_ms > 0 && now >= c->flush_at_ms)
        stream_flush(s);
    if (!c->waiting)
        return;
    if (c->stop_ename[0] && now >= c->kill_at_ms) {
        char how[160], text[256];
        s->host->worker_kill(s->host->server);
        snprintf(how, sizeof how, "did not stop within %.1f s and was killed", s->lim.grace_ms / 1e3);
        snprintf(text, sizeof text, " (its worker %s; a fresh one starts for the next command)", how);
        klog("worker %s", how);
        c->waiting = false;
        fail_stopped(s, text);
        cell_finish(s);
        s->host->worker_start(s->host->server);
    } else if (!c->stop_ename[0] && c->timeout_at_ms > 0 && now >= c->timeout_at_ms) {
        char why[160];
        snprintf(why, sizeof why, "the cell ran longer than its limit of %g s (CUDALAB_CELL_TIMEOUT)",
                 s->lim.cell_timeout_ms / 1e3);
        cell_stop(s, "TimeoutError", why);
    }
}

/* ---- the request ---- */

void execute_abort(shell_session *s, const shell_request *req)
{
    session_reply(s, req, "execute_reply",
                  json_pack("{s:s, s:i}", "status", "aborted", "execution_count", s->exec_count));
}

/* execute_input repeats the cell to every client; a huge one is repeated in
 * part, saying so (the client that sent it has it whole). */
static json_t *echoed_code(const char *text)
{
    size_t len = strlen(text);
    if (len <= CELL_ECHO_MAX)
        return json_string(text);
    int n = utf8_clip(text, CELL_ECHO_MAX);
    return json_sprintf("%.*s\n# [cudalab: the other %zu bytes of this %zu-byte cell are not repeated here]",
                        n, text, len - (size_t)n, len);
}

/* A cell that is only `exit` or `quit` (or `exit()`, `quit()`, as a Python user types them): the one
 * exception to "every line is a magic", so that a terminal frontend can be left as ipykernel's is. */
static bool asks_exit(const char *text)
{
    static const char *const words[] = { "exit", "quit", "exit()", "quit()" };
    if (!text)
        return false;
    text += strspn(text, " \t\r\n");
    size_t len = strlen(text);
    while (len > 0 && strchr(" \t\r\n", text[len - 1]))
        len--;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (len == strlen(words[i]) && strncmp(text, words[i], len) == 0)
            return true;
    return false;
}

static bool flag(const json_t *content, const char *key, bool def)
{
    const json_t *v = json_object_get(content, key);
    return json_is_boolean(v) ? json_is_true(v) : def;
}

enum handled handle_execute(shell_session *s, shell_request *req)
{
    struct cell *c = calloc(1, sizeof *c);
    if (!c) {
        klog("out of memory for a cell");
        return HANDLED_DONE;
    }
    c->req = *req;                          /* take ownership */
    memset(&req->msg, 0, sizeof req->msg);
    c->silent = flag(c->req.msg.content, "silent", false);
    c->stop_on_error = flag(c->req.msg.content, "stop_on_error", true);
    bool store = !c->silent && flag(c->req.msg.content, "store_history", true);
    const char *text = json_string_value(json_object_get(c->req.msg.content, "code"));
    if (store) {
        s->exec_count++;
        history_add(s->history, s->exec_count, text);
    }
    c->count = s->exec_count;
    c->started_ms = session_now_ms(s);
    c->timeout_at_ms = s->lim.cell_timeout_ms > 0 ? c->started_ms + s->lim.cell_timeout_ms : 0;
    s->cell = c;
    if (!c->silent)
        session_publish(s, &c->req.msg, "execute_input",
                       json_pack("{s:o, s:i}", "code", echoed_code(text), "execution_count", c->count));
    parse_error perr;
    c->ask_exit = asks_exit(text);
    c->ncmds = c->ask_exit ? 0 : cell_parse(s->lab, text, &c->cmds, &perr);
    if (c->ask_exit) {
        cell_finish(s);
    } else if (c->ncmds < 0) {
        c->ncmds = 0;
        json_t *tb = json_array();
        if (perr.line > 0)
            json_array_append_new(tb, json_sprintf("  in cell line %d: %s", perr.line, perr.source));
        cell_fail(s, perr.error.ename, perr.error.evalue, tb);
        json_decref(tb);
        cell_finish(s);
    } else {
        cell_advance(s);
    }
    return HANDLED_PENDING;
}
