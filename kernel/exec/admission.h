/* admission.h — at most N live CUDA contexts per GPU on one host, whatever the
 * number of kernels (worker side).
 *
 * A device worker takes one of its GPU's N slots before it creates a CUDA
 * context: an exclusive flock on a slot file in the admission directory, held
 * for the worker's life. Nothing has to be started by hand, and nothing is
 * left behind: a worker that exits or dies drops its lock with its file
 * descriptor. A worker that finds every slot taken waits (worker_exec says so
 * and can be interrupted) and meanwhile holds a shared lock on the GPU's
 * waiting file, which is how an idle worker learns that its slot is wanted
 * (worker_main lets it go after CUDALAB_GPU_IDLE_S seconds without a command).
 *
 * The directory is $CUDALAB_ADMISSION_DIR, else $XDG_RUNTIME_DIR/cudalab-admission,
 * else /tmp/cudalab-admission-UID: one user's kernels share it. Kernels of
 * several users or containers on one GPU host share a directory the host
 * mounts into each (mode 1777), named by CUDALAB_ADMISSION_DIR; each still
 * runs its own workers. N is $CUDALAB_GPU_CONTEXTS, else what the first worker
 * to open the GPU wrote beside the slots from its memory (ADMISSION_GIB_PER_CONTEXT
 * a context), else ADMISSION_DEFAULT_SLOTS.
 */
#ifndef CUDALAB_EXEC_ADMISSION_H
#define CUDALAB_EXEC_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADMISSION_DEFAULT_SLOTS 32
#define ADMISSION_GIB_PER_CONTEXT 2.5     /* a context (~0.5 GiB) and a lecture command's data */

/* Takes a slot of GPU gpu without waiting. 0: held (or already held); 1: all
 * taken, or (polite) someone is already waiting for one, with the reason in why;
 * -1: the directory cannot be used (why says so; the caller goes on without). */
int admission_take(int gpu, bool polite, char *why, size_t len);
bool admission_held(void);
void admission_release(void);
/* While waiting for a slot: announce it (true) and stop (false). */
void admission_waiting(int gpu, bool on);
/* Whether any worker waits for a slot of the GPU this worker holds one of. */
bool admission_wanted(void);
/* Fair timing: the GPU's timing file locked exclusively (take), so that no
 * other kernel's timed section runs meanwhile, and unlocked (!take). Waits,
 * polling magic_cancelled(); *waited_ms the wait. 0, or -1 when interrupted. */
int admission_alone(int gpu, bool take, double *waited_ms);

/* The first worker on a GPU records its memory, so that the next derive N from it. */
void admission_set_capacity(int gpu, uint64_t total_mem);

#endif
