/* kernel.c — the server of the kernel process: sockets, signing, the loop's
 * sources, and the shell_host through which the shell acts (see kernel.h). */
#include "server/kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/text.h"
#include "proto/msg.h"
#include "server/heartbeat.h"
#include "server/loop.h"

/* One iopub subscription message (jupyter's is 1 byte). ZeroMQ keeps every
 * distinct topic of a connected peer, about 40 bytes per byte of topic, until
 * it disconnects: short topics keep that small. */
#define SUBSCRIPTION_MAX_BYTES 256
#define SUBSCRIPTIONS_PER_TURN 64     /* read per turn of the loop: a flood cannot hold it */
#define WELCOMES_PER_SECOND 20        /* iopub_welcome rate (and burst) */
#define REQUEST_QUEUE_PER_PEER 16     /* requests ZeroMQ reads ahead from one peer */
#define LARGE_ALLOCATION (256 << 10)  /* bytes from which malloc maps memory of its own */

static int sig_write_fd = -1;

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (sig_write_fd >= 0 && write(sig_write_fd, &b, 1) < 0) {
        /* the pipe is full: an event is already pending, which is enough */
    }
    errno = saved;
}

static int install_signals(kernel *k)
{
    if (pipe2(k->sigpipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    sig_write_fd = k->sigpipe[1];
    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

/* PORT_HB is the heartbeat thread's (heartbeat.h) */
static const int socket_types[PORT_COUNT] = { ZMQ_ROUTER, ZMQ_XPUB, ZMQ_ROUTER, ZMQ_ROUTER, 0 };

/* What a peer can make the kernel hold is capped per socket, before anything
 * is allocated: ZeroMQ drops a peer whose frame is larger than ZMQ_MAXMSGSIZE
 * (silently, so the requests' own cap, k->max_message, sits below it: between
 * the two a request gets an error reply that names the limit), and queues few
 * messages per peer (the rest wait in the peer's own queue, so "Run all" still
 * works). Heartbeat frames and iopub subscriptions are tiny. */
static void limit_socket(kernel *k, void *s, enum conn_port p)
{
    int one = 1;
    if (p == PORT_IOPUB) {
        int64_t max = SUBSCRIPTION_MAX_BYTES;
        zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &max, sizeof max);
        /* pass every subscription up, so each client gets its welcome (not
         * ZMQ_XPUB_MANUAL: in libzmq 4.3 its pending-pipe queue goes out of
         * step when peers send other frames or leave, a hostile peer's game) */
        zmq_setsockopt(s, ZMQ_XPUB_VERBOSE, &one, sizeof one);
        /* a slow client must not lose a cell's last outputs or its idle status:
         * queue deeply (streams are coalesced and progress throttled, so a cell
         * sends few messages), but not without bound: a subscriber that never
         * reads keeps up to this many messages alive (ipykernel's is 1000) */
        int hwm = 10000;
        zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    } else {
        zmq_setsockopt(s, ZMQ_ROUTER_HANDOVER, &one, sizeof one);
        int64_t max = (int64_t)k->max_message * 2;
        int hwm = REQUEST_QUEUE_PER_PEER;
        zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &max, sizeof max);
        zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
    }
}

static int open_socket(kernel *k, const conn_info *c, enum conn_port p)
{
    void *s = zmq_socket(k->zctx, socket_types[p]);
    if (!s)
        return -1;
    /* at exit, wait up to a second so the last replies (shutdown_reply, idle) go out */
    int linger = 1000, one = 1;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    if (conn_is_ipv6(c))
        zmq_setsockopt(s, ZMQ_IPV6, &one, sizeof one);
    limit_socket(k, s, p);
    char ep[512];
    conn_endpoint(c, p, ep, sizeof ep);
    if (zmq_bind(s, ep) < 0) {
        klog("cannot bind %s socket to %s: %s", conn_port_name(p), ep, zmq_strerror(zmq_errno()));
        zmq_close(s);
        return -1;
    }
    k->sock[p] = s;
    return 0;
}

#define ENV_NUMBER_MAX 1e12     /* seconds, milliseconds or bytes: past any sane setting, and exact in size_t */

/* A non-negative number from the environment, or def (logged when ignored). */
static double env_number(const char *name, double def)
{
    const char *v = getenv(name);
    char *end;
    double x = v ? strtod(v, &end) : 0;
    if (!v || end == v || *end || !(x >= 0) || x > ENV_NUMBER_MAX) {
        if (v)
            klog("ignored %s=%.64s: not a number from 0 to %g", name, v, ENV_NUMBER_MAX);
        return def;
    }
    return x;
}

static void set_host(kernel *k);
static int register_sources(kernel *k);

int kernel_open(kernel *k, const conn_info *c)
{
    memset(k, 0, sizeof *k);
    /* A large request's buffers are mapped and unmapped whole: glibc would
     * otherwise raise its threshold after the first one and keep the next ones'
     * memory in its heap, held by the kernel for good. */
    mallopt(M_MMAP_THRESHOLD, LARGE_ALLOCATION);
    shell_limits lim = {
        .grace_ms = env_number("CUDALAB_INTERRUPT_GRACE_MS", 500),
        .cell_timeout_ms = env_number("CUDALAB_CELL_TIMEOUT", 0) * 1e3,
        .max_output = (size_t)env_number("CUDALAB_MAX_OUTPUT", 1 << 20),
    };
    k->max_message = (size_t)env_number("CUDALAB_MAX_MESSAGE", 64 << 20);
    if (k->max_message < 4096 || k->max_message > WIRE_MAX_JSON) {     /* ZeroMQ's cap is twice it */
        klog("ignored CUDALAB_MAX_MESSAGE=%zu: not between 4096 and %u", k->max_message, WIRE_MAX_JSON);
        k->max_message = WIRE_MAX_JSON;
    }
    k->sigpipe[0] = k->sigpipe[1] = -1;
    k->welcome_tokens = WELCOMES_PER_SECOND;
    worker_init(&k->worker);
    msg_uuid(k->session);
    ssize_t n = readlink("/proc/self/exe", k->exe, sizeof k->exe - 1);
    k->exe[n > 0 ? n : 0] = '\0';
    k->sign = signer_new(c->scheme, c->key, c->key_len);
    k->replay = replay_new(NULL);
    set_host(k);
    k->shell = shell_session_new(&k->host, &lim);
    k->loop = loop_new();
    k->zctx = zmq_ctx_new();
    if (!k->sign || !k->replay || !k->shell || !k->loop || !k->zctx || install_signals(k)) {
        klog("cannot initialise the kernel (out of memory or OpenSSL failure)");
        return -1;
    }
    for (int p = 0; p < PORT_COUNT; p++)
        if (p != PORT_HB && open_socket(k, c, (enum conn_port)p))
            return -1;
    char ep[512];
    conn_endpoint(c, PORT_HB, ep, sizeof ep);
    if (register_sources(k)) {
        klog("cannot initialise the kernel (out of memory)");
        return -1;
    }
    return (k->hb = heartbeat_start(ep, conn_is_ipv6(c))) ? 0 : -1;
}

void kernel_close(kernel *k)
{
    if (k->dropped)
        klog("%lu malformed, unsigned or replayed messages were dropped this session", k->dropped);
    if (k->welcomes_refused)
        klog("%lu iopub subscriptions beyond %d a second were not welcomed", k->welcomes_refused,
             WELCOMES_PER_SECOND);
    shell_session_free(k->shell);
    k->shell = NULL;
    if (k->worker.pid)
        worker_kill(&k->worker, NULL);
    heartbeat_stop(k->hb);
    for (int p = 0; p < PORT_COUNT; p++)
        if (k->sock[p])
            zmq_close(k->sock[p]);
    if (k->zctx)
        zmq_ctx_term(k->zctx);
    signer_free(k->sign);
    replay_free(k->replay);
    loop_free(k->loop);
    for (int i = 0; i < 2; i++)
        if (k->sigpipe[i] >= 0)
            close(k->sigpipe[i]);
    sig_write_fd = -1;
}

/* ---- sending ---- */

static void kernel_reply(kernel *k, void *sock, const wire_msg *req, const char *msg_type, json_t *content)
{
    char type[64];
    snprintf(type, sizeof type, "%s", msg_type);
    json_t *h = msg_header(type, k->session);
    wire_send(sock, k->sign, req->ids, req->nids, h, req->header, NULL, content);
    json_decref(h);
    json_decref(content);
}

static void kernel_publish_meta(kernel *k, const wire_msg *parent, const char *msg_type, json_t *metadata,
                                json_t *content)
{
    char topic[128];
    snprintf(topic, sizeof topic, "kernel.%s.%s", k->session, msg_type);
    blob id = { topic, strlen(topic) };
    json_t *h = msg_header(msg_type, k->session);
    json_t *empty = parent ? NULL : json_object();
    wire_send(k->sock[PORT_IOPUB], k->sign, &id, 1, h, parent ? parent->header : empty, metadata, content);
    json_decref(empty);
    json_decref(metadata);
    json_decref(h);
    json_decref(content);
}

static void kernel_publish(kernel *k, const wire_msg *parent, const char *msg_type, json_t *content)
{
    kernel_publish_meta(k, parent, msg_type, NULL, content);
}

/* ---- receiving ---- */

/* A request larger than CUDALAB_MAX_MESSAGE (but under ZeroMQ's cap, twice
 * that) is answered with an error that says so, instead of being run. */
static bool refused_as_too_large(kernel *k, const shell_request *req, size_t bytes)
{
    if (bytes <= k->max_message)
        return false;
    char why[256], got[32], max[32];
    format_bytes((double)bytes, got, sizeof got);
    format_bytes((double)k->max_message, max, sizeof max);
    snprintf(why, sizeof why, "the %s is %s; the kernel takes requests of up to %s (CUDALAB_MAX_MESSAGE)",
             req->msg.msg_type, got, max);
    if (strstr(req->msg.msg_type, "_request"))
        shell_refuse(k->shell, req, "RequestTooLarge", why);
    else
        klog("dropped %s message: %s", conn_port_name(req->channel), why);
    return true;
}

/* Reads one message from a ROUTER socket. Returns 1 and fills req, 0 when
 * nothing was ready or the message was dropped (logged). */
static int kernel_recv(kernel *k, enum conn_port channel, shell_request *req)
{
    req->channel = channel;
    blob *frames;
    int n = wire_recv(k->sock[channel], &frames);
    if (n == 0)
        return 0;
    char why[128];
    int rc = n < 0 ? -1 : wire_decode(frames, (size_t)n, k->sign, k->replay, &req->msg, why, sizeof why);
    if (n < 0)
        snprintf(why, sizeof why, "unreadable multipart message");
    size_t bytes = 0;
    for (int i = 0; i < n; i++)
        bytes += frames[i].len;
    blobs_free(frames, n > 0 ? (size_t)n : 0);
    if (rc) {
        k->dropped++;
        klog("dropped %s message: %s", conn_port_name(channel), why);
        return 0;
    }
    if (refused_as_too_large(k, req, bytes)) {
        wire_msg_free(&req->msg);
        return 0;
    }
    kinfo("%s: %s", conn_port_name(channel), req->msg.msg_type);
    return 1;
}

#define ABORT_GAP_MS 3      /* a "Run all" batch arrives back to back */
#define ABORT_MAX_MS 20
#define ABORT_MAX_MSGS 1024

/* shell_host.take_queued: after a failed cell with stop_on_error, the
 * requests queued on shell, read here so that the shell can abort them. */
static size_t take_queued(void *server, shell_request **reqs, bool burst)
{
    kernel *k = server;
    shell_request *q = calloc(ABORT_MAX_MSGS, sizeof *q);
    size_t n = 0;
    if (!q) {
        *reqs = NULL;
        return 0;
    }
    double t0 = monotonic_ms();
    while (n < ABORT_MAX_MSGS) {
        zmq_pollitem_t it = { k->sock[PORT_SHELL], 0, ZMQ_POLLIN, 0 };
        if (monotonic_ms() - t0 >= ABORT_MAX_MS || zmq_poll(&it, 1, burst ? ABORT_GAP_MS : 0) <= 0)
            break;
        if (kernel_recv(k, PORT_SHELL, &q[n]))
            n++;
    }
    *reqs = q;
    return n;
}

static void on_request(kernel *k, enum conn_port channel)
{
    shell_request req;
    if (kernel_recv(k, channel, &req) && shell_dispatch(k->shell, &req) != 0)
        k->dropped++;
}

/* May another iopub_welcome go out? A client subscribes once per connection;
 * a peer subscribing thousands of times a second must not make the kernel
 * queue thousands of welcomes for every client (a token bucket). */
static bool welcome_allowed(kernel *k)
{
    double now = monotonic_ms() / 1e3;
    k->welcome_tokens += (now - k->welcome_at) * WELCOMES_PER_SECOND;
    if (k->welcome_tokens > WELCOMES_PER_SECOND)
        k->welcome_tokens = WELCOMES_PER_SECOND;
    k->welcome_at = now;
    if (k->welcome_tokens < 1) {
        k->welcomes_refused++;
        return false;
    }
    k->welcome_tokens -= 1;
    return true;
}

/* XPUB hands us subscriptions: answer each with iopub_welcome (JEP 65), so a
 * client knows it will not miss the messages that follow. A flood of them is
 * read a batch per turn of the loop and welcomed at a bounded rate (their size
 * is capped by ZeroMQ, SUBSCRIPTION_MAX_BYTES). */
static void on_subscription(kernel *k)
{
    void *s = k->sock[PORT_IOPUB];
    zmq_msg_t m;
    for (int i = 0; i < SUBSCRIPTIONS_PER_TURN; i++) {
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, s, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            return;
        }
        const char *d = zmq_msg_data(&m);
        size_t len = zmq_msg_size(&m);
        if (len >= 1 && d[0] == 1) {
            json_t *topic = welcome_allowed(k)
                            ? json_stringn(d + 1, len - 1) : NULL;
            if (topic)                          /* NULL unless valid UTF-8 */
                kernel_publish(k, NULL, "iopub_welcome", json_pack("{s:o}", "subscription", topic));
        }
        zmq_msg_close(&m);
    }
}

#define RESPAWN_LIMIT 3

/* shell_host.worker_start; also after a worker died between commands, so
 * the next command does not wait for a fresh one (and its CUDA context). */
static void worker_respawn(void *server)
{
    kernel *k = server;
    if (k->quit || k->worker.pid > 0)
        return;
    if (k->respawns >= RESPAWN_LIMIT) {
        klog("worker: %d fresh workers in a row ended without finishing a command; "
             "the next command starts one", k->respawns);
        return;
    }
    k->respawns++;
    worker_start(&k->worker, k->exe);
}

static int host_worker_run(void *server, const command *cmd, const json_t *kernels)
{
    kernel *k = server;
    return worker_run(&k->worker, k->exe, cmd, kernels);
}

static void host_worker_interrupt(void *server)
{
    kernel *k = server;
    if (k->worker.pid > 0)
        kill(k->worker.pid, SIGINT);
}

static void host_worker_kill(void *server)
{
    kernel *k = server;
    if (k->worker.pid)
        worker_kill(&k->worker, NULL);
}

static void host_reply(void *server, const shell_request *req, const char *msg_type, json_t *content)
{
    kernel *k = server;
    kernel_reply(k, k->sock[req->channel], &req->msg, msg_type, content);
}

static void host_publish(void *server, const wire_msg *parent, const char *msg_type, json_t *metadata,
                         json_t *content)
{
    kernel_publish_meta(server, parent, msg_type, metadata, content);
}

static double host_now_ms(void *server)
{
    return monotonic_ms();
}

static void host_quit(void *server)
{
    kernel *k = server;
    k->quit = true;
    loop_stop(k->loop);
}

static void set_host(kernel *k)
{
    k->host = (shell_host){
        .server = k,
        .reply = host_reply,
        .publish = host_publish,
        .worker_run = host_worker_run,
        .worker_interrupt = host_worker_interrupt,
        .worker_kill = host_worker_kill,
        .worker_start = worker_respawn,
        .take_queued = take_queued,
        .now_ms = host_now_ms,
        .quit = host_quit,
    };
}

/* Did the worker finish a command? Then the workers started so far were not
 * all dying at birth. */
static bool is_done_frame(const json_t *f)
{
    const char *op = json_string_value(json_object_get(f, "op"));
    return op && strcmp(op, "done") == 0;
}

static void on_worker_output(kernel *k)
{
    int fd = k->worker.fd;
    long n = frame_fill(&k->worker.rd, fd);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    json_t *f;
    int r;
    while ((r = frame_next(&k->worker.rd, &f)) == 1) {
        if (is_done_frame(f))
            k->respawns = 0;
        shell_on_worker_frame(k->shell, f);
        json_decref(f);
        if (k->worker.fd != fd)
            return;                 /* the frame made us stop (and maybe replace) the worker */
    }
    if (n <= 0 || r < 0) {
        char how[160];
        if (r < 0)
            klog("worker sent a corrupt frame; stopping it");
        if (worker_reap(&k->worker, how, sizeof how) || r < 0)
            klog("worker %s", how);
        else
            kinfo("worker %s", how);    /* it left on its own: idle, or its context unusable (said) */
        shell_on_worker_exit(k->shell, how);
        worker_respawn(k);
    }
}

/* ---- the loop's sources ---- */

static void on_signal_pipe(loop *l, int revents, void *data)
{
    kernel *k = data;
    unsigned char sigs[64];
    ssize_t n = read(k->sigpipe[0], sigs, sizeof sigs);
    for (ssize_t i = 0; i < n; i++) {
        if (sigs[i] == SIGINT) {
            shell_interrupt(k->shell, "interrupted by SIGINT");
        } else if (sigs[i] == SIGTERM) {
            k->quit = true;
            loop_stop(l);
        }
    }
}

static void on_control(loop *l, int revents, void *data)
{
    on_request(data, PORT_CONTROL);
}

static void on_shell(loop *l, int revents, void *data)
{
    on_request(data, PORT_SHELL);
}

static void on_iopub(loop *l, int revents, void *data)
{
    on_subscription(data);
}

/* No input_request is ever pending: read and drop. */
static void on_stdin(loop *l, int revents, void *data)
{
    kernel *k = data;
    shell_request m;
    if (kernel_recv(k, PORT_STDIN, &m))
        wire_msg_free(&m.msg);
}

static void on_worker(loop *l, int revents, void *data)
{
    kernel *k = data;
    if ((revents & LOOP_WRITABLE) && k->worker.fd >= 0)
        worker_flush(&k->worker);   /* a failure shows as the pipe's end, read below */
    if ((revents & (LOOP_READABLE | LOOP_ERROR)) && k->worker.fd >= 0)
        on_worker_output(k);
}

static void on_shell_deadline(loop *l, void *data)
{
    kernel *k = data;
    shell_tick(k->shell);
}

/* The parent is gone: we were reparented (to init or a subreaper: comparing
 * with the parent we started with works under both, where waiting for pid 1
 * does not), or the launcher named by JPY_PARENT_PID has exited. A kernel whose
 * notebook server or nbgrader run was killed then leaves, with its worker,
 * instead of holding a GPU for ever. */
#define PARENT_CHECK_MS 1000

static bool parent_gone(const kernel *k)
{
    if ((int)getppid() != k->parent)
        return true;
    return k->jpy_parent > 1 && kill(k->jpy_parent, 0) != 0 && errno == ESRCH;
}

static void watch_parent(loop *l, void *data)
{
    kernel *k = data;
    if (parent_gone(k)) {
        klog("kernel: its parent (pid %d%s) is gone: shutting down", k->jpy_parent > 1 ? k->jpy_parent : k->parent,
             k->jpy_parent > 1 ? ", JPY_PARENT_PID" : "");
        k->quit = true;
        loop_stop(l);
        return;
    }
    loop_timer_arm(l, k->parent_timer, monotonic_ms() + PARENT_CHECK_MS);
}

static void parent_init(kernel *k)
{
    k->parent = (int)getppid();
    const char *jpy = getenv("JPY_PARENT_PID");
    char *end = NULL;
    long v = jpy && *jpy ? strtol(jpy, &end, 10) : 0;
    k->jpy_parent = end && *end == '\0' && v > 1 && v < 1 << 30 ? (int)v : 0;
}

/* Before each poll: shell requests wait while a cell runs, the worker's pipe
 * is the current worker's (written to while a command is pending), and the
 * shell's next deadline is armed. */
static void before_poll(loop *l, void *data)
{
    kernel *k = data;
    loop_source_events(l, k->shell_source, shell_cell_running(k->shell) ? 0 : LOOP_READABLE);
    loop_source_set(l, k->worker_source, k->worker.fd,
                    LOOP_READABLE | (worker_writing(&k->worker) ? LOOP_WRITABLE : 0));
    loop_timer_arm(l, k->shell_timer, shell_deadline_ms(k->shell));
}

/* In the order their events are served within a turn. */
static int register_sources(kernel *k)
{
    loop *l = k->loop;
    k->shell_timer = loop_timer_add(l, on_shell_deadline, k);
    k->parent_timer = loop_timer_add(l, watch_parent, k);
    loop_before_poll(l, before_poll, k);
    parent_init(k);
    if (k->parent_timer >= 0)
        loop_timer_arm(l, k->parent_timer, monotonic_ms() + PARENT_CHECK_MS);
    return k->shell_timer < 0 || k->parent_timer < 0 || loop_source_add(l, NULL, k->sigpipe[0], LOOP_READABLE, on_signal_pipe, k) < 0
           || loop_source_add(l, k->sock[PORT_CONTROL], -1, LOOP_READABLE, on_control, k) < 0
           || loop_source_add(l, k->sock[PORT_IOPUB], -1, LOOP_READABLE, on_iopub, k) < 0
           || loop_source_add(l, k->sock[PORT_STDIN], -1, LOOP_READABLE, on_stdin, k) < 0
           || (k->worker_source = loop_source_add(l, NULL, -1, 0, on_worker, k)) < 0
           || (k->shell_source = loop_source_add(l, k->sock[PORT_SHELL], -1, LOOP_READABLE, on_shell, k)) < 0
           ? -1 : 0;
}

int kernel_loop(kernel *k)
{
    kernel_publish(k, NULL, "status", json_pack("{s:s}", "execution_state", "starting"));
    if (worker_start(&k->worker, k->exe))
        klog("worker did not start; the first command will try again");
    return loop_run(k->loop) ? 1 : 0;
}
