/* admission.c — the GPUs' slots, queues and turns as locked files (see admission.h). */
#include "exec/admission.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
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

/* How a kernel's recent GPU time places its tickets: it counts fully when
 * fresh and half as much USAGE_HALF_LIFE_S later. */
#define USAGE_HALF_LIFE_S 30.0
/* A dead waiter's ticket is noticed (and removed) within this long. */
#define PROBE_EVERY_MS 1000.0

static int held_fd = -1, held_index = -1;
static char held_key[ADMISSION_KEY_LEN];
static int turn_fd = -1;
static char turn_key[ADMISSION_KEY_LEN];
static double turn_since;

/* This worker's tickets: one per GPU while it waits for a context, one while it waits for a turn. */
typedef struct ticket {
    int fd;
    char name[NAME_MAX + 1];
} ticket;
static ticket tickets[ADMISSION_MAX_GPUS];
static int nticket;

/* The GPU time of this worker's timed runs, decayed (USAGE_HALF_LIFE_S). */
static double usage_ms, usage_at_ms;

static double usage_now(void)
{
    double now = monotonic_ms();
    usage_ms *= exp2(-(now - usage_at_ms) / (USAGE_HALF_LIFE_S * 1e3));
    usage_at_ms = now;
    return usage_ms;
}

void admission_key(const char *pci_bus_id, char *key, size_t len)
{
    size_t w = (size_t)snprintf(key, len, "pci-");
    for (const char *p = pci_bus_id; *p && w + 1 < len; p++)
        key[w++] = isalnum((unsigned char)*p) ? (char)tolower((unsigned char)*p) : '_';
    key[w < len ? w : len - 1] = '\0';
}

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

/* <dir>/queue: writable by every user of a shared directory, and not sticky,
 * so that anyone who finds a dead waiter's ticket can remove it. */
static int queue_dir(char *buf, size_t len)
{
    if (directory(buf, len) != 0 || strlen(buf) + sizeof "/queue" > len)
        return -1;
    strcat(buf, "/queue");
    if (mkdir(buf, 0777) == 0)
        (void)chmod(buf, 0777);     /* past the umask: every user of a shared directory queues here */
    else if (errno != EEXIST)
        return -1;
    return 0;
}

/* Opens (creating) KEY.what for locking; readable by all, so that other users
 * of a shared directory can lock it too. */
static int open_file(const char *key, const char *what, int flags, char *why, size_t len)
{
    char dir[PATH_MAX - 64], path[PATH_MAX];
    if (directory(dir, sizeof dir) != 0) {
        snprintf(why, len, "no admission directory (CUDALAB_ADMISSION_DIR): %s", strerror(errno));
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s.%s", dir, key, what);
    int fd = open(path, flags | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        snprintf(why, len, "cannot open %s: %s", path, strerror(errno));
    else
        (void)fchmod(fd, 0666);     /* ours when we created it; another user's file keeps its mode */
    return fd;
}

static int slots(const char *key)
{
    const char *env = getenv("CUDALAB_GPU_CONTEXTS");
    if (env && atoi(env) > 0)
        return atoi(env);
    char why[200];
    int fd = open_file(key, "capacity", O_RDONLY, why, sizeof why), n = 0;
    if (fd >= 0) {
        char buf[32] = "";
        ssize_t r = read(fd, buf, sizeof buf - 1);
        n = r > 0 ? atoi(buf) : 0;
        close(fd);
    }
    return n > 0 ? n : ADMISSION_DEFAULT_SLOTS;
}

void admission_set_capacity(const admission_gpu *gpu)
{
    char why[200];
    int fd = open_file(gpu->key, "capacity", O_RDWR, why, sizeof why);
    if (fd < 0 || gpu->total_mem == 0) {
        if (fd >= 0)
            close(fd);
        return;
    }
    int n = (int)((double)gpu->total_mem / (ADMISSION_GIB_PER_CONTEXT * 1073741824.0));
    char buf[32];
    int w = snprintf(buf, sizeof buf, "%d\n", n < 4 ? 4 : n);
    if (ftruncate(fd, 0) != 0 || write(fd, buf, (size_t)w) != w)
        klog("admission: cannot record %s's capacity", gpu->key);
    close(fd);
}

/* ---- tickets ---- */

/* Whether the ticket file at path has a living owner; a dead one's is removed. */
static bool alive(const char *qdir, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", qdir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;               /* gone meanwhile */
    bool locked = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    if (!locked)
        unlink(path);               /* its owner died while waiting */
    close(fd);
    return locked;
}

/* The bytes a memory ticket (KEY.m.PLACE.BYTES.ID) asks for. */
static double ticket_bytes(const char *name)
{
    const char *p = strchr(name, '.');
    for (int dots = 1; p && dots < 3; dots++)
        p = strchr(p + 1, '.');
    return p ? (double)strtoull(p + 1, NULL, 16) : 0;
}

/* The live tickets of queue q ('c' context, 't' turn, 'm' memory) on key:
 * those placed before mine (all of them when mine is NULL), and in *bytes
 * (when not NULL) the memory they ask for. Each ticket ahead is probed for a
 * living owner at most every PROBE_EVERY_MS (per process), so a dead waiter
 * holds nobody up for long. -1 when the queue cannot be read. */
static int scan_ahead(const char *key, char q, const char *mine, double *bytes)
{
    static double probed_at = -PROBE_EVERY_MS;
    char qdir[PATH_MAX - NAME_MAX - 2], prefix[ADMISSION_KEY_LEN + 4];
    if (queue_dir(qdir, sizeof qdir) != 0)
        return -1;
    DIR *d = opendir(qdir);
    if (!d)
        return -1;
    bool probe = monotonic_ms() - probed_at >= PROBE_EVERY_MS;
    int n = snprintf(prefix, sizeof prefix, "%s.%c.", key, q), ahead = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, (size_t)n) != 0 || (mine && strcmp(e->d_name, mine) >= 0))
            continue;
        if (!probe || alive(qdir, e->d_name)) {
            ahead++;
            if (bytes)
                *bytes += ticket_bytes(e->d_name);
        }
    }
    closedir(d);
    if (probe)
        probed_at = monotonic_ms();
    return ahead;
}

static int count_ahead(const char *key, char q, const char *mine)
{
    return scan_ahead(key, q, mine, NULL);
}

/* A ticket in queue q on key, placed at now plus this kernel's recent GPU
 * time (a memory ticket also names its bytes). Made under a hidden name,
 * locked, then renamed into place, so that nobody ever sees it unlocked while
 * its owner lives. */
static int ticket_make(const char *key, char q, unsigned long long bytes, ticket *t)
{
    char qdir[PATH_MAX - NAME_MAX - 2], tmp[PATH_MAX], path[PATH_MAX];
    if (queue_dir(qdir, sizeof qdir) != 0)
        return -1;
    static bool seeded;
    if (!seeded) {                  /* two containers' workers may share a pid; their salts differ */
        srandom((unsigned)getpid() ^ (unsigned)(monotonic_ms() * 1e3));
        seeded = true;
    }
    unsigned salt = (unsigned)random();
    unsigned long long place = (unsigned long long)((monotonic_ms() + usage_now()) * 1e3);
    if (q == 'm')
        snprintf(t->name, sizeof t->name, "%s.m.%016llx.%016llx.%08x%08x", key, place, bytes, (unsigned)getpid(), salt);
    else
        snprintf(t->name, sizeof t->name, "%s.%c.%016llx.%08x%08x", key, q, place, (unsigned)getpid(), salt);
    snprintf(tmp, sizeof tmp, "%s/.new-%d-%08x", qdir, (int)getpid(), salt);
    snprintf(path, sizeof path, "%s/%s", qdir, t->name);
    t->fd = open(tmp, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (t->fd < 0)
        return -1;
    if (flock(t->fd, LOCK_EX) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        close(t->fd);
        return -1;
    }
    return 0;
}

static void ticket_drop(ticket *t)
{
    char qdir[PATH_MAX - NAME_MAX - 2], path[PATH_MAX];
    if (queue_dir(qdir, sizeof qdir) == 0) {
        snprintf(path, sizeof path, "%s/%s", qdir, t->name);
        unlink(path);
    }
    close(t->fd);
    t->fd = -1;
}

/* This worker's ticket on key, or NULL. */
static const char *my_ticket(const char *key)
{
    size_t n = strlen(key);
    for (int i = 0; i < nticket; i++)
        if (strncmp(tickets[i].name, key, n) == 0 && tickets[i].name[n] == '.')
            return tickets[i].name;
    return NULL;
}

void admission_queue_join(const admission_gpu *gpus, int n)
{
    admission_queue_leave();
    for (int g = 0; g < n && nticket < ADMISSION_MAX_GPUS; g++)
        if (ticket_make(gpus[g].key, 'c', 0, &tickets[nticket]) == 0)
            nticket++;
}

int admission_queue_ahead(void)
{
    int best = -1;
    for (int i = 0; i < nticket; i++) {
        char key[ADMISSION_KEY_LEN];
        snprintf(key, sizeof key, "%.*s", (int)(strchr(tickets[i].name, '.') - tickets[i].name), tickets[i].name);
        int a = count_ahead(key, 'c', tickets[i].name);
        if (a >= 0 && (best < 0 || a < best))
            best = a;
    }
    return best;
}

void admission_queue_leave(void)
{
    for (int i = 0; i < nticket; i++)
        ticket_drop(&tickets[i]);
    nticket = 0;
}

/* ---- context slots ---- */

bool admission_held(void)
{
    return held_fd >= 0;
}

/* Slot i of key, opened for locking; -1 when it cannot be. */
static int open_slot(const char *key, int i, char *why, size_t len)
{
    char what[32];
    snprintf(what, sizeof what, "slot%d", i);
    return open_file(key, what, O_RDONLY, why, len);
}

/* How many of key's n slots are held now (a probe: a shared lock tried and dropped). */
static int slots_held(const char *key, int n)
{
    int held = 0;
    char why[200];
    for (int i = 0; i < n; i++) {
        int fd = open_slot(key, i, why, sizeof why);
        if (fd < 0 || flock(fd, LOCK_SH | LOCK_NB) != 0)
            held++;
        if (fd >= 0)
            close(fd);
    }
    return held;
}

int admission_take(const admission_gpu *gpus, int n, int *which, char *why, size_t len)
{
    if (held_fd >= 0) {
        *which = held_index;
        return 0;
    }
    char dir[PATH_MAX];
    if (directory(dir, sizeof dir) != 0) {
        snprintf(why, len, "no admission directory (CUDALAB_ADMISSION_DIR): %s", strerror(errno));
        return -1;
    }
    /* the GPUs this worker may take a slot on now: those with more free slots than waiters ahead of it
     * (the first F in line take F free slots at once), the freest first; ties go round by pid */
    int order[ADMISSION_MAX_GPUS], free_of[ADMISSION_MAX_GPUS], cap[ADMISSION_MAX_GPUS], m = 0, queued = 0, total = 0;
    for (int k = 0; k < n && k < ADMISSION_MAX_GPUS; k++) {
        int g = (k + (int)getpid()) % n, ahead = count_ahead(gpus[g].key, 'c', my_ticket(gpus[g].key));
        total += cap[g] = slots(gpus[g].key);
        if (ahead >= cap[g] || ahead >= (free_of[g] = cap[g] - slots_held(gpus[g].key, cap[g]))) {
            queued += ahead > 0;
            continue;
        }
        int at = m++;
        while (at > 0 && free_of[order[at - 1]] < free_of[g]) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = g;
    }
    for (int k = 0; k < m && free_of[order[k]] > 0; k++) {
        int g = order[k];
        for (int i = 0; i < cap[g]; i++) {
            int fd = open_slot(gpus[g].key, i, why, len);
            if (fd < 0)
                return -1;
            if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
                held_fd = fd, held_index = g, *which = g;
                snprintf(held_key, sizeof held_key, "%s", gpus[g].key);
                admission_queue_leave();    /* in before its context is made: the next in line may go */
                return 0;
            }
            close(fd);
        }
    }
    if (queued == n)
        snprintf(why, len, "the GPU is busy: other kernels wait for its CUDA contexts");
    else if (n == 1)
        snprintf(why, len, "the GPU is busy: all %d of its CUDA contexts are held by other kernels "
                 "(CUDALAB_GPU_CONTEXTS)", total);
    else
        snprintf(why, len, "the GPUs are busy: all %d CUDA contexts of the %d GPUs are held by other kernels "
                 "(CUDALAB_GPU_CONTEXTS)", total, n);
    return 1;
}

void admission_release(void)
{
    if (held_fd >= 0)
        close(held_fd);
    held_fd = held_index = -1;
}

bool admission_wanted(void)
{
    return held_fd >= 0 && count_ahead(held_key, 'c', NULL) > 0;
}

/* ---- timed-run turns ---- */

static int turn_open(const char *key)
{
    if (turn_fd >= 0 && strcmp(turn_key, key) == 0)
        return 0;
    if (turn_fd >= 0)
        close(turn_fd);
    char why[200];
    snprintf(turn_key, sizeof turn_key, "%s", key);
    return (turn_fd = open_file(key, "turn", O_RDONLY, why, sizeof why)) >= 0 ? 0 : -1;
}

static void nap_ms(double ms)
{
    struct timespec t = { 0, (long)(ms * 1e6) };
    nanosleep(&t, NULL);
}

int admission_turn(const admission_gpu *gpu, bool take, double *waited_ms, admission_show_fn *show, void *arg)
{
    if (!take) {
        if (turn_fd >= 0 && turn_since > 0) {
            usage_now();
            usage_ms += monotonic_ms() - turn_since;
            flock(turn_fd, LOCK_UN);
        }
        turn_since = 0;
        return 0;
    }
    double t0 = monotonic_ms();
    *waited_ms = 0;
    if (turn_open(gpu->key) != 0)
        return 0;                   /* no directory: time alongside, as without admission */
    if (count_ahead(gpu->key, 't', NULL) == 0 && flock(turn_fd, LOCK_EX | LOCK_NB) == 0) {
        turn_since = monotonic_ms();
        return 0;
    }
    ticket t;
    if (ticket_make(gpu->key, 't', 0, &t) != 0) {
        flock(turn_fd, LOCK_EX);    /* no queue: wait on the lock itself */
        turn_since = monotonic_ms();
        *waited_ms = turn_since - t0;
        return 0;
    }
    int shown = -1, ahead = -1;
    double shown_at = 0, scanned_at = -1e9;
    for (;;) {
        /* the queue is read less often the further back one stands (a class of 200 reads it at once);
         * the next in line tries the lock every millisecond */
        double now = monotonic_ms();
        if (now - scanned_at >= (ahead <= 0 ? 20.0 : 10.0 + 5.0 * ahead)) {
            ahead = count_ahead(gpu->key, 't', t.name);
            scanned_at = now;
        }
        if (ahead == 0 && flock(turn_fd, LOCK_EX | LOCK_NB) == 0)
            break;
        if (magic_cancelled()) {
            ticket_drop(&t);
            *waited_ms = monotonic_ms() - t0;
            return -1;
        }
        if (show && (ahead != shown || now - shown_at >= 1000)) {
            show(ahead, now - t0, arg);
            shown = ahead, shown_at = now;
        }
        nap_ms(ahead == 0 ? 1 : 5);
    }
    ticket_drop(&t);
    turn_since = monotonic_ms();
    *waited_ms = turn_since - t0;
    return 0;
}

/* ---- device memory ---- */

static ticket reservation = { -1, "" };
static double reserved_bytes;

/* What the commands on gpu may hold at once: ADMISSION_MEM_SHARE of it, less
 * a context for each slot held (alone: for this worker's only). 0: unknown. */
static double memory_budget(const admission_gpu *gpu, bool alone)
{
    const char *cap = getenv("CUDALAB_GPU_MEMORY_GIB");
    if (cap && atof(cap) > 0)
        return atof(cap) * 1073741824.0;
    if (gpu->total_mem == 0)
        return 0;
    int held = alone ? 1 : slots_held(gpu->key, slots(gpu->key));
    return (double)gpu->total_mem * ADMISSION_MEM_SHARE - (held < 1 ? 1 : held) * ADMISSION_CONTEXT_BYTES;
}

int admission_reserve(const admission_gpu *gpu, double bytes, double *budget, admission_show_fn *show, void *arg)
{
    if (reservation.fd >= 0 && reserved_bytes >= bytes)
        return 0;                   /* a command's later, smaller point: already covered */
    admission_unreserve();
    double alone = memory_budget(gpu, true), t0 = monotonic_ms(), shown_at = 0;
    if (alone <= 0)
        return 2;                   /* unknown memory: nothing to budget */
    if (bytes > alone) {
        *budget = alone;
        return 1;
    }
    if (ticket_make(gpu->key, 'm', (unsigned long long)bytes, &reservation) != 0)
        return 2;                   /* no queue: allocate as without admission */
    for (int shown = -1;;) {
        double ahead_bytes = 0, room = memory_budget(gpu, false);
        int ahead = scan_ahead(gpu->key, 'm', reservation.name, &ahead_bytes);
        if (ahead < 0 || ahead_bytes + bytes <= room)
            break;
        if (magic_cancelled()) {
            admission_unreserve();
            return -1;
        }
        double now = monotonic_ms();
        if (show && (ahead != shown || now - shown_at >= 1000)) {
            show(ahead, now - t0, arg);
            shown = ahead, shown_at = now;
        }
        nap_ms(20);
    }
    reserved_bytes = bytes;
    return 0;
}

void admission_unreserve(void)
{
    if (reservation.fd >= 0)
        ticket_drop(&reservation);
    reserved_bytes = 0;
}

/* ---- %device ---- */

int admission_count(const admission_gpu *gpu, admission_census *out)
{
    char dir[PATH_MAX];
    memset(out, 0, sizeof *out);
    if (directory(dir, sizeof dir) != 0)
        return -1;
    out->slots = slots(gpu->key);
    out->held = slots_held(gpu->key, out->slots);
    out->waiting_context = count_ahead(gpu->key, 'c', NULL);
    out->waiting_turn = count_ahead(gpu->key, 't', NULL);
    out->mine = held_fd >= 0 && strcmp(held_key, gpu->key) == 0;
    return out->waiting_context < 0 || out->waiting_turn < 0 ? -1 : 0;
}
