/* kernel.c — sockets and the event loop of the kernel process (see kernel.h). */
#include "base/text.h"
#include "server/kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "render/render.h"
#include "server/heartbeat.h"
#include "base/log.h"
#include "proto/msg.h"

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

int kernel_open(kernel *k, const conn_info *c)
{
    memset(k, 0, sizeof *k);
    /* A large request's buffers are mapped and unmapped whole: glibc would
     * otherwise raise its threshold after the first one and keep the next ones'
     * memory in its heap, held by the kernel for good. */
    mallopt(M_MMAP_THRESHOLD, LARGE_ALLOCATION);
    k->grace_ms = env_number("CUDALAB_INTERRUPT_GRACE_MS", 500);
    k->cell_timeout_ms = env_number("CUDALAB_CELL_TIMEOUT", 0) * 1e3;
    k->max_output = (size_t)env_number("CUDALAB_MAX_OUTPUT", 1 << 20);
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
    k->history = history_new();
    k->results = results_new();
    k->zctx = zmq_ctx_new();
    if (!k->sign || !k->replay || !k->history || !k->results || !k->zctx || install_signals(k)) {
        klog("cannot initialise the kernel (out of memory or OpenSSL failure)");
        return -1;
    }
    for (int p = 0; p < PORT_COUNT; p++)
        if (p != PORT_HB && open_socket(k, c, (enum conn_port)p))
            return -1;
    char ep[512];
    conn_endpoint(c, PORT_HB, ep, sizeof ep);
    return (k->hb = heartbeat_start(ep, conn_is_ipv6(c))) ? 0 : -1;
}

void kernel_close(kernel *k)
{
    if (k->dropped)
        klog("%lu malformed, unsigned or replayed messages were dropped this session", k->dropped);
    if (k->welcomes_refused)
        klog("%lu iopub subscriptions beyond %d a second were not welcomed", k->welcomes_refused,
             WELCOMES_PER_SECOND);
    cell_discard(k);
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
    history_free(k->history);
    results_free(k->results);
    for (int i = 0; i < 2; i++)
        if (k->sigpipe[i] >= 0)
            close(k->sigpipe[i]);
    sig_write_fd = -1;
}

/* ---- sending ---- */

void kernel_reply(kernel *k, void *sock, const wire_msg *req, const char *msg_type, json_t *content)
{
    char type[64];
    snprintf(type, sizeof type, "%s", msg_type);
    json_t *h = msg_header(type, k->session);
    wire_send(sock, k->sign, req->ids, req->nids, h, req->header, NULL, content);
    json_decref(h);
    json_decref(content);
}

void kernel_publish(kernel *k, const wire_msg *parent, const char *msg_type, json_t *content)
{
    char topic[128];
    snprintf(topic, sizeof topic, "kernel.%s.%s", k->session, msg_type);
    blob id = { topic, strlen(topic) };
    json_t *h = msg_header(msg_type, k->session);
    json_t *empty = parent ? NULL : json_object();
    wire_send(k->sock[PORT_IOPUB], k->sign, &id, 1, h, parent ? parent->header : empty, NULL, content);
    json_decref(empty);
    json_decref(h);
    json_decref(content);
}

void kernel_status(kernel *k, const wire_msg *parent, const char *state)
{
    kernel_publish(k, parent, "status", json_pack("{s:s}", "execution_state", state));
}

/* ---- receiving ---- */

/* Answers a request that will not be handled with an error reply (and, for a
 * cell, the error on iopub, which is what a notebook shows under it). */
static void refuse(kernel *k, enum conn_port channel, const wire_msg *req, const char *ename, const char *why)
{
    klog("refused %s: %s", req->msg_type, why);
    json_t *err = json_pack("{s:s, s:s, s:[s+]}", "ename", ename, "evalue", why, "traceback", ename, ": ", why);
    kernel_status(k, req, "busy");
    if (strcmp(req->msg_type, "execute_request") == 0) {
        kernel_publish(k, req, "error", json_deep_copy(err));
        json_object_set_new(err, "execution_count", json_integer(k->exec_count));
    }
    json_object_set_new(err, "status", json_string("error"));
    char reply_type[80];
    snprintf(reply_type, sizeof reply_type, "%.*s_reply",
             (int)(strlen(req->msg_type) - strlen("_request")), req->msg_type);
    kernel_reply(k, k->sock[channel], req, reply_type, err);
    kernel_status(k, req, "idle");
}

static void dispatch(kernel *k, enum conn_port channel, wire_msg *req)
{
    handler_fn fn = shell_handler(req->msg_type, channel);
    if (!fn) {
        klog("ignored unknown %s message type '%.64s'", conn_port_name(channel), req->msg_type);
        return;
    }
    char why[160];
    bool bad = shell_check_content(req->msg_type, channel, req->content, why, sizeof why) != 0;
    bool is_request = strstr(req->msg_type, "_request") != NULL;
    if (bad && !is_request) {               /* comm messages have no reply to carry an error */
        k->dropped++;
        klog("dropped %s message: %s", conn_port_name(channel), why);
        return;
    }
    if (bad) {
        refuse(k, channel, req, "ProtocolError", why);
        return;
    }
    kernel_status(k, req, "busy");
    if (fn(k, k->sock[channel], req) == HANDLED_DONE)
        kernel_status(k, req, "idle");
}

/* A request larger than CUDALAB_MAX_MESSAGE (but under ZeroMQ's cap, twice
 * that) is answered with an error that says so, instead of being run. */
static bool refused_as_too_large(kernel *k, enum conn_port channel, const wire_msg *req, size_t bytes)
{
    if (bytes <= k->max_message)
        return false;
    char why[256], got[32], max[32];
    format_bytes((double)bytes, got, sizeof got);
    format_bytes((double)k->max_message, max, sizeof max);
    snprintf(why, sizeof why, "the %s is %s; the kernel takes requests of up to %s (CUDALAB_MAX_MESSAGE)",
             req->msg_type, got, max);
    if (strstr(req->msg_type, "_request"))
        refuse(k, channel, req, "RequestTooLarge", why);
    else
        klog("dropped %s message: %s", conn_port_name(channel), why);
    return true;
}

/* Reads one message from a ROUTER socket. Returns 1 and fills req, 0 when
 * nothing was ready or the message was dropped (logged). */
static int kernel_recv(kernel *k, enum conn_port channel, wire_msg *req)
{
    blob *frames;
    int n = wire_recv(k->sock[channel], &frames);
    if (n == 0)
        return 0;
    char why[128];
    int rc = n < 0 ? -1 : wire_decode(frames, (size_t)n, k->sign, k->replay, req, why, sizeof why);
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
    if (refused_as_too_large(k, channel, req, bytes)) {
        wire_msg_free(req);
        return 0;
    }
    if (klog_verbose)
        klog("%s: %s", conn_port_name(channel), req->msg_type);
    return 1;
}

#define ABORT_GAP_MS 3      /* a "Run all" batch arrives back to back */
#define ABORT_MAX_MS 20
#define ABORT_MAX_MSGS 1024

struct drained {
    wire_msg *msgs;
    size_t n;
};

struct drained *kernel_drain_shell(kernel *k)
{
    struct drained *d = calloc(1, sizeof *d);
    if (!d || !(d->msgs = calloc(ABORT_MAX_MSGS, sizeof *d->msgs))) {
        free(d);
        return NULL;
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (d->n < ABORT_MAX_MSGS) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        long spent = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
        zmq_pollitem_t it = { k->sock[PORT_SHELL], 0, ZMQ_POLLIN, 0 };
        if (spent >= ABORT_MAX_MS || zmq_poll(&it, 1, ABORT_GAP_MS) <= 0)
            break;
        if (kernel_recv(k, PORT_SHELL, &d->msgs[d->n]))
            d->n++;
    }
    return d;
}

void kernel_answer_drained(kernel *k, struct drained *d)
{
    for (size_t i = 0; d && i < d->n; i++) {
        wire_msg *req = &d->msgs[i];
        if (k->quit)
            ;                       /* a drained shutdown_request ended the session */
        else if (strcmp(req->msg_type, "execute_request") == 0) {
            kernel_status(k, req, "busy");
            execute_abort(k, k->sock[PORT_SHELL], req);
            kernel_status(k, req, "idle");
        } else {
            dispatch(k, PORT_SHELL, req);
        }
        wire_msg_free(req);
    }
    if (d)
        free(d->msgs);
    free(d);
}

static void on_request(kernel *k, enum conn_port channel)
{
    wire_msg req;
    if (!kernel_recv(k, channel, &req))
        return;
    dispatch(k, channel, &req);
    wire_msg_free(&req);
}

/* May another iopub_welcome go out? A client subscribes once per connection;
 * a peer subscribing thousands of times a second must not make the kernel
 * queue thousands of welcomes for every client (a token bucket). */
static bool welcome_allowed(kernel *k)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double now = ts.tv_sec + ts.tv_nsec / 1e9;
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

void kernel_worker_respawn(kernel *k)
{
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

static void on_worker(kernel *k)
{
    int fd = k->worker.fd;
    long n = frame_fill(&k->worker.rd, fd);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    json_t *f;
    int r;
    while ((r = frame_next(&k->worker.rd, &f)) == 1) {
        cell_on_worker_frame(k, f);
        json_decref(f);
        if (k->worker.fd != fd)
            return;                 /* the frame made us stop (and maybe replace) the worker */
    }
    if (n <= 0 || r < 0) {
        char how[160];
        if (r < 0)
            klog("worker sent a corrupt frame; stopping it");
        worker_reap(&k->worker, how, sizeof how);
        klog("worker %s", how);
        cell_on_worker_exit(k, how);
        kernel_worker_respawn(k);
    }
}

static void on_signal_pipe(kernel *k)
{
    unsigned char sigs[64];
    ssize_t n = read(k->sigpipe[0], sigs, sizeof sigs);
    for (ssize_t i = 0; i < n; i++) {
        if (sigs[i] == SIGINT)
            cell_interrupt(k, "interrupted by SIGINT");
        else if (sigs[i] == SIGTERM)
            k->quit = true;
    }
}

int kernel_loop(kernel *k)
{
    kernel_status(k, NULL, "starting");
    if (worker_start(&k->worker, k->exe))
        klog("worker did not start; the first command will try again");
    while (!k->quit) {
        zmq_pollitem_t it[6];
        int n = 0;
        it[n++] = (zmq_pollitem_t){ k->sock[PORT_CONTROL], 0, ZMQ_POLLIN, 0 };
        it[n++] = (zmq_pollitem_t){ k->sock[PORT_IOPUB], 0, ZMQ_POLLIN, 0 };
        it[n++] = (zmq_pollitem_t){ NULL, k->sigpipe[0], ZMQ_POLLIN, 0 };
        it[n++] = (zmq_pollitem_t){ k->sock[PORT_STDIN], 0, ZMQ_POLLIN, 0 };
        int wi = -1, si = -1;
        if (k->worker.fd >= 0) {
            wi = n;
            short ev = ZMQ_POLLIN | (worker_writing(&k->worker) ? ZMQ_POLLOUT : 0);
            it[n++] = (zmq_pollitem_t){ NULL, k->worker.fd, ev, 0 };
        }
        if (!k->cell) {
            si = n;
            it[n++] = (zmq_pollitem_t){ k->sock[PORT_SHELL], 0, ZMQ_POLLIN, 0 };
        }
        long timeout = -1;
        double deadline = cell_deadline_ms(k);
        if (deadline > 0) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            double left = deadline - (ts.tv_sec * 1e3 + ts.tv_nsec / 1e6);
            timeout = left > 0 ? (long)left + 1 : 0;
        }
        int rc = zmq_poll(it, n, timeout);
        cell_tick(k);
        if (rc < 0) {
            if (zmq_errno() == EINTR)
                continue;
            klog("poll failed: %s", zmq_strerror(zmq_errno()));
            return 1;
        }
        if (it[2].revents)
            on_signal_pipe(k);
        if (it[0].revents)
            on_request(k, PORT_CONTROL);
        if (it[1].revents)
            on_subscription(k);
        if (it[3].revents) {        /* no input_request is pending: drain and ignore */
            wire_msg m;
            if (kernel_recv(k, PORT_STDIN, &m))
                wire_msg_free(&m);
        }
        if (wi >= 0 && (it[wi].revents & ZMQ_POLLOUT) && !k->quit && k->worker.fd >= 0)
            worker_flush(&k->worker);   /* a failure shows as the pipe's end, read below */
        if (wi >= 0 && (it[wi].revents & (ZMQ_POLLIN | ZMQ_POLLERR)) && !k->quit && k->worker.fd >= 0)
            on_worker(k);
        if (si >= 0 && it[si].revents && !k->quit)
            on_request(k, PORT_SHELL);
    }
    return 0;
}
