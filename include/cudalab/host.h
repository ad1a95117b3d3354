/* host.h — what the CPU backend (linked into the binary) offers the rest of
 * the process: how many host threads its pool uses, and the cancellation flag
 * its long loops poll. Implemented in cpu/common/; the kernel's framework
 * reads the first for its host-work estimates and sets the second from the
 * worker's SIGINT handler (magic_cancel).
 */
#ifndef CUDALAB_HOST_H
#define CUDALAB_HOST_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- host threads (cpu/common/cpu_pool.c) ---- */

/* The most host threads one parallel-for starts. */
#define CL_CPU_MAX_THREADS 64

/* Host threads a launch uses: online CPUs, 1 to CL_CPU_MAX_THREADS. */
int cl_cpu_threads(void);

/* ---- cancellation (cpu/common/cpu_cancel.c) ---- */

/* One process-wide flag: the worker's SIGINT handler (through magic_cancel)
 * sets it, a long loop polls it and stops early, the worker clears it before
 * each command. Polling is safe from any host thread. */
bool cl_cancel_requested(void);
void cl_cancel_request(void);       /* async-signal-safe */
void cl_cancel_reset(void);

/* ---- reps done (cpu/common/cpu_progress.c) ---- */

/* A backend calls cl_rep_done() after each timed rep it finishes (the CPU analogues directly, the
 * CUDA backend through the hook the worker gives it: cl_backend.set_rep_hook), so that while one
 * long run goes on the worker can say how far it is and about how long is left. cl_reps_done():
 * the reps finished since the process started. Both are safe from any thread. */
void cl_rep_done(void);
unsigned long cl_reps_done(void);

#ifdef __cplusplus
}
#endif
#endif
