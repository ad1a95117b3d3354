/* admission.h — how the kernels of one host share its GPUs (worker side): at
 * most N live CUDA contexts per GPU whatever the number of kernels, one queue
 * per GPU served fairly, and timed runs that take turns.
 *
 * Everything is a file in the admission directory, locked with flock, so that
 * nothing has to be started by hand and nothing outlives its process (a lock
 * goes with its holder's file descriptors):
 *   KEY.slotI      a CUDA context on the GPU KEY: a worker holds one of the N
 *                  exclusively for its life (admission_take);
 *   KEY.capacity   N as the first worker derived it from the GPU's memory;
 *   KEY.turn       the timed-run turn: held while one timed run runs (admission_turn);
 *   queue/KEY.Q.V.ID  a ticket: one waiter for a context (Q = c) or a turn
 *                  (Q = t), locked by its owner while it waits. V is its place:
 *                  the time it joined plus the GPU time its kernel had in the
 *                  last minute (decayed), so a kernel that has just had the GPU
 *                  queues behind one that has not, and nobody waits for ever
 *                  (round robin by GPU time). A waiter only takes what it waits
 *                  for when no live ticket is ahead of its own; a ticket whose
 *                  owner died is unlocked, and the next waiter that looks removes it.
 * A GPU's KEY is the same in every process and container of the host (its PCI
 * bus id, whatever CUDA_VISIBLE_DEVICES renumbered), so containers that mount
 * one directory share one set of slots and queues.
 *
 * The directory is $CUDALAB_ADMISSION_DIR, else $XDG_RUNTIME_DIR/cudalab-admission,
 * else /tmp/cudalab-admission-UID: one user's kernels share it. Kernels of
 * several users or containers on one GPU host share a directory the host
 * mounts into each (mode 1777), named by CUDALAB_ADMISSION_DIR; each still
 * runs its own workers. N is $CUDALAB_GPU_CONTEXTS, else what the first worker
 * to open the GPU recorded from its memory (ADMISSION_GIB_PER_CONTEXT a
 * context), else ADMISSION_DEFAULT_SLOTS. The CPU backend's "device" has no
 * slots (no context to bound), but its timed runs take turns the same way, so
 * a CPU lab server is not oversubscribed by timings either.
 */
#ifndef CUDALAB_EXEC_ADMISSION_H
#define CUDALAB_EXEC_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADMISSION_DEFAULT_SLOTS 32
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

/* Takes a context slot on one of the n GPUs without waiting: on the one with
 * the most free slots among those where no live ticket is ahead of this
 * worker's own (none at all, for a worker that has not queued). 0: held, with
 * its index in *which; 1: none now, the reason in why; -1: the directory
 * cannot be used (why says so; the caller goes on without admission). */
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
 * magic_cancelled(). *waited_ms: the wait. 0, or -1 when interrupted. */
typedef void admission_show_fn(int ahead, double waited_ms, void *arg);
int admission_turn(const admission_gpu *gpu, bool take, double *waited_ms, admission_show_fn *show, void *arg);

/* Device memory for this worker's command on gpu: ADMISSION_MEM_SHARE of the
 * GPU is shared among the commands running on it, less a context per slot
 * held (ADMISSION_CONTEXT_BYTES), in queue order (a small request never
 * passes a large one waiting ahead of it). Held until admission_unreserve
 * (the command's end) or the process's death; a later request of the same
 * command that is no larger is covered. CUDALAB_GPU_MEMORY_GIB, when set, is
 * the budget instead (an administrator's cap on what cudalab's commands
 * hold). 0: reserved; 1: more than the GPU could ever give one command
 * (*budget: the most); 2: nothing to budget (the GPU's memory is unknown, or
 * no admission directory); -1: interrupted. While waiting, show is called as
 * for admission_turn. */
#define ADMISSION_MEM_SHARE 0.9
#define ADMISSION_CONTEXT_BYTES (0.6 * 1073741824.0)
int admission_reserve(const admission_gpu *gpu, double bytes, double *budget, admission_show_fn *show, void *arg);
void admission_unreserve(void);

/* A GPU's sharing now, for %device: its slots and how many are held, and the
 * waiters for a context and for a turn; mine: this worker holds a slot there. */
typedef struct admission_census {
    int slots, held, waiting_context, waiting_turn;
    bool mine;
} admission_census;
int admission_count(const admission_gpu *gpu, admission_census *out);

/* The first worker on a GPU records its memory, so that the next derive N from it. */
void admission_set_capacity(const admission_gpu *gpu);

#endif
