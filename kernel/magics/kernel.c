/* kernel.c — %%kernel, a student's own CUDA kernel, and %kernels, the list of them.
 *
 * %%kernel --for FAMILY --name NAME compiles the cell's body (kernel/student/)
 * in the device worker, reports what a student needs to see (registers,
 * shared memory, spills, the occupancy that follows for the block, the
 * compiler's warnings) and runs a quick check through the family's own magic
 * at a small awkward size, naming the first wrong element when it fails. The
 * kernel is then one more variant of its family. In the kernel process the
 * attach step validates the cell and forgets any previous version of the name
 * (a failed recompile never leaves the old source to run), and the settled
 * step keeps the definition once the worker compiled it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang.h"
#include "magic/check.h"
#include "magic/families.h"
#include "magic/magic.h"
#include "magic/occupancy_model.h"
#include "net/board.h"
#include "grade/results.h"
#include "student/compile.h"
#include "student/inner_run.h"
#include "student/lesson_run.h"
#include "student/nvrtc.h"
#include "student/run.h"
#include "student/sanitize.h"
#include "student/store.h"

static const flag_spec kernel_flags[] = {
    {.name = "for", .type = FLAG_STRING, .opts = FLAG_REQUIRED,
     .help = "the family the kernel belongs to (%help kernel lists them with their signatures)"},
    {.name = "name", .type = FLAG_STRING,
     .help = "the __global__ function to run, and the variant's name (default: the first __global__ "
             "function of the cell)"},
    {.name = "dim", .type = FLAG_INT, .def = "1", .imin = 1, .imax = 2,
     .help = "the kernel's shape where a family has two: 2 for a %stencil --dim 2 kernel (a 2D convolution)"},
    {.name = "bt", .type = FLAG_BOOL, .def = "false",
     .help = "for %matmul: the kernel gets B stored transposed (Bt, N×K row-major), as naive-bt and tiled-bt do"},
    {.name = "block", .type = FLAG_DIMS, .imin = 1, .imax = 1024,
     .help = "threads per block (default: the family's; with --tile on the family magic, TILE×TILE)"},
    {.name = "grid", .type = FLAG_DIMS, .imin = 1, .imax = 2147483647,
     .help = "blocks in the grid, instead of the family's launch rule"},
    {.name = "smem", .type = FLAG_INT, .imin = 0, .imax = 1 << 20, .help = "dynamic shared memory per block, bytes"},
    STUDENT_COMPILE_FLAGS,
    {.name = "check", .type = FLAG_BOOL, .def = "true",
     .help = "run the quick check at a small awkward size (--no-check skips it)"},
    {.name = "cpu-check", .type = FLAG_BOOL, .def = "true",
     .help = "also run the kernel on the CPU runner at the quick check's size (cached): the lesson checks "
             "(check.lesson) and, on a GPU, its findings (races, uninitialised shared memory, a missing "
             "barrier, out of bounds) fail the check as on the CPU; --no-cpu-check skips it, here and in "
             "the family's runs of the kernel (a live speed demo)"},
    {.name = NULL},
};

/* ---- in the kernel process ---- */

static const family_spec *family_of(magic_ctx *ctx, const json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "for"));
    const family_spec *f = name ? family_find(name) : NULL;
    if (f && f->student)
        return f;
    char have[256] = "";
    size_t at = 0, used = 0;
    for (const family_spec *g; (g = family_next_taking_kernels(&at)) && used < sizeof have;)
        used += (size_t)snprintf(have + used, sizeof have - used, "%s%s", used ? ", " : "", g->magic);
    magic_error(ctx, "UsageError", "--for %s: kernels can be written for %s", name ? name : "?", have);
    return NULL;
}

/* The kernel's name: --name, or the first __global__ function of the body. */
static int name_of(magic_ctx *ctx, const json_t *params, const char *body, char *buf, size_t len)
{
    const char *given = json_string_value(json_object_get(params, "name"));
    if (given)
        snprintf(buf, len, "%s", given);
    else
        student_first_kernel(body ? body : "", buf, len);
    if (!buf[0])
        return magic_error(ctx, "UsageError", "the cell defines no __global__ function: write the kernel "
                           "below the %%%%kernel line (%%help kernel shows each family's signature)");
    return 0;
}

static json_t *definition(const json_t *params, int body_line)
{
    json_t *o = json_deep_copy(params);
    json_object_set_new(o, "first_line", json_integer(body_line));
    return o;
}

static int kernel_attach(magic_ctx *ctx, const command *cmd, json_t **kernels)
{
    *kernels = NULL;
    char name[128];
    const family_spec *f = family_of(ctx, cmd->params);
    /* the store's limit, before the worker compiles a kernel that could not be kept */
    if (!f || name_of(ctx, cmd->params, cmd->body, name, sizeof name) != 0 ||
        student_name_ok(ctx, f, name) != 0 || student_room(ctx, name) != 0)
        return -1;
    student_drop(ctx->lab, name);   /* until this version compiles, the name runs nothing */
    return 0;
}

/* The class view (CUDALAB_CLASS_VIEW=1): the quick check's summary posted to the board, on a thread
 * of its own (board_post_quickcheck); the cell neither waits for it nor fails with it. The exercise is
 * the kernel's family. Compiled: its result is the session's newest document of this kernel. */
static void class_view_post(magic_ctx *ctx, const command *cmd, bool compiled)
{
    char name[128];
    magic_ctx quiet = {.lab = ctx->lab};     /* a name the cell already refused is not the view's */
    const family_spec *f = board_class_view_on() ? family_of(&quiet, cmd->params) : NULL;
    if (!f || name_of(&quiet, cmd->params, cmd->body, name, sizeof name) != 0)
        return;
    json_t *summary = NULL;
    for (size_t i = 0; compiled && ctx->grading.results && i < 4 && !summary; i++) {
        const json_t *doc = results_get(ctx->grading.results, i, NULL);
        const char *magic = json_string_value(json_object_get(doc, "magic"));
        const char *dn = json_string_value(json_object_get(doc, "name"));
        if (magic && strcmp(magic, "kernel") == 0 && dn && strcmp(dn, name) == 0)
            summary = board_quickcheck_summary(doc, f->magic);
    }
    if (!summary)
        summary = json_pack("{s:s, s:s, s:b, s:b, s:{}, s:n, s:[]}", "exercise", f->magic, "name", name, "compiled",
                            compiled, "passed", 0, "lesson", "time_ms", "findings");
    json_decref(quiet.traceback);
    board_post_quickcheck(summary);
}

static int kernel_settled(magic_ctx *ctx, const command *cmd, const char *ename)
{
    /* compiled: kept even when its quick check failed or faulted (on a GPU, or
     * found wrong by the CPU runner: KernelError), so that the student can run
     * and debug it */
    bool compiled = !ename || strcmp(ename, "CheckError") == 0 || strcmp(ename, "CudaError") == 0 ||
                    strcmp(ename, "TimeoutError") == 0 || strcmp(ename, "KernelError") == 0;
    char name[128];
    if (!compiled) {
        class_view_post(ctx, cmd, false);
        return 0;
    }
    class_view_post(ctx, cmd, true);
    const family_spec *f = family_of(ctx, cmd->params);
    if (!f || name_of(ctx, cmd->params, cmd->body, name, sizeof name) != 0)
        return -1;
    json_t *def = definition(cmd->params, cmd->body_line);
    int rc = student_define(ctx, f, name, cmd->body, def);
    json_decref(def);
    return rc;
}

/* ---- in the worker ---- */

/* The resource report: the kernel compiled for this device (or sm_90). */
static json_t *report_rows(const student_build *b, const cl_occ_result *occ, const int block[3], bool modelled)
{
    json_t *rows = json_array();
    json_array_append_new(rows, json_pack("[s, s]", "compiled for", b->arch));
    json_array_append_new(rows, json_pack("[s, o]", "registers per thread", json_sprintf("%d", b->res.registers)));
    json_array_append_new(rows, json_pack("[s, o]", "static shared memory",
                                          json_sprintf("%d bytes per block", b->res.static_smem)));
    json_array_append_new(rows, json_pack("[s, o]", "spills", json_sprintf("%d bytes stored, %d bytes loaded%s",
                                                                          b->res.spill_stores, b->res.spill_loads,
                                                                          b->res.spill_stores || b->res.spill_loads
                                                                              ? " (registers spilled to local memory)"
                                                                              : "")));
    json_array_append_new(rows, json_pack("[s, o]", "stack frame", json_sprintf("%d bytes per thread", b->res.stack)));
    json_array_append_new(rows, json_pack("[s, o]", "block", json_sprintf("%d×%d×%d", block[0], block[1], block[2])));
    if (occ)
        json_array_append_new(rows, json_pack("[s, o]", modelled ? "occupancy (modelled on H100 limits)" : "occupancy",
                                              json_sprintf("%.0f%% (%lld blocks per SM, limited by %s)",
                                                           occ->occupancy_pct, (long long)occ->blocks_sm,
                                                           cl_occ_limiter_name(occ->limiter))));
    json_array_append_new(rows, json_pack("[s, o]", "compile", json_sprintf("%.1f ms%s", b->ms,
                                                                           b->cached ? " (cached)" : "")));
    return rows;
}

/* head, then each line of lines, one per line, as a JSON string. */
static json_t *joined(const char *head, const json_t *lines)
{
    size_t n = strlen(head) + 1, i;
    json_t *l;
    json_array_foreach(lines, i, l)
        n += strlen(json_string_value(l)) + 1;
    char *buf = malloc(n), *p = buf;
    if (!buf)
        return json_string(head);
    p += sprintf(p, "%s", head);
    json_array_foreach(lines, i, l)
        p += sprintf(p, "\n%s", json_string_value(l));
    json_t *s = json_string(buf);
    free(buf);
    return s;
}

/* The lesson checks in words: one line each, the failures' why after them. */
static json_t *lesson_lines(const json_t *lesson)
{
    json_t *lines = json_array();
    const char *name;
    json_t *c;
    json_object_foreach((json_t *)lesson, name, c) {
        bool passed = json_is_true(json_object_get(c, "passed"));
        json_array_append_new(lines, json_sprintf("  %s: %.4g (the lesson's kernel: %.4g) %s%s%s", name,
                                                  json_number_value(json_object_get(c, "value")),
                                                  json_number_value(json_object_get(c, "expected")),
                                                  passed ? "passed" : "FAILED", passed ? "" : ": ",
                                                  passed ? "" : json_string_value(json_object_get(c, "why"))));
    }
    json_t *text = joined("the lesson checks (check.lesson, measured on the CPU runner at the quick check's size):",
                          lines);
    json_decref(lines);
    return text;
}

static json_t *occupancy_json(const cl_occ_result *r, const char *device)
{
    return json_pack("{s:f, s:I, s:s, s:I, s:s}", "pct", r->occupancy_pct, "blocks_per_sm", (json_int_t)r->blocks_sm,
                     "limiter", cl_occ_limiter_name(r->limiter), "warps_per_sm", (json_int_t)r->warps_sm,
                     "device", device);
}

/* Runs the family's magic on the kernel at the family's quick size. *check is
 * the run's check (new reference) or NULL; 0, or -1 with the error in ctx (a
 * failed check is not an error here). */
static int quick_check(magic_ctx *ctx, const student_def *d, json_t **check, char *what, size_t wlen)
{
    *check = NULL;
    char line[512];
    snprintf(line, sizeof line, "%%%s %s --variant %s --reps 1 --warmup 0", d->family->magic, d->quick, d->name);
    snprintf(what, wlen, "%s", line);
    inner_run r;
    if (inner_run_line(ctx, ctx->backend, line, true, &r) != 0)
        return -1;
    json_t *run = json_array_get(json_object_get(r.doc, "runs"), 0);
    if (run)
        *check = json_incref(json_object_get(run, "check"));
    /* a failed check is the check's answer; any other error (or a CheckError
     * with no run to show, such as writes outside C) is the cell's */
    if (r.rc != 0 && (!*check || strcmp(r.error.ename, "CheckError") != 0)) {
        json_decref(*check);
        *check = NULL;
        ctx->error = r.error;
        ctx->traceback = json_incref(r.traceback);
        inner_run_free(&r);
        return -1;
    }
    inner_run_free(&r);
    return 0;
}

static int kernel_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    char name[128];
    const family_spec *f = family_of(ctx, params);
    if (!f || name_of(ctx, params, body, name, sizeof name) != 0)
        return -1;
    json_t *def_opts = definition(params, ctx->body_line > 0 ? ctx->body_line : 2);
    int rc = student_define(ctx, f, name, body ? body : "", def_opts);
    json_decref(def_opts);
    if (rc != 0)
        return -1;
    const student_def *d = student_find(ctx->lab, name);
    bool modelled;
    student_target_cc(ctx->backend, ctx->dev.index, &modelled);
    student_launch sl;
    json_t *no_point = json_object();
    rc = student_prepare(ctx, d, no_point, 0, &sl);
    json_decref(no_point);
    if (rc != 0)
        return -1;
    /* occupancy for the block the kernel runs with by default */
    cl_occ_device dev;
    const char *dev_source = cl_occ_device_of(ctx->backend, ctx->dev.index, &dev);
    cl_occ_kernel k = { (int64_t)sl.kernel.block[0] * sl.kernel.block[1] * sl.kernel.block[2], sl.build.res.registers,
                        (int64_t)sl.build.res.static_smem + (int64_t)sl.kernel.dyn_smem };
    cl_occ_result occ;
    char occ_err[256] = "";
    bool occ_ok = cl_occ_compute(&dev, &k, &occ, occ_err, sizeof occ_err) == 0;

    json_t *check = NULL, *fault_tb = NULL;
    error_info fault = {0};
    char quick[600] = "", skipped[400] = "";
    if (!json_is_true(json_object_get(params, "check"))) {
        snprintf(skipped, sizeof skipped, "skipped (--no-check)");
    } else if (!family_runs_student(f, ctx->backend)) {
        snprintf(skipped, sizeof skipped, "not run: your kernels run on a GPU, and this worker runs on the %s "
                 "backend%s%s", ctx->backend->name, ctx->dev.note && *ctx->dev.note ? ": " : "",
                 ctx->dev.note ? ctx->dev.note : "");
    } else if (quick_check(ctx, d, &check, quick, sizeof quick) != 0) {
        /* a fault or the launch limit: the compile report still shows, then the error */
        fault = ctx->error;
        fault_tb = ctx->traceback;
        error_clear(&ctx->error);
        ctx->traceback = NULL;
        check = check_new(false, "quick check", -1);
        json_object_set_new(check, "error", json_sprintf("%s: %s", fault.ename, fault.evalue));
        /* the CPU runner's findings (the run's own on the CPU backend, the lesson run's on a GPU), and
         * what the lesson run could still count (a race's lost updates) */
        lesson_result lr;
        if (strcmp(fault.ename, "KernelError") == 0)
            check_cpu_runner(check, fault.ename, fault.evalue, fault_tb);
        if (!student_cpu_check_off(d, NULL) && student_lesson(ctx, d, NULL, &lr) == 0) {
            if (lr.lesson)
                json_object_set(check, "lesson", lr.lesson);
            lesson_result_free(&lr);
        }
        error_clear(&ctx->error);
    }
    /* a kernel with __shared__ gets racecheck once per build: a missing
     * __syncthreads() often passes the check by luck */
    json_t *race = NULL;
    if (check && !fault.ename[0] && !getenv(SANITIZE_ENV))
        /* on the CPU runner every shared access of every thread was checked for races in the quick check
         * itself (a race fails it, with the lines): a passed check is a passed racecheck */
        race = sl.kernel.host_runner
                   ? json_pack("{s:s, s:s, s:[]}", "tool", "cpu-runner", "status", "passed", "findings")
                   : student_racecheck_cached(d, sl.build.key);
    if (race)
        check_tool(check, json_string_value(json_object_get(race, "tool")), race);
    json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:s}", "magic", "kernel", "name", name, "for",
                            f->magic, "source", "student", "source_hash", d->hash, "arch", sl.build.arch,
                            "modelled", modelled, "nvrtc", nvrtc_version());
    if (f->student_2d)
        json_object_set_new(doc, "dim", json_integer(d->dim));
    if (f->student_bt)
        json_object_set_new(doc, "bt", json_boolean(d->contract == f->student_bt));
    json_object_set_new(doc, "compile", json_pack("{s:O, s:f, s:b}", "options", sl.build.options, "ms", sl.build.ms,
                                                  "cached", sl.build.cached));
    json_object_set_new(doc, "warnings", json_incref(sl.build.warnings));
    if (sl.kernel.host_runner)
        json_object_set_new(doc, "runner", student_runner_json(&sl));
    json_object_set_new(doc, "resources", student_resources_json(&sl.build.res));
    json_object_set_new(doc, "block", json_pack("[i, i, i]", sl.kernel.block[0], sl.kernel.block[1], sl.kernel.block[2]));
    json_object_set_new(doc, "occupancy", occ_ok ? occupancy_json(&occ, dev_source) : json_null());
    json_object_set_new(doc, "check", check ? json_incref(check)
                                            : check_skipped(skipped));
    json_object_set_new(doc, "quick_check", quick[0] ? json_string(quick) : json_null());

    json_t *blocks = json_array();
    char title[200];
    snprintf(title, sizeof title, "%s: your kernel for %%%s", name, f->magic);
    json_array_append_new(blocks, json_pack("{s:s, s:o}", "type", "table", "rows",
                                            report_rows(&sl.build, occ_ok ? &occ : NULL, sl.kernel.block, modelled)));
    if (!occ_ok)
        json_array_append_new(blocks, json_pack("{s:s, s:s}", "type", "note", "text", occ_err));
    if (json_array_size(sl.build.warnings) > 0)
        json_array_append_new(blocks, json_pack("{s:s, s:o}", "type", "text", "text",
                                                joined("compiler warnings:", sl.build.warnings)));
    bool failed = check && json_is_false(json_object_get(check, "passed"));
    const char *first = json_string_value(json_object_get(check, "first_wrong"));
    if (fault.ename[0])
        first = json_string_value(json_object_get(check, "error"));
    const char *race_status = json_string_value(json_object_get(race, "status"));
    if (race) {
        bool unavailable = strcmp(race_status, "unavailable") == 0;
        json_t *lines = unavailable ? json_pack("[O]", json_object_get(race, "reason"))
                                    : json_incref(json_object_get(race, "findings"));
        bool runner = strcmp(json_string_value(json_object_get(race, "tool")), "cpu-runner") == 0;
        const char *head = unavailable ? "racecheck unavailable:"
                         : runner ? "the CPU runner: no race in shared or global memory (every access of every "
                                    "thread checked at the quick check's size)"
                         : strcmp(race_status, "failed") == 0
                               ? "racecheck (compute-sanitizer) found a race in shared memory:"
                               : "racecheck (compute-sanitizer): no race in shared memory";
        json_array_append_new(blocks, json_pack("{s:s, s:o}", "type", "text", "text", joined(head, lines)));
        json_decref(lines);
    }
    json_t *lesson = json_object_get(check, "lesson");
    if (json_object_size(lesson) > 0)
        json_array_append_new(blocks, json_pack("{s:s, s:o}", "type", "text", "text", lesson_lines(lesson)));
    json_array_append_new(blocks, json_pack("{s:s, s:o}", "type", "note", "text",
                                            check ? json_sprintf("quick check (%s): %s%s%s", quick,
                                                                 failed ? "FAILED" : "passed",
                                                                 first ? ": " : "", first ? first : "")
                                                  : json_sprintf("quick check %s", skipped)));
    json_array_append_new(blocks, json_pack("{s:s, s:o}", "type", "note", "text",
                                            json_sprintf("run it: %%%s --variant %s (%%help kernel: signatures "
                                                         "and launch rules)", f->magic, name)));
    json_t *view = json_pack("{s:s, s:o}", "title", title, "blocks", blocks);
    student_launch_free(&sl);
    magic_result(ctx, doc, view);
    if (fault.ename[0]) {
        ctx->error = fault;
        ctx->traceback = fault_tb;
        rc = -1;
    } else if (failed)
        rc = magic_error(ctx, "CheckError", "%s computes a wrong result at %s: %s", name, quick,
                         first ? first : "see the check above");
    else if (race_status && strcmp(race_status, "failed") == 0)
        rc = magic_error(ctx, "CheckError", "%s passes the check at %s, but racecheck found a race in shared "
                         "memory (above): a __syncthreads() missing between a write and the reads of other "
                         "threads?", name, quick);
    json_decref(check);
    return rc;
}

static const char *const kernel_examples[] = {
    "%%kernel --for matmul --name mytiled",
    "%%kernel --for matmul --name mykernel --block 32x8 -D UNROLL=4 --maxrregcount 64",
    NULL,
};

const magic_spec magic_kernel = {
    .name = "kernel",
    .summary = "Compile your own CUDA kernel; it becomes one more variant of its family",
    .description =
        "The cell's body is CUDA C with a __global__ function of the family's signature (below). It is "
        "compiled with NVRTC to machine code for this GPU (sm_90 where there is none), with -lineinfo; "
        "compile errors and warnings quote the compiler with the cell's own line numbers. On success the "
        "cell shows registers per thread, shared memory, spills and the occupancy that follows for the "
        "block, then runs a quick check at a small awkward size through the family's magic and names the "
        "first wrong element when the result is wrong.\n\n"
        "The kernel is then a variant of its family: %matmul --variant naive,tiled,NAME uses the same "
        "seeded inputs, check, timing and table. Flags on the family's magic override the %%kernel line's "
        "per run (--block, -D, --maxrregcount, --opt-level, --fast-math, --grid, --smem); a list sweeps. "
        "A kernel that uses TILE gets -D TILE=T and a T×T block from --tile. A kernel running longer than "
        "CUDALAB_KERNEL_TIMEOUT seconds (5 by default) is abandoned and the worker restarts. Builds are "
        "cached (CUDALAB_CACHE_DIR, else ~/.cache/cudalab/kernels): re-running a notebook compiles nothing. "
        "NVRTC has no host headers: printf, assert and the CUDA math functions need no #include.",
    .flags = kernel_flags,
    .mode = MAGIC_CELL,
    .where = MAGIC_WORKER,
    .run = kernel_run,
    .examples = kernel_examples,
    .attach = kernel_attach,
    .settled = kernel_settled,
};

/* ---- %kernels ---- */

static int kernels_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    json_t *list = json_array(), *rows = json_array();
    for (size_t i = 0; i < student_count(ctx->lab); i++) {
        const student_def *d = student_at(ctx->lab, i);
        json_array_append_new(list, json_pack("{s:s, s:s, s:i, s:s, s:b}", "name", d->name, "for", d->family->magic,
                                              "dim", d->dim, "source_hash", d->hash, "tiled", d->tiled));
        json_t *family = d->dim == 2 ? json_sprintf("%s (2D)", d->family->magic) : json_string(d->family->magic);
        json_array_append_new(rows, json_pack("[s, o, o, s]", d->name, family, json_sprintf("%.12s", d->hash),
                                              d->tiled ? "yes" : "no"));
    }
    json_t *doc = json_pack("{s:s, s:o}", "magic", "kernels", "kernels", list);
    json_t *blocks = json_array();
    if (json_array_size(rows) > 0)
        json_array_append_new(blocks, json_pack("{s:s, s:[s, s, s, s], s:o}", "type", "table", "columns", "name",
                                                "for", "source sha256", "uses TILE", "rows", rows));
    else
        json_decref(rows);
    json_array_append_new(blocks, json_pack("{s:s, s:s}", "type", "note", "text",
                                            json_array_size(list) ? "each runs as --variant NAME of its family"
                                                                  : "no kernels yet: write one in a %%kernel cell"));
    magic_result(ctx, doc, json_pack("{s:s, s:o}", "title", "Your kernels", "blocks", blocks));
    return 0;
}

const magic_spec magic_kernels = {
    .name = "kernels",
    .summary = "List the kernels this session's %%kernel cells defined",
    .description = "Each kernel with its family, the hash of its source and whether it uses TILE. They "
                   "last as long as the session (a restarted worker keeps them).",
    .flags = (const flag_spec[]){{.name = NULL}},
    .mode = MAGIC_LINE,
    .where = MAGIC_LOCAL,
    .run = kernels_run,
};
