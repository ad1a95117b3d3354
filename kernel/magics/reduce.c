/* reduce.c — the %reduce magic: sum, max or min of N floats or ints, from
 * the lecture's divergent tree to warp shuffles and CUB, each run timed as
 * bandwidth (it is a memory-bound kernel) and checked.
 *
 * run() validates everything the sweep will need before any point runs
 * (variants, --block powers of two, every size against device and host
 * memory), then hands the sweep to sweep_run(); reduce_point.c runs each
 * point and checks it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang.h"
#include "magic/family_run.h"
#include "render/render.h"
#include "magic/show_source.h"
#include "magic/sweep.h"
#include "magics/reduce_internal.h"
#include "student/sanitize.h"
#include "student/run.h"
#include "student/store.h"

const family_spec reduce_family = {
    .magic = "reduce",
    .variants = cl_reduce_variants,
    .nvariants = CL_REDUCE_NVARIANTS,
    .student = &cl_reduce_student,
    .quick = "--size 100003",
    FAMILY_OPS(reduce, cl_reduce_ops),
    .sources = "cuda/reduce*.cu and cpu/reduce*.c",
};

static const char *const op_choices[] = {"sum", "max", "min", NULL};
static const char *const dtype_choices[] = {"float", "int", NULL};

/* Flag order is sweep order: the last list flag (variant) changes fastest. */
static const flag_spec reduce_flags[] = {
    {.name = "size", .short_name = 'n', .type = FLAG_INT, .def = "2^24", .imin = 1, .imax = INT64_MAX,
     .opts = FLAG_LIST, .help = "elements to reduce: any positive count (2^26, 1000003, 64M)"},
    {.name = "dtype", .type = FLAG_CHOICE, .def = "float", .choices = dtype_choices, .opts = FLAG_LIST,
     .help = "float (uniform in [-1, 1)) or int (uniform in [-1000, 1000], summed in int64)"},
    {.name = "op", .type = FLAG_CHOICE, .def = "sum", .choices = op_choices, .opts = FLAG_LIST,
     .help = "sum, max or min"},
    {.name = "block", .type = FLAG_DIMS, .imin = 1, .imax = 1024, .opts = FLAG_LIST,
     .help = "threads per block of the first pass (256 by default; fast 1024): a power of two, 32..1024; your "
             "kernels any block (default: the %%kernel line's); a list sweeps"},
    FAMILY_VARIANT_FLAG(&reduce_family, "all"),
    {.name = "steps", .type = FLAG_BOOL, .def = "false",
     .help = "also show the block's tree step by step (divergent, convergent, multiblock; for the run's "
             "--block), counted thread by thread with the kernel's own condition: per stride, the threads that "
             "add, the warps with at least one of them (each issues the step), the full, divergent and idle "
             "warps, and the idle lanes the active warps carry; in each run's steps"},
    {.name = "second", .type = FLAG_STRING,
     .help = "your kernels only: a %%kernel --for reduce kernel (the same signature; it may be the first one) "
             "that reduces the partials on the device, launched once after the timed runs: one block of its "
             "threads, input = the partials, n = their count; its partial[0] is the run's value, checked"},
    STUDENT_RUN_FLAGS,
    STUDENT_GRID_FLAG,
    SWEEP_MEASURE_FLAGS("seed of the generated input",
                        "timed runs per point",
                        "check each result against a double-precision host reduction",
                        "sort the table by GB/s"),
    SHOW_SOURCE_FLAGS,
    {.name = NULL},
};

static const sweep_column reduce_columns[] = {
    {.path = "variant", .header = "variant"},
    {.path = "size", .header = "size"},
    {.path = "dtype", .header = "dtype"},
    {.path = "op", .header = "op"},
    {.path = "block", .header = "block"},
    {.path = "time_ms.median", .header = "median ms"},
    {.path = "gbs", .header = "GB/s"},
    {.path = "pct_of_bandwidth", .header = "% of copy BW"},
    {.path = "value", .header = "value"},
    {.path = "check.passed", .header = "check"},
    {.path = NULL},
};

/* ---- validation ---- */


/* --variant as an array without duplicates: `all` is every built-in variant
 * in table order (never a student's kernel, which is named or not run), a
 * student's kernel only where the backend runs it. */
static int expand_variants(magic_ctx *ctx, json_t *params, const rd_env *env)
{
    json_t *given = sweep_as_list(json_object_get(params, "variant")), *out = json_array(), *v, *one;
    size_t i, k;
    int rc = 0;
    json_array_foreach(given, i, v) {
        const char *name = json_string_value(v);
        if (student_find(ctx->lab, name)) {
            one = json_pack("[s]", name);
        } else if (!(one = family_select(ctx, &reduce_family, v, NULL, NULL, env->backend->name))) {
            rc = -1;
            break;
        }
        json_array_foreach(one, k, v) {
            bool seen = false;
            for (size_t j = 0; j < json_array_size(out); j++)
                seen |= json_equal(json_array_get(out, j), v);
            if (!seen)
                json_array_append(out, v);
        }
        json_decref(one);
    }
    json_decref(given);
    if (rc == 0)
        json_object_set(params, "variant", out);
    json_decref(out);
    return rc;
}

int rd_block_of(const json_t *point)
{
    const json_t *b = json_object_get(point, "block");
    return json_is_array(b) ? (int)json_integer_value(json_array_get(b, 0)) : RD_BLOCK_DEFAULT;
}

/* The built-in variants take a 1D block, a power of two from 32 to 1024; a
 * student's kernel any block, and sums floats with an int n. */
static int check_blocks(magic_ctx *ctx, const json_t *params, int *first)
{
    const json_t *variants = json_object_get(params, "variant"), *v;
    const char *student = NULL;
    bool builtin = false;
    size_t i;
    json_array_foreach(variants, i, v) {
        if (family_builtin(&reduce_family, json_string_value(v)) >= 0)
            builtin = true;
        else if (!student)
            student = json_string_value(v);
    }
    json_t *blocks = sweep_as_list(json_object_get(params, "block"));
    int rc = 0;
    json_t *b;
    *first = json_is_array(json_array_get(blocks, 0)) ? (int)json_integer_value(json_array_get(json_array_get(blocks, 0), 0))
                                                     : RD_BLOCK_DEFAULT;
    json_array_foreach(blocks, i, b) {
        if (!builtin || !json_is_array(b))
            continue;
        json_int_t x = json_integer_value(json_array_get(b, 0));
        if (json_integer_value(json_array_get(b, 1)) > 1 || json_integer_value(json_array_get(b, 2)) > 1) {
            rc = magic_error(ctx, "UsageError", "--block: %%reduce is one-dimensional: the built-in variants "
                             "take --block B threads (your kernels may take a 2D or 3D block)");
            break;
        }
        if (x < 32 || x > 1024 || (x & (x - 1)) != 0) {
            rc = magic_error(ctx, "UsageError", "--block %" JSON_INTEGER_FORMAT ": threads per block "
                             "must be a power of two from 32 to 1024 (32, 64, 128, 256, 512, 1024)", x);
            break;
        }
    }
    json_decref(blocks);
    if (!rc && !student && json_is_string(json_object_get(params, "second")))
        return magic_error(ctx, "UsageError", "--second: the second pass is for your kernels: name one of them "
                           "in --variant (the built-in variants have their own second pass)");
    if (rc || !student)
        return rc;
    static const struct { const char *flag, *want; } only[] = {{"op", "sum"}, {"dtype", "float"}};
    for (size_t f = 0; f < 2 && !rc; f++) {
        json_t *vals = sweep_as_list(json_object_get(params, only[f].flag));
        json_array_foreach(vals, i, v)
            if (strcmp(json_string_value(v), only[f].want) != 0 && !rc)
                rc = magic_error(ctx, "UsageError", "--%s %s: %s is your kernel, and your kernels compute a "
                                 "float sum only (--op sum --dtype float); run the built-in variants for the "
                                 "others", only[f].flag, json_string_value(v), student);
        json_decref(vals);
    }
    json_t *sizes = sweep_as_list(json_object_get(params, "size"));
    json_array_foreach(sizes, i, v)
        if (json_integer_value(v) > 2147483647 && !rc)
            rc = magic_error(ctx, "UsageError", "--size %" JSON_INTEGER_FORMAT ": your kernel %s takes int n, "
                             "at most 2147483647 elements", json_integer_value(v), student);
    json_decref(sizes);
    const char *second = json_string_value(json_object_get(params, "second"));
    const student_def *d = second ? student_find(ctx->lab, second) : NULL;
    if (!rc && second && (!d || d->family != &reduce_family || d->broken))
        rc = magic_error(ctx, "UsageError", "--second %s: no %%%%kernel --for reduce cell named %s in this session "
                         "(run its cell first)", second, second);
    return rc;
}

/* "2^26" for powers of two, else the number. */
static void fmt_count(uint64_t n, char *buf, size_t len)
{
    if (n >= 1024 && (n & (n - 1)) == 0)
        snprintf(buf, len, "2^%d", __builtin_ctzll(n));
    else
        snprintf(buf, len, "%" PRIu64, n);
}

/* A backend, and the copies its check keeps (cl_reduce_args.kept_copies). */
typedef struct reduce_budget {
    const cl_reduce_ops *ops;
    int kept_copies;
} reduce_budget;

/* Bytes a run of n elements needs on the backend of `budget_` (fit_largest's form). */
static double need_bytes(uint64_t n, const void *budget_)
{
    const reduce_budget *b = budget_;
    cl_reduce_args a = {.n = n, .op = CL_REDUCE_SUM, .dtype = CL_REDUCE_INT, .block = 32,
                        .kept_copies = b->kept_copies};
    return (double)n * 4.0 + (double)b->ops->overhead_bytes(&a);
}

/* Refuses a size whose buffers cannot fit in `free_b` bytes, before anything is
 * allocated, naming the largest size that fits. */
static int check_memory(magic_ctx *ctx, const reduce_budget *budget, uint64_t n, uint64_t free_b, bool host)
{
    if (free_b == 0 || need_bytes(n, budget) <= (double)free_b)
        return 0;
    uint64_t lo = fit_largest(need_bytes, budget, (double)free_b, n);
    char what[48], size[32], fit[64];
    fmt_count(n, size, sizeof size);
    snprintf(what, sizeof what, "--size %s", size);
    if (lo > 0)
        snprintf(fit, sizeof fit, "largest size that fits: %" PRIu64, lo);
    else
        snprintf(fit, sizeof fit, "not even one element fits");
    mem_need need = {what, NULL, host ? "host" : "device", need_bytes(n, budget), (double)free_b, fit};
    return magic_memory_fit(ctx, &need);
}

static int check_sizes(magic_ctx *ctx, const json_t *params, rd_env *env)
{
    char err[CL_ERR_LEN] = "";
    cl_device_props dev, hostp;
    memset(&hostp, 0, sizeof hostp);
    if (magic_device_props(ctx, &dev) != 0)
        return -1;
    bool gpu = env->ops != env->host_ops, want_cpu = false, want_dev = false;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(params, "variant"), i, v) {
        int id = family_builtin(&reduce_family, json_string_value(v));
        bool is_cpu = id >= 0 && (cl_reduce_variants[id].flags & CL_V_HOST);
        want_cpu |= is_cpu;
        want_dev |= !is_cpu;
    }
    if (gpu && want_cpu && cl_cpu_backend()->device_props(0, &hostp, err) != 0)
        return magic_error(ctx, "RuntimeError", "host: %s", err);
    json_t *sizes = sweep_as_list(json_object_get(params, "size"));
    int rc = 0, copies = sweep_kept_copies(params);
    reduce_budget on_backend = {env->ops, copies}, on_host = {env->host_ops, copies};
    json_array_foreach(sizes, i, v) {
        uint64_t n = (uint64_t)json_integer_value(v);
        if ((want_dev || !gpu) && (rc = check_memory(ctx, &on_backend, n, dev.free_mem, !gpu)) != 0)
            break;
        if (gpu && want_cpu && (rc = check_memory(ctx, &on_host, n, hostp.free_mem, true)) != 0)
            break;
    }
    json_decref(sizes);
    return rc;
}

static int env_init(magic_ctx *ctx, const json_t *given, json_t *params, void *env_)
{
    (void)given;
    rd_env *env = env_;
    memset(env, 0, sizeof *env);
    env->backend = ctx->backend;
    env->ops = ctx->backend->reduce;
    env->host_ops = cl_cpu_backend()->reduce;
    if (!env->host_ops)
        return magic_error(ctx, "RuntimeError", "this cudalab was built without the CPU %%reduce");
    env->seed = (uint64_t)json_integer_value(json_object_get(params, "seed"));
    env->reps = sweep_reps(params);
    env->warmup = (int)json_integer_value(json_object_get(params, "warmup"));
    env->check = json_is_true(json_object_get(params, "check"));
    if (expand_variants(ctx, params, env) || check_blocks(ctx, params, &env->first_block) ||
        check_sizes(ctx, params, env))
        return -1;
    char err[CL_ERR_LEN];
    if (magic_copy_bandwidth(ctx, env->backend, &env->bw_gbs, err) != 0)
        env->bw_gbs = 0;            /* pct_of_bandwidth is null then, nothing else changes */
    return 0;
}

/* ---- the command ---- */

static const sweep_spec reduce_sweep = {
    .magic = "reduce",
    .title = "Reduction",
    .metric = "gbs",
    .metric_label = "GB/s", .rate_of = "bytes",
    .columns = reduce_columns,
    .run_point = rd_point,
    .host_work = rd_host_work,
    .size_flag = "size",
    .flops = rd_flops,
    .more_results = rd_steps_tables,
};

/* env_init resolves "all" in the parameters, in place */
static const family_command reduce_command = {
    .family = &reduce_family, .sweep = &reduce_sweep, FAMILY_ENV(rd_env), .prepare = env_init,
};

/* The definitions the worker needs: the kernels --variant names (student_attach), and --second's. */
static int reduce_attach(magic_ctx *ctx, const struct command *cmd, json_t **kernels)
{
    if (student_attach(ctx, cmd, kernels) != 0)
        return -1;
    const student_def *d = student_find(ctx->lab, json_string_value(json_object_get(cmd->params, "second")));
    if (!d || d->broken || d->family != &reduce_family)
        return 0;                   /* named nothing, or check_blocks refuses it in the worker */
    if (!*kernels)
        *kernels = json_object();
    json_object_set_new(*kernels, d->name, json_pack("{s:s, s:s, s:O}", "for", d->family->magic, "source",
                                                    d->source, "options", d->options));
    return 0;
}

static int reduce_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    return family_run(ctx, &reduce_command, params, body);
}

static const char *const reduce_examples[] = {
    "%reduce --size 2^24",
    "%reduce --size 2^26 --variant divergent,convergent,fast,cub --sort",
    "%reduce --size 2^26 --variant convergent --block 32,64,128,256,512,1024",
    "%reduce --size 512 --variant divergent,convergent --steps",
    "%reduce --size 1000,1000000,1000003,2^26 --variant fast,cub",
    "%reduce --size 2^26 --dtype float,int --op sum,max,min --variant fast,cub",
    NULL,
};

const magic_spec magic_reduce = {
    .name = "reduce",
    .summary = "Time a sum/max/min reduction from the divergent tree to warp shuffles and CUB",
    .description =
        "Reduces N elements (float uniform in [-1, 1), or int uniform in [-1000, 1000]) generated "
        "on the device from --seed, with sum, max or min, and times each variant with CUDA events "
        "(median of --reps after --warmup; the L2 is flushed before every launch). A reduction "
        "reads every element once and does almost no arithmetic, so it is bound by memory: the "
        "measure is GB/s = 4·N bytes / median time, and its percentage of the measured "
        "device-to-device copy bandwidth.\n\n"
        "The variants (table below) climb from the host loop as taught to the library. The "
        "lecture's trees reduce one block's segment each; for a larger N they run the multi-block "
        "structure: one partial per block, then a second kernel (one block of 1024 threads, the "
        "same tree) reduces the partials on the device. --block applies to the first pass of the "
        "variants that honour it; the others run once per size.\n\n"
        "Integer sums accumulate in int64 on the device (no N that fits in memory can overflow). "
        "Every run is checked unless --no-check, against a double-precision host reduction of the "
        "same seeded input: exactly for int and for float max/min; float sums within "
        "rtol = 1e-5·log2(N) of max(|sum|, sqrt(Σx²)) (the check object shows rtol as its tolerance, and the error). "
        "Each run also reports the value, the launch (grid, block, shared memory, registers, "
        "kernels) and, for two-pass variants, the second pass's launch. Without a GPU every "
        "variant runs its CPU analogue (host threads stand in for blocks) and cub runs the CPU "
        "reference.\n\n"
        "A %%kernel --for reduce cell adds your kernel as one more variant (named in --variant; all "
        "never includes it): __global__ void NAME(" CL_REDUCE_STUDENT_PARAMS "); B threads "
        "per block (--block, 256 by default), grid ceil(n/(2B)) (--grid overrides): block b sums "
        "input[2Bb, 2Bb + 2B) that are < n and writes partial[b]. The harness times your kernel alone, "
        "copies the partials back and adds them on the host in double; the check compares each partial "
        "with its section's sum (naming the first wrong one) and the total as above. Float sums only.\n\n"
        "--second NAME2 reduces the partials on the device instead, as the lecture's second kernel does: "
        "after the timed runs the harness launches your kernel NAME2 (a %%kernel --for reduce cell, the "
        "same signature; NAME itself where it loops over its input with a grid stride) once, over the "
        "partials of the last run: one block of NAME2's threads, input = the partials, n = their count. "
        "Its partial[0] is the run's value and is checked as the total; launch_final describes it.",
    .flags = reduce_flags,
    .mode = MAGIC_LINE,
    .where = MAGIC_WORKER,
    .run = reduce_run,
    .examples = reduce_examples,
    .attach = reduce_attach,
};
