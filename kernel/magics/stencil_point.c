/* stencil_point.c — one %stencil sweep point: its weights, the run, the run
 * object (GB/s, the reads-per-output model, launch) and the check.
 *
 * The check: the host reference adds the same terms in the same order with
 * the same fmaf (stencil.h), so a correct output equals it bit for bit and
 * the check also reports how many elements are bit-exact. The pass bound is
 *   |out - ref| <= 1e-6 * sum_j |w_j * x_{i+j}|,
 * i.e. about 8 float roundings of the terms' magnitude: slack for nothing
 * but a differently rounded last addition, yet far below what a wrong
 * element does (a lost or doubled term moves it by |w_j x| ~ 1e-3 of the
 * scale even for R = 1024, ghost cells that are not 0 by a whole term).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "magic/check.h"
#include "magic/sweep.h"
#include "magics/stencil_internal.h"
#include "student/run.h"

static const int box3[] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
static const int gauss3[] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
static const int gauss5[] = {1, 4, 6, 4, 1, 4, 16, 24, 16, 4, 6, 24, 36, 24, 6, 4, 16, 24, 16, 4, 1, 4, 6, 4, 1};
static const int laplace4[] = {0, 1, 0, 1, -4, 1, 0, 1, 0};
static const int laplace8[] = {1, 1, 1, 1, -8, 1, 1, 1, 1};

static const st_filter filters[] = {
    {"box", 3, 9, box3, "(1 1 1; 1 1 1; 1 1 1)/9"},
    {"gauss3", 3, 16, gauss3, "(1 2 1; 2 4 2; 1 2 1)/16"},
    {"gauss5", 5, 256, gauss5, "(1 4 6 4 1) outer (1 4 6 4 1) / 256"},
    {"laplace4", 3, 1, laplace4, "(0 1 0; 1 -4 1; 0 1 0)"},
    {"laplace8", 3, 1, laplace8, "(1 1 1; 1 -8 1; 1 1 1)"},
};

const st_filter *st_filter_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof filters / sizeof filters[0]; i++)
        if (strcmp(filters[i].name, name) == 0)
            return &filters[i];
    return NULL;
}

int st_point_weights(const st_env *env, int radius, const char *filter, float *w, int *k)
{
    if (env->custom) {
        memcpy(w, env->weights, (size_t)env->nweights * sizeof *w);
        *k = env->dim == 1 ? env->nweights : (int)lround(sqrt(env->nweights));
        return env->nweights;
    }
    if (env->dim == 1) {
        *k = 2 * radius + 1;
        for (int j = 0; j < *k; j++)
            w[j] = 1.0f / (float)*k;
        return *k;
    }
    const st_filter *f = st_filter_find(filter);
    *k = f->k;
    for (int j = 0; j < f->k * f->k; j++)
        w[j] = (float)(f->w[j] / f->divisor);
    return f->k * f->k;
}

/* ---- the run object ---- */

/* The reads-per-output model for the run's block; a student's kernel reads
 * what it reads: the model then shows only ours for comparison. */
static json_t *model_json(int v, const cl_stencil_args *a, const int *block, size_t smem)
{
    double naive, tiled, fast, bx = block[0], by = block[1], vx = CL_STENCIL_FAST_VX, vy = CL_STENCIL_FAST_ROWS;
    const char *formula;
    char fast_formula[96];
    if (a->dim == 1)
        snprintf(fast_formula, sizeof fast_formula, "(%d + 2R) / %d: a thread's window over its %d outputs",
                 CL_STENCIL_FAST_VX, CL_STENCIL_FAST_VX, CL_STENCIL_FAST_VX);
    else
        snprintf(fast_formula, sizeof fast_formula, "(%d + k - 1)(%d + k - 1) / %d: a thread's window over its "
                 "%d x %d outputs", CL_STENCIL_FAST_VX, CL_STENCIL_FAST_ROWS, CL_STENCIL_FAST_VX * CL_STENCIL_FAST_ROWS,
                 CL_STENCIL_FAST_VX, CL_STENCIL_FAST_ROWS);
    if (a->dim == 1) {
        naive = a->k;
        tiled = (bx + 2 * a->radius) / bx;
        fast = (vx + 2 * a->radius) / vx;
        formula = v == CL_STENCIL_TILED ? "(blockDim + 2R) / blockDim"
                  : v == CL_STENCIL_FAST ? fast_formula
                                         : "2R + 1";
    } else {
        naive = (double)a->k * a->k;
        tiled = (bx + a->k - 1) * (by + a->k - 1) / (bx * by);
        fast = (vx + a->k - 1) * (vy + a->k - 1) / (vx * vy);
        formula = v == CL_STENCIL_TILED ? "(BX + k - 1)(BY + k - 1) / (BX BY)"
                  : v == CL_STENCIL_FAST ? fast_formula
                                         : "k^2";
    }
    json_t *m = json_pack("{s:f, s:s, s:f, s:f, s:f, s:I}", "global_reads_per_output",
                          v == CL_STENCIL_TILED ? tiled : v == CL_STENCIL_FAST ? fast : naive, "formula", formula,
                          "naive_reads_per_output", naive,
                          "tiled_reads_per_output", tiled, "reduction_factor", naive / tiled, "smem_per_block",
                          (json_int_t)smem);
    if (v == CL_VARIANT_STUDENT) {
        json_object_set_new(m, "global_reads_per_output", json_null());
        json_object_set_new(m, "formula", json_string("your kernel: not modelled (naive and tiled beside it)"));
    }
    return m;
}

static json_t *weights_json(const cl_stencil_args *a)
{
    int n = a->dim == 1 ? a->k : a->k * a->k;
    if (n > 225)
        return json_null();
    json_t *arr = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(arr, json_real(a->weights[i]));
    return arr;
}

/* The check: every element (or a sample) within rtol of the host's; the first wrong one named as
 * out[i] or out[row][col], "never written" where it still holds the NaN sentinel. */
static json_t *check_json(const cl_stencil_args *a, const cl_stencil_check *c)
{
    json_t *o = check_new(true, a->student ? "host reference: |out - ref| <= rtol * sum|w*x| per element, rtol "
                                             "allowing any summation order; out filled with NaN before every rep"
                                           : "host reference, same summation order with fmaf: |out - ref| <= rtol * "
                                             "sum|w*x| per element (a correct result is bit-exact)", c->rtol);
    json_object_set_new(o, "elements", json_integer((json_int_t)(a->nx * a->ny)));
    json_object_set_new(o, "checked", json_integer((json_int_t)c->checked));
    json_object_set_new(o, "sampled", json_boolean(c->sampled));
    json_object_set_new(o, "bit_exact", json_integer((json_int_t)c->bit_exact));
    json_object_set_new(o, "max_abs_err", json_real_or_null(c->max_abs_err));
    json_object_set_new(o, "max_rel_err", json_real_or_null(c->max_rel_err));
    if (!c->mismatches)
        return o;
    uint64_t i = c->first_bad, row = i / a->nx, col = i % a->nx;
    check_wrong(o, c->mismatches, a->dim == 1 ? json_pack("{s:I}", "index", (json_int_t)i)
                                              : json_pack("{s:I, s:I}", "row", (json_int_t)row, "col", (json_int_t)col),
                c->got, c->want);
    char where[64];
    if (a->dim == 1)
        snprintf(where, sizeof where, "out[%llu]", (unsigned long long)i);
    else
        snprintf(where, sizeof where, "out[%llu][%llu]", (unsigned long long)row, (unsigned long long)col);
    if (isnan(c->got))
        check_first_wrong(o, "%s was never written (expected %.9g)", where, c->want);
    else
        check_first_wrong(o, "%s = %.9g, expected %.9g", where, c->got, c->want);
    return o;
}

/* The block as it ran: threads per block, or its dimensions where it has more than one. */
static json_t *block_json(const cl_launch *l)
{
    if (l->block[1] <= 1 && l->block[2] <= 1)
        return json_integer(l->block[0]);
    return json_pack("[i, i, i]", l->block[0], l->block[1], l->block[2]);
}

/* v: ours, or CL_VARIANT_STUDENT with the student's name and contract in name, launch_rule. */
static json_t *run_json(const st_env *env, int v, const char *name, const char *launch_rule,
                        const cl_stencil_args *a, const char *filter, const cl_stencil_result *r)
{
    double median = stats_median(&r->times);
    double bytes = (double)a->nx * a->ny * 8.0;
    double gbs = median > 0 ? bytes / (median * 1e6) : 0;
    char size[64];
    json_t *sz;
    if (a->dim == 1) {
        sz = json_integer((json_int_t)a->nx);
    } else {
        snprintf(size, sizeof size, "%llux%llu", (unsigned long long)a->nx, (unsigned long long)a->ny);
        sz = json_string(size);
    }
    json_t *run = json_pack("{s:s, s:i, s:o, s:I, s:I, s:i, s:s, s:i, s:o, s:s, s:s, s:s}", "variant", name,
                            "dim", a->dim, "size", sz, "width", (json_int_t)a->nx, "height", (json_int_t)a->ny,
                            "radius", a->radius, "filter", filter, "k", a->k, "block", block_json(&r->launch), "backend",
                            env->backend->name, "impl", r->impl, "boundary",
                            "zero padding: ghost cells are 0");
    json_object_set_new(run, "weights", weights_json(a));
    json_object_set_new(run, "normalized", json_boolean(!env->custom || env->normalize));
    json_object_set_new(run, "time_ms", stats_json(&r->times));
    json_object_set_new(run, "bytes", json_integer((json_int_t)bytes));
    json_object_set_new(run, "gbs", json_real(gbs));
    json_object_set_new(run, "bandwidth_gbs", env->bw_gbs > 0 ? json_real(env->bw_gbs) : json_null());
    json_object_set_new(run, "pct_of_bandwidth", env->bw_gbs > 0 ? json_real(100.0 * gbs / env->bw_gbs)
                                                                 : json_null());
    json_object_set_new(run, "model", model_json(v, a, r->launch.block, r->launch.smem_bytes));
    json_t *launch = launch_json(&r->launch);
    json_object_set_new(launch, "config", json_string(launch_rule));
    json_object_set_new(run, "launch", launch);
    return run;
}

/* --roofline: an output's terms are one fmaf each (stencil.h), two FLOPs as the counters count an
 * FMA, over the floats the lecture's model reads for it and the one it writes; a student's kernel
 * has no model, so only --counters places it. */
int st_flops(const json_t *run, sweep_flops *f)
{
    double outputs = (double)json_integer_value(json_object_get(run, "width")) *
                     (double)json_integer_value(json_object_get(run, "height"));
    const json_t *reads = json_object_get(json_object_get(run, "model"), "global_reads_per_output");
    double median = json_number_value(json_object_get(json_object_get(run, "time_ms"), "median"));
    f->flop = 2.0 * (double)json_array_size(json_object_get(run, "weights")) * outputs;
    f->bytes = json_is_number(reads) ? outputs * (json_number_value(reads) + 1) * 4 : 0;
    f->gflops = median > 0 ? f->flop / (median * 1e6) : 0;
    return 0;
}

/* The launch arguments of a point (weights into w); returns the filter's name for the run object. */
static const char *point_args(const st_env *env, const json_t *pt, cl_stencil_args *a, float *w)
{
    const json_t *size = json_object_get(pt, "size");
    const char *filter = json_string_value(json_object_get(pt, "filter"));
    int radius = (int)json_integer_value(json_object_get(pt, "radius"));
    *a = (cl_stencil_args){.dim = env->dim, .ny = 1, .weights = w, .seed = env->seed, .reps = env->reps,
                           .warmup = env->warmup};
    st_block_of(env, json_object_get(pt, "block"), a->block);
    st_point_weights(env, radius, filter, w, &a->k);
    a->radius = (a->k - 1) / 2;
    if (env->dim == 1) {
        a->nx = (uint64_t)json_integer_value(size);
        return env->custom ? "custom" : "box";
    }
    unsigned long long nx = 0, ny = 0;
    sscanf(json_string_value(size), "%llux%llu", &nx, &ny);
    a->nx = nx, a->ny = ny;
    return env->custom ? "custom" : filter;
}

/* ---- host work (the framework's limit, sweep.h) ----
 * Multiply-adds per CPU-second on the CPU backend, measured on a 2-core AMD
 * EPYC host (differences of CPU time between runs of 1 and 3 reps of 2^25
 * elements with R = 1, 8, 64, and of 4096x4096 with 3x3 and 5x5 filters, naive
 * and tiled alike; estimates): a rep costs about terms + 2 multiply-adds an
 * output, the 2 for its loads and store. The runs and the check's comparison
 * run on every core; the input is generated on one thread, for the runs and
 * again for the check. */
#define ST_RATE_RUN 1.4e9           /* multiply-adds of a rep, per core (vectorised analogues: 1D 2^24 R=3
                                       and 2D 4096² gauss3, measured again) */
#define ST_RATE_INPUT 2e8           /* elements generated, one thread */
#define ST_RATE_CHECK 3e8           /* multiply-adds of the reference, per core */
/* A student's kernel on the CPU runner (cpu/simt/), every access checked:
 * about 0.2 us an output and 0.02 us a term per core on the same host (the
 * slower of the lecture's naive and shared-memory tiled kernels at 2^22
 * outputs with R = 1 and 16, and 2048x2048 with gauss5), in the unit of a
 * rep: terms + ST_RUNNER_OUTPUT per output. The runner launches
 * min(reps, CL_SIMT_MAX_REPS) times, with no warm-up. */
#define ST_RATE_RUNNER 5e7          /* units of a student's rep, per core */
#define ST_RUNNER_OUTPUT 10.0       /* an output's own cost, in terms */

host_work st_host_work(magic_ctx *ctx, const json_t *pt, void *user)
{
    const st_env *env = user;
    host_work w = {0};
    float weights[CL_STENCIL_MAX_WEIGHTS];
    cl_stencil_args a;
    point_args(env, pt, &a, weights);
    double n = (double)a.nx * (double)a.ny, terms = env->dim == 1 ? a.k : (double)a.k * a.k;
    double cores = host_work_cores();
    const char *name = json_string_value(json_object_get(pt, "variant"));
    bool student = name && family_builtin(&stencil_family, name) < 0;
    if (strcmp(env->backend->name, "cpu") == 0 && student) {
        w.run = n * (terms + ST_RUNNER_OUTPUT) * host_work_runner_share(pt);
        w.run_rate = ST_RATE_RUNNER * cores;
        w.setup = n;
        w.setup_rate = ST_RATE_INPUT;
    } else if (strcmp(env->backend->name, "cpu") == 0) {
        w.run = n * (terms + 2);
        w.run_rate = ST_RATE_RUN * cores;
        w.setup = n;
        w.setup_rate = ST_RATE_INPUT;
    }
    if (env->check) {
        double compared = fmin(n * terms, (double)CL_STENCIL_CHECK_BUDGET);
        w.check = compared + n * ST_RATE_CHECK * cores / ST_RATE_INPUT;  /* the input, in the check's unit */
        w.check_rate = ST_RATE_CHECK * cores;
    }
    return w;
}

/* The point as a student would type it, for a failed run's message. */
static void point_line(const cl_stencil_args *a, const char *filter, char *buf, size_t len)
{
    if (a->dim == 1)
        snprintf(buf, len, "%%stencil --size %llu --radius %d", (unsigned long long)a->nx, a->radius);
    else
        snprintf(buf, len, "%%stencil --dim 2 --size %llux%llu --filter %s", (unsigned long long)a->nx,
                 (unsigned long long)a->ny, filter);
}

int st_point(magic_ctx *ctx, const json_t *pt, json_t *runs, void *user)
{
    st_env *env = user;
    const char *name = json_string_value(json_object_get(pt, "variant"));
    const student_def *def = family_builtin(&stencil_family, name) < 0 ? student_find(ctx->lab, name) : NULL;
    int v = def ? CL_VARIANT_STUDENT : family_point_variant(ctx, &stencil_family, pt);
    if (!def && v < 0)
        return -1;
    if (!def && !student_at_first(env->student_firsts, pt))
        return 0;                   /* ours run once per value of -D */
    float w[CL_STENCIL_MAX_WEIGHTS];
    cl_stencil_args a;
    const char *filter = point_args(env, pt, &a, w);
    student_launch sl;
    if (def && student_prepare(ctx, def, pt, 0, &sl) != 0)
        return -1;
    a.student = def ? &sl.kernel : NULL;
    uint64_t n = a.nx * a.ny;
    float *out = env->check ? malloc(n * sizeof *out) : NULL;
    cl_stencil_result *r = malloc(sizeof *r);
    char err[CL_ERR_LEN] = "";
    int rc = 0;
    if (!r || (env->check && !out)) {
        rc = magic_error(ctx, "MemoryError", "out of host memory for the %.1f MiB output copy",
                         (double)n * 4 / 1048576.0);
    } else if (MAGIC_TIMED(ctx, err, env->ops->run(v, &a, out, r, err)) != 0) {
        char line[160];
        point_line(&a, filter, line, sizeof line);
        rc = def ? student_run_failed(ctx, &sl, line, err)
                 : magic_error(ctx, magic_backend_ename(env->backend),
                               "%%stencil --variant %s: %s", name, err);
    }
    if (rc != 0) {
        free(out);
        free(r);
        if (def)
            student_launch_free(&sl);
        return rc;
    }
    json_t *run = run_json(env, v, name, def ? def->contract->launch : cl_stencil_variants[v].launch, &a, filter, r);
    sweep_add_conditions(ctx, run);
    free(r);
    if (def)
        student_run_json(&sl, run);
    json_t *check;
    if (!env->check) {
        check = check_skipped(NULL);
    } else {
        cl_stencil_check c;
        if (cl_stencil_verify(&a, out, &c, err) != 0) {
            free(out);
            if (def)
                student_launch_free(&sl);
            json_decref(run);
            return magic_error(ctx, "MemoryError", "%%stencil check: %s", err);
        }
        check = check_json(&a, &c);
    }
    free(out);
    if (def)
        student_launch_free(&sl);
    json_object_set_new(run, "check", check);
    json_array_append_new(runs, run);
    return 0;
}
