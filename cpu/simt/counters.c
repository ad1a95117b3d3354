/* counters.c — --counters on the CPU backend: a student's kernel counted by the CPU runner.
 *
 * A CPU has no counters of a GPU's memory system, but the runner sees every access of a student's
 * kernel (a %%kernel cell, a variant broken on purpose), so the run that --counters adds is a
 * launch that also groups them into warp-wide requests (cpu/simt/runtime/count.c); this file keeps
 * the current run's account and gives its counts the names the hardware's have (CL_COUNTERS), with
 * the source "simulation (CPU runner)". What the simulation does not model (caches' hit rates,
 * occupancy, FLOPs) stays NaN: null in the document, "-" in the table. The CPU analogues of the
 * built-in variants run no kernel the runner could watch: their runs say so.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "simt_launch.h"

#define SOURCE "simulation (CPU runner)"
#define NOT_RUN "the CPU backend has no hardware counters, and simulates them only for kernels on its " \
                "CPU runner (a %%kernel cell's, a broken variant's): not for its analogue of this variant " \
                "(run on a GPU)"

static bool wanted;
static bool lesson_only;            /* cl_cpu_lesson_mode: the counted launch is a run's only one */
static bool tried;                  /* the current run made its counted launch */
static cl_counters current;
static bool lesson_taken;           /* the current run's counted launch ran to its end: */
static cl_simt_lesson_taken lesson; /* what it saw for the lesson checks */

static void new_run(void)
{
    memset(&current, 0, sizeof current);
    snprintf(current.unavailable, sizeof current.unavailable, "%s", NOT_RUN);
    tried = false;
}

void cl_cpu_set_counters(int on)
{
    wanted = on != 0;
    if (wanted)
        lesson_taken = false;       /* kept past the run (its counters' read, their end), until the next */
    new_run();
}

int cl_cpu_counters(cl_counters *out)
{
    if (!wanted)
        return -1;
    *out = current;
    new_run();
    return 0;
}

bool simt_counters_due(void)
{
    return wanted && !tried;
}

void simt_counters_took(const simt_arena *a)
{
    const cl_simt_launch *h = a->hdr;
    tried = true;
    simt_counters_of(&h->report.counts, &current);
    memset(&lesson, 0, sizeof lesson);
    lesson.lesson = h->report.lesson;
    memcpy(lesson.site_line, a->site_line, sizeof lesson.site_line);
    lesson.worst_line = a->site_line[CL_SIMT_MAX_SITES];
    lesson.lost_line = a->site_line[CL_SIMT_MAX_SITES + 1];
    memcpy(lesson.grid, h->grid, sizeof lesson.grid);
    memcpy(lesson.block, h->block, sizeof lesson.block);
    lesson.nbuffers = h->nbuffers;
    memcpy(lesson.buffers, h->buffers, sizeof lesson.buffers);
    lesson_taken = true;
}

void cl_cpu_lesson_mode(int on)
{
    lesson_only = on != 0;
    if (lesson_only)
        lesson_taken = false;
}

bool simt_lesson_mode(void)
{
    return lesson_only && simt_counters_due();
}

int cl_cpu_lesson_taken(cl_simt_lesson_taken *out)
{
    if (!lesson_taken)
        return -1;
    *out = lesson;
    return 0;
}

void simt_counters_failed(const char *err)
{
    tried = true;
    lesson_taken = false;
    snprintf(current.unavailable, sizeof current.unavailable, "the counted launch on the CPU runner failed: %s",
             err);
}

static double ratio(uint64_t num, uint64_t den)
{
    return den ? (double)num / (double)den : NAN;
}

void simt_counters_of(const cl_simt_counts *c, cl_counters *out)
{
    memset(out, 0, sizeof *out);
    out->measured = 1;
    out->passes = 1;
    if (c->uncounted)
        snprintf(out->source, sizeof out->source, "simulation (CPU runner; truncated: %llu accesses not counted)",
                 (unsigned long long)c->uncounted);
    else
        snprintf(out->source, sizeof out->source, SOURCE);
    out->dram_read_bytes = (double)c->read_sectors * CL_SIMT_SECTOR_BYTES;
    out->dram_write_bytes = (double)c->written_sectors * CL_SIMT_SECTOR_BYTES;
    out->l2_hit_pct = out->l1_hit_pct = out->achieved_occupancy_pct = out->flop = NAN;
    out->shared_bank_conflicts = (double)c->bank_conflicts;
    out->global_load_sectors_per_request = ratio(c->global_load_sectors, c->global_loads);
    out->warp_execution_efficiency_pct = 100 * ratio(c->active_lanes, CL_CPU_MODEL_WARP * c->requests);
}
