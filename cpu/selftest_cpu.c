/* selftest_cpu.c — the CPU side of %selftest (test-only): a loop that stands in
 * for a long kernel and stops when the command is cancelled. It sleeps in
 * small steps rather than burning a core: what matters is that it runs long
 * and stops when asked. There is no device to fault on the CPU. */
#include <stdio.h>
#include <time.h>

#include "common/cpu_common.h"
#include "cudalab/backend.h"

static int cpu_spin(double ms, char *err)
{
    double end = cl_now_ms() + ms;
    while (cl_now_ms() < end) {
        nanosleep(&(struct timespec){ 0, 1000000 }, NULL);     /* 1 ms steps, polling */
        if (cl_cancel_requested()) {
            snprintf(err, CL_ERR_LEN, "cancelled");
            return -1;
        }
    }
    return 0;
}

static int cpu_fault(char *err)
{
    snprintf(err, CL_ERR_LEN, "the CPU backend has no device to fault");
    return -1;
}

const cl_selftest_ops cl_cpu_selftest_ops = { cpu_spin, cpu_fault, NULL };    /* the CPU's clock is the host's: no hold */
