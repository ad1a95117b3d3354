/* sweep_counters.c — --counters in a run's document and in the sweep's table.
 *
 * The backend counts one more, untimed run of each variant (cl_backend.set_counters, counters:
 * CUPTI on a GPU, the CPU runner's simulation of a student's kernel without one); this file writes
 * what it counted under the result document's stable names (CL_COUNTERS in cudalab/backend.h),
 * with its source ("hardware (...)" or "simulation (...)", a simulation's model beside it as
 * "note"), or "unavailable" with the reason, and gives the table its columns. A family adds its
 * own columns that set a model beside a count (matmul: the lecture's global loads beside the DRAM
 * bytes) with sweep_column.counted.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "magic/check.h"
#include "cudalab/simt.h"
#include "render/render.h"
#include "magic/sweep.h"
#include "magic/sweep_internal.h"

const sweep_column sweep_counter_columns[] = {
    {.path = "counters.dram_read_bytes", .header = "DRAM read MB", .scale = 1e6, .only_with = "counters.dram_read_bytes"},
    {.path = "counters.dram_write_bytes", .header = "DRAM write MB", .scale = 1e6, .only_with = "counters.dram_write_bytes"},
    {.path = "counters.l2_hit_pct", .header = "L2 hit %", .only_with = "counters.l2_hit_pct"},
    {.path = "counters.l1_hit_pct", .header = "L1 hit %", .only_with = "counters.l1_hit_pct"},
    {.path = "counters.achieved_occupancy_pct", .header = "occupancy %", .only_with = "counters.achieved_occupancy_pct"},
    {.path = "counters.global_load_sectors_per_request", .header = "sectors/load", .only_with = "counters.global_load_sectors_per_request"},
    {.path = "counters.shared_bank_conflicts", .header = "bank conflicts", .only_with = "counters.shared_bank_conflicts"},
    {.path = "counters.warp_execution_efficiency_pct", .header = "warp eff %", .only_with = "counters.warp_execution_efficiency_pct"},
    {.path = NULL},
};

/* How a count's source begins: read from a GPU's counters, or simulated (the CPU runner). */
#define HARDWARE "hardware"
#define SIMULATED "simulation"

static json_t *unavailable(const char *why)
{
    char text[320];
    snprintf(text, sizeof text, "unavailable: %s", why);
    return json_pack("{s:s}", "source", text);
}

void sweep_add_counters(magic_ctx *ctx, json_t *run)
{
    if (!ctx->counters)
        return;
    const char *ran = json_string_value(json_object_get(run, "backend"));
    cl_counters c;
    json_t *j;
    if (!ctx->backend || (ran && strcmp(ran, ctx->backend->name) != 0))
        j = unavailable("host code, run by the CPU: no GPU counters");
    else if (!ctx->backend->counters)
        j = unavailable("the CPU backend has no hardware counters (run on a GPU)");
    else if (ctx->backend->counters(&c) != 0)
        j = unavailable("the backend was not asked to count this run");
    else if (!c.measured)
        j = unavailable(c.unavailable);
    else {
        j = json_pack("{s:s, s:i}", "source", c.source, "passes", c.passes);
#define CL_COUNTER_JSON_(name) json_object_set_new(j, #name, json_real_or_null(c.name));
        CL_COUNTERS(CL_COUNTER_JSON_)
#undef CL_COUNTER_JSON_
        double dram = c.dram_read_bytes + c.dram_write_bytes;
        json_object_set_new(j, "flop_per_dram_byte", json_real_or_null(dram > 0 ? c.flop / dram : NAN));
        if (strncmp(c.source, SIMULATED, strlen(SIMULATED)) == 0)
            json_object_set_new(j, "note", json_string(CL_SIMT_COUNTS_MODEL));
    }
    json_object_set_new(run, "counters", j);
}

/* Whether any run has counts (not only "unavailable") from a source that begins with how. */
static bool sweep_counted(const json_t *runs, const char *how)
{
    size_t i;
    const json_t *run;
    json_array_foreach(runs, i, run) {
        const json_t *c = json_object_get(run, "counters");
        const char *src = json_string_value(json_object_get(c, "source"));
        if (json_is_number(json_object_get(c, "passes")) && src && strncmp(src, how, strlen(how)) == 0)
            return true;
    }
    return false;
}

static const char *unavailable_reason(const json_t *run)
{
    const char *src = json_string_value(json_object_get(json_object_get(run, "counters"), "source"));
    return src && strncmp(src, "unavailable: ", 13) == 0 ? src + 13 : NULL;
}

void sweep_counters_note(json_t *view, const json_t *runs)
{
    sweep_reasons_note(view, runs, unavailable_reason, "counters unavailable");
    if (sweep_counted(runs, HARDWARE))
        view_add_note(view, "counters: each variant run again, untimed, under the GPU's performance counters "
                      "(CUPTI: one run per pass the counters need, each from a flushed L2 as a timed run)");
    if (sweep_counted(runs, SIMULATED))
        view_add_note(view, "counters: each kernel run again, untimed, " CL_SIMT_COUNTS_MODEL);
}
