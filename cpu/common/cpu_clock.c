/* cpu_clock.c — the CPU backend's one clock: every CPU analogue times its
 * reps with it, so the backends' numbers all mean monotonic wall time. */
#include <time.h>

#include "cpu_common.h"

double cl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
