/* admission.c — the GPUs' slots, queues and turns as locked files (see admission.h).
 *
 * Nothing found in the directory is trusted: other users (a shared directory)
 * and other programs of the user may have put anything there. So the directory
 * is opened once per use without following a link and its owner and mode
 * checked (admission_dir.c); every file in it is reached through that
 * descriptor, never by a path that a link could redirect, and opened
 * O_NOFOLLOW|O_NONBLOCK (a FIFO does not block) then checked with fstat (a
 * regular file with one name); only files this process has just made are
 * chmod'ed; the capacity file counts only when its directory's owner wrote it;
 * a ticket counts only while its file is its claimant's and its process lives;
 * and every wait ends after the limit the caller gives.
 */
#include "exec/admission.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/text.h"
#include "magic/magic.h"
#include "exec/admission_dir.h"
#include "exec/admission_internal.h"

/* How a kernel's recent GPU time places its tickets: it counts fully when
 * fresh and half as much USAGE_HALF_LIFE_S later. */
#define USAGE_HALF_LIFE_S 30.0
/* A waiter's ticket that nobody holds locked is noticed (and removed) within this long. */
#define PROBE_EVERY_MS 1000.0

static int held_fd = -1, held_index = -1;
static char held_key[ADMISSION_KEY_LEN];
static int turn_fd = -1;
static char turn_key[ADMISSION_KEY_LEN];
static double turn_since;

/* This worker's tickets: one per GPU while it waits for a context, one while it waits for a turn. */
static admission_ticket tickets[ADMISSION_MAX_GPUS];
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

double admission_wait_limit_ms(void)
{
    const char *e = getenv(ADMISSION_WAIT_ENV);
    return (e && *e && atof(e) >= 0 ? atof(e) : ADMISSION_WAIT_DEFAULT_S) * 1e3;
}

/* ---- capacity ---- */

/* N as the GPU's memory gives it (what the first worker records); 0 when unknown. */
static int capacity_of_memory(const admission_gpu *gpu)
{
    if (gpu->total_mem == 0)
        return 0;
    int n = (int)((double)gpu->total_mem / (ADMISSION_GIB_PER_CONTEXT * 1073741824.0));
    return n < 4 ? 4 : n > ADMISSION_MAX_SLOTS ? ADMISSION_MAX_SLOTS : n;
}

/* KEY.capacity's N when the directory's owner wrote it and nobody else could
 * have (not group- or world-writable); 0 otherwise. */
static int capacity_recorded(const admission_dir *d, const char *key)
{
    char name[ADMISSION_KEY_LEN + 16];
    snprintf(name, sizeof name, "%s.capacity", key);
    int fd = openat(d->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), n = 0;
    if (fd < 0)
        return 0;
    struct stat st;
    char buf[32] = "";
    if (fstat(fd, &st) == 0 && !admission_file_wrong(d, &st) && st.st_uid == d->owner && !(st.st_mode & 022)) {
        ssize_t r = read(fd, buf, sizeof buf - 1);
        n = r > 0 ? atoi(buf) : 0;
    } else {
        static bool said;           /* admission_slots() reads it at every scan: said once */
        if (!said)
            klog("admission: %s/%s ignored: not written by the directory's owner alone", d->path, name);
        said = true;
    }
    close(fd);
    return n < 0 ? 0 : n > ADMISSION_MAX_SLOTS ? ADMISSION_MAX_SLOTS : n;
}

int admission_slots(const admission_dir *d, const admission_gpu *gpu)
{
    const char *env = getenv("CUDALAB_GPU_CONTEXTS");
    int n = env ? atoi(env) : 0;
    if (n > 0)
        return n > ADMISSION_MAX_SLOTS ? ADMISSION_MAX_SLOTS : n;
    if ((n = capacity_recorded(d, gpu->key)) > 0 || (n = capacity_of_memory(gpu)) > 0)
        return n;
    return ADMISSION_DEFAULT_SLOTS;
}

void admission_set_capacity(const admission_gpu *gpu)
{
    admission_dir d;
    char why[PATH_MAX + 200], tmp[64], name[ADMISSION_KEY_LEN + 16], buf[32];
    int n = capacity_of_memory(gpu);
    if (n == 0 || admission_dir_open(&d, why, sizeof why) != 0)
        return;
    if (d.owner != geteuid()) {       /* only the directory's owner records (root, for a shared one) */
        admission_dir_close(&d);
        return;
    }
    /* a fresh file renamed into place: whatever had the name (a link, anything) is replaced, never written */
    snprintf(tmp, sizeof tmp, ".capacity-%d-%08lx", (int)getpid(), (unsigned long)random());
    snprintf(name, sizeof name, "%s.capacity", gpu->key);
    int fd = openat(d.fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    int w = snprintf(buf, sizeof buf, "%d\n", n);
    bool ok = fd >= 0 && fchmod(fd, 0644) == 0 && write(fd, buf, (size_t)w) == w;
    if (fd >= 0)
        close(fd);
    if (!ok || renameat(d.fd, tmp, d.fd, name) != 0) {
        klog("admission: cannot record %s's capacity in %s", gpu->key, d.path);
        unlinkat(d.fd, tmp, 0);
    }
    admission_dir_close(&d);
}

/* ---- tickets ---- */

/* A ticket's name: KEY.Q.PLACE.BYTES.UID.PIDNS.PID.SALT (hex place and bytes:
 * the names sort by place). UID is who claims it (the file must be theirs),
 * PIDNS and PID the process that waits (alive, where its pid namespace is
 * this one: containers have their own). */
typedef struct ticket_name {
    unsigned long long place, bytes;
    unsigned uid;
    unsigned long pidns;
    int pid;
} ticket_name;

static unsigned long pid_namespace(void)
{
    static unsigned long ns = ULONG_MAX;
    struct stat st;
    if (ns == ULONG_MAX)
        ns = stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long)st.st_ino : 0;
    return ns;
}

/* Parses the part of a ticket's name after its "KEY.Q." prefix; false when it is no ticket's. */
static bool ticket_parse(const char *rest, ticket_name *t)
{
    unsigned salt;
    int end = -1;
    sscanf(rest, "%16llx.%16llx.%u.%lu.%d.%8x%n", &t->place, &t->bytes, &t->uid, &t->pidns, &t->pid, &salt, &end);
    return end > 0 && rest[end] == '\0' && t->pid > 0;
}

/* Whether the ticket (its parsed name, its file st) may be a living waiter's:
 * the file is the user's its name claims (in the user's own directory, the
 * user's), and its process is alive where that can be told. */
static bool ticket_plausible(const admission_dir *d, const ticket_name *t, const struct stat *st)
{
    if (!S_ISREG(st->st_mode) || st->st_uid != t->uid || (!d->shared && t->uid != geteuid()))
        return false;
    if (t->pidns != 0 && t->pidns == pid_namespace())
        return kill(t->pid, 0) == 0 || errno == EPERM;
    return true;
}

/* Whether the ticket's owner holds it locked (it waits); a dead one's ticket is removed where we may. */
static bool ticket_locked(const admission_dir *d, const char *name, const struct stat *st)
{
    int fd = openat(d->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;               /* gone meanwhile */
    bool locked = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    if (!locked && st->st_uid == geteuid())
        unlinkat(d->fd, name, 0);   /* its owner died while waiting */
    return locked;
}

/* The live tickets of queue q ('c' context, 't' turn, 'm' memory) on key:
 * those placed before mine (all of them when mine is NULL), and in *bytes
 * (when not NULL) the memory they ask for. Every scan passes over tickets
 * that cannot be a waiter's (ticket_plausible); the lock of each is probed at
 * most every PROBE_EVERY_MS (per process), so a dead waiter holds nobody up
 * for long. -1 when the directory cannot be read. */
int admission_scan_ahead(const admission_dir *d, const char *key, char q, const char *mine, double *bytes)
{
    static double probed_at = -PROBE_EVERY_MS;
    char prefix[ADMISSION_KEY_LEN + 4];
    int dfd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!dir) {
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    bool probe = monotonic_ms() - probed_at >= PROBE_EVERY_MS;
    int n = snprintf(prefix, sizeof prefix, "%s.%c.", key, q), ahead = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        ticket_name t;
        struct stat st;
        if (strncmp(e->d_name, prefix, (size_t)n) != 0 || (mine && strcmp(e->d_name, mine) >= 0) ||
            !ticket_parse(e->d_name + n, &t) || fstatat(d->fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !ticket_plausible(d, &t, &st) || (probe && !ticket_locked(d, e->d_name, &st)))
            continue;
        ahead++;
        if (bytes)
            *bytes += (double)t.bytes;
    }
    closedir(dir);
    if (probe)
        probed_at = monotonic_ms();
    return ahead;
}

static int count_ahead(const char *key, char q, const char *mine)
{
    admission_dir d;
    char why[PATH_MAX + 200];
    if (admission_dir_open(&d, why, sizeof why) != 0)
        return -1;
    int n = admission_scan_ahead(&d, key, q, mine, NULL);
    admission_dir_close(&d);
    return n;
}

/* A ticket in queue q on key, placed at now plus this kernel's recent GPU
 * time (a memory ticket also names its bytes). Made under a hidden name,
 * locked, then renamed into place, so that nobody ever sees it unlocked while
 * its owner lives. */
int admission_ticket_make(const char *key, char q, unsigned long long bytes, admission_ticket *t)
{
    admission_dir d;
    char why[PATH_MAX + 200], tmp[64];
    if (admission_dir_open(&d, why, sizeof why) != 0)
        return -1;
    static bool seeded;
    if (!seeded) {                  /* two containers' workers may share a pid; their salts differ */
        srandom((unsigned)getpid() ^ (unsigned)(monotonic_ms() * 1e3));
        seeded = true;
    }
    unsigned salt = (unsigned)random();
    unsigned long long place = (unsigned long long)((monotonic_ms() + usage_now()) * 1e3);
    snprintf(t->name, sizeof t->name, "%s.%c.%016llx.%016llx.%u.%lu.%d.%08x", key, q, place, bytes,
             (unsigned)geteuid(), pid_namespace(), (int)getpid(), salt);
    snprintf(tmp, sizeof tmp, ".new-%d-%08x", (int)getpid(), salt);
    t->fd = openat(d.fd, tmp, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, admission_made_mode(&d));
    int rc = -1;
    if (t->fd >= 0) {
        (void)fchmod(t->fd, admission_made_mode(&d));     /* just made, ours: others probe its lock */
        if (flock(t->fd, LOCK_EX) == 0 && renameat(d.fd, tmp, d.fd, t->name) == 0) {
            rc = 0;
        } else {
            unlinkat(d.fd, tmp, 0);
            close(t->fd);
            t->fd = -1;
        }
    }
    admission_dir_close(&d);
    return rc;
}

void admission_ticket_drop(admission_ticket *t)
{
    admission_dir d;
    char why[PATH_MAX + 200];
    if (admission_dir_open(&d, why, sizeof why) == 0) {
        unlinkat(d.fd, t->name, 0);
        admission_dir_close(&d);
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
        if (admission_ticket_make(gpus[g].key, 'c', 0, &tickets[nticket]) == 0)
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
        admission_ticket_drop(&tickets[i]);
    nticket = 0;
}

/* ---- context slots ---- */

bool admission_held(void)
{
    return held_fd >= 0;
}

bool admission_holds(const char *key)
{
    return held_fd >= 0 && strcmp(held_key, key) == 0;
}

/* Slot i of key, opened for locking; -1 when it cannot be (why says so). */
static int open_slot(const admission_dir *d, const char *key, int i, char *why, size_t len)
{
    char name[ADMISSION_KEY_LEN + 16];
    snprintf(name, sizeof name, "%s.slot%d", key, i);
    return admission_lock_open(d, name, why, len);
}

/* How many of key's n slots are held now (a probe: a shared lock tried and
 * dropped); a slot file that cannot be used counts as held. */
int admission_slots_held(const admission_dir *d, const char *key, int n)
{
    int held = 0;
    char why[PATH_MAX + 200];
    for (int i = 0; i < n; i++) {
        int fd = open_slot(d, key, i, why, sizeof why);
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
    admission_dir d;
    if (admission_dir_open(&d, why, len) != 0)
        return -1;
    /* the GPUs this worker may take a slot on now: those with more free slots than waiters ahead of it
     * (the first F in line take F free slots at once), the freest first; ties go round by pid */
    int order[ADMISSION_MAX_GPUS], free_of[ADMISSION_MAX_GPUS], cap[ADMISSION_MAX_GPUS], m = 0, queued = 0, total = 0;
    for (int k = 0; k < n && k < ADMISSION_MAX_GPUS; k++) {
        int g = (k + (int)getpid()) % n;
        int ahead = admission_scan_ahead(&d, gpus[g].key, 'c', my_ticket(gpus[g].key), NULL);
        total += cap[g] = admission_slots(&d, &gpus[g]);
        if (ahead >= cap[g] || ahead >= (free_of[g] = cap[g] - admission_slots_held(&d, gpus[g].key, cap[g]))) {
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
    char unusable[PATH_MAX + 200] = "";
    for (int k = 0; k < m && free_of[order[k]] > 0; k++) {
        int g = order[k];
        for (int i = 0; i < cap[g]; i++) {
            int fd = open_slot(&d, gpus[g].key, i, unusable, sizeof unusable);
            if (fd < 0)
                continue;           /* a slot file another user spoiled: one slot fewer, no more */
            if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
                held_fd = fd, held_index = g, *which = g;
                snprintf(held_key, sizeof held_key, "%s", gpus[g].key);
                admission_dir_close(&d);
                admission_queue_leave();    /* in before its context is made: the next in line may go */
                return 0;
            }
            close(fd);
        }
    }
    admission_dir_close(&d);
    if (unusable[0])
        klog("admission: %s", unusable);
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

/* Whether fd is the file name in d is now (not one removed or replaced since it was opened). */
static bool still_there(const admission_dir *d, const char *name, int fd)
{
    struct stat now, was;
    return fstatat(d->fd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && fstat(fd, &was) == 0 &&
           now.st_dev == was.st_dev && now.st_ino == was.st_ino;
}

/* KEY.turn, opened (kept open from one turn to the next while it is the directory's). */
static int turn_open(const char *key, error_info *err)
{
    admission_dir d;
    char why[PATH_MAX + 200], name[ADMISSION_KEY_LEN + 16];
    snprintf(name, sizeof name, "%s.turn", key);
    bool usable = admission_dir_open(&d, why, sizeof why) == 0;
    if (usable && turn_fd >= 0 && strcmp(turn_key, key) == 0 && still_there(&d, name, turn_fd)) {
        admission_dir_close(&d);
        return 0;
    }
    if (turn_fd >= 0)
        close(turn_fd);
    turn_fd = -1;
    if (usable) {
        turn_fd = admission_lock_open(&d, name, why, sizeof why);
        admission_dir_close(&d);
    }
    if (turn_fd < 0)
        return error_set(err, "AdmissionError", "cannot take a timed turn: %s; --shared-timing times alongside "
                         "other kernels without one", why);
    snprintf(turn_key, sizeof turn_key, "%s", key);
    return 0;
}

void admission_nap_ms(double ms)
{
    struct timespec t = { 0, (long)(ms * 1e6) };
    nanosleep(&t, NULL);
}

/* The error of a wait that ran out (limit_ms, CUDALAB_GPU_WAIT) while ahead others stood before it. */
int admission_waited_too_long(error_info *err, const admission_gpu *gpu, double limit_ms, int ahead, const char *what)
{
    char where[64] = "";
    if (ahead > 0)
        snprintf(where, sizeof where, " (%d ahead)", ahead);
    return error_set(err, "GPUBusyError", "waited %g s for %s on the %s%s and gave up (" ADMISSION_WAIT_ENV
                     " sets the wait)", limit_ms / 1e3, what, strcmp(gpu->key, "cpu") == 0 ? "CPU" : "GPU",
                     where);
}

int admission_turn(const admission_gpu *gpu, bool take, double limit_ms, double *waited_ms, admission_show_fn *show,
                   void *arg, error_info *err)
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
    if (turn_open(gpu->key, err) != 0)
        return -1;
    if (count_ahead(gpu->key, 't', NULL) == 0 && flock(turn_fd, LOCK_EX | LOCK_NB) == 0) {
        turn_since = monotonic_ms();
        return 0;
    }
    admission_ticket t;
    bool queued = admission_ticket_make(gpu->key, 't', 0, &t) == 0;   /* else no queue: the lock alone, in no order */
    int shown = -1, ahead = queued ? -1 : 0, rc = 0;
    double shown_at = 0, scanned_at = -1e9;
    for (;;) {
        /* the queue is read less often the further back one stands (a class of 200 reads it at once);
         * the next in line tries the lock every millisecond */
        double now = monotonic_ms();
        if (queued && now - scanned_at >= (ahead <= 0 ? 20.0 : 10.0 + 5.0 * ahead)) {
            ahead = count_ahead(gpu->key, 't', t.name);
            scanned_at = now;
        }
        if (ahead <= 0 && flock(turn_fd, LOCK_EX | LOCK_NB) == 0)
            break;
        if (magic_cancelled()) {
            rc = error_set(err, "KeyboardInterrupt", "interrupted while waiting for other kernels' timed runs");
            break;
        }
        if (now - t0 >= limit_ms) {
            rc = admission_waited_too_long(err, gpu, limit_ms, ahead, "other kernels' timed runs");
            break;
        }
        if (show && (ahead != shown || now - shown_at >= 1000)) {
            show(ahead, now - t0, arg);
            shown = ahead, shown_at = now;
        }
        admission_nap_ms(ahead <= 0 ? 1 : 5);
    }
    if (queued)
        admission_ticket_drop(&t);
    if (rc == 0)
        turn_since = monotonic_ms();
    *waited_ms = monotonic_ms() - t0;
    return rc;
}
