/* runner.c — the process that runs one launch of a student's kernel on the
 * CPU: `RUNNER ARENA_FD OBJECT_FD READY_FD` maps the arena the CPU backend
 * prepared (include/cudalab/simt.h), loads the student's compiled object
 * itself (object.c: audited, nothing of it runs), isolates itself (its own
 * namespaces where the host permits, an empty filesystem root, no file
 * descriptors but stdout), says on READY_FD which sandbox layers are on and
 * where the kernel's code lies, forks the processes that share the grid's
 * blocks, and closes each of them into the rest of the sandbox before the
 * first student instruction: limits on time, memory, files and processes, no
 * new privileges, and a seccomp filter that allows writing to stdout, memory
 * without execute permission and little else. Closing READY_FD is the
 * parent's signal that the kernel starts: the parent owns the clock, from
 * that moment to the runner's exit; nothing the runner writes is a time.
 * `RUNNER --check OBJECT` runs the same load and says why an object is
 * refused (kernel/student/host_build.c asks it at build time).
 *
 * What goes wrong ends as a finding in the arena's report, never as a crash
 * nobody explains: a fault or a trap in the student's code names the thread
 * and the place; a thread past the time limit is stopped where it loops; a
 * forbidden system call is named by number. A launch counted for --counters
 * (count.c) adds each process's counts to the same report.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

cl_simt_launch *launch;
unsigned char *arena;
void (*student_entry)(void *const *args);

/* ---- findings ---- */

void where_now(cl_simt_where *w, uint64_t pc, uint32_t access)
{
    memset(w, 0, sizeof *w);
    memcpy(w->block, &blk.idx, sizeof w->block);
    if (blk.cur)
        memcpy(w->thread, &blk.cur->tid, sizeof w->thread);
    w->pc = pc;
    w->access = access;
}

static void lock(void)
{
    while (__atomic_exchange_n(&launch->report.lock, 1, __ATOMIC_ACQUIRE))
        ;
}

static void unlock(void)
{
    __atomic_store_n(&launch->report.lock, 0, __ATOMIC_RELEASE);
}

/* Kinds after which nothing else of the launch is worth running. */
static bool fatal(int kind)
{
    return kind == CL_SIMT_CRASH || kind == CL_SIMT_TRAP || kind == CL_SIMT_ASSERT || kind == CL_SIMT_TIMEOUT ||
           kind == CL_SIMT_SYSCALL || kind == CL_SIMT_DEADLOCK;
}

static void stop_everyone(void)
{
    /* no process takes another block */
    __atomic_store_n(&launch->next_block, UINT64_MAX / 2, __ATOMIC_RELAXED);
    blk.abort = true;
}

void report_finding(int kind, uint64_t key, const cl_simt_finding *f)
{
    cl_simt_finding *slot = &launch->report.findings[kind];
    lock();
    if (slot->count++ == 0 || key < slot->key) {
        uint64_t count = slot->count;
        *slot = *f;
        slot->count = count;
        slot->key = key;
    }
    unlock();
    if (fatal(kind))
        stop_everyone();
}

/* l's parts into the report's lesson: sums, the instructions by (pc, buffer), the worst block. */
static void add_lesson(cl_simt_lesson *to, const cl_simt_lesson *l)
{
    for (int b = 0; b < CL_SIMT_MAX_BUFFERS; b++) {
        to->loads[b] += l->loads[b];
        to->stores[b] += l->stores[b];
        to->atomics[b] += l->atomics[b];
    }
    to->sites_left_out += l->sites_left_out;
    to->lost_updates += l->lost_updates;
    for (int i = 0; i < CL_SIMT_MAX_SITES && l->sites[i].pc; i++) {
        const cl_simt_site *s = &l->sites[i];
        int j = 0;
        while (j < CL_SIMT_MAX_SITES && to->sites[j].pc &&
               (to->sites[j].pc != s->pc || to->sites[j].buffer != s->buffer || to->sites[j].atomic != s->atomic))
            j++;
        if (j == CL_SIMT_MAX_SITES) {
            to->sites_left_out += s->requests;
            continue;
        }
        if (!to->sites[j].pc)
            to->sites[j].pc = s->pc, to->sites[j].buffer = s->buffer, to->sites[j].atomic = s->atomic;
        to->sites[j].requests += s->requests;
        to->sites[j].sectors += s->sectors;
    }
    for (int k = 0; k <= CL_SIMT_MAX_STEPS; k++)
        to->divergent_blocks[k] += l->divergent_blocks[k];
    if (l->worst_steps > to->worst_steps || (l->worst_steps && l->worst_steps == to->worst_steps &&
                                             l->worst_block < to->worst_block)) {
        to->worst_steps = l->worst_steps;
        to->worst_block = l->worst_block;
        to->worst_line = l->worst_line;
        to->worst_pc = l->worst_pc;
    }
    if (!to->lost_pc)
        to->lost_pc = l->lost_pc;
    if (l->shared_read_bytes > to->shared_read_bytes)
        to->shared_read_bytes = l->shared_read_bytes;
}

void report_add_counts(const cl_simt_counts *c, const cl_simt_lesson *l)
{
    cl_simt_counts *sum = &launch->report.counts;
    lock();
    add_lesson(&launch->report.lesson, l);
    sum->requests += c->requests;
    sum->active_lanes += c->active_lanes;
    sum->global_loads += c->global_loads;
    sum->global_load_sectors += c->global_load_sectors;
    sum->shared_requests += c->shared_requests;
    sum->bank_conflicts += c->bank_conflicts;
    sum->read_sectors += c->read_sectors;
    sum->written_sectors += c->written_sectors;
    sum->uncounted += c->uncounted;
    unlock();
}

/* Ends the process after a fatal finding (timeout, crash), or when the launch is done. */
static __attribute__((noreturn)) void runner_exit(int code)
{
    fflush(stdout);
    _exit(code);
}

/* ---- what the prelude calls ---- */

void *__cudalab_shared(int id, unsigned elem, unsigned align, const char *name, int line, int ndims, ...)
{
    unsigned dims[4] = {0};
    va_list ap;
    va_start(ap, ndims);
    for (int i = 0; i < ndims && i < 4; i++)
        dims[i] = va_arg(ap, unsigned);
    va_end(ap);
    return check_shared_alloc(id, elem, align, name, ndims, dims, line, false);
}

void *__cudalab_dyn_shared(unsigned elem, unsigned align, const char *name, int line)
{
    return check_shared_alloc(-1, elem, align, name, 0, NULL, line, true);
}

static void stop_thread(int kind, int line, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));
static void stop_thread(int kind, int line, const char *fmt, ...)
{
    cl_simt_finding f;
    memset(&f, 0, sizeof f);
    where_now(&f.at, 0, 0);
    f.at.line = (uint32_t)line;
    f.buffer = -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f.what, sizeof f.what, fmt, ap);
    va_end(ap);
    report_finding(kind, finding_key(blk.linear, blk.cur ? blk.cur->linear : 0), &f);
    thread_fault();
}

void __cudalab_trap(int line)
{
    stop_thread(CL_SIMT_TRAP, line, "called __trap()");
}

void __cudalab_assert_fail(const char *expr, int line)
{
    stop_thread(CL_SIMT_ASSERT, line, "%s", expr);
}

int __cudalab_printf(const char *fmt, ...)
{
    for (const char *p = fmt; (p = strchr(p, '%'));) {
        p++;
        p += strspn(p, "0123456789.-+ #'*$hlLqjzt");
        if (*p == 'n')
            stop_thread(CL_SIMT_TRAP, 0, "called printf with %%n, a store through the format that the CPU runner "
                        "cannot check");
        if (*p)
            p++;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vprintf(fmt, ap);
    va_end(ap);
    return n;
}

long long __cudalab_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- signals: a fault, the time limit ---- */

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV (an invalid memory access)";
    case SIGBUS: return "SIGBUS (a misaligned or invalid access)";
    case SIGFPE: return "SIGFPE (an integer division by zero)";
    case SIGILL: return "SIGILL (an invalid instruction)";
    default: return "a signal";
    }
}

static uint64_t context_pc(void *uc)
{
#if defined(__x86_64__)
    return (uint64_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uint64_t)((ucontext_t *)uc)->uc_mcontext.pc;
#else
    (void)uc;
    return 0;
#endif
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    /* the interrupted instruction, and the student's last access: the parent
     * names whichever of the two is a line of the cell (a fault or a loop may
     * stop inside the runtime: a check, a barrier) */
    cl_simt_finding f;
    memset(&f, 0, sizeof f);
    where_now(&f.at, context_pc(uc), 0);
    f.other.pc = blk.cur ? blk.cur->last_pc : 0;
    f.buffer = -1;
    int kind = CL_SIMT_CRASH;
    if (sig == SIGALRM || sig == SIGXCPU) {
        kind = CL_SIMT_TIMEOUT;
        snprintf(f.what, sizeof f.what, "%.0f", launch->limit_ms);
    } else if (sig == SIGSYS) {
        kind = CL_SIMT_SYSCALL;
        snprintf(f.what, sizeof f.what, "%d", si->si_syscall);
    } else {
        snprintf(f.what, sizeof f.what, "%s", signal_name(sig));
        if (blk.cur && si->si_addr && (uintptr_t)si->si_addr - (stack_lo - 4096) < 4096 + (stack_hi - stack_lo))
            snprintf(f.what, sizeof f.what, "a thread's stack overflowed (%u KiB): deep recursion or large "
                     "local arrays", (unsigned)(blk.cur->f.stack_bytes >> 10));
    }
    report_finding(kind, finding_key(blk.linear, blk.cur ? blk.cur->linear : 0), &f);
    runner_exit(3);
}

static int install_signals(void)
{
    static unsigned char alt[64 << 10];
    stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0 };
    if (sigaltstack(&ss, NULL) != 0)
        return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigfillset(&sa.sa_mask);
    int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGALRM, SIGXCPU, SIGSYS };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (sigaction(sigs[i], &sa, NULL) != 0)
            return -1;
    return 0;
}

/* ---- the sandbox ---- */

#if defined(__x86_64__)
#define SANDBOX_ARCH AUDIT_ARCH_X86_64
#endif

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

/* The layers in place, for the run's document (READY_FD), in the order they go on. */
static char layers[512];

static void layer(const char *name)
{
    size_t n = strlen(layers);
    snprintf(layers + n, sizeof layers - n, "%s%s", n ? "," : "", name);
}

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Namespaces, where the host permits: a user namespace (root inside maps to the caller, who keeps
 * no privilege outside), then no network, a private mount table whose root is an empty read-only
 * tmpfs, and no System V IPC. Each is optional; what took is said. Before the blocks fork, so that
 * every process of the launch is inside. */
static void isolate(void)
{
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER) == 0) {
        char map[64];
        write_file("/proc/self/setgroups", "deny");
        snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
        bool mapped = write_file("/proc/self/uid_map", map) == 0;
        snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
        mapped = write_file("/proc/self/gid_map", map) == 0 && mapped;
        layer(mapped ? "user-namespace" : "user-namespace-unmapped");
    }
    if (unshare(CLONE_NEWNET) == 0)
        layer("network-namespace");
    if (unshare(CLONE_NEWIPC) == 0)
        layer("ipc-namespace");
    if (unshare(CLONE_NEWNS) == 0) {
        layer("mount-namespace");
        /* (the first mount's type is ignored; valgrind wants one all the same) */
        if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) == 0 &&
            mount("cudalab-empty", "/", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555") == 0 &&
            chdir("/") == 0 && chroot(".") == 0 && chdir("/") == 0)
            layer("empty-root");
    }
}

/* Every descriptor but stdout closed (stdin and stderr included: a kernel's words go to stdout,
 * which the worker caps); keep: one more to leave open (READY_FD until the blocks start), or -1. */
static void close_fds(int keep)
{
    for (int fd = 0; fd < 1024; fd++)
        if (fd != 1 && fd != keep)
            close(fd);
}

#define ALLOW(sys) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (sys), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
/* sys allowed when its argument arg (low 32 bits) is value */
#define ALLOW_ARG_IS(sys, arg, value)                                                                      \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (sys), 0, 3),                                                      \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[arg])),                          \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (value), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),      \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
/* sys allowed when its argument arg (low 32 bits) has none of the bits mask, else trapped */
#define ALLOW_ARG_WITHOUT(sys, arg, mask)                                                                  \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (sys), 0, 4),                                                      \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[arg])),                          \
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, (mask), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),        \
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/* The launch's limits and its system call filter, in this process; the last thing before the
 * student's code. What may be called: writes to stdout (printf), memory without execute permission
 * (the stacks, malloc), the signals the runtime handles (a fault, the time limit), the clock,
 * waiting for the block processes, and exit. Nothing that names a path, another process, a socket
 * or a program. */
static int sandbox(void)
{
    double limit_s = launch->limit_ms / 1000.0;
    /* under valgrind (the runtime's own memory check): its tool refuses an address-space limit and a
     * seccomp filter, so the time limits alone apply */
    bool valgrind = RUNNING_ON_VALGRIND;
    struct rlimit cpu = { (rlim_t)limit_s + 2, (rlim_t)limit_s + 4 };
    struct rlimit as = { launch->mem_limit, launch->mem_limit };
    struct rlimit none = { 0, 0 };
    if (setrlimit(RLIMIT_CPU, &cpu) != 0 || (!valgrind && setrlimit(RLIMIT_AS, &as) != 0) ||
        setrlimit(RLIMIT_CORE, &none) != 0 || setrlimit(RLIMIT_FSIZE, &none) != 0 ||
        (!valgrind && setrlimit(RLIMIT_NOFILE, &(struct rlimit){ 2, 2 }) != 0) ||
        setrlimit(RLIMIT_NPROC, &none) != 0 || setrlimit(RLIMIT_MEMLOCK, &none) != 0)
        return -1;
    struct itimerval it = { { 0, 0 }, { (time_t)limit_s, (suseconds_t)((limit_s - (time_t)limit_s) * 1e6) } };
    if (launch->limit_ms > 0 && setitimer(ITIMER_REAL, &it, NULL) != 0)
        return -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
#ifdef SANDBOX_ARCH
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SANDBOX_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        ALLOW_ARG_IS(SYS_write, 0, 1),
        ALLOW_ARG_IS(SYS_writev, 0, 1),
        ALLOW_ARG_WITHOUT(SYS_mmap, 2, PROT_EXEC),
        ALLOW_ARG_WITHOUT(SYS_mprotect, 2, PROT_EXEC),
        ALLOW_ARG_IS(SYS_madvise, 2, MADV_DONTNEED),
        ALLOW(SYS_exit), ALLOW(SYS_exit_group), ALLOW(SYS_rt_sigreturn), ALLOW(SYS_rt_sigprocmask),
        ALLOW(SYS_brk), ALLOW(SYS_munmap), ALLOW(SYS_mremap), ALLOW(SYS_futex), ALLOW(SYS_clock_gettime),
        ALLOW(SYS_gettimeofday), ALLOW(SYS_sched_yield), ALLOW(SYS_wait4), ALLOW(SYS_nanosleep),
        ALLOW(SYS_clock_nanosleep), ALLOW(SYS_getpid), ALLOW(SYS_gettid), ALLOW(SYS_fstat),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
    };
    struct sock_fprog prog = { (unsigned short)(sizeof filter / sizeof filter[0]), filter };
    if (valgrind)
        return 0;
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
        return -1;
#else
    if (!valgrind)
        return -1;                  /* no filter for this machine: the runner refuses to run */
#endif
    return 0;
}

/* ---- the launch ---- */

static int map_arena(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < sizeof(cl_simt_launch))
        return -1;
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -1;
    arena = m;
    launch = m;
    cl_simt_launch *l = launch;
    if (l->magic != CL_SIMT_MAGIC || l->version != CL_SIMT_VERSION || l->arena_bytes != (uint64_t)st.st_size ||
        l->nbuffers > CL_SIMT_MAX_BUFFERS || l->nargs > CL_SIMT_MAX_ARGS)
        return -1;
    uint64_t threads = (uint64_t)l->block[0] * l->block[1] * l->block[2];
    if (threads == 0 || threads > CL_SIMT_MAX_BLOCK_THREADS || !l->grid[0] || !l->grid[1] || !l->grid[2])
        return -1;
    for (uint32_t i = 0; i < l->nbuffers; i++) {
        cl_simt_buffer *b = &l->buffers[i];
        if (b->offset < sizeof *l || b->offset > l->arena_bytes || b->bytes > l->arena_bytes - b->offset)
            return -1;
    }
    for (uint32_t i = 0; i < l->nargs; i++)
        if (l->args[i].kind == CL_SIMT_ARG_BUFFER && l->args[i].buffer >= l->nbuffers)
            return -1;
    return 0;
}

/* The object on fd, read whole (at most CL_SIMT_MAX_OBJECT bytes), and loaded. 0, or -1 with why. */
static int load_object(int fd, object_image *img, char *why, size_t len)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > CL_SIMT_MAX_OBJECT) {
        snprintf(why, len, "the compiled kernel is missing or larger than %d MiB", CL_SIMT_MAX_OBJECT >> 20);
        return -1;
    }
    unsigned char *buf = malloc((size_t)st.st_size);
    size_t got = 0;
    while (buf && got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    int rc = buf && got == (size_t)st.st_size ? object_load(buf, got, img, why, len) : -1;
    if (rc != 0 && (!buf || got != (size_t)st.st_size))
        snprintf(why, len, "cannot read the compiled kernel");
    free(buf);
    return rc;
}

/* Writes all of text to fd (the parent reads READY_FD while the runner starts). */
static void say_all(int fd, const char *text)
{
    for (size_t n = strlen(text); n;) {
        ssize_t w = write(fd, text, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        text += w;
        n -= (size_t)w;
    }
}

/* The blocks this process takes, inside the sandbox; never returns. */
static void run_sandboxed(int ready)
{
    close(ready);                   /* the parent's clock starts when the last copy is closed */
    if (sandbox() != 0)
        _exit(2);
    sched_run_blocks();
    count_finish();
    runner_exit(0);
}

int main(int argc, char **argv)
{
    static char outbuf[1 << 14];
    char why[512] = "";
    object_image img;
    if (argc == 3 && strcmp(argv[1], "--check") == 0) {
        if (load_object(open(argv[2], O_RDONLY | O_NOFOLLOW | O_CLOEXEC), &img, why, sizeof why) != 0) {
            printf("%s\n", why);
            return 1;
        }
        return 0;
    }
    /* line-buffered stdout with our buffer: printf needs no system call but write */
    setvbuf(stdout, outbuf, _IOLBF, sizeof outbuf);
    int ready = argc == 4 ? atoi(argv[3]) : -1;
    if (argc != 4 || ready < 3 || map_arena(atoi(argv[1])) != 0) {
        fprintf(stderr, "cudalab runner: usage: %s ARENA_FD OBJECT_FD READY_FD (a launch prepared by cudalab), "
                "or --check OBJECT\n", argv[0]);
        return 2;
    }
    if (load_object(atoi(argv[2]), &img, why, sizeof why) != 0) {
        dprintf(ready, "refused %s\n", why);
        return 2;
    }
    student_entry = img.entry;
    layer("audited-object");
    if (check_init(&img) != 0 || sched_init() != 0 || count_init() != 0 || install_signals() != 0) {
        dprintf(ready, "refused out of memory setting up the launch\n");
        return 2;
    }
    isolate();
    close_fds(ready);
    layer("no-descriptors");
    layer("empty-environment");
    if (!RUNNING_ON_VALGRIND)
        layer("seccomp");
    layer("no-new-privileges");
    layer("limits");
    /* what the parent reads before the start: the layers, and where the kernel's code lies (for the
     * lines of a finding's address) */
    char msg[4096];
    int n = snprintf(msg, sizeof msg, "layers %s\n", layers);
    for (int i = 0; i < img.nsections && n < (int)sizeof msg - 128; i++)
        n += snprintf(msg + n, sizeof msg - (size_t)n, "section %" PRIx64 " %" PRIx64 " %s\n",
                      img.sections[i].addr, img.sections[i].size, img.sections[i].name);
    say_all(ready, msg);

    uint64_t blocks = (uint64_t)launch->grid[0] * launch->grid[1] * launch->grid[2];
    uint32_t procs = launch->procs ? launch->procs : 1;
    if (procs > blocks)
        procs = (uint32_t)blocks;
    pid_t kids[64];
    uint32_t nkids = 0;
    for (uint32_t i = 1; i < procs && nkids < 64; i++) {
        pid_t p = fork();
        if (p == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);   /* never outlives the launch's first process */
            run_sandboxed(ready);
        }
        if (p > 0)
            kids[nkids++] = p;
    }
    close(ready);
    if (sandbox() != 0)
        return 2;
    sched_run_blocks();
    count_finish();
    for (uint32_t i = 0; i < nkids; i++) {
        int st = 0;
        while (waitpid(kids[i], &st, 0) < 0 && errno == EINTR)
            ;
        if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS) {
            cl_simt_finding f;
            memset(&f, 0, sizeof f);
            f.buffer = -1;
            snprintf(f.what, sizeof f.what, "?");
            report_finding(CL_SIMT_SYSCALL, UINT64_MAX, &f);
        } else if (WIFSIGNALED(st) && launch->report.findings[CL_SIMT_CRASH].count == 0 &&
                   launch->report.findings[CL_SIMT_TIMEOUT].count == 0) {
            cl_simt_finding f;
            memset(&f, 0, sizeof f);
            f.buffer = -1;
            snprintf(f.what, sizeof f.what, "a block's process ended by signal %d%s", WTERMSIG(st),
                     WTERMSIG(st) == SIGKILL ? " (its memory or time limit)" : "");
            report_finding(CL_SIMT_CRASH, UINT64_MAX, &f);
        }
    }
    launch->report.done = 1;
    runner_exit(0);
}
