/* loop.c — registered sources and timers, polled with zmq_poll (see loop.h). */
#include "server/loop.h"

#include <errno.h>
#include <stdlib.h>
#include <zmq.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/log.h"

typedef struct source {
    void *sock;
    int fd;
    int events;                 /* LOOP_READABLE | LOOP_WRITABLE, 0 = not watched */
    int revents;                /* this turn's, until its callback runs */
    int item;                   /* its index in the poll items this turn, -1 = not polled */
    loop_source_fn fn;
    void *data;
} source;

typedef struct timer {
    double when_ms;             /* 0 = disarmed */
    loop_fn fn;
    void *data;
} timer;

struct loop {
    source *src;
    int nsrc;
    size_t capsrc, capitems;
    timer *tim;
    int ntim;
    size_t captim;
    zmq_pollitem_t *items;      /* one per source, rebuilt each turn from src */
    loop_fn before;
    void *before_data;
    bool stopped;
};

loop *loop_new(void)
{
    return calloc(1, sizeof(loop));
}

void loop_free(loop *l)
{
    if (!l)
        return;
    free(l->src);
    free(l->tim);
    free(l->items);
    free(l);
}

int loop_source_add(loop *l, void *sock, int fd, int events, loop_source_fn fn, void *data)
{
    size_t need = (size_t)l->nsrc + 1;
    if (array_grow(&l->src, &l->capsrc, need, sizeof *l->src) != 0 ||
        array_grow(&l->items, &l->capitems, need, sizeof *l->items) != 0)
        return -1;
    l->src[l->nsrc] = (source){ sock, sock ? -1 : fd, events, 0, -1, fn, data };
    return l->nsrc++;
}

void loop_source_set(loop *l, int id, int fd, int events)
{
    source *s = &l->src[id];
    if (s->fd != fd)
        s->revents = 0;
    s->fd = fd;
    s->events = events;
}

void loop_source_events(loop *l, int id, int events)
{
    l->src[id].events = events;
}

int loop_timer_add(loop *l, loop_fn fn, void *data)
{
    if (array_grow(&l->tim, &l->captim, (size_t)l->ntim + 1, sizeof *l->tim) != 0)
        return -1;
    l->tim[l->ntim] = (timer){ 0, fn, data };
    return l->ntim++;
}

void loop_timer_arm(loop *l, int id, double when_ms)
{
    l->tim[id].when_ms = when_ms;
}

void loop_before_poll(loop *l, loop_fn fn, void *data)
{
    l->before = fn;
    l->before_data = data;
}

void loop_stop(loop *l)
{
    l->stopped = true;
}

bool loop_stopped(const loop *l)
{
    return l->stopped;
}

static bool watched(const source *s)
{
    return s->events && (s->sock || s->fd >= 0);
}

/* The poll timeout: until the nearest armed timer (rounded up, so that it has
 * expired when the poll returns), or -1 (none: wait for a source). */
static long poll_timeout(const loop *l)
{
    double nearest = 0;
    for (int i = 0; i < l->ntim; i++)
        if (l->tim[i].when_ms > 0 && (nearest == 0 || l->tim[i].when_ms < nearest))
            nearest = l->tim[i].when_ms;
    if (nearest == 0)
        return -1;
    double left = nearest - monotonic_ms();
    return left > 0 ? (long)left + 1 : 0;
}

/* Runs the timers whose moment has come; each is disarmed before it runs. */
static void run_timers(loop *l)
{
    double now = monotonic_ms();
    for (int i = 0; i < l->ntim && !l->stopped; i++) {
        timer *t = &l->tim[i];
        if (t->when_ms > 0 && now >= t->when_ms) {
            t->when_ms = 0;
            t->fn(l, t->data);
        }
    }
}

int loop_turn(loop *l)
{
    if (l->before)
        l->before(l, l->before_data);
    int n = 0;
    for (int i = 0; i < l->nsrc; i++) {
        source *s = &l->src[i];
        s->revents = 0;
        s->item = watched(s) ? n : -1;
        if (s->item < 0)
            continue;
        l->items[n++] = (zmq_pollitem_t){ s->sock, s->sock ? 0 : s->fd,
                                          (short)((s->events & LOOP_READABLE ? ZMQ_POLLIN : 0)
                                                  | (s->events & LOOP_WRITABLE ? ZMQ_POLLOUT : 0)), 0 };
    }
    int rc = zmq_poll(l->items, n, poll_timeout(l));
    run_timers(l);
    if (rc < 0) {
        if (zmq_errno() == EINTR)
            return 0;
        klog("poll failed: %s", zmq_strerror(zmq_errno()));
        return -1;
    }
    for (int i = 0; i < l->nsrc; i++) {
        short re = l->src[i].item >= 0 ? l->items[l->src[i].item].revents : 0;
        l->src[i].revents = (re & ZMQ_POLLIN ? LOOP_READABLE : 0) | (re & ZMQ_POLLOUT ? LOOP_WRITABLE : 0)
                            | (re & ZMQ_POLLERR ? LOOP_ERROR : 0);
    }
    /* a callback may change a later source (loop_source_set drops its events) */
    for (int i = 0; i < l->nsrc && !l->stopped; i++) {
        int re = l->src[i].revents;
        l->src[i].revents = 0;
        if (re)
            l->src[i].fn(l, re, l->src[i].data);
    }
    return 0;
}

int loop_run(loop *l)
{
    while (!l->stopped)
        if (loop_turn(l))
            return -1;
    return 0;
}
