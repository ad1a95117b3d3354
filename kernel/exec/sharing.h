/* sharing.h — a command's side of sharing the host's GPUs (worker side):
 * waiting for a GPU in its queue, taking timed-run turns, and saying both
 * live on the cell; the census %device shows. The files and their rules
 * are admission.h's; this is what a command and its user see of them.
 */
#ifndef CUDALAB_EXEC_SHARING_H
#define CUDALAB_EXEC_SHARING_H

#include <stdbool.h>
#include <stddef.h>

#include "magic/magic.h"

/* The GPU is there but busy: waits in its queue, saying so live on the
 * cell ("waiting for the GPU: 3 commands ahead (…)"), for at most
 * CUDALAB_GPU_WAIT seconds (120); an interrupt ends the wait and leaves the
 * queue; an admission directory that cannot be used or trusted ends it at
 * once (AdmissionError). 0 with ctx->backend set and in *startup_ms what opening the GPU
 * took at the end; or -1 with the error in ctx. note: the reason it is busy
 * (backend_select's), updated. */
int sharing_wait_for_gpu(magic_ctx *ctx, char *note, size_t len, double *startup_ms);

/* Before a command runs: its timed runs take turns on the GPU this worker
 * holds a slot of (else on the host's CPU; want_cpu: --backend cpu), unless
 * shared_timing; sets ctx->turn, ->shared and ->sharing. */
void sharing_begin(magic_ctx *ctx, bool want_cpu, bool shared_timing);

/* After a command: the device memory it reserved (magic_memory_fit) goes back. */
void sharing_end(void);

#endif
