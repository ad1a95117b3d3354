/* admission_memory.c — device memory shared by the kernels on one GPU, and
 * %device's census of a GPU's slots and queues (see admission.h).
 *
 * A command that allocates much reserves its bytes first: a memory ticket
 * (queue 'm') that names them, served in the same order as the other queues
 * (admission.c makes and scans the tickets), until what the tickets ahead ask
 * for and its own fit the GPU's budget.
 */
#include "exec/admission.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "magic/magic.h"
#include "exec/admission_dir.h"
#include "exec/admission_internal.h"

/* ---- device memory ---- */

static admission_ticket reservation = { -1, "" };
static double reserved_bytes;

/* What the commands on gpu may hold at once: ADMISSION_MEM_SHARE of it, less
 * a context for each slot held (alone: for this worker's only). 0: unknown. */
static double memory_budget(const admission_gpu *gpu, bool alone)
{
    const char *cap = getenv("CUDALAB_GPU_MEMORY_GIB");
    if (cap && atof(cap) > 0)
        return atof(cap) * 1073741824.0;
    if (gpu->total_mem == 0)
        return 0;
    int held = 1;
    admission_dir d;
    char why[PATH_MAX + 200];
    if (!alone && admission_dir_open(&d, why, sizeof why) == 0) {
        held = admission_slots_held(&d, gpu->key, admission_slots(&d, gpu));
        admission_dir_close(&d);
    }
    return (double)gpu->total_mem * ADMISSION_MEM_SHARE - (held < 1 ? 1 : held) * ADMISSION_CONTEXT_BYTES;
}

int admission_reserve(const admission_gpu *gpu, double bytes, double limit_ms, double *budget,
                      admission_show_fn *show, void *arg, error_info *err)
{
    if (reservation.fd >= 0 && reserved_bytes >= bytes)
        return 0;                   /* a command's later, smaller point: already covered */
    admission_unreserve();
    double alone = memory_budget(gpu, true), t0 = monotonic_ms(), shown_at = 0;
    if (alone <= 0)
        return 2;                   /* unknown memory: nothing to budget */
    if (bytes > alone) {
        *budget = alone;
        return 1;
    }
    if (admission_ticket_make(gpu->key, 'm', (unsigned long long)bytes, &reservation) != 0)
        return 2;                   /* no queue: allocate as without admission */
    for (int shown = -1;;) {
        double ahead_bytes = 0, room = memory_budget(gpu, false);
        admission_dir d;
        char why[PATH_MAX + 200];
        int ahead = -1;
        if (admission_dir_open(&d, why, sizeof why) == 0) {
            ahead = admission_scan_ahead(&d, gpu->key, 'm', reservation.name, &ahead_bytes);
            admission_dir_close(&d);
        }
        if (ahead < 0 || ahead_bytes + bytes <= room)
            break;
        double now = monotonic_ms();
        if (magic_cancelled() || now - t0 >= limit_ms) {
            admission_unreserve();
            if (magic_cancelled())
                return error_set(err, "KeyboardInterrupt", "interrupted while waiting for device memory");
            return admission_waited_too_long(err, gpu, limit_ms, ahead, "device memory beside other kernels' commands");
        }
        if (show && (ahead != shown || now - shown_at >= 1000)) {
            show(ahead, now - t0, arg);
            shown = ahead, shown_at = now;
        }
        admission_nap_ms(20);
    }
    reserved_bytes = bytes;
    return 0;
}

void admission_unreserve(void)
{
    if (reservation.fd >= 0)
        admission_ticket_drop(&reservation);
    reserved_bytes = 0;
}

/* ---- %device ---- */

int admission_count(const admission_gpu *gpu, admission_census *out)
{
    admission_dir d;
    char why[PATH_MAX + 200];
    memset(out, 0, sizeof *out);
    if (admission_dir_open(&d, why, sizeof why) != 0)
        return -1;
    out->slots = admission_slots(&d, gpu);
    out->held = admission_slots_held(&d, gpu->key, out->slots);
    out->waiting_context = admission_scan_ahead(&d, gpu->key, 'c', NULL, NULL);
    out->waiting_turn = admission_scan_ahead(&d, gpu->key, 't', NULL, NULL);
    out->mine = admission_holds(gpu->key);
    admission_dir_close(&d);
    return out->waiting_context < 0 || out->waiting_turn < 0 ? -1 : 0;
}
