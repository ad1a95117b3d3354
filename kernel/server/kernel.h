/* kernel.h — the kernel process: sockets, session state and the event loop.
 *
 * One event loop polls control, shell (only while no cell runs), the iopub
 * XPUB (for subscriptions), the worker's pipe and a self-pipe that turns
 * signals into events. No handler blocks: long work is the worker's, and
 * writes to it are buffered. Heartbeat is echoed by a thread of its own
 * (heartbeat.h), so nothing the loop does can stall it.
 */
#ifndef CUDALAB_KERNEL_H
#define CUDALAB_KERNEL_H

#include <jansson.h>
#include <stdbool.h>

#include "grade/results.h"
#include "exec/worker.h"
#include "proto/conn.h"
#include "proto/sign.h"
#include "proto/wire.h"

struct cell;
struct history;
struct heartbeat;

typedef struct kernel {
    void *zctx;
    void *sock[PORT_COUNT];         /* indexed by enum conn_port; NULL for PORT_HB, the heartbeat thread's */
    struct heartbeat *hb;
    signer *sign;
    replay_cache *replay;
    char session[37];
    char exe[4096];                 /* our own executable, for starting workers */
    int exec_count;
    struct history *history;
    result_store *results;          /* the session's result documents, for %assert and %score */
    struct cell *cell;              /* the running cell, or NULL */
    worker worker;
    int sigpipe[2];
    bool quit;
    unsigned long dropped;          /* messages refused by wire_decode */
    double welcome_tokens, welcome_at;  /* iopub_welcome's rate limit (kernel.c) */
    unsigned long welcomes_refused;
    double grace_ms;                /* how long a stopped command may take to stop (CUDALAB_INTERRUPT_GRACE_MS) */
    double cell_timeout_ms;         /* per-cell limit, 0 = none (--cell-timeout, CUDALAB_CELL_TIMEOUT) */
    size_t max_output;              /* stream bytes per cell (CUDALAB_MAX_OUTPUT) */
    size_t max_message;             /* bytes of one request (CUDALAB_MAX_MESSAGE) */
    int respawns;                   /* workers started in a row without one finishing a command */
} kernel;

/* Binds every socket of the connection file. Returns 0 or -1 (logged). */
int kernel_open(kernel *k, const conn_info *c);
/* Runs until shutdown. Returns the process exit code. */
int kernel_loop(kernel *k);
void kernel_close(kernel *k);

/* After a failed cell with stop_on_error, before its reply: takes the requests
 * queued on shell (and those arriving within a few ms: a "Run all" batch)...
 * NULL when there were none or memory ran out. */
struct drained *kernel_drain_shell(kernel *k);
/* ...and, after the reply, answers them in order: execute requests as aborted,
 * the others as usual. Frees d. */
void kernel_answer_drained(kernel *k, struct drained *d);
/* Replies an execute_request as aborted (busy/idle are the caller's). */
void execute_abort(kernel *k, void *sock, const wire_msg *req);

/* Starts a fresh worker after one was killed or died, so the next command
 * does not wait for it (and its CUDA context); gives up after a few in a row
 * that never finished a command, leaving it to the next command. */
void kernel_worker_respawn(kernel *k);

/* Replies on sock to req (content stolen). */
void kernel_reply(kernel *k, void *sock, const wire_msg *req, const char *msg_type, json_t *content);
/* Publishes on iopub with req as parent (may be NULL); content stolen. */
void kernel_publish(kernel *k, const wire_msg *parent, const char *msg_type, json_t *content);
void kernel_status(kernel *k, const wire_msg *parent, const char *state);

/* ---- handlers (kernel/shell/) ---- */
enum handled { HANDLED_DONE, HANDLED_PENDING };
typedef enum handled (*handler_fn)(kernel *k, void *sock, wire_msg *req);
/* The handler for a msg_type on a channel (PORT_SHELL or PORT_CONTROL), or NULL. */
handler_fn shell_handler(const char *msg_type, enum conn_port channel);
/* Checks the types of a request's content fields. Returns 0, or -1 with why. */
int shell_check_content(const char *msg_type, enum conn_port channel, const json_t *content,
                        char *why, size_t len);

/* execute.c: the running cell's events */
void cell_on_worker_frame(kernel *k, json_t *frame);
void cell_on_worker_exit(kernel *k, const char *how);
void cell_interrupt(kernel *k, const char *why);
/* Stops the running command: ename is KeyboardInterrupt or TimeoutError. */
void cell_stop(kernel *k, const char *ename, const char *why);
/* The next time cell_tick must run (monotonic ms), or 0 for none. */
double cell_deadline_ms(const kernel *k);
/* Acts on expired deadlines: the per-cell limit, and the grace of a stop. */
void cell_tick(kernel *k);
/* At shutdown: drops the running cell, if any, without a reply. */
void cell_discard(kernel *k);


/* history.c */
struct history *history_new(void);
void history_free(struct history *h);
void history_add(struct history *h, int line, const char *input);
void history_set_output(struct history *h, int line, const char *output);

#endif
