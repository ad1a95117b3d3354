/* sharing.c — waiting for a GPU, timed-run turns, and the live lines that say so (see sharing.h). */
#include "exec/sharing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "exec/admission.h"
#include "exec/backend_load.h"
#include "exec/run_progress.h"
#include "render/render.h"

/* ---- waiting, said live on the cell ---- */

/* A line on the cell while a command waits (for a context or a timed turn):
 * a display that the queue's moves update, and that says at the end what
 * the wait cost. */
typedef struct wait_line {
    char id[80];
    bool shown;
    double shown_ms;
} wait_line;

static void wait_line_init(wait_line *w)
{
    static unsigned long waits;
    w->shown = false;
    w->shown_ms = 0;
    snprintf(w->id, sizeof w->id, "cudalab-wait-%d-%lu-%.0f", (int)getpid(), ++waits, monotonic_ms());
}

static void wait_line_say(magic_ctx *ctx, wait_line *w, const char *text)
{
    json_t *view = view_new(NULL);
    view_add_text(view, text);
    magic_progress(ctx, w->id, NULL, view, w->shown ? RESULT_UPDATE : RESULT_SHOW);
    w->shown = true;
    w->shown_ms = monotonic_ms();
}

static void say_ahead(char *buf, size_t len, int ahead, const char *what)
{
    if (ahead > 0)
        snprintf(buf, len, ": %d %s%s ahead", ahead, what, ahead == 1 ? "" : "s");
    else if (ahead == 0)
        snprintf(buf, len, ": next");
    else
        buf[0] = '\0';
}

/* ---- fair timing ---- */

/* The device whose turns this command's timed runs take (sharing_begin): the
 * GPU this worker holds a slot of (or a simulated one), else the host's CPU. */
static const admission_gpu host_cpu = { "cpu", 0 };
static const admission_gpu *turn_device = &host_cpu;


#define TURN_SAY_AFTER_MS 300.0     /* a shorter wait for a turn goes unsaid */
#define WAIT_REFRESH_MS 5000.0      /* a wait line's seconds so far, when its place does not change */

static wait_line turn_line;         /* one per command, however many timed runs wait */

typedef struct turn_wait {
    magic_ctx *ctx;
    const char *device;
} turn_wait;

static void turn_show(int ahead, double waited_ms, void *arg)
{
    turn_wait *t = arg;
    if (turn_line.shown ? monotonic_ms() - turn_line.shown_ms < 1000 : waited_ms < TURN_SAY_AFTER_MS)
        return;
    char where[64], line[300];
    say_ahead(where, sizeof where, ahead, "kernel");
    snprintf(line, sizeof line, "waiting for other kernels' timed runs on the %s%s (%.1f s so far; fair timing: "
             "each timed run has it alone, --shared-timing times alongside)", t->device, where,
             (t->ctx->share.wait_ms + waited_ms) / 1e3);
    wait_line_say(t->ctx, &turn_line, line);
}

static int take_turn(magic_ctx *ctx, bool take, double *waited_ms)
{
    const admission_gpu *dev = turn_device;
    turn_wait t = { ctx, strcmp(dev->key, "cpu") == 0 ? "CPU" : "GPU" };
    run_progress_wait(take);
    int rc = admission_turn(dev, take, admission_wait_limit_ms(), waited_ms, turn_show, &t, &ctx->share.error);
    run_progress_wait(false);
    if (take && turn_line.shown) {
        char line[300];
        snprintf(line, sizeof line, "waited %.1f s for other kernels' timed runs on the %s (fair timing: each "
                 "timed run has it alone, --shared-timing times alongside)",
                 (ctx->share.wait_ms + *waited_ms) / 1e3, t.device);
        wait_line_say(ctx, &turn_line, line);
    }
    return rc;
}

/* ---- waiting for a GPU ---- */

#define GPU_RETRY_MS 100            /* near the front of the queue; further back, GPU_RETRY_BACK_MS */
#define GPU_RETRY_BACK_MS 250

int sharing_wait_for_gpu(magic_ctx *ctx, char *note, size_t len, double *startup_ms)
{
    double limit_s = admission_wait_limit_ms() / 1e3, t0 = monotonic_ms();
    char first[512], line[800], where[64];
    snprintf(first, sizeof first, "%s", note);
    int n, shown = -2;
    const admission_gpu *gpus = backend_gpus(&n);
    admission_queue_join(gpus, n);  /* an idle worker holding a slot now lets it go (worker_main) */
    wait_line w;
    wait_line_init(&w);
    for (;;) {
        double t1 = monotonic_ms();
        if ((ctx->backend = backend_select(note, len))) {
            *startup_ms = monotonic_ms() - t1;
            break;
        }
        int rc = 0, ahead = admission_queue_ahead();
        if (backend_refused())
            rc = magic_error(ctx, "AdmissionError", "%s; the cell did not run (not on the CPU either): --backend "
                             "cpu runs it on the CPU", note);
        else if (magic_cancelled())
            rc = magic_error(ctx, "KeyboardInterrupt", "interrupted while waiting for the GPU (%s)", note);
        else if (monotonic_ms() - t0 >= limit_s * 1e3)
            rc = magic_error(ctx, "GPUBusyError", "the GPU gave this kernel no room in %.0f s (%s); the cell did "
                             "not run (not on the CPU either): run it again, or let fewer kernels hold the GPU "
                             "(" ADMISSION_WAIT_ENV " sets the wait)", limit_s, first);
        if (rc) {
            admission_queue_leave();
            if (!w.shown)
                return rc;          /* refused at once: nothing was waited for */
            snprintf(line, sizeof line, "gave up waiting for the GPU after %.1f s", (monotonic_ms() - t0) / 1e3);
            wait_line_say(ctx, &w, line);
            return rc;
        }
        /* at most one update a second, and one every WAIT_REFRESH_MS while nothing moves: a class of 200
         * waiting sends the kernels' clients little */
        double since = monotonic_ms() - w.shown_ms;
        if (!w.shown || (ahead != shown && since >= 1000) || since >= WAIT_REFRESH_MS) {
            say_ahead(where, sizeof where, ahead, "command");
            snprintf(line, sizeof line, "waiting for the GPU%s (%s; %.0f s so far, interrupt to stop)", where, first,
                     (monotonic_ms() - t0) / 1e3);
            wait_line_say(ctx, &w, line);
            shown = ahead;
        }
        struct timespec nap = { 0, (ahead > 8 ? GPU_RETRY_BACK_MS : GPU_RETRY_MS) * 1000000L };
        nanosleep(&nap, NULL);
    }
    admission_queue_leave();
    snprintf(line, sizeof line, "waited %.1f s for the GPU (%s)", (monotonic_ms() - t0 - *startup_ms) / 1e3, first);
    wait_line_say(ctx, &w, line);
    return 0;
}

/* magic_ctx.sharing: each GPU's census from the admission directory. */
static json_t *gpu_sharing(void)
{
    int n;
    const admission_gpu *g = backend_gpus(&n);
    if (n == 0)
        return NULL;
    json_t *all = json_array();
    for (int d = 0; d < n; d++) {
        admission_census c;
        if (admission_count(&g[d], &c) != 0)
            continue;
        json_array_append_new(all, json_pack("{s:i, s:s, s:i, s:i, s:i, s:i, s:b}", "device", d, "key", g[d].key,
                                             "contexts", c.slots, "held", c.held, "waiting_for_context",
                                             c.waiting_context, "waiting_for_turn", c.waiting_turn, "this_kernel",
                                             c.mine));
    }
    return all;
}

/* ---- device memory ---- */

static wait_line memory_line;       /* one per command */

static void memory_show(int ahead, double waited_ms, void *arg)
{
    magic_ctx *ctx = arg;
    char line[300];
    snprintf(line, sizeof line, "waiting for GPU memory: %d command%s ahead holding or waiting for it (%.1f s so "
             "far, interrupt to stop)", ahead, ahead == 1 ? "" : "s", waited_ms / 1e3);
    wait_line_say(ctx, &memory_line, line);
}

static int reserve_memory(magic_ctx *ctx, double bytes, double *most)
{
    if (turn_device == &host_cpu)
        return 2;                   /* no GPU slot held: nothing shared to budget */
    double t0 = monotonic_ms();
    run_progress_wait(true);
    int rc = admission_reserve(turn_device, bytes, admission_wait_limit_ms(), most, memory_show, ctx, &ctx->error);
    run_progress_wait(false);
    if (rc == 0 && memory_line.shown) {
        char line[160];
        snprintf(line, sizeof line, "waited %.1f s for GPU memory", (monotonic_ms() - t0) / 1e3);
        wait_line_say(ctx, &memory_line, line);
    }
    return rc;
}

void sharing_begin(magic_ctx *ctx, bool want_cpu, bool shared_timing)
{
    int gpus;
    const admission_gpu *g = backend_gpus(&gpus);
    wait_line_init(&turn_line);
    wait_line_init(&memory_line);
    turn_device = !want_cpu && admission_held() && backend_device() < gpus ? &g[backend_device()] : &host_cpu;
    /* the device is shared with the host's other kernels: their timed runs and ours take turns */
    ctx->share.shared = true;
    ctx->share.sharing = gpu_sharing;
    ctx->share.reserve = reserve_memory;
    ctx->share.turn = shared_timing ? NULL : take_turn;
}

void sharing_end(void)
{
    admission_unreserve();
}
