/* admission.c — the GPU's slots as locked files (see admission.h). */
#include "exec/admission.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "magic/magic.h"

static int held_fd = -1, held_gpu = -1, waiting_fd = -1, alone_fd = -1;

static int directory(char *buf, size_t len)
{
    const char *dir = getenv("CUDALAB_ADMISSION_DIR"), *run = getenv("XDG_RUNTIME_DIR");
    int n;
    if (dir && *dir)
        n = snprintf(buf, len, "%s", dir);
    else if (run && *run)
        n = snprintf(buf, len, "%s/cudalab-admission", run);
    else
        n = snprintf(buf, len, "/tmp/cudalab-admission-%u", (unsigned)getuid());
    if (n <= 0 || (size_t)n >= len)
        return -1;
    /* one user's own directory: private; a shared one is made by the host, mode 1777 */
    if (mkdir(buf, 0700) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

static int open_file(int gpu, const char *what, char *why, size_t len)
{
    char dir[PATH_MAX - 64], path[PATH_MAX];
    if (directory(dir, sizeof dir) != 0) {
        snprintf(why, len, "no admission directory (CUDALAB_ADMISSION_DIR): %s", strerror(errno));
        return -1;
    }
    snprintf(path, sizeof path, "%s/gpu%d.%s", dir, gpu, what);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        snprintf(why, len, "cannot open %s: %s", path, strerror(errno));
    return fd;
}

static int slots(int gpu)
{
    const char *env = getenv("CUDALAB_GPU_CONTEXTS");
    if (env && atoi(env) > 0)
        return atoi(env);
    char why[200];
    int fd = open_file(gpu, "capacity", why, sizeof why), n = 0;
    if (fd >= 0) {
        char buf[32] = "";
        ssize_t r = read(fd, buf, sizeof buf - 1);
        n = r > 0 ? atoi(buf) : 0;
        close(fd);
    }
    return n > 0 ? n : ADMISSION_DEFAULT_SLOTS;
}

bool admission_held(void)
{
    return held_fd >= 0;
}

/* Whether some worker holds the GPU's waiting file shared (waits for a slot). */
static bool someone_waits(int gpu)
{
    char why[200];
    int fd = open_file(gpu, "waiting", why, sizeof why);
    if (fd < 0)
        return false;
    bool waits = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);                      /* drops the probe's lock, if it got it */
    return waits;
}

int admission_take(int gpu, bool polite, char *why, size_t len)
{
    if (held_fd >= 0)
        return 0;
    int n = slots(gpu);
    if (polite && someone_waits(gpu)) {
        snprintf(why, len, "the GPU is busy: other kernels wait for its %d CUDA contexts", n);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "slot%d", i);
        int fd = open_file(gpu, name, why, len);
        if (fd < 0)
            return -1;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            held_fd = fd, held_gpu = gpu;
            return 0;
        }
        close(fd);
    }
    snprintf(why, len, "the GPU is busy: all %d of its CUDA contexts are held by other kernels "
             "(CUDALAB_GPU_CONTEXTS)", n);
    return 1;
}

void admission_release(void)
{
    if (held_fd >= 0)
        close(held_fd);
    held_fd = held_gpu = -1;
}

void admission_waiting(int gpu, bool on)
{
    if (on && waiting_fd < 0) {
        char why[200];
        waiting_fd = open_file(gpu, "waiting", why, sizeof why);
        if (waiting_fd >= 0 && flock(waiting_fd, LOCK_SH) != 0) {
            close(waiting_fd);
            waiting_fd = -1;
        }
    } else if (!on && waiting_fd >= 0) {
        close(waiting_fd);
        waiting_fd = -1;
    }
}

bool admission_wanted(void)
{
    return held_fd >= 0 && someone_waits(held_gpu);
}

void admission_set_capacity(int gpu, uint64_t total_mem)
{
    char why[200];
    int fd = open_file(gpu, "capacity", why, sizeof why);
    if (fd < 0)
        return;
    int n = (int)((double)total_mem / (ADMISSION_GIB_PER_CONTEXT * 1073741824.0));
    char buf[32];
    int w = snprintf(buf, sizeof buf, "%d\n", n < 4 ? 4 : n);
    if (ftruncate(fd, 0) != 0 || write(fd, buf, (size_t)w) != w)
        klog("admission: cannot record GPU %d's capacity", gpu);
    close(fd);
}

int admission_alone(int gpu, bool take, double *waited_ms)
{
    if (!take) {
        if (alone_fd >= 0)
            close(alone_fd);
        alone_fd = -1;
        return 0;
    }
    char why[200];
    double t0 = monotonic_ms();
    if (alone_fd < 0 && (alone_fd = open_file(gpu, "timing", why, sizeof why)) < 0) {
        *waited_ms = 0;
        return 0;                   /* no directory: time alongside, as before */
    }
    while (flock(alone_fd, LOCK_EX | LOCK_NB) != 0) {
        if (magic_cancelled()) {
            close(alone_fd);
            alone_fd = -1;
            return -1;
        }
        struct timespec nap = { 0, 5 * 1000000L };
        nanosleep(&nap, NULL);
    }
    *waited_ms = monotonic_ms() - t0;
    return 0;
}
