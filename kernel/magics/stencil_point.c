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

#include "magic/sweep.h"
#include "magics/stencil_internal.h"

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

static json_t *real_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *model_json(int v, const cl_stencil_args *a, size_t smem)
{
    double naive, tiled;
    const char *formula;
    if (a->dim == 1) {
        naive = a->k;
        tiled = (double)(a->block + 2 * a->radius) / a->block;
        formula = v == CL_STENCIL_TILED ? "(blockDim + 2R) / blockDim" : "2R + 1";
    } else {
        double S = a->block + a->k - 1;
        naive = (double)a->k * a->k;
        tiled = S * S / ((double)a->block * a->block);
        formula = v == CL_STENCIL_TILED ? "(T + k - 1)^2 / T^2" : "k^2";
    }
    return json_pack("{s:f, s:s, s:f, s:f, s:f, s:I}", "global_reads_per_output",
                     v == CL_STENCIL_TILED ? tiled : naive, "formula", formula, "naive_reads_per_output", naive,
                     "tiled_reads_per_output", tiled, "reduction_factor", naive / tiled, "smem_per_block",
                     (json_int_t)smem);
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

static json_t *check_json(const cl_stencil_args *a, const cl_stencil_check *c)
{
    json_t *o = json_pack("{s:b, s:s, s:f, s:I, s:I, s:b, s:I, s:I}", "passed", c->mismatches == 0, "method",
                          "host reference, same summation order with fmaf: |out - ref| <= rtol * sum|w*x| "
                          "per element (a correct result is bit-exact)",
                          "rtol", c->rtol, "elements", (json_int_t)(a->nx * a->ny), "checked",
                          (json_int_t)c->checked, "sampled", c->sampled, "mismatches",
                          (json_int_t)c->mismatches, "bit_exact", (json_int_t)c->bit_exact);
    json_object_set_new(o, "max_abs_err", real_or_null(c->max_abs_err));
    json_object_set_new(o, "max_rel_err", real_or_null(c->max_rel_err));
    if (c->mismatches) {
        uint64_t i = c->first_bad;
        json_object_set_new(o, "first_bad", a->dim == 1 ? json_pack("[I]", (json_int_t)i)
                                                        : json_pack("[I,I]", (json_int_t)(i % a->nx),
                                                                    (json_int_t)(i / a->nx)));
    }
    return o;
}

static json_t *run_json(const st_env *env, int v, const cl_stencil_args *a, const char *filter,
                        const cl_stencil_result *r)
{
    const cl_variant *row = &cl_stencil_variants[v];
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
    json_t *run = json_pack("{s:s, s:i, s:o, s:I, s:I, s:i, s:s, s:i, s:i, s:s, s:s, s:s}", "variant", row->name,
                            "dim", a->dim, "size", sz, "width", (json_int_t)a->nx, "height", (json_int_t)a->ny,
                            "radius", a->radius, "filter", filter, "k", a->k, "block", a->block, "backend",
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
    json_object_set_new(run, "model", model_json(v, a, r->launch.smem_bytes));
    json_t *launch = launch_json(&r->launch);
    json_object_set_new(launch, "config", json_string(row->launch));
    json_object_set_new(run, "launch", launch);
    return run;
}

/* The launch arguments of a point (weights into w); returns the filter's name for the run object. */
static const char *point_args(const st_env *env, const json_t *pt, cl_stencil_args *a, float *w)
{
    const json_t *size = json_object_get(pt, "size");
    const char *filter = json_string_value(json_object_get(pt, "filter"));
    int radius = (int)json_integer_value(json_object_get(pt, "radius"));
    *a = (cl_stencil_args){.dim = env->dim, .ny = 1, .weights = w, .seed = env->seed, .reps = env->reps,
                           .warmup = env->warmup,
                           .block = (int)json_integer_value(json_object_get(pt, "block"))};
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
#define ST_RATE_RUN 2.9e8           /* multiply-adds of a rep, per core */
#define ST_RATE_INPUT 2e8           /* elements generated, one thread */
#define ST_RATE_CHECK 3e8           /* multiply-adds of the reference, per core */

host_work st_host_work(magic_ctx *ctx, const json_t *pt, void *user)
{
    const st_env *env = user;
    host_work w = {0};
    if (family_builtin(&stencil_family, json_string_value(json_object_get(pt, "variant"))) < 0)
        return w;
    float weights[CL_STENCIL_MAX_WEIGHTS];
    cl_stencil_args a;
    point_args(env, pt, &a, weights);
    double n = (double)a.nx * (double)a.ny, terms = env->dim == 1 ? a.k : (double)a.k * a.k;
    double cores = host_work_cores();
    if (strcmp(env->backend->name, "cpu") == 0) {
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

int st_point(magic_ctx *ctx, const json_t *pt, json_t *runs, void *user)
{
    st_env *env = user;
    int v = family_point_variant(ctx, &stencil_family, pt);
    if (v < 0)
        return -1;
    float w[CL_STENCIL_MAX_WEIGHTS];
    cl_stencil_args a;
    const char *filter = point_args(env, pt, &a, w);
    uint64_t n = a.nx * a.ny;
    float *out = env->check ? malloc(n * sizeof *out) : NULL;
    cl_stencil_result *r = malloc(sizeof *r);
    char err[CL_ERR_LEN] = "";
    if (!r || (env->check && !out)) {
        free(out);
        free(r);
        return magic_error(ctx, "MemoryError", "out of host memory for the %.1f MiB output copy",
                           (double)n * 4 / 1048576.0);
    }
    bool gpu = strcmp(env->backend->name, "cpu") != 0;
    if (env->ops->run(v, &a, out, r, err) != 0) {
        free(out);
        free(r);
        return magic_error(ctx, gpu ? "CudaError" : "RuntimeError", "%%stencil --variant %s: %s",
                           cl_stencil_variants[v].name, err);
    }
    json_t *run = run_json(env, v, &a, filter, r);
    free(r);
    json_t *check;
    if (!env->check) {
        check = check_skipped_json();
    } else {
        cl_stencil_check c;
        if (cl_stencil_verify(&a, out, &c, err) != 0) {
            free(out);
            json_decref(run);
            return magic_error(ctx, "MemoryError", "%%stencil check: %s", err);
        }
        check = check_json(&a, &c);
    }
    free(out);
    json_object_set_new(run, "check", check);
    json_array_append_new(runs, run);
    return 0;
}
