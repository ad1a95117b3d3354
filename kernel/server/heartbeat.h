/* heartbeat.h — the heartbeat echo, on a thread of its own.
 *
 * The README promises heartbeat "at all times": whatever the event loop is
 * doing (decoding a 50 MB cell, storing a result, answering a flood), the
 * echo never waits for it. As ipykernel does, a dedicated thread owns the REP
 * socket, in a ZeroMQ context of its own (so its I/O thread is not the one
 * busy reading a 50 MB request), and sends every request back as it came,
 * moving ZeroMQ's message buffers without copying them. Frames are capped tiny
 * (HEARTBEAT_MAX_BYTES) so that an unauthenticated peer cannot make the kernel
 * hold memory through it.
 */
#ifndef CUDALAB_HEARTBEAT_H
#define CUDALAB_HEARTBEAT_H

#include <stdbool.h>

#define HEARTBEAT_MAX_BYTES 4096        /* one frame of a ping; clients send a few bytes */
#define HEARTBEAT_MAX_PARTS 16          /* frames of one ping */

typedef struct heartbeat heartbeat;

/* Binds endpoint (tcp://host:port, :0 or * for any port; ipv6 as for the other
 * sockets) and starts echoing. Returns NULL (logged) when that fails. */
heartbeat *heartbeat_start(const char *endpoint, bool ipv6);
/* The endpoint bound (with the port chosen), as ZMQ_LAST_ENDPOINT gives it. */
const char *heartbeat_endpoint(const heartbeat *hb);
/* Stops the thread, closes its socket and context. NULL is a no-op. */
void heartbeat_stop(heartbeat *hb);

#endif
