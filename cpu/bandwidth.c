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
 *
 * The figure is the host's, not the process's: it is kept in
 * $XDG_CACHE_HOME/cudalab/host-bandwidth (else ~/.cache/...) under a key of
 * this boot of the host (/proc/sys/kernel/random/boot_id), the buffer's size
 * and the thread count, and a process that finds its key there measures
 * nothing. Measuring faults in four times the largest cache (1.2 GB on a host
 * with a 300 MB L3: one to two seconds of a shared CPU) at every kernel's
 * start, which a lab server of many kernels, or a test suite of a thousand,
 * paid each time for the same number.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The file that keeps the figure (PATH_MAX-sized buf); -1 without XDG_CACHE_HOME or HOME. */
static int figure_path(char *buf, size_t len, bool make_dir)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && *xdg)
        n = snprintf(buf, len, "%s/cudalab", xdg);
    else if (home && *home)
        n = snprintf(buf, len, "%s/.cache/cudalab", home);
    else
        return -1;
    if (n <= 0 || (size_t)n + sizeof "/host-bandwidth" > len)
        return -1;
    if (make_dir) {
        char *slash = strrchr(buf, '/');        /* .../.cache, then .../.cache/cudalab */
        *slash = '\0';
        (void)mkdir(buf, 0700);
        *slash = '/';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST)
            return -1;
    }
    strcat(buf, "/host-bandwidth");
    return 0;
}

/* "BOOT_ID BYTES THREADS": what the figure holds for; -1 where the boot id cannot be read. */
static int figure_key(char *buf, size_t len, size_t bytes, int threads)
{
    char boot[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return -1;
    bool ok = fgets(boot, sizeof boot, f) != NULL;
    fclose(f);
    boot[strcspn(boot, "\n")] = '\0';
    if (!ok || !boot[0] || strchr(boot, ' '))
        return -1;
    int n = snprintf(buf, len, "%s %zu %d", boot, bytes, threads);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* The kept figure for key, or 0. The file is one line: KEY GBS. */
static double kept_figure(const char *key)
{
    char path[4096], line[256];
    if (figure_path(path, sizeof path, false) != 0)
        return 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    double gbs = 0;
    size_t klen = strlen(key);
    if (fgets(line, sizeof line, f) && strncmp(line, key, klen) == 0 && line[klen] == ' ') {
        char *end;
        gbs = strtod(line + klen + 1, &end);
        if (end == line + klen + 1 || !(gbs > 0 && gbs < 1e6))
            gbs = 0;
    }
    fclose(f);
    return gbs;
}

/* Writes the figure for key (a file of its own, renamed over the old one: a reader sees one whole
 * line or the old file); a failure only means the next process measures again. */
static void keep_figure(const char *key, double gbs)
{
    char path[4096], tmp[4200];
    if (figure_path(path, sizeof path, true) != 0)
        return;
    snprintf(tmp, sizeof tmp, "%s.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    bool ok = fprintf(f, "%s %.17g\n", key, gbs) > 0;     /* every digit: the same figure in every process */
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0)
        unlink(tmp);
}

int cl_cpu_copy_bandwidth(double *gbs, char *err)
{
    static double cached;
    if (cached > 0) {
        *gbs = cached;
        return 0;
    }
    size_t bytes = 2 * cl_host_cache_max() > COPY_MIN_BYTES ? 2 * cl_host_cache_max() : COPY_MIN_BYTES;
    char key[160];
    bool keyed = figure_key(key, sizeof key, bytes, cl_cpu_threads()) == 0;
    if (keyed && (cached = kept_figure(key)) > 0) {
        *gbs = cached;
        return 0;
    }
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
    if (keyed)
        keep_figure(key, cached);
    *gbs = cached;
    return 0;
}
