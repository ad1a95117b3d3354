/* launch.c — the arena of a launch and the runner process (see simt.h).
 *
 * The arena is a memory file: the runner maps it after exec, so the buffers
 * are shared without copies, and the parent reads the report and the output
 * once the runner has exited. Buffers are page aligned with a megabyte of
 * untouched gap around each (the memory file stays sparse), so that an access
 * just past an array is attributed to that array.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "simt_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cudalab/backend.h"
#include "cudalab/host.h"

#define PAGE 4096ull
#define VALGRIND_STATUS "70"
#define GAP (1ull << 20)

static uint64_t round_page(uint64_t n)
{
    return (n + PAGE - 1) / PAGE * PAGE;
}

int simt_arena_open(simt_arena *a, const simt_buffer *b, int n, char *err)
{
    memset(a, 0, sizeof *a);
    a->fd = -1;
    if (n > CL_SIMT_MAX_BUFFERS) {
        snprintf(err, CL_ERR_LEN, "a launch of the CPU runner has at most %d buffers", CL_SIMT_MAX_BUFFERS);
        return -1;
    }
    uint64_t off[CL_SIMT_MAX_BUFFERS], at = round_page(sizeof(cl_simt_launch)) + GAP, data = 0;
    for (int i = 0; i < n; i++) {
        off[i] = at;
        at += round_page(b[i].bytes) + GAP;
        data += b[i].bytes;
    }
    if (data > CL_SIMT_MAX_ARENA) {
        snprintf(err, CL_ERR_LEN, "the CPU runner takes at most %llu MiB of buffers; this launch needs %.1f MiB "
                 "(a smaller size, or a GPU)", CL_SIMT_MAX_ARENA >> 20, (double)data / 1048576.0);
        return -1;
    }
    a->fd = memfd_create("cudalab-launch", MFD_CLOEXEC);
    if (a->fd < 0 || ftruncate(a->fd, (off_t)at) != 0) {
        snprintf(err, CL_ERR_LEN, "cannot make the CPU runner's memory: %s", strerror(errno));
        simt_arena_close(a);
        return -1;
    }
    a->base = mmap(NULL, at, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
    if (a->base == MAP_FAILED) {
        a->base = NULL;
        snprintf(err, CL_ERR_LEN, "cannot map the CPU runner's memory: %s", strerror(errno));
        simt_arena_close(a);
        return -1;
    }
    a->bytes = at;
    a->hdr = (cl_simt_launch *)a->base;
    a->hdr->nbuffers = (uint32_t)n;
    for (int i = 0; i < n; i++) {
        cl_simt_buffer *d = &a->hdr->buffers[i];
        snprintf(d->name, sizeof d->name, "%s", b[i].name);
        d->offset = off[i];
        d->bytes = b[i].bytes;
        d->elem_bytes = b[i].elem_bytes;
        d->flags = b[i].flags;
        d->rows = b[i].rows;
        d->cols = b[i].cols;
        a->host[i] = a->base + off[i];
    }
    return 0;
}

void simt_arena_close(simt_arena *a)
{
    if (a->base)
        munmap(a->base, a->bytes);
    if (a->fd >= 0)
        close(a->fd);
    memset(a, 0, sizeof *a);
    a->fd = -1;
}

/* ---- the launch's limits, as a GPU's ---- */

static int refuse_launch(const unsigned grid[3], const unsigned block[3], size_t dyn_smem, char *err)
{
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    uint64_t total = threads * grid[0] * grid[1] * grid[2];
    if (threads == 0 || threads > CL_SIMT_MAX_BLOCK_THREADS || block[2] > CL_SIMT_MAX_BLOCK_Z) {
        snprintf(err, CL_ERR_LEN, "invalid configuration argument: a block of %ux%ux%u threads (at most %d per "
                 "block, and z at most %d)", block[0], block[1], block[2], CL_SIMT_MAX_BLOCK_THREADS,
                 CL_SIMT_MAX_BLOCK_Z);
        return -1;
    }
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || grid[1] > CL_CPU_MODEL_MAX_GRID_Y ||
        grid[2] > CL_CPU_MODEL_MAX_GRID_Z) {
        snprintf(err, CL_ERR_LEN, "invalid configuration argument: a grid of %ux%ux%u blocks", grid[0], grid[1],
                 grid[2]);
        return -1;
    }
    if (total > CL_SIMT_MAX_THREADS) {
        snprintf(err, CL_ERR_LEN, "the CPU runner runs at most %llu threads (2^24) per launch; this one has %llu "
                 "(a smaller size, or a GPU)", (unsigned long long)CL_SIMT_MAX_THREADS, (unsigned long long)total);
        return -1;
    }
    if (dyn_smem > CL_SIMT_MAX_SMEM) {
        snprintf(err, CL_ERR_LEN, "too much shared memory: %zu bytes of dynamic shared memory per block (at most "
                 "%u on " CL_CPU_MODEL_SM ")", dyn_smem, CL_SIMT_MAX_SMEM);
        return -1;
    }
    return 0;
}

/* ---- the runner process ---- */

/* What the runner says on READY_FD before the kernel starts (at most this much is read). */
#define READY_MAX 8192

/* The runner (k->host_runner) on the arena and k->host_object: the child in its own session
 * (the parent kills its group whole) and dead with its parent; the arena as fd 3, the object as
 * fd 4, the write end of the ready pipe as fd 5, stdout as it is (the worker's captured output,
 * under its cap; nowhere when quiet), nothing else, and an empty environment. -1, or the child's pid. */
static pid_t spawn(const char *runner, int arena_fd, int object_fd, int ready_fd, bool quiet)
{
    pid_t p = fork();
    if (p != 0)
        return p;
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* CUDALAB_RUNNER_VALGRIND=1: the runner under valgrind memcheck (the runtime's own test, with
     * trusted kernels: fibers and checks stay clean; an error ends it with status VALGRIND_STATUS, its
     * report on the kernel's log, so stderr stays there); else stderr goes nowhere */
    const char *vg = getenv("CUDALAB_RUNNER_VALGRIND");
    bool valgrind = vg && strcmp(vg, "1") == 0;
    int null = open("/dev/null", O_RDWR);
    if (null < 0 || dup2(null, 0) < 0 || (!valgrind && dup2(null, 2) < 0) || (quiet && dup2(null, 1) < 0))
        _exit(126);
    /* copies above every fd in use first, so that no dup2 onto 3..5 overwrites a source */
    int from[3] = { fcntl(arena_fd, F_DUPFD, 100), fcntl(object_fd, F_DUPFD, 100), fcntl(ready_fd, F_DUPFD, 100) };
    for (int i = 0; i < 3; i++)
        if (from[i] < 0 || dup2(from[i], 3 + i) < 0)
            _exit(126);
    for (int i = 6; i < 1024; i++)
        close(i);
    if (valgrind)
        execlp("valgrind", "valgrind", "-q", "--error-exitcode=" VALGRIND_STATUS, runner, "3", "4", "5", (char *)NULL);
    char *const argv[] = { (char *)runner, "3", "4", "5", NULL };
    char *const envp[] = { NULL };
    execve(runner, argv, envp);
    _exit(127);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The runner's life as the parent sees it: what it said, and when the kernel started and ended. */
typedef struct runner_watch {
    char said[READY_MAX + 1];
    size_t said_len;
    double start_ms, end_ms;        /* 0 until seen */
} runner_watch;

/* One read of the runner's ready pipe into w: its words, or at the end of the pipe (every copy of
 * its write end closed) the start of the student's code; *ready is then -1. false: nothing to read now. */
static bool read_ready(int *ready, runner_watch *w)
{
    char chunk[1024];
    ssize_t n = read(*ready, chunk, sizeof chunk);
    if (n > 0) {
        size_t keep = READY_MAX - w->said_len < (size_t)n ? READY_MAX - w->said_len : (size_t)n;
        memcpy(w->said + w->said_len, chunk, keep);
        w->said_len += keep;
        w->said[w->said_len] = '\0';
        return true;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return errno == EINTR;     /* interrupted: read again; EAGAIN: nothing there yet */
    w->start_ms = now_ms();             /* every copy closed: the first student instruction is next */
    close(*ready);
    *ready = -1;
    return true;
}

/* Waits for the runner p: reads READY_FD until its end (the kernel starts), then waits for p's exit
 * (a pidfd where the kernel has them, for an exact end; else short naps), killing its group past
 * the deadline or on an interrupt. 0 with its status, or -1 (killed: *why says which). */
static int wait_runner(pid_t p, int ready, double limit_ms, runner_watch *w, int *status, const char **why)
{
    double t0 = now_ms();
    int pidfd = (int)syscall(SYS_pidfd_open, p, 0);
    for (;;) {
        struct pollfd fds[2] = { { ready, POLLIN, 0 }, { pidfd, POLLIN, 0 } };
        int nfds = 0;
        struct pollfd *at = fds;
        if (ready >= 0)
            nfds++;
        else
            at = &fds[1];
        if (pidfd >= 0)
            nfds++;
        int r = nfds ? poll(at, (nfds_t)nfds, pidfd >= 0 ? 10 : 1)
                     : nanosleep(&(struct timespec){ 0, 100000 }, NULL);   /* no pidfd: short naps */
        if (r < 0 && errno != EINTR)
            break;
        if (ready >= 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
            read_ready(&ready, w);
        pid_t done = waitpid(p, status, WNOHANG);
        if (done == p) {
            w->end_ms = now_ms();
            /* a runner that said its last words and exited within one poll: the rest of the pipe, and
             * its end (the start, within this round: no later than the end) */
            if (ready >= 0 && fcntl(ready, F_SETFL, O_NONBLOCK) == 0)
                while (ready >= 0 && read_ready(&ready, w))
                    ;
            if (w->start_ms > w->end_ms)
                w->start_ms = w->end_ms;
            if (ready >= 0)
                close(ready);
            if (pidfd >= 0)
                close(pidfd);
            return 0;
        }
        if (done < 0 && errno != EINTR) {
            *why = "lost";
            break;
        }
        bool late = now_ms() - t0 > limit_ms, cancel = cl_cancel_requested();
        if (late || cancel) {
            kill(-p, SIGKILL);
            kill(p, SIGKILL);
            waitpid(p, status, 0);
            *why = cancel ? "interrupted" : "late";
            break;
        }
    }
    if (ready >= 0)
        close(ready);
    if (pidfd >= 0)
        close(pidfd);
    return -1;
}

/* The runner's words before the start: "layers A,B,C" into the kernel's sandbox list, "section ADDR
 * SIZE NAME" into code; a "refused WHY" line (the object failed its load) into refused. */
static void read_said(const runner_watch *w, const cl_student_kernel *k, simt_code *code, char *refused, size_t len)
{
    for (const char *p = w->said; *p;) {
        size_t n = strcspn(p, "\n");
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
        unsigned long long addr, size;
        char name[64];
        if (strncmp(line, "layers ", 7) == 0 && k->sandbox && k->sandbox_len)
            snprintf(k->sandbox, k->sandbox_len, "%s", line + 7);
        else if (strncmp(line, "refused ", 8) == 0)
            snprintf(refused, len, "%s", line + 8);
        else if (sscanf(line, "section %llx %llx %63s", &addr, &size, name) == 3 && code->nsections < SIMT_MAX_SECTIONS) {
            snprintf(code->sections[code->nsections].name, sizeof code->sections[0].name, "%s", name);
            code->sections[code->nsections].addr = addr;
            code->sections[code->nsections++].size = size;
        }
        p += n + (p[n] == '\n');
    }
}

int simt_launch(simt_arena *a, const cl_student_kernel *k, const unsigned grid[3], const unsigned block[3],
                size_t dyn_smem, const cl_simt_arg *args, int nargs, double *ms, char *err)
{
    if (k->diagnosis && k->diagnosis_len)
        k->diagnosis[0] = '\0';
    if (!k->host_runner || !k->host_object) {
        snprintf(err, CL_ERR_LEN, "%s was not built for the CPU runner", k->name);
        return -1;
    }
    if (nargs > CL_SIMT_MAX_ARGS) {
        snprintf(err, CL_ERR_LEN, "a kernel of the CPU runner takes at most %d arguments", CL_SIMT_MAX_ARGS);
        return -1;
    }
    if (refuse_launch(grid, block, dyn_smem, err) != 0)
        return -1;
    cl_simt_launch *h = a->hdr;
    h->magic = CL_SIMT_MAGIC;
    h->version = CL_SIMT_VERSION;
    h->procs = k->host_one_process ? 1 : (uint32_t)cl_cpu_threads();
    h->arena_bytes = a->bytes;
    memcpy(h->grid, grid, sizeof h->grid);
    memcpy(h->block, block, sizeof h->block);
    h->dyn_smem = dyn_smem;
    h->limit_ms = k->limit_ms > 0 ? k->limit_ms : 5000;
    h->mem_limit = a->bytes * 2 + (3ull << 30);
    h->count = a->count;
    h->nargs = (uint32_t)nargs;
    memcpy(h->args, args, (size_t)nargs * sizeof *args);
    h->next_block = 0;
    memset(&h->report, 0, sizeof h->report);

    int object = open(k->host_object, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    int ready[2] = { -1, -1 };
    if (object < 0 || pipe2(ready, O_CLOEXEC) != 0) {
        snprintf(err, CL_ERR_LEN, "cannot start the CPU runner: %s", strerror(errno));
        if (object >= 0)
            close(object);
        return -1;
    }
    fflush(stdout);
    pid_t p = spawn(k->host_runner, a->fd, object, ready[1], a->quiet);
    close(object);
    close(ready[1]);
    if (p < 0) {
        close(ready[0]);
        snprintf(err, CL_ERR_LEN, "cannot start the CPU runner: %s", strerror(errno));
        return -1;
    }
    int status = 0;
    const char *why = NULL;
    static runner_watch w;
    memset(&w, 0, sizeof w);
    int waited = wait_runner(p, ready[0], h->limit_ms * 2 + 2000, &w, &status, &why);
    kill(-p, SIGKILL);              /* whatever of its process group is left (it forks the block runners) */
    simt_code code = { .object = k->host_object };
    char refused[512] = "";
    read_said(&w, k, &code, refused, sizeof refused);
    if (waited != 0 && strcmp(why, "interrupted") == 0) {
        snprintf(err, CL_ERR_LEN, "interrupted");
        return -1;
    }
    if (*refused) {
        snprintf(err, CL_ERR_LEN, "the CPU runner refused %.40s: %.180s", k->name, refused);
        return -1;
    }
    if (a->count && h->report.done) {   /* the lesson's instructions as cell lines (the clock has stopped) */
        uint64_t pcs[CL_SIMT_MAX_SITES + 2];
        for (int i = 0; i < CL_SIMT_MAX_SITES; i++)
            pcs[i] = h->report.lesson.sites[i].pc;
        pcs[CL_SIMT_MAX_SITES] = h->report.lesson.worst_pc;
        pcs[CL_SIMT_MAX_SITES + 1] = h->report.lesson.lost_pc;
        simt_lines(&code, pcs, CL_SIMT_MAX_SITES + 2, a->site_line);
    }
    bool findings = false;
    for (int i = 0; i < CL_SIMT_NKINDS; i++)
        findings |= h->report.findings[i].count > 0;
    if (findings) {
        char none[1];
        simt_explain(h, &code, k->diagnosis ? k->diagnosis : none, k->diagnosis ? k->diagnosis_len : sizeof none,
                     err);
        return -1;
    }
    if (waited != 0) {
        snprintf(err, CL_ERR_LEN, "launch limit: the kernel ran past %.0f ms on the CPU runner and was stopped "
                 "(an endless loop?)", h->limit_ms);
        return -1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !h->report.done || !w.start_ms) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
            snprintf(err, CL_ERR_LEN, "cannot run the CPU runner %s", k->host_runner);
        else if (WIFEXITED(status) && WEXITSTATUS(status) == atoi(VALGRIND_STATUS))
            snprintf(err, CL_ERR_LEN, "valgrind found an error in the CPU runner (CUDALAB_RUNNER_VALGRIND; the "
                     "kernel's log has its report)");
        else if (WIFSIGNALED(status))
            snprintf(err, CL_ERR_LEN, "the CPU runner ended by signal %d (%s)", WTERMSIG(status),
                     WTERMSIG(status) == SIGKILL ? "its memory limit?" : strsignal(WTERMSIG(status)));
        else if (WIFEXITED(status) && WEXITSTATUS(status) == 2)
            snprintf(err, CL_ERR_LEN, "the CPU runner could not close its sandbox, so it ran nothing");
        else
            snprintf(err, CL_ERR_LEN, "the CPU runner failed (exit status %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return -1;
    }
    /* the harness's clock: from the runner's last word before the kernel to its exit */
    *ms = w.end_ms - w.start_ms;
    return 0;
}
