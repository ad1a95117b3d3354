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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "server/kernel.h"
#include "base/log.h"
#include "lang/parse_internal.h"
#include "shell/cell.h"

enum handled handle_execute(kernel *k, void *sock, wire_msg *req);

#define CELL_ECHO_MAX (64u << 10)       /* bytes of a cell that execute_input repeats */
#define TRACEBACK_SOURCE_MAX 400        /* bytes of a command's line that an error quotes */

/* ---- finishing ---- */

static void cell_free(struct cell *c)
{
    wire_msg_free(&c->req);
    free(c->pend);
    commands_free(c->cmds, c->ncmds);
    json_decref(c->error);
    free(c);
}

/* Records the cell's error: published on iopub now, repeated in the reply. */
static void cell_fail(kernel *k, const char *ename, const char *evalue, const json_t *extra)
{
    struct cell *c = k->cell;
    json_t *tb = json_array();
    json_array_append_new(tb, json_sprintf("%s: %s", ename, evalue));
    size_t i;
    json_t *line;
    json_array_foreach(extra, i, line)
        if (json_is_string(line))
            json_array_append(tb, line);
    stream_flush(k);
    json_decref(c->error);
    c->error = json_pack("{s:s, s:s, s:o}", "ename", ename, "evalue", evalue, "traceback", tb);
    kernel_publish(k, &c->req, "error", json_deep_copy(c->error));
}

static void cell_finish(kernel *k)
{
    struct cell *c = k->cell;
    json_t *reply;
    stream_flush(k);
    if (c->error) {
        reply = json_deep_copy(c->error);
        json_object_set_new(reply, "status", json_string("error"));
    } else {
        reply = json_pack("{s:s, s:{}, s:[]}", "status", "ok", "user_expressions", "payload");
    }
    json_object_set_new(reply, "execution_count", json_integer(c->count));
    /* Before the reply goes out: whatever a client sends after seeing it is
     * newer, and whatever it queued before ("Run all") is aborted: the
     * requests already here or arriving within moments are drained now. */
    struct drained *queued = NULL;
    if (c->error && c->stop_on_error)
        queued = kernel_drain_shell(k);
    kernel_reply(k, k->sock[PORT_SHELL], &c->req, "execute_reply", reply);
    kernel_status(k, &c->req, "idle");
    k->cell = NULL;
    cell_free(c);
    kernel_answer_drained(k, queued);
}

/* The command's line as a traceback quotes it: a line of a 50 MB cell is cut. */
static json_t *where_line(const command *cmd)
{
    int n = utf8_clip(cmd->source, TRACEBACK_SOURCE_MAX);
    return json_sprintf("  in cell line %d: %.*s%s", cmd->line, n, cmd->source,
                        cmd->source[n] ? " [...]" : "");
}

static void fail_command(kernel *k, const command *cmd, const char *ename, const char *evalue,
                         const json_t *extra)
{
    json_t *tb = json_array();
    json_array_append_new(tb, where_line(cmd));
    size_t i;
    json_t *line;
    json_array_foreach(extra, i, line)
        json_array_append(tb, line);
    cell_fail(k, ename, evalue, tb);
    json_decref(tb);
}

/* Runs commands until one goes to the worker (returns) or the cell ends. */
static void cell_advance(kernel *k)
{
    struct cell *c = k->cell;
    for (; c->next < c->ncmds; c->next++) {
        const command *cmd = &c->cmds[c->next];
        if (cmd->magic->where == MAGIC_WORKER) {
            if (worker_run(&k->worker, k->exe, cmd) == 0) {
                c->waiting = true;
                return;
            }
            fail_command(k, cmd, "WorkerError", "cannot start the device worker (see the kernel log)", NULL);
            break;
        }
        magic_ctx ctx = { .out = &cell_out, .impl = k, .results = k->results };
        int rc = cmd->magic->run(&ctx, cmd->params, cmd->body);
        if (rc) {
            fail_command(k, cmd, ctx.error.ename, ctx.error.evalue, ctx.traceback);
            json_decref(ctx.traceback);
            break;
        }
    }
    cell_finish(k);
}

void cell_discard(kernel *k)
{
    if (k->cell)
        cell_free(k->cell);
    k->cell = NULL;
}

/* ---- events from the loop ---- */

/* The error that ends a stopped cell: the stop's reason, and how the worker went. */
static void fail_stopped(kernel *k, const char *how)
{
    struct cell *c = k->cell;
    const command *cmd = &c->cmds[c->next];
    char evalue[640];
    snprintf(evalue, sizeof evalue, "%s: stopped %%%s after %.1f s%s", c->stop_why, cmd->magic->name,
             (cell_now_ms() - c->started_ms) / 1e3, how);
    json_decref(c->error);
    c->error = NULL;
    fail_command(k, cmd, c->stop_ename, evalue, NULL);
}

void cell_on_worker_frame(kernel *k, json_t *f)
{
    struct cell *c = k->cell;
    const char *op = json_string_value(json_object_get(f, "op"));
    if (!c || !c->waiting || !op) {
        klog("worker frame with no command waiting: ignored");
        return;
    }
    if (strcmp(op, "stream") == 0) {
        cell_out.stream(k, json_string_value(json_object_get(f, "name")),
                        json_string_value(json_object_get(f, "text")));
    } else if (strcmp(op, "result") == 0) {
        json_t *doc = json_object_get(f, "doc"), *view = json_object_get(f, "view");
        const json_t *mode = json_object_get(f, "mode");
        cell_out.result(k, json_is_null(doc) ? NULL : json_incref(doc), json_incref(view),
                        json_string_value(json_object_get(f, "display_id")),
                        json_is_integer(mode) ? (enum result_mode)json_integer_value(mode) : RESULT_PLAIN);
    } else if (strcmp(op, "error") == 0) {
        json_decref(c->error);
        c->error = json_incref(f);
    } else if (strcmp(op, "done") == 0) {
        c->waiting = false;
        k->respawns = 0;
        if (json_is_true(json_object_get(f, "leaving"))) {
            /* its context is poisoned and it is exiting: replace it before the
             * next command could be sent to it */
            worker_kill(&k->worker, NULL);
            kernel_worker_respawn(k);
        }
        json_t *err = c->error;
        c->error = NULL;
        if (c->stop_ename[0]) {
            fail_stopped(k, " (the command stopped when asked)");
        } else if (err) {
            const char *ename = json_string_value(json_object_get(err, "ename"));
            const char *evalue = json_string_value(json_object_get(err, "evalue"));
            fail_command(k, &c->cmds[c->next], ename ? ename : "Error", evalue ? evalue : "",
                         json_object_get(err, "traceback"));
        }
        json_decref(err);
        if (c->error) {
            cell_finish(k);
            return;
        }
        c->next++;
        cell_advance(k);
    }
}

void cell_on_worker_exit(kernel *k, const char *how)
{
    struct cell *c = k->cell;
    if (!c || !c->waiting)
        return;
    c->waiting = false;
    char text[256];
    if (c->stop_ename[0]) {
        snprintf(text, sizeof text, " (its worker %s; a fresh one starts for the next command)", how);
        fail_stopped(k, text);
    } else {
        const command *cmd = &c->cmds[c->next];
        char evalue[512];
        snprintf(evalue, sizeof evalue,
                 "the device worker running %%%s %s; a fresh worker starts for the next command",
                 cmd->magic->name, how);
        json_decref(c->error);
        c->error = NULL;
        fail_command(k, cmd, "WorkerDied", evalue, NULL);
    }
    cell_finish(k);
}

/* Asks the worker to stop (SIGINT: the command polls magic_cancelled()) and
 * gives it a grace period; cell_tick() kills it when the grace runs out. A
 * second stop while one is pending kills at once. */
void cell_stop(kernel *k, const char *ename, const char *why)
{
    struct cell *c = k->cell;
    if (!c || !c->waiting) {
        klog("%s while idle: nothing to stop", why);
        return;
    }
    if (c->stop_ename[0]) {
        c->kill_at_ms = cell_now_ms();
        cell_tick(k);
        return;
    }
    snprintf(c->stop_ename, sizeof c->stop_ename, "%s", ename);
    snprintf(c->stop_why, sizeof c->stop_why, "%s", why);
    c->kill_at_ms = cell_now_ms() + k->grace_ms;
    if (k->worker.pid > 0)
        kill(k->worker.pid, SIGINT);
}

void cell_interrupt(kernel *k, const char *why)
{
    cell_stop(k, "KeyboardInterrupt", why);
}

static double earliest(double a, double b)
{
    return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

double cell_deadline_ms(const kernel *k)
{
    const struct cell *c = k->cell;
    if (!c)
        return 0;
    double d = c->flush_at_ms;
    if (c->waiting)
        d = earliest(d, c->stop_ename[0] ? c->kill_at_ms : c->timeout_at_ms);
    return d;
}

void cell_tick(kernel *k)
{
    struct cell *c = k->cell;
    if (!c)
        return;
    double now = cell_now_ms();
    if (c->flush_at_ms > 0 && now >= c->flush_at_ms)
        stream_flush(k);
    if (!c->waiting)
        return;
    if (c->stop_ename[0] && now >= c->kill_at_ms) {
        char how[160], text[256];
        worker_kill(&k->worker, NULL);
        snprintf(how, sizeof how, "did not stop within %.1f s and was killed", k->grace_ms / 1e3);
        snprintf(text, sizeof text, " (its worker %s; a fresh one starts for the next command)", how);
        klog("worker %s", how);
        c->waiting = false;
        fail_stopped(k, text);
        cell_finish(k);
        kernel_worker_respawn(k);
    } else if (!c->stop_ename[0] && c->timeout_at_ms > 0 && now >= c->timeout_at_ms) {
        char why[160];
        snprintf(why, sizeof why, "the cell ran longer than its limit of %g s (CUDALAB_CELL_TIMEOUT)",
                 k->cell_timeout_ms / 1e3);
        cell_stop(k, "TimeoutError", why);
    }
}

/* ---- the request ---- */

void execute_abort(kernel *k, void *sock, const wire_msg *req)
{
    kernel_reply(k, sock, req, "execute_reply",
                 json_pack("{s:s, s:i}", "status", "aborted", "execution_count", k->exec_count));
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

static bool flag(const json_t *content, const char *key, bool def)
{
    const json_t *v = json_object_get(content, key);
    return json_is_boolean(v) ? json_is_true(v) : def;
}

enum handled handle_execute(kernel *k, void *sock, wire_msg *req)
{
    struct cell *c = calloc(1, sizeof *c);
    if (!c) {
        klog("out of memory for a cell");
        return HANDLED_DONE;
    }
    c->req = *req;                          /* take ownership */
    memset(req, 0, sizeof *req);
    c->silent = flag(c->req.content, "silent", false);
    c->stop_on_error = flag(c->req.content, "stop_on_error", true);
    bool store = !c->silent && flag(c->req.content, "store_history", true);
    const char *text = json_string_value(json_object_get(c->req.content, "code"));
    if (store) {
        k->exec_count++;
        history_add(k->history, k->exec_count, text);
    }
    c->count = k->exec_count;
    c->started_ms = cell_now_ms();
    c->timeout_at_ms = k->cell_timeout_ms > 0 ? c->started_ms + k->cell_timeout_ms : 0;
    k->cell = c;
    if (!c->silent)
        kernel_publish(k, &c->req, "execute_input",
                       json_pack("{s:o, s:i}", "code", echoed_code(text), "execution_count", c->count));
    parse_error perr;
    c->ncmds = cell_parse(text, &c->cmds, &perr);
    if (c->ncmds < 0) {
        c->ncmds = 0;
        json_t *tb = json_array();
        if (perr.line > 0)
            json_array_append_new(tb, json_sprintf("  in cell line %d: %s", perr.line, perr.source));
        cell_fail(k, perr.error.ename, perr.error.evalue, tb);
        json_decref(tb);
        cell_finish(k);
    } else {
        cell_advance(k);
    }
    return HANDLED_PENDING;
}
