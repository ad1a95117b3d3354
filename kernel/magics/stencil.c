/* stencil.c — the %stencil magic: a 1D stencil of radius R and 2D
 * convolution with the lecture's filters, naive against shared-memory tiled,
 * timed as bandwidth and checked against the host.
 *
 * run() resolves the defaults that depend on --dim, validates everything the
 * sweep needs before any point runs (radius against block: the halo must
 * fit; filter against tile; weights; every size against device and host
 * memory and the grid limits), then hands the sweep to sweep_run();
 * stencil_point.c runs each point.
 *
 * --variant may name a student's %%kernel (cl_stencil_student, or
 * cl_stencil_student_2d for a %%kernel --dim 2 cell), run like ours on the
 * same input and checked against the same reference.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "magic/family_run.h"
#include "render/render.h"
#include "magic/show_source.h"
#include "magic/sweep.h"
#include "magics/stencil_internal.h"
#include "student/run.h"
#include "student/sanitize.h"
#include "student/store.h"

const family_spec stencil_family = {
    .magic = "stencil",
    .variants = cl_stencil_variants,
    .nvariants = CL_STENCIL_NVARIANTS,
    .student = &cl_stencil_student,
    .quick = "--size 100003 --radius 5",
    FAMILY_OPS(stencil, cl_stencil_ops),
    .sources = "cuda/stencil.cu and cpu/stencil_cpu.c",
    .student_2d = &cl_stencil_student_2d,
    .quick_2d = "--dim 2 --size 67x33 --filter gauss5",
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
    {.name = "block", .short_name = 'b', .type = FLAG_DIMS, .def = NULL, .imin = 1, .imax = 1024,
     .opts = FLAG_LIST, .help = "threads per block: 1D B, a multiple of 32 for ours (default 256); 2D "
                                "BXxBY, each side 4..32 for ours, T meaning TxT (default 16x16); your "
                                "kernels any block (default: the %%kernel line's)"},
    /* the lesson's pair by default; fast, the rung at the copy's roof, runs when named (or with all) */
    FAMILY_VARIANT_FLAG(&stencil_family, "naive,tiled"),
    STUDENT_RUN_FLAGS,
    STUDENT_GRID_FLAG,
    SWEEP_MEASURE_FLAGS("seed of the generated input",
                        "timed runs per point",
                        "compare every output with the host reference",
                        "sort the table by GB/s"),
    SHOW_SOURCE_FLAGS,
    {.name = NULL},
};

static const sweep_column stencil_columns[] = {
    {.path = "variant", .header = "variant"},
    {.path = "size", .header = "size"},
    {.path = "radius", .header = "R"},
    {.path = "filter", .header = "filter"},
    {.path = "block", .header = "block"},
    {.path = "time_ms.median", .header = "median ms"},
    {.path = "gbs", .header = "GB/s"},
    {.path = "pct_of_bandwidth", .header = "% of copy BW"},
    {.path = "model.global_reads_per_output", .header = "reads/output"},
    {.path = "model.smem_per_block", .header = "smem B"},
    {.path = "check.passed", .header = "check"},
    {.path = NULL},
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


/* --variant all -> every variant, in table order; duplicates are dropped. A
 * student's kernel where the backend runs it, in its own --dim. */
static int expand_variants(magic_ctx *ctx, json_t *params, st_env *env)
{
    json_t *out = family_select(ctx, &stencil_family, json_object_get(params, "variant"), NULL, NULL,
                                env->backend->name);
    if (!out)
        return -1;
    size_t i;
    json_t *v;
    int rc = 0;
    json_array_foreach(out, i, v) {
        const student_def *d = family_builtin(&stencil_family, json_string_value(v)) < 0
                                   ? student_find(ctx->lab, json_string_value(v)) : NULL;
        if (!d) {
            env->builtin = true;
            continue;
        }
        if (!env->student)
            env->student = d->name;
        if (d->dim != env->dim)
            rc = magic_error(ctx, "UsageError", "%s is a %dD kernel (%%%%kernel --dim %d): run it with --dim %d",
                             d->name, d->dim, d->dim, d->dim);
        if (rc)
            break;
    }
    if (rc) {
        json_decref(out);
        return rc;
    }
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

bool st_block_of(const st_env *env, const json_t *given, int *block)
{
    int n = json_is_array(given) ? (int)json_array_size(given) : 0;
    block[0] = n ? (int)json_integer_value(json_array_get(given, 0)) : env->dim == 1 ? 256 : 16;
    block[1] = n > 1 ? (int)json_integer_value(json_array_get(given, 1)) : env->dim == 1 ? 1 : block[0];
    int z = n > 2 ? (int)json_integer_value(json_array_get(given, 2)) : 1;
    return n == 0 || (env->dim == 1 ? block[1] == 1 && z == 1 : z == 1);
}

/* Our variants' blocks: 1D whole warps, 2D sides of 4..32, and the halo inside
 * the block (a student's kernel takes any block the device allows). *min_side:
 * the smallest block length along the grid's limiting dimension (1D x, 2D y). */
static int check_blocks(magic_ctx *ctx, json_t *p, const st_env *env, int *min_side)
{
    json_t *list = sweep_as_list(json_object_get(p, "block")), *v;
    size_t i;
    int rc = 0, halo = max_halo(env, p);
    *min_side = 1024;
    if (json_array_size(list) == 0)
        json_array_append_new(list, json_null());   /* the default */
    json_array_foreach(list, i, v) {
        int b[2];
        bool flat = st_block_of(env, v, b);
        if (env->dim == 2 && json_array_size(v) == 1)       /* T is TxT, for your kernels too */
            json_array_append_new(v, json_integer(b[1]));
        int side = b[env->dim - 1];
        *min_side = side < *min_side ? side : *min_side;
        if (!env->builtin)
            continue;
        if (!flat)
            rc = magic_error(ctx, "UsageError", "--block: our %dD variants take a %s block (your kernels may "
                             "take any shape)", env->dim, env->dim == 1 ? "1D --block B" : "2D --block BXxBY");
        else if (env->dim == 1 && (b[0] < 32 || b[0] % 32 != 0))
            rc = magic_error(ctx, "UsageError", "--block %d: threads per block must be a multiple of 32 (whole "
                             "warps) from 32 to 1024", b[0]);
        else if (env->dim == 2 && (b[0] < 4 || b[0] > 32 || b[1] < 4 || b[1] > 32))
            rc = magic_error(ctx, "UsageError", "--block %dx%d: in 2D each side of the block must be 4..32 (a "
                             "tile of at most 32 x 32 = 1024 threads)", b[0], b[1]);
        else if (b[0] < halo || (env->dim == 2 && b[1] < halo))
            rc = env->dim == 1
                     ? magic_error(ctx, "UsageError", "--radius %d needs --block >= %d: the halo must fit "
                                   "(each side's R cells are loaded by R of the block's %d threads)", halo, halo,
                                   b[0])
                     : magic_error(ctx, "UsageError", "a %dx%d filter (halo %d) needs a tile of at least %d "
                                   "on each side: --block %dx%d is smaller than the halo", 2 * halo + 1,
                                   2 * halo + 1, halo, halo, b[0], b[1]);
        if (rc)
            break;
    }
    json_decref(list);
    return rc;
}

/* The sizes as the points take them: 1D an int, 2D "WxH"; each against memory and grid limits. */
static int check_sizes(magic_ctx *ctx, json_t *p, const st_env *env, int min_side)
{
    json_t *given = json_object_get(p, "size");
    json_t *list = json_is_null(given) ? json_pack("[[I]]", (json_int_t)(env->dim == 1 ? 1 << 24 : 4096))
               : json_is_array(json_array_get(given, 0)) ? json_incref(given) : json_pack("[O]", given);
    json_t *out = json_array(), *v;
    char err[CL_ERR_LEN] = "";
    cl_device_props dev, host;
    memset(&dev, 0, sizeof dev);
    memset(&host, 0, sizeof host);
    if (env->backend->device_props(ctx->dev.index, &dev, err) != 0 || cl_cpu_backend()->device_props(0, &host, err) != 0) {
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
        cl_stencil_args a = {.dim = env->dim, .nx = nx, .ny = ny, .kept_copies = sweep_kept_copies(p)};
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
        if (env->dim == 2 && (nx > INT32_MAX || ny > INT32_MAX || (ny + min_side - 1) / min_side > 65535)) {
            rc = magic_error(ctx, "UsageError", "--size %s: 2D sizes are limited to %d rows with blocks %d "
                             "high (gridDim.y <= 65535) and 2^31-1 columns", text, 65535 * min_side, min_side);
            break;
        }
        if (env->student && nx > INT32_MAX) {
            rc = magic_error(ctx, "UsageError", "--size %s: your kernel %s takes int n, at most 2147483647 "
                             "elements", text, env->student);
            break;
        }
        if (nx > UINT64_MAX / 8 / ny || (env->dim == 1 && (nx + min_side - 1) / min_side > INT32_MAX)) {
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
    env->reps = sweep_reps(p);
    env->warmup = (int)json_integer_value(json_object_get(p, "warmup"));
    env->check = json_is_true(json_object_get(p, "check"));
    env->normalize = json_is_true(json_object_get(p, "normalize"));
    int min_side = 0;
    if (resolve_dim(ctx, p, env) || expand_variants(ctx, p, env) || check_blocks(ctx, p, env, &min_side) ||
        check_sizes(ctx, p, env, min_side))
        return -1;
    char err[CL_ERR_LEN];
    if (magic_copy_bandwidth(ctx, env->backend, &env->bw_gbs, err) != 0)
        env->bw_gbs = 0;
    return 0;
}

/* ---- the command ---- */

static const sweep_spec stencil_sweep = {
    .magic = "stencil",
    .title = "Stencil",
    .metric = "gbs",
    .metric_label = "GB/s", .rate_of = "bytes",
    .columns = stencil_columns,
    .run_point = st_point,
    .host_work = st_host_work,
    .size_flag = "size",
    .flops = st_flops,
};

static int st_prepare(magic_ctx *ctx, const json_t *given, json_t *p, void *env_)
{
    (void)given;
    st_env *env = env_;
    return env_init(ctx, p, env);
}

static const family_command stencil_command = {
    .family = &stencil_family, .sweep = &stencil_sweep, FAMILY_ENV(st_env), .prepare = st_prepare,
};

static int stencil_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    return family_run(ctx, &stencil_command, params, body);
}

static const char *const stencil_examples[] = {
    "%stencil --radius 3 --size 2^24",
    "%stencil --radius 1,4,16,64 --size 2^24 --variant naive,tiled",
    "%stencil --radius 8 --block 32,128,512,1024 --variant tiled",
    "%stencil --size 2^26 --radius 1,3,8 --variant naive,tiled,fast",
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
        "tiled one copying tile + halo into a local buffer first, fast's blocks holding its threads' "
        "several outputs each.\n\nBy default --variant runs naive and tiled, the lesson; fast (a window "
        "in registers, 16- or 8-byte loads, the radius unrolled: the copy's roof) runs when named or with all.\n\n"
        "--block is threads per block: B in 1D, BXxBY in 2D (T alone means TxT); the tiled 2D variant "
        "loads a (BX+2r) x (BY+2r) input tile.\n\n"
        "--variant also runs your own kernels (a %%kernel --for stencil cell): __global__ void NAME("
        CL_STENCIL_STUDENT_PARAMS ") in 1D, one thread per output, block 256, grid "
        "ceil(n/256); with %%kernel --dim 2, __global__ void NAME(" CL_STENCIL_STUDENT_2D_PARAMS ") with k x k weights row by row (k = 2r+1), block 16x16, grid "
        "ceil(width/16) x ceil(height/16). The weights come as a pointer to device memory, pixels outside "
        "the input read as 0, and dynamic shared memory is sized for the block's tile with its halo unless "
        "--smem says otherwise. Your kernel runs on the same input with the same timing; its output is "
        "filled with NaN before every rep and guarded past both ends, so an output never written or one "
        "written outside the array is named; it may add its terms in any order, so its check allows "
        "terms x 2^-24 of sum|w*x| per element where that is more than 1e-6.",
    .flags = stencil_flags,
    .mode = MAGIC_LINE,
    .where = MAGIC_WORKER,
    .run = stencil_run,
    .examples = stencil_examples,
    .attach = student_attach,
};
