/* cpu_progress.c — the count of timed reps finished (host.h): bumped by the backend that runs them,
 * read by the worker's progress line from another thread. */
#include <stdatomic.h>

#include "cudalab/host.h"

static atomic_ulong reps_done;

void cl_rep_done(void)
{
    atomic_fetch_add_explicit(&reps_done, 1, memory_order_relaxed);
}

unsigned long cl_reps_done(void)
{
    return atomic_load_explicit(&reps_done, memory_order_relaxed);
}
