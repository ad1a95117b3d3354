/* http.c — the board's HTTP/1.1 client (http.h): the URL, the response parser, the exchange. */
#include "net/http.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"

/* err (HTTP_ERR_LEN bytes) as printf writes it; returns -1. */
__attribute__((format(printf, 2, 3))) static int fail(char *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, HTTP_ERR_LEN, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- the URL ---- */

static bool clean(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
            return false;
    return true;
}

int http_url_parse(const char *url, http_url *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (strncasecmp(url, "https://", 8) == 0)
        return fail(err, "%s: https is not supported: the kernel speaks plain http to the board service on the hub's "
                    "own network (set CUDALAB_BOARD_URL to its http:// address)", url);
    if (strncasecmp(url, "http://", 7) != 0)
        return fail(err, "'%.120s' is not an http:// URL", url);
    const char *h = url + 7, *end = h + strcspn(h, "/?#");
    if (!clean(url, strlen(url)))
        return fail(err, "'%.120s': a URL without spaces or control characters is needed", url);
    const char *hend = end, *colon = NULL;
    if (*h == '[') {                       /* [v6]:port */
        const char *rb = memchr(h, ']', (size_t)(end - h));
        if (!rb)
            return fail(err, "'%.120s': an unclosed [ in the host", url);
        if (rb + 1 < end && rb[1] != ':')
            return fail(err, "'%.120s': a bad host", url);
        colon = rb + 1 < end ? rb + 1 : NULL;
        h++;
        hend = rb;
    } else {
        colon = memchr(h, ':', (size_t)(end - h));
        if (colon)
            hend = colon;
    }
    if (memchr(h, '@', (size_t)(end - h)))
        return fail(err, "'%.120s': credentials in the URL are not accepted (the token is sent as a header)", url);
    size_t hl = (size_t)(hend - h);
    if (hl == 0 || hl >= sizeof out->host)
        return fail(err, "'%.120s': no host, or one too long", url);
    memcpy(out->host, h, hl);
    if (colon) {
        size_t pl = (size_t)(end - colon - 1);
        long port = 0;
        for (size_t i = 0; i < pl; i++)
            port = isdigit((unsigned char)colon[1 + i]) && port < 100000 ? port * 10 + (colon[1 + i] - '0') : -1;
        if (pl == 0 || port < 1 || port > 65535)
            return fail(err, "'%.120s': a bad port", url);
        snprintf(out->port, sizeof out->port, "%ld", port);
    } else {
        snprintf(out->port, sizeof out->port, "80");
    }
    size_t rest = strcspn(end, "#");
    if (rest >= sizeof out->path - 1)
        return fail(err, "'%.120s': the path is too long", url);
    if (*end != '/')
        out->path[0] = '/';
    memcpy(out->path + strlen(out->path), end, rest);
    return 0;
}

/* ---- the response parser ---- */

void http_response_free(http_response *r)
{
    free(r->body);
    r->body = NULL;
    r->body_len = 0;
}

/* The end of the line starting at p (its '\r'), or NULL when not within [p, end). */
static const char *line_end(const char *p, const char *end)
{
    for (const char *q = p; q + 1 < end; q++)
        if (q[0] == '\r' && q[1] == '\n')
            return q;
    return NULL;
}

/* A header's name (case-insensitive) at line [p, e): its value, spaces trimmed, or NULL. */
static bool header_is(const char *p, const char *e, const char *name, const char **v, const char **ve)
{
    size_t n = strlen(name);
    if ((size_t)(e - p) <= n || strncasecmp(p, name, n) != 0 || p[n] != ':')
        return false;
    p += n + 1;
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    *v = p;
    *ve = e;
    return true;
}

/* Decimal digits [p, e) into *out within max: false when empty, not digits or over. */
static bool decimal(const char *p, const char *e, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (p == e)
        return false;
    for (; p < e; p++) {
        if (!isdigit((unsigned char)*p) || v > (max - (uint64_t)(*p - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = v;
    return true;
}

typedef struct head {
    int status;
    const char *body;               /* the first byte after the headers */
    bool chunked, has_length;
    uint64_t length;
} head;

/* The status line and headers at buf: 1 (h filled), 0 (more needed), -1 (err). */
static int parse_head(const char *buf, size_t len, http_response *out, head *h, char *err)
{
    const char *p = buf;
    size_t seen = len < HTTP_HEADERS_MAX ? len : HTTP_HEADERS_MAX;     /* headers are never looked for past it */
    const char *le = line_end(p, buf + seen);
    if (!le) {
        if (len >= HTTP_HEADERS_MAX)
            return fail(err, "board: the response's status line is too long");
        return 0;
    }
    if ((size_t)(le - p) < 12 || strncmp(p, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)p[7]) || p[8] != ' ' ||
        !isdigit((unsigned char)p[9]) || !isdigit((unsigned char)p[10]) || !isdigit((unsigned char)p[11]) ||
        ((size_t)(le - p) > 12 && p[12] != ' '))
        return fail(err, "board: not an HTTP/1.x response");
    memset(h, 0, sizeof *h);
    h->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    if (h->status < 100 || h->status > 599)
        return fail(err, "board: a status outside 100..599");
    out->content_type[0] = '\0';
    out->retry_after_s = -1;
    for (p = le + 2;; p = le + 2) {
        le = line_end(p, buf + seen);
        if (!le)
            return len >= HTTP_HEADERS_MAX ? fail(err, "board: the response's headers are over %u KiB", HTTP_HEADERS_MAX >> 10) : 0;
        if (le == p)
            break;
        const char *v, *ve;
        uint64_t n;
        if (header_is(p, le, "Content-Length", &v, &ve)) {
            if (!decimal(v, ve, HTTP_RESPONSE_MAX, &n))
                return fail(err, "board: a Content-Length that is not a number within the response limit (%u MiB)", HTTP_RESPONSE_MAX >> 20);
            if (h->has_length && n != h->length)
                return fail(err, "board: two different Content-Lengths");
            h->has_length = true;
            h->length = n;
        } else if (header_is(p, le, "Transfer-Encoding", &v, &ve)) {
            /* only chunked is known (a server that compresses was not asked to: no Accept-Encoding) */
            if (ve - v != 7 || strncasecmp(v, "chunked", 7) != 0)
                return fail(err, "board: a transfer coding other than chunked (%.*s)", ve - v < 40 ? (int)(ve - v) : 40, v);
            h->chunked = true;
        } else if (header_is(p, le, "Content-Type", &v, &ve)) {
            size_t n2 = (size_t)(ve - v) < sizeof out->content_type ? (size_t)(ve - v) : sizeof out->content_type - 1;
            memcpy(out->content_type, v, n2);
            out->content_type[n2] = '\0';
        } else if (header_is(p, le, "Retry-After", &v, &ve)) {
            if (decimal(v, ve, 1u << 30, &n))
                out->retry_after_s = (double)n;
        }
    }
    h->body = le + 2;
    return 1;
}

/* A chunked body from p: 1 (its bytes appended to b), 0, -1. */
static int parse_chunks(const char *p, const char *end, strbuf *b, char *err)
{
    for (;;) {
        const char *le = line_end(p, end);
        if (!le)
            return end - p > 1024 ? fail(err, "board: a chunk size line over 1 KiB") : 0;
        uint64_t n = 0;
        const char *q = p;
        for (; q < le && isxdigit((unsigned char)*q); q++) {
            if (n > HTTP_RESPONSE_MAX)
                break;
            n = n * 16 + (uint64_t)(isdigit((unsigned char)*q) ? *q - '0' : (tolower((unsigned char)*q) - 'a' + 10));
        }
        if (q == p || (q < le && *q != ';' && *q != ' ' && *q != '\t'))
            return fail(err, "board: a malformed chunk size");
        if (n > HTTP_RESPONSE_MAX || b->len + n > HTTP_RESPONSE_MAX)
            return fail(err, "board: a response body over the limit (%u MiB)", HTTP_RESPONSE_MAX >> 20);
        p = le + 2;
        if (n == 0) {               /* trailers until an empty line */
            for (;;) {
                le = line_end(p, end);
                if (!le)
                    return 0;
                if (le == p)
                    return 1;
                p = le + 2;
            }
        }
        if ((uint64_t)(end - p) < n + 2)
            return 0;
        if (p[n] != '\r' || p[n + 1] != '\n')
            return fail(err, "board: a chunk not followed by CRLF");
        if (strbuf_append(b, p, (size_t)n) != 0)
            return fail(err, "board: out of memory");
        p += n + 2;
    }
}

int http_response_parse(const char *buf_in, size_t len, bool at_eof, http_response *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (len > HTTP_RESPONSE_MAX)
        return fail(err, "board: a response over the limit (%u MiB)", HTTP_RESPONSE_MAX >> 20);
    const char *p = buf_in, *end = buf_in + len;
    head h;
    for (;;) {
        int rc = parse_head(p, (size_t)(end - p), out, &h, err);
        if (rc <= 0)
            return rc < 0 || !at_eof ? rc : fail(err, "board: the connection ended inside the response's headers");
        if (h.status >= 200)
            break;
        p = h.body;                 /* 1xx: an interim response, then the real one */
    }
    strbuf b = STRBUF_INIT;
    int rc;
    if (h.status == 204 || h.status == 304) {
        rc = 1;
    } else if (h.chunked) {
        rc = parse_chunks(h.body, end, &b, err);
    } else if (h.has_length) {
        rc = (uint64_t)(end - h.body) >= h.length ? strbuf_append(&b, h.body, (size_t)h.length) == 0 ? 1
                                                    : fail(err, "board: out of memory")
                                                  : 0;
    } else {
        rc = at_eof ? strbuf_append(&b, h.body, (size_t)(end - h.body)) == 0 ? 1 : fail(err, "board: out of memory")
                    : 0;
    }
    if (rc == 0 && at_eof)
        rc = fail(err, "board: the connection ended before the response's body did");
    if (rc != 1) {
        strbuf_free(&b);
        return rc;
    }
    out->status = h.status;
    out->body_len = b.len;
    out->body = malloc(b.len + 1);
    if (!out->body) {
        strbuf_free(&b);
        return fail(err, "board: out of memory");
    }
    if (b.len)
        memcpy(out->body, b.data, b.len);
    out->body[b.len] = '\0';
    strbuf_free(&b);
    return 1;
}

/* ---- the exchange ---- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Waits for events on fd until deadline: 1 ready, 0 past it, -1 (errno). */
static int wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd pf = {.fd = fd, .events = events};
        int rc = poll(&pf, 1, (int)(left + 1));
        if (rc < 0 && errno == EINTR)
            continue;
        return rc;
    }
}

static int connect_to(const http_url *u, int connect_ms, double deadline, char *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(u->host, u->port, &hints, &res);
    if (rc != 0) {
        snprintf(err, HTTP_ERR_LEN, "cannot find the board's host %s: %s", u->host, gai_strerror(rc));
        return -1;
    }
    double by = now_ms() + connect_ms;
    if (by > deadline)
        by = deadline;
    int fd = -1, why = 0;
    bool timed_out = false;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            why = errno;
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
            why = errno;
        } else {
            int ready = wait_fd(fd, POLLOUT, by), soerr = 0;
            socklen_t sl = sizeof soerr;
            if (ready == 0)
                timed_out = true;
            else if (ready < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
                why = errno;
            else if (soerr != 0)
                why = soerr;
            else
                break;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        if (timed_out)
            snprintf(err, HTTP_ERR_LEN, "the board at %s:%s did not answer within %d ms", u->host, u->port,
                     connect_ms);
        else
            snprintf(err, HTTP_ERR_LEN, "cannot connect to the board at %s:%s: %s", u->host, u->port, strerror(why));
    }
    return fd;
}

static int send_all(int fd, const char *p, size_t n, double deadline, char *err)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return fail(err, "sending to the board: %s", strerror(errno));
        if (wait_fd(fd, POLLOUT, deadline) <= 0)
            return fail(err, "board: sending the request did not end in time");
    }
    return 0;
}

int http_fetch(const http_request *req, http_response *out, char *err)
{
    memset(out, 0, sizeof *out);
    http_url u;
    if (http_url_parse(req->url, &u, err) != 0)
        return -1;
    if (req->body_len > HTTP_REQUEST_MAX)
        return fail(err, "board: the request is over its limit (%u MiB)", HTTP_REQUEST_MAX >> 20);
    double start = now_ms(), deadline = start + req->timeout_ms;
    int fd = connect_to(&u, req->connect_ms, deadline, err);
    if (fd < 0)
        return -1;
    strbuf b = STRBUF_INIT;
    bool v6 = strchr(u.host, ':') != NULL;
    strbuf_printf(&b, "%s %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nConnection: close\r\nAccept: application/json\r\n"
               "User-Agent: cudalab-kernel\r\n", req->method, u.path, v6 ? "[" : "", u.host, v6 ? "]" : "", u.port);
    if (req->authorization)
        strbuf_printf(&b, "Authorization: %s\r\n", req->authorization);
    if (req->body) {
        strbuf_printf(&b, "Content-Type: %s\r\nContent-Length: %zu\r\n", req->content_type ? req->content_type
                                                                                          : "application/json",
                   req->body_len);
    } else if (strcmp(req->method, "POST") == 0) {
        strbuf_printf(&b, "Content-Length: 0\r\n");
    }
    strbuf_printf(&b, "\r\n");
    int rc = !b.failed ? send_all(fd, b.data, b.len, deadline, err) : fail(err, "board: out of memory");
    if (rc == 0 && req->body)
        rc = send_all(fd, req->body, req->body_len, deadline, err);
    strbuf_reset(&b);
    char chunk[16384];
    while (rc == 0) {
        int ready = wait_fd(fd, POLLIN, deadline);
        if (ready <= 0) {
            rc = ready == 0 ? (snprintf(err, HTTP_ERR_LEN, "the board did not answer within %.0f s (%s %.120s)",
                                        req->timeout_ms / 1e3, req->method, u.path), -1)
                            : fail(err, "reading from the board: %s", strerror(errno));
            break;
        }
        ssize_t n = recv(fd, chunk, sizeof chunk, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n < 0) {
            rc = fail(err, "reading from the board: %s", strerror(errno));
            break;
        }
        if (n > 0 && (b.len + (size_t)n > HTTP_RESPONSE_MAX || strbuf_append(&b, chunk, (size_t)n) != 0)) {
            rc = fail(err, "board: the response is over the limit (%u MiB)", HTTP_RESPONSE_MAX >> 20);
            break;
        }
        int done = http_response_parse(b.data ? b.data : "", b.len, n == 0, out, err);
        if (done != 0) {
            rc = done == 1 ? 0 : -1;
            break;
        }
    }
    close(fd);
    strbuf_free(&b);
    return rc;
}
