/* fuzz_http.c — libFuzzer target for the board's HTTP response parser (kernel/net/http.h).
 *
 * The input is a response as the kernel would read it from the board's socket. It is parsed
 * whole (with and without the connection's end), and again fed in prefixes as http_fetch feeds
 * it, a read at a time (their sizes from the input's first byte). Properties: a response is
 * never complete before its whole is there and never incomplete at the connection's end; the
 * prefix feed agrees with the whole parse; a complete response has a status in 200..599, a
 * NUL-terminated body within the limit, and an error always says it is the board's.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_http: property violated: %s\n", what);
        abort();
    }
}

static void well_formed(const http_response *r)
{
    check(r->status >= 200 && r->status <= 599, "a final status in 200..599");
    check(r->body != NULL && r->body[r->body_len] == '\0', "a NUL-terminated body");
    check(r->body_len <= HTTP_RESPONSE_MAX, "a body within the limit");
    check(strlen(r->content_type) < sizeof r->content_type, "a bounded content type");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t step = 1 + data[0] % 64;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    char err[HTTP_ERR_LEN];
    http_response whole, at_end;
    int open_rc = http_response_parse(text, len, false, &whole, err);
    if (open_rc < 0)
        check(strncmp(err, "board: ", 7) == 0, "an error names the board");
    int eof_rc = http_response_parse(text, len, true, &at_end, err);
    check(eof_rc != 0, "the connection's end settles the response");
    if (open_rc == 1) {
        well_formed(&whole);
        check(eof_rc == 1 && at_end.status == whole.status && at_end.body_len == whole.body_len &&
                  memcmp(at_end.body, whole.body, whole.body_len) == 0,
              "a response complete without the end is the same with it");
    }
    if (eof_rc == 1)
        well_formed(&at_end);
    /* prefixes, as reads arrive: the first complete or failed one is what the whole gives */
    int feed_rc = 0;
    size_t n = 0;
    while (feed_rc == 0 && n < len) {
        n = n + step < len ? n + step : len;
        http_response part;
        feed_rc = http_response_parse(text, n, false, &part, err);
        if (feed_rc == 1) {
            well_formed(&part);
            /* complete at a prefix: the rest is the next response's (never read: one per connection) */
            http_response_free(&part);
        }
    }
    if (feed_rc == 0)
        check(open_rc == 0, "incomplete at every prefix, incomplete whole");
    if (open_rc == 1)
        http_response_free(&whole);
    if (eof_rc == 1)
        http_response_free(&at_end);
    return 0;
}
