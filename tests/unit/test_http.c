/* test_http.c — the board's HTTP client (kernel/net/http.h): URLs (https refused by name), the
 * response parser fed whole and byte by byte (Content-Length, chunked, to the end, 1xx skipped,
 * each malformed or oversized form refused), and real exchanges with a server this test forks on
 * a loopback socket: a good answer, one that never comes (the deadline), one over the size limit,
 * one refused connection.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "net/http.h"

static void urls(void **state)
{
    (void)state;
    http_url u;
    char err[HTTP_ERR_LEN];
    assert_int_equal(http_url_parse("http://board.hub:8123/services/board/api/x?y=1", &u, err), 0);
    assert_string_equal(u.host, "board.hub");
    assert_string_equal(u.port, "8123");
    assert_string_equal(u.path, "/services/board/api/x?y=1");
    assert_int_equal(http_url_parse("http://127.0.0.1", &u, err), 0);
    assert_string_equal(u.port, "80");
    assert_string_equal(u.path, "/");
    assert_int_equal(http_url_parse("http://[::1]:9/a", &u, err), 0);
    assert_string_equal(u.host, "::1");
    assert_int_equal(http_url_parse("https://board/", &u, err), -1);
    assert_non_null(strstr(err, "https is not supported"));
    const char *bad[] = {"ftp://x/", "http://", "http://:80/", "http://h:0/", "http://h:65536/", "http://h:8x/",
                         "http://u:p@h/", "http://h/a b", "http://[::1/", "board/"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(http_url_parse(bad[i], &u, err), -1);
}

/* The response parsed whole, then fed a byte at a time: never complete before its last byte. */
static int parse_both_ways(const char *text, size_t len, bool eof_ends, http_response *out, char *err)
{
    for (size_t n = 0; n < len; n++) {
        http_response partial;
        int rc = http_response_parse(text, n, false, &partial, err);
        if (rc == 1)
            http_response_free(&partial);
        assert_true(rc <= 0);
        if (rc < 0)
            return rc;
    }
    return http_response_parse(text, len, eof_ends, out, err);
}

static void parses_responses(void **state)
{
    (void)state;
    http_response r;
    char err[HTTP_ERR_LEN];
    const char *cl = "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\ncontent-length: 12\r\n\r\n{\"id\": 7}  \n";
    assert_int_equal(parse_both_ways(cl, strlen(cl), false, &r, err), 1);
    assert_int_equal(r.status, 201);
    assert_string_equal(r.content_type, "application/json");
    assert_int_equal(r.body_len, 12);
    assert_string_equal(r.body, "{\"id\": 7}  \n");
    http_response_free(&r);

    const char *chunked = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many\r\nTransfer-Encoding: chunked\r\n"
                          "Retry-After: 42\r\n\r\n4;x=y\r\nabcd\r\nA\r\n0123456789\r\n0\r\nTrailer: t\r\n\r\n";
    assert_int_equal(parse_both_ways(chunked, strlen(chunked), false, &r, err), 1);
    assert_int_equal(r.status, 429);
    assert_int_equal(r.body_len, 14);
    assert_string_equal(r.body, "abcd0123456789");
    assert_true(r.retry_after_s == 42);
    http_response_free(&r);

    const char *to_end = "HTTP/1.0 500 Oops\r\n\r\nno length";
    assert_int_equal(http_response_parse(to_end, strlen(to_end), false, &r, err), 0);
    assert_int_equal(http_response_parse(to_end, strlen(to_end), true, &r, err), 1);
    assert_string_equal(r.body, "no length");
    http_response_free(&r);

    const char *nobody = "HTTP/1.1 204 No Content\r\n\r\n";
    assert_int_equal(http_response_parse(nobody, strlen(nobody), false, &r, err), 1);
    assert_int_equal(r.body_len, 0);
    http_response_free(&r);
}

static void refuses_malformed(void **state)
{
    (void)state;
    http_response r;
    char err[HTTP_ERR_LEN];
    const char *bad[] = {
        "SMTP 220 hello\r\n\r\n",
        "HTTP/1.1 2000 OK\r\n\r\n",
        "HTTP/1.1 099 Low\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 4194305\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n400001\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        assert_int_equal(http_response_parse(bad[i], strlen(bad[i]), true, &r, err), -1);
        assert_true(strncmp(err, "board: ", 7) == 0);
    }
    /* cut short: the connection's end is an error, not a body */
    const char *cut = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
    assert_int_equal(http_response_parse(cut, strlen(cut), false, &r, err), 0);
    assert_int_equal(http_response_parse(cut, strlen(cut), true, &r, err), -1);
    /* endless headers: refused once past their limit, not waited for */
    size_t n = HTTP_HEADERS_MAX + 10;
    char *big = malloc(n);
    memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
    memset(big + 20, 'a', n - 20);
    assert_int_equal(http_response_parse(big, n, false, &r, err), -1);
    free(big);
}

/* ---- real exchanges ---- */

enum behaviour { ANSWER, SILENT, HUGE };

/* A one-connection server on a loopback port (returned), in a child (*pid). */
static int serve(enum behaviour how, pid_t *pid)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s, 1), 0);
    assert_int_equal(getsockname(s, (struct sockaddr *)&a, &al), 0);
    *pid = fork();
    if (*pid == 0) {
        int c = accept(s, NULL, NULL);
        char req[4096];
        ssize_t got = 0, more;
        /* the whole request, however TCP splits it: the headers, then Content-Length bytes of body */
        while ((more = recv(c, req + got, sizeof req - 1 - (size_t)got, 0)) > 0) {
            got += more;
            req[got] = '\0';
            const char *end = strstr(req, "\r\n\r\n"), *cl = strstr(req, "Content-Length: ");
            if (end && (!cl || cl > end || got - (end + 4 - req) >= atol(cl + 16)))
                break;
        }
        if (how == ANSWER && got > 0) {
            req[got] = '\0';
            char resp[8192];
            int n = snprintf(resp, sizeof resp, "HTTP/1.1 200 OK\r\nContent-Length: %zd\r\n\r\n%s", got, req);
            (void)!write(c, resp, (size_t)n);
        } else if (how == HUGE) {
            const char *h = "HTTP/1.1 200 OK\r\n\r\n";
            (void)!write(c, h, strlen(h));
            static char junk[65536];
            memset(junk, 'x', sizeof junk);
            while (write(c, junk, sizeof junk) > 0) {
            }
        } else {
            sleep(30);
        }
        _exit(0);
    }
    close(s);
    return ntohs(a.sin_port);
}

static void reap(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void exchanges(void **state)
{
    (void)state;
    char url[128], err[HTTP_ERR_LEN];
    http_response r;
    pid_t pid;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/services/board/api/submissions", serve(ANSWER, &pid));
    http_request req = {.method = "POST", .url = url, .authorization = "token abc", .body = "{\"a\": 1}",
                        .body_len = 8, .connect_ms = 2000, .timeout_ms = 5000};
    assert_int_equal(http_fetch(&req, &r, err), 0);
    assert_int_equal(r.status, 200);
    /* the server echoed the request: its line and headers as sent */
    assert_non_null(strstr(r.body, "POST /services/board/api/submissions HTTP/1.1\r\n"));
    assert_non_null(strstr(r.body, "Authorization: token abc\r\n"));
    assert_non_null(strstr(r.body, "Content-Length: 8\r\n\r\n{\"a\": 1}"));
    http_response_free(&r);
    reap(pid);

    snprintf(url, sizeof url, "http://127.0.0.1:%d/", serve(SILENT, &pid));
    req = (http_request){.method = "GET", .url = url, .connect_ms = 1000, .timeout_ms = 300};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(http_fetch(&req, &r, err), -1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_non_null(strstr(err, "did not answer within"));
    assert_true(t1.tv_sec - t0.tv_sec < 3);
    reap(pid);

    snprintf(url, sizeof url, "http://127.0.0.1:%d/", serve(HUGE, &pid));
    req.timeout_ms = 10000;
    assert_int_equal(http_fetch(&req, &r, err), -1);
    assert_non_null(strstr(err, "over the limit"));
    reap(pid);

    /* a port nobody listens on: the bound socket is closed before the connect */
    int port = serve(SILENT, &pid);
    reap(pid);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
    assert_int_equal(http_fetch(&req, &r, err), -1);
    assert_non_null(strstr(err, "cannot connect"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(urls),
        cmocka_unit_test(parses_responses),
        cmocka_unit_test(refuses_malformed),
        cmocka_unit_test(exchanges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
