/* histo.c — the %histo magic: a byte or letter histogram, from the sequential
 * loop to privatized, per-warp and per-lane shared-memory histograms, next to
 * cub; every run checked exactly against the CPU histogram of the same input.
 *
 * This file owns the flags, the run objects and the check; histo_params.c
 * resolves the params and refuses what cannot run before anything is
 * allocated; histo_view.c owns the bins (labels, the "bins" JSON, the bins
 * table in the view). The backends do the work through cl_histo_ops
 * (cudalab/histo.h).
 *
 * A student's %%kernel for histo (the contract cl_histo_student) is one more
 * variant: the same input, the same exact check (naming the first wrong bin,
 * and any counter written past the bins), under its own compile options.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudalab/histo.h"
#include "magic/family_run.h"
#include "magic/check.h"
#include "magic/magic.h"
#include "magic/show_source.h"
#include "magic/sweep.h"
#include "magics/histo_internal.h"
#include "student/broken.h"
#include "student/sanitize.h"
#include "student/run.h"
#include "student/store.h"

#define MAX_SIZE_FLAG (1ll << 50)
#define REF_CACHE 8

/* A run whose largest bin holds at least this share of the counts is
 * contended: racing increments lose updates there, visibly. */
#define CONTENDED_SHARE 0.10

const family_spec histo_family = {
    .magic = "histo",
    .variants = cl_histo_variants,
    .nvariants = CL_HISTO_NVARIANTS,
    .student = &cl_histo_student,
    /* awkward size, 90% of the bytes in one bin: a lost update cannot hide */
    .quick = "--size 100003 --dist skewed",
    FAMILY_OPS(histo, cl_histo_ops),
    .sources = "cuda/histo*.cu and cpu/histo*.c",
    .broken = broken_histo,
};

const student_def *histo_student(lab_session *lab, const char *name)
{
    const student_def *d = name && family_builtin(&histo_family, name) < 0 ? student_find(lab, name) : NULL;
    return d && d->family == &histo_family ? d : NULL;
}

static const char *const dist_choices[] = {"uniform", "text", "skewed", NULL};
static const char *const bins_choices[] = {"bytes", "letters", NULL};

/* Flag order is sweep order: sizes and inputs outermost, so that one input
 * (and its CPU reference) serves every variant in turn. */
static const flag_spec histo_flags[] = {
    {.name = "size", .short_name = 'n', .type = FLAG_INT, .imin = 1, .imax = MAX_SIZE_FLAG,
     .opts = FLAG_LIST, .help = "random input bytes, generated on the device (default 2^24; 2^22 on the CPU backend)"},
    {.name = "dist", .type = FLAG_CHOICE, .choices = dist_choices, .opts = FLAG_LIST,
     .help = "random input: uniform (all 256 byte values), text (English-like letters and "
             "spaces) or skewed (90% one byte: atomic contention) (default uniform)"},
    {.name = "text", .type = FLAG_STRING,
     .help = "count this text instead of random bytes (copied host to device; the copy is "
             "timed apart)"},
    {.name = "bins", .type = FLAG_CHOICE, .choices = bins_choices,
     .help = "bytes: 256 bins, one per byte value; letters: a-z, either case, in bins of "
             "--bin-width letters, other characters ignored (default: bytes for random "
             "input, letters for text or when --variant names your kernel)"},
    {.name = "bin-width", .type = FLAG_INT, .def = "4", .imin = 1, .imax = 26,
     .help = "letters per bin with --bins letters (4: a-d, e-h, ..., y-z)"},
    FAMILY_VARIANT_FLAG(&histo_family, "all"),
    {.name = "block", .type = FLAG_DIMS, .imin = 1, .imax = 1024, .opts = FLAG_LIST,
     .help = "threads per block (default 256; fast 1024): a multiple of 32 for the built-in variants, which "
             "are 1D; your kernels take any block, 2D and 3D too (default: the %%kernel line's)"},
    {.name = "grid", .type = FLAG_INT, .def = "0", .imin = 0, .imax = 2147483647, .opts = FLAG_LIST,
     .help = "blocks; 0 = SMs x blocks resident per SM (your kernels: the %%kernel line's --grid, "
             "else the same rule)"},
    STUDENT_RUN_FLAGS,
    SWEEP_MEASURE_FLAGS("seed of the generated input",
                        "timed repetitions",
                        "compare every bin with the CPU histogram",
                        "sort the runs table by GB/s"),
    SHOW_SOURCE_FLAGS,
    {.name = NULL},
};

static const sweep_column histo_columns[] = {
    {.path = "variant", .header = "variant"},
    {.path = "size", .header = "bytes"},
    {.path = "dist", .header = "input"},
    {.path = "block", .header = "block"},
    {.path = "grid", .header = "grid"},
    {.path = "time_ms.median", .header = "median ms"},
    {.path = "gbs", .header = "GB/s"},
    {.path = "pct_of_bandwidth", .header = "% of copy"},
    {.path = "check.passed", .header = "check"},
    {.path = NULL},
};

static int64_t get_int(const json_t *params, const char *key)
{
    return (int64_t)json_integer_value(json_object_get(params, key));
}

static const char *get_str(const json_t *params, const char *key)
{
    return json_string_value(json_object_get(params, key));
}

static int choice_index(const char *const *choices, const char *s)
{
    for (int i = 0; s && choices[i]; i++)
        if (strcmp(choices[i], s) == 0)
            return i;
    return -1;
}

/* ---- one point ---- */

typedef struct histo_run_ctx {
    const char *text;               /* owned by the resolved params */
    bool check;
    int64_t first_block, first_grid; /* cpu and cub run at these only: the others change nothing */
    bool block_given;               /* --block was given: it overrides the %%kernel line's */
    json_t *student_firsts;         /* built-in variants run at these values of -D only */
    /* references of generated inputs already seen: every variant of an input shares one */
    int nref, next_ref;
    cl_histo_args ref_key[REF_CACHE];
    uint64_t ref_counts[REF_CACHE][CL_HISTO_MAX_BINS];
    const uint64_t *ref;            /* the current point's */
    uint64_t text_ref[CL_HISTO_MAX_BINS];
} histo_run_ctx;

static bool same_input(const cl_histo_args *a, const cl_histo_args *b)
{
    return a->n == b->n && a->seed == b->seed && a->dist == b->dist && a->mode == b->mode &&
           a->width == b->width && !a->text && !b->text;
}

static int reference(histo_run_ctx *hc, const cl_histo_args *a, magic_ctx *ctx)
{
    char err[CL_ERR_LEN] = "";
    if (a->text) {
        hc->ref = hc->text_ref;
        if (cl_histo_reference(a, hc->text_ref, err) != 0)
            return magic_error(ctx, "RuntimeError", "CPU reference: %s", err);
        return 0;
    }
    for (int i = 0; i < hc->nref; i++) {
        if (same_input(&hc->ref_key[i], a)) {
            hc->ref = hc->ref_counts[i];
            return 0;
        }
    }
    int slot = hc->next_ref;
    hc->next_ref = (slot + 1) % REF_CACHE;
    if (hc->nref < REF_CACHE)
        hc->nref++;
    hc->ref_key[slot] = *a;
    hc->ref_key[slot].n = 0;        /* not valid until computed */
    if (cl_histo_reference(a, hc->ref_counts[slot], err) != 0)
        return magic_error(ctx, "RuntimeError", "CPU reference: %s", err);
    hc->ref_key[slot].n = a->n;
    hc->ref = hc->ref_counts[slot];
    return 0;
}

/* How the check was made; on contended input it says why an exact check
 * matters: lost updates show only as counts that are a little low. */
static json_t *method_json(const histo_run_ctx *hc, const cl_histo_args *a, int nbins, uint64_t total)
{
    int top = 0;
    for (int b = 1; b < nbins; b++)
        if (hc->ref[b] > hc->ref[top])
            top = b;
    double share = total ? (double)hc->ref[top] / (double)total : 0;
    if (share < CONTENDED_SHARE)
        return json_string("exact: every bin vs the CPU histogram of the same input");
    char label[16];
    histo_bin_label(a->mode, a->width, top, label, sizeof label);
    return json_sprintf("exact: every bin vs the CPU histogram of the same input, a contended one "
                        "(%.0f%% of the counts in bin %s): increments that race lose updates, which "
                        "this exact check on contended input catches (racecheck does not see races "
                        "in global memory)", 100 * share, label);
}

static json_t *check_json(const histo_run_ctx *hc, const cl_histo_result *r, const cl_histo_args *a)
{
    int bad = 0, first = -1, past = 0, first_past = -1;
    uint64_t total = 0, counted = 0;
    for (int b = 0; b < r->nbins; b++) {
        total += hc->ref[b];
        counted += r->counts[b];
        if (r->counts[b] != hc->ref[b] && bad++ == 0)
            first = b;
    }
    /* counters past the bins come back zero unless a student's kernel wrote there */
    for (int b = r->nbins; b < CL_HISTO_MAX_BINS; b++)
        if (r->counts[b] != 0 && past++ == 0)
            first_past = b;
    /* counted below expected: updates lost (a race); above: counted twice, or bytes that are no letter */
    json_t *c = check_new(true, NULL, 0);
    json_object_set_new(c, "method", method_json(hc, a, r->nbins, total));
    json_object_set_new(c, "bins_compared", json_integer(r->nbins));
    json_object_set_new(c, "expected_total", json_integer((json_int_t)total));
    json_object_set_new(c, "counted_total", json_integer((json_int_t)counted));
    char label[16];
    if (first >= 0) {
        histo_bin_label(a->mode, a->width, first, label, sizeof label);
        check_wrong_int(c, (uint64_t)(bad + past), json_pack("{s:s, s:i}", "bin", label, "index", first),
                        (long long)r->counts[first], (long long)hc->ref[first]);
    } else if (first_past >= 0) {
        check_wrong_int(c, (uint64_t)past, json_pack("{s:i}", "index", first_past), (long long)r->counts[first_past],
                        0);
    }
    /* a write past the bins first: it explains the wrong bins too */
    if (first >= 0 && first_past < 0)
        check_first_wrong(c, "histo[%d] (%s) = %llu, expected %llu", first, label,
                          (unsigned long long)r->counts[first], (unsigned long long)hc->ref[first]);
    else if (first_past >= 0)
        check_first_wrong(c, "histo[%d] = %llu, past the %d bins (histo[0..%d]): a write outside the histogram",
                          first_past, (unsigned long long)r->counts[first_past], r->nbins, r->nbins - 1);
    if (past)
        json_object_set_new(c, "written_past_bins", json_integer(past));
    return c;
}

/* --block of a point: x of its dimensions (a student's 2D or 3D block comes
 * from the point itself, point_for_student). */
static int block_x(const json_t *v)
{
    return (int)json_integer_value(json_is_array(v) ? json_array_get(v, 0) : v);
}

/* A point's variant: a built-in's id, or CL_VARIANT_STUDENT with *student
 * set. false when it is neither. */
static bool variant_of(lab_session *lab, const json_t *params, cl_histo_args *a, const student_def **student)
{
    const char *name = get_str(params, "variant");
    *student = NULL;
    a->variant = family_builtin(&histo_family, name);
    if (a->variant >= 0)
        return true;
    if (!(*student = histo_student(lab, name)))
        return false;
    a->variant = CL_VARIANT_STUDENT;
    return true;
}

static void args_from(const json_t *params, const histo_run_ctx *hc, cl_histo_args *a)
{
    memset(a, 0, sizeof *a);
    a->variant = family_builtin(&histo_family, get_str(params, "variant"));
    a->n = (uint64_t)get_int(params, "size");
    a->seed = (uint64_t)get_int(params, "seed");
    a->text = (const uint8_t *)hc->text;
    a->dist = a->text ? 0 : choice_index(dist_choices, get_str(params, "dist"));
    a->mode = strcmp(get_str(params, "bins"), "letters") == 0 ? CL_HISTO_LETTERS : CL_HISTO_BYTES;
    a->width = a->mode == CL_HISTO_LETTERS ? (int)get_int(params, "bin_width") : 1;
    a->block = a->variant >= 0 && cl_histo_variant_blocks[a->variant] && !hc->block_given
                   ? cl_histo_variant_blocks[a->variant] : block_x(json_object_get(params, "block"));
    a->grid = (int)get_int(params, "grid");
    a->warmup = (int)get_int(params, "warmup");
    a->reps = sweep_reps(params);
}

/* The copy bandwidth of the backend that ran the variant (GB/s), or 0. */
static double copy_gbs(magic_ctx *ctx, const cl_backend *be)
{
    double copy = 0;
    char err[CL_ERR_LEN] = "";
    if (magic_copy_bandwidth(ctx, be, &copy, err) != 0 || copy <= 0)
        return 0;
    return copy;
}

/* A student's kernel honours --block and --grid as CL_V_BLOCK variants do. */
static unsigned variant_flags(const cl_histo_args *a)
{
    return a->variant == CL_VARIANT_STUDENT ? CL_V_BLOCK : cl_histo_variants[a->variant].flags;
}

/* The host loop (CL_V_HOST) whatever the backend: the CPU backend runs it. */
static const cl_backend *backend_for(magic_ctx *ctx, const cl_histo_args *a)
{
    return variant_flags(a) & CL_V_HOST ? cl_cpu_backend() : ctx->backend;
}

/* Variants that do not honour --block and --grid run at the first of each only:
 * the others would change nothing; built-in variants run at the first -D only. */
static bool runs_once(const histo_run_ctx *hc, const cl_histo_args *a, const json_t *params)
{
    if (a->variant != CL_VARIANT_STUDENT && !student_at_first(hc->student_firsts, params))
        return true;
    return !(variant_flags(a) & CL_V_BLOCK) &&
           (a->block != hc->first_block || a->grid != hc->first_grid);
}

/* A student run's point as student_prepare reads it: --block as dimensions,
 * left out when not given (then the %%kernel line's, else the contract's);
 * --grid 0 left out (the line's, else the family's rule). New reference. */
static json_t *point_for_student(const histo_run_ctx *hc, const json_t *params)
{
    json_t *pt = json_deep_copy(params);
    const json_t *block = json_object_get(params, "block");
    if (!hc->block_given)
        json_object_del(pt, "block");
    else if (json_is_integer(block))
        json_object_set_new(pt, "block", json_pack("[O, i, i]", block, 1, 1));
    int64_t grid = get_int(params, "grid");
    if (grid > 0)
        json_object_set_new(pt, "grid", json_pack("[I, i, i]", (json_int_t)grid, 1, 1));
    else
        json_object_del(pt, "grid");
    return pt;
}

static json_t *run_object(magic_ctx *ctx, const cl_backend *be, const json_t *params, const cl_histo_args *a,
                          const cl_histo_result *r)
{
    double median = stats_median(&r->times);
    double gbs = median > 0 ? (double)a->n / (median * 1e6) : 0;
    json_t *run = json_object();
    json_object_set_new(run, "variant", json_string(get_str(params, "variant")));
    json_object_set_new(run, "size", json_integer((json_int_t)a->n));
    json_object_set_new(run, "input", json_string(a->text ? "text" : "random"));
    json_object_set_new(run, "dist", a->text ? json_null() : json_string(dist_choices[a->dist]));
    json_object_set_new(run, "bin_mode", json_string(get_str(params, "bins")));
    json_object_set_new(run, "bin_width", a->mode == CL_HISTO_LETTERS ? json_integer(a->width)
                                                                        : json_null());
    /* as launched: --grid 0 resolved; null where a library chose; a student's
     * 2D or 3D block as its dimensions */
    const int *lb = r->launch.block;
    json_object_set_new(run, "block", lb[1] > 1 || lb[2] > 1 ? json_pack("[i, i, i]", lb[0], lb[1], lb[2])
                                      : lb[0] > 0            ? json_integer(lb[0])
                                                             : json_null());
    json_object_set_new(run, "grid", r->launch.grid[0] > 0 ? json_integer(r->launch.grid[0])
                                                            : json_null());
    json_object_set_new(run, "seed", json_integer((json_int_t)a->seed));
    json_object_set_new(run, "backend", json_string(be->name));
    json_object_set_new(run, "implementation", json_string(r->impl));
    json_object_set_new(run, "time_ms", stats_json(&r->times));
    sweep_add_conditions(ctx, run);
    json_object_set_new(run, "h2d_ms", a->text ? json_real(r->times.h2d_ms) : json_null());
    json_object_set_new(run, "gbs", json_real(gbs));
    double copy = copy_gbs(ctx, be);
    json_object_set_new(run, "bandwidth_gbs", copy > 0 ? json_real(copy) : json_null());
    json_object_set_new(run, "pct_of_bandwidth", copy > 0 ? json_real(100.0 * gbs / copy) : json_null());
    json_object_set_new(run, "launch", launch_json(&r->launch));
    json_object_set_new(run, "nbins", json_integer(r->nbins));
    json_object_set_new(run, "bins", histo_bins_json(a->mode, a->width, r->counts, r->nbins));
    return run;
}

static int histo_point(magic_ctx *ctx, const json_t *params, json_t *runs, void *user)
{
    histo_run_ctx *hc = user;
    if (magic_cancelled())
        return magic_error(ctx, "KeyboardInterrupt", "%%histo interrupted");
    cl_histo_args a;
    const student_def *sd;
    args_from(params, hc, &a);
    if (!variant_of(ctx->lab, params, &a, &sd))
        return family_point_variant(ctx, &histo_family, params);
    if (runs_once(hc, &a, params))
        return 0;
    const cl_backend *be = backend_for(ctx, &a);
    if (!be->histo)
        return magic_error(ctx, "RuntimeError", "the %s backend has no histogram family", be->name);
    if (sd && !be->histo->runs_student)
        return family_refuse_student(ctx, sd->name);
    student_launch sl;
    if (sd) {
        json_t *pt = point_for_student(hc, params);
        int rc = student_prepare(ctx, sd, pt, 0, &sl);
        json_decref(pt);
        if (rc != 0)
            return -1;
        a.student = &sl.kernel;
    }
    cl_histo_result *r = calloc(1, sizeof *r);
    char err[CL_ERR_LEN] = "";
    if (!r || MAGIC_TIMED(ctx, err, be->histo->run(&a, r, err)) != 0) {
        if (sd) {
            char point[96];
            if (a.text)
                snprintf(point, sizeof point, "%%histo --text (%llu bytes)", (unsigned long long)a.n);
            else
                snprintf(point, sizeof point, "%%histo --size %llu --dist %s", (unsigned long long)a.n,
                         dist_choices[a.dist]);
            int rc = r ? student_run_failed(ctx, &sl, point, err) : magic_error(ctx, "MemoryError", "out of memory");
            free(r);
            student_launch_free(&sl);   /* after: the CPU runner's diagnosis lives in sl */
            return rc;
        }
        if (!r)
            return magic_error(ctx, "MemoryError", "out of memory");
        free(r);
        return magic_error(ctx, magic_backend_ename(be),
                           "%%histo --variant %s: %s", get_str(params, "variant"), err);
    }
    json_t *run = run_object(ctx, be, params, &a, r);
    if (sd) {
        student_run_json(&sl, run);
        student_launch_free(&sl);
    }
    if (hc->check && reference(hc, &a, ctx) != 0) {
        json_decref(run);
        free(r);
        return -1;
    }
    json_object_set_new(run, "check", hc->check ? check_json(hc, r, &a) : check_skipped(NULL));
    json_array_append_new(runs, run);
    free(r);
    return 0;
}

/* ---- host work (the framework's limit, sweep.h) ----
 * Bytes per CPU-second of each variant's CPU analogue, measured on a 2-core AMD
 * EPYC host (differences of CPU time between runs of 1 and 3 reps of 2^27
 * bytes, out of cache; estimates): on uniform input, and on skewed input (90%
 * in one bin: atomics on one counter). cpu and cub run on one thread, the
 * others on every core, as do the input's generation and the reference.
 * A student's kernel on the CPU backend runs on the CPU runner, on every core,
 * at most CL_SIMT_MAX_REPS launches whatever --reps says. */
static const struct { double uniform, skewed; } histo_rates[CL_HISTO_NVARIANTS] = {
    [CL_HISTO_V_cpu] = {2.0e9, 6.9e8},        [CL_HISTO_V_sectioned] = {3.8e8, 5.0e8},
    [CL_HISTO_V_interleaved] = {5.9e7, 5.3e7}, [CL_HISTO_V_privatized] = {1.5e8, 8.7e7},
    [CL_HISTO_V_warp] = {8.9e8, 5.4e8},       [CL_HISTO_V_fast] = {2.9e8, 3.1e8},
    [CL_HISTO_V_cub] = {2.4e9, 5.0e8},
};
#define HISTO_RATE_INPUT 2.8e8      /* random bytes generated, per core */
#define HISTO_RATE_REFERENCE 3e8    /* bytes of the CPU histogram (input regenerated), per core */
#define HISTO_RATE_FLUSH 5e9        /* the cache flush before each rep: a memset on one thread */
#define HISTO_RATE_CPU_RUNNER 3e7   /* per core: a student's grid-stride kernel on the CPU runner, every
                                       load and atomic a checked call (the lecture's interleaved kernel:
                                       0.33 CPU-s a launch of 2^24 skewed bytes; a kernel with one thread
                                       per byte pays ~2 bytes' worth more per thread) */

static host_work histo_host_work(magic_ctx *ctx, const json_t *params, void *user)
{
    const histo_run_ctx *hc = user;
    host_work w = {0};
    cl_histo_args a;
    const student_def *sd;
    args_from(params, hc, &a);
    if (!variant_of(ctx->lab, params, &a, &sd) || runs_once(hc, &a, params))
        return w;                   /* the point runs nothing (histo_point says why) */
    const cl_backend *be = backend_for(ctx, &a);
    double cores = host_work_cores();
    if (strcmp(be->name, "cpu") == 0 && be->histo && !sd) {
        bool skewed = !a.text && a.dist == CL_HISTO_SKEWED;
        bool one_thread = !(cl_histo_variants[a.variant].flags & CL_V_BLOCK);   /* cpu, cub */
        double rate = skewed ? histo_rates[a.variant].skewed : histo_rates[a.variant].uniform;
        double flush = be->histo->overhead ? (double)be->histo->overhead() : 0;
        w.run = (double)a.n + flush * rate / HISTO_RATE_FLUSH;  /* the flush, in the variant's bytes */
        w.run_rate = rate * (one_thread ? 1 : cores);
        w.setup = a.text ? 0 : (double)a.n;
        w.setup_rate = HISTO_RATE_INPUT * cores;
    } else if (strcmp(be->name, "cpu") == 0 && be->histo && be->histo->runs_student) {
        w.run = (double)a.n * host_work_runner_share(params);   /* at most CL_SIMT_MAX_REPS launches */
        w.run_rate = HISTO_RATE_CPU_RUNNER * cores;
        w.setup = a.text ? 0 : (double)a.n;
        w.setup_rate = HISTO_RATE_INPUT * cores;
    }
    if (hc->check) {
        w.check = (double)a.n;
        w.check_rate = HISTO_RATE_REFERENCE * cores;
        /* the references of generated inputs are cached (reference()): one per input */
        w.check_key = a.text ? 0 : cl_hash(a.seed ^ ((uint64_t)a.dist << 56) ^ ((uint64_t)a.mode << 48) ^
                                           ((uint64_t)a.width << 40), a.n) | 1;
    }
    return w;
}

/* ---- run ---- */

static int64_t first_int(const json_t *v)
{
    return (int64_t)json_integer_value(json_is_array(v) ? json_array_get(v, 0) : v);
}

static const sweep_spec histo_sweep = {
    .magic = "histo",
    .title = "Histogram",
    .metric = "gbs",
    .metric_label = "GB/s", .rate_of = "bytes",
    .columns = histo_columns,
    .run_point = histo_point,
    .host_work = histo_host_work,
    .size_flag = "size",
};

static int histo_prepare(magic_ctx *ctx, const json_t *given, json_t *p, void *env)
{
    (void)ctx;
    histo_run_ctx *hc = env;
    hc->text = get_str(p, "text");
    hc->check = json_is_true(json_object_get(p, "check"));
    const json_t *blocks = json_object_get(p, "block");
    hc->first_block = block_x(json_is_array(blocks) && json_is_array(json_array_get(blocks, 0))
                                  ? json_array_get(blocks, 0) : blocks);
    hc->first_grid = first_int(json_object_get(p, "grid"));
    hc->block_given = !json_is_null(json_object_get(given, "block"));
    return 0;
}

static const family_command histo_command = {
    .family = &histo_family, .sweep = &histo_sweep, .params = histo_params, FAMILY_ENV(histo_run_ctx),
    .prepare = histo_prepare, .run_sweep = histo_sweep_run,
};

static int histo_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    return family_run(ctx, &histo_command, params, body);
}

static const char *const histo_examples[] = {
    "%histo",
    "%histo --variant fast,cub --size 2^28",
    "%histo --text \"programming massively parallel processors\" --bin-width 4",
    "%histo --size 2^28 --dist uniform,text,skewed",
    "%histo --variant sectioned,interleaved --block 64,256,1024",
    "%histo --variant privatized,warp,fast --dist skewed --bins letters",
    "%%histo --bin-width 1",
    NULL,
};

const magic_spec magic_histo = {
    .name = "histo",
    .summary = "Histogram of bytes or letters: sequential, sectioned, interleaved, privatized, "
               "warp, fast and cub",
    .description =
        "Counts how often each byte value (--bins bytes, 256 bins) or each group of letters "
        "(--bins letters: a-d, e-h, ... with --bin-width 4, as in the textbook) occurs in the "
        "input: --size random bytes generated on the device from --seed (--dist uniform, text "
        "or skewed), or a text given with --text or as the body of %%histo (copied to the "
        "device; that copy is timed apart).\n\n"
        "The variants follow the lecture. Every byte is one increment, and increments to the "
        "same bin from different threads race, so the GPU versions use atomics; what changes "
        "is where the atomics land and how the input is read (the table below).\n\n"
        "On a GPU the first two are limited by the atomics on one global histogram of a few "
        "hundred counters, whichever way they read: every increment of the whole device queues "
        "there. Privatizing moves that traffic into each SM's shared memory; fast then removes "
        "the bank conflicts that remain. Try --dist skewed: when most bytes fall in one bin, "
        "atomics on one address serialize, and the variants that spread or aggregate them "
        "hold up best.\n\n"
        "Times are device time of the kernels, zeroing the output included, with the L2 "
        "cache flushed before each rep; GB/s is input bytes over the median time and "
        "pct_of_bandwidth compares it with a measured device copy. Every run's bins are "
        "compared exactly with the CPU histogram of the same input (--no-check skips it); "
        "\"bins\" in the result holds the counts (an array of 256 for bytes, an object keyed "
        "by label for letters).\n\n"
        "Your own kernel (%%kernel --for histo) runs as one more variant: "
        "__global__ void NAME(" CL_HISTO_STUDENT_PARAMS "). "
        "It counts the lecture's letter bins (--bins letters --bin-width 4, the default when "
        "--variant names it): a letter c, either case, adds 1 to histo[((c | 0x20) - 'a') / 4]; "
        "other bytes are not counted; the 7 bins are zeroed before every launch. Block 256, grid "
        "SMs x resident blocks unless --grid: loop over data[0 .. n) with a grid stride. Its counts "
        "are checked exactly (a count written past the 7 bins is wrong too); quick check at "
        "--size 100003 --dist skewed.",
    .flags = histo_flags,
    .mode = MAGIC_LINE | MAGIC_CELL,
    .where = MAGIC_WORKER,
    .run = histo_run,
    .examples = histo_examples,
    .attach = student_attach,
};
