/* test_proto.c — unit tests for the wire format, HMAC signing, the replay
 * cache, the connection file and the worker framing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/frame.h"
#include "proto/conn.h"
#include "proto/msg.h"
#include "proto/sign.h"
#include "proto/wire.h"

/* ---- HMAC: RFC 4231 test vectors ---- */

static void hex_of(const signer *s, const char *const *parts, size_t n, char out[65])
{
    size_t lens[8];
    for (size_t i = 0; i < n; i++)
        lens[i] = strlen(parts[i]);
    assert_int_equal(wire_sign(s, (const void *const *)parts, lens, n, out), 0);
}

static void test_hmac_rfc4231(void **state)
{
    char key1[20];
    memset(key1, 0x0b, sizeof key1);
    signer *s = signer_new(key1, sizeof key1);
    char hex[65];
    const char *hi[] = { "Hi There" };
    hex_of(s, hi, 1, hex);
    assert_string_equal(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    signer_free(s);

    s = signer_new("Jefe", 4);
    const char *whole[] = { "what do ya want for nothing?" };
    const char *split[] = { "what do ya ", "want ", "for nothing?" };
    hex_of(s, whole, 1, hex);
    assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    hex_of(s, split, 3, hex);    /* frames are signed as one stream */
    assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    signer_free(s);

    /* test case 6: a key longer than the block is hashed first */
    char key6[131];
    memset(key6, 0xaa, sizeof key6);
    s = signer_new(key6, sizeof key6);
    const char *big[] = { "Test Using Larger Than Block-Size Key - Hash Key First" };
    hex_of(s, big, 1, hex);
    assert_string_equal(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    signer_free(s);

    /* a key of exactly one block (64 bytes) is used as it is */
    s = signer_new("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 64);
    const char *msg[] = { "{}" };
    hex_of(s, msg, 1, hex);
    assert_string_equal(hex, "414ca0b5952f6fcc95b648a37612e7b69ecf80f1a71204cefe6c953c1d50a0db");
    signer_free(s);
}

static void test_unsigned_signer(void **state)
{
    signer *s = signer_new("", 0);
    assert_non_null(s);
    assert_false(signer_enabled(s));
    char hex[65];
    const void *p[] = { "x" };
    size_t l[] = { 1 };
    assert_int_equal(wire_sign(s, p, l, 1, hex), -1);
    signer_free(s);
}

static void test_verify(void **state)
{
    signer *s = signer_new("secret", 6);
    const void *p[] = { "{}", "{}" };
    size_t l[] = { 2, 2 };
    char hex[65];
    assert_int_equal(wire_sign(s, p, l, 2, hex), 0);
    assert_true(wire_verify(s, hex, 64, p, l, 2));
    assert_false(wire_verify(s, hex, 63, p, l, 2));
    hex[10] = hex[10] == 'a' ? 'b' : 'a';
    assert_false(wire_verify(s, hex, 64, p, l, 2));
    signer_free(s);
}

/* ---- replay cache ---- */

static void sig_n(char out[64], int n)
{
    char tmp[65];
    snprintf(tmp, sizeof tmp, "%064x", (unsigned)(n * 2654435761u));
    memcpy(out, tmp, 64);
}

static void test_replay(void **state)
{
    replay_cache *r = replay_new(4);
    char a[64];
    for (int i = 0; i < 4; i++) {
        sig_n(a, i);
        assert_false(replay_seen(r, a));
    }
    for (int i = 0; i < 4; i++) {
        sig_n(a, i);
        assert_true(replay_seen(r, a));
    }
    sig_n(a, 100);                     /* evicts the oldest (0) */
    assert_false(replay_seen(r, a));
    sig_n(a, 0);
    assert_false(replay_seen(r, a));   /* forgotten, so accepted again */
    sig_n(a, 100);
    assert_true(replay_seen(r, a));
    replay_free(r);

    /* many entries through a small ring: the index stays consistent */
    r = replay_new(64);
    for (int i = 0; i < 10000; i++) {
        sig_n(a, i);
        assert_false(replay_seen(r, a));
        if (i >= 63) {
            sig_n(a, i - 63);
            assert_true(replay_seen(r, a));
        }
    }
    replay_free(r);
}

/* ---- wire decode ---- */

typedef struct msgbuf {
    blob f[12];
    size_t n;
} msgbuf;

static void add(msgbuf *m, const char *s, size_t len)
{
    m->f[m->n].data = (void *)s;
    m->f[m->n].len = len;
    m->n++;
}
#define ADD(m, s) add(m, s, strlen(s))

static const char *H = "{\"msg_id\":\"a1\",\"msg_type\":\"kernel_info_request\",\"session\":\"s\","
                       "\"username\":\"u\",\"date\":\"2026-01-01T00:00:00.000000Z\",\"version\":\"5.3\"}";

static char sigbuf[65];

static void build(msgbuf *m, const signer *s, const char *header, const char *content)
{
    memset(m, 0, sizeof *m);
    ADD(m, "client-id");
    ADD(m, WIRE_DELIM);
    const char *parts[4] = { header, "{}", "{}", content };
    size_t lens[4] = { strlen(header), 2, 2, strlen(content) };
    if (signer_enabled(s))
        wire_sign(s, (const void *const *)parts, lens, 4, sigbuf);
    else
        sigbuf[0] = '\0';
    ADD(m, sigbuf);
    for (int i = 0; i < 4; i++)
        add(m, parts[i], lens[i]);
}

static int decode(msgbuf *m, const signer *s, replay_cache *r, char *why)
{
    wire_msg out;
    int rc = wire_decode(m->f, m->n, s, r, &out, why, 128);
    if (rc == 0)
        wire_msg_free(&out);
    return rc;
}

static void test_decode_ok(void **state)
{
    signer *s = signer_new("k", 1);
    msgbuf m;
    build(&m, s, H, "{\"a\":1}");
    ADD(&m, "buffer-bytes");
    wire_msg out;
    char why[128];
    assert_int_equal(wire_decode(m.f, m.n, s, NULL, &out, why, sizeof why), 0);
    assert_string_equal(out.msg_type, "kernel_info_request");
    assert_string_equal(out.msg_id, "a1");
    assert_int_equal(out.nids, 1);
    assert_memory_equal(out.ids[0].data, "client-id", 9);
    assert_int_equal(out.nbuffers, 1);
    assert_int_equal(json_integer_value(json_object_get(out.content, "a")), 1);
    wire_msg_free(&out);
    signer_free(s);
}

static void test_decode_signatures(void **state)
{
    signer *s = signer_new("k", 1);
    replay_cache *r = replay_new(16);
    msgbuf m;
    char why[128];

    build(&m, s, H, "{}");
    assert_int_equal(decode(&m, s, r, why), 0);
    assert_int_equal(decode(&m, s, r, why), -1);            /* the same message again */
    assert_non_null(strstr(why, "duplicate signature"));

    build(&m, s, H, "{}");
    m.f[2].len = 10;                                         /* truncated signature */
    assert_int_equal(decode(&m, s, r, why), -1);
    assert_non_null(strstr(why, "wrong length"));

    build(&m, s, H, "{}");
    m.f[2].len = 0;                                          /* missing */
    assert_int_equal(decode(&m, s, r, why), -1);
    assert_non_null(strstr(why, "missing signature"));

    build(&m, s, H, "{\"x\":1}");
    m.f[6].data = "{\"x\":2}";                               /* tampered content */
    assert_int_equal(decode(&m, s, r, why), -1);
    assert_string_equal(why, "wrong signature");

    signer *other = signer_new("other", 5);
    build(&m, other, H, "{}");
    assert_int_equal(decode(&m, s, r, why), -1);
    assert_string_equal(why, "wrong signature");
    signer_free(other);

    /* unsigned kernel: signature frame ignored, no replay check */
    signer *none = signer_new("", 0);
    build(&m, none, H, "{}");
    assert_int_equal(decode(&m, none, r, why), 0);
    assert_int_equal(decode(&m, none, r, why), 0);
    signer_free(none);
    replay_free(r);
    signer_free(s);
}

static void test_decode_malformed(void **state)
{
    signer *s = signer_new("", 0);
    msgbuf m;
    char why[128];

    memset(&m, 0, sizeof m);
    ADD(&m, "id");
    ADD(&m, "sig");
    assert_int_equal(decode(&m, s, NULL, why), -1);
    assert_non_null(strstr(why, "delimiter"));

    build(&m, s, H, "{}");
    m.n = 6;                                                 /* content missing */
    assert_int_equal(decode(&m, s, NULL, why), -1);
    assert_non_null(strstr(why, "fewer than 5"));

    const char *bad_contents[] = { "[1,2]", "not json", "{\"a\":\"\xff\xfe\"}", "{\"a\":1,\"a\":2}", "" };
    for (size_t i = 0; i < sizeof bad_contents / sizeof *bad_contents; i++) {
        build(&m, s, H, bad_contents[i]);
        assert_int_equal(decode(&m, s, NULL, why), -1);
        assert_non_null(strstr(why, "JSON"));
    }
    const char *bad_headers[] = {
        "{\"msg_id\":\"a\"}",                                         /* no msg_type */
        "{\"msg_id\":\"a\",\"msg_type\":7}",                          /* wrong type */
        "{\"msg_id\":\"a\",\"msg_type\":\"x\",\"version\":\"4.1\"}",   /* old protocol */
        "{\"msg_id\":\"a\",\"msg_type\":\"x\",\"session\":[]}",
    };
    for (size_t i = 0; i < sizeof bad_headers / sizeof *bad_headers; i++) {
        build(&m, s, bad_headers[i], "{}");
        assert_int_equal(decode(&m, s, NULL, why), -1);
    }
    signer_free(s);
}

/* ---- headers ---- */

static void test_header(void **state)
{
    json_t *h = msg_header("status", "sess");
    assert_string_equal(json_string_value(json_object_get(h, "msg_type")), "status");
    assert_string_equal(json_string_value(json_object_get(h, "version")), PROTOCOL_VERSION);
    const char *id = json_string_value(json_object_get(h, "msg_id"));
    assert_int_equal(strlen(id), 36);
    assert_int_equal(id[14], '4');
    const char *date = json_string_value(json_object_get(h, "date"));
    /* 2026-11-21T23:26:44.123456Z */
    assert_int_equal(strlen(date), 27);
    assert_int_equal(date[10], 'T');
    assert_int_equal(date[19], '.');
    assert_int_equal(date[26], 'Z');
    json_decref(h);
    char a[37], b[37];
    msg_uuid(a);
    msg_uuid(b);
    assert_string_not_equal(a, b);
}

/* ---- connection file ---- */

static const char *CONN =
    "{\"shell_port\": 5001, \"iopub_port\": 5002, \"stdin_port\": 5003, \"control_port\": 5004,"
    " \"hb_port\": 5005, \"ip\": \"10.0.0.7\", \"key\": \"abc\", \"transport\": \"tcp\","
    " \"signature_scheme\": \"hmac-sha256\", \"kernel_name\": \"cudalab\"}";

static void test_conn_ok(void **state)
{
    conn_info c;
    char err[256], ep[512];
    assert_int_equal(conn_parse(CONN, strlen(CONN), &c, err, sizeof err), 0);
    assert_string_equal(c.ip, "10.0.0.7");
    assert_int_equal(c.ports[PORT_CONTROL], 5004);
    assert_int_equal(c.key_len, 3);
    conn_endpoint(&c, PORT_SHELL, ep, sizeof ep);
    assert_string_equal(ep, "tcp://10.0.0.7:5001");
    conn_free(&c);

    const char *v6 = "{\"shell_port\":1,\"iopub_port\":2,\"stdin_port\":3,\"control_port\":4,"
                     "\"hb_port\":5,\"ip\":\"::1\",\"key\":\"\"}";
    assert_int_equal(conn_parse(v6, strlen(v6), &c, err, sizeof err), 0);
    assert_true(conn_is_ipv6(&c));
    conn_endpoint(&c, PORT_HB, ep, sizeof ep);
    assert_string_equal(ep, "tcp://[::1]:5");
    assert_int_equal(c.key_len, 0);
    conn_free(&c);

    const char *ipc = "{\"shell_port\":1,\"iopub_port\":2,\"stdin_port\":3,\"control_port\":4,"
                      "\"hb_port\":5,\"ip\":\"/tmp/k\",\"transport\":\"ipc\"}";
    assert_int_equal(conn_parse(ipc, strlen(ipc), &c, err, sizeof err), 0);
    conn_endpoint(&c, PORT_IOPUB, ep, sizeof ep);
    assert_string_equal(ep, "ipc:///tmp/k-2");
    conn_free(&c);
}

static void expect_conn_error(const char *text, const char *needle)
{
    conn_info c;
    char err[256] = "";
    assert_int_equal(conn_parse(text, strlen(text), &c, err, sizeof err), -1);
    if (!strstr(err, needle))
        fail_msg("error '%s' lacks '%s'", err, needle);
}

static void test_conn_errors(void **state)
{
    expect_conn_error("{", "invalid JSON");
    expect_conn_error("[]", "object");
    expect_conn_error("{\"iopub_port\":2,\"stdin_port\":3,\"control_port\":4,\"hb_port\":5}", "shell_port");
    expect_conn_error("{\"shell_port\":\"1\",\"iopub_port\":2,\"stdin_port\":3,\"control_port\":4,"
                      "\"hb_port\":5}", "shell_port");
    expect_conn_error("{\"shell_port\":70000,\"iopub_port\":2,\"stdin_port\":3,\"control_port\":4,"
                      "\"hb_port\":5}", "0..65535");
    expect_conn_error("{\"shell_port\":1,\"iopub_port\":2,\"stdin_port\":3,\"control_port\":4,"
                      "\"hb_port\":5,\"transport\":\"udp\"}", "udp");
    expect_conn_error("{\"shell_port\":1,\"iopub_port\":2,\"stdin_port\":3,\"control_port\":4,"
                      "\"hb_port\":5,\"key\":\"k\",\"signature_scheme\":\"hmac-md5\"}", "hmac-md5");
    expect_conn_error("{\"shell_port\":1,\"iopub_port\":2,\"stdin_port\":3,\"control_port\":4,"
                      "\"hb_port\":5,\"key\":5}", "key");
}

/* ---- worker frames ---- */

static void test_frames(void **state)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    json_t *a = json_pack("{s:s, s:i}", "op", "stream", "n", 1);
    json_t *b = json_pack("{s:s}", "op", "done");
    assert_int_equal(frame_write(p[1], a), 0);
    assert_int_equal(frame_write(p[1], b), 0);
    frame_reader r = { 0 };
    json_t *got;
    assert_true(frame_fill(&r, p[0]) > 0);
    assert_int_equal(frame_next(&r, &got), 1);
    assert_true(json_equal(got, a));
    json_decref(got);
    assert_int_equal(frame_next(&r, &got), 1);
    assert_true(json_equal(got, b));
    json_decref(got);
    assert_int_equal(frame_next(&r, &got), 0);

    /* a frame split across reads is reassembled */
    unsigned char hdr[4] = { 0, 0, 0, 2 };
    assert_int_equal(write(p[1], hdr, 3), 3);
    assert_true(frame_fill(&r, p[0]) > 0);
    assert_int_equal(frame_next(&r, &got), 0);
    assert_int_equal(write(p[1], hdr + 3, 1), 1);
    assert_int_equal(write(p[1], "{}", 2), 2);
    assert_true(frame_fill(&r, p[0]) > 0);
    assert_int_equal(frame_next(&r, &got), 1);
    json_decref(got);

    /* an oversized length is corruption, not an allocation */
    unsigned char huge[4] = { 0xff, 0xff, 0xff, 0xff };
    assert_int_equal(write(p[1], huge, 4), 4);
    assert_true(frame_fill(&r, p[0]) > 0);
    assert_int_equal(frame_next(&r, &got), -1);

    frame_reader_reset(&r);
    json_decref(a);
    json_decref(b);
    close(p[0]);
    close(p[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hmac_rfc4231),
        cmocka_unit_test(test_unsigned_signer),
        cmocka_unit_test(test_verify),
        cmocka_unit_test(test_replay),
        cmocka_unit_test(test_decode_ok),
        cmocka_unit_test(test_decode_signatures),
        cmocka_unit_test(test_decode_malformed),
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_conn_ok),
        cmocka_unit_test(test_conn_errors),
        cmocka_unit_test(test_frames),
    };
    return cmocka_run_group_tests_name("proto", tests, NULL, NULL);
}
