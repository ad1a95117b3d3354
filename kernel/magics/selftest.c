/* selftest.c — %selftest: deliberate misbehaviour for the robustness tests.
 *
 * Long GPU kernels, sleeps that ignore cancellation, segfaults, aborts, sticky
 * CUDA errors and output floods, so the tests can show that each one ends the
 * cell with a clear error and that the next cell works. It is registered only
 * when CUDALAB_TESTING=1 (registry.c), so no notebook reaches it by accident.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "magic/magic.h"
#include "render/render.h"

static const flag_spec selftest_flags[] = {
    {.name = "spin", .type = FLAG_INT, .imin = 0, .imax = 600000,
     .help = "run one kernel (CPU: a busy loop) for about this many ms"},
    {.name = "sleep", .type = FLAG_INT, .imin = 0, .imax = 600000,
     .help = "sleep this many ms, ignoring cancellation (only a kill stops it)"},
    {.name = "fault", .type = FLAG_BOOL, .help = "launch a kernel that writes out of bounds"},
    {.name = "segfault", .type = FLAG_BOOL, .help = "crash the worker with SIGSEGV"},
    {.name = "abort", .type = FLAG_BOOL, .help = "crash the worker with abort()"},
    {.name = "exit", .type = FLAG_INT, .imin = 0, .imax = 255, .help = "exit the worker with this status"},
    {.name = "flood", .type = FLAG_INT, .imin = 0, .imax = 1LL << 30,
     .help = "write this many bytes to the stdout stream"},
    {.name = "stall-host", .type = FLAG_INT, .imin = 1, .imax = 10000,
     .help = "time one tiny kernel, the host asleep this many ms between starting the clock and launching it"},
    {.name = "rows", .type = FLAG_INT, .imin = 0, .imax = 1000000, .help = "return a table of this many rows"},
    {.name = NULL},
};

static long long get(const json_t *params, const char *key)
{
    const json_t *v = json_object_get(params, key);
    return json_is_integer(v) ? json_integer_value(v) : -1;
}

static void flood(magic_ctx *ctx, long long bytes)
{
    char line[1024];
    memset(line, 'x', sizeof line - 2);
    line[sizeof line - 2] = '\n';
    line[sizeof line - 1] = '\0';
    for (; bytes > 0; bytes -= (long long)sizeof line - 1) {
        if (bytes < (long long)sizeof line - 1)
            line[bytes] = '\0';
        magic_stream(ctx, "stdout", line);
    }
}

static void rows_result(magic_ctx *ctx, long long n)
{
    json_t *doc = json_pack("{s:s, s:o}", "magic", "selftest", "rows", json_array());
    json_t *view = view_new("selftest rows");
    json_t *table = view_add_table(view, NULL, json_pack("[s, s]", "i", "square"));
    for (long long i = 0; i < n; i++) {
        json_array_append_new(json_object_get(doc, "rows"), json_integer(i));
        view_table_row(table, json_pack("[I, I]", (json_int_t)i, (json_int_t)(i * i)));
    }
    magic_result(ctx, doc, view);
}

/* The stalled rep's figure: {"stall_ms", "timed_ms", "holds_lapsed"}. */
static int stalled_rep(magic_ctx *ctx, const cl_selftest_ops *ops, long long stall_ms)
{
    char err[CL_ERR_LEN];
    float ms = 0;
    int lapsed = 0;
    if (!ops || !ops->stalled_rep)
        return magic_error(ctx, "UsageError", "the %s backend has no timing hold",
                           ctx->backend ? ctx->backend->name : "selected");
    if (ops->stalled_rep((double)stall_ms, &ms, &lapsed, err))
        return magic_error(ctx, magic_backend_ename(ctx->backend), "%s", err);
    json_t *doc = json_pack("{s:s, s:I, s:f, s:i}", "magic", "selftest", "stall_ms", (json_int_t)stall_ms,
                            "timed_ms", (double)ms, "holds_lapsed", lapsed);
    json_t *view = view_new("selftest stalled rep");
    char text[128];
    snprintf(text, sizeof text, "timed %.3f ms with the host stalled %lld ms", (double)ms, stall_ms);
    view_add_text(view, text);
    magic_result(ctx, doc, view);
    return 0;
}

static void sleep_ignoring_signals(long long ms)
{
    struct timespec left = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&left, &left) != 0)
        ;
}

static int run_selftest(magic_ctx *ctx, const json_t *params, const char *body)
{
    char err[CL_ERR_LEN];
    if (get(params, "flood") > 0)
        flood(ctx, get(params, "flood"));
    if (get(params, "rows") >= 0)
        rows_result(ctx, get(params, "rows"));
    if (get(params, "sleep") > 0)
        sleep_ignoring_signals(get(params, "sleep"));
    const cl_selftest_ops *ops = ctx->backend ? ctx->backend->selftest : NULL;
    if (get(params, "spin") > 0) {
        if (!ops)
            return magic_error(ctx, "UsageError", "the %s backend has no selftest kernels",
                               ctx->backend ? ctx->backend->name : "selected");
        if (ops->spin((double)get(params, "spin"), err))
            return magic_cancelled() ? magic_error(ctx, "KeyboardInterrupt", "spin cancelled")
                                     : magic_error(ctx, magic_backend_ename(ctx->backend), "%s", err);
    }
    if (get(params, "stall_host") > 0 && stalled_rep(ctx, ops, get(params, "stall_host")))
        return -1;
    if (json_is_true(json_object_get(params, "fault")) && ops && ops->fault(err))
        return magic_error(ctx, magic_backend_ename(ctx->backend), "%s", err);
    if (json_is_true(json_object_get(params, "segfault")))
        raise(SIGSEGV);
    if (json_is_true(json_object_get(params, "abort")))
        abort();
    if (get(params, "exit") >= 0)
        _exit((int)get(params, "exit"));
    return 0;
}

static const char *const selftest_examples[] = {
    "%selftest --spin 5000", "%selftest --sleep 3000", "%selftest --fault", "%selftest --segfault", NULL,
};

const magic_spec magic_selftest = {
    .name = "selftest",
    .summary = "Test-only: misbehave on purpose (long kernels, crashes, faults, floods)",
    .description = "Used by cudalab's own tests to show that interrupts, crashes and sticky CUDA "
                   "errors end the cell cleanly and that the next cell works. Available only when "
                   "the kernel runs with CUDALAB_TESTING=1.",
    .flags = selftest_flags,
    .mode = MAGIC_LINE,
    .where = MAGIC_WORKER,
    .run = run_selftest,
    .examples = selftest_examples,
};
