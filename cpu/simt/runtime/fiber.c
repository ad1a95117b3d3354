/* fiber.c — the threads of a block as fibers: a stack each and a switch that
 * saves only what the C calling convention asks a callee to keep.
 *
 * glibc's swapcontext makes a system call per switch (the signal mask); a
 * block of 256 threads with a __syncthreads() per tile switches millions of
 * times, so x86-64 gets a switch of a dozen instructions. Other machines use
 * ucontext: correct, slower. The stacks are announced to AddressSanitizer and
 * valgrind, so the runtime's own tests under those tools see no false alarms.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FIBER_ASAN 1
#endif
#endif
#ifdef FIBER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define FIBER_VALGRIND 1
#endif
#endif

fiber fiber_main;

int fiber_pool_init(fiber *f, int n, size_t stack_bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    stack_bytes = (stack_bytes + page - 1) / page * page;
    for (int i = 0; i < n; i++) {
        /* a guard page below each stack: an overflow faults instead of corrupting a neighbour */
        unsigned char *m = mmap(NULL, stack_bytes + page, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return -1;
        mprotect(m, page, PROT_NONE);
        f[i].stack = m + page;
        f[i].stack_bytes = stack_bytes;
#ifdef FIBER_VALGRIND
        f[i].valgrind_id = VALGRIND_STACK_REGISTER(m + page, m + page + stack_bytes);
#endif
    }
    return 0;
}

#if defined(__x86_64__)

/* fiber_swap(&from->sp, to->sp): pushes the callee-saved registers, the SSE
 * control word and the x87 control word, swaps stacks, pops them. Hidden, as
 * everything of the runner's own (internal.h). */
__attribute__((visibility("hidden"))) void fiber_swap(void **save, void *next);
__asm__(".text\n"
        ".globl fiber_swap\n"
        ".hidden fiber_swap\n"
        ".type fiber_swap,@function\n"
        "fiber_swap:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    subq $8, %rsp\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size fiber_swap, .-fiber_swap\n"
        /* a new fiber's first return lands here: entry in r12, its argument in r13 */
        ".globl fiber_start\n"
        ".hidden fiber_start\n"
        ".type fiber_start,@function\n"
        "fiber_start:\n"
        "    movq %r13, %rdi\n"
        "    callq *%r12\n"
        "    ud2\n"
        ".size fiber_start, .-fiber_start\n");
__attribute__((visibility("hidden"))) void fiber_start(void);

void fiber_prepare(fiber *f, void (*entry)(void *), void *arg)
{
    uintptr_t top = ((uintptr_t)f->stack + f->stack_bytes) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)top;
    /* after fiber_swap's ret pops this, rsp is 16-aligned again, as a call wants */
    *--sp = (uint64_t)(uintptr_t)fiber_start;
    *--sp = 0;                              /* rbp */
    *--sp = 0;                              /* rbx */
    *--sp = (uint64_t)(uintptr_t)entry;     /* r12 */
    *--sp = (uint64_t)(uintptr_t)arg;       /* r13 */
    *--sp = 0;                              /* r14 */
    *--sp = 0;                              /* r15 */
    uint32_t mxcsr;
    uint16_t fpucw;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(fpucw));
    --sp;
    memcpy(sp, &mxcsr, 4);
    memcpy((char *)sp + 4, &fpucw, 2);
    f->sp = sp;
}

static void raw_switch(fiber *from, fiber *to)
{
    fiber_swap(&from->sp, to->sp);
}

#else /* ucontext: any other machine */
#include <ucontext.h>

typedef struct {
    ucontext_t uc;
    void (*entry)(void *);
    void *arg;
} uc_fiber;

static void uc_trampoline(unsigned hi, unsigned lo)
{
    uc_fiber *u = (uc_fiber *)(((uintptr_t)hi << 32) | lo);
    u->entry(u->arg);
}

void fiber_prepare(fiber *f, void (*entry)(void *), void *arg)
{
    /* the context lives at the top of the fiber's own stack */
    uc_fiber *u = (uc_fiber *)(((uintptr_t)f->stack + f->stack_bytes - sizeof(uc_fiber)) & ~(uintptr_t)63);
    getcontext(&u->uc);
    u->uc.uc_stack.ss_sp = f->stack;
    u->uc.uc_stack.ss_size = (size_t)((uintptr_t)u - (uintptr_t)f->stack);
    u->uc.uc_link = NULL;
    u->entry = entry;
    u->arg = arg;
    uintptr_t p = (uintptr_t)u;
    makecontext(&u->uc, (void (*)(void))uc_trampoline, 2, (unsigned)(p >> 32), (unsigned)p);
    f->sp = u;
}

static void raw_switch(fiber *from, fiber *to)
{
    static ucontext_t main_uc;
    ucontext_t *save = from == &fiber_main ? &main_uc : &((uc_fiber *)from->sp)->uc;
    ucontext_t *next = to == &fiber_main ? &main_uc : &((uc_fiber *)to->sp)->uc;
    swapcontext(save, next);
}
#endif

#ifdef FIBER_ASAN
/* The main stack's bounds, learnt by the first fiber that starts. Fibers only
 * ever switch to the scheduler and back, so a fiber resumes from main. */
static const void *main_bottom;
static size_t main_bytes;
#endif

void fiber_started(void)
{
#ifdef FIBER_ASAN
    __sanitizer_finish_switch_fiber(NULL, &main_bottom, &main_bytes);
#endif
}

void fiber_switch(fiber *from, fiber *to)
{
#ifdef FIBER_ASAN
    bool to_main = to == &fiber_main;
    __sanitizer_start_switch_fiber(&from->asan_fake, to_main ? main_bottom : to->stack,
                                   to_main ? main_bytes : to->stack_bytes);
    raw_switch(from, to);
    const void *prev_bottom;
    size_t prev_bytes;
    __sanitizer_finish_switch_fiber(from->asan_fake, &prev_bottom, &prev_bytes);
    if (from != &fiber_main)
        main_bottom = prev_bottom, main_bytes = prev_bytes;
#else
    raw_switch(from, to);
#endif
}
