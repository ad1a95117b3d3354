/* count.c — --counters on the CPU runner: what a launch would have asked of a GPU's memory
 * system, counted while it runs (only the one launch the CPU backend marks as counted, so that
 * timed launches pay one branch per access for it).
 *
 * A GPU serves a warp's access as one request for all its active lanes; here the lanes run one
 * after another (each a fiber, until it waits), so their accesses are grouped back into requests:
 * the k-th access a lane makes at an instruction (the return address of the compiler's check
 * call, one per access in the code; a load and a store apart) joins its warp's k-th request at
 * that instruction. In convergent code that is exactly the warp's request; where lanes diverge,
 * the lanes that took a branch meet in its requests, in the order they made them. Counting
 * restarts at each point every live lane of the warp has reached together (a __syncthreads(), a
 * warp operation, the warp's end), where the warp's requests are complete: they are flushed into
 * the process's totals there (request.c's arithmetic).
 *
 * Until then each lane logs its accesses at an instruction in order, so that request k is the
 * k-th entry of every lane's log that has one: a lane runs alone for long stretches, and its own
 * log is written in sequence. A request is opened by its first lane, at most OPEN_MAX of them in
 * a process at once (a lane's loop of thousands of loads before a barrier fits): past that, an
 * instruction opens no more until its warp's next flush, and its later accesses are left out
 * ("uncounted", and the counts say so), so that every request counted is whole: the first ones of
 * each instruction.
 *
 * Global memory's traffic is modelled as compulsory: each distinct 32-byte sector of the buffers
 * read (written) in the launch counts once (an L2 as large as the data), in bitmaps shared by the
 * processes that run blocks.
 *
 * The same launch keeps what the lesson checks read (cl_simt_lesson): each lane's global access by
 * the buffer it hit (whatever pointer reached it: an alias of A is A), in the buffer's elements, each global load
 * instruction's requests and sectors by its buffer, the distinct bytes of shared memory a block
 * read, and a block's divergent steps: steps ending at a __syncthreads() in which a warp made a
 * request with some, but not all, of the lanes live when the step began (the step after the last
 * barrier, where one thread writes the block's result, is not one).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"
#include "request.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SITES 64                    /* instructions a warp tracks between two flushes (a power of 2) */
#define OPEN_MAX (1u << 16)         /* requests open at once in a process: logs of 32 lanes × 8 bytes
                                       each, 16 MiB (twice that as they grow) */
#define LOG_KEPT 16                 /* a lane's log up to this long stays allocated after a flush
                                       (a tile's loop between barriers) for the next instruction there */

/* What an instruction does: the totals it feeds. */
enum { GLOBAL_LOAD, GLOBAL_STORE, GLOBAL_ATOMIC, SHARED_ACCESS, SHARED_ATOMIC, SHARED_STORE };

/* One lane's accesses at one instruction, since its warp's last flush. */
typedef struct lane_log {
    uint32_t seen;                  /* accesses made: the next one's request */
    uint32_t logged;                /* of which the first logged are in the log */
    uint32_t cap;
    uint64_t *log;                  /* offset << 16 | bytes, in the order the lane made them */
} lane_log;

/* A warp's instructions, found by their key (pc << 3 | kind; 0: a free slot, its logs kept for
 * the next): the keys apart, so that finding one reads one cache line. */
typedef struct warp_table {
    uint64_t key[SITES];
    uint32_t opened[SITES];         /* requests opened at the instruction */
    bool closed[SITES];             /* past OPEN_MAX: it opens no more until the flush */
    lane_log lanes[SITES][WARP_LANES];
    bool used;                      /* anything to flush */
} warp_table;

bool count_on;
static warp_table *tables;          /* one per warp of the block */
static uint32_t open_requests;      /* opened in every warp's table of the process */
static cl_simt_counts mine;         /* this process's totals, added to the report at its end */
static uint64_t *read_map, *write_map;  /* a bit per sector of the arena, shared by the processes */
static cl_simt_lesson lesson;       /* this process's part of the report's lesson */
static uint64_t *shared_read;       /* a bit per byte of shared memory the running block read */
static size_t shared_read_words;
static uint64_t block_shared_read;  /* of which set */
static uint32_t *step_live;         /* per warp: its lanes live when the step began */
static bool step_divergent;         /* a request of the current step left live lanes idle */
static uint64_t step_pc;            /* the first one's instruction */
static uint64_t block_pc;           /* that of the block's last divergent step */
static uint32_t block_steps;        /* the running block's divergent steps */
static int block_line;              /* the barrier that ended its last one */

int count_init(void)
{
    count_on = launch->count != 0;
    if (!count_on)
        return 0;
    tables = calloc(blk.nwarps, sizeof *tables);
    step_live = calloc(blk.nwarps, sizeof *step_live);
    shared_read_words = (CL_SIMT_MAX_SMEM + 64u * 1024 + 63) / 64;
    shared_read = calloc(shared_read_words, sizeof *shared_read);
    if (!step_live || !shared_read)
        return -1;
    size_t words = (launch->arena_bytes / CL_SIMT_SECTOR_BYTES + 63) / 64;
    read_map = mmap(NULL, words * 8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    write_map = mmap(NULL, words * 8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return tables && read_map != MAP_FAILED && write_map != MAP_FAILED ? 0 : -1;
}

/* The sectors of [offset, offset + size) into map; the ones no process had marked, counted. A
 * marked bit is only read: the processes share the map, and a write to a word every one of them
 * reads would send its cache line back and forth at each access. */
static void mark_sectors(uint64_t *map, uint64_t offset, unsigned size, uint64_t *fresh)
{
    for (uint64_t s = offset / CL_SIMT_SECTOR_BYTES; s <= (offset + size - 1) / CL_SIMT_SECTOR_BYTES; s++) {
        uint64_t bit = 1ull << (s % 64), *word = &map[s / 64];
        if (!(__atomic_load_n(word, __ATOMIC_RELAXED) & bit) && !(__atomic_fetch_or(word, bit, __ATOMIC_RELAXED) & bit))
            (*fresh)++;
    }
}

/* The buffer holding arena offset at, or -1 (a gap: the checks reported it). */
static int buffer_of(uint64_t at)
{
    for (uint32_t i = 0; i < launch->nbuffers && i < CL_SIMT_MAX_BUFFERS; i++)
        if (at - launch->buffers[i].offset < launch->buffers[i].bytes)
            return (int)i;
    return -1;
}

/* Marks the bytes [offset, offset + size) of the block's shared memory read. */
static void mark_shared_read(uint64_t offset, unsigned size)
{
    for (uint64_t b = offset; b < offset + size && b / 64 < shared_read_words; b++)
        if (!(shared_read[b / 64] & 1ull << (b % 64))) {
            shared_read[b / 64] |= 1ull << (b % 64);
            block_shared_read++;
        }
}

#define KIND_BITS 3                 /* a key's low bits: its kind */

/* The slot of (pc, kind) in t, claimed if new; -1 when every slot is taken. */
static int site_of(warp_table *t, uint64_t pc, uint32_t kind)
{
    uint64_t key = pc << KIND_BITS | kind;  /* code addresses are far below 2^61 */
    for (uint32_t i = 0; i < SITES; i++) {
        uint32_t at = (uint32_t)((key * 0x9E3779B97F4A7C15ull >> 58 ^ i) & (SITES - 1));
        if (t->key[at] == key)
            return (int)at;
        if (t->key[at] == 0) {
            t->key[at] = key;
            return (int)at;
        }
    }
    return -1;
}

/* Appends entry to a lane's log: false when memory ran out. */
static bool log_access(lane_log *g, uint64_t entry)
{
    if (g->logged == g->cap) {
        uint32_t cap = g->cap ? 2 * g->cap : LOG_KEPT;
        uint64_t *log = realloc(g->log, cap * sizeof *log);
        if (!log)
            return false;
        g->log = log, g->cap = cap;
    }
    g->log[g->logged++] = entry;
    return true;
}

/* Whether request k at slot at of t is open, opening it (k is then the next one) when there is
 * room. */
static bool request_open(warp_table *t, int at, uint32_t k)
{
    if (k < t->opened[at])
        return true;
    if (t->closed[at] || open_requests >= OPEN_MAX) {
        t->closed[at] = true;
        return false;
    }
    t->opened[at]++;
    open_requests++;
    return true;
}

void count_access(uintptr_t offset, unsigned size, uint32_t how, uint64_t pc, bool shared)
{
    uint32_t kind = shared ? (how & CL_SIMT_ATOMIC ? SHARED_ATOMIC : how & CL_SIMT_WRITE ? SHARED_STORE : SHARED_ACCESS)
                           : how & CL_SIMT_ATOMIC ? GLOBAL_ATOMIC : how & CL_SIMT_WRITE ? GLOBAL_STORE : GLOBAL_LOAD;
    if (kind == SHARED_ACCESS)
        mark_shared_read(offset, size);
    if (!shared) {
        /* in the buffer's elements: a float4, or a memcpy of a row, is that many loads */
        int b = buffer_of(offset);
        if (b >= 0) {
            uint32_t elem = launch->buffers[b].elem_bytes ? launch->buffers[b].elem_bytes : 1;
            (kind == GLOBAL_LOAD ? lesson.loads : kind == GLOBAL_STORE ? lesson.stores : lesson.atomics)[b] +=
                (size + elem - 1) / elem;
        }
        if (kind != GLOBAL_STORE)
            mark_sectors(read_map, offset, size, &mine.read_sectors);
        if (kind != GLOBAL_LOAD)
            mark_sectors(write_map, offset, size, &mine.written_sectors);
    }
    warp_table *t = &tables[blk.cur->linear / WARP_LANES];
    int at = site_of(t, pc, kind);
    if (at < 0) {
        mine.uncounted++;
        return;
    }
    t->used = true;
    /* an access is numbered whether or not it could be logged; a lane whose log missed one logs
     * no more here (its log must stay the prefix of its accesses that request k indexes) */
    lane_log *g = &t->lanes[at][blk.cur->linear % WARP_LANES];
    uint32_t k = g->seen++;
    uint64_t entry = (uint64_t)offset << 16 | (size < LANE_BYTES_MAX ? size : LANE_BYTES_MAX);
    if (g->logged != k || !request_open(t, at, k) || !log_access(g, entry))
        mine.uncounted++;
}

/* A global load's or atomic's request into the lesson's table of instructions, by its buffer. */
static void site_tally(uint64_t pc, uint32_t atomic, const warp_request *r, uint32_t sectors)
{
    int b = buffer_of(r->offset[__builtin_ctz(r->mask)]);
    for (int i = 0; i < CL_SIMT_MAX_SITES; i++) {
        cl_simt_site *s = &lesson.sites[i];
        if (s->pc == 0)
            s->pc = pc, s->buffer = b, s->atomic = atomic;
        if (s->pc == pc && s->buffer == b && s->atomic == atomic) {
            s->requests++;
            s->sectors += sectors;
            return;
        }
    }
    lesson.sites_left_out++;
}

/* Lanes of one plain store request that write a word another lane of it writes: on a GPU one
 * value survives, so a read-modify-write (counts[b]++) of those lanes adds one, not their number. */
static uint32_t lost_in(const warp_request *r)
{
    uint32_t lost = 0;
    for (uint32_t l = 0; l < WARP_LANES; l++)
        for (uint32_t o = 0; o < l && (r->mask >> l & 1); o++)
            if ((r->mask >> o & 1) && r->offset[o] == r->offset[l]) {
                lost++;
                break;
            }
    return lost;
}

static void tally(uint32_t kind, uint64_t pc, uint32_t live, const warp_request *r)
{
    if (r->mask != live && !step_divergent)
        step_divergent = true, step_pc = pc;
    if (kind == GLOBAL_STORE || kind == SHARED_STORE) {
        uint32_t lost = lost_in(r);
        lesson.lost_updates += lost;
        if (lost && !lesson.lost_pc)
            lesson.lost_pc = pc;
    }
    mine.requests++;
    mine.active_lanes += (uint64_t)__builtin_popcount(r->mask);
    if (kind == GLOBAL_LOAD) {
        uint32_t sectors = warp_sectors(r);
        mine.global_loads++;
        mine.global_load_sectors += sectors;
        site_tally(pc, 0, r, sectors);
    } else if (kind == GLOBAL_ATOMIC) {
        site_tally(pc, 1, r, warp_sectors(r));
    } else if (kind == SHARED_ACCESS || kind == SHARED_STORE) {
        mine.shared_requests++;
        mine.bank_conflicts += warp_bank_conflicts(r);
    }
}

/* The n requests of one instruction: request k is the k-th entry of every lane's log that has one. */
static void flush_site(uint64_t key, uint32_t n, lane_log *lanes, uint32_t live)
{
    uint32_t kind = (uint32_t)(key & ((1u << KIND_BITS) - 1));
    for (uint32_t k = 0; k < n; k++) {
        warp_request r;
        r.mask = 0;
        for (uint32_t l = 0; l < WARP_LANES; l++)
            if (lanes[l].logged > k) {
                r.mask |= 1u << l;
                r.offset[l] = (uint32_t)(lanes[l].log[k] >> 16);
                r.bytes[l] = (uint16_t)lanes[l].log[k];
            }
        tally(kind, key >> KIND_BITS, live, &r);
    }
    for (uint32_t l = 0; l < WARP_LANES; l++) {
        lane_log *g = &lanes[l];
        g->seen = g->logged = 0;
        if (g->cap > LOG_KEPT) {
            free(g->log);
            g->log = NULL, g->cap = 0;
        }
    }
}

void count_flush_warp(uint32_t w)
{
    warp_table *t = count_on ? &tables[w] : NULL;
    if (!t || !t->used)
        return;
    for (uint32_t i = 0; i < SITES; i++)
        if (t->key[i]) {
            flush_site(t->key[i], t->opened[i], t->lanes[i], step_live[w]);
            open_requests -= t->opened[i];
            t->key[i] = 0, t->opened[i] = 0, t->closed[i] = false;
        }
    t->used = false;
}

void count_flush_block(void)
{
    for (uint32_t w = 0; count_on && w < blk.nwarps; w++)
        count_flush_warp(w);
}

/* Each warp's lanes live now: the next step's. */
static void steps_begin(void)
{
    for (uint32_t w = 0; w < blk.nwarps; w++) {
        uint32_t m = 0;
        for (uint32_t l = 0; l < WARP_LANES && w * WARP_LANES + l < blk.nthreads; l++) {
            enum thread_state st = blk.threads[w * WARP_LANES + l].state;
            m |= (uint32_t)(st != T_DONE && st != T_FAULTED) << l;
        }
        step_live[w] = m;
    }
    step_divergent = false;
}

void count_block_start(void)
{
    if (!count_on)
        return;
    memset(shared_read, 0, shared_read_words * sizeof *shared_read);
    block_shared_read = 0;
    block_steps = 0;
    block_line = 0, block_pc = 0;
    steps_begin();
}

void count_barrier(int line)
{
    if (!count_on)
        return;
    if (step_divergent) {
        block_steps++;
        block_line = line, block_pc = step_pc;
    }
    steps_begin();
}

void count_block_end(void)
{
    if (!count_on)
        return;
    uint32_t steps = block_steps < CL_SIMT_MAX_STEPS ? block_steps : CL_SIMT_MAX_STEPS;
    lesson.divergent_blocks[steps]++;
    if (steps > lesson.worst_steps || (steps == lesson.worst_steps && steps && blk.linear < lesson.worst_block)) {
        lesson.worst_steps = steps;
        lesson.worst_block = blk.linear;
        lesson.worst_line = (uint32_t)block_line;
        lesson.worst_pc = block_pc;
    }
    if (block_shared_read > lesson.shared_read_bytes)
        lesson.shared_read_bytes = block_shared_read;
}

void count_finish(void)
{
    if (!count_on)
        return;
    count_flush_block();
    report_add_counts(&mine, &lesson);
}
