/* frame.c — length-prefixed JSON frames over a pipe or socketpair (see frame.h). */
#include "exec/frame.h"

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

int frame_write(int fd, const json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    if (!text)
        return -1;
    size_t n = strlen(text);
    int rc = -1;
    if (n <= FRAME_MAX) {
        unsigned char hdr[4] = { (unsigned char)(n >> 24), (unsigned char)(n >> 16),
                                 (unsigned char)(n >> 8), (unsigned char)n };
        rc = write_all(fd, hdr, 4) || write_all(fd, text, n) ? -1 : 0;
    }
    free(text);
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
    if (r->cap - r->len < 65536) {
        size_t cap = r->cap ? r->cap * 2 : 65536;
        char *nb = realloc(r->buf, cap);
        if (!nb)
            return -1;
        r->buf = nb;
        r->cap = cap;
    }
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
    if (r->len < 4)
        return 0;
    uint32_t n = get_be32((const unsigned char *)r->buf);
    if (n > FRAME_MAX)
        return -1;
    if (r->len - 4 < n)
        return 0;
    *out = json_loadb(r->buf + 4, n, 0, NULL);
    memmove(r->buf, r->buf + 4 + n, r->len - 4 - n);
    r->len -= 4 + (size_t)n;
    return *out ? 1 : -1;
}

void frame_reader_reset(frame_reader *r)
{
    free(r->buf);
    memset(r, 0, sizeof *r);
}
