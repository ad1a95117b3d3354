/* launch.c — %launch: a kernel launch that may fail, and how a program finds
 * out, as the lecture's error handling teaches it.
 *
 * A launch returns nothing: a block of too many threads, a grid too large or
 * too much shared memory makes the kernel never run, silently, unless the
 * program asks cudaGetLastError() (the lecture's CUDA_CALL macro around it).
 * The result shows each call and its answer, whether the kernel ran (how many
 * of its threads marked their element), which limit the launch broke and the
 * macro that would have caught it. A failed launch is this magic's subject,
 * not its error: the cell succeeds, and %assert can check what CUDA said.
 */
#include <stdio.h>
#include <string.h>

#include "cudalab/launch.h"
#include "magic/magic.h"
#include "magic/sweep.h"
#include "render/render.h"

/* A launch within the limits runs: past this many threads it would take seconds of the GPU. */
#define LAUNCH_MAX_THREADS (1ll << 32)

/* "2048" or "16x16x8", for the table and notes. */
static void dims_text(const unsigned d[3], char *buf, size_t len)
{
    if (d[1] == 1 && d[2] == 1)
        snprintf(buf, len, "%u", d[0]);
    else if (d[2] == 1)
        snprintf(buf, len, "%ux%u", d[0], d[1]);
    else
        snprintf(buf, len, "%ux%ux%u", d[0], d[1], d[2]);
}

static void dims_from(const json_t *v, unsigned out[3])
{
    out[0] = out[1] = out[2] = 1;
    for (size_t i = 0; i < 3 && i < json_array_size(v); i++)
        out[i] = (unsigned)json_integer_value(json_array_get(v, i));
}

/* Which of the device's limits the launch breaks, in words ("" when none). */
static void broken_limit(const cl_launch_args *a, const cl_device_props *p, char *buf, size_t len)
{
    static const char axis[] = "xyz";
    long long per_block = (long long)a->block[0] * a->block[1] * a->block[2];
    buf[0] = '\0';
    for (int d = 0; d < 3 && !buf[0]; d++) {
        if (p->max_block[d] > 0 && a->block[d] > (unsigned)p->max_block[d])
            snprintf(buf, len, "block.%c = %u is more than the %d a block may have in %c", axis[d], a->block[d],
                     p->max_block[d], axis[d]);
        else if (p->max_grid[d] > 0 && a->grid[d] > (unsigned)p->max_grid[d])
            snprintf(buf, len, "grid.%c = %u is more than the %d blocks a grid may have in %c", axis[d], a->grid[d],
                     p->max_grid[d], axis[d]);
    }
    if (!buf[0] && p->max_threads_per_block > 0 && per_block > p->max_threads_per_block)
        snprintf(buf, len, "a block of %lld threads is more than the %d a block may have", per_block,
                 p->max_threads_per_block);
    if (!buf[0] && p->smem_per_block > 0 && a->smem > p->smem_per_block)
        snprintf(buf, len, "%zu bytes of dynamic shared memory are more than the %llu a block may ask for without "
                 "opting in (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, n), up to "
                 "%llu here)", a->smem, (unsigned long long)p->smem_per_block,
                 (unsigned long long)p->smem_per_block_optin);
}

static json_t *status_json(const cl_launch_status *s)
{
    return json_pack("{s:i, s:s, s:s}", "code", s->code, "name", s->name, "text", s->text);
}

static json_t *status_cell(const cl_launch_status *s)
{
    return s->code == 0 ? json_string(s->name) : json_sprintf("%s: %s", s->name, s->text);
}

static const char cuda_call_macro[] =
    "#define CUDA_CALL(call)                                                    \\\n"
    "    do {                                                                   \\\n"
    "        cudaError_t err_ = (call);                                         \\\n"
    "        if (err_ != cudaSuccess) {                                         \\\n"
    "            fprintf(stderr, \"%s:%d: %s\\n\", __FILE__, __LINE__,            \\\n"
    "                    cudaGetErrorString(err_));                             \\\n"
    "            exit(EXIT_FAILURE);                                            \\\n"
    "        }                                                                  \\\n"
    "    } while (0)\n"
    "\n"
    "kernel<<<grid, block, smem>>>(out, n);\n"
    "CUDA_CALL(cudaGetLastError());        // the launch itself: its configuration\n"
    "CUDA_CALL(cudaDeviceSynchronize());   // the kernel's run: a fault inside it\n";

static int launch_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    (void)body;
    const cl_backend *be = ctx->backend;
    if (!be || !be->launch)
        return magic_error(ctx, "RuntimeError", "the %s backend cannot launch kernels for %%launch",
                           be ? be->name : "no");
    cl_launch_args a = { .smem = (size_t)json_integer_value(json_object_get(params, "smem")) };
    dims_from(json_object_get(params, "block"), a.block);
    dims_from(json_object_get(params, "grid"), a.grid);
    cl_device_props p = {0};
    char err[CL_ERR_LEN] = "";
    if (be->device_props(ctx->dev.index, &p, err) != 0)
        return magic_error(ctx, magic_backend_ename(ctx->backend), "%%launch: the device's limits: %s", err);
    char block[48], grid[48], limit[400], call[160];
    broken_limit(&a, &p, limit, sizeof limit);
    long long threads = (long long)a.block[0] * a.block[1] * a.block[2] * a.grid[0] * a.grid[1] * a.grid[2];
    if (!limit[0] && threads > LAUNCH_MAX_THREADS)
        return magic_error(ctx, "UsageError", "%%launch: %lld threads would run; it launches at most %lld (it "
                           "shows a launch's checks, not a workload)", threads, LAUNCH_MAX_THREADS);
    cl_launch_result r;
    if (be->launch->run(&a, &r, err) != 0)
        return magic_error(ctx, magic_backend_ename(be), "%%launch: %s", err);

    dims_text(a.block, block, sizeof block);
    dims_text(a.grid, grid, sizeof grid);
    snprintf(call, sizeof call, "kernel<<<%s, %s, %zu>>>(out, n)", grid, block, a.smem);
    bool ran = r.written > 0;
    json_t *doc = json_pack("{s:s, s:s, s:o, s:{s:o, s:o, s:I}, s:I, s:b, s:o, s:o, s:o, s:I, s:I, s:b, s:o, "
                            "s:{s:i, s:[i,i,i], s:[i,i,i], s:I, s:I}}",
                            "magic", "launch", "backend", be->name, "device", sweep_device_json(ctx),
                            "params", "block", json_pack("[i,i,i]", a.block[0], a.block[1], a.block[2]), "grid",
                            json_pack("[i,i,i]", a.grid[0], a.grid[1], a.grid[2]), "smem", (json_int_t)a.smem,
                            "threads", (json_int_t)threads,
                            "modelled", r.modelled, "last_error", status_json(&r.last_error), "again",
                            status_json(&r.again), "sync", status_json(&r.sync), "written", (json_int_t)r.written,
                            "expected", (json_int_t)r.expected, "ran", ran, "broken_limit",
                            limit[0] ? json_string(limit) : json_null(), "limits", "max_threads_per_block",
                            p.max_threads_per_block, "max_block", p.max_block[0], p.max_block[1], p.max_block[2],
                            "max_grid", p.max_grid[0], p.max_grid[1], p.max_grid[2], "smem_per_block",
                            (json_int_t)p.smem_per_block, "smem_per_block_optin", (json_int_t)p.smem_per_block_optin);

    char title[400];
    const char *dev = json_string_value(json_object_get(json_object_get(doc, "device"), "name"));
    snprintf(title, sizeof title, "A kernel launch, checked call by call, on %s", dev ? dev : "?");
    json_t *view = view_new(title);
    if (r.modelled)
        view_add_note(view, "CPU backend: no launch; the checks CUDA makes before one, against the GPU model's "
                            "limits (%device), with CUDA's own error names");
    json_t *rows = json_array();
    json_array_append_new(rows, json_pack("[s, s, s]", "1", call, "nothing: a launch returns no status"));
    json_array_append_new(rows, json_pack("[s, s, o]", "2", "cudaGetLastError()", status_cell(&r.last_error)));
    json_array_append_new(rows, json_pack("[s, s, o]", "3", "cudaGetLastError(), again",
                                          status_cell(&r.again)));
    json_array_append_new(rows, json_pack("[s, s, o]", "4", "cudaDeviceSynchronize()", status_cell(&r.sync)));
    json_array_append_new(rows, json_pack("[s, s, o]", "5", "threads that marked their out[i]",
                                          json_sprintf("%lld of %lld%s", r.written, r.expected,
                                                       ran ? "" : ": the kernel never ran")));
    json_t *table = view_add_table(view, NULL, json_pack("[s, s, s]", "step", "call", "returns"));
    json_object_set_new(table, "rows", rows);
    if (r.last_error.code != 0) {
        char note[900];
        snprintf(note, sizeof note, "the launch failed%s%s, and nothing said so until cudaGetLastError() was asked; "
                 "asking cleared the error (step 3), so a program that asks once, right after each launch, sees "
                 "it and nothing else does", limit[0] ? ": " : "", limit);
        view_add_note(view, note);
    } else {
        view_add_note(view, "the launch is within the device's limits: the kernel ran. Try --block 2048, "
                            "--grid 1x70000 or --smem 65536 to see a launch fail");
    }
    view_add_note(view, "the lecture's macro, around every CUDA call and after every launch:");
    json_array_append_new(json_object_get(view, "blocks"), json_pack("{s:s, s:s, s:s}", "type", "code",
                                                                     "language", "cuda", "text", cuda_call_macro));
    magic_result(ctx, doc, view);
    return 0;
}

static const flag_spec launch_flags[] = {
    {.name = "block", .short_name = 'b', .type = FLAG_DIMS, .def = "256", .imin = 1, .imax = INT32_MAX,
     .help = "threads per block, x first (256, 32x32, 8x8x8): past the device's limits on purpose to see "
             "the launch fail"},
    {.name = "grid", .short_name = 'g', .type = FLAG_DIMS, .def = "1", .imin = 1, .imax = INT32_MAX,
     .help = "blocks in the grid, x first (1, 1x70000)"},
    {.name = "smem", .type = FLAG_INT, .def = "0", .imin = 0, .imax = INT32_MAX,
     .help = "dynamic shared memory per block, bytes (past the 48 KiB a block gets without opting in: "
             "the launch fails)"},
    {.name = NULL},
};

static const char *const launch_examples[] = {
    "%launch --block 2048",
    "%launch --block 32x32x2",
    "%launch --grid 1x70000",
    "%launch --block 256 --smem 65536",
    "%launch --block 1024",
    NULL,
};

const magic_spec magic_launch = {
    .name = "launch",
    .summary = "A kernel launch that may fail, checked call by call (the lecture's CUDA_CALL)",
    .description =
        "Launches a small kernel, each of whose threads marks one element of out[], with --block, "
        "--grid and --smem as given, then asks cudaGetLastError() twice and cudaDeviceSynchronize(), "
        "and counts the elements marked. A launch returns nothing: a block of more than 1024 threads, a "
        "grid past its limits or too much shared memory makes the kernel never run, and only "
        "cudaGetLastError() says so (reading it clears it). The result shows each call's answer, whether "
        "the kernel ran, the limit the launch broke, and the lecture's CUDA_CALL macro. A failed launch "
        "is what the magic shows: the cell succeeds, and %assert can check it "
        "(launch.last_error.name == \"cudaErrorInvalidValue\": CUDA 13 reports every launch past a "
        "limit so). On the CPU backend nothing is launched: the checks CUDA makes are made against the "
        "GPU model's limits.",
    .flags = launch_flags,
    .mode = MAGIC_LINE,
    .where = MAGIC_WORKER,
    .run = launch_run,
    .examples = launch_examples,
};
