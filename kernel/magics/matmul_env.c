/* matmul_env.c — what %matmul settles before any point of a sweep runs:
 * the backend and its peaks, the variant list (`all` expanded), the
 * TILE_WIDTHs, and every size against the limits that apply: 32-bit indexing,
 * device memory and host memory for the check. A refusal names the flag, the
 * limit and the largest size that would fit, so nothing is allocated for a
 * sweep that cannot finish. It also says what a point costs the host, for the
 * framework's host-work limit (sweep.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "magics/matmul_internal.h"
#include "student/store.h"
#include "student/run.h"

#define INDEX_LIMIT 2147483647.0    /* elements of one matrix: the kernels index with int */
#define INDEX_SQUARE_MAX 46340      /* floor(sqrt(2^31 - 1)) */

static const int built_tiles[] = CL_MATMUL_TILES;

static size_t list_len(const json_t *v)
{
    return json_is_array(v) ? json_array_size(v) : 1;
}

static const json_t *list_at(const json_t *v, size_t i)
{
    return json_is_array(v) ? json_array_get(v, i) : v;
}

/* The largest N with `matrices` N×N floats in `bytes` (A, B and C, and on a GPU the copies of C
 * that the check of timed reps keeps), and within 32-bit indexing. */
static long long largest_square(double bytes, int matrices)
{
    long long fit = bytes > 0 ? (long long)floor(sqrt(bytes / (4.0 * matrices))) : 0;
    return fit < INDEX_SQUARE_MAX ? fit : INDEX_SQUARE_MAX;
}

/* ---- variants ---- */

int mm_target_of(const mm_env *env, const char *name, mm_target *out)
{
    memset(out, 0, sizeof *out);
    out->id = family_builtin(&matmul_family, name);
    if (out->id < 0 && (out->student = student_find(env->lab, name))) {
        out->id = CL_VARIANT_STUDENT;
        out->variant = family_variant(env->lab, &matmul_family,
                                      (size_t)family_index(env->lab, &matmul_family, name));
        out->ops = env->backend->matmul;
        out->backend_name = env->backend->name;
        out->is_host = strcmp(env->backend->name, "cpu") == 0;    /* the CPU runner */
        return out->variant && out->ops && out->ops->runs_student ? 0 : -1;
    }
    if (out->id < 0)
        return -1;
    out->variant = &cl_matmul_variants[out->id];
    bool host = (out->variant->flags & CL_V_HOST) != 0;
    out->ops = host ? env->host_ops : env->backend->matmul;
    if (!out->ops || !out->ops->has(out->id))
        return -1;
    out->backend_name = host ? "cpu" : env->backend->name;
    out->is_host = host || strcmp(env->backend->name, "cpu") == 0;
    out->optional = host && env->cpu_optional;
    return 0;
}

static bool runs_here(const cl_variant *v, size_t index, void *user)
{
    const mm_env *env = user;
    mm_target t;
    /* a Hopper-only variant named on another GPU gets through, for the backend to refuse it
     * saying why; `all` leaves it out there */
    if ((v->flags & CL_MATMUL_SM90A) && !env->sm90a_here && !env->sm90a_named)
        return false;
    return mm_target_of(user, v->name, &t) == 0;
}

/* --variant as an array without duplicates (family_select); `all` brings in
 * the host loop too, but as optional (left out over the host-work limit)
 * unless the host loop was also named. */
static int expand_variants(magic_ctx *ctx, json_t *params, mm_env *env)
{
    const json_t *given = json_object_get(params, "variant");
    json_t *names = sweep_as_list(given);
    bool all = false, host_named = false;
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v) {
        int id = family_index(ctx->lab, &matmul_family, json_string_value(v));
        all |= strcmp(json_string_value(v), "all") == 0;
        host_named |= id >= 0 && (family_variant(ctx->lab, &matmul_family, (size_t)id)->flags & CL_V_HOST);
        env->sm90a_named |= id >= 0 &&
                            (family_variant(ctx->lab, &matmul_family, (size_t)id)->flags & CL_MATMUL_SM90A);
    }
    env->cpu_optional = all && !host_named;
    json_decref(names);             /* family_run refused a student's kernel this backend cannot run */
    json_t *list = family_select(ctx, &matmul_family, given, runs_here, env, env->backend->name);
    if (!list)
        return -1;
    if (json_array_size(list) == 1 && !json_is_array(given)) {
        json_decref(list);          /* a single variant stays a scalar: nothing varies */
        return 0;
    }
    json_object_set_new(params, "variant", list);
    return 0;
}

static int check_tiles(magic_ctx *ctx, const json_t *params, mm_env *env)
{
    const json_t *tiles = json_object_get(params, "tile");
    env->first_tile = (int)json_integer_value(list_at(tiles, 0));
    const json_t *variants = json_object_get(params, "variant");
    bool builtin_tiled = false;
    for (size_t i = 0; i < list_len(variants); i++) {
        int id = family_builtin(&matmul_family, json_string_value(list_at(variants, i)));
        builtin_tiled |= id >= 0 && (cl_matmul_variants[id].flags & CL_V_TILE);
    }
    if (!builtin_tiled)
        return 0;                   /* a student's kernel takes any TILE */
    for (size_t i = 0; i < list_len(tiles); i++) {
        long long t = json_integer_value(list_at(tiles, i));
        bool ok = false;
        for (int j = 0; built_tiles[j]; j++)
            ok |= built_tiles[j] == t;
        if (!ok) {
            char built[64] = "";
            for (int j = 0, used = 0; built_tiles[j] && used < (int)sizeof built; j++)
                used += snprintf(built + used, sizeof built - (size_t)used, "%s%d",
                                 j == 0 ? "" : built_tiles[j + 1] ? ", " : " and ", built_tiles[j]);
            return magic_error(ctx, "UsageError", "--tile %lld: the tiled kernel is built for "
                               "TILE_WIDTH %s (one template instance each)", t, built);
        }
    }
    return 0;
}

/* ---- sizes ---- */

mm_dims mm_point_dims(const json_t *pt)
{
    long long size = json_integer_value(json_object_get(pt, "size"));
    const json_t *m = json_object_get(pt, "m"), *n = json_object_get(pt, "n"), *k = json_object_get(pt, "k");
    mm_dims d = { json_is_integer(m) ? json_integer_value(m) : size,
                  json_is_integer(n) ? json_integer_value(n) : size,
                  json_is_integer(k) ? json_integer_value(k) : size };
    return d;
}

/* ---- host work ----
 * Rates of the CPU backend in multiply-adds (or elements) per CPU-second,
 * measured on a 2-core AMD EPYC host with the command line (differences of CPU
 * time between runs of 1 and 5 reps; estimates: another CPU, another rate).
 * Everything but the host loop runs on every core (host_work_cores()). */
#define MM_RATE_HOST_LOOP 9e8       /* `cpu`: one thread, double accumulation */
#define MM_RATE_FULL_CHECK 8.6e8    /* the whole product in double, per core */
#define MM_RATE_ELEMENTS 2e7        /* per core: making A and B, Freivalds' passes over A, B and C */
#define MM_RATE_CPU_RUNNER 4e7      /* per core: a student's tiled kernel on the CPU runner (every shared
                                       and global access a checked call; 256³ in 0.18 s on 2 cores) */

static const double mm_rates[CL_MATMUL_NVARIANTS] = {
    [CL_MATMUL_V_NAIVE] = 2.4e9, [CL_MATMUL_V_NAIVE_BT] = 2.4e9, [CL_MATMUL_V_FAST] = 1.2e10,
    [CL_MATMUL_V_FAST64] = 1e10,
    /* the other blocked analogues (cpu/matmul_kernels.c): 0.9e10 to 1.15e10 at 1024³ */
    [CL_MATMUL_V_REG1D] = 9e9, [CL_MATMUL_V_REG2D] = 9e9, [CL_MATMUL_V_VEC4] = 9e9, [CL_MATMUL_V_WARPTILE] = 9e9,
    [CL_MATMUL_V_SWIZZLE] = 9e9, [CL_MATMUL_V_ASYNC] = 9e9, [CL_MATMUL_V_ASYNC64] = 9e9,
    [CL_MATMUL_V_WMMA_TF32] = 9e9, [CL_MATMUL_V_WMMA_FP16] = 9e9, [CL_MATMUL_V_WMMA_BF16] = 9e9,
    [CL_MATMUL_V_CUBLAS] = 1.8e10, [CL_MATMUL_V_CUBLAS_TF32] = 1.8e10,      /* OpenBLAS's sgemm */
    [CL_MATMUL_V_CUBLAS_FP16] = 1.8e10, [CL_MATMUL_V_CUBLAS_BF16] = 1.8e10,
    /* the wgmma analogues: about 3/4 of fast's, rounding every element they copy */
    [CL_MATMUL_V_WGMMA_TF32] = 9e9, [CL_MATMUL_V_WGMMA_FP16] = 9e9, [CL_MATMUL_V_WGMMA_BF16] = 9e9,
};
/* CL_V_TILE variants (tiled, and tiled-bt at about the same rate): by TILE_WIDTH (the small tiles pay a
 * phase's overhead for a few products) */
static const struct { int tile; double per_core; } mm_tiled_rates[] = {
    {2, 3.3e8}, {4, 1.3e9}, {8, 8e9}, {16, 7.5e9}, {32, 2.2e10},
};

/* Multiply-adds per CPU-second of a variant's CPU analogue, per core; a
 * variant registered at run time is taken to go as the naive one. */
static double analogue_rate(const mm_target *t, int tile)
{
    if (t->variant->flags & CL_V_TILE) {
        for (size_t i = 0; i < sizeof mm_tiled_rates / sizeof mm_tiled_rates[0]; i++)
            if (mm_tiled_rates[i].tile == tile)
                return mm_tiled_rates[i].per_core;
        return mm_tiled_rates[0].per_core;
    }
    return t->id >= 0 && t->id < CL_MATMUL_NVARIANTS && mm_rates[t->id] > 0 ? mm_rates[t->id]
                                                                : mm_rates[CL_MATMUL_V_NAIVE];
}

host_work mm_host_work(magic_ctx *ctx, const json_t *pt, void *user)
{
    const mm_env *env = user;
    host_work w = {0};
    mm_target t;
    const char *name = json_string_value(json_object_get(pt, "variant"));
    int tile = (int)json_integer_value(json_object_get(pt, "tile"));
    if (!name || mm_target_of(env, name, &t) != 0 ||
        (!(t.variant->flags & CL_V_TILE) && tile != env->first_tile))
        return w;                   /* the point runs nothing (matmul_point says why) */
    mm_dims d = mm_point_dims(pt);
    double madds = (double)d.m * d.n * d.k, inputs = (double)d.m * d.k + (double)d.k * d.n;
    double cores = host_work_cores();
    w.optional = t.optional;
    if (t.is_host) {
        bool loop = (t.variant->flags & CL_V_HOST) != 0;
        w.run = madds;
        w.run_rate = loop ? MM_RATE_HOST_LOOP : analogue_rate(&t, tile) * cores;
        if (t.student) {
            w.run = madds * host_work_runner_share(pt);
            w.run_rate = MM_RATE_CPU_RUNNER * cores;
        }
        w.setup = inputs;           /* the CPU backend makes A and B for every point */
        w.setup_rate = MM_RATE_ELEMENTS * cores;
    }
    if (env->check && madds <= CL_MATMUL_FULL_CHECK_MAX) {
        w.check = madds;
        w.check_rate = MM_RATE_FULL_CHECK * cores;
    } else if (env->check) {
        w.check = 2 * inputs + (double)d.m * d.n;   /* A and B made again, then Freivalds' passes */
        w.check_rate = MM_RATE_ELEMENTS * cores;
    }
    return w;
}

/* "--size 4096" or "--m 1000 --n 300 --k 77", as the user would write the point. */
static void describe(const json_t *pt, const mm_dims *d, char *buf, size_t len)
{
    if (!json_is_integer(json_object_get(pt, "m")) && !json_is_integer(json_object_get(pt, "n")) &&
        !json_is_integer(json_object_get(pt, "k")))
        snprintf(buf, len, "--size %lld", d->m);
    else
        snprintf(buf, len, "--m %lld --n %lld --k %lld", d->m, d->n, d->k);
}

typedef struct mm_limits {
    bool device;                    /* some variant runs on the GPU */
    bool host_run;                  /* some variant runs on the host */
    double device_free, device_reserve;
    double host_free;
} mm_limits;

static int check_point(magic_ctx *ctx, const mm_env *env, const mm_limits *lim, const json_t *pt, int copies)
{
    mm_dims d = mm_point_dims(pt);
    char what[128], fit[64];
    describe(pt, &d, what, sizeof what);
    double bytes = 4.0 * ((double)d.m * d.k + (double)d.k * d.n + (double)d.m * d.n);
    if (lim->device) {
        char holds[128];
        snprintf(holds, sizeof holds, "A, B and C, %d copies of C kept for the check of the timed reps, plus twice "
                 "the L2 to flush it between runs", copies);
        snprintf(fit, sizeof fit, "largest square size that fits: %lld",
                 largest_square(lim->device_free - lim->device_reserve, 3 + copies));
        mem_need need = {what, holds, "device", bytes + 4.0 * copies * d.m * d.n + lim->device_reserve,
                         lim->device_free, fit};
        if (magic_memory_fit(ctx, &need) != 0)
            return -1;
    }
    if (lim->host_run || env->check) {
        snprintf(fit, sizeof fit, "largest square size that fits: %lld", largest_square(lim->host_free, 3));
        mem_need need = {what, lim->host_run ? "A, B and C, to run on the host"
                                             : "A, B and C, for the check; --no-check skips it",
                         "host", bytes, lim->host_free, fit};
        if (magic_memory_fit(ctx, &need) != 0)
            return -1;
    }
    const char *big = (double)d.m * d.k > INDEX_LIMIT ? "m·k (A)"
                    : (double)d.k * d.n > INDEX_LIMIT ? "k·n (B)"
                    : (double)d.m * d.n > INDEX_LIMIT ? "m·n (C)" : NULL;
    if (big)
        return magic_error(ctx, "UsageError", "%s: %s has 2^31 elements or more; the kernels index "
                           "with 32-bit ints (largest square size: %d)", what, big, INDEX_SQUARE_MAX);
    return 0;
}

/* Every combination of --size, --m, --n and --k, before anything is allocated. */
static int check_sizes(magic_ctx *ctx, const json_t *params, const mm_env *env, const mm_limits *lim)
{
    const json_t *s = json_object_get(params, "size"), *m = json_object_get(params, "m"),
                 *n = json_object_get(params, "n"), *k = json_object_get(params, "k");
    json_t *pt = json_object();
    int rc = 0, copies = sweep_kept_copies(params);
    for (size_t a = 0; rc == 0 && a < list_len(s); a++)
        for (size_t b = 0; rc == 0 && b < list_len(m); b++)
            for (size_t c = 0; rc == 0 && c < list_len(n); c++)
                for (size_t e = 0; rc == 0 && e < list_len(k); e++) {
                    json_object_set(pt, "size", (json_t *)list_at(s, a));
                    json_object_set(pt, "m", (json_t *)list_at(m, b));
                    json_object_set(pt, "n", (json_t *)list_at(n, c));
                    json_object_set(pt, "k", (json_t *)list_at(k, e));
                    rc = check_point(ctx, env, lim, pt, copies);
                }
    json_decref(pt);
    return rc;
}

void mm_env_free(mm_env *env)
{
}

int mm_env_init(magic_ctx *ctx, json_t *params, mm_env *env)
{
    memset(env, 0, sizeof *env);
    size_t points;
    if (sweep_count(ctx, params, &points) != 0)
        return -1;                  /* before check_sizes walks the cross product */
    env->backend = ctx->backend;
    env->lab = ctx->lab;
    const cl_backend *host = cl_cpu_backend();
    env->host_ops = host->matmul;
    env->seed = (uint64_t)json_integer_value(json_object_get(params, "seed"));
    env->reps = sweep_reps(params);
    env->warmup = (int)json_integer_value(json_object_get(params, "warmup"));
    env->check = json_is_true(json_object_get(params, "check"));
    env->bandwidth_gbs = json_number_value(json_object_get(params, "bandwidth"));   /* 0 when not given */

    char err[CL_ERR_LEN] = "";
    cl_device_props dev, hp;
    memset(&hp, 0, sizeof hp);
    if (env->backend->device_props(ctx->dev.index, &dev, err) != 0)
        return magic_error(ctx, magic_backend_ename(env->backend),
                           "device %d: %s", ctx->dev.index, err);
    if (host->device_props(0, &hp, err) != 0)
        memset(&hp, 0, sizeof hp);  /* unknown host: no host peak, no host memory limit */
    env->peak_gflops = magic_peak_fp32_gflops(&dev);
    env->host_peak_gflops = magic_peak_fp32_gflops(&hp);
    env->sm90a_here = strcmp(env->backend->name, "cpu") == 0 || (dev.cc_major == 9 && dev.cc_minor == 0);

    if (expand_variants(ctx, params, env) != 0 || check_tiles(ctx, params, env) != 0)
        return -1;

    mm_limits lim = { .host_free = (double)hp.free_mem };
    const json_t *variants = json_object_get(params, "variant");
    for (size_t i = 0; i < list_len(variants); i++) {
        mm_target t;
        mm_target_of(env, json_string_value(list_at(variants, i)), &t);
        if (t.is_host)
            lim.host_run = true;
        else
            lim.device = true;
    }
    lim.device_free = (double)dev.free_mem;
    lim.device_reserve = 2.0 * dev.l2_bytes;
    if (lim.device_free <= 0)
        lim.device = false;         /* unknown: cudaMalloc will say */
    return check_sizes(ctx, params, env, &lim);
}
