/* frame.h — small framed JSON messages between the kernel and its device worker.
 *
 * Each frame is a 4-byte big-endian length followed by that many bytes of JSON.
 * Kernel -> worker: {"op":"run", "magic", "params", "body"}.
 * Worker -> kernel: {"op":"hello", "backend", "note"}, {"op":"stream", "name", "text"},
 *   {"op":"result", "doc", "view", "display_id", "mode"}, {"op":"error", "ename",
 *   "evalue", "traceback"}, {"op":"done", "leaving"} (leaving: the worker exits now,
 *   after a sticky CUDA error).
 */
#ifndef CUDALAB_FRAME_H
#define CUDALAB_FRAME_H

#include <jansson.h>
#include <stddef.h>

#define FRAME_MAX (256u << 20)

/* One frame as bytes (length and JSON), for a caller that writes it in pieces
 * without blocking. Returns a malloc'd buffer of *len bytes, or NULL. */
char *frame_encode(const json_t *msg, size_t *len);

/* Writes one frame, blocking, retrying on EINTR and short writes. Returns 0 or -1. */
int frame_write(int fd, const json_t *msg);

/* Reads exactly one frame, blocking. Returns a new reference, or NULL on EOF/error. */
json_t *frame_read(int fd);

/* Incremental reader for the kernel's non-blocking event loop. */
typedef struct frame_reader {
    char *buf;
    size_t len, cap;
    size_t off;                 /* frames before this have been taken */
} frame_reader;

/* Reads what the fd has now. Returns bytes read (> 0), 0 on EOF, -1 on error. */
long frame_fill(frame_reader *r, int fd);
/* Pops one complete frame: 1 with *out set, 0 when none is complete yet, -1
 * when the stream is corrupt (oversized or invalid JSON). */
int frame_next(frame_reader *r, json_t **out);
void frame_reader_reset(frame_reader *r);

#endif
