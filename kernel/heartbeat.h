/* heartbeat.h — the heartbeat echo, on a thread of its own.
 *
 * The README promises heartbeat "at all times": whatever the event loop is
 * doing (decoding a 50 MB cell, storing a result, answering a flood), the
 * echo never waits for it. As ipykernel does, a dedicated thread owns the REP
 * socket and sends every request back as it came, moving ZeroMQ's message
 * buffers without copying them. Frames are capped tiny (HEARTBEAT_MAX_BYTES) so
 * that an unauthenticated peer cannot make the kernel hold memory through it.
 */
#ifndef CUDALAB_HEARTBEAT_H
#define CUDALAB_HEARTBEAT_H

#define HEARTBEAT_MAX_BYTES 4096        /* one frame of a ping; clients send a few bytes */
#define HEARTBEAT_MAX_PARTS 16          /* frames of one ping */

typedef struct heartbeat heartbeat;

/* Sets the heartbeat socket options that must precede bind (size cap, queues). */
void heartbeat_configure(void *sock);
/* Starts echoing on sock (a bound REP socket of zctx), which the thread now
 * owns. Returns NULL (logged) when the thread cannot start; sock is then the caller's. */
heartbeat *heartbeat_start(void *zctx, void *sock);
/* Stops the thread and closes its socket. NULL is a no-op. */
void heartbeat_stop(heartbeat *hb);

#endif
