/* admission.h — how the kernels of one host share its GPUs (worker side): at
 * most N live CUDA contexts per GPU whatever the number of kernels, one queue
 * per GPU served fairly, and timed runs that take turns.
 *
 * Everything is a file in the admission directory, locked with flock, so that
 * nothing has to be started by hand and nothing outlives its process (a lock
 * goes with its holder's file descriptors):
 *   KEY.slotI      a CUDA context on the GPU KEY: a worker holds one of the N
 *                  exclusively for its life (admission_take);
 *   KEY.capacity   N, as the directory's owner recorded it (the first worker
 *                  to open the GPU, from its memory; or an administrator);
 *   KEY.turn       the timed-run turn: held while one timed run runs (admission_turn);
 *   KEY.Q.PLACE.BYTES.UID.PIDNS.PID.SALT  a ticket: one waiter for a context
 *                  (Q = c), a turn (Q = t) or device memory (Q = m, BYTES),
 *                  locked by its owner while it waits. PLACE is the time it
 *                  joined plus the GPU time its kernel had in the last minute
 *                  (decayed), so a kernel that has just had the GPU queues
 *                  behind one that has not, and nobody waits for ever (round
 *                  robin by GPU time). A waiter only takes what it waits for
 *                  when no live ticket is ahead of its own; a ticket whose
 *                  owner died is unlocked, and the next waiter that looks
 *                  removes it.
 * A GPU's KEY is the same in every process and container of the host (its PCI
 * bus id, whatever CUDA_VISIBLE_DEVICES renumbered), so containers that mount
 * one directory share one set of slots and queues.
 *
 * The directory is $CUDALAB_ADMISSION_DIR, else $XDG_RUNTIME_DIR/cudalab-admission,
 * else /tmp/cudalab-admission-UID: one user's kernels share it. Kernels of
 * several users or containers on one GPU host share a directory the host
 * mounts into each, named by CUDALAB_ADMISSION_DIR; each still runs its own
 * workers. N is $CUDALAB_GPU_CONTEXTS, else KEY.capacity, else one context
 * per ADMISSION_GIB_PER_CONTEXT of the GPU's memory, else
 * ADMISSION_DEFAULT_SLOTS (at most ADMISSION_MAX_SLOTS). The CPU backend's
 * "device" has no slots (no context to bound), but its timed runs take turns
 * the same way, so a CPU lab server is not oversubscribed by timings either.
 *
 * Admission trusts nothing it finds there (other users, or other programs of
 * the user, may have put anything in it):
 *   - the directory is the user's own with mode 0700, or root's with mode 1777
 *     (sticky: shared by several users, each one's files their own); anything
 *     else, or a symbolic link, is refused with an error naming it and what
 *     is wrong (a command that needs a slot or a timed turn fails with
 *     AdmissionError);
 *   - no link is followed: every file is opened O_NOFOLLOW through the
 *     directory's descriptor, and used only when it is a regular file with one
 *     name (in the user's own directory, the user's); only files just made
 *     here are chmod'ed (readable by the other users of a shared directory,
 *     who lock them too);
 *   - KEY.capacity counts only when the directory's owner wrote it and it is
 *     not group- or world-writable;
 *   - a ticket counts only when its file belongs to the user its name claims
 *     and its process is alive (where its pid namespace is this one), and
 *     while it is locked;
 *   - every wait (a context, a turn, device memory) ends after
 *     CUDALAB_GPU_WAIT seconds with a GPUBusyError.
 */
#ifndef CUDALAB_EXEC_ADMISSION_H
#define CUDALAB_EXEC_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define ADMISSION_DIR_ENV "CUDALAB_ADMISSION_DIR"
#define ADMISSION_WAIT_ENV "CUDALAB_GPU_WAIT"   /* seconds any wait of admission's lasts at most */
#define ADMISSION_WAIT_DEFAULT_S 120.0
#define ADMISSION_DEFAULT_SLOTS 32
#define ADMISSION_MAX_SLOTS 256             /* whatever CUDALAB_GPU_CONTEXTS or KEY.capacity says */
#define ADMISSION_GIB_PER_CONTEXT 2.5     /* a context (~0.5 GiB) and a lecture command's data */
#define ADMISSION_MAX_GPUS 16
#define ADMISSION_KEY_LEN 48

/* One GPU (or the CPU) as admission knows it. */
typedef struct admission_gpu {
    char key[ADMISSION_KEY_LEN];      /* file-name safe, the same host-wide: "pci-0000_3b_00_0", "cpu" */
    uint64_t total_mem;               /* bytes, for the context count the first worker records; 0: unknown */
} admission_gpu;

/* The GPU key of a PCI bus id ("0000:3B:00.0" → "pci-0000_3b_00_0"). */
void admission_key(const char *pci_bus_id, char *key, size_t len);

/* How long a wait of admission's may last: CUDALAB_GPU_WAIT seconds (ADMISSION_WAIT_DEFAULT_S), in ms. */
double admission_wait_limit_ms(void);

/* Takes a context slot on one of the n GPUs without waiting: on the one with
 * the most free slots among those where no live ticket is ahead of this
 * worker's own (none at all, for a worker that has not queued). 0: held, with
 * its index in *which; 1: none now, the reason in why; -1: the directory
 * cannot be used or trusted (why names it and says what is wrong). */
int admission_take(const admission_gpu *gpus, int n, int *which, char *why, size_t len);
bool admission_held(void);
void admission_release(void);

/* Waiting for a context: tickets on each of the n GPUs (join), how many
 * waiters are ahead on the GPU where the fewest are (ahead; -1 when not
 * queued), and the tickets gone (leave: taken, given up or interrupted). */
void admission_queue_join(const admission_gpu *gpus, int n);
int admission_queue_ahead(void);
void admission_queue_leave(void);

/* Whether a worker waits for a context on the GPU this worker holds one of
 * (an idle holder then lets it go: worker_main). */
bool admission_wanted(void);

/* The timed-run turn on gpu (the GPU held, or the CPU): take it (take) in
 * queue order, and give it back (!take). While it waits, show(ahead, waited
 * ms, arg) is called when the number ahead changes and every second; it polls
 * magic_cancelled(). *waited_ms: the wait. 0, or -1 with err set:
 * KeyboardInterrupt (interrupted), GPUBusyError (no turn in limit_ms),
 * AdmissionError (the directory or the turn's file cannot be trusted). */
typedef void admission_show_fn(int ahead, double waited_ms, void *arg);
int admission_turn(const admission_gpu *gpu, bool take, double limit_ms, double *waited_ms, admission_show_fn *show,
                   void *arg, error_info *err);

/* Device memory for this worker's command on gpu: ADMISSION_MEM_SHARE of the
 * GPU is shared among the commands running on it, less a context per slot
 * held (ADMISSION_CONTEXT_BYTES), in queue order (a small request never
 * passes a large one waiting ahead of it). Held until admission_unreserve
 * (the command's end) or the process's death; a later request of the same
 * command that is no larger is covered. CUDALAB_GPU_MEMORY_GIB, when set, is
 * the budget instead (an administrator's cap on what cudalab's commands
 * hold). 0: reserved; 1: more than the GPU could ever give one command
 * (*budget: the most); 2: nothing to budget (the GPU's memory is unknown, or
 * no admission directory); -1 with err set: interrupted (KeyboardInterrupt)
 * or no room in limit_ms (GPUBusyError). While waiting, show is called as for
 * admission_turn. */
#define ADMISSION_MEM_SHARE 0.9
#define ADMISSION_CONTEXT_BYTES (0.6 * 1073741824.0)
int admission_reserve(const admission_gpu *gpu, double bytes, double limit_ms, double *budget,
                      admission_show_fn *show, void *arg, error_info *err);
void admission_unreserve(void);

/* A GPU's sharing now, for %device: its slots and how many are held, and the
 * waiters for a context and for a turn; mine: this worker holds a slot there. */
typedef struct admission_census {
    int slots, held, waiting_context, waiting_turn;
    bool mine;
} admission_census;
int admission_count(const admission_gpu *gpu, admission_census *out);

/* The first worker on a GPU records N from its memory (only the directory's
 * owner: in a shared directory, root), so that a %device of a worker that
 * knows no memory shows it too. */
void admission_set_capacity(const admission_gpu *gpu);

#endif
