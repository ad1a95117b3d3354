/* latency_cpu.c — %latency and %hiding on the CPU backend (cudalab/latency.h):
 * the same pointer chase through the host's own memory hierarchy.
 *
 * A host has no shared, local or constant memory: its L1 data cache serves
 * those rows (the GPU's shared memory is, physically, a part of its L1), and
 * the global rows chase 64-byte host lines through working sets that fit the
 * host's caches or do not (their sizes read from sysfs, and named in each
 * result). Cycles are the host clock's (%device) times the measured time.
 *
 * %hiding's analogue: warps_per_sm x ilp independent chases in flight in one
 * host thread, through a cycle over the input's bytes. A warp with one load in
 * flight is one chase; what the GPU gets from more resident warps, a CPU core
 * gets from its loads in flight (memory-level parallelism), up to the misses
 * its L1 can track, so the curve rises and flattens for the same reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/cpu_common.h"
#include "cudalab/backend.h"
#include "cudalab/latency.h"

#define HOST_LINE 64
/* The dram row's working set on a host: 4x its largest cache, and at least this. */
#define HOST_DRAM_MIN (64u << 20)

/* ---- the host's caches ---- */

/* "host L2 cache (1 MiB)" for the smallest cache that holds ws, else "host DRAM (past the 32 MiB L3)". */
static void host_level(uint64_t ws, char *buf, size_t len)
{
    const cl_host_cache *c;
    int n = cl_host_caches(&c);
    for (int i = 0; i < n; i++)
        if (ws <= c[i].bytes) {
            snprintf(buf, len, "host L%d cache (%llu KiB)", c[i].level, (unsigned long long)(c[i].bytes >> 10));
            return;
        }
    if (n)
        snprintf(buf, len, "host DRAM (past the %llu KiB L%d)", (unsigned long long)(c[n - 1].bytes >> 10),
                 c[n - 1].level);
    else
        snprintf(buf, len, "host memory (the caches' sizes are unknown)");
}

/* ---- the chase ---- */

/* A working set of bytes, mapped anew and asked for huge pages: the chase then measures the
 * memory, not 4 KiB pages' TLB misses, and the page faults of a large one take less time.
 * NULL when there is no memory. */
static char *working_set_map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);   /* advice only: without it the chase still runs */
#endif
    return p;
}

/* A cycle of `slots` links `line` bytes apart in buf: each holds its successor's address. */
static void link_cycle(char *buf, uint64_t slots, size_t line, uint64_t seed, uint32_t *next)
{
    cl_latency_cycle(next, slots, seed);
    for (uint64_t i = 0; i < slots; i++)
        *(char **)(buf + i * line) = buf + (uint64_t)next[i] * line;
}

/* Where the last chase ended: stored, so that no compiler leaves a chase out as unused. */
static void *volatile chase_end;

static void *chase_steps(void *p, long long steps)
{
    for (long long i = 0; i < steps; i++)
        p = *(void **)p;
    return p;
}

static double mul_add_chain(double x, long long steps)
{
    for (long long i = 0; i < steps; i++) {
        x = x * x + x;
        __asm__ volatile("" : "+x"(x));      /* one dependent multiply and add per step, as written */
    }
    return x;
}

static double host_mhz(void)
{
    cl_device_props p = {0};
    char err[CL_ERR_LEN];
    return cl_cpu_backend()->device_props(0, &p, err) == 0 && p.clock_khz > 0 ? p.clock_khz / 1e3 : 0;
}

static int chase(const cl_latency_args *a, cl_latency_result *r, char *err)
{
    static const char *const stands_in[] = {
        [CL_LAT_SHARED] = ", standing in for shared memory (on the GPU a part of the SM's L1)",
        [CL_LAT_LOCAL] = ", as local memory is L1-cached device memory on the GPU",
        [CL_LAT_CONSTANT] = ", standing in for the constant cache",
    };
    memset(r, 0, sizeof *r);
    int level = a->level;
    bool global = level == CL_LAT_L1 || level == CL_LAT_L2 || level == CL_LAT_DRAM;
    uint64_t ws = a->working_set ? a->working_set : cl_latency_default_ws(level);
    if (level == CL_LAT_DRAM && !a->working_set)  /* past this host's caches, whatever they are */
        ws = 4 * cl_host_cache_max() > HOST_DRAM_MIN ? 4 * cl_host_cache_max() : HOST_DRAM_MIN;
    size_t line = global ? HOST_LINE : sizeof(void *);
    uint64_t slots = level == CL_LAT_REGISTER ? 0 : ws / line;
    if (level != CL_LAT_REGISTER && slots < 2)
        return snprintf(err, CL_ERR_LEN, "a working set of %llu bytes holds fewer than 2 slots",
                        (unsigned long long)ws), -1;
    char *buf = NULL;
    uint32_t *next = NULL;
    size_t bytes = slots * line;
    if (slots && (!(buf = working_set_map(bytes)) || !(next = malloc(slots * sizeof *next)))) {
        if (buf)
            munmap(buf, bytes);
        return snprintf(err, CL_ERR_LEN, "out of host memory for a working set of %llu bytes",
                        (unsigned long long)ws), -1;
    }
    if (slots)
        link_cycle(buf, slots, line, a->seed, next);
    free(next);
    double mhz = host_mhz();
    void *p = buf;
    if (slots && ws <= cl_host_cache_max())
        p = chase_steps(p, (long long)slots);    /* a warm-up lap, where the lap can stay cached */
    volatile double sink = 0;
    for (r->cycles.reps = 0; cl_rep_more(a->reps, &r->cycles); r->cycles.reps++) {
        double t0 = cl_now_ms();
        if (slots)
            p = chase_steps(p, CL_LAT_STEPS);
        else
            sink += mul_add_chain(1.0 + r->cycles.reps, CL_LAT_STEPS);
        double ns = (cl_now_ms() - t0) * 1e6 / CL_LAT_STEPS;
        r->ns.ms[r->cycles.reps] = (float)ns;
        r->cycles.ms[r->cycles.reps] = (float)(ns * mhz / 1e3);
        r->ns.reps = r->cycles.reps + 1;
        cl_rep_done();
    }
    chase_end = p;
    (void)sink;
    if (buf)
        munmap(buf, bytes);
    r->working_set = slots ? ws : 0;
    r->slots = slots;
    r->steps = CL_LAT_STEPS;
    if (level == CL_LAT_REGISTER)
        snprintf(r->measured, sizeof r->measured, "host registers: a dependent multiply and add per step");
    else {
        char where[96];
        host_level(ws, where, sizeof where);
        snprintf(r->measured, sizeof r->measured, "%s%s", where, global ? "" : stands_in[level]);
    }
    return 0;
}

/* ---- %hiding's analogue ---- */

#define STREAM_LOADS (1 << 16)       /* loads per rep, shared among the chases */

static void *chases_in_flight(void **p, int chains, long long steps)
{
    for (long long s = 0; s < steps; s++)
        for (int k = 0; k < chains; k++)
            p[k] = *(void **)p[k];
    return p[0];
}

/* The cycle a sweep's points share (stream_release frees it): built once per size and seed, with
 * the order its lap visits the slots in (order[i]: the slot i steps from slot 0), so that a point
 * places its chases and checks where they end without a lap of its own: that lap, 4x the host's
 * largest cache of random reads, was most of %hiding's time on the CPU (seconds a point). */
static struct {
    char *buf;
    uint32_t *order;
    uint64_t slots, seed;
} kept;

static void stream_release(void)
{
    if (kept.buf)
        munmap(kept.buf, kept.slots * HOST_LINE);
    free(kept.order);
    memset(&kept, 0, sizeof kept);
}

/* The cycle through slots lines from seed, kept for the next point: 0, or -1. */
static int stream_cycle(uint64_t slots, uint64_t seed)
{
    if (kept.buf && kept.slots == slots && kept.seed == seed)
        return 0;
    stream_release();
    uint32_t *next = malloc(slots * sizeof *next);
    kept.buf = working_set_map(slots * HOST_LINE);
    kept.order = malloc(slots * sizeof *kept.order);
    kept.slots = slots;
    kept.seed = seed;
    if (!kept.buf || !kept.order || !next) {
        free(next);
        stream_release();
        return -1;
    }
    link_cycle(kept.buf, slots, HOST_LINE, seed, next);
    uint32_t slot = 0;
    for (uint64_t i = 0; i < slots; i++, slot = next[slot])
        kept.order[i] = slot;
    free(next);
    return 0;
}

static int stream(const cl_stream_args *a, cl_stream_result *r, char *err)
{
    memset(r, 0, sizeof *r);
    int chains = a->warps_per_sm * a->ilp;
    uint64_t bytes = a->n * sizeof(float);
    if (bytes < 4 * cl_host_cache_max())
        bytes = 4 * cl_host_cache_max();           /* loads that the caches would serve hide nothing */
    uint64_t slots = bytes / HOST_LINE;
    if (slots < (uint64_t)chains * 2)
        return snprintf(err, CL_ERR_LEN, "%llu floats are too few for %d chases", (unsigned long long)a->n,
                        chains), -1;
    void **p = malloc((size_t)chains * sizeof *p);
    int ret = -1;
    if (!p || stream_cycle(slots, a->seed) != 0) {
        snprintf(err, CL_ERR_LEN, "out of host memory for %llu floats", (unsigned long long)a->n);
        goto done;
    }
    char *buf = kept.buf;
    const uint32_t *order = kept.order;
    /* the chases start spread evenly along the cycle: chase k gap x k steps from slot 0 */
    uint64_t gap = slots / (uint64_t)chains;
    for (int k = 0; k < chains; k++)
        p[k] = buf + (uint64_t)order[gap * (uint64_t)k] * HOST_LINE;
    long long steps = STREAM_LOADS / chains;
    for (int w = 0; w < a->warmup; w++)
        chase_end = chases_in_flight(p, chains, steps);
    for (r->times.reps = 0; cl_rep_more(a->reps, &r->times); r->times.reps++) {
        double t0 = cl_now_ms();
        chase_end = chases_in_flight(p, chains, steps);
        r->times.ms[r->times.reps] = (float)(cl_now_ms() - t0);
        cl_rep_done();
        if (cl_cancel_requested())
            break;
    }
    cl_times_trusted(&r->times);
    if (a->check) {
        /* every chase must stand where the cycle's order says one walked alone would */
        uint64_t walked = (uint64_t)(a->warmup + r->times.reps) * (uint64_t)steps;
        for (int k = 0; k < chains; k++) {
            r->want += (double)order[(gap * (uint64_t)k + walked) % slots];
            r->sum += (double)((char *)p[k] - buf) / HOST_LINE;
        }
    }
    r->bytes = (double)steps * chains * HOST_LINE;
    r->warp_load_bytes = HOST_LINE;
    r->sms = 1;
    r->launch = cl_launch_2d(1, 1, chains, 1, 0, 1);
    r->blocks_per_sm = 1;
    snprintf(r->impl, sizeof r->impl, "one host thread with %d independent chase%s in flight (%d warp%s x %d) "
             "through %llu 64-byte lines (at least 4x the host's largest cache); GB/s counts the lines", chains,
             chains > 1 ? "s" : "", a->warps_per_sm, a->warps_per_sm > 1 ? "s" : "", a->ilp,
             (unsigned long long)slots);
    ret = 0;
done:
    free(p);
    return ret;
}

const cl_latency_ops cl_cpu_latency_ops = {chase, stream, stream_release};
