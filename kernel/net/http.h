/* http.h — a small HTTP/1.1 client for the class leaderboard's service (%submit, %leaderboard,
 * the class view's quick-check posts).
 *
 * http:// only: the board is a JupyterHub service reached over the hub's internal network (or
 * localhost), and the kernel links no TLS stack; an https:// URL is refused with a sentence saying
 * so, never silently sent in clear. Every request is bounded: the whole exchange ends within its
 * deadline (connect and each read poll against it, so a server that trickles a byte a second
 * still ends it), the response within HTTP_RESPONSE_MAX bytes (headers and body), the headers
 * within HTTP_HEADERS_MAX. One request per connection (Connection: close). Responses are read
 * with Content-Length, chunked transfer coding, or to the connection's end.
 *
 * The response parser is separate from the socket so that it can be unit-tested and fuzzed
 * (tests/fuzz/fuzz_http.c): it is given what has arrived so far and says whether the response is
 * complete, needs more bytes, or is malformed.
 */
#ifndef CUDALAB_NET_HTTP_H
#define CUDALAB_NET_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#define HTTP_RESPONSE_MAX (4u << 20)    /* bytes of a whole response, headers included */
#define HTTP_HEADERS_MAX (16u << 10)    /* bytes of the status line and headers */
#define HTTP_REQUEST_MAX (1u << 20)     /* bytes of a request body (a submission's source is 64 KiB at most) */
#define HTTP_ERR_LEN 512

/* An http:// URL split: host (a name, an IPv4 address or a [bracketed] IPv6 one, brackets
 * removed), port (80 when none) and path (from the first '/', "/" when none; the query kept). */
typedef struct http_url {
    char host[256];
    char port[8];
    char path[2048];
} http_url;

/* 0, or -1 with err (HTTP_ERR_LEN bytes) saying why: not http:// (https:// is named), no host,
 * a bad port, a part too long, a space or control character in it. */
int http_url_parse(const char *url, http_url *out, char *err);

typedef struct http_response {
    int status;                 /* 100..599 */
    char *body;                 /* malloc'd, NUL-terminated (the body may hold NULs: body_len) */
    size_t body_len;
    char content_type[128];     /* "" when none */
    double retry_after_s;       /* Retry-After in seconds, or -1 */
} http_response;

void http_response_free(http_response *r);

/* The response parser. buf holds the len bytes received so far; at_eof: the connection has
 * ended (a response without Content-Length or chunks ends there). Returns 1 when the response
 * is complete (*out filled, the caller frees it), 0 when more bytes are needed, -1 when it is
 * malformed or over a limit (err says which). A 1xx interim response is skipped. */
int http_response_parse(const char *buf, size_t len, bool at_eof, http_response *out, char *err);

typedef struct http_request {
    const char *method;         /* "GET", "POST" */
    const char *url;            /* http://host[:port]/path */
    const char *authorization;  /* the Authorization header's value, or NULL */
    const char *content_type;   /* of body, or NULL */
    const char *body;           /* or NULL */
    size_t body_len;
    int connect_ms;             /* the connection's own limit (within timeout_ms) */
    int timeout_ms;             /* the whole exchange's */
} http_request;

/* Sends req and reads its response into *out (any status: the caller reads it). 0, or -1 with
 * err saying what failed: the URL, the name's lookup, the connection (refused, or not within
 * connect_ms), the deadline, a response over the limits or malformed. */
int http_fetch(const http_request *req, http_response *out, char *err);

#endif
