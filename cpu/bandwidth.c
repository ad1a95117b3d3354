/* bandwidth.c — the CPU backend's measured memory bandwidth, what the CPU
 * analogues of memory-bound magics (%reduce's pct_of_bandwidth) compare to.
 *
 * memcpy of a buffer twice the host's largest cache (at least 32 MiB: source
 * and destination together are four times what a cache could serve), cut into
 * contiguous slices over the same host threads the analogues use (one thread
 * alone cannot saturate a socket's memory), best of a few reps after one that
 * faults the pages in. GB/s counts the bytes read and the bytes written (1e9
 * B/s). Needed by a CPU worker before its first command that times runs
 * (kernel/exec/worker.c), elsewhere by the first result that needs it (a
 * sweep's device document, a memory-bound magic's % of bandwidth); never at
 * a worker's start: most kernels that start never need the figure.
 *
 * Measured once per boot, not per process: faulting and copying 2 x L3 (1.2 GB
 * on a 300 MiB L3) costs most of a second, which every kernel's first timed
 * cell paid. The figure is kept in the user's cache folder (base/cache_dir.h,
 * "host/copy-bandwidth"), valid for the boot, the thread count and the buffer
 * size it was measured with; a process that finds it valid reads it. One that
 * does not measures under an exclusive lock on a file beside it, so that two
 * processes never measure at once (sharing the memory bus, each would record
 * about half), and the others wait for its figure (at most LOCK_WAIT_MS, then
 * measure themselves). Without a cache folder, every process measures.
 *
 * The buffers are mapped with MAP_POPULATE: the kernel fills in their pages
 * in one call instead of one fault per 4 KiB page (300,000 of them), which
 * halves the measure's cost; the pages are the same 4 KiB pages the faults
 * would give, and the timed reps still come after the same warm-up rep.
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cache_dir.h"
#include "common/cpu_common.h"
#include "cudalab/backend.h"

#define COPY_MIN_BYTES ((size_t)32 << 20)
#define COPY_REPS 3
#define CALIBRATION_FORMAT "cudalab-copy-bandwidth-1"   /* bump when the measure changes */
#define LOCK_WAIT_MS 5000.0
/* the figures a kept measure may hold: anything else is not ours, and is measured again */
#define GBS_MIN 0.01
#define GBS_MAX 1e5

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

/* Measures the copy bandwidth now: GB/s, or -1 with err (when not NULL) saying why. */
static double measure(size_t bytes, char *err)
{
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
    return 2.0 * (double)bytes / best / 1e9;
}

/* What a kept measure must match to be read: the format, this boot, the threads, the buffer. */
typedef struct calibration_key {
    char boot[40];
    int threads;
    unsigned long long bytes;
} calibration_key;

/* The key of a measure made now: 0, or -1 where the boot has no id (nothing is kept then). */
static int key_now(calibration_key *k, size_t bytes)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return -1;
    bool ok = fscanf(f, "%39s", k->boot) == 1 && strlen(k->boot) == 36;
    fclose(f);
    k->threads = cl_cpu_threads();
    k->bytes = bytes;
    return ok ? 0 : -1;
}

/* The kept measure at path when it is one of key k: GB/s, else -1. Only a small regular file is
 * read (never through a link, never waiting on a FIFO someone left there). */
static double read_kept(const char *path, const calibration_key *k)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    FILE *f = NULL;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 4096 || !(f = fdopen(fd, "r"))))
        close(fd);
    if (!f)
        return -1;
    char format[40], boot[40];
    int threads;
    unsigned long long bytes;
    double gbs;
    bool ok = fscanf(f, "%39s %39s %d %llu %lf", format, boot, &threads, &bytes, &gbs) == 5 &&
              strcmp(format, CALIBRATION_FORMAT) == 0 && strcmp(boot, k->boot) == 0 && threads == k->threads &&
              bytes == k->bytes && isfinite(gbs) && gbs >= GBS_MIN && gbs <= GBS_MAX;
    fclose(f);
    return ok ? gbs : -1;
}

/* Keeps a measure at path, through a temporary file and a rename: a reader never sees half. */
static void keep(const char *path, const calibration_key *k, double gbs)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    bool ok = fprintf(f, "%s %s %d %llu %.6g\n", CALIBRATION_FORMAT, k->boot, k->threads, k->bytes, gbs) > 0;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0)
        unlink(tmp);
}

/* An exclusive lock on path, waited for at most LOCK_WAIT_MS: its descriptor, else -1. */
static int lock_within(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    double until = cl_now_ms() + LOCK_WAIT_MS;
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (cl_now_ms() > until) {
            close(fd);
            return -1;
        }
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    return fd;
}

int cl_cpu_copy_bandwidth(double *gbs, char *err)
{
    static double cached;
    if (cached > 0) {
        *gbs = cached;
        return 0;
    }
    size_t bytes = 2 * cl_host_cache_max() > COPY_MIN_BYTES ? 2 * cl_host_cache_max() : COPY_MIN_BYTES;
    calibration_key k;
    char dir[4000], path[4100], lock[4100];
    bool keeps = key_now(&k, bytes) == 0 && user_cache_dir("host", dir, sizeof dir) == 0 && make_dirs(dir) == 0;
    double got = -1;
    int fd = -1;
    if (keeps) {
        snprintf(path, sizeof path, "%s/copy-bandwidth", dir);
        snprintf(lock, sizeof lock, "%s/copy-bandwidth.lock", dir);
        got = read_kept(path, &k);
        if (got < 0 && (fd = lock_within(lock)) >= 0)
            got = read_kept(path, &k);        /* measured by the process that held the lock */
    }
    if (got < 0 && (got = measure(bytes, err)) > 0 && keeps)
        keep(path, &k, got);
    if (fd >= 0)
        close(fd);                            /* and the lock with it */
    if (got < 0)
        return -1;
    cached = got;
    *gbs = cached;
    return 0;
}
