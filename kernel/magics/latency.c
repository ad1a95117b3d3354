/* latency.c — %latency: the lecture's memory hierarchy table (declaration,
 * memory, scope, lifetime), with each memory's latency measured on this
 * device by pointer chasing (cudalab/latency.h).
 *
 * One run per --level and --working-set: a single thread follows a random
 * cycle through the level's memory, so every load waits for the one before
 * it, and the time per step is the latency, in the SM's clock cycles and in
 * nanoseconds. By default every level runs at its own working set; a list of
 * --working-set sizes on one global level (l1: loads cached in L1) draws the
 * latency against the working set, the staircase of L1, L2 and DRAM.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "cudalab/latency.h"
#include "magic/families.h"
#include "magic/magic.h"
#include "magic/sweep.h"
#include "render/render.h"

typedef struct lat_level {
    const char *key, *memory, *declaration, *scope, *lifetime;
    uint64_t working_set;
} lat_level;

static const lat_level levels[CL_LAT_NLEVELS] = {
#define LAT_ROW_(id, key, memory, decl, scope, life, ws) [id] = {key, memory, decl, scope, life, ws},
    CL_LATENCY_LEVELS(LAT_ROW_)
#undef LAT_ROW_
};

static const char *const level_choices[] = {
#define LAT_KEY_(id, key, ...) key,
    CL_LATENCY_LEVELS(LAT_KEY_)
#undef LAT_KEY_
    "all", NULL,
};

static int level_of(const char *key)
{
    for (int i = 0; key && i < CL_LAT_NLEVELS; i++)
        if (strcmp(levels[i].key, key) == 0)
            return i;
    return -1;
}

/* The smallest working set a chase may have: two slots of its level. */
static uint64_t level_min_bytes(int level)
{
    return level == CL_LAT_L1 || level == CL_LAT_L2 || level == CL_LAT_DRAM ? 2 * CL_LAT_LINE : 8;
}

/* "4 KiB", "512 MiB" for the table. */
static json_t *bytes_cell(const json_t *run)
{
    const json_t *v = json_object_get(run, "working_set");
    if (!json_is_integer(v))
        return json_string("-");
    json_int_t b = json_integer_value(v);
    static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
    int u = 0;
    while (u < 3 && b >= 1024 && b % 1024 == 0)
        b /= 1024, u++;
    return json_sprintf("%" JSON_INTEGER_FORMAT " %s", b, units[u]);
}

static const sweep_column latency_columns[] = {
    {.path = "memory", .header = "memory"},
    {.path = "declaration", .header = "declaration"},
    {.path = "scope", .header = "scope"},
    {.path = "lifetime", .header = "lifetime"},
    {.path = "working_set", .header = "working set", .cell = bytes_cell},
    {.path = "cycles.median", .header = "cycles"},
    {.path = "ns.median", .header = "ns"},
    {.path = "served_by", .header = "served by"},
    {.path = NULL},
};

typedef struct lat_env {
    const cl_latency_ops *ops;
    uint64_t seed;
    int reps;
} lat_env;

static int lat_point(magic_ctx *ctx, const json_t *pt, json_t *runs, void *user)
{
    const lat_env *env = user;
    int level = level_of(json_string_value(json_object_get(pt, "level")));
    const json_t *ws = json_object_get(pt, "working_set");
    cl_latency_args a = {.level = level, .working_set = json_is_integer(ws) ? (uint64_t)json_integer_value(ws) : 0,
                         .seed = env->seed, .reps = env->reps};
    cl_latency_result *r = calloc(1, sizeof *r);
    char err[CL_ERR_LEN] = "";
    if (!r)
        return magic_error(ctx, "MemoryError", "%%latency: out of host memory");
    if (MAGIC_TIMED(ctx, err, env->ops->chase(&a, r, err)) != 0) {
        free(r);
        return magic_error(ctx, magic_backend_ename(ctx->backend),
                           "%%latency --level %s: %s", levels[level].key, err);
    }
    const lat_level *l = &levels[level];
    json_t *run = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:I, s:i, s:o, s:o, s:s, s:s}", "level", l->key,
                            "memory", l->memory, "declaration", l->declaration, "scope", l->scope, "lifetime",
                            l->lifetime, "working_set",
                            r->working_set ? json_integer((json_int_t)r->working_set) : json_null(), "slots",
                            (json_int_t)r->slots, "steps", r->steps, "cycles", stats_json(&r->cycles), "ns",
                            stats_json(&r->ns), "served_by", r->measured, "backend", ctx->backend->name);
    free(r);
    json_array_append_new(runs, run);
    return 0;
}

/* Each level's working set within what its memory holds, before anything runs. */
static int check_working_sets(magic_ctx *ctx, const json_t *params)
{
    json_t *ls = sweep_as_list(json_object_get(params, "level")), *ws = json_object_get(params, "working_set");
    json_t *sizes = json_is_null(ws) ? json_array() : sweep_as_list(ws), *lv, *sv;
    cl_device_props p = {0};
    char err[CL_ERR_LEN] = "", what[96];
    int rc = ctx->backend->device_props(ctx->dev.index, &p, err) != 0
                 ? magic_error(ctx, magic_backend_ename(ctx->backend), "%%latency: the device's limits: %s", err) : 0;
    size_t i, j;
    json_array_foreach(ls, i, lv) {
        int level = level_of(json_string_value(lv));
        json_array_foreach(sizes, j, sv) {
            uint64_t b = (uint64_t)json_integer_value(sv);
            if (rc)
                break;
            if (level == CL_LAT_REGISTER || level == CL_LAT_LOCAL)
                rc = magic_error(ctx, "UsageError", "--working-set: the %s row has none to choose (%s)",
                                 levels[level].key, level == CL_LAT_REGISTER
                                     ? "it times a chain of dependent FMAs"
                                     : "its array is the kernel's own, a fixed size");
            else if (b < level_min_bytes(level))
                rc = magic_error(ctx, "UsageError", "--working-set %" PRIu64 ": the %s chase needs at least %" PRIu64
                                 " bytes (two slots)", b, levels[level].key, level_min_bytes(level));
            else if (level == CL_LAT_CONSTANT && b > CL_LAT_CONST_MAX)
                rc = magic_error(ctx, "UsageError", "--working-set %" PRIu64 ": the constant chase's array holds "
                                 "%u bytes (a module's constant memory is 64 KiB)", b, CL_LAT_CONST_MAX);
            else if (level == CL_LAT_SHARED && p.smem_per_block_optin && b > p.smem_per_block_optin)
                rc = magic_error(ctx, "UsageError", "--working-set %" PRIu64 ": a block may have at most %" PRIu64
                                 " bytes of shared memory on this device", b, (uint64_t)p.smem_per_block_optin);
            else if (level >= CL_LAT_L1) {
                snprintf(what, sizeof what, "--working-set %" PRIu64, b);
                mem_need need = {what, "the chase's working set", strcmp(ctx->backend->name, "cpu") ? "device" : "host",
                                 (double)b, (double)p.free_mem, NULL};
                rc = magic_memory_fit(ctx, &need);
            }
        }
    }
    json_decref(ls);
    json_decref(sizes);
    return rc;
}

static int latency_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    (void)body;
    if (!ctx->backend || !ctx->backend->latency)
        return magic_error(ctx, "RuntimeError", "the %s backend has no %%latency",
                           ctx->backend ? ctx->backend->name : "no");
    json_t *p = json_deep_copy(params), *asked = json_object_get(params, "level");
    json_t *names = json_is_null(asked) ? NULL : sweep_as_list(asked), *v;
    size_t i;
    bool all = !names, sized = json_is_integer(json_object_get(params, "working_set")) ||
                                json_is_array(json_object_get(params, "working_set"));
    json_array_foreach(names, i, v)
        all |= strcmp(json_string_value(v), "all") == 0;
    if (!names && sized)
        json_object_set_new(p, "level", json_string("l1"));     /* sizes alone: the staircase */
    else if (all) {
        json_t *every = json_array();
        for (int l = 0; l < CL_LAT_NLEVELS; l++)
            json_array_append_new(every, json_string(levels[l].key));
        json_object_set_new(p, "level", every);
    }
    json_decref(names);
    lat_env env = {.ops = ctx->backend->latency,
                   .seed = (uint64_t)json_integer_value(json_object_get(params, "seed")),
                   .reps = sweep_reps(params)};
    static const sweep_spec spec = {
        .magic = "latency", .title = "Memory latency", .metric = "cycles.median",
        .metric_label = "cycles per dependent load", .columns = latency_columns, .run_point = lat_point,
    };
    int rc = check_working_sets(ctx, p) ? -1 : sweep_run(ctx, &spec, p, &env);
    json_decref(p);
    return rc;
}

static const flag_spec latency_flags[] = {
    {.name = "level", .short_name = 'l', .type = FLAG_CHOICE, .def = NULL, .choices = level_choices,
     .opts = FLAG_LIST, .help = "the rows to measure (default all): register, shared, local, constant, and "
                                "global memory's l1 (loads cached in L1), l2 (L1 bypassed) and dram (past the L2)"},
    {.name = "working-set", .short_name = 'w', .type = FLAG_INT, .def = NULL, .imin = 1, .imax = 1ll << 32,
     .opts = FLAG_LIST, .help = "bytes the chase's cycle spans instead of the level's own (4K, 16M, 1G): a list on "
                                "--level l1 draws the latency against it, the steps of L1, L2 and DRAM"},
    SWEEP_SEED_FLAG("seed of the random cycle"),
    SWEEP_REPS_FLAG("timed chases of " STR(CL_LAT_STEPS) " steps per row"),
    SWEEP_BACKEND_FLAG,
    {.name = NULL},
};

static const char *const latency_examples[] = {
    "%latency",
    "%latency --level shared,l1,l2,dram",
    "%latency --level l1 --working-set 4K,16K,64K,256K,1M,4M,16M,64M,256M",
    "%latency --level shared --working-set 1K,16K,64K",
    NULL,
};

const magic_spec magic_latency = {
    .name = "latency",
    .summary = "The memory hierarchy table, each memory's latency measured by pointer chasing",
    .description =
        "The lecture's table of CUDA variables (declaration, memory, scope, lifetime) with what it "
        "leaves out: how long a load from each memory takes on this device. One thread follows a random "
        "cycle through the memory, p = next[p], so each load's address is the value of the one before and "
        "no two are in flight together: the time per step is the latency, in SM clock cycles (clock64) "
        "and nanoseconds (the global timer), the median of --reps chases of " STR(CL_LAT_STEPS)
        " steps after a warm-up "
        "lap. register times a chain of dependent FMAs; shared, local (an automatic array indexed at run "
        "time, which the compiler must place in local memory: device memory, cached in L1) and constant "
        "chase their own memory; global memory is chased three times: l1 (ld.global.ca, 16 KiB: L1 hits), "
        "l2 (ld.global.cg, which bypasses L1, 4 MiB: L2 hits) and dram (512 MiB, past any L2). The "
        "working set's slots are 128 bytes apart, so no two steps share a line. A list of --working-set "
        "sizes on --level l1 draws latency against working set: flat while it fits L1, a step at L1's "
        "size, another at L2's. Without a GPU the CPU backend chases the host's own caches and DRAM (each "
        "row says which served it) and converts nanoseconds to cycles at the host's clock.",
    .flags = latency_flags,
    .mode = MAGIC_LINE,
    .where = MAGIC_WORKER,
    .run = latency_run,
    .examples = latency_examples,
};
