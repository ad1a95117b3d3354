/* check.c — every load and store of the student's code, checked.
 *
 * The student's source is compiled with -fsanitize=thread, which makes the
 * compiler call __tsan_read4(addr), __tsan_write8(addr), ... before each
 * access to memory that is not a private register; this file is the runtime
 * those calls reach (libtsan is never linked). Each access is classified by
 * address: the running thread's own stack (locals: nothing to check), the
 * block's shared memory, a global buffer of the launch, the executable's own
 * data (constants, threadIdx), or nowhere, which is a wild pointer. Then:
 *
 * - global: inside its buffer, else out of bounds (the thread stops, as a
 *   GPU's kernel would, before the access lands); a write to an input; for
 *   outputs, a shadow word per element remembers the last writer (thread and
 *   barrier epoch), so that an element written by two threads where the
 *   family expects one writer, or read and written by two threads with no
 *   barrier between them and no atomic (the lost update), is named.
 * - shared: each __shared__ declaration is placed apart, with a red zone, so
 *   an index past an array is caught against that array; a shadow per 4-byte
 *   word holds the last writer and reader with their epochs (barriers passed,
 *   and for threads of one warp, warp synchronisations passed). A read of a
 *   word no thread wrote is uninitialised; a write and a read (or two writes)
 *   of two threads in the same epoch are a race: the missing __syncthreads().
 *
 * Atomic operations reach __tsan_atomic*: they are done for real (blocks run
 * in several processes over shared memory) and recorded as atomic, so plain
 * accesses racing with them are named too.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>


/* The executable's image (GNU ld's symbols): the student's constants and
 * __device__ variables, string literals, threadIdx and friends. */
extern char __executable_start[], end[];

#define TID_NONE 0u
#define TID_MULTI 0xffffffffu       /* several readers */
#define TID_ATOMIC 0xfffffffeu      /* updated atomically */

/* ---- global buffers ---- */

typedef struct gbuf {
    uintptr_t lo, hi;
    uint32_t elem, flags;
    uint64_t *shadow;               /* outputs: per element, writer (global thread + 1) << 32 | barrier epoch */
} gbuf;

static gbuf gbufs[CL_SIMT_MAX_BUFFERS];
static uintptr_t arena_lo, arena_hi;
static uintptr_t image_lo, image_hi;        /* the student's object: its code, constants, __device__ data */

/* ---- shared memory ---- */

#define SHARED_BYTES (CL_SIMT_MAX_SMEM + (64u << 10))   /* room for the red zones too */
#define RED_ZONE 64
#define MAX_SHARED_VARS 64

typedef struct shvar {
    uint64_t gen;                   /* the block it was placed for */
    uintptr_t lo;
    size_t bytes, elem;
    const char *name;
    unsigned dims[4];
    int ndims;
} shvar;

typedef struct shcell {
    uint64_t gen;                   /* != blk.gen: not part of any array of this block */
    uint32_t w_tid, w_bar, w_wsync; /* last writer: thread + 1, its barrier and warp epochs */
    uint32_t r_tid, r_bar, r_wsync; /* readers of the writer's epoch: one, or TID_MULTI */
    uint32_t r_warps_mixed;
    uint32_t pad_;
    uint64_t w_pc, r_pc;
} shcell;

static unsigned char *shared_mem;
static uintptr_t sh_lo;
static shcell *shadow_sh;
static shvar vars[MAX_SHARED_VARS + 1];     /* the last: extern __shared__ */
static size_t sh_used;

int check_init(const object_image *img)
{
    image_lo = (uintptr_t)img->base;
    image_hi = image_lo + img->bytes;
    arena_lo = (uintptr_t)arena;
    arena_hi = arena_lo + launch->arena_bytes;
    for (uint32_t i = 0; i < launch->nbuffers; i++) {
        cl_simt_buffer *b = &launch->buffers[i];
        gbuf *g = &gbufs[i];
        g->lo = arena_lo + b->offset;
        g->hi = g->lo + b->bytes;
        g->elem = b->elem_bytes ? b->elem_bytes : 1;
        g->flags = b->flags;
        if (b->flags & CL_SIMT_OUT) {
            /* shared by the processes that run blocks: mapped before they fork */
            size_t n = (b->bytes / g->elem + 1) * sizeof(uint64_t);
            g->shadow = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
            if (g->shadow == MAP_FAILED)
                return -1;
        }
    }
    shared_mem = mmap(NULL, SHARED_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    shadow_sh = mmap(NULL, SHARED_BYTES / 4 * sizeof(shcell), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (shared_mem == MAP_FAILED || shadow_sh == MAP_FAILED)
        return -1;
    sh_lo = (uintptr_t)shared_mem;
    return 0;
}

void check_block_start(void)
{
    sh_used = RED_ZONE;
}

/* ---- findings ---- */

static uint64_t thread_key(void)
{
    return finding_key(blk.linear, blk.cur ? blk.cur->linear : 0);
}

/* The block and thread of a global thread index + 1 (a shadow word's writer). */
static void where_global(cl_simt_where *w, uint32_t gtid1, uint32_t access)
{
    memset(w, 0, sizeof *w);
    w->access = access;
    if (gtid1 == TID_NONE || gtid1 >= TID_ATOMIC)
        return;
    uint64_t g = gtid1 - 1, b = g / blk.nthreads, t = g % blk.nthreads;
    const uint32_t *gd = launch->grid, *bd = launch->block;
    w->block[0] = (uint32_t)(b % gd[0]), w->block[1] = (uint32_t)(b / gd[0] % gd[1]);
    w->block[2] = (uint32_t)(b / ((uint64_t)gd[0] * gd[1]));
    w->thread[0] = (uint32_t)(t % bd[0]), w->thread[1] = (uint32_t)(t / bd[0] % bd[1]);
    w->thread[2] = (uint32_t)(t / ((uint64_t)bd[0] * bd[1]));
}

static void finding(int kind, uint64_t key, uint64_t pc, uint32_t how, int buffer, int64_t elem,
                     const cl_simt_where *other, const char *fmt, ...)
{
    cl_simt_finding f;
    memset(&f, 0, sizeof f);
    where_now(&f.at, pc, how);
    if (other)
        f.other = *other;
    f.buffer = buffer;
    f.elem = elem;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(f.what, sizeof f.what, fmt, ap);
        va_end(ap);
    }
    report_finding(kind, key, &f);
}

/* ---- shared memory ---- */

void *check_shared_alloc(int id, size_t elem, size_t align, const char *name, int ndims, const unsigned *dims,
                         int line, bool dynamic)
{
    shvar *v = &vars[dynamic ? MAX_SHARED_VARS : id];
    if ((!dynamic && (id < 0 || id >= MAX_SHARED_VARS)) || ndims > 4) {
        finding(CL_SIMT_CRASH, thread_key(), 0, 0, -1, 0, NULL, "more than %d __shared__ declarations (line %d)",
                MAX_SHARED_VARS, line);
        blk.abort = true;
        thread_fault();
    }
    if (v->gen == blk.gen && v->name == name)
        return (void *)v->lo;
    size_t bytes = elem;
    for (int i = 0; i < ndims; i++)
        bytes *= dims[i];
    if (dynamic)
        bytes = launch->dyn_smem;
    if (align < 16)
        align = 16;
    uintptr_t lo = (sh_lo + sh_used + align - 1) & ~(uintptr_t)(align - 1);
    if (lo + bytes + RED_ZONE > sh_lo + SHARED_BYTES) {
        finding(CL_SIMT_CRASH, thread_key(), 0, 0, -1, 0, NULL,
                "the block's __shared__ arrays need more than %u bytes (line %d)", CL_SIMT_MAX_SMEM, line);
        blk.abort = true;
        thread_fault();
    }
    *v = (shvar){ blk.gen, lo, bytes, elem ? elem : 1, name, {0}, ndims };
    memcpy(v->dims, dims, (size_t)ndims * sizeof *dims);
    if (dynamic) {
        v->ndims = 1;
        v->dims[0] = (unsigned)(bytes / v->elem);
    }
    sh_used = lo + bytes + RED_ZONE - sh_lo;
    /* its words: part of this block's memory, never written, never read */
    shcell *c = &shadow_sh[(lo - sh_lo) / 4];
    size_t n = (bytes + 3) / 4;
    memset(c, 0, n * sizeof *c);
    for (size_t i = 0; i < n; i++)
        c[i].gen = blk.gen;
    return (void *)lo;
}

/* The references a file-scope __shared__ name is #defined to (kernel/student/shared_rewrite.c:
 * NAME -> __cudalab_shared_slot_ID, so that a parameter or local of that name still declares its
 * own), one per declaration id; the student's entry binds each to the block's placement before the
 * kernel runs. */
#define SLOT(n) void *__cudalab_shared_slot_##n;
#define SLOT_ADDRESS(n) &__cudalab_shared_slot_##n,
#define TEN_SLOTS(X, d) X(d##0) X(d##1) X(d##2) X(d##3) X(d##4) X(d##5) X(d##6) X(d##7) X(d##8) X(d##9)
#define ALL_SLOTS(X)                                                                                   \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) TEN_SLOTS(X, 1) TEN_SLOTS(X, 2) TEN_SLOTS(X, 3) \
    TEN_SLOTS(X, 4) TEN_SLOTS(X, 5) X(60) X(61) X(62) X(63)
ALL_SLOTS(SLOT)
static void **const slots[] = { ALL_SLOTS(SLOT_ADDRESS) };
_Static_assert(sizeof slots / sizeof slots[0] == MAX_SHARED_VARS, "a slot per declaration id");

void __cudalab_shared_bind(int id, void *placed)
{
    if (id >= 0 && id < MAX_SHARED_VARS)
        *slots[id] = placed;
}

/* The declaration an address belongs to or is nearest to, for messages. */
static const shvar *shared_var_near(uintptr_t a)
{
    const shvar *best = NULL;
    uintptr_t best_d = UINTPTR_MAX;
    for (int i = 0; i <= MAX_SHARED_VARS; i++) {
        const shvar *v = &vars[i];
        if (v->gen != blk.gen)
            continue;
        uintptr_t d = a < v->lo ? v->lo - a : a >= v->lo + v->bytes ? a - (v->lo + v->bytes) + 1 : 0;
        if (d < best_d)
            best = v, best_d = d;
    }
    return best;
}

/* "As[3][17]" for an element index of v. */
static void shared_elem_name(const shvar *v, int64_t e, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s", v->name);
    if (v->ndims == 0) {
        if (e != 0)
            snprintf(buf + n, len - (size_t)n, " (+%lld elements)", (long long)e);
        return;
    }
    int64_t idx[4];
    int64_t rest = e;
    for (int i = v->ndims - 1; i > 0; i--) {
        int64_t d = v->dims[i];
        idx[i] = ((rest % d) + d) % d;
        rest = (rest - idx[i]) / d;
    }
    idx[0] = rest;
    for (int i = 0; i < v->ndims && n < (int)len; i++)
        n += snprintf(buf + n, len - (size_t)n, "[%lld]", (long long)idx[i]);
}

static void shared_decl(const shvar *v, char *buf, size_t len)
{
    if (v == &vars[MAX_SHARED_VARS]) {
        snprintf(buf, len, "%s[] (extern: %u elements, the launch's dynamic shared memory, --smem)", v->name,
                 v->dims[0]);
        return;
    }
    int n = snprintf(buf, len, "%s", v->name);
    for (int i = 0; i < v->ndims && n < (int)len; i++)
        n += snprintf(buf + n, len - (size_t)n, "[%u]", v->dims[i]);
}

static void shared_oob(uintptr_t a, uint32_t how, uint64_t pc)
{
    const shvar *v = shared_var_near(a);
    char el[64] = "?", decl[120] = "?";
    int64_t e = 0;
    if (v) {
        e = ((int64_t)a - (int64_t)v->lo) / (int64_t)v->elem;
        shared_elem_name(v, e, el, sizeof el);
        shared_decl(v, decl, sizeof decl);
    }
    finding(CL_SIMT_OOB_SHARED, thread_key(), pc, how, -1, e, NULL, "%s|%s", el, decl);
    thread_fault();
}

/* Whether an earlier access (thread + 1, epochs) and the running thread's are
 * unordered: same barrier epoch, and for two lanes of one warp, no warp
 * synchronisation between them either. */
static bool unordered(uint32_t other, uint32_t obar, uint32_t owsync)
{
    sim_thread *t = blk.cur;
    if (obar != t->bar)
        return false;
    if (other != TID_MULTI && other != TID_ATOMIC && (other - 1) / 32 == t->linear / 32)
        return owsync == sched_warp_sync(t->linear);
    return true;
}

static void shared_race(uintptr_t a, uint32_t how, uint64_t pc, uint32_t other, uint32_t other_how,
                        uint64_t other_pc, const char *kind)
{
    const shvar *v = shared_var_near(a);
    char el[64] = "?";
    if (v)
        shared_elem_name(v, ((int64_t)a - (int64_t)v->lo) / (int64_t)v->elem, el, sizeof el);
    cl_simt_where o;
    memset(&o, 0, sizeof o);
    o.access = other_how;
    o.pc = other_pc;
    if (other != TID_MULTI && other != TID_ATOMIC && other != TID_NONE) {
        const sim_thread *ot = &blk.threads[other - 1];
        memcpy(o.block, &blk.idx, sizeof o.block);
        memcpy(o.thread, &ot->tid, sizeof o.thread);
    } else {
        o.block[0] = o.thread[0] = UINT32_MAX;   /* several threads, or atomics */
    }
    finding(CL_SIMT_RACE_SHARED, thread_key(), pc, how, -1, 0, &o, "%s|%s", el, kind);
}

static void shared_access(uintptr_t a, unsigned size, uint32_t how, uint64_t pc)
{
    sim_thread *t = blk.cur;
    uint32_t me = t->linear + 1, bar = t->bar, ws = sched_warp_sync(t->linear);
    for (uintptr_t w = a & ~(uintptr_t)3; w < a + size; w += 4) {
        if (w - sh_lo >= SHARED_BYTES) {
            shared_oob(w, how, pc);
            return;
        }
        shcell *c = &shadow_sh[(w - sh_lo) / 4];
        if (c->gen != blk.gen) {
            shared_oob(w < a ? a : w, how, pc);
            return;
        }
        if (how & CL_SIMT_READ || how & CL_SIMT_ATOMIC) {
            if (c->w_tid == TID_NONE) {
                const shvar *v = shared_var_near(w);
                char el[64] = "?";
                if (v)
                    shared_elem_name(v, ((int64_t)w - (int64_t)v->lo) / (int64_t)v->elem, el, sizeof el);
                finding(CL_SIMT_UNINIT_SHARED, thread_key(), pc, how, -1, 0, NULL, "%s", el);
            } else if (c->w_tid != me && (!(how & CL_SIMT_ATOMIC) || c->w_tid != TID_ATOMIC) &&
                       unordered(c->w_tid, c->w_bar, c->w_wsync)) {
                shared_race(w, how, pc, c->w_tid, c->w_tid == TID_ATOMIC ? CL_SIMT_ATOMIC : CL_SIMT_WRITE,
                            c->w_pc, c->w_tid == TID_ATOMIC ? "atomic" : "raw");
            }
        }
        if (how & CL_SIMT_WRITE || how & CL_SIMT_ATOMIC) {
            bool atomic = how & CL_SIMT_ATOMIC;
            if (c->w_tid != TID_NONE && c->w_tid != me && !(atomic && c->w_tid == TID_ATOMIC) &&
                unordered(c->w_tid, c->w_bar, c->w_wsync))
                shared_race(w, how, pc, c->w_tid, c->w_tid == TID_ATOMIC ? CL_SIMT_ATOMIC : CL_SIMT_WRITE,
                            c->w_pc, "waw");
            else if (c->r_tid != TID_NONE && (c->r_tid != me || c->r_warps_mixed) && c->r_bar == bar &&
                     (c->r_warps_mixed || c->r_tid == TID_MULTI || (c->r_tid - 1) / 32 != t->linear / 32 ||
                      c->r_wsync == ws) && !(atomic && c->r_tid == me))
                shared_race(w, how, pc, c->r_tid, CL_SIMT_READ, c->r_pc, "war");
            c->w_tid = atomic ? TID_ATOMIC : me;
            c->w_bar = bar, c->w_wsync = ws, c->w_pc = pc;
            c->r_tid = TID_NONE, c->r_warps_mixed = 0;
        } else {
            if (c->r_tid == TID_NONE || c->r_bar != bar) {
                c->r_tid = me, c->r_warps_mixed = 0;
            } else if (c->r_tid != me) {
                if (c->r_tid == TID_MULTI || (c->r_tid - 1) / 32 != t->linear / 32)
                    c->r_warps_mixed |= c->r_tid == TID_MULTI ? c->r_warps_mixed : 1;
                c->r_tid = TID_MULTI;
            }
            c->r_bar = bar, c->r_wsync = ws, c->r_pc = pc;
        }
    }
}

/* ---- global memory ---- */

static int64_t elem_of(const gbuf *g, uintptr_t a)
{
    return a >= g->lo ? (int64_t)((a - g->lo) / g->elem) : -(int64_t)((g->lo - a + g->elem - 1) / g->elem);
}

/* The buffer an address in the arena belongs to, or is past the end / before the start of. */
static int buffer_near(uintptr_t a, bool *inside)
{
    int best = -1;
    for (uint32_t i = 0; i < launch->nbuffers; i++) {
        if (a >= gbufs[i].lo && a < gbufs[i].hi) {
            *inside = true;
            return (int)i;
        }
        if (gbufs[i].lo <= a && (best < 0 || gbufs[i].lo > gbufs[best].lo))
            best = (int)i;
    }
    *inside = false;
    if (best < 0 && launch->nbuffers > 0) {
        /* before every buffer: the arena's header; the first buffer is the nearest */
        uintptr_t first = gbufs[0].lo;
        for (uint32_t i = 1; i < launch->nbuffers; i++)
            if (gbufs[i].lo < first)
                first = gbufs[i].lo, best = (int)i;
        if (best < 0)
            best = 0;
        if (a < first - 4096)
            return -1;               /* far before any: a wild pointer */
    }
    return best;
}

static uint64_t gtid_now(void)
{
    return blk.linear * blk.nthreads + blk.cur->linear;
}

static void global_access(uintptr_t a, unsigned size, uint32_t how, uint64_t pc)
{
    bool inside;
    int bi = buffer_near(a, &inside);
    if (bi < 0) {
        finding(CL_SIMT_WILD, thread_key(), pc, how, -1, (int64_t)a, NULL, NULL);
        thread_fault();
    }
    gbuf *g = &gbufs[bi];
    if (!inside || a + size > g->hi) {
        int64_t e = elem_of(g, inside ? g->hi : a);
        finding(CL_SIMT_OOB_GLOBAL, thread_key(), pc, how, bi, inside ? e : elem_of(g, a), NULL, NULL);
        thread_fault();
    }
    if ((how & (CL_SIMT_WRITE | CL_SIMT_ATOMIC)) && !(g->flags & CL_SIMT_OUT)) {
        finding(CL_SIMT_WRITE_INPUT, thread_key(), pc, how, bi, elem_of(g, a), NULL, NULL);
        return;
    }
    if (!g->shadow)
        return;
    uint64_t me1 = gtid_now() + 1;
    uint32_t bar = blk.cur->bar;
    for (uintptr_t p = a; p < a + size; p += g->elem) {
        int64_t e = elem_of(g, p);
        uint64_t *s = &g->shadow[e];
        uint64_t mine = (how & CL_SIMT_ATOMIC ? (uint64_t)TID_ATOMIC : me1) << 32 | bar;
        uint64_t old = how & (CL_SIMT_WRITE | CL_SIMT_ATOMIC) ? __atomic_exchange_n(s, mine, __ATOMIC_RELAXED)
                                                              : __atomic_load_n(s, __ATOMIC_RELAXED);
        if ((how & CL_SIMT_READ) && !(how & CL_SIMT_ATOMIC) && (how & CL_SIMT_WRITE) == 0 && old == 0)
            continue;
        uint32_t otid = (uint32_t)(old >> 32), obar = (uint32_t)old;
        if (otid == TID_NONE || otid == me1)
            continue;
        if ((how & CL_SIMT_ATOMIC) && otid == TID_ATOMIC)
            continue;
        /* the same block with a barrier between: ordered */
        if (otid != TID_ATOMIC && (otid - 1) / blk.nthreads == blk.linear && obar != bar)
            continue;
        if (otid == TID_ATOMIC && obar != bar)
            continue;
        cl_simt_where o;
        where_global(&o, otid, otid == TID_ATOMIC ? CL_SIMT_ATOMIC : CL_SIMT_WRITE);
        if (otid == TID_ATOMIC)
            o.block[0] = o.thread[0] = UINT32_MAX;
        bool writes = how & CL_SIMT_WRITE && !(how & CL_SIMT_ATOMIC);
        if ((g->flags & CL_SIMT_ONE_WRITER) && writes && otid != TID_ATOMIC)
            finding(CL_SIMT_DOUBLE_WRITE, (uint64_t)e, pc, how, bi, e, &o, NULL);
        else
            finding(CL_SIMT_RACE_GLOBAL, (uint64_t)e, pc, how, bi, e, &o, NULL);
        /* a reader leaves the writer in place; a writer keeps its own mark */
    }
}

/* ---- the classification ---- */

static void access_check(uintptr_t a, unsigned size, uint32_t how, void *ret)
{
    if (a - cur_stack_lo < cur_stack_bytes)
        return;                     /* the thread's own locals */
    sim_thread *t = blk.cur;
    if (!t)
        return;                     /* static initialisation, before any thread */
    uint64_t pc = (uint64_t)(uintptr_t)ret;
    t->last_pc = pc;
    /* an access that returns from its check was inside its memory: counted under --counters */
    if (a - sh_lo < SHARED_BYTES) {
        shared_access(a, size, how, pc);
        if (count_on)
            count_access(a - sh_lo, size, how, pc, true);
    } else if (a - arena_lo < arena_hi - arena_lo) {
        global_access(a, size, how, pc);
        if (count_on)
            count_access(a - arena_lo, size, how, pc, false);
    } else if (a - image_lo < image_hi - image_lo) {
        return;                     /* a __device__ variable or a constant of the kernel: global memory
                                       too (such a kernel runs all its blocks in one process) */
    } else if (a - (uintptr_t)__executable_start < (uintptr_t)(end - __executable_start)) {
        return;
    } else {
        finding(CL_SIMT_WILD, thread_key(), pc, how, -1, (int64_t)a, NULL, NULL);
        thread_fault();
    }
}

/* ---- the compiler's calls ---- */

#define RA __builtin_return_address(0)
#define TSAN_RW(n)                                                                                  \
    void __tsan_read##n(void *p);                                                                   \
    void __tsan_write##n(void *p);                                                                  \
    void __tsan_unaligned_read##n(void *p);                                                         \
    void __tsan_unaligned_write##n(void *p);                                                        \
    void __tsan_read##n(void *p) { access_check((uintptr_t)p, n, CL_SIMT_READ, RA); }               \
    void __tsan_write##n(void *p) { access_check((uintptr_t)p, n, CL_SIMT_WRITE, RA); }             \
    void __tsan_unaligned_read##n(void *p) { access_check((uintptr_t)p, n, CL_SIMT_READ, RA); }     \
    void __tsan_unaligned_write##n(void *p) { access_check((uintptr_t)p, n, CL_SIMT_WRITE, RA); }
TSAN_RW(1)
TSAN_RW(2)
TSAN_RW(4)
TSAN_RW(8)
TSAN_RW(16)

void __tsan_read_range(void *p, unsigned long n);
void __tsan_write_range(void *p, unsigned long n);
void __tsan_read_range(void *p, unsigned long n)
{
    if (n)
        access_check((uintptr_t)p, (unsigned)n, CL_SIMT_READ, RA);
}
void __tsan_write_range(void *p, unsigned long n)
{
    if (n)
        access_check((uintptr_t)p, (unsigned)n, CL_SIMT_WRITE, RA);
}

void *__tsan_memcpy(void *d, const void *s, unsigned long n);
void *__tsan_memmove(void *d, const void *s, unsigned long n);
void *__tsan_memset(void *d, int c, unsigned long n);
void *__tsan_memcpy(void *d, const void *s, unsigned long n)
{
    if (n) {
        access_check((uintptr_t)s, (unsigned)n, CL_SIMT_READ, RA);
        access_check((uintptr_t)d, (unsigned)n, CL_SIMT_WRITE, RA);
    }
    return memcpy(d, s, n);
}
void *__tsan_memmove(void *d, const void *s, unsigned long n)
{
    if (n) {
        access_check((uintptr_t)s, (unsigned)n, CL_SIMT_READ, RA);
        access_check((uintptr_t)d, (unsigned)n, CL_SIMT_WRITE, RA);
    }
    return memmove(d, s, n);
}
void *__tsan_memset(void *d, int c, unsigned long n)
{
    if (n)
        access_check((uintptr_t)d, (unsigned)n, CL_SIMT_WRITE, RA);
    return memset(d, c, n);
}

void __tsan_init(void);
void __tsan_func_entry(void *p);
void __tsan_func_exit(void);
void __tsan_vptr_update(void **p, void *v);
void __tsan_vptr_read(void **p);
void __tsan_init(void) {}
void __tsan_func_entry(void *p) {}
void __tsan_func_exit(void) {}
void __tsan_vptr_update(void **p, void *v) {}
void __tsan_vptr_read(void **p) {}

/* Atomics: checked as atomic accesses, then done for real (seq_cst whatever was asked). */
#define TSAN_ATOMIC(bits, T)                                                                          \
    T __tsan_atomic##bits##_load(const volatile T *a, int mo);                                        \
    void __tsan_atomic##bits##_store(volatile T *a, T v, int mo);                                     \
    T __tsan_atomic##bits##_exchange(volatile T *a, T v, int mo);                                     \
    T __tsan_atomic##bits##_fetch_add(volatile T *a, T v, int mo);                                    \
    T __tsan_atomic##bits##_fetch_sub(volatile T *a, T v, int mo);                                    \
    T __tsan_atomic##bits##_fetch_and(volatile T *a, T v, int mo);                                    \
    T __tsan_atomic##bits##_fetch_or(volatile T *a, T v, int mo);                                     \
    T __tsan_atomic##bits##_fetch_xor(volatile T *a, T v, int mo);                                    \
    T __tsan_atomic##bits##_fetch_nand(volatile T *a, T v, int mo);                                   \
    int __tsan_atomic##bits##_compare_exchange_strong(volatile T *a, T *c, T v, int mo, int fmo);     \
    int __tsan_atomic##bits##_compare_exchange_weak(volatile T *a, T *c, T v, int mo, int fmo);       \
    T __tsan_atomic##bits##_compare_exchange_val(volatile T *a, T c, T v, int mo, int fmo);           \
    T __tsan_atomic##bits##_load(const volatile T *a, int mo)                                         \
    {                                                                                                 \
        access_check((uintptr_t)a, bits / 8, CL_SIMT_ATOMIC, RA);                                     \
        return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                  \
    }                                                                                                 \
    void __tsan_atomic##bits##_store(volatile T *a, T v, int mo)                                      \
    {                                                                                                 \
        access_check((uintptr_t)a, bits / 8, CL_SIMT_ATOMIC, RA);                                     \
        __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                     \
    }                                                                                                 \
    T __tsan_atomic##bits##_exchange(volatile T *a, T v, int mo)                                      \
    {                                                                                                 \
        access_check((uintptr_t)a, bits / 8, CL_SIMT_ATOMIC, RA);                                     \
        return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                           \
    }                                                                                                 \
    T __tsan_atomic##bits##_fetch_add(volatile T *a, T v, int mo)                                     \
    {                                                                                                 \
        access_check((uintptr_t)a, bits / 8, CL_SIMT_ATOMIC, RA);                                     \
        return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                            \
    }                                                                                                 \
    T __tsan_atomic##bits##_fetch_sub(volatile T *a, T v, int mo)                                     \
    {                                                                                                 \
        access_check((uintptr_t)a, bits / 8, CL_SIMT_ATOMIC, RA);                                     \
        return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                            \
    }                                                                                                 \
    T __tsan_atomic##bits##_fetch_and(volatile T *a, T v, int mo)                                     \
    {                                                                                                 \
        access_check((uintptr_t)a, bits / 8, CL_SIMT_ATOMIC, RA);                                     \
        return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                            \
    }                                                                                                 \
    T __tsan_atomic##bits##_fetch_or(volatile T *a, T v, int mo)                                      \
    {                                                                                                 \
        access_check((uintptr_t)a, bits / 8, CL_SIMT_ATOMIC, RA);                                     \
        return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                             \
    }                                                                                                 \
    T __tsan_atomic##bits##_fetch_xor(volatile T *a, T v, int mo)                                     \
    {                                                                                                 \
        access_check((uintptr_t)a, bits / 8, CL_SIMT_ATOMIC, RA);                                     \
        return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                            \
    }                                                                                                 \
    T __tsan_atomic##bits##_fetch_nand(volatile T *a, T v, int mo)                                    \
    {                                                                                                 \
        access_check((uintptr_t)a, bits / 8, CL_SIMT_ATOMIC, RA);                                     \
        return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                           \
    }                                                                                                 \
    int __tsan_atomic##bits##_compare_exchange_strong(volatile T *a, T *c, T v, int mo, int fmo)      \
    {                                                                                                 \
        access_check((uintptr_t)a, bits / 8, CL_SIMT_ATOMIC, RA);                                     \
        return __atomic_compare_exchange_n(a, c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);           \
    }                                                                                                 \
    int __tsan_atomic##bits##_compare_exchange_weak(volatile T *a, T *c, T v, int mo, int fmo)        \
    {                                                                                                 \
        access_check((uintptr_t)a, bits / 8, CL_SIMT_ATOMIC, RA);                                     \
        return __atomic_compare_exchange_n(a, c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);           \
    }                                                                                                 \
    T __tsan_atomic##bits##_compare_exchange_val(volatile T *a, T c, T v, int mo, int fmo)            \
    {                                                                                                 \
        access_check((uintptr_t)a, bits / 8, CL_SIMT_ATOMIC, RA);                                     \
        __atomic_compare_exchange_n(a, &c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                 \
        return c;                                                                                     \
    }
TSAN_ATOMIC(8, uint8_t)
TSAN_ATOMIC(16, uint16_t)
TSAN_ATOMIC(32, uint32_t)
TSAN_ATOMIC(64, uint64_t)

void __tsan_atomic_thread_fence(int mo);
void __tsan_atomic_signal_fence(int mo);
void __tsan_atomic_thread_fence(int mo) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int mo) {}
