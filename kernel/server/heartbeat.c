/* heartbeat.c — the heartbeat echo thread (see heartbeat.h). */
#include "server/heartbeat.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <zmq.h>

#include "base/log.h"

struct heartbeat {
    void *zctx;                 /* its own context: its own I/O thread */
    void *sock;                 /* REP, owned by the thread once started */
    void *stop_rx, *stop_tx;    /* inproc PAIR: the main thread asks the echo to end */
    pthread_t thread;
    char endpoint[512];
};

/* Echoes one request: every part is moved back out as it arrives (REP adds
 * the envelope). A request of too many parts is read to its end and not answered. */
static void echo_one(void *sock)
{
    zmq_msg_t part[HEARTBEAT_MAX_PARTS];
    int n = 0, more = 1;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            break;
        }
        more = zmq_msg_more(&m);
        if (n < HEARTBEAT_MAX_PARTS)
            part[n++] = m;
        else
            zmq_msg_close(&m);
    }
    bool whole = !more && n > 0 && n < HEARTBEAT_MAX_PARTS;
    for (int i = 0; i < n; i++) {
        if (!whole || zmq_msg_send(&part[i], sock, i < n - 1 ? ZMQ_SNDMORE : 0) < 0)
            zmq_msg_close(&part[i]);
    }
    if (!whole && n > 0) {
        /* REP now expects a reply before the next request: an empty one */
        zmq_send(sock, "", 0, ZMQ_DONTWAIT);
    }
}

static void *echo_loop(void *arg)
{
    heartbeat *hb = arg;
    for (;;) {
        zmq_pollitem_t it[2] = { { hb->sock, 0, ZMQ_POLLIN, 0 }, { hb->stop_rx, 0, ZMQ_POLLIN, 0 } };
        if (zmq_poll(it, 2, -1) < 0) {
            if (zmq_errno() == EINTR)
                continue;
            klog("heartbeat: poll failed: %s", zmq_strerror(zmq_errno()));
            return NULL;
        }
        if (it[1].revents)
            return NULL;
        if (it[0].revents)
            echo_one(hb->sock);
    }
}

static void close_all(heartbeat *hb)
{
    int zero = 0;
    void *socks[] = { hb->sock, hb->stop_rx, hb->stop_tx };
    for (size_t i = 0; i < sizeof socks / sizeof *socks; i++)
        if (socks[i]) {
            zmq_setsockopt(socks[i], ZMQ_LINGER, &zero, sizeof zero);
            zmq_close(socks[i]);
        }
    if (hb->zctx)
        zmq_ctx_term(hb->zctx);
    free(hb);
}

heartbeat *heartbeat_start(const char *endpoint, bool ipv6)
{
    heartbeat *hb = calloc(1, sizeof *hb);
    if (!hb)
        return NULL;
    int64_t max = HEARTBEAT_MAX_BYTES;
    int hwm = 64, one = 1;
    size_t len = sizeof hb->endpoint;
    const char *stop_ep = "inproc://cudalab-heartbeat-stop";
    if (!(hb->zctx = zmq_ctx_new()) || !(hb->sock = zmq_socket(hb->zctx, ZMQ_REP)) ||
        !(hb->stop_rx = zmq_socket(hb->zctx, ZMQ_PAIR)) || !(hb->stop_tx = zmq_socket(hb->zctx, ZMQ_PAIR))) {
        klog("heartbeat: cannot create its sockets: %s", zmq_strerror(zmq_errno()));
        close_all(hb);
        return NULL;
    }
    zmq_setsockopt(hb->sock, ZMQ_MAXMSGSIZE, &max, sizeof max);
    zmq_setsockopt(hb->sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(hb->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    if (ipv6)
        zmq_setsockopt(hb->sock, ZMQ_IPV6, &one, sizeof one);
    if (zmq_bind(hb->sock, endpoint) < 0 ||
        zmq_getsockopt(hb->sock, ZMQ_LAST_ENDPOINT, hb->endpoint, &len) < 0) {
        klog("cannot bind heartbeat socket to %s: %s", endpoint, zmq_strerror(zmq_errno()));
        close_all(hb);
        return NULL;
    }
    if (zmq_bind(hb->stop_rx, stop_ep) < 0 || zmq_connect(hb->stop_tx, stop_ep) < 0 ||
        pthread_create(&hb->thread, NULL, echo_loop, hb) != 0) {
        klog("heartbeat: cannot start its thread");
        close_all(hb);
        return NULL;
    }
    return hb;
}

const char *heartbeat_endpoint(const heartbeat *hb)
{
    return hb->endpoint;
}

void heartbeat_stop(heartbeat *hb)
{
    if (!hb)
        return;
    zmq_send(hb->stop_tx, "", 0, 0);
    pthread_join(hb->thread, NULL);
    close_all(hb);
}
