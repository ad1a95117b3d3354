/* run_progress.c — see run_progress.h. One thread per command, waking four times a second: the
 * command's own thread is inside the backend (a CUDA launch, a CPU analogue's loop) and cannot speak
 * until a rep ends. The reps are counted by the backend (cl_rep_done, host.h); the time left is the
 * mean time of the point's runs so far (its warm-up and setup included, so it errs long) times the
 * runs still to come, points after this one taken to cost as much. */
#include "exec/run_progress.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "cudalab/host.h"
#include "render/render.h"

#define TICK_MS 250

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bool running, stop, waiting;
    double wait_ms;                 /* when the wait began */
    magic_ctx *ctx;
    char magic[32];
    char id[80];
    bool shown;
    double start_ms, shown_ms;
    /* the point that runs now (run_point) */
    size_t point, points;
    long reps, warmup;
    unsigned long base, done;       /* cl_reps_done() when the point began; its reps seen done */
    double point_ms, rep_ms;        /* when the point began; when its last rep was seen done */
} rp = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER };

static void say_seconds(char *buf, size_t len, double s)
{
    if (s < 10)
        snprintf(buf, len, "%.1f s", s);
    else if (s < 120)
        snprintf(buf, len, "%.0f s", s);
    else
        snprintf(buf, len, "%.0f min %02.0f s", (double)(long)(s / 60), s - 60 * (double)(long)(s / 60));
}

void run_progress_text(char *buf, size_t len, const char *magic, double elapsed_ms, size_t point, size_t points,
                       long reps, long warmup, unsigned long done, double rep_ms)
{
    char where[96] = "", so_far[32], left[64] = "";
    if (points > 1)
        snprintf(where, sizeof where, "point %zu of %zu", point + 1, points);
    if (reps > 0 && done > 0)
        snprintf(where + strlen(where), sizeof where - strlen(where), "%srep %lu of %ld", where[0] ? ", " : "",
                 done, reps);
    else if (reps == RUN_PROGRESS_AUTO && done > 0)       /* no count to give, so no time left either */
        snprintf(where + strlen(where), sizeof where - strlen(where), "%srep %lu, until the median settles",
                 where[0] ? ", " : "", done);
    say_seconds(so_far, sizeof so_far, elapsed_ms / 1e3);
    long warm = warmup > 0 ? warmup : 0;
    double runs_left = reps > 0 ? (double)(reps - (long)done) + (double)(points - point - 1) * (double)(reps + warm)
                                : 0;
    if (done > 0 && rep_ms > 0 && runs_left > 0) {
        char t[32];
        say_seconds(t, sizeof t, rep_ms / (double)((unsigned long)warm + done) * runs_left / 1e3);
        snprintf(left, sizeof left, ", about %s left", t);
    }
    snprintf(buf, len, "running %%%s: %s%s%s so far%s (interrupt to stop)", magic, where, where[0] ? "; " : "",
             so_far, left);
}

static void on_point(magic_ctx *ctx, size_t point, size_t points, const json_t *params)
{
    const json_t *reps = json_object_get(params, "reps"), *warmup = json_object_get(params, "warmup");
    pthread_mutex_lock(&rp.lock);
    rp.point = point;
    rp.points = points;
    rp.reps = json_is_integer(reps) ? (long)json_integer_value(reps) : json_is_string(reps) ? RUN_PROGRESS_AUTO : 0;
    rp.warmup = json_is_integer(warmup) ? (long)json_integer_value(warmup) : 0;
    rp.base = cl_reps_done();
    rp.done = 0;
    rp.point_ms = monotonic_ms();
    rp.rep_ms = 0;
    pthread_mutex_unlock(&rp.lock);
}

static void show(const char *text, enum result_mode mode)
{
    json_t *view = view_new(NULL);
    view_add_text(view, text);
    magic_progress(rp.ctx, rp.id, NULL, view, mode);
}

/* Called with the lock held: what the line says now, if it is time to say it. */
static bool due(char *text, size_t len)
{
    double now = monotonic_ms();
    unsigned long done = cl_reps_done() - rp.base;
    if (rp.reps > 0 && done > (unsigned long)rp.reps)
        done = (unsigned long)rp.reps;      /* a copy-bandwidth measure also counts: not this point's */
    if (done != rp.done) {
        rp.done = done;
        rp.rep_ms = now - rp.point_ms;
    }
    if (rp.waiting || now - rp.start_ms < RUN_PROGRESS_AFTER_MS ||
        (rp.shown && now - rp.shown_ms < RUN_PROGRESS_EVERY_MS))
        return false;
    run_progress_text(text, len, rp.magic, now - rp.start_ms, rp.point, rp.points, rp.reps, rp.warmup, rp.done,
                      rp.rep_ms);
    return true;
}

static void *ticker(void *arg)
{
    pthread_mutex_lock(&rp.lock);
    while (!rp.stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += TICK_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&rp.wake, &rp.lock, &until);
        char text[256];
        if (rp.stop || !due(text, sizeof text))
            continue;
        enum result_mode mode = rp.shown ? RESULT_UPDATE : RESULT_SHOW;
        rp.shown = true;
        rp.shown_ms = monotonic_ms();
        pthread_mutex_unlock(&rp.lock);     /* the frame's write may block: never with the lock */
        show(text, mode);
        pthread_mutex_lock(&rp.lock);
    }
    pthread_mutex_unlock(&rp.lock);
    return NULL;
}

void run_progress_begin(magic_ctx *ctx, const char *magic)
{
    static unsigned long commands;
    pthread_mutex_lock(&rp.lock);
    rp.ctx = ctx;
    snprintf(rp.magic, sizeof rp.magic, "%s", magic);
    snprintf(rp.id, sizeof rp.id, "cudalab-run-%d-%lu", (int)getpid(), ++commands);
    rp.shown = rp.stop = rp.waiting = false;
    rp.start_ms = monotonic_ms();
    rp.point = 0;
    rp.points = 1;
    rp.reps = rp.warmup = 0;
    rp.base = cl_reps_done();
    rp.done = 0;
    rp.point_ms = rp.start_ms;
    rp.rep_ms = 0;
    rp.running = pthread_create(&rp.thread, NULL, ticker, NULL) == 0;
    pthread_mutex_unlock(&rp.lock);
    ctx->sink.run_point = on_point;
}

void run_progress_wait(bool waiting)
{
    pthread_mutex_lock(&rp.lock);
    double now = monotonic_ms();
    if (waiting && !rp.waiting)
        rp.wait_ms = now;
    else if (!waiting && rp.waiting)
        rp.point_ms += now - rp.wait_ms;
    rp.waiting = waiting;
    pthread_mutex_unlock(&rp.lock);
}

void run_progress_end(void)
{
    pthread_mutex_lock(&rp.lock);
    bool running = rp.running;
    rp.stop = true;
    pthread_cond_signal(&rp.wake);
    pthread_mutex_unlock(&rp.lock);
    if (running)
        pthread_join(rp.thread, NULL);
    rp.running = false;
    if (rp.shown) {                 /* its last state: what ran, in how long (never an empty output) */
        char took[32], line[128];
        say_seconds(took, sizeof took, (monotonic_ms() - rp.start_ms) / 1e3);
        snprintf(line, sizeof line, "%%%s ran for %s", rp.magic, took);
        json_t *view = view_new(NULL);
        view_add_text(view, line);
        magic_progress(rp.ctx, rp.id, NULL, view, RESULT_END);
    }
    rp.ctx->sink.run_point = NULL;
    rp.ctx = NULL;
}
