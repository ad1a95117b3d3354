/* bandwidth.c — the CPU backend's measured memory bandwidth, what the CPU
 * analogues of memory-bound magics (%reduce's pct_of_bandwidth) compare to.
 *
 * memcpy of a buffer twice the host's largest cache (at least 32 MiB: source
 * and destination together are four times what a cache could serve), cut into
 * contiguous slices over the same host threads the analogues use (one thread
 * alone cannot saturate a socket's memory), best of a few reps after one that
 * faults the pages in. GB/s counts the bytes read and the bytes written (1e9
 * B/s). Measured once per process: in a CPU worker, before its first command
 * that times runs (kernel/exec/worker.c), elsewhere by the first
 * result that needs it (a sweep's device document, a memory-bound magic's % of
 * bandwidth); never at a worker's start: faulting 2 x L3 (1.2 GB on a 300 MiB
 * L3) costs a second or two, which every kernel start paid, most of them
 * never needing the figure.
 *
 * The buffers are mapped with MAP_POPULATE: the kernel fills in their pages
 * in one call instead of one fault per 4 KiB page (300,000 of them), which
 * halves the measure's cost; the pages are the same 4 KiB pages the faults
 * would give, and the timed reps still come after the same warm-up rep.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

/* An anonymous mapping of `bytes`, its pages in place (NULL if refused). */
static unsigned char *populated(size_t bytes)
{
#ifdef MAP_POPULATE
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE;
#else
    int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#endif
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void unmap(unsigned char *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}

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
    unsigned char *src = populated(bytes), *dst = populated(bytes);
    if (!src || !dst) {
        unmap(src, bytes);
        unmap(dst, bytes);
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
    unmap(src, bytes);
    unmap(dst, bytes);
    if (best <= 0) {
        if (err)
            snprintf(err, CL_ERR_LEN, "copy bandwidth: the copy took no measurable time");
        return -1;
    }
    cached = 2.0 * (double)bytes / best / 1e9;
    *gbs = cached;
    return 0;
}
