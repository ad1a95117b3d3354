/* fuzz_frame.c — libFuzzer target for the kernel <-> worker framing (frame.h).
 *
 * The input is a byte stream as the kernel would read it from the worker's
 * socket: 4-byte big-endian lengths, each followed by that much JSON. It is
 * read three ways:
 *   1. frame_next straight on a frame_reader holding the whole input;
 *   2. written into a non-blocking socketpair in chunks whose sizes come from
 *      the input's first byte, with frame_fill + frame_next after each chunk,
 *      as the kernel's event loop does (frames split across reads);
 *   3. frame_read (the worker's blocking reader) from a socket that holds the
 *      input and then EOF.
 * All three must agree on the frames they yield. Each decoded frame is also
 * written back with frame_write and read with frame_read: the round trip must
 * give an equal JSON value.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "exec/frame.h"

#define MAX_FRAMES 256
#define SOCK_ROOM (1u << 20)            /* inputs are far smaller (libFuzzer -max_len) */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_frame: property violated: %s\n", what);
        abort();
    }
}

typedef struct seen {
    json_t *v[MAX_FRAMES];
    int n;
    int end;                            /* frame_next's last answer: 0 (need more) or -1 */
} seen;

static void seen_free(seen *s)
{
    for (int i = 0; i < s->n; i++)
        json_decref(s->v[i]);
    s->n = 0;
}

/* Pops frames until none is complete or the stream is corrupt. */
static int drain(frame_reader *r, seen *s)
{
    json_t *v;
    int rc;
    while ((rc = frame_next(r, &v)) == 1) {
        check(v != NULL, "frame_next gives a value with 1");
        if (s->n < MAX_FRAMES)
            s->v[s->n++] = v;
        else
            json_decref(v);
    }
    check(rc == 0 || rc == -1, "frame_next returns 1, 0 or -1");
    check(v == NULL, "no value without 1");
    s->end = rc;
    return rc;
}

static int socketpair_big(int sv[2])
{
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -1;
    int room = SOCK_ROOM;
    setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &room, sizeof room);
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &room, sizeof room);
    return 0;
}

static void way_direct(const uint8_t *data, size_t size, seen *s)
{
    frame_reader r = { 0 };
    r.buf = malloc(size ? size : 1);
    check(r.buf != NULL, "malloc");
    memcpy(r.buf, data, size);
    r.len = r.cap = size;
    drain(&r, s);
    frame_reader_reset(&r);
    check(r.buf == NULL && r.len == 0 && r.cap == 0, "reset clears the reader");
}

static void way_chunked(const uint8_t *data, size_t size, size_t chunk, seen *s)
{
    int sv[2];
    check(socketpair_big(sv) == 0, "socketpair");
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    frame_reader r = { 0 };
    size_t off = 0;
    int rc = 0;
    while (rc == 0) {
        if (off < size) {
            size_t n = size - off < chunk ? size - off : chunk;
            ssize_t w = write(sv[1], data + off, n);
            check(w > 0, "write to the socketpair");
            off += (size_t)w;
        } else if (sv[1] >= 0) {
            close(sv[1]);               /* the worker is gone: EOF */
            sv[1] = -1;
        }
        long got = frame_fill(&r, sv[0]);
        check(got >= 0 || errno == EAGAIN, "frame_fill reads or would block");
        check(r.len <= r.cap, "reader length within capacity");
        rc = drain(&r, s);
        if (got == 0)
            break;                      /* EOF: whatever is left is an incomplete frame */
    }
    frame_reader_reset(&r);
    close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
}

static void way_blocking(const uint8_t *data, size_t size, seen *s)
{
    int sv[2];
    check(socketpair_big(sv) == 0, "socketpair");
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(sv[1], data + off, size - off);
        check(w > 0, "write to the socketpair");
        off += (size_t)w;
    }
    close(sv[1]);
    json_t *v;
    while (s->n < MAX_FRAMES && (v = frame_read(sv[0])) != NULL)
        s->v[s->n++] = v;
    close(sv[0]);
}

/* frame_read allocates a frame's declared length before reading it: skip the
 * blocking reader when the stream announces a big frame it does not hold (a
 * 256 MiB allocation per input only slows the fuzzer down). */
static bool blocking_is_cheap(const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (size - off >= 4) {
        uint32_t n = (uint32_t)data[off] << 24 | (uint32_t)data[off + 1] << 16 |
                     (uint32_t)data[off + 2] << 8 | data[off + 3];
        if (n > size - off - 4)
            return n <= (1u << 20);
        off += 4 + (size_t)n;
    }
    return true;
}

static void round_trip(const json_t *v)
{
    int sv[2];
    check(socketpair_big(sv) == 0, "socketpair");
    char *text = json_dumps(v, JSON_COMPACT);
    bool fits = text && strlen(text) < SOCK_ROOM / 4;
    free(text);
    if (fits && frame_write(sv[1], v) == 0) {
        json_t *back = frame_read(sv[0]);
        check(back != NULL, "a written frame reads back");
        check(json_equal(v, back), "round trip keeps the value");
        json_decref(back);
    }
    close(sv[0]);
    close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t chunks[] = { 1, 2, 3, 4, 5, 7, 64, 4096 };
    size_t chunk = chunks[size ? data[size - 1] % 8 : 0];
    seen a = { 0 }, b = { 0 }, c = { 0 };
    way_direct(data, size, &a);
    way_chunked(data, size, chunk, &b);
    check(a.n == b.n, "chunked reads yield the same number of frames");
    check(a.end == b.end || (a.n == MAX_FRAMES), "chunked reads end the same way");
    for (int i = 0; i < a.n; i++)
        check(json_equal(a.v[i], b.v[i]), "chunked reads yield the same frames");
    /* the worker's blocking reader stops where frame_next does */
    if (blocking_is_cheap(data, size)) {
        way_blocking(data, size, &c);
        check(c.n == a.n, "the blocking reader yields the same number of frames");
        for (int i = 0; i < a.n; i++)
            check(json_equal(a.v[i], c.v[i]), "the blocking reader yields the same frames");
    }
    for (int i = 0; i < a.n; i++)
        round_trip(a.v[i]);
    seen_free(&a);
    seen_free(&b);
    seen_free(&c);
    return 0;
}
