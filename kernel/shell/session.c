/* session.c — a session's life: what it holds (execution count, history,
 * results, the running cell, the %interact widgets, requests held back) from
 * the first request to shutdown. */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "grade/recorded.h"
#include "magic/lab_session.h"
#include "shell/interact.h"
#include "shell/session.h"

shell_session *shell_session_new(const shell_host *host, const shell_limits *lim)
{
    shell_session *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->host = host;
    s->lim = *lim;
    s->lab = lab_session_new();
    s->history = history_new();
    s->results = results_new();
    s->recording = recording_new();
    if (!s->lab || !s->history || !s->results || !s->recording) {
        shell_session_free(s);
        return NULL;
    }
    return s;
}

void shell_session_free(shell_session *s)
{
    if (!s)
        return;
    cell_discard(s);
    interact_close_all(s, NULL, false);
    for (size_t i = 0; i < s->nheld; i++)
        wire_msg_free(&s->held[i].msg);
    free(s->held);
    history_free(s->history);
    results_free(s->results);
    recording_free(s->recording);
    lab_session_free(s->lab);
    free(s);
}

bool shell_cell_running(const shell_session *s)
{
    /* held requests come before any the server has not read yet */
    return s->cell != NULL || s->nheld > 0;
}

void session_hold(shell_session *s, shell_request *req)
{
    if (array_grow(&s->held, &s->held_cap, s->nheld + 1, sizeof *s->held) != 0) {
        klog("out of memory holding a %s: dropped", req->msg.msg_type);
        wire_msg_free(&req->msg);
        return;
    }
    s->held[s->nheld++] = *req;
    memset(&req->msg, 0, sizeof req->msg);
}

void session_take_queued(shell_session *s, bool burst)
{
    shell_request *q = NULL;
    size_t n = s->host->take_queued(s->host->server, &q, burst);
    for (size_t i = 0; i < n; i++)
        session_hold(s, &q[i]);
    free(q);
}

static bool is_comm(const shell_request *r)
{
    return strncmp(r->msg.msg_type, "comm_", 5) == 0;
}

static shell_request unhold_first(shell_session *s)
{
    shell_request r = s->held[0];
    memmove(s->held, s->held + 1, --s->nheld * sizeof *s->held);
    if (s->abort_held > 0)
        s->abort_held--;
    return r;
}

void session_resume(shell_session *s)
{
    if (s->resuming)
        return;                     /* a cell ended inside the loop below: it goes on */
    s->resuming = true;
    while (!s->cell && !s->quitting) {
        interact_reap(s);
        if (interact_run_due(s))
            continue;
        if (s->nheld == 0)
            break;
        if (is_comm(&s->held[0])) {
            /* widget changes in a row: each control's latest is what runs (interact_model_update) */
            s->draining = true;
            while (s->nheld > 0 && is_comm(&s->held[0]) && !s->quitting) {
                shell_request r = unhold_first(s);
                shell_dispatch(s, &r);
            }
            s->draining = false;
            continue;
        }
        bool abort = s->abort_held > 0 && strcmp(s->held[0].msg.msg_type, "execute_request") == 0;
        shell_request r = unhold_first(s);
        if (abort) {                /* queued behind a failed cell (stop_on_error) */
            session_status(s, &r.msg, "busy");
            execute_abort(s, &r);
            session_status(s, &r.msg, "idle");
            wire_msg_free(&r.msg);
        } else {
            shell_dispatch(s, &r);
        }
    }
    s->resuming = false;
}
