/* confine.c — a tool run confined, under a supervisor that kills its process group (see confine.h).
 *
 * The supervisor and the tool are forked from the worker, which has threads:
 * between fork and exec they call only async-signal-safe functions, and all
 * they need (the argument and environment vectors, the descriptors) is made
 * before the fork.
 */
#include "student/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "magic/magic.h"

/* The host compiler's limits: cc1plus on the prelude and a course's kernel
 * needs well under 300 MB of address space and writes an object of a few MB. */
#define COMPILER_ADDRESS_SPACE (1536ull << 20)
#define COMPILER_FILE_SIZE (128ull << 20)
#define COMPILER_OPEN_FILES 256
#define COMPILER_LOG_MAX (32u << 10)
#define CANCEL_POLL_MS 100

void confine_compiler_limits(confine_limits *lim, double default_wall_s)
{
    const char *e = getenv(CONFINE_WALL_ENV);
    double wall = e && *e ? strtod(e, NULL) : 0;
    memset(lim, 0, sizeof *lim);
    lim->wall_s = wall > 0 ? wall : default_wall_s;
    lim->cpu_s = (unsigned long)lim->wall_s + 1;
    lim->address_space = COMPILER_ADDRESS_SPACE;
    lim->file_size = COMPILER_FILE_SIZE;
    lim->open_files = COMPILER_OPEN_FILES;
    lim->log_max = COMPILER_LOG_MAX;
    lim->cancelled = magic_cancelled;
}

/* ---- the directory ---- */

int confine_dir_make(confine_dir *d)
{
    const char *base = getenv("TMPDIR");
    if (!base || base[0] != '/' || strlen(base) > 180)
        base = "/tmp";
    snprintf(d->root, sizeof d->root, "%s/cudalab-cc-XXXXXX", base);
    if (!mkdtemp(d->root))
        return -1;
    snprintf(d->work, sizeof d->work, "%s/work", d->root);
    snprintf(d->tmp, sizeof d->tmp, "%s/tmp", d->root);
    if (mkdir(d->work, 0700) != 0 || mkdir(d->tmp, 0700) != 0) {
        confine_dir_remove(d);
        return -1;
    }
    return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

void confine_dir_remove(confine_dir *d)
{
    if (d->root[0])
        nftw(d->root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    d->root[0] = '\0';
}

/* ---- in the supervisor and the tool (async-signal-safe only) ---- */

struct verdict {
    int32_t end, status;
};

/* Closes every descriptor from 3 on but those of keep[] (ascending, repeats allowed). */
static void close_range_from(unsigned lo, unsigned hi)
{
    if (hi < lo || syscall(SYS_close_range, lo, hi, 0) == 0)
        return;
    struct rlimit nofile;           /* a kernel before 5.9: one by one, up to the descriptor limit */
    unsigned top = getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < 65536 ? (unsigned)nofile.rlim_cur
                                                                                     : 65536;
    for (unsigned fd = lo; fd <= hi && fd < top; fd++)
        close((int)fd);
}

static void close_others(const int *keep, int n)
{
    unsigned lo = 3;
    for (int i = 0; i < n; i++) {
        if (keep[i] < 0 || (unsigned)keep[i] < lo)
            continue;
        if ((unsigned)keep[i] > lo)
            close_range_from(lo, (unsigned)keep[i] - 1);
        lo = (unsigned)keep[i] + 1;
    }
    close_range_from(lo, ~0u);
}

static void say(int fd, const char *a, const char *b)
{
    if (write(fd, a, strlen(a)) < 0 || write(fd, b, strlen(b)) < 0 || write(fd, "\n", 1) < 0)
        return;
}

static void set_limit(int which, unsigned long long soft, unsigned long long hard)
{
    struct rlimit r = { soft, hard };
    setrlimit(which, &r);
}

/* The tool: its own session and group, its limits, then exec. */
static _Noreturn void become_tool(const char *path, char *const argv[], char *const envp[], const confine_dir *d,
                                  const confine_limits *lim, pid_t supervisor, int in, int out, int log)
{
    setsid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != supervisor)
        _exit(127);
    /* above 2 first, so that no dup2 below overwrites a descriptor still to be moved */
    in = fcntl(in, F_DUPFD, 3), out = fcntl(out, F_DUPFD, 3), log = fcntl(log, F_DUPFD, 3);
    if (in < 0 || out < 0 || log < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(log, 2) < 0)
        _exit(127);
    close_others(NULL, 0);
    if (chdir(d->work) != 0) {
        say(2, "cannot enter ", d->work);
        _exit(127);
    }
    set_limit(RLIMIT_CPU, lim->cpu_s, lim->cpu_s + 1);
    set_limit(RLIMIT_AS, lim->address_space, lim->address_space);
    set_limit(RLIMIT_FSIZE, lim->file_size, lim->file_size);
    set_limit(RLIMIT_NOFILE, lim->open_files, lim->open_files);
    set_limit(RLIMIT_CORE, 0, 0);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    /* what the worker set up for itself is not the tool's */
    struct sigaction dfl = { .sa_handler = SIG_DFL };
    sigemptyset(&dfl.sa_mask);
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(path, argv, envp);
    say(2, "cannot run ", path);
    _exit(127);
}

static void on_child(int sig)
{
    (void)sig;
}

static void kill_group(pid_t tool)
{
    kill(-tool, SIGKILL);
    kill(tool, SIGKILL);
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The supervisor: starts the tool, then waits for its end, the wall clock or the worker. */
static _Noreturn void supervise(const char *path, char *const argv[], char *const envp[], const confine_dir *d,
                                const confine_limits *lim, int life, int in, int out, int log)
{
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    signal(SIGINT, SIG_IGN);        /* the worker's interrupt is the worker's to pass on */
    sigset_t chld, unblocked;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &unblocked);
    sigdelset(&unblocked, SIGCHLD);
    struct sigaction sa = { .sa_handler = on_child };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, NULL);
    int keep[4] = { in, out, log, life };
    for (int i = 0; i < 4; i++)     /* ascending, for close_others */
        for (int j = i + 1; j < 4; j++)
            if (keep[j] < keep[i]) {
                int t = keep[i];
                keep[i] = keep[j];
                keep[j] = t;
            }
    close_others(keep, 4);
    double deadline = now_ms() + lim->wall_s * 1e3;
    pid_t self = getpid();
    pid_t tool = fork();
    if (tool == 0)
        become_tool(path, argv, envp, d, lim, self, in, out, log);
    struct verdict v = { CONFINE_NOT_RUN, 0 };
    if (tool < 0) {
        say(log, "cannot start the tool: ", "fork failed");
        if (write(life, &v, sizeof v) < 0)
            _exit(1);
        _exit(0);
    }
    close(in);
    close(out);
    close(log);
    int st = 0;
    bool reaped = false;
    for (;;) {
        if (waitpid(tool, &st, WNOHANG) == tool) {
            reaped = true;
            v.end = WIFEXITED(st) ? CONFINE_EXITED : CONFINE_SIGNALED;
            v.status = WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st);
            break;
        }
        double left = deadline - now_ms();
        if (left <= 0) {
            v.end = CONFINE_TIMED_OUT;
            break;
        }
        struct pollfd p = { .fd = life, .events = POLLIN };
        struct timespec ts = { (time_t)(left / 1e3), (long)((left - (time_t)(left / 1e3) * 1e3) * 1e6) };
        if (ppoll(&p, 1, &ts, &unblocked) > 0) {
            char why = CONFINE_CANCELLED;
            ssize_t n = read(life, &why, 1);    /* 0: the worker is gone */
            v.end = n == 1 && why == CONFINE_OUT_TOO_BIG ? CONFINE_OUT_TOO_BIG : CONFINE_CANCELLED;
            break;
        }
    }
    /* whatever is left of the group (the whole of it when stopped early) */
    kill_group(tool);
    if (!reaped)
        while (waitpid(tool, &st, 0) < 0 && errno == EINTR)
            ;
    /* descendants orphaned to us (we are their subreaper), dying of the kill above */
    for (double until = now_ms() + 1000; now_ms() < until;) {
        pid_t r = waitpid(-1, NULL, WNOHANG);
        if (r < 0)
            break;
        if (r == 0) {
            struct timespec ms = { 0, 1000000 };
            nanosleep(&ms, NULL);
        }
    }
    if (write(life, &v, sizeof v) < 0)
        _exit(1);
    _exit(0);
}

/* ---- in the worker ---- */

/* argv[0] as an absolute path (the tool starts in another directory), into buf. */
static int tool_path(const char *name, char *buf, size_t len)
{
    if (strchr(name, '/'))
        return realpath(name, buf) && strlen(buf) < len ? 0 : -1;
    const char *path = getenv("PATH");
    for (const char *p = path && *path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        char cand[PATH_MAX];
        if (n && snprintf(cand, sizeof cand, "%.*s/%s", (int)n, p, name) < (int)sizeof cand &&
            access(cand, X_OK) == 0 && realpath(cand, buf))
            return 0;
        p += n + (p[n] == ':');
    }
    return -1;
}

/* Appends what fd has to *buf (up to max bytes kept); 0 at its end, 1 when more may come, 2 past max. */
static int drain(int fd, char **buf, size_t *len, size_t max)
{
    char chunk[16384];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 1 : 0;
    if (n == 0)
        return 0;
    size_t take = *len < max ? ((size_t)n < max - *len ? (size_t)n : max - *len) : 0;
    if (take) {
        char *grown = realloc(*buf, *len + take + 1);
        if (!grown)
            return 2;
        memcpy(grown + *len, chunk, take);
        *len += take;
        grown[*len] = '\0';
        *buf = grown;
    }
    return take < (size_t)n ? 2 : 1;
}

static int not_run(confine_result *out, const char *why)
{
    out->end = CONFINE_NOT_RUN;
    free(out->log);
    out->log = strdup(why);
    out->log_len = out->log ? strlen(out->log) : 0;
    return -1;
}

int confine_run(char *const argv[], const confine_dir *d, const confine_limits *lim, confine_result *out)
{
    memset(out, 0, sizeof *out);
    double t0 = monotonic_ms();
    char path[PATH_MAX], env_path[PATH_MAX + 8], env_tmp[300];
    if (tool_path(argv[0], path, sizeof path) != 0)
        return not_run(out, "the compiler was not found");
    const char *p = getenv("PATH");
    snprintf(env_path, sizeof env_path, "PATH=%s", p && *p ? p : "/usr/bin:/bin");
    snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", d->tmp);
    char *envp[] = { env_path, (char *)"LC_ALL=C", env_tmp, NULL };

    int outp[2] = { -1, -1 }, logp[2] = { -1, -1 }, life[2] = { -1, -1 };
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    bool ok = in >= 0 && pipe2(logp, O_CLOEXEC) == 0 && (lim->out_max == 0 || pipe2(outp, O_CLOEXEC) == 0) &&
              socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, life) == 0;
    pid_t sup = ok ? fork() : -1;
    if (sup == 0)
        supervise(path, argv, envp, d, lim, life[1], in, outp[1] >= 0 ? outp[1] : logp[1], logp[1]);
    int err = errno;
    int child_ends[] = { in, outp[1], logp[1], life[1] };
    for (size_t i = 0; i < 4; i++)
        if (child_ends[i] >= 0)
            close(child_ends[i]);
    if (sup < 0) {
        if (outp[0] >= 0)
            close(outp[0]);
        if (logp[0] >= 0)
            close(logp[0]);
        if (life[0] >= 0)
            close(life[0]);
        char why[160];
        snprintf(why, sizeof why, "the compiler could not be started: %s", strerror(err));
        return not_run(out, why);
    }

    struct verdict v = { CONFINE_NOT_RUN, 0 };
    bool have_verdict = false, asked = false;
    int open_out = outp[0], open_log = logp[0], open_life = life[0];
    while (open_out >= 0 || open_log >= 0 || open_life >= 0) {
        struct pollfd fds[3] = { { open_out, POLLIN, 0 }, { open_log, POLLIN, 0 }, { open_life, POLLIN, 0 } };
        int n = poll(fds, 3, CANCEL_POLL_MS);
        char why = 0;
        if (!asked && lim->cancelled && lim->cancelled())
            why = CONFINE_CANCELLED;
        if (n > 0 && fds[0].revents) {
            int r = drain(open_out, &out->out, &out->out_len, lim->out_max);
            if (r == 2 && !asked)
                why = CONFINE_OUT_TOO_BIG;
            if (r == 0)
                close(open_out), open_out = -1;
        }
        if (n > 0 && fds[1].revents && drain(open_log, &out->log, &out->log_len, lim->log_max) == 0)
            close(open_log), open_log = -1;
        if (n > 0 && fds[2].revents) {
            ssize_t got = read(open_life, &v, sizeof v);
            if (got < 0 && errno == EINTR)
                continue;
            have_verdict = got == (ssize_t)sizeof v;
            close(open_life), open_life = -1;
        }
        if (why && open_life >= 0) {
            asked = true;           /* the supervisor kills the group and says so */
            if (write(open_life, &why, 1) != 1)
                shutdown(open_life, SHUT_WR);
        }
    }
    int st;
    while (waitpid(sup, &st, 0) < 0 && errno == EINTR)
        ;
    out->ms = monotonic_ms() - t0;
    if (!have_verdict)
        return not_run(out, "the compiler's supervisor ended without a word");
    out->end = (enum confine_end)v.end;
    out->status = v.status;
    if (out->end == CONFINE_NOT_RUN)
        return -1;
    return 0;
}

void confine_result_free(confine_result *r)
{
    free(r->out);
    free(r->log);
    memset(r, 0, sizeof *r);
}

const char *confine_why(const confine_result *r, const confine_limits *lim, char *buf, size_t len)
{
    buf[0] = '\0';
    switch (r->end) {
    case CONFINE_EXITED:
        break;
    case CONFINE_SIGNALED:
        if (r->status == SIGXCPU)
            snprintf(buf, len, "it used its %lu s of CPU time", lim->cpu_s);
        else if (r->status == SIGXFSZ)
            snprintf(buf, len, "it wrote a file past its limit of %llu MiB", lim->file_size >> 20);
        else
            snprintf(buf, len, "it was ended by signal %d (%s)", r->status, strsignal(r->status));
        break;
    case CONFINE_TIMED_OUT:
        snprintf(buf, len, "it ran past its limit of %g s (" CONFINE_WALL_ENV ") and was stopped", lim->wall_s);
        break;
    case CONFINE_CANCELLED:
        snprintf(buf, len, "it was interrupted");
        break;
    case CONFINE_OUT_TOO_BIG:
        snprintf(buf, len, "the preprocessed source grew past %zu MiB", lim->out_max >> 20);
        break;
    case CONFINE_NOT_RUN:
        snprintf(buf, len, "it could not be started (%s)", r->log ? r->log : "?");
        break;
    }
    return buf;
}
