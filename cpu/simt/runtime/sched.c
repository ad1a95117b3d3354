/* sched.c — a block's threads as fibers, run in turn on one host thread:
 * __syncthreads() is a real barrier (a thread waits there until every other
 * live thread of its block arrives), warp operations are barriers of the warp
 * that exchange values, and what a GPU would hang on or leave undefined is a
 * finding: a barrier that part of the block never reaches, threads waiting at
 * different barriers, a warp whose lanes wait at different operations.
 *
 * The student's code reads threadIdx, blockIdx, blockDim and gridDim as plain
 * globals (the prelude declares them): they hold the running thread's values,
 * set at every switch. A thread runs until it waits or returns, so a kernel
 * without barriers switches once per thread.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the student's code reads (the prelude declares them const uint3/dim3). */
cl_u3 threadIdx, blockIdx, blockDim, gridDim;

sim_block blk;
uintptr_t stack_lo, stack_hi;
uintptr_t cur_stack_lo, cur_stack_bytes;

#define FIBER_STACK (256u << 10)

static void *arg_ptrs[CL_SIMT_MAX_ARGS];
static void *buffer_ptrs[CL_SIMT_MAX_ARGS];
static cl_simt_arg arg_values[CL_SIMT_MAX_ARGS];   /* copied out of the arena's header */

int sched_init(void)
{
    const uint32_t *b = launch->block;
    blk.nthreads = b[0] * b[1] * b[2];
    blk.nwarps = (blk.nthreads + 31) / 32;
    blk.threads = calloc(blk.nthreads, sizeof *blk.threads);
    blk.warps = calloc(blk.nwarps, sizeof *blk.warps);
    if (!blk.threads || !blk.warps)
        return -1;
    fiber *stacks = calloc(blk.nthreads, sizeof *stacks);
    if (!stacks || fiber_pool_init(stacks, (int)blk.nthreads, FIBER_STACK) != 0)
        return -1;
    stack_lo = UINTPTR_MAX;
    for (uint32_t i = 0; i < blk.nthreads; i++) {
        sim_thread *t = &blk.threads[i];
        t->f = stacks[i];
        t->linear = i;
        t->tid = (cl_u3){ i % b[0], i / b[0] % b[1], i / (b[0] * b[1]) };
        uintptr_t lo = (uintptr_t)t->f.stack;
        if (lo < stack_lo)
            stack_lo = lo;
        if (lo + t->f.stack_bytes > stack_hi)
            stack_hi = lo + t->f.stack_bytes;
    }
    free(stacks);
    blockDim = (cl_u3){ b[0], b[1], b[2] };
    gridDim = (cl_u3){ launch->grid[0], launch->grid[1], launch->grid[2] };
    for (uint32_t i = 0; i < launch->nargs; i++) {
        cl_simt_arg *a = &launch->args[i];
        if (a->kind == CL_SIMT_ARG_BUFFER) {
            buffer_ptrs[i] = arena + launch->buffers[a->buffer].offset;
            arg_ptrs[i] = &buffer_ptrs[i];
        } else {
            arg_values[i] = *a;
            arg_ptrs[i] = &arg_values[i].v;
        }
    }
    return 0;
}

/* ---- switching ---- */

static void resume(sim_thread *t)
{
    blk.cur = t;
    threadIdx = t->tid;
    cur_stack_lo = (uintptr_t)t->f.stack;
    cur_stack_bytes = t->f.stack_bytes;
    fiber_switch(&fiber_main, &t->f);
    blk.cur = NULL;
}

/* The running thread waits: back to the scheduler until released. */
static void yield(void)
{
    sim_thread *t = blk.cur;
    fiber_switch(&t->f, &fiber_main);
    if (blk.abort)
        thread_fault();
}

/* ---- barriers ---- */

static void report_divergent(const char *fmt, ...)
{
    cl_simt_finding f;
    memset(&f, 0, sizeof f);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f.what, sizeof f.what, fmt, ap);
    va_end(ap);
    /* the first waiting thread stands for the block */
    for (uint32_t i = 0; i < blk.nthreads; i++)
        if (blk.threads[i].state == T_BARRIER || blk.threads[i].state == T_WARP) {
            sim_thread *save = blk.cur;
            blk.cur = &blk.threads[i];
            where_now(&f.at, 0, 0);
            f.at.line = (uint32_t)blk.threads[i].wait_line;
            blk.cur = save;
            break;
        }
    f.buffer = -1;
    f.value = blk.at_barrier;
    f.expected = blk.nthreads;
    report_finding(CL_SIMT_DIVERGENT_BARRIER, finding_key(blk.linear, 0), &f);
}

/* Every live thread is at a barrier: check they are at the same one and that
 * none returned without reaching it, combine the predicates, release them. */
static void barrier_release(void)
{
    int first_line = -1, other_line = -1, first_n = 0, other_n = 0, done = 0, preds = 0;
    for (uint32_t i = 0; i < blk.nthreads; i++) {
        sim_thread *t = &blk.threads[i];
        if (t->state == T_DONE)
            done++;
        if (t->state != T_BARRIER)
            continue;
        preds += t->warp_arg != 0;
        if (first_line < 0 || t->wait_line == first_line)
            first_line = t->wait_line, first_n++;
        else
            other_line = t->wait_line, other_n++;
    }
    if (other_n)
        report_divergent("threads of one block wait at different __syncthreads(): %d at line %d, %d at line %d",
                         first_n, first_line, other_n, other_line);
    else if (done)
        report_divergent("__syncthreads() at line %d was reached by %u of the block's %u threads: %d had "
                         "returned without reaching it", first_line, blk.at_barrier, blk.nthreads, done);
    for (uint32_t i = 0; i < blk.nthreads; i++) {
        sim_thread *t = &blk.threads[i];
        if (t->state != T_BARRIER)
            continue;
        t->state = T_READY;
        t->bar++;
        t->warp_out = (uint64_t)preds;
    }
    blk.at_barrier = 0;
    count_flush_block();
    count_barrier(first_line);
}

static int block_sync(int pred, int line)
{
    sim_thread *t = blk.cur;
    t->state = T_BARRIER;
    t->wait_line = line;
    t->warp_arg = pred;
    blk.at_barrier++;
    if (blk.at_barrier == blk.live) {
        barrier_release();
        t->state = T_READY;
    } else {
        yield();
    }
    return (int)t->warp_out;
}

void __cudalab_syncthreads(int line)
{
    block_sync(0, line);
}

int __cudalab_syncthreads_count(int pred, int line)
{
    return block_sync(pred != 0, line);
}

int __cudalab_syncthreads_and(int pred, int line)
{
    return block_sync(pred != 0, line) == (int)blk.live;
}

int __cudalab_syncthreads_or(int pred, int line)
{
    return block_sync(pred != 0, line) > 0;
}

/* ---- warp operations ---- */

/* the prelude's __cudalab_w_* (cudalab_simt.h), in its order */
enum { W_SYNC, W_SHFL, W_SHFL_UP, W_SHFL_DOWN, W_SHFL_XOR, W_BALLOT, W_ANY, W_ALL, W_REDUCE_ADD };

static uint32_t warp_first(uint32_t w) { return w * 32; }

static uint32_t warp_lanes(uint32_t w)
{
    uint32_t n = blk.nthreads - warp_first(w);
    return n < 32 ? n : 32;
}

static uint32_t warp_live(uint32_t w)
{
    uint32_t live = 0;
    for (uint32_t l = 0; l < warp_lanes(w); l++) {
        enum thread_state s = blk.threads[warp_first(w) + l].state;
        live += s != T_DONE && s != T_FAULTED;
    }
    return live;
}

static void warp_release(uint32_t w)
{
    sim_warp *wp = &blk.warps[w];
    sim_thread *lane0 = &blk.threads[warp_first(w)];
    uint32_t n = warp_lanes(w), width = (uint32_t)(wp->width > 0 && wp->width <= 32 ? wp->width : 32);
    uint64_t ballot = 0, sum = 0;
    for (uint32_t l = 0; l < n; l++)
        if (lane0[l].state == T_WARP) {
            ballot |= (uint64_t)(lane0[l].warp_in != 0) << l;
            sum += lane0[l].warp_in;
        }
    for (uint32_t l = 0; l < n; l++) {
        sim_thread *t = &lane0[l];
        if (t->state != T_WARP)
            continue;
        uint32_t seg = l & ~(width - 1), src = l;
        int arg = t->warp_arg;
        switch (wp->op) {
        case W_SHFL: src = seg + ((uint32_t)arg & (width - 1)); break;
        case W_SHFL_UP: src = l - (uint32_t)arg >= seg && (uint32_t)arg <= l ? l - (uint32_t)arg : l; break;
        case W_SHFL_DOWN: src = l + (uint32_t)arg < seg + width ? l + (uint32_t)arg : l; break;
        case W_SHFL_XOR: src = (l ^ (uint32_t)arg) < seg + width ? l ^ (uint32_t)arg : l; break;
        default: break;
        }
        if (src >= n || lane0[src].state != T_WARP)
            src = l;                /* a lane that left: the GPU's value is undefined, ours is the lane's own */
        switch (wp->op) {
        case W_BALLOT: t->warp_out = ballot; break;
        case W_ANY: t->warp_out = ballot != 0; break;
        case W_ALL: t->warp_out = __builtin_popcountll(ballot) == (int)wp->waiting; break;
        case W_REDUCE_ADD: t->warp_out = sum; break;
        case W_SYNC: t->warp_out = 0; break;
        default: t->warp_out = lane0[src].warp_in; break;
        }
        t->state = T_READY;
    }
    wp->waiting = 0;
    wp->sync++;
    count_flush_warp(w);
}

/* mask is not read: the lanes that take part are the warp's live ones (a lane
 * that returned no longer counts, as a warp's exited threads on a GPU). */
uint64_t __cudalab_warp(int op, unsigned mask, uint64_t value, int arg, int width, int line)
{
    sim_thread *t = blk.cur;
    uint32_t w = t->linear / 32;
    sim_warp *wp = &blk.warps[w];
    if (wp->waiting == 0) {
        wp->op = op, wp->width = width, wp->line = line;
    } else if (wp->op != op || wp->line != line) {
        cl_simt_finding f;
        memset(&f, 0, sizeof f);
        where_now(&f.at, 0, 0);
        f.at.line = (uint32_t)line;
        f.buffer = -1;
        snprintf(f.what, sizeof f.what, "the lanes of warp %u wait at different warp operations: line %d and "
                 "line %d", w, wp->line, line);
        report_finding(CL_SIMT_DIVERGENT_BARRIER, finding_key(blk.linear, t->linear), &f);
    }
    t->warp_in = value;
    t->warp_arg = arg;
    t->state = T_WARP;
    t->wait_line = line;
    wp->waiting++;
    if ((uint32_t)wp->waiting == warp_live(w))
        warp_release(w);
    else
        yield();
    return t->warp_out;
}

unsigned __cudalab_activemask(void)
{
    uint32_t w = blk.cur->linear / 32, m = 0;
    for (uint32_t l = 0; l < warp_lanes(w); l++) {
        enum thread_state s = blk.threads[warp_first(w) + l].state;
        m |= (uint32_t)(s != T_DONE && s != T_FAULTED) << l;
    }
    return m;
}


uint32_t sched_warp_sync(uint32_t linear)
{
    return blk.warps[linear / 32].sync;
}

/* ---- a thread's end ---- */

/* A thread left: waiting barriers and warp operations may now be complete. */
static void thread_left(sim_thread *t)
{
    blk.live--;
    uint32_t w = t->linear / 32;
    if (warp_live(w) == 0)
        count_flush_warp(w);
    else if (blk.warps[w].waiting > 0 && (uint32_t)blk.warps[w].waiting == warp_live(w))
        warp_release(w);
    if (blk.at_barrier > 0 && blk.at_barrier == blk.live)
        barrier_release();
}

static void thread_entry(void *arg)
{
    fiber_started();
    sim_thread *t = arg;
    student_entry(arg_ptrs);
    t->state = T_DONE;
    thread_left(t);
    fiber_switch(&t->f, &fiber_main);
    __builtin_unreachable();
}

void thread_fault(void)
{
    sim_thread *t = blk.cur;
    t->state = T_FAULTED;
    thread_left(t);
    fiber_switch(&t->f, &fiber_main);
    __builtin_unreachable();
}

/* ---- blocks ---- */

static void deadlock(void)
{
    cl_simt_finding f;
    memset(&f, 0, sizeof f);
    f.buffer = -1;
    int barrier = 0, warp = 0, bline = 0, wline = 0;
    for (uint32_t i = 0; i < blk.nthreads; i++) {
        sim_thread *t = &blk.threads[i];
        if (t->state == T_BARRIER && !barrier++)
            bline = t->wait_line;
        if (t->state == T_WARP && !warp++) {
            wline = t->wait_line;
            blk.cur = t;
            where_now(&f.at, 0, 0);
            blk.cur = NULL;
        }
    }
    f.at.line = (uint32_t)wline;
    snprintf(f.what, sizeof f.what, "%d threads wait at __syncthreads() (line %d) while %d wait at a warp "
             "operation (line %d) that lanes at the barrier never reach", barrier, bline, warp, wline);
    report_finding(CL_SIMT_DEADLOCK, finding_key(blk.linear, 0), &f);
}

static void run_block(uint64_t linear)
{
    const uint32_t *g = launch->grid;
    blk.linear = linear;
    blk.idx = (cl_u3){ (unsigned)(linear % g[0]), (unsigned)(linear / g[0] % g[1]),
                       (unsigned)(linear / ((uint64_t)g[0] * g[1])) };
    blockIdx = blk.idx;
    blk.gen++;
    blk.live = blk.nthreads;
    blk.at_barrier = 0;
    memset(blk.warps, 0, blk.nwarps * sizeof *blk.warps);
    for (uint32_t i = 0; i < blk.nthreads; i++) {
        sim_thread *t = &blk.threads[i];
        t->state = T_READY;
        t->bar = 0;
        t->last_pc = 0;
        fiber_prepare(&t->f, thread_entry, t);
    }
    check_block_start();
    count_block_start();
    while (blk.live > 0 && !blk.abort) {
        bool ran = false;
        for (uint32_t i = 0; i < blk.nthreads && !blk.abort; i++)
            if (blk.threads[i].state == T_READY) {
                resume(&blk.threads[i]);
                ran = true;
            }
        if (!ran && blk.live > 0) {
            deadlock();
            break;
        }
    }
    count_flush_block();            /* (every warp's end flushed it, unless the block was stopped) */
    count_block_end();
}

int sched_run_blocks(void)
{
    uint64_t total = (uint64_t)launch->grid[0] * launch->grid[1] * launch->grid[2];
    for (;;) {
        uint64_t b = __atomic_fetch_add(&launch->next_block, 1, __ATOMIC_RELAXED);
        if (b >= total || blk.abort)
            break;
        run_block(b);
        if (blk.abort)
            return -1;
    }
    return 0;
}
