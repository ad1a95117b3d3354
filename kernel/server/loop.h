/* loop.h — the kernel's event loop: registered sources and timers, in the
 * shape of Redis' ae.c.
 *
 * A source is a ZeroMQ socket or a file descriptor with a callback; a timer is
 * a callback with a moment (monotonic ms). One turn runs the before-poll hook
 * (where the owner adjusts what is watched), polls with a timeout that ends at
 * the nearest armed timer, runs the expired timers, then the callbacks of the
 * ready sources in the order they were registered. Nothing here knows what a
 * source is for.
 */
#ifndef CUDALAB_LOOP_H
#define CUDALAB_LOOP_H

#include <stdbool.h>

enum {
    LOOP_READABLE = 1,
    LOOP_WRITABLE = 2,
    LOOP_ERROR = 4,             /* reported, never asked for */
};

typedef struct loop loop;
/* revents: what the source is ready for (LOOP_* bits). */
typedef void (*loop_source_fn)(loop *l, int revents, void *data);
typedef void (*loop_fn)(loop *l, void *data);

loop *loop_new(void);
void loop_free(loop *l);

/* Registers a ZeroMQ socket (sock) or, with sock NULL, a file descriptor
 * (fd; -1 for one to be set later). events: LOOP_READABLE | LOOP_WRITABLE.
 * Returns the source's id, or -1 when memory ran out. */
int loop_source_add(loop *l, void *sock, int fd, int events, loop_source_fn fn, void *data);
/* Changes a file-descriptor source's fd and events; fd -1 or events 0 leaves
 * it unwatched for now. When the fd changes, what was polled for the old one
 * this turn is dropped (it belonged to something that is gone). */
void loop_source_set(loop *l, int id, int fd, int events);
/* Changes only what a source waits for (0: not watched for now). */
void loop_source_events(loop *l, int id, int events);

/* Registers a timer, disarmed. Returns its id, or -1 when memory ran out. */
int loop_timer_add(loop *l, loop_fn fn, void *data);
/* Arms the timer to run once at when_ms (base/clock.h's monotonic_ms); 0 disarms it. */
void loop_timer_arm(loop *l, int id, double when_ms);

/* Runs before every poll, with data. */
void loop_before_poll(loop *l, loop_fn fn, void *data);

/* Runs turns until loop_stop. Returns 0, or -1 when polling failed (logged). */
int loop_run(loop *l);
/* One turn. Returns 0, or -1 when polling failed (not for EINTR; logged). */
int loop_turn(loop *l);
/* Ends loop_run after the current callback: no further source of this turn runs. */
void loop_stop(loop *l);
bool loop_stopped(const loop *l);

#endif
