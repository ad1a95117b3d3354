/* worker.c — starting, feeding and stopping the device worker (see worker.h). */
#include "exec/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec/admission.h"
#include "exec/backend_load.h"
#include "exec/capture.h"
#include "exec/run_progress.h"
#include "exec/sharing.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/text.h"
#include "base/utf8.h"
#include "magic/lab_session.h"
#include "render/render.h"
#include "student/hooks.h"
#include "student/store.h"

void worker_init(worker *w)
{
    memset(w, 0, sizeof *w);
    w->fd = -1;
}

int worker_start(worker *w, const char *exe)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        klog("worker: socketpair: %s", strerror(errno));
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        klog("worker: fork: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (pid == 0) {
        /* child: fd 3 is the pipe; stdout goes to stderr so nothing a library
         * prints can corrupt anything; new process group so a terminal's ^C
         * reaches the kernel only, which decides what to stop */
        setpgid(0, 0);
        /* the worker dies with its kernel, even in the middle of a long command
         * (it notices a closed pipe only between commands); the signal survives
         * exec, and a kernel that died before prctl is caught by getppid */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
            _exit(127);
        if (dup2(sv[1], 3) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
            _exit(127);
        char *argv[] = { (char *)"cudalab", (char *)"--worker", (char *)"3", NULL };
        execv(exe, argv);
        _exit(127);
    }
    close(sv[1]);
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    w->pid = pid;
    w->fd = sv[0];
    frame_reader_reset(&w->rd);
    return 0;
}

int worker_run(worker *w, const char *exe, const command *cmd, const json_t *kernels)
{
    if (w->pid == 0 && worker_start(w, exe))
        return -1;
    if (w->out_len > w->out_off) {
        klog("worker: a command was sent while the previous one was still being written");
        return -1;
    }
    json_t *msg = json_pack("{s:s, s:s, s:O, s:O?, s:s?, s:i, s:O?}", "op", "run", "magic", cmd->magic->name,
                            "params", cmd->params, "cpu_defaulted", cmd->cpu_defaulted, "body", cmd->body,
                            "body_line", cmd->body_line, "kernels", kernels);
    size_t n = 0;
    char *buf = msg ? frame_encode(msg, &n) : NULL;
    json_decref(msg);
    if (!buf)
        return -1;
    free(w->out);
    w->out = buf;
    w->out_len = n;
    w->out_off = 0;
    return worker_flush(w) < 0 ? -1 : 0;
}

int worker_flush(worker *w)
{
    while (w->out_off < w->out_len) {
        ssize_t n = write(w->fd, w->out + w->out_off, w->out_len - w->out_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 1;               /* the pipe is full: the loop waits until it is writable */
        if (n <= 0)
            return -1;              /* the worker is gone: its end of the pipe says so too */
        w->out_off += (size_t)n;
    }
    free(w->out);
    w->out = NULL;
    w->out_len = w->out_off = 0;
    return 0;
}

bool worker_writing(const worker *w)
{
    return w->out_off < w->out_len;
}

static void close_worker(worker *w)
{
    if (w->fd >= 0)
        close(w->fd);
    frame_reader_reset(&w->rd);
    free(w->out);
    worker_init(w);
}

void worker_kill(worker *w, int *status)
{
    int st = 0;
    if (w->pid > 0) {
        kill(w->pid, SIGKILL);
        while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
            ;
    }
    if (status)
        *status = st;
    close_worker(w);
}

bool worker_reap(worker *w, char *buf, size_t len)
{
    int st = 0;
    pid_t r = 0;
    /* the pipe closed: the process is exiting; give it 200 ms, then make sure */
    for (int i = 0; i < 20 && (r = waitpid(w->pid, &st, WNOHANG)) == 0; i++)
        nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
    if (r == 0) {
        worker_kill(w, &st);
    } else {
        close_worker(w);
    }
    if (WIFSIGNALED(st))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else if (WIFEXITED(st))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
    else
        snprintf(buf, len, "ended");
    return r == 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}

/* ---- the worker process ---- */

/* Every frame to the kernel goes through here: the progress line's thread (run_progress.c) writes
 * frames too, and two frames must never interleave on the pipe. */
static int send_frame(int fd, const json_t *m)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    int rc = frame_write(fd, m);
    pthread_mutex_unlock(&lock);
    return rc;
}

static void pipe_stream(void *impl, const char *name, const char *text)
{
    json_t *m = json_pack("{s:s, s:s, s:s}", "op", "stream", "name", name, "text", text);
    if (m)
        send_frame(*(int *)impl, m);
    json_decref(m);
}

static void pipe_result(void *impl, json_t *doc, json_t *view, const char *display_id, enum result_mode mode)
{
    json_t *m = json_pack("{s:s, s:o, s:o, s:s?, s:i}", "op", "result", "doc",
                          doc ? doc : json_null(), "view", view ? view : json_null(),
                          "display_id", display_id, "mode", (int)mode);
    if (m)
        send_frame(*(int *)impl, m);
    json_decref(m);
}

static const magic_out pipe_out = { pipe_stream, pipe_result };

/* A --gpu-only command where the CPU backend stands for no GPU: it does not run. Its stand-in result
 * says so (doc: the magic, the backend, "gpu_only": true, its params); the kernel shows the command's
 * recorded GPU result in its place, or says there is none (recorded.h: recording_stand_in). */
static int gpu_only_stand_in(magic_ctx *ctx, const magic_spec *m, const json_t *params, const char *note)
{
    json_t *doc = json_pack("{s:s, s:s, s:b, s:O}", "magic", m->name, "backend", "cpu", MAGIC_GPU_ONLY_KEY, 1,
                            "params", params);
    char text[800];
    snprintf(text, sizeof text, "%%%s --gpu-only runs only on a GPU; commands here run on the CPU backend (%s), "
             "so this one did not run.", m->name, note && *note ? note : "no GPU");
    json_t *view = view_new(NULL);
    view_add_note(view, text);
    return magic_result_built(ctx, doc, view);
}

int worker_exec(const magic_spec *m, const json_t *given, const json_t *cpu_defaulted, const char *body,
                magic_ctx *ctx)
{
    static char note[512];
    student_hooks_register();       /* the framework reaches students' kernels through them */
    ctx->dev.note = ctx->dev.note_buf = note;
    ctx->dev.note_len = sizeof note;
    /* --backend (SWEEP_BACKEND_FLAG): the CPU backend on request, without waiting for a GPU; a GPU, or an
     * error saying why there is none */
    const char *want = json_string_value(json_object_get(given, "backend"));
    bool want_cpu = want && strcmp(want, "cpu") == 0;
    if (want_cpu) {
        ctx->backend = cl_cpu_backend();
        snprintf(note, sizeof note, "CPU backend asked for by --backend cpu");
    } else if (m->needs_device && !m->needs_device(given)) {
        /* runs nothing on a device: a free slot is taken as at warm-up, never waited for */
        if (!(ctx->backend = backend_select(note, sizeof note)))
            ctx->backend = backend_query(note, sizeof note);
    } else {
        bool fresh = !backend_chosen();
        double t0 = monotonic_ms();
        ctx->backend = backend_select(note, sizeof note);
        double startup = monotonic_ms() - t0;
        if (!ctx->backend) {
            run_progress_wait(true);        /* the wait's own line speaks */
            int waited = sharing_wait_for_gpu(ctx, note, sizeof note, &startup);
            run_progress_wait(false);
            if (waited != 0)
                return -1;
        }
        int seen;
        backend_gpus(&seen);
        if (fresh && seen > 0)      /* the start on the GPU (its context) that this command paid */
            ctx->dev.startup_ms = startup;
        if (want && strcmp(want, "cuda") == 0 && strcmp(ctx->backend->name, "cuda") != 0)
            return magic_error(ctx, "UsageError", "--backend cuda: no GPU backend in this worker (%s)", note);
    }
    /* the device within the backend (the CPU is one, whichever simulated GPU admission gave) */
    ctx->dev.index = strcmp(ctx->backend->name, "cpu") != 0 ? backend_device() : 0;
    ctx->dev.open = ctx->backend == cl_cpu_backend() || backend_chosen();
    /* the CPU's defaults where the user gave none (fewer reps, smaller sizes), said in the note; not
     * where the CPU computes for a simulated GPU (CUDALAB_TEST_FAKE_GPU), which stands for a GPU */
    char changed[300] = "";
    int gpus = 0;
    ctx->dev.cpu_defaults = ctx->backend == cl_cpu_backend() && (want_cpu || (backend_gpus(&gpus), gpus == 0));
    json_t *params = ctx->dev.cpu_defaults ? params_cpu_defaults(m, given, cpu_defaulted, changed, sizeof changed)
                                       : json_incref((json_t *)given);
    json_t *own = json_copy(params);        /* shallow: our own object, so that the flag can go */
    json_decref(params);
    params = own;
    bool gpu_only = json_is_true(json_object_get(params, MAGIC_GPU_ONLY_KEY));
    if (!params)
        return magic_error(ctx, "MemoryError", "out of memory");
    json_object_del(params, MAGIC_GPU_ONLY_KEY);  /* the framework's, not the magic's: never in its document */
    if (gpu_only && ctx->dev.cpu_defaults) {
        int rc = gpu_only_stand_in(ctx, m, params, note);
        json_decref(params);
        return rc;
    }
    if (changed[0])
        magic_cpu_default(ctx, changed);
    sharing_begin(ctx, want_cpu, json_is_true(json_object_get(params, "shared_timing")));
    int rc = m->run(ctx, params, body);
    sharing_end();
    json_decref(params);
    return rc;
}

static void send_error(int fd, const magic_ctx *ctx)
{
    json_t *m = json_pack("{s:s, s:s, s:s, s:O?}", "op", "error", "ename", ctx->error.ename, "evalue",
                          ctx->error.evalue, "traceback", ctx->traceback);
    if (m)
        send_frame(fd, m);
    json_decref(m);
}

/* After an error, is the device still usable? A sticky CUDA error (illegal
 * address, launch failure) poisons the context for good: say so, and leave. */
static bool poisoned(magic_ctx *ctx)
{
    char err[CL_ERR_LEN];
    if (!ctx->backend || !ctx->backend->healthy || ctx->backend->healthy(err) == 0)
        return false;
    klog("worker: the CUDA context is unusable (%s); exiting so the next command gets a fresh one", err);
    if (!ctx->traceback)
        ctx->traceback = json_array();
    json_array_append_new(ctx->traceback,
                          json_sprintf("the CUDA context is unusable after this error (%s); "
                                       "a fresh device worker starts for the next command", err));
    return true;
}

/* Printf output to the cell, at most PRINTF_LINES lines: a failed assert()
 * prints one line per thread, thousands for one mistake. */
#define PRINTF_LINES 200

static void stream_lines(int fd, char *text)
{
    size_t lines = 0;
    char *p = text;
    for (; *p && lines < PRINTF_LINES; p++)
        lines += *p == '\n';
    size_t more = 0;
    for (char *q = p; *q; q++)
        more += *q == '\n';
    char cut = *p;
    *p = '\0';
    pipe_stream(&fd, "stdout", text);
    *p = cut;
    if (cut) {
        char note[160];
        snprintf(note, sizeof note, "[cudalab: %zu more lines of printf output not shown]\n", more + (p[strlen(p) - 1] != '\n'));
        pipe_stream(&fd, "stdout", note);
    }
}

/* What the command printed on stdout: a student's kernel's printf goes to the
 * cell, anything else (a library's chatter) to the log. */
static void forward_stdout(int fd, const json_t *req)
{
    size_t dropped = 0;
    char *text = capture_take(&dropped);
    const char *magic = json_string_value(json_object_get(req, "magic"));
    bool student = json_object_get(req, "kernels") || (magic && strcmp(magic, "kernel") == 0);
    if (text && text[0] && student)
        stream_lines(fd, text);
    else if (text && text[0])
        klog("worker: stdout: %.*s", utf8_clip(text, 2000), text);
    if (dropped && student) {
        char note[160];
        snprintf(note, sizeof note, "\n[cudalab: %zu more bytes of printf output were dropped]\n", dropped);
        pipe_stream(&fd, "stdout", note);
    }
    free(text);
}

/* The backend chosen at the worker's start (worker_main). */
static const cl_backend *start_backend;

/* The host's copy bandwidth (cpu/bandwidth.c), which the CPU backend's timed commands show and
 * compare to, measured by a CPU worker's first command that times runs on the device (it has
 * --reps), before that command's progress clock starts (as at the worker's start, outside any
 * timed turn): a second or two on a host with a large L3, which would otherwise show a progress
 * line on a quick first cell, or before a refusal. Not at the start: most kernels that start (a
 * test suite's, a class's storm of starts) never time anything; nor before other commands, which
 * an interrupt must stop within its grace. A GPU's is measured by its first cell that needs it. */
static void host_bandwidth_first(const magic_spec *m, const json_t *params)
{
    double gbs;
    if (start_backend == cl_cpu_backend() && start_backend->copy_bandwidth && json_object_get(params, "reps") &&
        (!m->needs_device || m->needs_device(params)))
        start_backend->copy_bandwidth(&gbs, NULL);
}

/* Runs one command in the worker's session; returns 0 to go on, 1 when the worker must exit. */
static int run_one(int fd, lab_session *lab, const json_t *req)
{
    const char *name = json_string_value(json_object_get(req, "magic"));
    const magic_spec *m = name ? magic_find(name) : NULL;
    magic_ctx ctx = { .sink.out = &pipe_out, .sink.impl = &fd, .lab = lab,
                      .body_line = (int)json_integer_value(json_object_get(req, "body_line")) };
    bool leave = false;
    magic_cancel_reset();
    if (!m)
        magic_error(&ctx, "InternalError", "the worker does not know %%%s", name ? name : "?");
    else if (student_install(&ctx, json_object_get(req, "kernels")) != 0)
        ;                           /* the error is set */
    else {
        host_bandwidth_first(m, json_object_get(req, "params"));
        run_progress_begin(&ctx, name);
        if (worker_exec(m, json_object_get(req, "params"), json_object_get(req, "cpu_defaulted"),
                        json_string_value(json_object_get(req, "body")), &ctx) == 0)
            error_clear(&ctx.error);
        run_progress_end();
    }
    if (error_is_set(&ctx.error))
        leave = poisoned(&ctx);
    forward_stdout(fd, req);        /* before the error: printf output explains a fault */
    if (error_is_set(&ctx.error))
        send_error(fd, &ctx);
    json_decref(ctx.traceback);
    /* "leaving" tells the kernel not to send the next command to this worker */
    json_t *done = json_pack("{s:s, s:b}", "op", "done", "leaving", leave);
    int rc = done ? send_frame(fd, done) : -1;
    json_decref(done);
    return rc || leave ? 1 : 0;
}

static void on_sigint(int sig)
{
    magic_cancel();
}

/* CUDALAB_GPU_IDLE_S: how long a worker holds its GPU slot without a command
 * while another kernel waits for one (60 s). */
static double idle_limit_s(void)
{
    const char *e = getenv("CUDALAB_GPU_IDLE_S");
    return e && *e && atof(e) >= 0 ? atof(e) : 60.0;
}

/* Whether fd has input (or its end) within ms. */
static bool readable(int fd, int ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    return poll(&p, 1, ms) != 0;
}

/* Runs the kernel's commands until it closes the pipe (0), a command leaves
 * the worker unusable (1), or the GPU slot is let go while idle (0). */
static int serve(int fd, lab_session *lab)
{
    double idle_s = idle_limit_s(), since = monotonic_ms();
    for (;;) {
        /* holding a GPU slot, idle, while another kernel waits for one: let it go (the kernel starts a
         * fresh worker, which waits its turn when a command comes) */
        while (admission_held() && !readable(fd, 1000)) {
            if ((monotonic_ms() - since) / 1e3 >= idle_s && admission_wanted()) {
                kinfo("worker: idle for %.0f s while another kernel waits for the GPU: letting it go",
                     (monotonic_ms() - since) / 1e3);
                return 0;
            }
        }
        json_t *req = frame_read(fd);
        if (!req)
            return 0;               /* the kernel closed the pipe: leave quietly */
        const char *op = json_string_value(json_object_get(req, "op"));
        int rc = op && strcmp(op, "run") == 0 ? run_one(fd, lab, req) : 0;
        json_decref(req);
        since = monotonic_ms();
        if (rc)
            return 1;
    }
}

int worker_main(int fd)
{
    /* the kernel asks a command to stop with SIGINT; it kills us if we don't */
    struct sigaction sa = { .sa_handler = on_sigint };
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (capture_start() != 0)
        klog("worker: stdout not captured (device printf goes to the log)");
    /* choose the backend now, while the user is still typing: the first CUDA
     * call creates the context and can take a second */
    char note[512];
    const cl_backend *b = backend_select(note, sizeof note);
    kinfo("worker: backend %s%s%s", b ? b->name : "none yet", note[0] ? ": " : "", note);
    /* the host's copy bandwidth (the CPU's roof) is not measured here but before the first command
     * that may need it (host_bandwidth_first): faulting twice the largest cache cost every kernel's
     * start a second or two, and most kernels that start never run such a command */
    start_backend = b;
    /* the worker's session: the student kernels each command brings (student_install), the compile cache */
    lab_session *lab = lab_session_new();
    if (!lab) {
        klog("worker: out of memory");
        return 1;
    }
    int rc = serve(fd, lab);
    lab_session_free(lab);
    return rc;
}
