/* session.h — inside the shell: a session's state, the running cell, and the
 * handlers dispatch.c's table names. Only kernel/shell/ includes it; the
 * server sees shell.h. */
#ifndef CUDALAB_SESSION_H
#define CUDALAB_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "grade/results.h"
#include "magic/magic.h"
#include "shell/shell.h"

struct history;

struct shell_session {
    const shell_host *host;
    shell_limits lim;
    int exec_count;
    struct lab_session *lab;        /* what the session's cells define: parameters, student kernels (owned) */
    struct history *history;
    result_store *results;          /* the session's result documents, for %assert and %score */
    struct recording *recording;    /* the recorded GPU results %recorded named (grade/recorded.h) */
    unsigned long runs;             /* device commands sent so far: tells one run from the next */
    struct cell *cell;              /* the running cell, or NULL */
    bool quitting;                  /* a shutdown_request was answered */
    struct interact *interacts;     /* the %interact widgets, oldest first (interact.c) */
    bool draining;                  /* session_resume is handling held comm messages: changes coalesce */
    bool resuming;                  /* session_resume is under way */
    shell_request *held;            /* requests read early, to serve in order once no cell runs */
    size_t nheld, held_cap;
    size_t abort_held;              /* the first this many held requests came before a failed cell's
                                     * reply: their execute requests are aborted (stop_on_error) */
};

/* The running cell: execute.c (its life: commands, stops, the reply) and
 * cell_output.c (what it shows: coalesced streams, results). */
enum cell_kind {
    CELL_EXECUTE,               /* an execute_request */
    CELL_INTERACT,              /* a %interact widget's re-run: req is the control's comm_msg; its
                                   output goes to the widget, it has no reply (interact.h) */
};

struct cell {
    shell_request req;          /* the execute_request (or comm_msg), owned */
    enum cell_kind kind;
    command *cmds;
    int ncmds, next;
    struct interact *ia;        /* a %interact run under way: what it shows goes to this widget */
    command *sub;               /* the command running in place of cmds[next] (a %interact's run), owned */
    bool silent, stop_on_error;
    int count;                  /* execution_count of this cell */
    bool waiting;               /* a command is in the worker */
    json_t *error;              /* {ename, evalue, traceback} of the worker's error, or NULL */
    json_t *next_input;         /* a result view's "next_input" text: the reply's set_next_input, or NULL */
    bool ask_exit;              /* the cell was `exit` or `quit`: the reply asks a terminal frontend to leave */
    double started_ms;          /* when the cell started (now_ms) */
    double timeout_at_ms;       /* the per-cell limit, 0 = none */
    char stop_ename[32];        /* set when the cell is being stopped: KeyboardInterrupt, TimeoutError */
    char stop_why[192];
    double kill_at_ms;          /* when a stopping worker is killed */
    size_t stream_bytes;        /* output so far, against lim.max_output */
    bool stream_capped;
    strbuf pend;                /* stream text not yet sent, of stream pend_name */
    char pend_name[8];
    double flush_at_ms;         /* when pending text must go out, 0 = none pending */
};

#define STREAM_FLUSH_BYTES (64u << 10)
#define STREAM_FLUSH_MS 50

/* ---- the host, called through the session ---- */
static inline void session_reply(shell_session *s, const shell_request *req, const char *msg_type,
                                 json_t *content)
{
    s->host->reply(s->host->server, req, msg_type, content);
}

static inline void session_publish(shell_session *s, const wire_msg *parent, const char *msg_type,
                                   json_t *content)
{
    s->host->publish(s->host->server, parent, msg_type, NULL, content);
}

/* As session_publish, with the message's metadata (stolen). */
static inline void session_publish_meta(shell_session *s, const wire_msg *parent, const char *msg_type,
                                        json_t *metadata, json_t *content)
{
    s->host->publish(s->host->server, parent, msg_type, metadata, content);
}

static inline void session_status(shell_session *s, const wire_msg *parent, const char *state)
{
    session_publish(s, parent, "status", json_pack("{s:s}", "execution_state", state));
}

static inline double session_now_ms(const shell_session *s)
{
    return s->host->now_ms(s->host->server);
}

/* ---- handlers (dispatch.c's table) ---- */
enum handled { HANDLED_DONE, HANDLED_PENDING };     /* PENDING: the handler sends idle itself */
typedef enum handled shell_handler(shell_session *s, shell_request *req);
shell_handler handle_kernel_info, handle_execute, handle_complete, handle_inspect, handle_is_complete,
    handle_history, handle_comm_info, handle_comm_open, handle_comm_msg, handle_comm_close, handle_shutdown,
    handle_interrupt;

/* execute.c */
/* Replies an execute_request as aborted (busy/idle are the caller's). */
void execute_abort(shell_session *s, const shell_request *req);
/* Drops the running cell, if any, without a reply. */
void cell_discard(shell_session *s);
/* Runs c (owned from now on) as the session's cell: a %interact re-run. */
void cell_start(shell_session *s, struct cell *c);
/* The command the cell is running. */
static inline const command *cell_cmd(const struct cell *c)
{
    return c->sub ? c->sub : &c->cmds[c->next];
}

/* session.c */
/* Once no cell runs: the changes of %interact widgets waiting to run, then the
 * held requests, in order, until one starts a cell. */
void session_resume(shell_session *s);
/* Keeps req (taken) to be served by session_resume. */
void session_hold(shell_session *s, shell_request *req);
/* Holds what is queued on shell (burst: and what arrives within moments, a "Run all" batch). */
void session_take_queued(shell_session *s, bool burst);

/* cell_output.c */
/* Sends the cell's pending stream text, if any. */
void stream_flush(shell_session *s);
/* The sink through which the cell's local commands report; its impl is the session. */
extern const magic_out cell_out;

/* history.c */
struct history *history_new(void);
void history_free(struct history *h);
void history_add(struct history *h, int line, const char *input);
void history_set_output(struct history *h, int line, const char *output);

#endif
