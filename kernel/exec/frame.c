/* frame.c — length-prefixed JSON frames over a pipe or socketpair (see frame.h). */
#include "exec/frame.h"
#include "base/buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n > 0) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

static uint32_t get_be32(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

char *frame_encode(const json_t *msg, size_t *len)
{
    /* the 4 bytes of the length go in front of the text, in one buffer */
    size_t n = json_dumpb(msg, NULL, 0, JSON_COMPACT);
    if (n == 0 || n > FRAME_MAX)
        return NULL;
    char *buf = malloc(4 + n);
    if (!buf || json_dumpb(msg, buf + 4, n, JSON_COMPACT) != n) {
        free(buf);
        return NULL;
    }
    buf[0] = (char)(n >> 24);
    buf[1] = (char)(n >> 16);
    buf[2] = (char)(n >> 8);
    buf[3] = (char)n;
    *len = 4 + n;
    return buf;
}

int frame_write(int fd, const json_t *msg)
{
    size_t n;
    char *buf = frame_encode(msg, &n);
    int rc = buf ? write_all(fd, buf, n) : -1;
    free(buf);
    return rc;
}

json_t *frame_read(int fd)
{
    unsigned char hdr[4];
    if (read_all(fd, hdr, 4))
        return NULL;
    uint32_t n = get_be32(hdr);
    if (n > FRAME_MAX)
        return NULL;
    char *buf = malloc(n ? n : 1);
    if (!buf || read_all(fd, buf, n)) {
        free(buf);
        return NULL;
    }
    json_t *v = json_loadb(buf, n, 0, NULL);
    free(buf);
    return v;
}

long frame_fill(frame_reader *r, int fd)
{
    if (r->off > 0) {               /* drop the frames already taken, once per read */
        memmove(r->buf, r->buf + r->off, r->len - r->off);
        r->len -= r->off;
        r->off = 0;
    }
    if (array_grow(&r->buf, &r->cap, r->len + 65536, 1) != 0)   /* room for a read of 64 KiB at least */
        return -1;
    ssize_t n;
    do
        n = read(fd, r->buf + r->len, r->cap - r->len);
    while (n < 0 && errno == EINTR);
    if (n > 0)
        r->len += (size_t)n;
    return (long)n;
}

int frame_next(frame_reader *r, json_t **out)
{
    *out = NULL;
    size_t have = r->len - r->off;
    if (have < 4)
        return 0;
    const char *p = r->buf + r->off;
    uint32_t n = get_be32((const unsigned char *)p);
    if (n > FRAME_MAX)
        return -1;
    if (have - 4 < n)
        return 0;
    *out = json_loadb(p + 4, n, 0, NULL);
    r->off += 4 + (size_t)n;
    return *out ? 1 : -1;
}

void frame_reader_reset(frame_reader *r)
{
    free(r->buf);
    memset(r, 0, sizeof *r);
}
