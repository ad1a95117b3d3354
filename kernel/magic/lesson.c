/* lesson.c — the lesson checks' figures (lesson.h).
 *
 * Every figure is the student's kernel's against the lesson's own kernel's for the same launch:
 *   matmul   global_loads_per_fma      lanes' loads of A and B (or Bᵀ) ÷ m·n·k: naive 2, tiled 2/TILE
 *                                      (⌈n/T⌉/n + ⌈m/T⌉/m at sizes that are not multiples of T)
 *            load_sectors_per_request  the worst load instruction of A or B: 4 for a warp's 32
 *                                      consecutive floats (up to 6 where the quick check's awkward
 *                                      rows are not sector aligned, hence the 2× margin)
 *            shared_bytes_used         the most distinct bytes of shared memory a block read:
 *                                      both TILE×TILE float tiles
 *   histo    global_atomics_per_byte   atomics on the bins ÷ input bytes: privatised bins × blocks ÷ n
 *            lost_updates              updates a warp's plain stores lose (lanes of one store
 *                                      request writing one word: one value survives)
 *   reduce   divergent_steps           the typical (median) block's steps ending at a
 *                                      __syncthreads() in which a warp had idle lanes while others
 *                                      worked: convergent 5 (strides 16 to 1), divergent log2(block)
 *   stencil  global_loads_per_output   lanes' loads of in ÷ outputs: 1 + 2R/blockDim (1D),
 *                                      (T + 2r)²/T² (2D, T×T blocks), as blocks × tile-with-halo ÷ outputs
 *   coalesce load_sectors_per_request  sectors per request over the loads of in: 4
 */
#include "magic/lesson.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "magic/check.h"

#define LOAD_SLACK 1.25             /* loads per FMA / per output: within 25% of the lesson's kernel */
#define IDEAL_SECTORS 4.0           /* a warp's 32 consecutive floats: 128 bytes, 4 sectors */
#define MATMUL_SECTOR_SLACK 2.0
#define HISTO_ATOMIC_SLACK 2.0
#define CONVERGENT_STEPS 5          /* strides 16, 8, 4, 2, 1 within one warp */

/* One check: {value, expected, passed, line, why}; why (printf) only when it failed. */
static json_t *figure(double value, double expected, bool passed, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static json_t *figure(double value, double expected, bool passed, int line, const char *fmt, ...)
{
    char why[400] = "";
    if (!passed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
    }
    return json_pack("{s:o, s:o, s:b, s:o, s:o}", "value", json_real_or_null(value), "expected",
                     json_real_or_null(expected), "passed", passed, "line", line > 0 ? json_integer(line) : json_null(),
                     "why", passed ? json_null() : json_string(why));
}

static double ratio(double num, double den)
{
    return den > 0 ? num / den : 0;
}

/* The launch's buffer named name, or -1. */
static int buffer(const cl_simt_lesson_taken *t, const char *name)
{
    for (uint32_t b = 0; b < t->nbuffers && b < CL_SIMT_MAX_BUFFERS; b++)
        if (strcmp(t->buffers[b].name, name) == 0)
            return (int)b;
    return -1;
}

/* Its rows (which 0), columns (1) or elements (2); 0 without it. */
static double shape(const cl_simt_lesson_taken *t, const char *name, int which)
{
    int b = buffer(t, name);
    if (b < 0)
        return 0;
    const cl_simt_buffer *x = &t->buffers[b];
    return which == 0 ? (double)x->rows : which == 1 ? (double)x->cols : (double)(x->bytes / x->elem_bytes);
}

static uint64_t loads_of(const cl_simt_lesson_taken *t, const char *name)
{
    int b = buffer(t, name);
    return b < 0 ? 0 : t->lesson.loads[b];
}

/* Of the load (atomic) instructions of the buffers named in names (NULL-terminated): the one with
 * the most requests (worst 0) or the most sectors per request (worst 1). -1 when none. */
static int site_of(const cl_simt_lesson_taken *t, const char *const *names, bool atomic, bool worst)
{
    int at = -1;
    double best = -1;
    for (int i = 0; i < CL_SIMT_MAX_SITES && t->lesson.sites[i].pc; i++) {
        const cl_simt_site *s = &t->lesson.sites[i];
        bool named = false;
        for (size_t n = 0; names[n] && s->buffer >= 0; n++)
            named |= strcmp(t->buffers[s->buffer].name, names[n]) == 0;
        if (!named || (bool)s->atomic != atomic || !s->requests)
            continue;
        double v = worst ? ratio((double)s->sectors, (double)s->requests) : (double)s->requests;
        if (v > best)
            best = v, at = i;
    }
    return at;
}

static int line_of(const cl_simt_lesson_taken *t, int site)
{
    return site >= 0 ? t->site_line[site] : 0;
}

static const char *buffer_name(const cl_simt_lesson_taken *t, int site)
{
    return site >= 0 && t->lesson.sites[site].buffer >= 0 ? t->buffers[t->lesson.sites[site].buffer].name : "?";
}

static double sectors_at(const cl_simt_lesson_taken *t, int site)
{
    return site < 0 ? 0 : ratio((double)t->lesson.sites[site].sectors, (double)t->lesson.sites[site].requests);
}

/* A figure of how a kernel reads an input that it never reads (a stub, a kernel that computes
 * nothing): failed, since a kernel that does nothing is not the lesson's either. */
static json_t *reads_nothing(double expected, const char *what)
{
    return figure(0, expected, false, 0, "the kernel reads nothing of %s: there is nothing of the lesson to see "
                  "until it computes its output from it", what);
}

/* The worst load instruction of names: sectors per request against IDEAL_SECTORS × slack. */
static json_t *sectors_check(const cl_simt_lesson_taken *t, const char *const *names, double slack)
{
    int s = site_of(t, names, false, true);
    double v = sectors_at(t, s);
    if (s < 0)
        return reads_nothing(IDEAL_SECTORS, names[1] ? "its inputs" : names[0]);
    return figure(v, IDEAL_SECTORS, v <= IDEAL_SECTORS * slack, line_of(t, s),
                  "line %d reads %s %.1f sectors per request where a warp's 32 consecutive floats need %.0f: "
                  "neighbouring threads (threadIdx.x) read addresses far apart, not consecutive floats",
                  line_of(t, s), buffer_name(t, s), v, IDEAL_SECTORS);
}

static void matmul(const lesson_launch *l, json_t *o)
{
    const cl_simt_lesson_taken *t = l->taken;
    /* B, or Bᵀ (n×k) for a %%kernel --bt kernel: its parameter is named Bt */
    bool bt = buffer(t, "Bt") >= 0;
    const char *b = bt ? "Bt" : "B";
    const char *const ab[] = {"A", b, NULL};
    double m = shape(t, "A", 0), n = shape(t, b, bt ? 0 : 1);
    double fma = m * shape(t, "A", 1) * n;          /* m · k · n */
    if (fma <= 0)
        return;
    double tile = t->block[0] > 0 ? t->block[0] : 1;
    /* the tiled kernel loads A once per column of blocks, B once per row of them: 2/TILE where the
     * sizes are multiples of TILE */
    double e = ceil(n / tile) / n + ceil(m / tile) / m;
    double v = ratio((double)(loads_of(t, "A") + loads_of(t, b)), fma);
    int most = site_of(t, ab, false, false);
    json_object_set_new(o, "global_loads_per_fma", v <= 0 ? reads_nothing(e, "A and B") :
                        figure(v, e, v <= LOAD_SLACK * e, line_of(t, most),
                               "line %d reads %s from global memory: %.2f loads of A and B per multiply-add, where "
                               "%.0f×%.0f tiles in shared memory need %.3f (each element loaded once serves %.0f "
                               "multiply-adds)", line_of(t, most), buffer_name(t, most), v, tile, tile, e, tile));
    json_object_set_new(o, "load_sectors_per_request", sectors_check(t, ab, MATMUL_SECTOR_SLACK));
    double shared = (double)t->lesson.shared_read_bytes, want = 2 * tile * tile * 4;
    json_object_set_new(o, "shared_bytes_used",
                        figure(shared, want, shared >= want, 0,
                               "a block's threads read %.0f bytes of shared memory, where a %.0f×%.0f tile of A and "
                               "one of B are %.0f: a multiply-add's operands come from global memory, not from "
                               "tiles in shared memory", shared, tile, tile, want));
}

static void histo(const lesson_launch *l, json_t *o)
{
    const cl_simt_lesson_taken *t = l->taken;
    static const char *const bins[] = {"histo", NULL};
    double n = shape(t, "data", 2), nbins = shape(t, "histo", 2);
    double blocks = (double)t->grid[0] * t->grid[1] * t->grid[2];
    int b = buffer(t, "histo");
    double v = ratio(b < 0 ? 0 : (double)t->lesson.atomics[b], n), e = ratio(nbins * blocks, n);
    int s = site_of(t, bins, true, false);
    json_object_set_new(o, "global_atomics_per_byte",
                        figure(v, e, v <= HISTO_ATOMIC_SLACK * e, line_of(t, s),
                               "line %d adds to the global bins %.3f times per input byte, where bins privatised in "
                               "shared memory need %.5f (%.0f bins × %.0f blocks ÷ %.0f bytes): count into "
                               "__shared__ bins, then add each to the global ones once per block",
                               line_of(t, s), v, e, nbins, blocks, n));
    double lost = (double)t->lesson.lost_updates;
    json_object_set_new(o, "lost_updates",
                        figure(lost, 0, lost == 0, t->lost_line,
                               "line %d loses %.0f updates: lanes of one warp that read a bin's count together each "
                               "write it back plus one (bins[b]++), so one increment survives; use atomicAdd",
                               t->lost_line, lost));
}

static void reduce(const lesson_launch *l, json_t *o)
{
    const cl_simt_lesson *s = &l->taken->lesson;
    uint64_t blocks = 0, seen = 0;
    for (int k = 0; k <= CL_SIMT_MAX_STEPS; k++)
        blocks += s->divergent_blocks[k];
    int median = 0;
    for (int k = 0; k <= CL_SIMT_MAX_STEPS; k++) {
        seen += s->divergent_blocks[k];
        if (2 * seen >= blocks) {
            median = k;
            break;
        }
    }
    int line = l->taken->worst_line;
    json_object_set_new(o, "divergent_steps",
                        figure(median, CONVERGENT_STEPS, median <= CONVERGENT_STEPS, line,
                               "line %d runs in warps with idle lanes while other lanes work, in %d steps between "
                               "barriers (block %llu: %u, the last ending at the __syncthreads() of line %u): keep "
                               "the active threads packed (t < stride) so that whole warps idle, not lanes of "
                               "every warp", line, median, (unsigned long long)s->worst_block, s->worst_steps,
                               s->worst_line));
}

/* Of [lo, hi), the elements inside [0, n). */
static double inside(double lo, double hi, double n)
{
    lo = lo > 0 ? lo : 0;
    hi = hi < n ? hi : n;
    return hi > lo ? hi - lo : 0;
}

static void stencil(const lesson_launch *l, json_t *o)
{
    const cl_simt_lesson_taken *t = l->taken;
    static const char *const in[] = {"in", NULL};
    double weights = shape(t, "w", 2), outputs = shape(t, "out", 2);
    double r = l->dim == 2 ? (sqrt(weights) - 1) / 2 : (weights - 1) / 2;
    /* the tiled kernel loads each block's tile with its halo once, what of it lies inside the array:
     * about 1 + 2R/blockDim (1D), (T + 2r)²/T² (2D) */
    double width = l->dim == 2 ? shape(t, "in", 1) : outputs, height = l->dim == 2 ? shape(t, "in", 0) : 1;
    double tiled = 0;
    for (uint32_t by = 0; by < t->grid[1]; by++) {
        double rows = l->dim == 2 ? inside((double)by * t->block[1] - r, (double)(by + 1) * t->block[1] + r, height) : 1;
        for (uint32_t bx = 0; bx < t->grid[0]; bx++)
            tiled += rows * inside((double)bx * t->block[0] - r, (double)(bx + 1) * t->block[0] + r, width);
    }
    double e = ratio(tiled, outputs), v = ratio((double)loads_of(t, "in"), outputs);
    int s = site_of(t, in, false, false);
    json_object_set_new(o, "global_loads_per_output", v <= 0 ? reads_nothing(e, "in") :
                        figure(v, e, v <= LOAD_SLACK * e, line_of(t, s),
                               "line %d reads in from global memory %.2f times per output, where a tile with its "
                               "halo in shared memory needs %.3f: load each block's inputs once into __shared__, "
                               "then read the neighbours there", line_of(t, s), v, e));
}

static void coalesce(const lesson_launch *l, json_t *o)
{
    const cl_simt_lesson_taken *t = l->taken;
    static const char *const in[] = {"in", NULL};
    uint64_t requests = 0, sectors = 0;
    for (int i = 0; i < CL_SIMT_MAX_SITES && t->lesson.sites[i].pc; i++) {
        const cl_simt_site *s = &t->lesson.sites[i];
        if (!s->atomic && s->buffer >= 0 && strcmp(t->buffers[s->buffer].name, "in") == 0)
            requests += s->requests, sectors += s->sectors;
    }
    int s = site_of(t, in, false, true);
    double v = ratio((double)sectors, (double)requests);
    json_object_set_new(o, "load_sectors_per_request", requests == 0 ? reads_nothing(IDEAL_SECTORS, "in") :
                        figure(v, IDEAL_SECTORS, v <= IDEAL_SECTORS, line_of(t, s),
                               "line %d reads in %.1f sectors per request where a warp's 32 consecutive floats "
                               "need %.0f: neighbouring threads read addresses apart, not consecutive floats; "
                               "give neighbouring threads neighbouring elements", line_of(t, s), sectors_at(t, s),
                               IDEAL_SECTORS));
}

/* Which hardware counter (CL_COUNTERS' JSON name) measures what a lesson check does. */
static const struct {
    const char *check, *counter;
} gpu_counters[] = {
    {"load_sectors_per_request", "global_load_sectors_per_request"},    /* over every load, not the worst */
    {"divergent_steps", "warp_execution_efficiency_pct"},                 /* lanes active, whole launch */
};

void lesson_add_gpu_counters(json_t *lesson, const json_t *counters)
{
    const char *source = json_string_value(json_object_get(counters, "source"));
    if (!json_is_object(lesson) || !json_is_true(json_object_get(counters, "measured")) || !source ||
        strncmp(source, "hardware", 8) != 0)
        return;
    for (size_t i = 0; i < sizeof gpu_counters / sizeof gpu_counters[0]; i++) {
        json_t *check = json_object_get(lesson, gpu_counters[i].check);
        const json_t *v = json_object_get(counters, gpu_counters[i].counter);
        if (json_is_object(check) && json_is_number(v))
            json_object_set_new(check, "gpu", json_pack("{s:O}", gpu_counters[i].counter, v));
    }
}

static const struct {
    const char *family;
    void (*figures)(const lesson_launch *l, json_t *o);
} lessons[] = {
    {"matmul", matmul}, {"histo", histo}, {"reduce", reduce}, {"stencil", stencil}, {"coalesce", coalesce},
};

json_t *lesson_figures(const lesson_launch *l)
{
    for (size_t i = 0; i < sizeof lessons / sizeof *lessons; i++)
        if (strcmp(lessons[i].family, l->family) == 0) {
            json_t *o = json_object();
            lessons[i].figures(l, o);
            return o;
        }
    return NULL;
}

bool lesson_passed(const json_t *lesson)
{
    const char *name;
    json_t *c;
    json_object_foreach((json_t *)lesson, name, c)
        if (!json_is_true(json_object_get(c, "passed")))
            return false;
    return true;
}
