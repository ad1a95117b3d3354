/* common.cu — the helpers in common.h: errors, allocation and the timing
 * of one rep (L2 flush, the hold, events), shared by the families' runners. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <string.h>

#include "common.h"

static void release(void);

int cl_cuda_fail(char *err, const char *what, cudaError_t rc)
{
    release();      /* a rep that fails between cl_cuda_time_start and _stop leaves no hold behind */
    if (err)
        snprintf(err, CL_ERR_LEN, "%s: %s", what, cudaGetErrorString(rc));
    /* Clear the non-sticky error so the next call starts clean. */
    (void)cudaGetLastError();
    return -1;
}

int cl_cuda_alloc(void **p, size_t bytes, const char *what, char *err)
{
    cudaError_t rc = cudaMalloc(p, bytes ? bytes : 16);
    if (rc == cudaSuccess)
        return 0;
    *p = NULL;
    snprintf(err, CL_ERR_LEN, "cudaMalloc of %.1f MiB for the %s: %s", (double)bytes / (1024.0 * 1024.0),
             what, cudaGetErrorString(rc));
    (void)cudaGetLastError();
    return -1;
}

size_t cl_cuda_flush_bytes(char *err)
{
    int dev = 0, l2 = 0;
    cudaError_t rc = cudaGetDevice(&dev);
    if (rc == cudaSuccess)
        rc = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
    if (rc != cudaSuccess) {
        cl_cuda_fail(err, "device attributes", rc);
        return 0;
    }
    return 2 * (size_t)(l2 > 0 ? l2 : 8 << 20);
}

size_t cl_cuda_flush_budget(void)
{
    char err[CL_ERR_LEN];
    size_t b = cl_cuda_flush_bytes(err);
    return b ? b : (size_t)128 << 20;
}

static int measure_event_overhead(const cl_cuda_timing *t, char *err);

/* What an empty event pair measures on this device (ms), once per process; -1 until measured. */
static float event_overhead_ms = -1;
static int corrected_reps;

int cl_cuda_timing_init(cl_cuda_timing *t, char *err)
{
    memset(t, 0, sizeof *t);
    cl_cuda_clocks_reset();
    cl_cuda_counters_reset();
    corrected_reps = 0;
    if ((t->flush_bytes = cl_cuda_flush_bytes(err)) == 0 ||
        cl_cuda_alloc(&t->flush, t->flush_bytes, "L2 flush buffer", err))
        return -1;
    cudaError_t rc = cudaMemset(t->flush, 0, t->flush_bytes);     /* what cl_cuda_flush_l2 relies on */
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "clearing the L2 flush buffer", rc);
    if ((rc = cudaEventCreate(&t->e0)) != cudaSuccess || (rc = cudaEventCreate(&t->e1)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventCreate", rc);
    return event_overhead_ms < 0 ? measure_event_overhead(t, err) : 0;
}

int cl_cuda_blocks(uint64_t n, int block, unsigned *blocks, char *err)
{
    uint64_t b = (n + (uint64_t)block - 1) / (uint64_t)block;
    if (b > 2147483647ull) {
        snprintf(err, CL_ERR_LEN, "%llu blocks exceed the grid limit 2^31-1", (unsigned long long)b);
        return -1;
    }
    *blocks = (unsigned)b;
    return 0;
}

int cl_cuda_describe(const void *func, dim3 grid, dim3 block, cl_launch *l, char *err)
{
    cudaFuncAttributes fa;
    memset(&fa, 0, sizeof fa);
    cudaError_t rc = cudaFuncGetAttributes(&fa, func);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaFuncGetAttributes", rc);
    l->grid[0] = (int)grid.x, l->grid[1] = (int)grid.y, l->grid[2] = (int)grid.z;
    l->block[0] = (int)block.x, l->block[1] = (int)block.y, l->block[2] = (int)block.z;
    l->smem_bytes = fa.sharedSizeBytes;
    l->regs_per_thread = fa.numRegs;
    l->kernels = 1;
    return 0;
}

void cl_cuda_timing_free(cl_cuda_timing *t)
{
    cudaFree(t->flush);
    if (t->e0)
        cudaEventDestroy(t->e0);
    if (t->e1)
        cudaEventDestroy(t->e1);
}

/* The flush reads twice the L2's size and writes nothing, so the L2 ends up holding clean lines of
 * the flush buffer: a rep starts with its inputs evicted and nothing dirty in the cache. A flush
 * that wrote the buffer (a memset, as before) left an L2 full of dirty lines whose write-back ran
 * inside the next rep: --counters saw up to 128 MB of DRAM writes in a reduction that writes a few
 * KB, and the timed reps paid for that traffic. Loads with .cg allocate in the L2 only. The buffer
 * is zero (cl_cuda_timing_init), so the store never happens; it only keeps the loads alive. */
__global__ void cl_flush_read_kernel(const int4 *__restrict__ p, size_t n, int *never)
{
    int acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int4 v = __ldcg(p + i);
        acc |= v.x | v.y | v.z | v.w;
    }
    if (acc != 0)
        *never = acc;
}

int cl_cuda_flush_l2(const cl_cuda_timing *t, const char *what, char *err)
{
    if (cl_cuda_counters_in_pass())
        return 0;                   /* flushed before the pass began: a flush inside would be counted */
    cl_flush_read_kernel<<<1024, 256>>>((const int4 *)t->flush, t->flush_bytes / sizeof(int4), (int *)t->flush);
    cudaError_t rc = cudaGetLastError();
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, what, rc);
}

/* ---- holding the stream while a rep is queued ----
 * A rep's figure is the time between e0 and e1 on the GPU. When the host is
 * descheduled between enqueueing e0 and the rep's launches (a class of 200
 * kernels sharing 16 cores while contexts open), the GPU idles inside that
 * span and the figure drops: the lecture hall's K = 200 outliers. As nvbench
 * does, a one-thread kernel launched before e0 holds the stream until the
 * host has queued the whole rep and e1 (cl_cuda_time_stop releases it), so
 * the span holds the GPU's work only. The hold is bounded (HOLD_LIMIT_NS): a
 * rep whose enqueueing waits for the device would otherwise wait for ever;
 * past it the rep runs as it would unheld, and cl_cuda_holds_lapsed() counts
 * it. The first launch of a kernel is such a wait (CUDA loads kernels lazily,
 * and a load waits for the device), which is one more reason for warm-up reps:
 * with --warmup 0 the first timed rep costs the hold's limit, not its figure. */
#define HOLD_LIMIT_NS 50000000ull       /* 50 ms: enqueueing takes microseconds, a busy host's slice milliseconds */

static volatile int *hold_host, *hold_dev;      /* [0]: released; [1]: lapses (mapped host memory) */

__device__ static unsigned long long globaltimer_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ static void hold_kernel(volatile int *word, unsigned long long limit_ns)
{
    unsigned long long t0 = globaltimer_ns();
    while (word[0] == 0)
        if (globaltimer_ns() - t0 > limit_ns) {
            word[1] = word[1] + 1;
            return;
        }
}

static int hold(char *err)
{
    cudaError_t rc;
    if (!hold_host) {
        void *h = NULL, *d = NULL;
        if ((rc = cudaHostAlloc(&h, 2 * sizeof(int), cudaHostAllocMapped)) != cudaSuccess)
            return cl_cuda_fail(err, "cudaHostAlloc of the timing hold", rc);
        if ((rc = cudaHostGetDevicePointer(&d, h, 0)) != cudaSuccess) {
            cudaFreeHost(h);
            return cl_cuda_fail(err, "cudaHostGetDevicePointer of the timing hold", rc);
        }
        hold_host = (volatile int *)h, hold_dev = (volatile int *)d;
        hold_host[1] = 0;
    }
    hold_host[0] = 0;
    hold_kernel<<<1, 1>>>(hold_dev, HOLD_LIMIT_NS);
    /* a tiny launch fails for what an earlier one left (a fault is reported at the next call) */
    rc = cudaGetLastError();
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "an earlier launch, found as the timed rep began", rc);
}

static void release(void)
{
    if (hold_host)
        __atomic_store_n((int *)&hold_host[0], 1, __ATOMIC_RELEASE);
}

int cl_cuda_holds_lapsed(void)
{
    return hold_host ? hold_host[1] : 0;
}

int cl_cuda_time_start(const cl_cuda_timing *t, char *err)
{
    if (!t->unheld && hold(err))
        return -1;
    cudaError_t rc = cudaEventRecord(t->e0, 0);
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "cudaEventRecord", rc);
}

/* ---- the limit ---- */

static double limit_ms;
static char limit_who[128];
static bool abandoned;

void cl_cuda_set_limit(double ms, const char *who)
{
    limit_ms = ms > 0 ? ms : 0;
    snprintf(limit_who, sizeof limit_who, "%s", who ? who : "the kernel");
}

bool cl_cuda_abandoned(void)
{
    return abandoned;
}

/* Polls e until it completes or the limit passes: a short spin first (most
 * waits are microseconds), then sleeps of 100 µs. */
static int cl_cuda_wait_event(cudaEvent_t e, const char *what, char *err)
{
    cudaError_t rc;
    if (limit_ms <= 0) {
        rc = cudaEventSynchronize(e);
        return rc == cudaSuccess ? 0 : cl_cuda_fail(err, what, rc);
    }
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int spins = 0;; spins++) {
        rc = cudaEventQuery(e);
        if (rc == cudaSuccess)
            return 0;
        if (rc != cudaErrorNotReady)
            return cl_cuda_fail(err, what, rc);
        clock_gettime(CLOCK_MONOTONIC, &now);
        double ms = (now.tv_sec - t0.tv_sec) * 1e3 + (now.tv_nsec - t0.tv_nsec) / 1e6;
        if (ms > limit_ms) {
            abandoned = true;
            snprintf(err, CL_ERR_LEN, "%s ran longer than its launch limit of %g s (CUDALAB_KERNEL_TIMEOUT) "
                     "and was abandoned: an endless loop, or a __syncthreads() that not every thread of a "
                     "block reaches?", limit_who, limit_ms / 1e3);
            return -1;
        }
        if (spins > 1000) {
            struct timespec nap = { 0, 100 * 1000 };
            nanosleep(&nap, NULL);
        }
    }
}

int cl_cuda_synchronize(const char *what, char *err)
{
    cudaEvent_t e;
    cudaError_t rc = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, what, rc);
    rc = cudaEventRecord(e, 0);
    release();      /* the work is queued: a hold before it would only delay the wait */
    int out = rc == cudaSuccess ? cl_cuda_wait_event(e, what, err) : cl_cuda_fail(err, what, rc);
    if (!abandoned)
        cudaEventDestroy(e);
    if (out == 0 && (rc = cudaGetLastError()) != cudaSuccess)
        return cl_cuda_fail(err, what, rc);
    return out;
}

/* ---- the event pair's own time ----
 * Two events recorded back to back on the GPU, with nothing between them, are still some
 * microseconds apart: the front end processes each record. Every rep's span includes that, and for
 * a kernel of a few microseconds it is a large share of the figure, so it is measured once per
 * process (the median of EVENT_OVERHEAD_PAIRS empty pairs, queued behind the hold as a rep is) and
 * subtracted from each rep; the run's conditions report it. */
#define EVENT_OVERHEAD_PAIRS 25
#define EVENT_RESOLUTION_MS 0.0005f     /* cudaEventElapsedTime's: no rep measures less */

static int measure_event_overhead(const cl_cuda_timing *t, char *err)
{
    float ms[EVENT_OVERHEAD_PAIRS];
    for (int i = 0; i < EVENT_OVERHEAD_PAIRS; i++) {
        cudaError_t rc;
        if (hold(err))
            return -1;
        rc = cudaEventRecord(t->e0, 0);
        if (rc == cudaSuccess)
            rc = cudaEventRecord(t->e1, 0);
        release();
        if (rc == cudaSuccess)
            rc = cudaEventSynchronize(t->e1);
        if (rc == cudaSuccess)
            rc = cudaEventElapsedTime(&ms[i], t->e0, t->e1);
        if (rc != cudaSuccess)
            return cl_cuda_fail(err, "timing an empty event pair", rc);
    }
    qsort(ms, EVENT_OVERHEAD_PAIRS, sizeof ms[0], cl_cmp_float);
    event_overhead_ms = (float)cl_median_sorted(ms, EVENT_OVERHEAD_PAIRS);
    return 0;
}

int cl_cuda_conditions(cl_conditions *out)
{
    memset(out, 0, sizeof *out);
    cl_cuda_clocks_read(out);
    out->corrected_reps = corrected_reps;
    out->event_overhead_ms = corrected_reps && event_overhead_ms > 0 ? event_overhead_ms : 0;
    return 0;
}

static void (*rep_hook)(void);

void cl_cuda_set_rep_hook(void (*rep_done)(void))
{
    rep_hook = rep_done;
}

int cl_cuda_time_stop(const cl_cuda_timing *t, float *ms, const char *what, char *err)
{
    cudaError_t rc;
    rc = cudaEventRecord(t->e1, 0);
    release();
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventRecord", rc);
    if (cl_cuda_wait_event(t->e1, what, err) != 0)
        return -1;
    if ((rc = cudaEventElapsedTime(ms, t->e0, t->e1)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventElapsedTime", rc);
    if (event_overhead_ms > 0) {
        *ms = *ms - event_overhead_ms > EVENT_RESOLUTION_MS ? *ms - event_overhead_ms : EVENT_RESOLUTION_MS;
        corrected_reps++;
    }
    cl_cuda_clocks_sample();
    if (rep_hook)
        rep_hook();
    return 0;
}

/* ---- the reps' inputs, and the check that each rep computed its own (common.h) ---- */

/* 64 random bits from the host: nothing a kernel can read or foresee. */
static uint64_t host_random(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {     /* no entropy yet (early boot): the clock */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        v = cl_hash((uint64_t)ts.tv_nsec, (uint64_t)ts.tv_sec);
    }
    return v;
}

size_t cl_cuda_value_bytes(cl_cuda_value t)
{
    return t == CL_CUDA_F64 || t == CL_CUDA_I64 ? 8 : 4;
}

static bool check_all_reps;

void cl_cuda_set_check_reps(int all)
{
    check_all_reps = all != 0;
}

int cl_cuda_reps_init(cl_cuda_reps *r, uint64_t seed, const cl_cuda_output *out, bool trusted, char *err)
{
    memset(r, 0, sizeof *r);
    r->all = check_all_reps;
    r->seed = seed;
    r->salt = host_random();
    r->out = *out;
    r->trusted = trusted;
    if (trusted)
        return 0;
    size_t bytes = out->count * cl_cuda_value_bytes(out->type);
    for (int s = 0; s < CL_GPU_CHECKED_REPS; s++)
        if (cl_cuda_alloc(&r->copy[s], bytes, "copy of a timed rep's output, for its check", err))
            return -1;
    return cl_cuda_alloc((void **)&r->tally, 2 * sizeof *r->tally, "tally of the check", err);
}

uint64_t cl_cuda_reps_seed(const cl_cuda_reps *r, int rep)
{
    if (rep == CL_CUDA_REP_FINAL)
        return r->seed;
    uint64_t s = cl_hash(r->seed ^ r->salt, (uint64_t)(int64_t)rep);
    return s == r->seed ? s ^ 1 : s;
}

/* Reservoir sampling (Vitter's algorithm R): the first CL_GPU_CHECKED_REPS reps fill the copies;
 * rep i (0-based) then replaces a random one with probability CL_GPU_CHECKED_REPS / (i + 1). After
 * any number of reps, each is kept with the same probability, and the draw for a rep is made
 * after it ran, so that no launch can know whether it will be checked. The copies stay in rep
 * order (the message names the earliest wrong one). */
int cl_cuda_reps_keep(cl_cuda_reps *r, int rep, char *err)
{
    if (r->trusted)
        return 0;
    int i = r->offered++, slot;
    if (r->all) {                       /* every rep: a copy of its own, made now if it is a new one */
        if (i >= CL_CUDA_REPS_KEPT_MAX) {
            snprintf(err, CL_ERR_LEN, "--check-reps all: more than %d timed reps to keep: an error in cudalab",
                     CL_CUDA_REPS_KEPT_MAX);
            return -1;
        }
        size_t bytes = r->out.count * cl_cuda_value_bytes(r->out.type);
        if (!r->copy[i] && cudaMalloc(&r->copy[i], bytes) != cudaSuccess) {
            cudaGetLastError();
            r->copy[i] = NULL;
            snprintf(err, CL_ERR_LEN, "--check-reps all: no room on the device for rep %d's copy (%d reps' "
                     "outputs of %zu bytes each kept for the check): give fewer --reps, or a smaller size",
                     i + 1, i + 1, bytes);
            return -1;
        }
        slot = r->kept++;
    } else if (i < CL_GPU_CHECKED_REPS) {
        slot = r->kept++;
    } else {
        uint64_t j = host_random() % (uint64_t)(i + 1);
        if (j >= CL_GPU_CHECKED_REPS)
            return 0;
        slot = (int)j;
        /* the copy leaves its place and joins the end, the latest rep: the order stays */
        void *c = r->copy[slot];
        for (int s = slot; s + 1 < r->kept; s++)
            r->copy[s] = r->copy[s + 1], r->rep[s] = r->rep[s + 1];
        slot = r->kept - 1;
        r->copy[slot] = c;
    }
    r->rep[slot] = rep;
    cudaError_t rc = cudaMemcpyAsync(r->copy[slot], r->out.dev, r->out.count * cl_cuda_value_bytes(r->out.type),
                                     cudaMemcpyDeviceToDevice, 0);
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "copying a timed rep's output aside", rc);
}

/* Whether two values differ: integers unless equal, floats unless equal or within atol (a NaN,
 * the poison included, differs from everything). */
template <typename T>
__device__ static bool differs(T x, T y, double atol)
{
    return !(x == y || (atol > 0 && fabs((double)x - (double)y) <= atol));
}

/* tally[0]: how many of the n values of a and b differ; tally[1]: the first one's index. */
template <typename T>
__global__ static void reps_differ_kernel(const T *a, const T *b, size_t n, double atol, unsigned long long *tally)
{
    unsigned long long mine = 0, first = ~0ull;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        if (differs(a[i], b[i], atol)) {
            mine++;
            first = first < i ? first : i;
        }
    if (mine) {
        atomicAdd(&tally[0], mine);
        atomicMin(&tally[1], first);
    }
}

/* Integers compare as unsigned patterns of their width (exactly), floats as values. */
template <typename T>
static void differ_launch(const void *a, const void *b, size_t n, double atol, unsigned long long *tally)
{
    size_t blocks = (n + 255) / 256;
    reps_differ_kernel<T><<<(unsigned)(blocks < 1 ? 1 : blocks > 4096 ? 4096 : blocks), 256>>>(
        (const T *)a, (const T *)b, n, atol, tally);
}

/* One value as the message shows it. */
static void format_value(cl_cuda_value t, const unsigned char *bytes, char *buf, size_t len)
{
    if (t == CL_CUDA_F32) {
        float f;
        memcpy(&f, bytes, 4);
        snprintf(buf, len, "%.9g", f);
    } else if (t == CL_CUDA_F64) {
        double d;
        memcpy(&d, bytes, 8);
        snprintf(buf, len, "%.17g", d);
    } else if (t == CL_CUDA_I32) {
        int32_t i;
        memcpy(&i, bytes, 4);
        snprintf(buf, len, "%d", (int)i);
    } else if (t == CL_CUDA_U32) {
        uint32_t u;
        memcpy(&u, bytes, 4);
        snprintf(buf, len, "%u", (unsigned)u);
    } else {
        int64_t i;
        memcpy(&i, bytes, 8);
        snprintf(buf, len, "%lld", (long long)i);
    }
}

int cl_cuda_reps_differ(cl_cuda_reps *r, int slot, unsigned long long tally[2], char *err)
{
    const cl_cuda_output *o = &r->out;
    cudaError_t rc = cudaMemsetAsync(r->tally, 0, sizeof *r->tally, 0);
    if (rc == cudaSuccess)
        rc = cudaMemsetAsync(r->tally + 1, 0xFF, sizeof *r->tally, 0);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "checking a timed rep's output", rc);
    switch (o->type) {
    case CL_CUDA_F32: differ_launch<float>(r->copy[slot], o->dev, o->count, o->atol, r->tally); break;
    case CL_CUDA_F64: differ_launch<double>(r->copy[slot], o->dev, o->count, o->atol, r->tally); break;
    case CL_CUDA_I64: differ_launch<unsigned long long>(r->copy[slot], o->dev, o->count, 0, r->tally); break;
    default: differ_launch<unsigned>(r->copy[slot], o->dev, o->count, 0, r->tally); break;
    }
    if ((rc = cudaGetLastError()) != cudaSuccess)
        return cl_cuda_fail(err, "checking a timed rep's output", rc);
    if (cl_cuda_synchronize("checking a timed rep's output", err))
        return -1;
    if ((rc = cudaMemcpy(tally, r->tally, 2 * sizeof *r->tally, cudaMemcpyDeviceToHost)) != cudaSuccess)
        return cl_cuda_fail(err, "checking a timed rep's output", rc);
    return 0;
}

int cl_cuda_reps_finding(const cl_cuda_reps *r, int slot, const unsigned long long tally[2], int reps_run,
                         char *finding, char *err)
{
    const cl_cuda_output *o = &r->out;
    size_t vb = cl_cuda_value_bytes(o->type), i = (size_t)tally[1];
    unsigned char got[8] = {0}, want[8] = {0};
    const unsigned char *kept = (const unsigned char *)r->copy[slot], *ref = (const unsigned char *)o->dev;
    cudaError_t rc;
    if ((rc = cudaMemcpy(got, kept + i * vb, vb, cudaMemcpyDeviceToHost)) != cudaSuccess ||
        (rc = cudaMemcpy(want, ref + i * vb, vb, cudaMemcpyDeviceToHost)) != cudaSuccess)
        return cl_cuda_fail(err, "checking a timed rep's output", rc);
    char where[96], g[40], w[40], what[240];
    format_value(o->type, got, g, sizeof g);
    format_value(o->type, want, w, sizeof w);
    int len = o->count == 1 ? snprintf(what, sizeof what, "%s = %s, want %s", o->name, g, w)
            : o->cols ? snprintf(where, sizeof where, "%s[%zu][%zu]", o->name, i / o->cols, i % o->cols)
                      : snprintf(where, sizeof where, "%s[%zu]", o->name, i);
    if (o->count != 1)
        len = snprintf(what, sizeof what, "%llu of %zu values differ; first %s = %s, want %s", tally[0], o->count,
                       where, g, w);
    if (o->atol > 0 && len > 0 && (size_t)len < sizeof what)
        snprintf(what + len, sizeof what - (size_t)len, " ± %.3g", o->atol);
    /* CL_ERR_LEN is short: the why in a few words (common.h says more) */
    snprintf(finding, CL_ERR_LEN, "rep %d of %d returned a wrong result on its own inputs (%s), the last launch a "
             "right one: work kept or skipped across launches, or a race?", r->rep[slot] + 1, reps_run, what);
    return 0;
}

int cl_cuda_reps_hold(cl_cuda_reps *r, int slot, char *err)
{
    cudaError_t rc = cudaMemcpyAsync(r->copy[slot], r->out.dev, r->out.count * cl_cuda_value_bytes(r->out.type),
                                     cudaMemcpyDeviceToDevice, 0);
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "holding the reference's result", rc);
}

void cl_cuda_reps_free(cl_cuda_reps *r)
{
    for (int s = 0; s < CL_CUDA_REPS_KEPT_MAX; s++) {
        cudaFree(r->copy[s]);
        r->copy[s] = NULL;
    }
    cudaFree(r->tally);
    r->tally = NULL;
}
