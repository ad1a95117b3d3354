/* heartbeat.c — the heartbeat echo thread (see heartbeat.h). */
#include "heartbeat.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <zmq.h>

#include "log.h"

struct heartbeat {
    void *sock;                 /* REP, owned by the thread once started */
    void *stop_rx, *stop_tx;    /* inproc PAIR: the main thread asks the echo to end */
    pthread_t thread;
};

void heartbeat_configure(void *sock)
{
    int64_t max = HEARTBEAT_MAX_BYTES;
    int hwm = 64;
    zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &max, sizeof max);
    zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
}

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

heartbeat *heartbeat_start(void *zctx, void *sock)
{
    heartbeat *hb = calloc(1, sizeof *hb);
    if (!hb)
        return NULL;
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://cudalab-heartbeat-%p", (void *)hb);
    hb->sock = sock;
    hb->stop_rx = zmq_socket(zctx, ZMQ_PAIR);
    hb->stop_tx = zmq_socket(zctx, ZMQ_PAIR);
    int zero = 0;
    if (hb->stop_rx && hb->stop_tx && zmq_bind(hb->stop_rx, ep) == 0 && zmq_connect(hb->stop_tx, ep) == 0) {
        zmq_setsockopt(hb->stop_tx, ZMQ_LINGER, &zero, sizeof zero);
        zmq_setsockopt(hb->stop_rx, ZMQ_LINGER, &zero, sizeof zero);
        if (pthread_create(&hb->thread, NULL, echo_loop, hb) == 0)
            return hb;
    }
    klog("heartbeat: cannot start its thread: %s", zmq_strerror(zmq_errno()));
    if (hb->stop_rx)
        zmq_close(hb->stop_rx);
    if (hb->stop_tx)
        zmq_close(hb->stop_tx);
    free(hb);
    return NULL;
}

void heartbeat_stop(heartbeat *hb)
{
    if (!hb)
        return;
    zmq_send(hb->stop_tx, "", 0, 0);
    pthread_join(hb->thread, NULL);
    int zero = 0;
    zmq_setsockopt(hb->sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_close(hb->sock);
    zmq_close(hb->stop_rx);
    zmq_close(hb->stop_tx);
    free(hb);
}
