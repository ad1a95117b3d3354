/* internal.h — the runner's own declarations (cpu/simt/runtime/): the state
 * of the process that runs blocks, shared by the scheduler (sched.c), the
 * memory checks (check.c), the fibers (fiber.c), the counting of --counters
 * (count.c) and the process (runner.c).
 *
 * One runner process runs one block at a time on one host thread; each of
 * the block's threads is a fiber. Nothing here is touched by two host threads.
 *
 * The student's object is loaded into this image, and its references resolve
 * to the image's exported names that the loader allows (object.c:
 * runtime_name). So the runner exports only what the prelude reaches: the
 * entry points under the reserved prefixes (__cudalab_*, __tsan_*) and the
 * built-in variables (threadIdx, ...). Everything declared here but those is
 * hidden: global between the runtime's files, local to the linked runner
 * (tests/magics/test_cpu_runner_symbols.py reads its symbols). Hidden rather
 * than renamed under __cudalab_: a renamed runner_exit or arena would become
 * a name the student's object could resolve.
 */
#ifndef CUDALAB_SIMT_INTERNAL_H
#define CUDALAB_SIMT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cudalab/simt.h"

#pragma GCC visibility push(hidden)

typedef struct { unsigned x, y, z; } cl_u3;

/* ---- fibers (fiber.c) ---- */
typedef struct fiber {
    void *sp;                       /* saved stack pointer while switched out */
    void *stack;                    /* the mapping: a guard page, then the stack */
    size_t stack_bytes;
    unsigned valgrind_id;
    void *asan_fake;                /* AddressSanitizer's fake stack while switched out */
} fiber;

/* Stacks for up to n fibers. 0, or -1. */
int fiber_pool_init(fiber *f, int n, size_t stack_bytes);
/* Points f at entry(arg) from the top of its stack. */
void fiber_prepare(fiber *f, void (*entry)(void *), void *arg);
/* Saves the running context into *from and resumes to. */
void fiber_switch(fiber *from, fiber *to);
/* The first thing a fiber's entry does (AddressSanitizer learns the stacks). */
void fiber_started(void);
/* The scheduler's own context (the process's main stack). */
extern fiber fiber_main;

/* ---- threads of the block (sched.c) ---- */
enum thread_state { T_READY, T_BARRIER, T_WARP, T_DONE, T_FAULTED };

typedef struct sim_thread {
    fiber f;
    cl_u3 tid;
    uint32_t linear;                /* threadIdx as one index */
    enum thread_state state;
    uint32_t bar;                   /* __syncthreads() passed */
    int wait_line;                  /* the line of the barrier or warp operation it waits at */
    uint64_t last_pc;               /* the last student access (for a timeout's report) */
    uint64_t warp_in;               /* a warp operation's operand */
    uint64_t warp_out;              /* its result */
    int warp_arg;
} sim_thread;

typedef struct sim_warp {
    uint32_t sync;                  /* warp-level synchronisations passed (__syncwarp, shuffles) */
    int waiting;                    /* lanes waiting at the current operation */
    int op, width;
    int line;
} sim_warp;

/* The running block, as the checks see it. */
typedef struct sim_block {
    cl_u3 idx;
    uint64_t linear;
    uint64_t gen;                   /* blocks run by this process so far (shadow entries of older ones are stale) */
    uint32_t nthreads, nwarps;
    uint32_t live;                  /* threads not done */
    uint32_t at_barrier;
    sim_thread *threads;
    sim_warp *warps;
    sim_thread *cur;                /* the running thread, NULL in the scheduler */
    bool abort;                     /* a fault ends the launch: stop at the next switch */
} sim_block;

extern sim_block blk;
extern cl_simt_launch *launch;      /* the arena's header */
extern unsigned char *arena;        /* the arena as mapped here */

/* Runs every block this process takes. 0, or -1 when the launch must stop. */
int sched_run_blocks(void);
/* Allocates the process's block state for the launch's block size. 0, or -1. */
int sched_init(void);

/* ---- memory checks (check.c) ---- */
/* Sets up the shadows (global ones shared with the other processes: call
 * before forking), img the student's loaded object (its __device__ data is
 * the kernel's own memory). 0, or -1. */
struct object_image;
int check_init(const struct object_image *img);
/* A new block starts: shared memory is empty and uninitialised again. */
void check_block_start(void);
/* Shared memory for one declaration site, the same for every thread of the block. */
void *check_shared_alloc(int id, size_t elem, size_t align, const char *name, int ndims, const unsigned *dims,
                         int line, bool dynamic);
/* The shared memory of this launch, for the fiber stacks' and the shadows' ranges. */
extern uintptr_t stack_lo, stack_hi;    /* all fiber stacks */

/* ---- --counters (count.c) ---- */
/* The launch is counted (cl_simt_launch.count): the checks call count_access. */
extern bool count_on;
/* Reads the header's count; when set, the tables and the bitmaps shared by the processes (call
 * before forking). 0, or -1. */
int count_init(void);
/* A checked access of the running thread: offset from the arena's start (global) or the block's
 * shared memory's (shared), size bytes, CL_SIMT_READ / WRITE / ATOMIC, at the code address pc. */
void count_access(uintptr_t offset, unsigned size, uint32_t how, uint64_t pc, bool shared);
/* Every live lane of warp w (of every warp: block) is at one point: its requests are complete. */
void count_flush_warp(uint32_t w);
void count_flush_block(void);
/* A block starts (its threads ready), a __syncthreads() at line releases it, it ends: the lesson's
 * steps and shared bytes of the block. */
void count_block_start(void);
void count_barrier(int line);
void count_block_end(void);
/* The process has run its blocks: its totals into the report. */
void count_finish(void);

/* ---- findings (runner.c) ---- */
/* Where the running thread is. */
void where_now(cl_simt_where *w, uint64_t pc, uint32_t access);
/* Records a finding of kind k (the smallest key wins the details). */
void report_finding(int kind, uint64_t key, const cl_simt_finding *f);
/* The running thread stops here (a fault): the block goes on without it, the launch is failed. */
void thread_fault(void) __attribute__((noreturn));
/* Adds a process's counts and lesson to the report's (count.c). */
void report_add_counts(const cl_simt_counts *c, const cl_simt_lesson *l);

#pragma GCC visibility pop

/* ---- what the prelude (cudalab_simt.h) calls, with the cell line of the call: exported ---- */
void __cudalab_syncthreads(int line);
int __cudalab_syncthreads_count(int pred, int line);
int __cudalab_syncthreads_and(int pred, int line);
int __cudalab_syncthreads_or(int pred, int line);
uint64_t __cudalab_warp(int op, unsigned mask, uint64_t value, int arg, int width, int line);
unsigned __cudalab_activemask(void);
void *__cudalab_shared(int id, unsigned elem, unsigned align, const char *name, int line, int ndims, ...);
void *__cudalab_dyn_shared(unsigned elem, unsigned align, const char *name, int line);
/* Points the reference of file-scope declaration id at placed (check.c). */
void __cudalab_shared_bind(int id, void *placed);
void __cudalab_trap(int line) __attribute__((noreturn));
void __cudalab_assert_fail(const char *expr, int line) __attribute__((noreturn));
long long __cudalab_clock(void);
/* printf as a kernel calls it: to the runner's stdout, refusing %n (a store no check sees). */
int __cudalab_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#pragma GCC visibility push(hidden)

/* ---- the student's object (object.c) ---- */
#define OBJECT_MAX_SECTIONS 64
typedef struct object_section {
    char name[64];
    uint64_t addr, size;            /* where the code section lies in the image */
} object_section;
typedef struct object_image {
    void *base;
    size_t bytes;
    void (*entry)(void *const *args);   /* __cudalab_entry: the kernel with the launch's arguments */
    object_section sections[OBJECT_MAX_SECTIONS];
    int nsections;
} object_image;
/* Checks the relocatable object file[0, len) and loads it below 2 GiB: code read-only and
 * executable, its references bound to the runtime, libm and the checked stand-ins. Nothing of it
 * runs. 0, or -1 with what the student must change in why. */
int object_load(const void *file, size_t len, object_image *img, char *why, size_t why_len);
/* The loaded kernel's entry (sched.c calls it for every thread). */
extern void (*student_entry)(void *const *args);
/* The warp's synchronisations so far, for the race checks. */
uint32_t sched_warp_sync(uint32_t linear);
extern uintptr_t cur_stack_lo, cur_stack_bytes;

#pragma GCC visibility pop

static inline uint64_t finding_key(uint64_t block_linear, uint64_t detail)
{
    return block_linear << 32 | (detail & 0xffffffffu);
}

#endif
