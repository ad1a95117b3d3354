/* stencil.c — the %stencil magic: a 1D stencil of radius R and 2D
 * convolution with the lecture's filters, naive against shared-memory tiled,
 * timed as bandwidth and checked against the host.
 *
 * run() resolves the defaults that depend on --dim, validates everything the
 * sweep needs before any point runs (radius against block: the halo must
 * fit; filter against tile; weights; every size against device and host
 * memory and the grid limits), then hands the sweep to sweep_run();
 * stencil_point.c runs each point.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"
#include "magic/show_source.h"
#include "magic/sweep.h"
#include "magics/stencil_internal.h"

const family_spec stencil_family = {
    .magic = "stencil",
    .variants = cl_stencil_variants,
    .nvariants = CL_STENCIL_NVARIANTS,
};

static const char *const filter_choices[] = {"box", "gauss3", "gauss5", "laplace4", "laplace8", NULL};

/* Flag order is sweep order: the last list flag (variant) changes fastest. */
static const flag_spec stencil_flags[] = {
    {.name = "dim", .short_name = 'd', .type = FLAG_INT, .def = "1", .imin = 1, .imax = 2,
     .help = "1: a 1D stencil of radius R; 2: 2D convolution with a k x k filter"},
    {.name = "size", .short_name = 'n', .type = FLAG_DIMS, .def = NULL, .imin = 1, .imax = INT64_MAX,
     .opts = FLAG_LIST, .help = "1D: elements (default 2^24); 2D: WIDTHxHEIGHT (default 4096x4096; N means NxN)"},
    {.name = "radius", .short_name = 'r', .type = FLAG_INT, .def = NULL, .imin = 1, .imax = CL_STENCIL_MAX_RADIUS,
     .opts = FLAG_LIST, .help = "1D only: R, 2R+1 terms per output (default 3); R <= --block"},
    {.name = "filter", .short_name = 'f', .type = FLAG_CHOICE, .def = NULL, .choices = filter_choices,
     .opts = FLAG_LIST, .help = "2D only: box, gauss3 (default), gauss5, laplace4, laplace8"},
    {.name = "weights", .short_name = 'w', .type = FLAG_STRING, .def = NULL,
     .help = "explicit weights, comma separated: 1D 2R+1 values, 2D k*k values row by row (k odd, <= 15); "
             "used as given unless --normalize"},
    {.name = "normalize", .type = FLAG_BOOL, .def = "false",
     .help = "divide --weights by their sum (so a smoothing filter keeps the mean)"},
    {.name = "block", .short_name = 'b', .type = FLAG_INT, .def = NULL, .imin = 1, .imax = 1024,
     .opts = FLAG_LIST, .help = "1D: threads per block, a multiple of 32 (default 256); 2D: tile side T, "
                                "blocks of T x T, 4..32 (default 16)"},
    FAMILY_VARIANT_FLAG(&stencil_family, "all"),
    SWEEP_MEASURE_FLAGS("seed of the generated input",
                        "timed runs per point",
                        "compare every output with the host reference",
                        "sort the table by GB/s"),
    SHOW_SOURCE_FLAGS,
    {.name = NULL},
};

static const sweep_column stencil_columns[] = {
    {"variant", "variant"},
    {"size", "size"},
    {"radius", "R"},
    {"filter", "filter"},
    {"block", "block"},
    {"time_ms.median", "median ms"},
    {"gbs", "GB/s"},
    {"pct_of_bandwidth", "% of copy BW"},
    {"model.global_reads_per_output", "reads/output"},
    {"model.smem_per_block", "smem B"},
    {"check.passed", "check"},
    {NULL, NULL},
};

/* ---- helpers ---- */

/* One value stays a scalar (not a sweep); several become an array. Steals list. */
static void set_list(json_t *params, const char *key, json_t *list)
{
    if (json_array_size(list) == 1)
        json_object_set(params, key, json_array_get(list, 0));
    else
        json_object_set(params, key, list);
    json_decref(list);
}

/* ---- validation ---- */

static int parse_weights(magic_ctx *ctx, const char *text, st_env *env)
{
    char *copy = strdup(text), *save = NULL;
    int n = 0;
    double sum = 0;
    if (!copy)
        return magic_error(ctx, "MemoryError", "out of memory");
    for (char *tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
        char *end;
        double w = strtod(tok, &end);
        if (end == tok || *end || !isfinite(w)) {
            magic_error(ctx, "UsageError", "--weights: '%s' is not a number (give comma separated "
                        "numbers such as 1,2,1,2,4,2,1,2,1)", tok);
            free(copy);
            return -1;
        }
        if (n == CL_STENCIL_MAX_WEIGHTS) {
            free(copy);
            return magic_error(ctx, "UsageError", "--weights: more than %d values", CL_STENCIL_MAX_WEIGHTS);
        }
        env->weights[n++] = (float)w;
        sum += w;
    }
    free(copy);
    env->nweights = n;
    if (n == 0)
        return magic_error(ctx, "UsageError", "--weights is empty");
    if (env->dim == 1 && n % 2 == 0)
        return magic_error(ctx, "UsageError", "--weights: a 1D stencil has 2R+1 weights, an odd count (got %d)", n);
    if (env->dim == 2) {
        int k = (int)lround(sqrt(n));
        if (k * k != n || k % 2 == 0)
            return magic_error(ctx, "UsageError", "--weights: a 2D filter is square with an odd side, k*k "
                               "values for k = 1, 3, 5, ..., %d (got %d values)", CL_STENCIL_MAX_K, n);
        if (k > CL_STENCIL_MAX_K)
            return magic_error(ctx, "UsageError", "--weights: a %dx%d filter is larger than %dx%d (the "
                               "weights live in constant memory)", k, k, CL_STENCIL_MAX_K, CL_STENCIL_MAX_K);
    }
    if (env->normalize) {
        if (fabs(sum) < 1e-12)
            return magic_error(ctx, "UsageError", "--normalize: the weights sum to 0 (an edge filter such "
                               "as laplace4); use them as given, without --normalize");
        for (int i = 0; i < n; i++)
            env->weights[i] = (float)(env->weights[i] / sum);
    }
    return 0;
}

/* Defaults and the flags that only one --dim takes. */
static int resolve_dim(magic_ctx *ctx, json_t *p, st_env *env)
{
    const char *weights = json_string_value(json_object_get(p, "weights"));
    env->custom = weights != NULL;
    if (!env->custom && env->normalize)
        return magic_error(ctx, "UsageError", "--normalize applies to --weights; the named filters are "
                           "normalised already (box, gauss3, gauss5) or sum to 0 (laplace4, laplace8)");
    if (env->custom && parse_weights(ctx, weights, env))
        return -1;
    if (json_is_null(json_object_get(p, "block")))
        json_object_set_new(p, "block", json_integer(env->dim == 1 ? 256 : 16));
    if (env->dim == 1) {
        if (!json_is_null(json_object_get(p, "filter")))
            return magic_error(ctx, "UsageError", "--filter is for --dim 2; a 1D stencil takes --radius "
                               "(box weights 1/(2R+1)) or --weights");
        json_t *r = json_object_get(p, "radius");
        if (json_is_null(r))
            json_object_set_new(p, "radius", json_integer(env->custom ? (env->nweights - 1) / 2 : 3));
        else if (env->custom) {
            size_t i;
            json_t *v, *list = sweep_as_list(r);
            json_array_foreach(list, i, v) if (json_integer_value(v) != (env->nweights - 1) / 2) {
                json_decref(list);
                return magic_error(ctx, "UsageError", "--weights has %d values: a radius-%d stencil, but "
                                   "--radius is %" JSON_INTEGER_FORMAT " (leave --radius out)", env->nweights,
                                   (env->nweights - 1) / 2, json_integer_value(v));
            }
            json_decref(list);
        }
        return 0;
    }
    if (!json_is_null(json_object_get(p, "radius")))
        return magic_error(ctx, "UsageError", "--radius is for --dim 1; in 2D the filter's size sets the "
                           "halo (--filter NAME or --weights)");
    if (env->custom && !json_is_null(json_object_get(p, "filter")))
        return magic_error(ctx, "UsageError", "give --filter or --weights, not both");
    if (!env->custom && json_is_null(json_object_get(p, "filter")))
        json_object_set_new(p, "filter", json_string("gauss3"));
    return 0;
}


/* --variant all -> every variant, in table order; duplicates are dropped. */
static int expand_variants(magic_ctx *ctx, json_t *params, const st_env *env)
{
    json_t *out = family_select(ctx, &stencil_family, json_object_get(params, "variant"), NULL, NULL,
                                env->backend->name);
    if (!out)
        return -1;
    set_list(params, "variant", out);
    return 0;
}

/* Largest halo radius among the points: the explicit weights, the radii or the filters. */
static int max_halo(const st_env *env, const json_t *p)
{
    if (env->custom)
        return env->dim == 1 ? (env->nweights - 1) / 2 : ((int)lround(sqrt(env->nweights)) - 1) / 2;
    json_t *list = sweep_as_list(json_object_get(p, env->dim == 1 ? "radius" : "filter")), *v;
    size_t i;
    int best = 0;
    json_array_foreach(list, i, v) {
        int r = env->dim == 1 ? (int)json_integer_value(v) : (st_filter_find(json_string_value(v))->k - 1) / 2;
        best = r > best ? r : best;
    }
    json_decref(list);
    return best;
}

static int check_blocks(magic_ctx *ctx, const json_t *p, const st_env *env, int *min_block)
{
    json_t *list = sweep_as_list(json_object_get(p, "block")), *v;
    size_t i;
    int rc = 0, halo = max_halo(env, p);
    *min_block = 1024;
    json_array_foreach(list, i, v) {
        json_int_t b = json_integer_value(v);
        *min_block = b < *min_block ? (int)b : *min_block;
        if (env->dim == 1 && (b < 32 || b % 32 != 0))
            rc = magic_error(ctx, "UsageError", "--block %" JSON_INTEGER_FORMAT ": threads per block must be "
                             "a multiple of 32 (whole warps) from 32 to 1024", b);
        else if (env->dim == 2 && (b < 4 || b > 32))
            rc = magic_error(ctx, "UsageError", "--block %" JSON_INTEGER_FORMAT ": in 2D the tile side T must "
                             "be 4..32 (a block of T x T threads, at most 1024)", b);
        else if (b < halo)
            rc = env->dim == 1
                     ? magic_error(ctx, "UsageError", "--radius %d needs --block >= %d: the halo must fit "
                                   "(each side's R cells are loaded by R of the block's %" JSON_INTEGER_FORMAT
                                   " threads)", halo, halo, b)
                     : magic_error(ctx, "UsageError", "a %dx%d filter (halo %d) needs a tile of at least %d: "
                                   "--block %" JSON_INTEGER_FORMAT " is smaller than the halo",
                                   2 * halo + 1, 2 * halo + 1, halo, halo, b);
        if (rc)
            break;
    }
    json_decref(list);
    return rc;
}

/* The sizes as the points take them: 1D an int, 2D "WxH"; each against memory and grid limits. */
static int check_sizes(magic_ctx *ctx, json_t *p, const st_env *env, int min_block)
{
    json_t *given = json_object_get(p, "size");
    json_t *list = json_is_null(given) ? json_pack("[[I]]", (json_int_t)(env->dim == 1 ? 1 << 24 : 4096))
               : json_is_array(json_array_get(given, 0)) ? json_incref(given) : json_pack("[O]", given);
    json_t *out = json_array(), *v;
    char err[CL_ERR_LEN] = "";
    cl_device_props dev, host;
    memset(&dev, 0, sizeof dev);
    memset(&host, 0, sizeof host);
    if (env->backend->device_props(0, &dev, err) != 0 || cl_cpu_backend()->device_props(0, &host, err) != 0) {
        json_decref(list);
        json_decref(out);
        return magic_error(ctx, "RuntimeError", "device properties: %s", err);
    }
    bool gpu = strcmp(env->backend->name, "cpu") != 0;
    size_t i;
    int rc = 0;
    json_array_foreach(list, i, v) {
        size_t nd = json_array_size(v);
        uint64_t nx = (uint64_t)json_integer_value(json_array_get(v, 0));
        uint64_t ny = nd > 1 ? (uint64_t)json_integer_value(json_array_get(v, 1)) : env->dim == 2 ? nx : 1;
        char text[64];
        snprintf(text, sizeof text, env->dim == 1 ? "%" PRIu64 : "%" PRIu64 "x%" PRIu64, nx, ny);
        if ((int)nd > env->dim) {
            rc = magic_error(ctx, "UsageError", "--size: %s sizes have %d number%s; %s", env->dim == 1 ? "1D" : "2D",
                             env->dim, env->dim == 1 ? "" : "s (WIDTHxHEIGHT)",
                             env->dim == 1 ? "for an image give --dim 2" : "3D is not supported");
            break;
        }
        double n = (double)nx * (double)ny, free_b = gpu ? (double)dev.free_mem : (double)host.free_mem;
        cl_stencil_args a = {.dim = env->dim, .nx = nx, .ny = ny};
        double need = 8.0 * n + (double)env->ops->overhead_bytes(&a);
        double host_need = (env->check ? 8.0 * n : 0) + (gpu ? 0 : 8.0 * n);
        const char *where = gpu ? "device" : "host";
        if (!gpu) {
            need = host_need + (double)env->ops->overhead_bytes(&a);
        } else if (!(dev.free_mem && need > (double)dev.free_mem) && host.free_mem &&
                   host_need > (double)host.free_mem) {
            need = host_need, free_b = (double)host.free_mem, where = "host";
        }
        if (free_b > 0 && need > free_b) {
            double per = need / n, fit = (free_b - (need - per * n)) / per;
            char what[80], fits[64];
            snprintf(what, sizeof what, "--size %s", text);
            if (env->dim == 1)
                snprintf(fits, sizeof fits, "largest size that fits: %.0f", floor(fit > 0 ? fit : 0));
            else
                snprintf(fits, sizeof fits, "largest square that fits: %.0fx%.0f", floor(sqrt(fit > 0 ? fit : 0)),
                         floor(sqrt(fit > 0 ? fit : 0)));
            mem_need mn = {what, gpu && strcmp(where, "host") == 0 ? "input and output, for the check" : NULL,
                           where, need, free_b, fits};
            rc = magic_memory_fit(ctx, &mn);
            break;
        }
        if (env->dim == 2 && (nx > INT32_MAX || ny > INT32_MAX || (ny + min_block - 1) / min_block > 65535)) {
            rc = magic_error(ctx, "UsageError", "--size %s: 2D sizes are limited to %d rows with --block %d "
                             "(gridDim.y <= 65535) and 2^31-1 columns", text, 65535 * min_block, min_block);
            break;
        }
        if (nx > UINT64_MAX / 8 / ny || (env->dim == 1 && (nx + min_block - 1) / min_block > INT32_MAX)) {
            rc = magic_error(ctx, "UsageError", "--size %s is beyond the grid limit (2^31-1 blocks)", text);
            break;
        }
        json_array_append_new(out, env->dim == 1 ? json_integer((json_int_t)nx) : json_string(text));
    }
    json_decref(list);
    if (rc) {
        json_decref(out);
        return rc;
    }
    set_list(p, "size", out);
    return 0;
}

static int env_init(magic_ctx *ctx, json_t *p, st_env *env)
{
    memset(env, 0, sizeof *env);
    env->backend = ctx->backend;
    env->ops = ctx->backend->stencil;
    env->dim = (int)json_integer_value(json_object_get(p, "dim"));
    env->seed = (uint64_t)json_integer_value(json_object_get(p, "seed"));
    env->reps = (int)json_integer_value(json_object_get(p, "reps"));
    env->warmup = (int)json_integer_value(json_object_get(p, "warmup"));
    env->check = json_is_true(json_object_get(p, "check"));
    env->normalize = json_is_true(json_object_get(p, "normalize"));
    int min_block = 0;
    if (resolve_dim(ctx, p, env) || expand_variants(ctx, p, env) || check_blocks(ctx, p, env, &min_block) ||
        check_sizes(ctx, p, env, min_block))
        return -1;
    char err[CL_ERR_LEN];
    if (!env->backend->copy_bandwidth || env->backend->copy_bandwidth(&env->bw_gbs, err) != 0)
        env->bw_gbs = 0;
    return 0;
}

/* ---- the command ---- */

static const sweep_spec stencil_sweep = {
    .magic = "stencil",
    .title = "Stencil",
    .metric = "gbs",
    .metric_label = "GB/s",
    .columns = stencil_columns,
    .run_point = st_point,
    .host_work = st_host_work,
    .size_flag = "size",
};

static int stencil_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    int shown = show_source_run(ctx, params, &stencil_family);
    if (shown != 1)
        return shown;
    if (!ctx->backend)
        return magic_error(ctx, "RuntimeError", "%%stencil runs in the device worker: no backend here");
    if (!ctx->backend->stencil)
        return magic_error(ctx, "RuntimeError", "the %s backend was built without %%stencil "
                           "(rebuild libcudalab_cuda.so with cuda/stencil.cu)", ctx->backend->name);
    json_t *p = json_deep_copy(params);
    st_env env;
    int rc = env_init(ctx, p, &env);
    if (rc == 0)
        rc = sweep_run(ctx, &stencil_sweep, p, &env);
    json_decref(p);
    return rc;
}

static const char *const stencil_examples[] = {
    "%stencil --radius 3 --size 2^24",
    "%stencil --radius 1,4,16,64 --size 2^24 --variant naive,tiled",
    "%stencil --radius 8 --block 32,128,512,1024 --variant tiled",
    "%stencil --dim 2 --filter box,gauss3,gauss5,laplace4,laplace8 --size 4096x4096",
    "%stencil --dim 2 --weights 1,2,1,2,4,2,1,2,1 --normalize --size 1920x1080 --block 8,16,32",
    NULL,
};

const magic_spec magic_stencil = {
    .name = "stencil",
    .summary = "Time a 1D stencil and 2D convolution, naive against a shared-memory tile with halo",
    .description =
        "1D (--dim 1): out[i] = sum over j = -R..R of w[j]·in[i+j], with box weights 1/(2R+1) unless "
        "--weights gives the 2R+1 values. 2D (--dim 2): out[y][x] = sum over dy, dx = -r..r of "
        "w[dy][dx]·in[y+dy][x+dx] with a k x k filter (k = 2r+1): box (all 1/9), gauss3 "
        "(1 2 1; 2 4 2; 1 2 1)/16, gauss5 (binomial 1 4 6 4 1 outer product)/256, laplace4 "
        "(0 1 0; 1 -4 1; 0 1 0), laplace8 (1 1 1; 1 -8 1; 1 1 1), or --weights with k*k values row by "
        "row, used exactly as given (not normalised) unless --normalize divides them by their sum. "
        "Boundary: zero padding, ghost cells are 0 (an output near the edge adds only the terms inside "
        "the array). The input is float, uniform in [-1, 1), generated on the device from --seed.\n\n"
        "The variants (table below) differ in where the input terms come from. The model reports "
        "global reads per output: 2R+1 against (blockDim+2R)/blockDim in "
        "1D, k² against (T+k-1)²/T² in 2D; the halo must fit (R <= blockDim; r <= T). The weights "
        "live in __constant__ memory, broadcast to the warp.\n\n"
        "Each point is timed with CUDA events (median of --reps after --warmup, L2 flushed before "
        "every launch); GB/s counts the input and output bytes once (8 bytes per element) over the "
        "median, and % of copy BW compares it with the measured device copy bandwidth. Every "
        "output is checked against a host reference that adds the same terms in the same order "
        "with fmaf: a correct result is bit-exact; the pass bound is |out - ref| <= 1e-6·sum|w·x| per "
        "element (very large runs are checked on the edges plus an odd-strided sample, and say so). "
        "Without a GPU, each variant runs its CPU analogue: host threads take the same blocks, the "
        "tiled one copying tile + halo into a local buffer first.",
    .flags = stencil_flags,
    .mode = MAGIC_LINE,
    .where = MAGIC_WORKER,
    .run = stencil_run,
    .examples = stencil_examples,
};
