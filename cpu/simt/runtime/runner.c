/* runner.c — the process that runs one launch of a student's kernel on the
 * CPU: `RUNNER FD` maps the arena the CPU backend prepared (include/cudalab/
 * simt.h), checks its header, forks the processes that share the grid's
 * blocks, and closes each of them into a sandbox before any student code
 * runs: limits on time, memory and processes, and a seccomp filter that
 * allows writing to the output streams, memory management and little else,
 * so the code can open no file, start no program and reach no network.
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
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

void report_add_counts(const cl_simt_counts *c)
{
    cl_simt_counts *sum = &launch->report.counts;
    lock();
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

void runner_exit(int code)
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
    stop_thread(CL_SIMT_TRAP, line, "__trap()");
}

void __cudalab_assert_fail(const char *expr, int line)
{
    stop_thread(CL_SIMT_ASSERT, line, "%s", expr);
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
#elif defined(__aarch64__)
#define SANDBOX_ARCH AUDIT_ARCH_AARCH64
#endif

#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

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
        setrlimit(RLIMIT_CORE, &none) != 0 || (!valgrind && setrlimit(RLIMIT_NOFILE, &(struct rlimit){ 3, 3 }) != 0))
        return -1;
    struct itimerval it = { { 0, 0 }, { (time_t)limit_s, (suseconds_t)((limit_s - (time_t)limit_s) * 1e6) } };
    if (launch->limit_ms > 0 && setitimer(ITIMER_REAL, &it, NULL) != 0)
        return -1;
#ifdef SANDBOX_ARCH
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SANDBOX_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        ALLOW(SYS_read), ALLOW(SYS_write), ALLOW(SYS_writev), ALLOW(SYS_exit), ALLOW(SYS_exit_group),
        ALLOW(SYS_rt_sigreturn), ALLOW(SYS_rt_sigprocmask), ALLOW(SYS_brk), ALLOW(SYS_mmap), ALLOW(SYS_munmap),
        ALLOW(SYS_mremap), ALLOW(SYS_madvise), ALLOW(SYS_futex), ALLOW(SYS_clock_gettime),
        ALLOW(SYS_gettimeofday), ALLOW(SYS_sched_yield), ALLOW(SYS_getpid), ALLOW(SYS_gettid),
        ALLOW(SYS_wait4), ALLOW(SYS_tgkill), ALLOW(SYS_nanosleep), ALLOW(SYS_clock_nanosleep),
        ALLOW(SYS_newfstatat), ALLOW(SYS_fstat), ALLOW(SYS_close),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
    };
    struct sock_fprog prog = { (unsigned short)(sizeof filter / sizeof filter[0]), filter };
    if (valgrind)
        return 0;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
        return -1;
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

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    static char outbuf[1 << 14];
    /* line-buffered stdout with our buffer: printf needs no system call but write */
    setvbuf(stdout, outbuf, _IOLBF, sizeof outbuf);
    if (argc != 2 || map_arena(atoi(argv[1])) != 0) {
        fprintf(stderr, "cudalab runner: usage: %s ARENA_FD (a launch prepared by cudalab)\n", argv[0]);
        return 2;
    }
    if (check_init() != 0 || sched_init() != 0 || count_init() != 0 || install_signals() != 0) {
        fprintf(stderr, "cudalab runner: out of memory setting up the launch\n");
        return 2;
    }
    uint64_t blocks = (uint64_t)launch->grid[0] * launch->grid[1] * launch->grid[2];
    uint32_t procs = launch->procs ? launch->procs : 1;
    if (procs > blocks)
        procs = (uint32_t)blocks;
    double t0 = now_ms();
    pid_t kids[64];
    uint32_t nkids = 0;
    for (uint32_t i = 1; i < procs && nkids < 64; i++) {
        pid_t p = fork();
        if (p == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);   /* never outlives the launch's first process */
            if (sandbox() != 0)
                _exit(2);
            sched_run_blocks();
            count_finish();
            runner_exit(0);
        }
        if (p > 0)
            kids[nkids++] = p;
    }
    if (sandbox() != 0) {
        fprintf(stderr, "cudalab runner: the sandbox could not be set up (%s)\n", strerror(errno));
        return 2;
    }
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
    launch->report.ms = now_ms() - t0;
    launch->report.done = 1;
    runner_exit(0);
}
