/* worker.h — the device worker: a child process that runs commands.
 *
 * The kernel process never touches CUDA. Every MAGIC_WORKER command runs in a
 * child started as `cudalab --worker FD` (fork + exec, so it begins clean:
 * no inherited ZeroMQ threads). It talks over a socketpair in frames
 * (frame.h). When it crashes, hangs or must be interrupted the kernel kills it
 * and starts a fresh one; a bad launch never poisons later cells.
 */
#ifndef CUDALAB_WORKER_H
#define CUDALAB_WORKER_H

#include <stdbool.h>
#include <sys/types.h>

#include "lang/lang.h"
#include "magic/magic.h"
#include "exec/frame.h"

typedef struct worker {
    pid_t pid;                  /* 0 when not running */
    int fd;                     /* kernel's end of the socketpair, -1 when not running */
    frame_reader rd;
    char *out;                  /* the command being written to it, never blocking */
    size_t out_len, out_off;
} worker;

void worker_init(worker *w);
/* Starts the worker from the executable at exe. Returns 0 or -1 (logged). */
int worker_start(worker *w, const char *exe);
/* Sends one command, starting the worker first if needed. The kernel never
 * blocks on the worker (a stopped worker and a large cell must not wedge it):
 * what the pipe does not take now is written by worker_flush when the loop
 * finds it writable. Returns 0 or -1. */
int worker_run(worker *w, const char *exe, const command *cmd, const json_t *kernels);
/* Writes more of the pending command. Returns 0 when all is written, 1 when
 * the pipe is full again, -1 when the worker is gone. */
int worker_flush(worker *w);
/* Is part of a command still waiting to be written? */
bool worker_writing(const worker *w);
/* Kills the worker (SIGKILL) and reaps it. *status gets the wait status when non-NULL. */
void worker_kill(worker *w, int *status);
/* Reaps a worker whose end of the pipe closed; describes how it ended into buf. True when that
 * was abnormal (a signal, a non-zero status, or it had to be killed), false for a clean exit. */
bool worker_reap(worker *w, char *buf, size_t len);

/* The worker process's main loop (`cudalab --worker FD`). Returns the exit code. */
int worker_main(int fd);

/* Runs one command in this process with the given output sink: used by the
 * worker and by command-line mode. given: its params as parsed; on the CPU
 * backend the flags named in cpu_defaulted (command.cpu_defaulted, may be
 * NULL) take their CPU defaults. Returns 0, or -1 with ctx's error set. */
int worker_exec(const magic_spec *m, const json_t *given, const json_t *cpu_defaulted, const char *body,
                magic_ctx *ctx);

#endif
