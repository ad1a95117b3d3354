/* kernel.h — the kernel process's server: sockets, signing, the heartbeat
 * thread, the device worker's pipe and the event loop that serves them.
 *
 * The loop (loop.h) watches control, shell (only while no cell runs), the
 * iopub XPUB (for subscriptions), stdin, the worker's pipe and a self-pipe
 * that turns signals into events. Requests go to the shell (shell/shell.h),
 * which answers them through the shell_host this server implements. No
 * handler blocks: long work is the worker's, and writes to it are buffered.
 * Heartbeat is echoed by a thread of its own (heartbeat.h), so nothing the
 * loop does can stall it.
 */
#ifndef CUDALAB_KERNEL_H
#define CUDALAB_KERNEL_H

#include <stdbool.h>
#include <stddef.h>

#include "exec/worker.h"
#include "proto/conn.h"
#include "proto/replay.h"
#include "proto/sign.h"
#include "shell/shell.h"

struct heartbeat;
struct loop;

typedef struct kernel {
    void *zctx;
    void *sock[PORT_COUNT];         /* indexed by enum conn_port; NULL for PORT_HB, the heartbeat thread's */
    struct heartbeat *hb;
    signer *sign;
    replay_cache *replay;
    char session[37];
    char exe[4096];                 /* our own executable, for starting workers */
    shell_host host;                /* what the shell calls: kernel.c's functions, with this kernel */
    shell_session *shell;           /* the session's state and handlers */
    worker worker;
    struct loop *loop;
    int shell_source, worker_source, shell_timer;   /* ids in loop */
    int sigpipe[2];
    bool quit;
    unsigned long dropped;          /* messages refused by wire_decode or the shell */
    double welcome_tokens, welcome_at;  /* iopub_welcome's rate limit (kernel.c) */
    unsigned long welcomes_refused;
    size_t max_message;             /* bytes of one request (CUDALAB_MAX_MESSAGE) */
    int respawns;                   /* workers started in a row without one finishing a command */
    /* who started us: the kernel leaves when its parent is gone (kernel.c, watch_parent) */
    int parent, jpy_parent;         /* getppid() at start; JPY_PARENT_PID (its launcher), or 0 */
    int parent_timer;
} kernel;

/* Binds every socket of the connection file. Returns 0 or -1 (logged). */
int kernel_open(kernel *k, const conn_info *c);
/* Runs until shutdown. Returns the process exit code. */
int kernel_loop(kernel *k);
void kernel_close(kernel *k);

#endif
