/* bandwidth.c — the CPU backend's measured memory bandwidth, what the CPU
 * analogues of memory-bound magics (%reduce's pct_of_bandwidth) compare to.
 *
 * memcpy of a buffer twice the host's largest cache (at least 32 MiB: source
 * and destination together are four times what a cache could serve), cut into
 * contiguous slices over the same host threads the analogues use (one thread
 * alone cannot saturate a socket's memory), best of a few reps after one that
 * faults the pages in. GB/s counts the bytes read and the bytes written (1e9
 * B/s). Measured once per process, and at a device worker's start
 * (kernel/exec/worker.c), while the user reads: a fixed 256 MiB took a quarter
 * of a second of every first cell.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu_common.h"
#include "cudalab/backend.h"

#define COPY_MIN_BYTES ((size_t)32 << 20)
#define COPY_REPS 3

/* Defined here, called through the backend table (cpu/device_cpu.c). */
int cl_cpu_copy_bandwidth(double *gbs, char *err);

typedef struct copy_job {
    unsigned char *dst;
    const unsigned char *src;
} copy_job;

static void copy_range(uint64_t first, uint64_t last, void *ctx)
{
    const copy_job *j = ctx;
    /* ranges are in 4 KiB pages, so slices stay page-aligned */
    memcpy(j->dst + first * 4096, j->src + first * 4096, (size_t)(last - first) * 4096);
}

int cl_cpu_copy_bandwidth(double *gbs, char *err)
{
    static double cached;
    if (cached > 0) {
        *gbs = cached;
        return 0;
    }
    size_t bytes = 2 * cl_host_cache_max() > COPY_MIN_BYTES ? 2 * cl_host_cache_max() : COPY_MIN_BYTES;
    unsigned char *src = malloc(bytes), *dst = malloc(bytes);
    if (!src || !dst) {
        free(src);
        free(dst);
        if (err)
            snprintf(err, CL_ERR_LEN, "copy bandwidth: out of host memory for 2 x %zu MiB", bytes >> 20);
        return -1;
    }
    memset(src, 1, bytes);
    copy_job j = {dst, src};
    int threads = cl_cpu_threads();
    double best = 0;
    for (int r = 0; r < COPY_REPS + 1; r++) {
        double t0 = cl_now_ms();
        cl_parallel_ranges(bytes / 4096, threads, copy_range, &j);
        double t = (cl_now_ms() - t0) / 1e3;
        if (r > 0 && t > 0 && (best == 0 || t < best))
            best = t;
    }
    /* keep the copy observable so it cannot be optimised away */
    volatile unsigned char sink = dst[bytes - 1];
    (void)sink;
    free(src);
    free(dst);
    if (best <= 0) {
        if (err)
            snprintf(err, CL_ERR_LEN, "copy bandwidth: the copy took no measurable time");
        return -1;
    }
    cached = 2.0 * (double)bytes / best / 1e9;
    *gbs = cached;
    return 0;
}
