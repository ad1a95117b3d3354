/* sweep_launch.c — --launch: each run's launch configuration and the occupancy it allows, as table
 * columns and in the run's document.
 *
 * Every timed family already writes a run's launch (launch_json: grid, block, shared memory per
 * block, registers per thread); under --launch this file adds launch.occupancy, the theoretical
 * occupancy of that block on the device that ran it, from the same arithmetic as %occupancy
 * (occupancy_model.c, with the shared memory the driver reserves per block), and gives the table
 * its columns. What cannot be modelled says why instead of showing a number that would mislead:
 * a library call or host code has no launch of ours, and the CPU backend's analogues have no
 * registers per thread (the occupancy then counts the other limits only, an upper bound).
 */
#include <stdio.h>
#include <string.h>

#include "render/render.h"
#include "magic/families.h"
#include "magic/occupancy_model.h"
#include "magic/sweep.h"
#include "magic/sweep_internal.h"

/* Every run under --launch has this number (a fact of the device), so the columns show exactly
 * when the flag was given, whatever the runs could model. */
#define LAUNCH_SHOWN "launch.occupancy.max_warps_per_sm"

/* "256", "16×16", "4×5×3": a launch's dimensions without the trailing ones; null where the run's
 * launch was not modelled (the note says why). */
static json_t *dims_cell(const json_t *run, const char *key)
{
    const json_t *launch = json_object_get(run, "launch"), *d = json_object_get(launch, key);
    if (!json_is_number(sweep_path_get(launch, "occupancy.blocks_per_sm")) || json_array_size(d) != 3)
        return json_null();
    json_int_t x = json_integer_value(json_array_get(d, 0)), y = json_integer_value(json_array_get(d, 1)),
               z = json_integer_value(json_array_get(d, 2));
    if (z > 1)
        return json_sprintf("%" JSON_INTEGER_FORMAT "×%" JSON_INTEGER_FORMAT "×%" JSON_INTEGER_FORMAT, x, y, z);
    if (y > 1)
        return json_sprintf("%" JSON_INTEGER_FORMAT "×%" JSON_INTEGER_FORMAT, x, y);
    return json_integer(x);
}

static json_t *grid_cell(const json_t *run)
{
    return dims_cell(run, "grid");
}

static json_t *block_cell(const json_t *run)
{
    return dims_cell(run, "block");
}

static json_t *smem_cell(const json_t *run)
{
    if (!json_is_number(sweep_path_get(run, "launch.occupancy.blocks_per_sm")))
        return json_null();
    return json_incref((json_t *)sweep_path_get(run, "launch.smem_per_block"));
}

static json_t *regs_cell(const json_t *run)
{
    if (!json_is_true(sweep_path_get(run, "launch.occupancy.regs_counted")))
        return json_null();
    return json_incref((json_t *)sweep_path_get(run, "launch.regs_per_thread"));
}

/* "48 of 64": resident warps per SM of the most the SM holds. */
static json_t *warps_cell(const json_t *run)
{
    const json_t *warps = sweep_path_get(run, "launch.occupancy.warps_per_sm");
    if (!json_is_integer(warps))
        return json_null();
    return json_sprintf("%" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT, json_integer_value(warps),
                        json_integer_value(sweep_path_get(run, LAUNCH_SHOWN)));
}

const sweep_column sweep_launch_columns[] = {
    {.path = "launch.grid", .header = "grid", .cell = grid_cell, .only_with = LAUNCH_SHOWN},
    {.path = "launch.block", .header = "block", .cell = block_cell, .only_with = LAUNCH_SHOWN},
    {.path = "launch.regs_per_thread", .header = "regs/thread", .cell = regs_cell, .only_with = LAUNCH_SHOWN},
    {.path = "launch.smem_per_block", .header = "smem/block B", .cell = smem_cell, .only_with = LAUNCH_SHOWN},
    {.path = "launch.occupancy.warps_per_sm", .header = "warps/SM", .cell = warps_cell, .only_with = LAUNCH_SHOWN},
    {.path = "launch.occupancy.pct", .header = "theor. occupancy %", .only_with = LAUNCH_SHOWN},
    {.path = "launch.occupancy.limiter", .header = "limited by", .only_with = LAUNCH_SHOWN},
    {.path = NULL},
};

/* The device's limits, asked once per backend and device: a sweep of 10,000 points asks nothing more. */
static const cl_occ_device *launch_device(magic_ctx *ctx, const char **source)
{
    static cl_occ_device dev;
    static const char *dev_source;
    static const cl_backend *asked;
    static int asked_dev = -1;
    if (!dev_source || asked != ctx->backend || asked_dev != ctx->dev.index) {
        dev_source = cl_occ_device_launched(ctx->backend, ctx->dev.index, &dev);
        asked = ctx->backend;
        asked_dev = ctx->dev.index;
    }
    *source = dev_source;
    return &dev;
}

/* Why a run has no launch of ours to model, or NULL when it has one. */
static const char *not_launched(const lab_session *lab, const family_spec *f, const json_t *run,
                                const json_t *launch)
{
    int i = f ? family_index(lab, f, json_string_value(json_object_get(run, "variant"))) : -1;
    unsigned flags = i >= 0 ? family_variant(lab, f, (size_t)i)->flags : 0;
    if (flags & CL_V_LIBRARY)
        return "none shown: a library call picks its own kernels and launches";
    if (flags & CL_V_HOST)
        return "none shown: host code, no kernel launch";
    if (json_array_size(json_object_get(launch, "block")) != 3)
        return "none shown: the backend reported no launch";
    return NULL;
}

static json_t *occupancy_json(magic_ctx *ctx, const family_spec *f, const json_t *run, const json_t *launch)
{
    const char *source;
    const cl_occ_device *d = launch_device(ctx, &source);
    const char *why = not_launched(ctx->lab, f, run, launch);
    json_t *o = json_pack("{s:n, s:n, s:I, s:n, s:n, s:b, s:s, s:n}", "pct", "warps_per_sm", "max_warps_per_sm",
                          (json_int_t)(d->max_threads_sm / d->warp), "blocks_per_sm",
                          "limiter", "regs_counted", 0, "device", source, "note");
    if (why) {
        json_object_set_new(o, "note", json_string(why));
        return o;
    }
    const json_t *block = json_object_get(launch, "block");
    cl_occ_kernel k = {
        .threads = json_integer_value(json_array_get(block, 0)) * json_integer_value(json_array_get(block, 1)) *
                   json_integer_value(json_array_get(block, 2)),
        .regs = json_integer_value(json_object_get(launch, "regs_per_thread")),
        .smem = json_integer_value(json_object_get(launch, "smem_per_block")),
    };
    cl_occ_result r;
    char err[400];
    if (cl_occ_compute(d, &k, &r, err, sizeof err) != 0) {
        json_object_set_new(o, "note", json_string(err));
        return o;
    }
    json_object_set_new(o, "pct", json_real(r.occupancy_pct));
    json_object_set_new(o, "warps_per_sm", json_integer(r.warps_sm));
    json_object_set_new(o, "blocks_per_sm", json_integer(r.blocks_sm));
    json_object_set_new(o, "limiter", json_string(cl_occ_limiter_name(r.limiter)));
    json_object_set_new(o, "regs_counted", json_boolean(k.regs > 0));
    if (k.regs == 0)                /* the model's "not counted": every GPU kernel has registers */
        json_object_set_new(o, "note", json_string(
            ctx->backend && strcmp(ctx->backend->name, "cpu") == 0
                ? "registers per thread not known (the CPU backend runs analogues, not code compiled for a "
                  "GPU), so threads, block slots and shared memory decide it: an upper bound"
                : "registers per thread not reported by the backend, so threads, block slots and shared memory "
                  "decide it: an upper bound"));
    return o;
}

void sweep_add_launch(magic_ctx *ctx, const sweep_spec *s, const json_t *point, json_t *runs, size_t from)
{
    if (!json_is_true(json_object_get(point, "launch")))
        return;
    const family_spec *f = family_find(s->magic);
    for (size_t i = from; i < json_array_size(runs); i++) {
        json_t *run = json_array_get(runs, i), *launch = json_object_get(run, "launch");
        if (json_is_object(launch))
            json_object_set_new(launch, "occupancy", occupancy_json(ctx, f, run, launch));
    }
}

static const char *launch_note(const json_t *run)
{
    return json_string_value(sweep_path_get(run, "launch.occupancy.note"));
}

void sweep_launch_note(json_t *view, const json_t *runs)
{
    size_t i;
    const json_t *run;
    json_array_foreach(runs, i, run)
        if (json_is_number(sweep_path_get(run, "launch.occupancy.pct"))) {
            char note[400];
            snprintf(note, sizeof note, "occupancy: in theory, as %%occupancy computes it, from each run's "
                     "block, registers and shared memory (with what the driver reserves per block) on %s",
                     json_string_value(sweep_path_get(run, "launch.occupancy.device")));
            view_add_note(view, note);
            break;
        }
    sweep_reasons_note(view, runs, launch_note, "occupancy");
}
