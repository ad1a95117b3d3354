/* cpu_cancel.c — the cancellation flag long CPU loops poll (cpu_common.h).
 *
 * A lock-free atomic rather than a volatile sig_atomic_t: a signal handler
 * sets it, and host threads of the pool may read it while it changes, which
 * only an atomic makes well-defined. Relaxed order is enough: the flag
 * carries no other data. */
#include <assert.h>
#include <stdatomic.h>

#include "cpu_common.h"

static_assert(ATOMIC_INT_LOCK_FREE == 2, "the cancel flag is set from a signal handler: it must be lock-free");

static atomic_int cancel_flag;

bool cl_cancel_requested(void)
{
    return atomic_load_explicit(&cancel_flag, memory_order_relaxed) != 0;
}

void cl_cancel_request(void)
{
    atomic_store_explicit(&cancel_flag, 1, memory_order_relaxed);
}

void cl_cancel_reset(void)
{
    atomic_store_explicit(&cancel_flag, 0, memory_order_relaxed);
}
