/* clock.h — the kernel process's one clock: monotonic milliseconds from an
 * arbitrary origin (only differences mean anything), for the event loop's
 * timers, cell deadlines and sweep progress. (The CPU backend times its runs
 * with cpu/common's cl_now_ms, on its side of the backend boundary.) */
#ifndef CUDALAB_BASE_CLOCK_H
#define CUDALAB_BASE_CLOCK_H

#include <time.h>

static inline double monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#endif
