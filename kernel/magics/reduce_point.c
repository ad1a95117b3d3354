/* reduce_point.c — one %reduce sweep point: run a variant, turn its result
 * into a run object, check it against the double-precision reference.
 *
 * Integer results and float max/min must equal the reference exactly. A float
 * sum cannot: the variants add in different orders, in float. Its check is
 *   |value - ref| <= rtol * scale,  rtol = 1e-5 * max(1, log2 N),
 *   scale = max(|ref|, sqrt(sum x^2)).
 * Why this bound: a float addition errs by at most 2^-24 of its result, and
 * the errors of the additions on the longest chain (one thread's sequential
 * loop plus log2 N tree levels) accumulate like a random walk. The inputs are
 * zero-mean, so every partial sum is of the order of ||x||_2 = sqrt(sum x^2),
 * and the total error stays near 2^-24 * sqrt(chain) * ||x||_2: about 1e-6
 * of the scale at N = 2^26, a hundred times inside rtol = 2.6e-4. The scale
 * uses ||x||_2 and not |ref| alone because a sum that happens to land near
 * zero must not make a correct result look wrong. Losing a block's segment
 * of 2B elements moves the sum by about sqrt(2B/3) (13 for B = 256), ten
 * times the bound at N = 2^26; the int runs, which use the same kernels,
 * catch a single lost element exactly.
 *
 * A student's kernel (a float sum) writes one partial per block; the host adds
 * them in double. Its check also compares every partial with the sum of its
 * block's section under the same bound, so the first wrong block is named,
 * and the partials' guards (written past the grid) must stay intact. With
 * --second, the value is the second kernel's (one block over the partials on
 * the device) and the same total's check grades it, after the partials'.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "magic/check.h"
#include "magic/sweep.h"
#include "magics/reduce_internal.h"
#include "student/run.h"

static bool uses_block(int v)
{
    return (cl_reduce_variants[v].flags & CL_V_BLOCK) != 0;
}

static cl_reduce_op op_of(const char *s)
{
    return strcmp(s, "max") == 0 ? CL_REDUCE_MAX : strcmp(s, "min") == 0 ? CL_REDUCE_MIN : CL_REDUCE_SUM;
}

/* ---- the check ---- */

/* jansson has no NaN or infinity: a result that is one shows as null. */
static int reference(magic_ctx *ctx, rd_env *env, const cl_reduce_args *a)
{
    if (env->ref_valid && env->ref_n == a->n && env->ref_dtype == a->dtype)
        return 0;
    char err[CL_ERR_LEN] = "";
    if (cl_reduce_reference(a->n, a->dtype, a->seed, &env->ref, err) != 0)
        return magic_error(ctx, "MemoryError", "%%reduce reference (size %llu): %s",
                           (unsigned long long)a->n, err);
    env->ref_valid = true;
    env->ref_n = a->n;
    env->ref_dtype = a->dtype;
    return 0;
}

/* A reduction has one answer: wrong.count is 0 or 1, first the total ({} where
 * it is) or, for a student's kernel, its first wrong partial (student_check). */
json_t *rd_check(magic_ctx *ctx, rd_env *env, const cl_reduce_args *a, const cl_reduce_result *r)
{
    if (reference(ctx, env, a) != 0)
        return NULL;
    const cl_reduce_ref *ref = &env->ref;
    if (a->dtype == CL_REDUCE_INT) {
        int64_t want = a->op == CL_REDUCE_SUM ? ref->isum : a->op == CL_REDUCE_MAX ? ref->imax : ref->imin;
        int64_t diff = r->ivalue - want;
        json_t *c = check_new(true, "exact: int64 reference on the host", 0);
        json_object_set_new(c, "reference", json_integer(want));
        json_object_set_new(c, "abs_err", json_integer(diff < 0 ? -diff : diff));
        if (r->ivalue != want)
            check_wrong_int(c, 1, json_object(), r->ivalue, want);
        return c;
    }
    double want = a->op == CL_REDUCE_SUM ? ref->sum : a->op == CL_REDUCE_MAX ? ref->max : ref->min;
    double err = fabs(r->fvalue - want);
    json_t *c;
    bool ok;
    if (a->op != CL_REDUCE_SUM) {
        ok = r->fvalue == want;
        c = check_new(ok, "exact: the same floats' max/min on the host", 0);
    } else {
        double lg = log2((double)a->n);
        double rtol = 1e-5 * (lg > 1 ? lg : 1);
        double norm = sqrt(ref->sum_sq);
        double scale = fabs(want) > norm ? fabs(want) : norm;
        ok = isfinite(r->fvalue) && err <= rtol * scale;
        c = check_new(ok, "double-precision reference on the host: |value - ref| <= rtol * scale, "
                          "scale = max(|ref|, sqrt(sum x^2)), rtol = 1e-5 * log2(N)", rtol);
        json_object_set_new(c, "rel_err", json_real_or_null(scale > 0 ? err / scale : 0.0));
        json_object_set_new(c, "scale", json_real(scale));
    }
    json_object_set_new(c, "reference", json_real(want));
    json_object_set_new(c, "abs_err", json_real_or_null(err));
    if (!ok)
        check_wrong(c, 1, json_object(), r->fvalue, want);
    return c;
}

/* ---- host work (the framework's limit, sweep.h) ----
 * Elements per CPU-second of each variant on the CPU backend, measured on a
 * 2-core AMD EPYC host (differences of CPU time between runs of 1 and 4 reps
 * of 2^26 elements, out of cache; estimates), float and int. cpu runs on one
 * thread; the analogues, cub's stand-in, the input and the reference on every
 * core. */
static const struct { double f, i; } rd_rates[CL_REDUCE_NVARIANTS] = {
    [CL_REDUCE_CPU] = {1.3e9, 1.9e9},        [CL_REDUCE_DIVERGENT] = {1.2e8, 1.1e8},
    [CL_REDUCE_CONVERGENT] = {4.3e8, 4.6e8}, [CL_REDUCE_MULTIBLOCK] = {5.5e8, 3.4e8},
    [CL_REDUCE_FAST] = {1.0e9, 1.6e9},       [CL_REDUCE_CUB] = {1.3e9, 1.4e9},
};
#define RD_RATE_INPUT 2.7e8         /* elements generated, per core */
#define RD_RATE_REFERENCE 6.2e8     /* elements of the double/int64 reference (regenerated), per core */
#define RD_RATE_CPU_RUNNER 5e6      /* per core: a student's shared-memory tree on the CPU runner, every
                                       access a checked call and every barrier a switch of fibers (the
                                       lecture's convergent kernel, block 256: 1.5 CPU-s a launch of 2^23;
                                       the divergent one 1.9) */

host_work rd_host_work(magic_ctx *ctx, const json_t *pt, void *user)
{
    const rd_env *env = user;
    host_work w = {0};
    int v = family_builtin(&reduce_family, json_string_value(json_object_get(pt, "variant")));
    int block = rd_block_of(pt);
    double n = (double)json_integer_value(json_object_get(pt, "size"));
    if (v < 0) {                    /* a student's kernel: on a GPU, or on the CPU runner; the host checks it */
        if (env->ops == env->host_ops) {
            w.run = n * host_work_runner_share(pt);     /* at most CL_SIMT_MAX_REPS launches */
            w.run_rate = RD_RATE_CPU_RUNNER * host_work_cores();
            w.setup = n;
            w.setup_rate = RD_RATE_INPUT * host_work_cores();
        }
        if (env->check) {           /* the reference, then every partial's section again, serially */
            w.check = n;
            w.check_rate = 1.0 / (1.0 / (RD_RATE_REFERENCE * host_work_cores()) + 1.0 / RD_RATE_INPUT);
        }
        return w;
    }
    if ((!uses_block(v) && block != env->first_block) || !student_at_first(env->student_firsts, pt))
        return w;                   /* the point runs nothing (rd_point says why) */
    bool is_int = strcmp(json_string_value(json_object_get(pt, "dtype")), "int") == 0;
    double cores = host_work_cores();
    bool loop = (cl_reduce_variants[v].flags & CL_V_HOST) != 0;    /* one host thread */
    if (loop || env->ops == env->host_ops) {
        w.run = n;
        w.run_rate = (is_int ? rd_rates[v].i : rd_rates[v].f) * (loop ? 1 : cores);
        w.setup = n;                /* the CPU backend makes the input for every point */
        w.setup_rate = RD_RATE_INPUT * cores;
    }
    if (env->check) {
        w.check = n;
        w.check_rate = RD_RATE_REFERENCE * cores;
        w.check_key = (unsigned long long)n * 2 + is_int + 1;   /* one reference per size and dtype */
    }
    return w;
}

/* ---- the run object ---- */

static double host_bandwidth(rd_env *env)
{
    if (!env->host_bw_tried) {
        char err[CL_ERR_LEN];
        const cl_backend *cpu = cl_cpu_backend();
        if (!cpu->copy_bandwidth || cpu->copy_bandwidth(&env->host_bw_gbs, err) != 0)   /* the host's: no GPU turn */
            env->host_bw_gbs = 0;
        env->host_bw_tried = true;
    }
    return env->host_bw_gbs;
}

/* The bytes a run reads: its n elements, 4 bytes each (its GB/s, and its roofline's model). */
static double rd_bytes(double n)
{
    return n * 4.0;
}

static json_t *run_json(rd_env *env, json_t *block, const char *backend_name, const cl_reduce_args *a,
                        const cl_reduce_result *r, const cl_variant *row, const char *config)
{
    double median = stats_median(&r->times);
    double gbs = median > 0 ? rd_bytes((double)a->n) / (median * 1e6) : 0;
    double bw = strcmp(backend_name, "cpu") == 0 && env->backend != cl_cpu_backend()
                    ? host_bandwidth(env) : env->bw_gbs;
    json_t *run = json_pack("{s:s, s:I, s:s, s:s, s:o, s:s, s:s}", "variant", row->name, "size",
                            (json_int_t)a->n, "dtype", a->dtype == CL_REDUCE_FLOAT ? "float" : "int",
                            "op", a->op == CL_REDUCE_SUM ? "sum" : a->op == CL_REDUCE_MAX ? "max" : "min",
                            "block", block, "backend",
                            backend_name, "impl", r->impl);
    json_object_set_new(run, "time_ms", stats_json(&r->times));
    json_object_set_new(run, "gbs", json_real(gbs));
    json_object_set_new(run, "bandwidth_gbs", bw > 0 ? json_real(bw) : json_null());
    json_object_set_new(run, "pct_of_bandwidth", bw > 0 ? json_real(100.0 * gbs / bw) : json_null());
    json_object_set_new(run, "value", a->dtype == CL_REDUCE_FLOAT ? json_real_or_null(r->fvalue)
                                                                 : json_integer(r->ivalue));
    json_t *launch = r->launch.kernels > 0 ? launch_json(&r->launch) : json_object();
    json_object_set_new(launch, "config", json_string(config));
    json_object_set_new(run, "launch", launch);
    json_object_set_new(run, "launch_final", r->final.kernels > 0 ? launch_json(&r->final) : json_null());
    return run;
}

/* A float sum of n elements is n - 1 additions over the n floats read; int sums, and max and min
 * (compares, not the adds, multiplies and FMAs a roofline counts), do no FLOPs. */
int rd_flops(const json_t *run, sweep_flops *f)
{
    const char *dtype = json_string_value(json_object_get(run, "dtype"));
    const char *op = json_string_value(json_object_get(run, "op"));
    if (!dtype || strcmp(dtype, "float") != 0)
        f->why = "an integer reduction: no floating-point work";
    else if (!op || strcmp(op, "sum") != 0)
        f->why = "a max or min compares: no FLOPs as a roofline counts them (adds, multiplies, FMAs)";
    if (f->why)
        return -1;
    double n = (double)json_integer_value(json_object_get(run, "size"));
    double median = json_number_value(json_object_get(json_object_get(run, "time_ms"), "median"));
    f->flop = n - 1;
    f->bytes = rd_bytes(n);
    f->gflops = median > 0 ? f->flop / (median * 1e6) : 0;
    return 0;
}

/* ---- a student's kernel ---- */

/* Its threads per block, and the run's "block": an integer, or the dimensions
 * where the block has more than one. */
static int threads_of(const cl_student_kernel *k)
{
    return k->block[0] * (k->block[1] > 0 ? k->block[1] : 1) * (k->block[2] > 0 ? k->block[2] : 1);
}

static json_t *student_block_json(const cl_student_kernel *k)
{
    if (k->block[1] <= 1 && k->block[2] <= 1)
        return json_integer(k->block[0]);
    return json_pack("[i, i, i]", k->block[0], k->block[1], k->block[2]);
}

/* Partials the kernel writes: its --grid's blocks, else ⌈n/2B⌉. */
static uint64_t student_partials(const cl_student_kernel *k, uint64_t n)
{
    if (k->grid[0] > 0)
        return (uint64_t)k->grid[0] * (k->grid[1] > 0 ? k->grid[1] : 1) * (k->grid[2] > 0 ? k->grid[2] : 1);
    uint64_t section = cl_reduce_student_section(threads_of(k));
    return (n + section - 1) / section;
}

/* The total's check, then the partials': the guards, each partial against its
 * section (by the launch rule only), naming what a student fixes first. */
static void student_check(const cl_reduce_args *a, const cl_student_kernel *k, const cl_reduce_result *r,
                          json_t *check)
{
    json_object_set_new(check, "partials", json_integer((json_int_t)r->partials));
    json_object_set_new(check, "out_of_bounds", r->guard_hit >= 0 ? json_integer(r->guard_hit) : json_null());
    cl_reduce_partial_check pc = {-1, 0, 0};
    if (r->guard_hit >= 0) {
        check_wrong(check, 1, json_pack("{s:I}", "partial", (json_int_t)r->guard_hit), NAN, NAN);
        check_first_wrong(check, "partial[%lld] was written, past the grid's %llu blocks", (long long)r->guard_hit,
                          (unsigned long long)r->partials);
        return;
    }
    if (k->grid[0] == 0) {
        cl_reduce_partials_check(a->n, a->seed, cl_reduce_student_section(threads_of(k)), a->partials, r->partials,
                                 &pc);
        if (pc.index >= 0) {
            check_wrong(check, 1, json_pack("{s:I}", "partial", (json_int_t)pc.index), pc.got, pc.want);
            check_first_wrong(check, "partial[%lld] = %.9g%s, expected %.9g", (long long)pc.index,
                              isnan(pc.got) ? fabs(pc.got) : pc.got, isnan(pc.got) ? " (never written?)" : "",
                              pc.want);
            return;
        }
    }
    if (a->second && r->final_guard_hit >= 0) {
        check_wrong(check, 1, json_pack("{s:I}", "partial", (json_int_t)r->final_guard_hit), NAN, NAN);
        check_first_wrong(check, "your second pass %s wrote partial[%lld]: it writes partial[0] only",
                          a->second->name, (long long)r->final_guard_hit);
    } else if (json_is_false(json_object_get(check, "passed")) && a->second) {
        char why[96];
        if (isnan(r->fvalue))
            snprintf(why, sizeof why, "partial[0] never written?");
        else
            snprintf(why, sizeof why, "does one block of %d threads reach every partial?",
                     r->final.block[0] * r->final.block[1] * r->final.block[2]);
        check_first_wrong(check, "your second pass %s over the %llu partials returned %.9g, expected %.9g (their "
                          "sum): %s", a->second->name, (unsigned long long)r->partials,
                          isnan(r->fvalue) ? fabs(r->fvalue) : r->fvalue,
                          json_real_value(json_object_get(check, "reference")), why);
    } else if (json_is_false(json_object_get(check, "passed"))) {
        check_first_wrong(check, "the sum of the partials = %.9g, expected %.9g", r->fvalue,
                          json_real_value(json_object_get(check, "reference")));
    }
}

/* The second pass's kernel (--second), launched with its own %%kernel line's block and grid: the
 * point's --block and --grid are the first pass's. 0 with *out prepared (out->def NULL: none), or -1. */
static int second_prepare(magic_ctx *ctx, const json_t *pt, student_launch *out)
{
    memset(out, 0, sizeof *out);
    const student_def *d = student_find(ctx->lab, json_string_value(json_object_get(pt, "second")));
    if (!d)
        return 0;
    json_t *own = json_deep_copy(pt);
    json_object_del(own, "block");
    json_object_del(own, "grid");
    int rc = student_prepare(ctx, d, own, 0, out);
    json_decref(own);
    return rc;
}

static int student_point(magic_ctx *ctx, rd_env *env, const student_def *def, const json_t *pt, cl_reduce_args *a,
                         json_t *runs)
{
    student_launch sl, second;
    if (student_prepare(ctx, def, pt, 0, &sl) != 0)
        return -1;
    if (second_prepare(ctx, pt, &second) != 0) {
        student_launch_free(&sl);
        return -1;
    }
    a->student = &sl.kernel;
    a->second = second.def ? &second.kernel : NULL;
    a->npartials = student_partials(&sl.kernel, a->n);
    cl_reduce_result *r = malloc(sizeof *r);
    a->partials = malloc((a->npartials ? a->npartials : 1) * sizeof(float));
    char err[CL_ERR_LEN] = "";
    int rc = 0;
    if (!r || !a->partials)
        rc = magic_error(ctx, "MemoryError", "out of host memory for %llu partials", (unsigned long long)a->npartials);
    else if (MAGIC_TIMED(ctx, err, env->ops->run(CL_VARIANT_STUDENT, a, r, err)) != 0) {
        char point[192];
        snprintf(point, sizeof point, "%%reduce --size %llu", (unsigned long long)a->n);
        if (a->second)
            snprintf(point + strlen(point), sizeof point - strlen(point), " --second %s", a->second->name);
        /* before student_launch_free: the diagnosis is in the launch that failed (the second pass
         * has begun when its launch is described) */
        rc = student_run_failed(ctx, a->second && r->final.kernels ? &second : &sl, point, err);
    }
    if (rc == 0) {
        const cl_variant *row = family_variant(ctx->lab, &reduce_family,
                                               (size_t)family_index(ctx->lab, &reduce_family, def->name));
        json_t *run = run_json(env, student_block_json(&sl.kernel), env->backend->name, a, r, row,
                               cl_reduce_student.launch);
        sweep_add_conditions(ctx, run);
        student_run_json(&sl, run);
        json_object_set_new(run, "second", a->second ? json_string(a->second->name) : json_null());
        json_t *check = env->check ? rd_check(ctx, env, a, r) : check_skipped(NULL);
        if (check && env->check)
            student_check(a, &sl.kernel, r, check);
        if (check) {
            json_object_set_new(run, "check", check);
            json_array_append_new(runs, run);
        } else {
            json_decref(run);
            rc = -1;
        }
    }
    free(r);
    free(a->partials);
    a->partials = NULL;
    student_launch_free(&sl);
    if (second.def)
        student_launch_free(&second);
    return rc;
}

int rd_point(magic_ctx *ctx, const json_t *pt, json_t *runs, void *user)
{
    rd_env *env = user;
    const char *name = json_string_value(json_object_get(pt, "variant"));
    const student_def *def = family_builtin(&reduce_family, name) < 0 ? student_find(ctx->lab, name) : NULL;
    int v = def ? CL_VARIANT_STUDENT : family_point_variant(ctx, &reduce_family, pt);
    if (v < 0 && !def)
        return -1;
    int block = v >= 0 && cl_reduce_variant_blocks[v] && !json_is_array(json_object_get(pt, "block"))
                    ? cl_reduce_variant_blocks[v] : rd_block_of(pt);
    if (!def && ((!uses_block(v) && block != env->first_block) || !student_at_first(env->student_firsts, pt)))
        return 0;                   /* cpu and cub run once per size, not once per --block; built-ins once per -D */
    cl_reduce_args a = {
        .n = (uint64_t)json_integer_value(json_object_get(pt, "size")),
        .op = op_of(json_string_value(json_object_get(pt, "op"))),
        .dtype = strcmp(json_string_value(json_object_get(pt, "dtype")), "int") == 0 ? CL_REDUCE_INT
                                                                                   : CL_REDUCE_FLOAT,
        .block = block, .seed = env->seed, .reps = env->reps, .warmup = env->warmup,
    };
    if (def)
        return student_point(ctx, env, def, pt, &a, runs);
    bool host = (cl_reduce_variants[v].flags & CL_V_HOST) != 0;
    const cl_reduce_ops *ops = host ? env->host_ops : env->ops;
    const char *backend_name = host ? "cpu" : env->backend->name;
    cl_reduce_result *r = malloc(sizeof *r);
    char err[CL_ERR_LEN] = "";
    if (!r)
        return magic_error(ctx, "MemoryError", "out of host memory");
    if (MAGIC_TIMED(ctx, err, ops->run(v, &a, r, err)) != 0) {
        free(r);
        return magic_error(ctx, magic_backend_ename(host ? cl_cpu_backend() : env->backend),
                           "%%reduce --variant %s (size %llu): %s", cl_reduce_variants[v].name,
                           (unsigned long long)a.n, err);
    }
    json_t *run = run_json(env, uses_block(v) ? json_integer(a.block) : json_null(), backend_name, &a, r,
                           &cl_reduce_variants[v], cl_reduce_variants[v].launch);
    json_t *steps = json_is_true(json_object_get(pt, "steps")) ? rd_steps_json(v, (unsigned)a.block) : NULL;
    if (steps)
        json_object_set_new(run, "steps", steps);
    sweep_add_conditions(ctx, run);
    json_t *check = env->check ? rd_check(ctx, env, &a, r)
                               : check_skipped(NULL);
    free(r);
    if (!check) {
        json_decref(run);
        return -1;
    }
    json_object_set_new(run, "check", check);
    json_array_append_new(runs, run);
    return 0;
}
