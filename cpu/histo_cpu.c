/* histo_cpu.c — the CPU backend of %histo: builds the input on the host, runs a
 * variant's CPU analogue (cpu/histo_analogue.c) as a logical launch over host
 * threads, times each rep with the monotonic clock, and exports
 * cl_cpu_histo_ops for the backend table (cpu/device_cpu.c).
 *
 * Like the GPU runner it flushes the caches between reps (a write over twice
 * the last-level cache) and counts zeroing the output histogram as part of
 * the work, so the two backends' numbers mean the same thing.
 *
 * A student's kernel (CL_VARIANT_STUDENT) runs on the CPU runner of the CUDA
 * model (cpu/simt/): data read-only, exactly the 7 letter bins (a write past
 * them is the runner's finding), zeroed before every launch as on a GPU, and
 * many writers per bin (atomics: a plain ++ from two threads is named as the
 * lost update); its grid is --grid, else 4 blocks per host core, as the
 * analogues' (a GPU's is SMs x resident blocks); at most CL_SIMT_MAX_REPS
 * launches, each on data of its own (a text: relabelled but on the last).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cpu_common.h"
#include "cudalab/backend.h"
#include "histo_cpu.h"
#include "simt/simt_launch.h"

#define MAX_LOGICAL_THREADS (1ull << 26)
#define FLUSH_DEFAULT (32u << 20)
#define FLUSH_MAX (64u << 20)     /* enough to push a lecture-sized input out */

/* What runs each variant of the contract (histo.h), by id: one entry a row, in row (= id) order;
 * NULL where this backend has none. */
#define CPU_HG_IMPL_(id, name, impl, ...) &cpu_hg_##impl,
static const cpu_hg_impl *const cpu_impls[CL_HISTO_NVARIANTS] = {CL_HISTO_VARIANTS(CPU_HG_IMPL_)};
#undef CPU_HG_IMPL_

static size_t flush_bytes(void)
{
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    size_t b = l3 > 0 ? 2 * (size_t)l3 : FLUSH_DEFAULT;
    return b > FLUSH_MAX ? FLUSH_MAX : b;
}

/* One buffer for the process: faulting in tens of MiB for every run would
 * cost more than the runs of a small sweep. The worker runs one command at a
 * time, so it is never shared. */
static unsigned char *flush_buffer(size_t bytes)
{
    static unsigned char *buf;
    if (!buf)
        buf = malloc(bytes);
    return buf;
}

static uint64_t cpu_overhead(void)
{
    return flush_bytes();
}

/* A student's kernel on the CPU runner when --grid 0: as many blocks as a 2-core host's analogues. */
#define SIMT_HISTO_GRID 8u

/* Logical blocks when --grid 0: a few per host CPU, as the GPU keeps several
 * blocks resident per SM. */
static int auto_grid(void)
{
    return 4 * cl_cpu_threads();
}

typedef struct histo_launch {
    const cpu_histo *h;
    cpu_block_fn fn;
} histo_launch;

static void launch_block(long long blk, void *arg)
{
    const histo_launch *l = arg;
    l->fn(l->h, (int)blk);
}

/* One timed launch: zero the histogram, deal the blocks to the host threads. */
static void launch(const cpu_histo *h, cpu_block_fn fn, int nthreads)
{
    for (int b = 0; b < h->nbins; b++)
        atomic_store_explicit(&h->global[b].count, 0, memory_order_relaxed);
    histo_launch l = {h, fn};
    cl_parallel_for(h->grid, nthreads, launch_block, &l);
}

static int no_memory(char *err, const char *what, uint64_t bytes)
{
    snprintf(err, CL_ERR_LEN, "out of host memory for the %s (%llu bytes)", what,
             (unsigned long long)bytes);
    return -1;
}

static void describe(const cl_histo_args *a, const cpu_histo *h, int nthreads, cl_histo_result *r)
{
    const cpu_hg_impl *impl = cpu_impls[a->variant];
    if (impl->sequential)
        snprintf(r->impl, sizeof r->impl, "CPU: %s", impl->sequential);
    else
        snprintf(r->impl, sizeof r->impl, "CPU analogue: %d host thread%s run %d logical blocks "
                 "of %d threads", nthreads, nthreads == 1 ? "" : "s", h->grid, h->block);
    snprintf(r->config, sizeof r->config, "%s", impl->config);
    /* the GPU kernel's shared memory for the same parameters (its private bins, its table) */
    r->launch = cl_launch_2d((uint64_t)h->grid, 1, h->block, 1, cl_histo_smem_per_block(a->variant, a->mode, h->nbins, h->block), 1);
}

/* ---- a student's kernel, on the CPU runner ---- */

/* A student's run: its arguments, the text copy's time, and room for a rep's text. */
typedef struct student_run {
    const cl_histo_args *a;
    double h2d_ms;
    uint8_t *text;                  /* a rep's relabelled text, made for its check (NULL until then) */
} student_run;

/* A rep's input when the run counts a text: the text itself on the run's own
 * seed, else the text with its letters relabelled by a permutation of the
 * alphabet drawn from the rep's seed (case kept): the same length, words and
 * runs of equal letters, as much contention on a bin, other counts. */
static void relabelled_text(const cl_histo_args *a, uint64_t seed, uint8_t *out)
{
    if (seed == a->seed) {
        memcpy(out, a->text, a->n);
        return;
    }
    uint8_t to[26];
    for (int i = 0; i < 26; i++)
        to[i] = (uint8_t)i;
    for (int i = 25; i > 0; i--) {          /* Fisher-Yates */
        int j = (int)(cl_hash(seed, (uint64_t)i) % (uint64_t)(i + 1));
        uint8_t t = to[i];
        to[i] = to[j];
        to[j] = t;
    }
    for (uint64_t i = 0; i < a->n; i++) {
        uint8_t c = a->text[i];
        out[i] = c >= 'a' && c <= 'z' ? (uint8_t)('a' + to[c - 'a']) : c >= 'A' && c <= 'Z' ? (uint8_t)('A' + to[c - 'A']) : c;
    }
}

/* Its reps (simt_rep_ops): the data of the rep's seed (generated, or the text relabelled); the bins
 * against the exact histogram of that data (cl_histo_reference). */
static int student_prepare(simt_arena *ar, void *ctx, uint64_t seed, char *err)
{
    student_run *s = ctx;
    const cl_histo_args *a = s->a;
    (void)err;
    if (!a->text) {
        cl_histo_fill(ar->host[0], a->n, seed, a->dist);
    } else if (seed == a->seed) {
        double t0 = cl_now_ms();
        memcpy(ar->host[0], a->text, a->n);     /* the text's copy to the "device" */
        s->h2d_ms = cl_now_ms() - t0;
    } else {
        relabelled_text(a, seed, ar->host[0]);
    }
    return 0;
}

static int student_check(simt_arena *ar, void *ctx, uint64_t seed, char *what)
{
    student_run *s = ctx;
    cl_histo_args at = *s->a;
    at.seed = seed;
    if (at.text) {
        if (!s->text && !(s->text = malloc(at.n))) {
            snprintf(what, CL_ERR_LEN, "out of host memory for a rep's text (%llu bytes)", (unsigned long long)at.n);
            return -1;
        }
        relabelled_text(s->a, seed, s->text);
        at.text = s->text;
    }
    uint64_t want[CL_HISTO_MAX_BINS];
    if (cl_histo_reference(&at, want, what) != 0)
        return -1;
    const uint32_t *bins = ar->host[1];
    for (int b = 0; b < cl_histo_nbins(at.mode, at.width); b++)
        if (bins[b] != want[b]) {
            simt_wrong_element(what, bins[b], (double)want[b], "histo[%d]", b);
            return 1;
        }
    return 0;
}

static int cpu_histo_student(const cl_histo_args *a, cl_histo_result *r, char *err)
{
    const cl_student_kernel *k = a->student;
    if (!k || a->reps < 0 || a->reps > CL_MAX_REPS || a->n < 1 || a->n > CL_HISTO_MAX_SIZE ||
        a->mode != CL_HISTO_LETTERS || a->width != CL_HISTO_STUDENT_WIDTH) {
        snprintf(err, CL_ERR_LEN, "a student's histogram counts the letter bins of width %d: bad run (%llu bytes)",
                 CL_HISTO_STUDENT_WIDTH, (unsigned long long)a->n);
        return -1;
    }
    int nbins = cl_histo_nbins(a->mode, a->width);
    size_t bin_bytes = (size_t)nbins * sizeof(uint32_t);
    simt_buffer bufs[2] = {
        { "data", a->n, 1, CL_SIMT_IN, 0, 0 },
        { "histo", bin_bytes, 4, CL_SIMT_OUT, 0, 0 },
    };
    simt_arena ar;
    if (simt_arena_open(&ar, bufs, 2, err) != 0)
        return -1;
    /* a fixed grid, not one per host core: the same kernel then meets the same bytes in the same threads
     * on every machine, so a finding names the same thread everywhere (and grades the same) */
    unsigned rule[3] = { a->grid > 0 ? (unsigned)a->grid : SIMT_HISTO_GRID, 1, 1 };
    cl_simt_arg args[3] = {
        { CL_SIMT_ARG_BUFFER, 0, { 0 } }, { CL_SIMT_ARG_U64, 0, { .u64 = a->n } },
        { CL_SIMT_ARG_BUFFER, 1, { 0 } },
    };
    student_run s = { a, 0, NULL };
    static const simt_rep_ops reps = { student_prepare, NULL, student_check, { 1, 0 } };
    int rc = simt_run_student(&ar, k, rule, k->dyn_smem, args, 3, a->reps, a->seed, &reps, &s, &r->times,
                              &r->launch, err);
    r->times.h2d_ms = s.h2d_ms;
    free(s.text);
    if (rc == 0) {
        const uint32_t *bins = ar.host[1];
        r->nbins = nbins;
        for (int b = 0; b < nbins; b++)
            r->counts[b] = bins[b];
    }
    simt_arena_close(&ar);
    snprintf(r->impl, sizeof r->impl, "your kernel %s on the CPU runner (%s), after zeroing the output", k->name,
             a->grid > 0 || k->grid[0] > 0 ? "the grid given" : "grid: 4 blocks per host core");
    snprintf(r->config, sizeof r->config, "%s", SIMT_CONFIG);
    return rc;
}

static int cpu_histo_run(const cl_histo_args *a, cl_histo_result *r, char *err)
{
    if (a->variant == CL_VARIANT_STUDENT) {
        memset(r, 0, sizeof *r);
        return cpu_histo_student(a, r, err);
    }
    if (a->variant < 0 || a->variant >= CL_HISTO_NVARIANTS || !cpu_impls[a->variant]) {
        snprintf(err, CL_ERR_LEN, "unknown histogram variant %d", a->variant);
        return -1;
    }
    if (a->reps < 0 || a->reps > CL_MAX_REPS || a->warmup < 0 || a->n < 1 || a->n > CL_HISTO_MAX_SIZE) {
        snprintf(err, CL_ERR_LEN, "bad run: %llu bytes, %d reps, %d warm-up",
                 (unsigned long long)a->n, a->reps, a->warmup);
        return -1;
    }
    memset(r, 0, sizeof *r);
    /* the "device" histogram: the worker runs one command at a time */
    static cpu_bin global[CL_HISTO_MAX_BINS];
    cpu_histo h = { .n = a->n, .nbins = cl_histo_nbins(a->mode, a->width), .global = global };
    for (int c = 0; c < 256; c++)
        h.bin[c] = (int16_t)cl_histo_bin((uint8_t)c, a->mode, a->width);
    const cpu_hg_impl *impl = cpu_impls[a->variant];
    int seq = impl->sequential != NULL;
    h.grid = seq ? 1 : a->grid > 0 ? a->grid : auto_grid();
    h.block = seq ? 1 : a->block;
    int nthreads = h.grid < cl_cpu_threads() ? h.grid : cl_cpu_threads();
    if ((uint64_t)h.grid * (uint64_t)h.block > MAX_LOGICAL_THREADS) {
        snprintf(err, CL_ERR_LEN, "--grid %d x --block %d is %llu threads; the CPU analogue runs "
                 "every logical thread in turn, so it takes at most 2^26 (use a smaller --grid, "
                 "or 0 for the default)", h.grid, h.block,
                 (unsigned long long)h.grid * (unsigned long long)h.block);
        return -1;
    }

    uint8_t *buf = NULL;
    if (a->text) {
        h.in = a->text;                         /* already in "device" memory */
    } else {
        buf = malloc(a->n);
        if (!buf)
            return no_memory(err, "input", a->n);
        cl_histo_fill(buf, a->n, a->seed, a->dist);
        h.in = buf;
    }
    size_t fb = flush_bytes();
    unsigned char *flush = flush_buffer(fb);
    if (!flush) {
        free(buf);
        return no_memory(err, "cache-flush buffer", fb);
    }

    for (int w = 0; w < a->warmup; w++) {
        memset(flush, w & 0xFF, fb);
        launch(&h, impl->analogue, nthreads);
    }
    for (cl_times *tm = &r->times; cl_rep_more(a->reps, tm); tm->reps++) {
        memset(flush, (a->warmup + tm->reps) & 0xFF, fb);
        double t0 = cl_now_ms();
        launch(&h, impl->analogue, nthreads);
        tm->ms[tm->reps] = (float)(cl_now_ms() - t0);
        cl_rep_done();
    }
    cl_times_trusted(&r->times);
    r->nbins = h.nbins;
    for (int b = 0; b < h.nbins; b++)
        r->counts[b] = atomic_load_explicit(&global[b].count, memory_order_relaxed);
    describe(a, &h, nthreads, r);
    free(buf);
    return 0;
}

const cl_histo_ops cl_cpu_histo_ops = {
    .run = cpu_histo_run,
    .overhead = cpu_overhead,
    .runs_student = true,           /* on the CPU runner of the CUDA model (cpu/simt/) */
};
