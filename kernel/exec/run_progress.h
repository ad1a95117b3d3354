/* run_progress.h — the line a long command shows while it runs, from the worker: how far it is (rep
 * k of n, point p of m) and about how long is left, so that a single long %matmul does not sit silent
 * until it ends. */
#ifndef CUDALAB_RUN_PROGRESS_H
#define CUDALAB_RUN_PROGRESS_H

#include "magic/magic.h"

/* After RUN_PROGRESS_AFTER_MS the command shows the line, updated every RUN_PROGRESS_EVERY_MS; when
 * it ends the line says how long it ran ("%matmul ran for 3.5 s"): never emptied, which a saved
 * notebook would keep as an empty output. */
#define RUN_PROGRESS_AFTER_MS 1000
#define RUN_PROGRESS_EVERY_MS 1000

/* Starts the line's thread for the command `magic` that ctx runs, and sets ctx->run_point (which the
 * sweep calls before each point). Frames it sends go through ctx->out, whose writes must be safe
 * from another thread. */
void run_progress_begin(magic_ctx *ctx, const char *magic);
/* Stops the thread and ends the line, if it was shown, with how long the command ran. */
void run_progress_end(void);
/* A wait for the GPU, its memory or a timed turn begins (true) or ends (false): its own line says so
 * (sharing.c), this one keeps quiet meanwhile, and the point's time per rep leaves the wait out. */
void run_progress_wait(bool waiting);

/* reps for --reps auto: a count not known in advance */
#define RUN_PROGRESS_AUTO (-1L)

/* The line's text for a command `magic` at `elapsed_ms`, at point `point` (from 0) of `points` with
 * `reps` timed reps (RUN_PROGRESS_AUTO: until settled; 0: none) and `warmup` warm-up reps each, `done` reps of this point finished, the last at
 * `rep_ms` after the point began (whose warm-up and setup took part of it). Exposed for the tests. */
void run_progress_text(char *buf, size_t len, const char *magic, double elapsed_ms, size_t point, size_t points,
                       long reps, long warmup, unsigned long done, double rep_ms);

#endif
