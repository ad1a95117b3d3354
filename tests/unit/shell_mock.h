/* shell_mock.h — the mock server of the shell's unit tests (test_shell.c,
 * test_interact_shell.c): it implements shell_host (shell/shell.h), records
 * every reply and every iopub message, keeps a clock the test moves by hand,
 * and stands in for the device worker: it records the commands sent to it, and
 * the test answers with the frames a real worker would send (stream, result,
 * error, done) or with its death. Requests go in through shell_dispatch, as the
 * server hands them in. Header-only (static inline); included after <cmocka.h>. */
#ifndef CUDALAB_TEST_SHELL_MOCK_H
#define CUDALAB_TEST_SHELL_MOCK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "magic/magic.h"
#include "proto/msg.h"
#include "shell/shell.h"

#define MAX_SENT 256

/* One message the shell sent: a reply or an iopub message. */
typedef struct sent {
    char type[64];
    json_t *content;
    enum conn_port channel;         /* replies: where it went */
    char parent[64];                /* msg_id of its parent request, "" for none */
} sent;

typedef struct mock {
    shell_host host;
    shell_session *s;
    sent replies[MAX_SENT], pubs[MAX_SENT];
    int nreplies, npubs;
    char runs[16][32];              /* magic names sent to the worker */
    char run_params[16][512];       /* and their params, as compact JSON (cut to fit) */
    int nruns;
    int run_rc;                     /* what worker_run answers */
    int interrupts, kills, starts, quits, takes;
    double now;
    shell_request *queued;          /* what take_queued hands over */
    size_t nqueued;
    int next_id;
} mock;

#define assert_contains(hay, needle) do {                                         \
        const char *hay_ = (hay);                                                 \
        if (!hay_ || !strstr(hay_, (needle)))                                     \
            fail_msg("'%s'\n  does not contain '%s'", hay_ ? hay_ : "(null)", (needle)); \
    } while (0)

/* ---- the mock server ---- */

static inline void record(sent *v, int *n, const wire_msg *parent, const char *type, json_t *content,
                   enum conn_port channel)
{
    if (*n == MAX_SENT)
        fail_msg("more than %d messages", MAX_SENT);
    sent *m = &v[(*n)++];
    snprintf(m->type, sizeof m->type, "%s", type);
    m->content = content;
    m->channel = channel;
    snprintf(m->parent, sizeof m->parent, "%s", parent && parent->msg_id ? parent->msg_id : "");
}

static inline void mock_reply(void *server, const shell_request *req, const char *msg_type, json_t *content)
{
    mock *m = server;
    record(m->replies, &m->nreplies, &req->msg, msg_type, content, req->channel);
}

static inline void mock_publish(void *server, const wire_msg *parent, const char *msg_type, json_t *metadata,
                         json_t *content)
{
    mock *m = server;
    json_decref(metadata);
    record(m->pubs, &m->npubs, parent, msg_type, content, PORT_IOPUB);
}

static inline int mock_worker_run(void *server, const command *cmd, const json_t *kernels)
{
    mock *m = server;
    char *params = json_dumps(cmd->params, JSON_COMPACT | JSON_SORT_KEYS);
    snprintf(m->run_params[m->nruns % 16], sizeof m->run_params[0], "%s", params ? params : "");
    free(params);
    snprintf(m->runs[m->nruns++ % 16], sizeof m->runs[0], "%s", cmd->magic->name);
    return m->run_rc;
}

static inline void mock_worker_interrupt(void *server) { ((mock *)server)->interrupts++; }
static inline void mock_worker_kill(void *server) { ((mock *)server)->kills++; }
static inline void mock_worker_start(void *server) { ((mock *)server)->starts++; }
static inline double mock_now_ms(void *server) { return ((mock *)server)->now; }
static inline void mock_quit(void *server) { ((mock *)server)->quits++; }

static inline size_t mock_take_queued(void *server, shell_request **reqs, bool burst)
{
    (void)burst;
    mock *m = server;
    m->takes++;
    *reqs = m->queued;
    size_t n = m->nqueued;
    m->queued = NULL;
    m->nqueued = 0;
    return n;
}

static inline mock *mock_new(const shell_limits *lim)
{
    mock *m = calloc(1, sizeof *m);
    m->host = (shell_host){ m, mock_reply, mock_publish, mock_worker_run, mock_worker_interrupt,
                            mock_worker_kill, mock_worker_start, mock_take_queued, mock_now_ms, mock_quit };
    m->now = 1000;
    m->s = shell_session_new(&m->host, lim);
    assert_non_null(m->s);
    return m;
}

static const shell_limits default_limits = { .grace_ms = 500, .cell_timeout_ms = 0, .max_output = 1 << 20 };

static inline int setup(void **state)
{
    *state = mock_new(&default_limits);
    return 0;
}

static inline int teardown(void **state)
{
    mock *m = *state;
    shell_session_free(m->s);
    for (int i = 0; i < m->nreplies; i++)
        json_decref(m->replies[i].content);
    for (int i = 0; i < m->npubs; i++)
        json_decref(m->pubs[i].content);
    for (size_t i = 0; i < m->nqueued; i++)
        wire_msg_free(&m->queued[i].msg);
    free(m->queued);
    free(m);
    return 0;
}

/* ---- requests ---- */

/* A request as wire_decode would give it; content stolen. */
static inline shell_request request(mock *m, const char *type, enum conn_port channel, json_t *content)
{
    shell_request r = { .channel = channel };
    char id[32];
    snprintf(id, sizeof id, "req-%d", ++m->next_id);
    r.msg.header = json_pack("{s:s, s:s, s:s, s:s, s:s}", "msg_id", id, "msg_type", type, "session", "s",
                             "username", "u", "version", PROTOCOL_VERSION);
    r.msg.parent = json_object();
    r.msg.metadata = json_object();
    r.msg.content = content;
    r.msg.msg_type = json_string_value(json_object_get(r.msg.header, "msg_type"));
    r.msg.msg_id = json_string_value(json_object_get(r.msg.header, "msg_id"));
    return r;
}

/* Dispatches a request; returns shell_dispatch's answer. */
static inline int send_req(mock *m, const char *type, enum conn_port channel, json_t *content)
{
    shell_request r = request(m, type, channel, content);
    return shell_dispatch(m->s, &r);
}

static inline void execute(mock *m, const char *code)
{
    send_req(m, "execute_request", PORT_SHELL, json_pack("{s:s}", "code", code));
}

static inline const json_t *last_reply(const mock *m)
{
    if (m->nreplies == 0)
        fail_msg("no reply");
    return m->replies[m->nreplies - 1].content;
}

static inline const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static inline json_int_t num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        fail_msg("\"%s\" is not an integer", key);
    return json_integer_value(v);
}

/* The iopub messages since index `from`, as "type" or "status:state" joined by spaces. */
static inline const char *pub_types(const mock *m, int from)
{
    static char buf[4096];
    buf[0] = '\0';
    for (int i = from; i < m->npubs; i++) {
        const sent *p = &m->pubs[i];
        size_t len = strlen(buf);
        if (strcmp(p->type, "status") == 0)
            snprintf(buf + len, sizeof buf - len, "%sstatus:%s", len ? " " : "", str(p->content, "execution_state"));
        else
            snprintf(buf + len, sizeof buf - len, "%s%s", len ? " " : "", p->type);
    }
    return buf;
}

/* The first iopub message of type since `from`, or NULL. */
static inline const json_t *pub(const mock *m, int from, const char *type)
{
    for (int i = from; i < m->npubs; i++)
        if (strcmp(m->pubs[i].type, type) == 0)
            return m->pubs[i].content;
    return NULL;
}

/* The text of every stream message since `from`, concatenated. */
static inline const char *streamed(const mock *m, int from)
{
    static char buf[8192];
    buf[0] = '\0';
    for (int i = from; i < m->npubs; i++)
        if (strcmp(m->pubs[i].type, "stream") == 0)
            strncat(buf, str(m->pubs[i].content, "text"), sizeof buf - strlen(buf) - 1);
    return buf;
}

/* A frame from the fake worker. */
static inline void worker_says(mock *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *f = json_vpack_ex(NULL, 0, fmt, ap);
    va_end(ap);
    assert_non_null(f);
    shell_on_worker_frame(m->s, f);
    json_decref(f);
}

static inline void worker_done(mock *m)
{
    worker_says(m, "{s:s, s:b}", "op", "done", "leaving", 0);
}

#endif
