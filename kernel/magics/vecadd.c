/* vecadd.c — the %vecadd magic: the lecture's vector addition (and daxpy)
 * with host data: copy in, add, copy back, each phase timed on its own, so
 * the notebook shows where the time goes: into moving data.
 *
 * run() validates every size against device and host memory before anything
 * is allocated, then hands the sweep to sweep_run(); point() runs one
 * configuration and builds its run object. The view's title carries the
 * lesson ("moving data took 97% of the time"), updated after every point.
 *
 * --variant picks the kernel: ours (builtin) or a student's %%kernel, which
 * implements --op add (cl_vecadd_student) and runs in the same three phases.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "magic/family_run.h"
#include "magic/check.h"
#include "magic/families.h"
#include "render/render.h"
#include "magic/show_source.h"
#include "magic/sweep.h"
#include "cudalab/vecadd.h"
#include "student/broken.h"
#include "student/sanitize.h"
#include "student/run.h"
#include "student/store.h"

static const family_spec vecadd_family = {
    .magic = "vecadd",
    .variants = cl_vecadd_variants,
    .nvariants = CL_VECADD_NVARIANTS,
    .student = &cl_vecadd_student,
    .quick = "--size 100003",
    FAMILY_OPS(vecadd, cl_vecadd_ops),
    .sources = "cuda/vecadd.cu and cpu/vecadd_cpu.c",
    .broken = broken_vecadd,
};

/* The built-in kernel's threads per block when --block is not given. */
#define VA_BLOCK_DEFAULT 256

static const char *const op_choices[] = {CL_VECADD_OPS(CL_VARIANT_NAME) NULL};
static const char *const memory_choices[] = {"pageable", "pinned", NULL};

/* The operations as the framework sees a family: --show-source shows each one's kernel. */
static const family_spec vecadd_ops = {.magic = "vecadd", .variants = cl_vecadd_op_rows,
                                       .nvariants = CL_VECADD_NOPS};

static const flag_spec vecadd_flags[] = {
    {.name = "size", .short_name = 'n', .type = FLAG_INT, .def = "2^24", .imin = 1, .imax = INT64_MAX,
     .opts = FLAG_LIST, .help = "elements per vector (2^24, 1000003, 64M)"},
    {.name = "op", .type = FLAG_CHOICE, .def = "add", .choices = op_choices, .opts = FLAG_LIST,
     .help = "add (z = x + y, float) or daxpy (y = a*x + y, double)"},
    {.name = "memory", .type = FLAG_CHOICE, .def = "pageable", .choices = memory_choices, .opts = FLAG_LIST,
     .help = "host buffers: pageable (malloc) or pinned (cudaMallocHost, page-locked)"},
    {.name = "block", .type = FLAG_DIMS, .imin = 1, .imax = 1024, .opts = FLAG_LIST,
     .help = "threads per block (256 by default): builtin takes a multiple of 32 up to 1024; your "
             "kernels any block (default: the %%kernel line's); a list sweeps"},
    {.name = "alpha", .type = FLAG_FLOAT, .def = "2.5", .fmin = -1e300, .fmax = 1e300,
     .help = "daxpy's scalar a"},
    FAMILY_VARIANT_FLAG(&vecadd_family, "builtin"),
    STUDENT_RUN_FLAGS,
    STUDENT_GRID_FLAG,
    SWEEP_MEASURE_FLAGS("seed of the inputs generated on the host",
                        "timed runs per point (each copies in, computes, copies back)",
                        "compare every element with the host's value, exactly",
                        "sort the table by the share of time moving data"),
    SHOW_SOURCE_FLAGS,
    {.name = NULL},
};

static const sweep_column vecadd_columns[] = {
    {.path = "variant", .header = "variant"},
    {.path = "op", .header = "op"},
    {.path = "size", .header = "size"},
    {.path = "memory", .header = "memory"},
    {.path = "block", .header = "block"},
    {.path = "h2d_ms.median", .header = "H2D ms"},
    {.path = "kernel_ms.median", .header = "kernel ms"},
    {.path = "d2h_ms.median", .header = "D2H ms"},
    {.path = "h2d_gbs", .header = "H2D GB/s"},
    {.path = "kernel_gbs", .header = "kernel GB/s"},
    {.path = "kernel_pct_of_bandwidth", .header = "kernel % of copy BW"},
    {.path = "d2h_gbs", .header = "D2H GB/s"},
    {.path = "transfer_pct", .header = "% moving data"},
    {.path = "check.passed", .header = "check"},
    {.path = NULL},
};

typedef struct va_env {
    const cl_vecadd_ops *ops;
    uint64_t seed;
    int reps, warmup, check;
    double bw_gbs;                  /* the backend's measured copy bandwidth; 0 when unknown */
    double alpha;
    double transfer_ms, total_ms;   /* sums of the medians over the runs so far: the headline */
    json_t *student_firsts;         /* the built-in kernel runs at these values of -D only */
    char title[160];
    sweep_spec sweep;               /* the command's sweep, titled by title */
} va_env;

/* ---- validation ---- */

static void fmt_count(uint64_t n, char *buf, size_t len)
{
    if (n >= 1024 && (n & (n - 1)) == 0)
        snprintf(buf, len, "2^%d", __builtin_ctzll(n));
    else
        snprintf(buf, len, "%" PRIu64, n);
}

/* Refuses n when per-element bytes plus fixed bytes exceed avail. */
static int check_fit(magic_ctx *ctx, uint64_t n, double per, double fixed, uint64_t avail, const char *where)
{
    double fit = ((double)avail - fixed) / per;
    char size[32], what[48], largest[64];
    fmt_count(n, size, sizeof size);
    snprintf(what, sizeof what, "--size %s", size);
    snprintf(largest, sizeof largest, "largest size that fits: %" PRIu64, fit > 0 ? (uint64_t)fit : 0);
    mem_need need = {what, NULL, where, (double)n * per + fixed, (double)avail, largest};
    return magic_memory_fit(ctx, &need);
}

/* --variant as an array of distinct names (family_run refused a student's
 * kernel the backend cannot run). */
static int expand_variants(magic_ctx *ctx, json_t *params)
{
    const json_t *given = json_object_get(params, "variant");
    json_t *list = family_select(ctx, &vecadd_family, given, NULL, NULL, ctx->backend->name);
    if (!list)
        return -1;
    if (json_array_size(list) == 1 && !json_is_array(given))
        json_object_set(params, "variant", json_array_get(list, 0));   /* one: nothing varies */
    else
        json_object_set(params, "variant", list);
    json_decref(list);
    return 0;
}

/* The built-in kernel takes a 1D block, a multiple of 32; a student's kernel
 * implements add with an int n. */
static int check_variants(magic_ctx *ctx, const json_t *params)
{
    json_t *variants = sweep_as_list(json_object_get(params, "variant")), *v;
    bool builtin = false;
    const char *student = NULL;
    size_t i;
    json_array_foreach(variants, i, v) {
        if (family_builtin(&vecadd_family, json_string_value(v)) >= 0)
            builtin = true;
        else if (!student)
            student = json_string_value(v);
    }
    json_decref(variants);          /* the names stay alive in params */
    json_t *blocks = sweep_as_list(json_object_get(params, "block"));
    int rc = 0;
    json_array_foreach(blocks, i, v) {
        if (!json_is_array(v))
            continue;               /* not given: 256, or the %%kernel line's */
        json_int_t x = json_integer_value(json_array_get(v, 0));
        bool flat = json_array_size(v) == 1 || (json_integer_value(json_array_get(v, 1)) == 1 &&
                                                json_integer_value(json_array_get(v, 2)) <= 1);
        if (builtin && !flat)
            rc = magic_error(ctx, "UsageError", "--block: %%vecadd is one-dimensional: the built-in kernel "
                             "takes --block B threads (your kernels may take a 2D or 3D block)");
        else if (builtin && x % 32 != 0)
            rc = magic_error(ctx, "UsageError", "--block %" JSON_INTEGER_FORMAT ": threads per block must be "
                             "a multiple of the warp size 32, from 32 to 1024", x);
        if (rc)
            break;
    }
    json_decref(blocks);
    if (rc || !student)
        return rc;
    json_t *ops = sweep_as_list(json_object_get(params, "op")), *sizes = sweep_as_list(json_object_get(params, "size"));
    json_array_foreach(ops, i, v)
        if (strcmp(json_string_value(v), "add") != 0 && !rc)
            rc = magic_error(ctx, "UsageError", "--op %s: %s is your kernel, and your kernels implement --op add "
                             "only (C = A + B in float); run %s with --variant builtin", json_string_value(v),
                             student, json_string_value(v));
    json_array_foreach(sizes, i, v)
        if (json_integer_value(v) > 2147483647 && !rc)
            rc = magic_error(ctx, "UsageError", "--size %" JSON_INTEGER_FORMAT ": your kernel %s takes int n, "
                             "at most 2147483647 elements", json_integer_value(v), student);
    json_decref(ops);
    json_decref(sizes);
    return rc;
}

static int validate(magic_ctx *ctx, json_t *params)
{
    int rc;
    size_t i;
    json_t *v;
    if ((rc = expand_variants(ctx, params)) || (rc = check_variants(ctx, params)))
        return rc;
    char err[CL_ERR_LEN] = "";
    cl_device_props dev, host;
    memset(&host, 0, sizeof host);
    if (magic_device_props(ctx, &dev) != 0)
        return -1;
    bool gpu = strcmp(ctx->backend->name, "cpu") != 0;
    if (gpu && cl_cpu_backend()->device_props(0, &host, err) != 0)
        return magic_error(ctx, "RuntimeError", "host: %s", err);
    json_t *sizes = sweep_as_list(json_object_get(params, "size")), *ops = sweep_as_list(json_object_get(params, "op"));
    json_t *variants = sweep_as_list(json_object_get(params, "variant"));
    bool student = false;                           /* a student's kernel among them: its check's copies */
    json_array_foreach(variants, i, v)
        student = student || family_builtin(&vecadd_family, json_string_value(v)) < 0;
    json_decref(variants);
    double per = 12, device_per = 0;                /* the largest op in the list decides */
    json_array_foreach(ops, i, v) {
        cl_vecadd_op op = strcmp(json_string_value(v), "daxpy") == 0 ? CL_VECADD_DAXPY : CL_VECADD_ADD;
        per = op == CL_VECADD_DAXPY ? 16 : per;
        double d = (double)cl_vecadd_device_bytes(op, student, sweep_kept_copies(params));
        device_per = d > device_per ? d : device_per;
    }
    json_array_foreach(sizes, i, v) {
        uint64_t n = (uint64_t)json_integer_value(v);
        if (gpu) {
            if ((rc = check_fit(ctx, n, device_per, 2.0 * dev.l2_bytes, dev.free_mem, "device")) ||
                (rc = check_fit(ctx, n, per, 0, host.free_mem, "host")))
                break;
        } else if ((rc = check_fit(ctx, n, 2 * per, 0, dev.free_mem, "host"))) {
            break;
        }
    }
    json_decref(sizes);
    json_decref(ops);
    return rc;
}

/* ---- one point ---- */

static json_t *gbs(double bytes, double ms)
{
    return ms > 0 ? json_real(bytes / (ms * 1e6)) : json_null();
}

/* The run's "block": threads per block as an integer, dimensions where a
 * student's block has more than one. */
static json_t *block_json(const cl_vecadd_args *a)
{
    if (!a->student)
        return json_integer(a->block);
    const int *b = a->student->block;
    if (b[1] <= 1 && b[2] <= 1)
        return json_integer(b[0]);
    return json_pack("[i, i, i]", b[0], b[1], b[2]);
}

/* The check: every element exact, and for add the guards after C intact (a
 * write past its end is one more wrong value, at its index). */
static json_t *check_json(const cl_vecadd_args *a, bool student, const cl_vecadd_result *r)
{
    json_t *check = check_new(true, a->op == CL_VECADD_DAXPY
                                  ? "exact (tolerance 0): every element against fma(a, x, y) on the host, "
                                    "inputs regenerated from the seed; both sides use one correctly rounded fma"
                                  : "exact (tolerance 0): every element against x + y in float on the host, "
                                    "inputs regenerated from the seed; one correctly rounded add; C filled "
                                    "with a sentinel before every rep and guarded past its end", 0);
    const char *out = student ? "C" : a->op == CL_VECADD_DAXPY ? "y" : "z";
    uint64_t wrong = r->mismatches + (r->guard_hit >= 0);
    if (r->mismatches) {
        check_wrong(check, wrong, json_pack("{s:I}", "index", (json_int_t)r->first_bad), r->got, r->want);
        check_first_wrong(check, "%s[%" PRIu64 "] = %.9g%s, expected %.9g", out, r->first_bad,
                          isnan(r->got) ? fabs(r->got) : r->got, isnan(r->got) ? " (never written?)" : "", r->want);
    } else if (r->guard_hit >= 0) {
        check_wrong(check, wrong, json_pack("{s:I}", "index", (json_int_t)r->guard_hit), NAN, NAN);
        check_first_wrong(check, "%s[%" PRId64 "] was written, past the end of %s (n = %" PRIu64 "): "
                          "a missing bounds check (if (i < n))?", out, r->guard_hit, out, a->n);
    }
    if (a->op == CL_VECADD_ADD)
        json_object_set_new(check, "out_of_bounds", r->guard_hit >= 0 ? json_integer(r->guard_hit) : json_null());
    return check;
}

static int va_point(magic_ctx *ctx, const json_t *pt, json_t *runs, void *user)
{
    va_env *env = user;
    const char *opname = json_string_value(json_object_get(pt, "op"));
    const char *memory = json_string_value(json_object_get(pt, "memory"));
    const char *variant = json_string_value(json_object_get(pt, "variant"));
    const student_def *def = family_builtin(&vecadd_family, variant) < 0 ? student_find(ctx->lab, variant) : NULL;
    if (!def && !student_at_first(env->student_firsts, pt))
        return 0;                   /* the built-in kernel runs once per value of -D */
    const json_t *block = json_object_get(pt, "block");
    cl_vecadd_args a = {
        .n = (uint64_t)json_integer_value(json_object_get(pt, "size")),
        .op = strcmp(opname, "daxpy") == 0 ? CL_VECADD_DAXPY : CL_VECADD_ADD,
        .pinned = strcmp(memory, "pinned") == 0,
        .block = json_is_array(block) ? (int)json_integer_value(json_array_get(block, 0)) : VA_BLOCK_DEFAULT,
        .alpha = env->alpha, .seed = env->seed, .reps = env->reps, .warmup = env->warmup, .check = env->check,
    };
    student_launch sl;
    if (def && student_prepare(ctx, def, pt, 0, &sl) != 0)
        return -1;
    a.student = def ? &sl.kernel : NULL;
    cl_vecadd_result *r = calloc(1, sizeof *r);
    char err[CL_ERR_LEN] = "";
    if (!r || MAGIC_TIMED(ctx, err, env->ops->run(&a, r, err)) != 0) {
        if (def) {
            char point[128];
            snprintf(point, sizeof point, "%%vecadd --size %" PRIu64 " --memory %s", a.n, memory);
            int rc = r ? student_run_failed(ctx, &sl, point, err) : magic_error(ctx, "MemoryError", "out of host memory");
            free(r);
            student_launch_free(&sl);   /* after: the CPU runner's diagnosis lives in sl */
            return rc;
        }
        if (!r)
            return magic_error(ctx, "MemoryError", "out of host memory");
        free(r);
        return magic_error(ctx, magic_backend_ename(ctx->backend),
                           "%%vecadd --variant %s --op %s --memory %s (size %" PRIu64 "): %s", variant, opname,
                           memory, a.n, err);
    }
    /* the reps checked are the run's: said once, in time_ms (the sweep moves them to its check) */
    cl_times total = {.reps = r->kernel.reps, .reps_checked = r->kernel.reps_checked};
    r->kernel.reps_checked = 0;
    for (int i = 0; i < total.reps; i++)
        total.ms[i] = r->h2d.ms[i] + r->kernel.ms[i] + r->d2h.ms[i];
    double h = stats_median(&r->h2d), k = stats_median(&r->kernel), d = stats_median(&r->d2h);
    double in = (double)cl_vecadd_in_bytes(a.op) * a.n, out = (double)cl_vecadd_out_bytes(a.op) * a.n;
    double moving = h + d, all = h + k + d;
    json_t *run = json_pack("{s:s, s:s, s:I, s:s, s:o, s:s, s:s}", "variant", variant, "op", opname, "size",
                            (json_int_t)a.n, "memory", memory, "block", block_json(&a), "backend",
                            ctx->backend->name, "impl", r->impl);
    if (def) {
        student_run_json(&sl, run);
        student_launch_free(&sl);
        a.student = NULL;
    }
    if (a.op == CL_VECADD_DAXPY)
        json_object_set_new(run, "alpha", json_real(a.alpha));
    json_object_set_new(run, "time_ms", stats_json(&total));
    sweep_add_conditions(ctx, run);
    json_object_set_new(run, "h2d_ms", stats_json(&r->h2d));
    json_object_set_new(run, "kernel_ms", stats_json(&r->kernel));
    json_object_set_new(run, "d2h_ms", stats_json(&r->d2h));
    json_object_set_new(run, "bytes", json_pack("{s:f, s:f, s:f}", "h2d", in, "kernel", in + out, "d2h", out));
    json_object_set_new(run, "h2d_gbs", gbs(in, h));
    json_object_set_new(run, "kernel_gbs", gbs(in + out, k));
    /* the kernel streams as a copy does: its share of the copy's bandwidth says how close it is */
    json_object_set_new(run, "kernel_pct_of_bandwidth", k > 0 && env->bw_gbs > 0
                                                            ? json_real(100.0 * (in + out) / (k * 1e6) / env->bw_gbs)
                                                            : json_null());
    json_object_set_new(run, "d2h_gbs", gbs(out, d));
    json_object_set_new(run, "transfer_pct", all > 0 ? json_real(100.0 * moving / all) : json_null());
    json_t *launch = launch_json(&r->launch);
    json_object_set_new(launch, "config", json_string(def ? cl_vecadd_student.launch : cl_vecadd_op_rows[a.op].launch));
    json_object_set_new(run, "launch", launch);
    json_t *check = env->check ? check_json(&a, def != NULL, r) : check_skipped(NULL);
    json_object_set_new(run, "check", check);
    json_array_append_new(runs, run);
    free(r);
    env->transfer_ms += moving;
    env->total_ms += all;
    double pct = env->total_ms > 0 ? 100.0 * env->transfer_ms / env->total_ms : 0;
    if (env->total_ms > 0)          /* 99.7% must not read as "100%": keep a decimal near the top */
        snprintf(env->title, sizeof env->title, "Vector add: moving data took %.*f%% of the time",
                 pct >= 99.5 ? 1 : 0, pct);
    return 0;
}

/* --roofline: add is one FLOP an element over the bytes its kernel reads and writes, at the kernel's
 * time (the copies are not the kernel's work); daxpy computes in double. */
static int va_flops(const json_t *run, sweep_flops *f)
{
    const char *op = json_string_value(json_object_get(run, "op"));
    if (!op || strcmp(op, "add") != 0) {
        f->why = "daxpy computes in double: the roof is the FP32 peak";
        return -1;
    }
    double n = (double)json_integer_value(json_object_get(run, "size"));
    double ms = json_number_value(json_object_get(json_object_get(run, "kernel_ms"), "median"));
    f->flop = n;
    f->bytes = json_number_value(json_object_get(json_object_get(run, "bytes"), "kernel"));
    f->gflops = ms > 0 ? n / (ms * 1e6) : 0;
    return 0;
}

/* ---- host work (the framework's limit, sweep.h) ----
 * Elements per CPU-second, measured on a 2-core AMD EPYC host (differences of
 * CPU time between runs of 1 and 4 reps of 2^25 elements, and with and
 * without the check; estimates). The host makes the inputs and checks the
 * result on one thread whatever the backend; on the CPU backend a rep is two
 * memcpys standing in for the copies and the kernel on every core, counted
 * here as one thread (the copies dominate). A student's kernel on the CPU
 * backend runs on the CPU runner, at most CL_SIMT_MAX_REPS launches whatever
 * --reps says, on every core. */
#define VA_RATE_ADD 4.4e8           /* a rep of add (12 bytes an element) */
#define VA_RATE_DAXPY 1.7e8         /* a rep of daxpy (24 bytes an element) */
#define VA_RATE_INPUT 7e7           /* x and y generated */
#define VA_RATE_CHECK 1.7e8         /* inputs regenerated and every element compared */
#define VA_RATE_CPU_RUNNER 1.2e7    /* per core: a student's add on the CPU runner, every access a checked
                                       call (a launch of 8M elements: 0.64 CPU-s on the same host) */

static host_work va_host_work(magic_ctx *ctx, const json_t *pt, void *user)
{
    const va_env *env = user;
    double n = (double)json_integer_value(json_object_get(pt, "size"));
    bool daxpy = strcmp(json_string_value(json_object_get(pt, "op")), "daxpy") == 0;
    host_work w = {.setup = n, .setup_rate = VA_RATE_INPUT};
    if (strcmp(ctx->backend->name, "cpu") == 0 &&
        family_builtin(&vecadd_family, json_string_value(json_object_get(pt, "variant"))) < 0) {
        w.run = n * host_work_runner_share(pt);     /* at most CL_SIMT_MAX_REPS launches */
        w.run_rate = VA_RATE_CPU_RUNNER * host_work_cores();
    } else if (strcmp(ctx->backend->name, "cpu") == 0) {
        w.run = n;
        w.run_rate = daxpy ? VA_RATE_DAXPY : VA_RATE_ADD;
    }
    if (env->check) {
        w.check = n;
        w.check_rate = VA_RATE_CHECK;
    }
    return w;
}

/* ---- the command ---- */

static const sweep_spec vecadd_sweep = {
    .magic = "vecadd", .metric = "transfer_pct", .metric_label = "% of time moving data",
    .columns = vecadd_columns, .run_point = va_point, .host_work = va_host_work, .size_flag = "size",
    .flops = va_flops,
};

static int va_prepare(magic_ctx *ctx, const json_t *given, json_t *p, void *env_)
{
    (void)given;
    va_env *env = env_;
    if (validate(ctx, p) != 0)      /* resolves --variant in place */
        return -1;
    *env = (va_env){
        .ops = ctx->backend->vecadd,
        .seed = (uint64_t)json_integer_value(json_object_get(p, "seed")),
        .reps = sweep_reps(p),
        .warmup = (int)json_integer_value(json_object_get(p, "warmup")),
        .check = json_is_true(json_object_get(p, "check")),
        .alpha = json_number_value(json_object_get(p, "alpha")),
        .sweep = vecadd_sweep,
    };
    char err[CL_ERR_LEN];
    if (magic_copy_bandwidth(ctx, ctx->backend, &env->bw_gbs, err) != 0)
        env->bw_gbs = 0;            /* kernel_pct_of_bandwidth is null then, nothing else changes */
    snprintf(env->title, sizeof env->title, "Vector add");
    env->sweep.title = env->title;  /* the headline, updated after every point */
    return 0;
}

/* The sweep of this command: its spec lives in env, whose title the points update. */
static int va_sweep(magic_ctx *ctx, const sweep_spec *s, const json_t *p, void *env)
{
    (void)s;
    return sweep_run(ctx, &((va_env *)env)->sweep, p, env);
}

static const family_command vecadd_command = {
    .family = &vecadd_family, .shown = &vecadd_ops, .sweep = &vecadd_sweep, FAMILY_ENV(va_env),
    .prepare = va_prepare, .run_sweep = va_sweep,
};

static int vecadd_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    return family_run(ctx, &vecadd_command, params, body);
}

static const char *const vecadd_examples[] = {
    "%vecadd --size 2^24",
    "%vecadd --size 2^24 --memory pageable,pinned",
    "%vecadd --size 2^16,2^20,2^24,2^26 --memory pinned",
    "%vecadd --size 2^24 --op add,daxpy --memory pinned",
    "%vecadd --size 2^24 --block 32,64,128,256,512,1024 --memory pinned",
    NULL,
};

const magic_spec magic_vecadd = {
    .name = "vecadd",
    .summary = "Time vector add / daxpy with its host-device copies: transfers dominate",
    .description =
        "The lecture's first CUDA program, whole: allocate on the device, copy x and y from the host "
        "(cudaMemcpy host to device), add them with one thread per element (ceil(N/B) blocks of "
        "--block threads), copy the result back (device to host). Each phase is timed on its own "
        "with CUDA events (median of --reps after --warmup; the L2 is flushed before the copies and "
        "again before the kernel, outside the timing), and each gets its GB/s: bytes copied / time "
        "for the copies, bytes read + written / time for the kernel. The headline is the share of "
        "the total spent moving data: the kernel streams through device memory at terabytes per "
        "second, the copies crawl over PCIe or the host link at tens of GB/s, so for one addition "
        "per element the copies take almost all of the time. The lesson: keep data on the device "
        "and give the GPU more work per byte moved.\n\n"
        "--op add: z = x + y in float (8 bytes in, 4 out per element). --op daxpy: y = a*x + y in "
        "double with --alpha a (16 bytes in, 8 out). --memory pageable: ordinary malloc buffers; the "
        "driver copies them through a pinned staging buffer, one chunk at a time. --memory pinned: "
        "page-locked buffers from cudaMallocHost, which the copy engines read directly: faster "
        "copies, the same kernel.\n\n"
        "The inputs are generated on the host from --seed (the point is host data travelling). "
        "Every run is checked unless --no-check: every element of the copied-back result against "
        "the host's own value, exactly (tolerance 0): a float add is one correctly rounded "
        "operation everywhere, and daxpy uses fma() on both sides. Without a GPU the CPU backend "
        "runs the same three phases: memcpy stands in for the copies (pinned is only a label "
        "there) and host threads for the kernel.\n\n"
        "--variant builtin runs our kernel; a %%kernel --for vecadd cell adds yours: "
        "__global__ void NAME(" CL_VECADD_STUDENT_PARAMS "), C[i] = A[i] + B[i], one "
        "thread per element, block 256 by default (--block), grid ceil(n/threads per block) (--grid "
        "overrides). It runs --op add only, through the same copies, timing and exact check; C is filled "
        "with a sentinel before every rep and guarded past its end, so an element never written or one "
        "written past n fails the check, naming the first.",
    .flags = vecadd_flags,
    .mode = MAGIC_LINE,
    .where = MAGIC_WORKER,
    .run = vecadd_run,
    .examples = vecadd_examples,
    .attach = student_attach,
};
