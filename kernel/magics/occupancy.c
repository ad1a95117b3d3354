/* occupancy.c — the %occupancy magic: how many blocks and warps of a kernel
 * one SM holds, which of threads, block slots, registers and shared memory
 * stops it, the occupancy that gives, and how a grid spreads over the SMs.
 *
 * Two modes. The model (the lecture exercises): a device given by flags,
 * unspecified ones taken from the GPU (or an H100 SM on the CPU backend), a
 * kernel given by --threads/--block, --regs and --smem; exact everywhere.
 * --kernel NAME: one of our compiled kernels, its registers and shared memory
 * from cudaFuncGetAttributes and its resident blocks from the CUDA occupancy
 * API, shown next to the model's answer. Comma lists sweep (sweep_run).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudalab/occupancy.h"
#include "magic/occupancy_model.h"
#include "magic/sweep.h"

#define OCC_NAME_(id, name, ...) name,
static const char *const kernel_choices[] = {CL_OCC_KERNELS(OCC_NAME_) NULL};
#undef OCC_NAME_
#define OCC_THREADS_(id, name, threads, ...) threads,
static const int64_t kernel_threads[] = {CL_OCC_KERNELS(OCC_THREADS_)};
#undef OCC_THREADS_
static const char *const reg_alloc_choices[] = {"warp", "thread", NULL};

static const flag_spec occ_flags[] = {
    {.name = "kernel", .short_name = 'k', .type = FLAG_CHOICE, .choices = kernel_choices, .opts = FLAG_LIST,
     .help = "one of our kernels (needs the CUDA backend): reduce.*, matmul.naive, "
             "matmul.tiled16, matmul.tiled32, histo.privatized, histo.warp, histo.fast, grid.map"},
    {.name = "threads", .short_name = 't', .type = FLAG_INT, .imin = 1, .imax = 1 << 20, .opts = FLAG_LIST,
     .help = "threads per block (default 256, or with --kernel the block it is launched with: 1024 for matmul.tiled32); a list sweeps: 32,64,128,256,512,1024"},
    {.name = "block", .short_name = 'b', .type = FLAG_DIMS, .imin = 1, .imax = 1 << 20,
     .help = "the block's shape instead of --threads: 16x16"},
    {.name = "regs", .short_name = 'r', .type = FLAG_INT, .imin = 0, .imax = 1024, .opts = FLAG_LIST,
     .help = "registers per thread (default 0: not counted; --kernel: from the kernel)"},
    {.name = "smem", .type = FLAG_INT, .imin = 0, .imax = 1LL << 30, .opts = FLAG_LIST,
     .help = "shared memory per block in bytes, e.g. 4K (default 0; --kernel: from the kernel)"},
    {.name = "grid", .short_name = 'g', .type = FLAG_DIMS, .imin = 1, .imax = INT32_MAX,
     .help = "blocks in the grid (4x5x3): how they spread over the SMs, warps in the grid"},
    {.name = "sms", .type = FLAG_INT, .imin = 1, .imax = 1 << 20, .help = "SMs on the device"},
    {.name = "max-threads-sm", .type = FLAG_INT, .imin = 1, .imax = 1 << 20,
     .help = "resident threads per SM (2048 on sm_90)"},
    {.name = "max-blocks-sm", .type = FLAG_INT, .imin = 1, .imax = 1 << 20,
     .help = "resident blocks per SM (32 on sm_90)"},
    {.name = "max-threads-block", .type = FLAG_INT, .imin = 1, .imax = 1 << 20,
     .help = "threads per block allowed (1024)"},
    {.name = "regs-sm", .type = FLAG_INT, .imin = 1, .imax = 1 << 24,
     .help = "registers per SM (64K on sm_90; 32K in the lecture's exercise)"},
    {.name = "regs-block", .type = FLAG_INT, .imin = 1, .imax = 1 << 24,
     .help = "registers per block allowed (default: --regs-sm)"},
    {.name = "smem-sm", .type = FLAG_INT, .imin = 0, .imax = 1LL << 30,
     .help = "shared memory per SM in bytes (228K on sm_90)"},
    {.name = "smem-block", .type = FLAG_INT, .imin = 0, .imax = 1LL << 30,
     .help = "shared memory per block allowed, bytes (default: --smem-sm)"},
    {.name = "smem-reserved", .type = FLAG_INT, .imin = 0, .imax = 1 << 20,
     .help = "bytes the driver reserves per block (model: 0 unless given; --kernel: the device's)"},
    {.name = "reg-alloc", .type = FLAG_CHOICE, .def = "warp", .choices = reg_alloc_choices,
     .help = "warp: registers allocated per warp in units of 256 (sm_7x-9x); thread: regs x threads"},
    {.name = "sort", .type = FLAG_BOOL, .def = "false", .help = "sort the table by occupancy"},
    {.name = NULL},
};

static const sweep_column occ_columns[] = {
    {.path = "kernel", .header = "kernel"},
    {.path = "threads", .header = "threads"},
    {.path = "regs", .header = "regs"},
    {.path = "smem", .header = "smem B"},
    {.path = "limits.threads", .header = "by threads"},
    {.path = "limits.blocks", .header = "by blocks"},
    {.path = "limits.registers", .header = "by regs"},
    {.path = "limits.shared_memory", .header = "by smem"},
    {.path = "blocks_per_sm", .header = "blocks/SM"},
    {.path = "warps_per_sm", .header = "warps/SM"},
    {.path = "threads_per_sm", .header = "threads/SM"},
    {.path = "occupancy_pct", .header = "occupancy %"},
    {.path = "limiter", .header = "limited by"},
    {.path = "api_blocks_per_sm", .header = "API blocks/SM"},
    {.path = "grid.spread", .header = "spread over SMs"},
    {.path = NULL},
};

typedef struct occ_env {
    cl_occ_device dev;
    const char *dev_source;
    bool reserved_given;
    bool have_grid;
    int64_t grid[3];
    int ngrid;
    json_t *block;                /* the --block array, or NULL */
} occ_env;

/* ---- the device ---- */

static int64_t flag_int(const json_t *params, const char *key, int64_t fallback)
{
    const json_t *v = json_object_get(params, key);
    return json_is_integer(v) ? json_integer_value(v) : fallback;
}

static void device_of(magic_ctx *ctx, const json_t *params, occ_env *env)
{
    cl_occ_device *d = &env->dev;
    env->dev_source = cl_occ_device_of(ctx->backend, ctx->dev.index, d);
    bool given = false;
    static const char *const keys[] = {"sms", "max_threads_sm", "max_blocks_sm", "max_threads_block",
                                       "regs_sm", "regs_block", "smem_sm", "smem_block"};
    int64_t *fields[] = {&d->sms, &d->max_threads_sm, &d->max_blocks_sm, &d->max_threads_block,
                         &d->regs_sm, &d->regs_block, &d->smem_sm, &d->smem_block};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (json_is_integer(json_object_get(params, keys[i]))) {
            *fields[i] = json_integer_value(json_object_get(params, keys[i]));
            given = true;
        }
    /* a per-block limit the user did not give cannot exceed the per-SM one they did */
    if (!json_is_integer(json_object_get(params, "regs_block")) && json_is_integer(json_object_get(params, "regs_sm")))
        d->regs_block = d->regs_sm;
    if (!json_is_integer(json_object_get(params, "smem_block")) && json_is_integer(json_object_get(params, "smem_sm")))
        d->smem_block = d->smem_sm;
    env->reserved_given = json_is_integer(json_object_get(params, "smem_reserved"));
    d->smem_reserved = flag_int(params, "smem_reserved", 0);
    d->reg_per_warp = strcmp(json_string_value(json_object_get(params, "reg_alloc")), "thread") != 0;
    if (given)
        env->dev_source = "an SM given by flags (the rest from the default device)";
}

static json_t *device_json(const cl_occ_device *d, const char *source)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:s}",
                     "reg_partitions", (json_int_t)d->reg_partitions, "smem_unit", (json_int_t)d->smem_unit,
                     "sms", (json_int_t)d->sms,
                     "max_threads_sm", (json_int_t)d->max_threads_sm, "max_blocks_sm",
                     (json_int_t)d->max_blocks_sm, "max_threads_block", (json_int_t)d->max_threads_block,
                     "regs_sm", (json_int_t)d->regs_sm, "regs_block", (json_int_t)d->regs_block,
                     "smem_sm", (json_int_t)d->smem_sm, "smem_block", (json_int_t)d->smem_block,
                     "smem_reserved", (json_int_t)d->smem_reserved, "reg_unit", (json_int_t)d->reg_unit,
                     "reg_alloc", d->reg_per_warp ? "warp" : "thread", "source", source);
}

/* ---- one point ---- */

static json_t *limit_json(int64_t v)
{
    return v == INT64_MAX ? json_null() : json_integer(v);
}

static json_t *grid_json(const occ_env *env, const cl_occ_device *d, const cl_occ_kernel *k,
                         const cl_occ_result *r)
{
    int64_t blocks = env->grid[0] * env->grid[1] * env->grid[2];
    cl_occ_spread s;
    cl_occ_spread_of(d, r, blocks, &s);
    char spread[160];
    if (s.sms_less > 0)
        snprintf(spread, sizeof spread, "%" PRId64 " SMs x %" PRId64 " + %" PRId64 " SMs x %" PRId64,
                 s.sms_more, s.more, s.sms_less, s.less);
    else
        snprintf(spread, sizeof spread, "%" PRId64 " SMs x %" PRId64, s.sms_more, s.more);
    if (s.waves > 1) {
        size_t u = strlen(spread);
        snprintf(spread + u, sizeof spread - u, " (last of %" PRId64 " waves)", s.waves);
    }
    json_t *dims = json_array();
    for (int i = 0; i < env->ngrid; i++)
        json_array_append_new(dims, json_integer(env->grid[i]));
    return json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s}", "dims", dims,
                     "blocks", (json_int_t)blocks, "threads", (json_int_t)(blocks * k->threads),
                     "warps", (json_int_t)(blocks * r->warps_per_block), "idle_lanes",
                     (json_int_t)(blocks * (r->warps_per_block * d->warp - k->threads)), "waves",
                     (json_int_t)s.waves, "full_waves", (json_int_t)s.full_waves, "last_wave_blocks",
                     (json_int_t)s.last_wave_blocks, "sms_more", (json_int_t)s.sms_more, "more",
                     (json_int_t)s.more, "sms_less", (json_int_t)s.sms_less, "less", (json_int_t)s.less,
                     "spread", spread);
}

static int occ_point(magic_ctx *ctx, const json_t *pt, json_t *runs, void *user)
{
    occ_env *env = user;
    cl_occ_device d = env->dev;
    const char *kname = json_string_value(json_object_get(pt, "kernel"));
    int id = 0;
    while (kname && kernel_choices[id] && strcmp(kernel_choices[id], kname) != 0)
        id++;
    /* without --threads, a kernel of ours is asked about the block it is launched with */
    cl_occ_kernel k = {.threads = flag_int(pt, "threads", kname && kernel_choices[id] ? kernel_threads[id] : 256),
                       .regs = flag_int(pt, "regs", 0), .smem = flag_int(pt, "smem", 0)};
    cl_occ_query q;
    bool api = kname != NULL;
    if (api) {
        char err[CL_ERR_LEN] = "";
        if (!ctx->backend->occupancy)
            return magic_error(ctx, "RuntimeError", "the %s backend was built without %%occupancy",
                               ctx->backend->name);
        if (ctx->backend->occupancy->query(id, (int)k.threads, &q, err) != 0)
            return magic_error(ctx, magic_backend_ename(ctx->backend),
                               "%%occupancy --kernel %s --threads %" PRId64 ": %s", kname, k.threads, err);
        k.regs = q.regs;
        k.smem = q.smem_static + q.smem_dynamic;
        if (!env->reserved_given)
            d.smem_reserved = q.smem_reserved;
    }
    cl_occ_result r;
    char err[400];
    if (cl_occ_compute(&d, &k, &r, err, sizeof err) != 0)
        return magic_error(ctx, "UsageError", "%s", err);
    json_t *run = json_pack("{s:o, s:s, s:I, s:O, s:I, s:I, s:I, s:I, s:f, s:I}", "kernel",
                            api ? json_string(kname) : json_null(), "backend",
                            api ? ctx->backend->name : "model", "threads", (json_int_t)k.threads,
                            "block", env->block ? env->block : json_null(), "regs", (json_int_t)k.regs,
                            "smem", (json_int_t)k.smem, "warps_per_block", (json_int_t)r.warps_per_block,
                            "threads_in_last_warp", (json_int_t)r.threads_in_last_warp,
                            "last_warp_idle_pct", r.last_warp_idle_pct, "regs_per_block",
                            (json_int_t)r.regs_per_block);
    json_object_set_new(run, "limits", json_pack("{s:o, s:o, s:o, s:o}", "threads", limit_json(r.by_threads),
                                                 "blocks", limit_json(r.by_blocks), "registers",
                                                 limit_json(r.by_regs), "shared_memory", limit_json(r.by_smem)));
    json_object_set_new(run, "blocks_per_sm", json_integer(r.blocks_sm));
    json_object_set_new(run, "limiter", json_string(cl_occ_limiter_name(r.limiter)));
    json_object_set_new(run, "warps_per_sm", json_integer(r.warps_sm));
    json_object_set_new(run, "threads_per_sm", json_integer(r.threads_sm));
    json_object_set_new(run, "occupancy_pct", json_real(r.occupancy_pct));
    json_object_set_new(run, "api_blocks_per_sm", api ? json_integer(q.api_blocks_sm) : json_null());
    json_object_set_new(run, "model_agrees", api ? json_boolean(q.api_blocks_sm == r.blocks_sm) : json_null());
    json_object_set_new(run, "impl", json_string(api ? q.kernel : "the arithmetic model"));
    json_object_set_new(run, "grid", env->have_grid ? grid_json(env, &d, &k, &r) : json_null());
    json_object_set_new(run, "device_model", device_json(&d, env->dev_source));
    json_array_append_new(runs, run);
    return 0;
}

/* ---- the command ---- */

static const sweep_spec occ_sweep = {
    .magic = "occupancy",
    .title = "Occupancy",
    .metric = "occupancy_pct",
    .metric_label = "occupancy %",
    .columns = occ_columns,
    .run_point = occ_point,
    .arithmetic = true,
    .subject = "device_model.source",
};

/* Model mode asks the device its limits only; --kernel asks the runtime about a compiled kernel, which
 * needs the device's context (magic_spec.needs_device). */
static bool occ_needs_device(const json_t *params)
{
    return !json_is_null(json_object_get(params, "kernel")) && json_object_get(params, "kernel");
}

static int occ_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    (void)body;
    if (!ctx->backend)
        return magic_error(ctx, "RuntimeError", "%%occupancy runs in the device worker: no backend here");
    occ_env env;
    memset(&env, 0, sizeof env);
    device_of(ctx, params, &env);
    json_t *p = json_deep_copy(params);
    const json_t *block = json_object_get(params, "block");
    if (!json_is_null(block) && block) {
        if (!json_is_null(json_object_get(params, "threads"))) {
            json_decref(p);
            return magic_error(ctx, "UsageError", "give either --threads or --block, not both");
        }
        int64_t t = 1;
        size_t i;
        json_t *v;
        json_t *arr = json_is_array(block) ? (json_t *)block : NULL;
        if (arr)
            json_array_foreach(arr, i, v)
                t *= json_integer_value(v);
        else
            t = json_integer_value(block);
        env.block = arr ? arr : NULL;
        json_object_set_new(p, "threads", json_integer(t));
    } else if (json_is_null(json_object_get(params, "threads")) && json_is_null(json_object_get(params, "kernel"))) {
        json_object_set_new(p, "threads", json_integer(256));
    }
    const json_t *grid = json_object_get(params, "grid");
    env.grid[0] = env.grid[1] = env.grid[2] = 1;
    if (json_is_array(grid)) {
        env.have_grid = true;
        env.ngrid = (int)json_array_size(grid);
        for (int i = 0; i < env.ngrid && i < 3; i++)
            env.grid[i] = json_integer_value(json_array_get(grid, (size_t)i));
    } else if (json_is_integer(grid)) {
        env.have_grid = true;
        env.ngrid = 1;
        env.grid[0] = json_integer_value(grid);
    }
    /* the sweep varies every array it finds: shapes travel as text ("16x16") */
    static const char *const shapes[] = {"block", "grid"};
    for (int i = 0; i < 2; i++) {
        const json_t *v = json_object_get(params, shapes[i]);
        if (json_is_array(v)) {
            char text[96] = "";
            for (size_t k = 0; k < json_array_size(v); k++) {
                size_t u = strlen(text);
                snprintf(text + u, sizeof text - u, "%s%" JSON_INTEGER_FORMAT, k ? "x" : "",
                         json_integer_value(json_array_get(v, k)));
            }
            json_object_set_new(p, shapes[i], json_string(text));
        }
    }
    int rc = sweep_run(ctx, &occ_sweep, p, &env);
    json_decref(p);
    return rc;
}

static const char *const occ_examples[] = {
    "%occupancy --max-blocks-sm 8 --max-threads-sm 1024 --max-threads-block 512 --block 16x16",
    "%occupancy --threads 256 --grid 3",
    "%occupancy --sms 16 --regs-sm 32K --regs 48 --threads 100 --grid 4x5x3",
    "%occupancy --threads 32,64,128,256,512,1024 --regs 64 --smem 8K",
    "%occupancy --kernel reduce.fast,reduce.convergent --threads 128,256,512,1024",
    NULL,
};

const magic_spec magic_occupancy = {
    .name = "occupancy",
    .summary = "Resident blocks and warps per SM, the limiting resource, and occupancy",
    .description =
        "An SM holds a block only while it has room for all of it: its threads (counted in whole "
        "warps of 32), a block slot, its registers and its shared memory. Each resource allows some "
        "number of blocks per SM; the smallest wins, is named as the limiter, and gives the resident "
        "warps and threads per SM and the occupancy = resident warps / (max threads per SM / 32).\n\n"
        "Model mode (exact on every backend): the device comes from flags (--max-threads-sm, "
        "--max-blocks-sm, --max-threads-block, --regs-sm, --regs-block, --smem-sm, --smem-block, "
        "--sms); what is not given comes from this GPU, or on the CPU backend from an sm_90 (H100) "
        "SM: 132 SMs, 2048 threads, 32 blocks, 64K registers and 228 KiB of shared memory per SM. "
        "The kernel is --threads (or --block 16x16), --regs per thread and --smem bytes per block. "
        "Registers are allocated per warp in units of 256 as on sm_7x to sm_9x: a warp of an "
        "R-register kernel takes ceil(32·R/256)·256, and the register file is split between the "
        "SM's 4 schedulers, so an SM holds 4·floor((regs per SM / 4) / that) warps' registers (as "
        "the CUDA occupancy calculator counts); --reg-alloc thread uses the lecture's simple "
        "product R · threads per block out of the SM's registers instead. Shared memory per block "
        "is rounded up to 128 bytes: --smem plus "
        "--smem-reserved (0 in the model unless given; the driver keeps 1 KiB per block on sm_8x "
        "and sm_9x). A block that cannot run at all (too many threads, registers or shared memory "
        "for one block) is a UsageError naming the limit.\n\n"
        "--grid 4x5x3 adds the grid: its blocks, warps and idle lanes, and how its blocks spread "
        "over the SMs, round-robin in waves of SMs × blocks per SM: e.g. 60 blocks on 16 SMs are "
        "12 SMs × 4 + 4 SMs × 3. The run also shows the threads in each block's last warp and the "
        "share of its lanes left idle (100 threads: 4 warps, the last holds 4 threads, 87.5% idle).\n\n"
        "--kernel NAME uses one of our compiled kernels (the CUDA backend only): its registers and "
        "static shared memory from cudaFuncGetAttributes, its dynamic shared memory from its launch "
        "(the reduction trees use one float per thread), the device's per-block reserve, and the "
        "resident blocks from cudaOccupancyMaxActiveBlocksPerMultiprocessor, shown next to the "
        "model's answer (model_agrees). Comma lists (--threads 32,64,...,1024, --regs, --smem, "
        "--kernel) sweep and chart the occupancy.",
    .flags = occ_flags,
    .mode = MAGIC_LINE,
    .where = MAGIC_WORKER,
    .run = occ_run,
    .examples = occ_examples,
    .needs_device = occ_needs_device,
};
