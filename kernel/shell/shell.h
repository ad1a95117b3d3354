/* shell.h — the request handlers, and the narrow interface through which
 * they reach the server.
 *
 * The shell knows Jupyter's request types and a session's state: the running
 * cell, the execution count, history and the results store. It never sees a
 * socket, a signature or the worker's pipe: everything it does to the outside
 * goes through a shell_host, which the server implements (server/kernel.c)
 * and a unit test fakes (tests/unit/test_shell.c). The server hands in each
 * request with shell_dispatch, the worker's events with shell_on_worker_*,
 * signals with shell_interrupt, and runs shell_tick at shell_deadline_ms.
 * Adding a request type = one handler + one line in dispatch.c's table.
 */
#ifndef CUDALAB_SHELL_H
#define CUDALAB_SHELL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lang/lang.h"
#include "proto/conn.h"
#include "proto/wire.h"

/* A decoded request and the channel it came on, where its reply goes. */
typedef struct shell_request {
    wire_msg msg;
    enum conn_port channel;         /* PORT_SHELL or PORT_CONTROL */
} shell_request;

/* What the shell asks of the server. Every function gets `server` back.
 * Content passed in is stolen. */
typedef struct shell_host {
    void *server;
    /* Replies to req on the socket it came on. */
    void (*reply)(void *server, const shell_request *req, const char *msg_type, json_t *content);
    /* Publishes on iopub, parent may be NULL; metadata (stolen) may be NULL
     * for {} (a widget's comm_open carries its protocol version there). */
    void (*publish)(void *server, const wire_msg *parent, const char *msg_type, json_t *metadata,
                    json_t *content);
    /* Sends one command to the device worker, starting it first if needed,
     * with the student kernels it names (borrowed, or NULL); its frames come
     * back through shell_on_worker_frame. Returns 0 or -1. */
    int (*worker_run)(void *server, const command *cmd, const json_t *kernels);
    /* Asks the running command to stop (SIGINT to the worker, if any). */
    void (*worker_interrupt)(void *server);
    /* Kills the worker, if any, and reaps it. */
    void (*worker_kill)(void *server);
    /* Starts a fresh worker unless one runs (the server may decline, after
     * several in a row that never finished a command). */
    void (*worker_start)(void *server);
    /* Takes the requests queued on the shell channel (with burst, also those
     * arriving within a few ms: a "Run all" batch). Returns how many; *reqs is
     * then the caller's (free each msg with wire_msg_free, the array with free). */
    size_t (*take_queued)(void *server, shell_request **reqs, bool burst);
    /* Monotonic milliseconds, the clock of every deadline. */
    double (*now_ms)(void *server);
    /* Ends the session once the current request is answered. */
    void (*quit)(void *server);
} shell_host;

typedef struct shell_limits {
    double grace_ms;                /* how long a stopped command may take to stop */
    double cell_timeout_ms;         /* per-cell limit, 0 = none */
    size_t max_output;              /* stream bytes per cell */
} shell_limits;

typedef struct shell_session shell_session;

/* host must outlive the session. Returns NULL when memory ran out. */
shell_session *shell_session_new(const shell_host *host, const shell_limits *lim);
/* Drops a running cell, if any, without a reply. NULL is a no-op. */
void shell_session_free(shell_session *s);

/* Answers one request (status busy, the handler, status idle). req->msg is
 * consumed; the struct stays the caller's. Returns 0, or -1 when it was
 * dropped as malformed (a message with no reply to carry an error); unknown
 * types are ignored (logged). */
int shell_dispatch(shell_session *s, shell_request *req);
/* Answers a request that will not be handled with an error reply (and, for a
 * cell, the error on iopub); req stays the caller's. */
void shell_refuse(shell_session *s, const shell_request *req, const char *ename, const char *why);

/* Is a cell running? The server reads no shell request meanwhile. */
bool shell_cell_running(const shell_session *s);
/* A frame from the worker (borrowed), and the worker's end (how: "exited with 3"). */
void shell_on_worker_frame(shell_session *s, json_t *frame);
void shell_on_worker_exit(shell_session *s, const char *how);
/* Interrupts the running cell, if any (SIGINT, interrupt_request). */
void shell_interrupt(shell_session *s, const char *why);
/* When shell_tick must next run (now_ms's clock), or 0 for never. */
double shell_deadline_ms(const shell_session *s);
/* Acts on expired deadlines: stream flushes, the cell's limit, a stop's grace. */
void shell_tick(shell_session *s);

#endif
