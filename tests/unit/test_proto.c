/* test_proto.c — unit tests for the wire format, HMAC signing, the
 * connection file and the worker framing (the replay guard: test_replay.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/digest.h"
#include "exec/frame.h"
#include "proto/conn.h"
#include "proto/msg.h"
#include "proto/sign.h"
#include "proto/wire.h"

/* ---- HMAC: RFC 4231 test vectors, every SHA-2 scheme ---- */

static void hex_of(const signer *s, const char *const *parts, size_t n, char out[SIG_HEX_MAX + 1])
{
    size_t lens[8];
    for (size_t i = 0; i < n; i++)
        lens[i] = strlen(parts[i]);
    assert_int_equal(wire_sign(s, (const void *const *)parts, lens, n, out), 0);
}

typedef struct rfc4231_case {
    unsigned char key_byte;     /* the key: key_len bytes of key_byte, or key_text */
    size_t key_len;
    const char *key_text;
    unsigned char data_byte;    /* the data: data_len bytes of data_byte, or data_text */
    size_t data_len;
    const char *data_text;
    const char *mac[SIGN_SCHEME_COUNT];     /* hex, indexed by enum sign_scheme */
} rfc4231_case;

static const rfc4231_case RFC4231[] = {
    { 0x0b, 20, NULL, 0, 0, "Hi There", {      /* test case 1 */
        "896fb1128abbdf196832107cd49df33f47b4b1169912ba4f53684b22",
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
        "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59cfaea9ea9076ede7f4af152e8b2fa9cb6",
        "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cdedaa833b7d6b8a702038b274eaea3f4e4"
        "be9d914eeb61f1702e696c203a126854" } },
    { 0, 0, "Jefe", 0, 0, "what do ya want for nothing?", {      /* test case 2 */
        "a30e01098bc6dbbf45690f3a7e9e6d0f8bbea2a39e6148008fd05e44",
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
        "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e8e2240ca5e69e2c78b3239ecfab21649",
        "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fd"
        "caeab1a34d4a6b4b636e070a38bce737" } },
    { 0xaa, 20, NULL, 0xdd, 50, NULL, {      /* test case 3 */
        "7fb3cb3588c6c1f6ffa9694d7d6ad2649365b0c1f65d69d1ec8333ea",
        "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
        "88062608d3e6ad8a0aa2ace014c8a86f0aa635d947ac9febe83ef4e55966144b2a5ab39dc13814b94e3ab6e101a34f27",
        "fa73b0089d56a284efb0f0756c890be9b1b5dbdd8ee81a3655f83e33b2279d39bf3e848279a722c806b485a47e67c807"
        "b946a337bee8942674278859e13292fb" } },
    { 0, 0, "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16"
      "\x17\x18\x19", 0xcd, 50, NULL, {      /* test case 4 */
        "6c11506874013cac6a2abc1bb382627cec6a90d86efc012de7afec5a",
        "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
        "3e8a69b7783c25851933ab6290af6ca77a9981480850009cc5577c6e1f573b4e6801dd23c4a7d679ccf8a386c674cffb",
        "b0ba465637458c6990e5a8c5f61d4af7e576d97ff94b872de76f8050361ee3dba91ca5c11aa25eb4d679275cc5788063"
        "a5f19741120c4f2de2adebeb10a298dd" } },
    /* (test case 5 checks truncated output, which Jupyter never uses) */
    { 0xaa, 131, NULL, 0, 0, "Test Using Larger Than Block-Size Key - Hash Key First", {   /* case 6 */
        "95e9a0db962095adaebe9b2d6f0dbce2d499f112f2d2b7273fa6870e",
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
        "4ece084485813e9088d2c63a041bc5b44f9ef1012a2b588f3cd11f05033ac4c60c2ef6ab4030fe8296248df163f44952",
        "80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f3526b56d037e05f2598bd0fd2215d6a1e52"
        "95e64f73f63f0aec8b915a985d786598" } },
    { 0xaa, 131, NULL, 0, 0, "This is a test using a larger than block-size key and a larger than "
      "block-size data. The key needs to be hashed before being used by the HMAC algorithm.", {  /* 7 */
        "3a854166ac5d9f023f54d517d0b39dbd946770db9c2b95c9f6f565d1",
        "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
        "6617178e941f020d351e2f254e8fd32c602420feb0b8fb9adccebb82461e99c5a678cc31e799176d3860e6110c46523e",
        "e37b6a775dc87dbaa4dfa9f96e5e3ffddebd71f8867289865df5a32d20cdc944b6022cac3c4982b10d5eeb55c3e4de15"
        "134676fb6de0446065c97440fa8c6a58" } },
};

/* ---- SHA-256: FIPS 180-2 vectors, for the digests that stand in for long inputs ---- */

static void test_sha256_vectors(void **state)
{
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(two, strlen(two), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_hmac_rfc4231(void **state)
{
    for (size_t i = 0; i < sizeof RFC4231 / sizeof *RFC4231; i++) {
        const rfc4231_case *t = &RFC4231[i];
        char key[131], data[64];
        size_t key_len = t->key_text ? strlen(t->key_text) : t->key_len;
        if (t->key_text)
            memcpy(key, t->key_text, key_len);
        else
            memset(key, t->key_byte, key_len);
        size_t part_len = t->data_text ? strlen(t->data_text) : t->data_len;
        const void *part = t->data_text ? (const void *)t->data_text : memset(data, t->data_byte, part_len);
        for (int scheme = 0; scheme < SIGN_SCHEME_COUNT; scheme++) {
            signer *s = signer_new((enum sign_scheme)scheme, key, key_len);
            char hex[SIG_HEX_MAX + 1];
            assert_int_equal(wire_sign(s, &part, &part_len, 1, hex), 0);
            if (strcmp(hex, t->mac[scheme]) != 0)
                fail_msg("RFC 4231 case %zu, scheme %d: got %s", i, scheme, hex);
            assert_int_equal(signer_hex_len(s), strlen(t->mac[scheme]));
            signer_free(s);
        }
    }

    /* frames are signed as one stream */
    signer *s = signer_new(SIGN_SHA512, "Jefe", 4);
    const char *split[] = { "what do ya ", "want ", "for nothing?" };
    char hex[SIG_HEX_MAX + 1];
    hex_of(s, split, 3, hex);
    assert_string_equal(hex, RFC4231[1].mac[SIGN_SHA512]);
    signer_free(s);

    /* a key of exactly one block (64 bytes for SHA-256) is used as it is */
    s = signer_new(SIGN_SHA256, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 64);
    const char *msg[] = { "{}" };
    hex_of(s, msg, 1, hex);
    assert_string_equal(hex, "414ca0b5952f6fcc95b648a37612e7b69ecf80f1a71204cefe6c953c1d50a0db");
    signer_free(s);
}

static void test_schemes(void **state)
{
    assert_int_equal(sign_scheme_parse("hmac-sha224"), SIGN_SHA224);
    assert_int_equal(sign_scheme_parse("hmac-sha256"), SIGN_SHA256);
    assert_int_equal(sign_scheme_parse("hmac-sha384"), SIGN_SHA384);
    assert_int_equal(sign_scheme_parse("hmac-sha512"), SIGN_SHA512);
    const char *refused[] = { "hmac-md5", "hmac-sha1", "hmac-SHA256", "sha256", "hmac-sha3_256", "" };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        assert_int_equal(sign_scheme_parse(refused[i]), -1);
    assert_string_equal(sign_scheme_names(), "hmac-sha224, hmac-sha256, hmac-sha384, hmac-sha512");
    assert_null(signer_new((enum sign_scheme)SIGN_SCHEME_COUNT, "k", 1));
}

static void test_unsigned_signer(void **state)
{
    signer *s = signer_new(SIGN_SHA256, "", 0);
    assert_non_null(s);
    assert_false(signer_enabled(s));
    assert_int_equal(signer_hex_len(s), 0);
    char hex[SIG_HEX_MAX + 1];
    const void *p[] = { "x" };
    size_t l[] = { 1 };
    assert_int_equal(wire_sign(s, p, l, 1, hex), -1);
    assert_false(wire_verify(s, "", 0, p, l, 1));
    signer_free(s);
}

static void test_verify(void **state)
{
    for (int scheme = 0; scheme < SIGN_SCHEME_COUNT; scheme++) {
        signer *s = signer_new((enum sign_scheme)scheme, "secret", 6);
        const void *p[] = { "{}", "{}" };
        size_t l[] = { 2, 2 };
        char hex[SIG_HEX_MAX + 1];
        assert_int_equal(wire_sign(s, p, l, 2, hex), 0);
        size_t n = strlen(hex);
        assert_int_equal(n, signer_hex_len(s));
        assert_true(wire_verify(s, hex, n, p, l, 2));
        assert_false(wire_verify(s, hex, n - 1, p, l, 2));
        hex[10] = hex[10] == 'a' ? 'b' : 'a';
        assert_false(wire_verify(s, hex, n, p, l, 2));
        signer_free(s);
    }
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

static char sigbuf[SIG_HEX_MAX + 1];

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

/* What the signature and replay tests decode with: SHA-256 with the key "k",
 * and a replay cache (a cmocka fixture, so that a failed test frees them too). */
typedef struct guard {
    signer *s;
    replay_cache *r;
} guard;

static int guard_open(void **state)
{
    guard *g = malloc(sizeof *g);
    if (!g)
        return -1;
    g->s = signer_new(SIGN_SHA256, "k", 1);
    g->r = replay_new(NULL);
    *state = g;
    return g->s && g->r ? 0 : -1;
}

static int guard_close(void **state)
{
    guard *g = *state;
    replay_free(g->r);
    signer_free(g->s);
    free(g);
    return 0;
}

/* m is refused, for a reason that holds part. */
static void refused(msgbuf *m, const signer *s, replay_cache *r, const char *part)
{
    char why[128];
    assert_int_equal(decode(m, s, r, why), -1);
    if (!strstr(why, part))
        fail_msg("refused for '%s', not for '%s'", why, part);
}

static void test_decode_ok(void **state)
{
    signer *s = signer_new(SIGN_SHA256, "k", 1);
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
    const guard *g = *state;
    msgbuf m;
    char why[128];

    build(&m, g->s, H, "{}");
    assert_int_equal(decode(&m, g->s, g->r, why), 0);
    refused(&m, g->s, g->r, "duplicate signature");          /* the same message again */

    build(&m, g->s, H, "{}");
    m.f[2].len = 10;                                         /* truncated signature */
    refused(&m, g->s, g->r, "wrong length");

    build(&m, g->s, H, "{}");
    m.f[2].len = 0;                                          /* missing */
    refused(&m, g->s, g->r, "missing signature");

    build(&m, g->s, H, "{\"x\":1}");
    m.f[6].data = "{\"x\":2}";                               /* tampered content */
    assert_int_equal(decode(&m, g->s, g->r, why), -1);
    assert_string_equal(why, "wrong signature");

    signer *other = signer_new(SIGN_SHA256, "other", 5);
    build(&m, other, H, "{}");
    assert_int_equal(decode(&m, g->s, g->r, why), -1);
    assert_string_equal(why, "wrong signature");
    signer_free(other);

    /* another scheme: the signature has that hash's length */
    signer *s512 = signer_new(SIGN_SHA512, "k", 1);
    build(&m, s512, H, "{\"sha\":512}");
    assert_int_equal(m.f[2].len, 128);
    assert_int_equal(decode(&m, s512, g->r, why), 0);
    build(&m, g->s, H, "{\"sha\":256}");                     /* a SHA-256 signature to it */
    assert_int_equal(decode(&m, s512, g->r, why), -1);
    assert_string_equal(why, "signature of wrong length");
    signer_free(s512);

    /* unsigned kernel: signature frame ignored, no replay check */
    signer *none = signer_new(SIGN_SHA256, "", 0);
    build(&m, none, H, "{}");
    assert_int_equal(decode(&m, none, g->r, why), 0);
    assert_int_equal(decode(&m, none, g->r, why), 0);
    signer_free(none);
}

/* The replay guard sees the header's session and date (its rules: test_replay.c). */
static void test_decode_replay_dates(void **state)
{
    const guard *g = *state;
    msgbuf m;
    char why[128];
    const char *undated = "{\"msg_id\":\"a\",\"msg_type\":\"kernel_info_request\",\"session\":\"s\"}";
    const char *bad_dates[] = {
        "{\"msg_id\":\"a\",\"msg_type\":\"x\",\"session\":\"s\",\"date\":\"yesterday\"}",
        "{\"msg_id\":\"a\",\"msg_type\":\"x\",\"session\":\"s\",\"date\":1700000000}",
        "{\"msg_id\":\"a\",\"msg_type\":\"x\",\"session\":\"s\",\"date\":\"\"}",
    };
    build(&m, g->s, undated, "{}");
    refused(&m, g->s, g->r, "parsable header date");
    for (size_t i = 0; i < sizeof bad_dates / sizeof *bad_dates; i++) {
        build(&m, g->s, bad_dates[i], "{}");
        refused(&m, g->s, g->r, "parsable header date");
    }
    build(&m, g->s, undated, "{}");
    assert_int_equal(decode(&m, g->s, NULL, why), 0);        /* no replay cache, no date needed */

    /* session "s" first seen dated 2026-01-01 00:00: an hour earlier is stale, a minute later fine */
    build(&m, g->s, H, "{}");
    assert_int_equal(decode(&m, g->s, g->r, why), 0);
    const char *hour_before = "{\"msg_id\":\"b\",\"msg_type\":\"x\",\"session\":\"s\","
                              "\"date\":\"2025-12-31T23:00:00Z\"}";
    build(&m, g->s, hour_before, "{}");
    refused(&m, g->s, g->r, "replay window");
    const char *minute_after = "{\"msg_id\":\"c\",\"msg_type\":\"x\",\"session\":\"s\","
                               "\"date\":\"2026-01-01T00:01:00+00:00\"}";
    build(&m, g->s, minute_after, "{}");
    assert_int_equal(decode(&m, g->s, g->r, why), 0);
    /* the same hour-old date in another session is that session's first: its clock is learned */
    const char *other = "{\"msg_id\":\"d\",\"msg_type\":\"x\",\"session\":\"t\","
                        "\"date\":\"2025-12-31T23:00:00Z\"}";
    build(&m, g->s, other, "{}");
    assert_int_equal(decode(&m, g->s, g->r, why), 0);
}

static void test_decode_malformed(void **state)
{
    signer *s = signer_new(SIGN_SHA256, "", 0);
    msgbuf m;
    char why[128];

    memset(&m, 0, sizeof m);
    ADD(&m, "id");
    ADD(&m, "sig");
    refused(&m, s, NULL, "delimiter");

    build(&m, s, H, "{}");
    m.n = 6;                                                 /* content missing */
    refused(&m, s, NULL, "fewer than 5");

    const char *bad_contents[] = { "[1,2]", "not json", "{\"a\":\"\xff\xfe\"}", "{\"a\":1,\"a\":2}", "" };
    for (size_t i = 0; i < sizeof bad_contents / sizeof *bad_contents; i++) {
        build(&m, s, H, bad_contents[i]);
        refused(&m, s, NULL, "JSON");
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
                      "\"hb_port\":5,\"key\":\"k\",\"signature_scheme\":\"hmac-md5\"}",
                      "signature_scheme \"hmac-md5\" is not supported "
                      "(supported: hmac-sha224, hmac-sha256, hmac-sha384, hmac-sha512)");
    expect_conn_error("{\"shell_port\":1,\"iopub_port\":2,\"stdin_port\":3,\"control_port\":4,"
                      "\"hb_port\":5,\"key\":\"k\",\"signature_scheme\":256}", "signature_scheme");
    expect_conn_error("{\"shell_port\":1,\"iopub_port\":2,\"stdin_port\":3,\"control_port\":4,"
                      "\"hb_port\":5,\"key\":5}", "key");
}

#define PORTS_ZERO "\"shell_port\":0,\"iopub_port\":0,\"stdin_port\":0,\"control_port\":0,\"hb_port\":0"

static void test_conn_schemes(void **state)
{
    static const char *const names[SIGN_SCHEME_COUNT] = { "hmac-sha224", "hmac-sha256", "hmac-sha384",
                                                          "hmac-sha512" };
    conn_info c;
    char text[256], err[256];
    for (int i = 0; i < SIGN_SCHEME_COUNT; i++) {
        snprintf(text, sizeof text, "{" PORTS_ZERO ",\"key\":\"k\",\"signature_scheme\":\"%s\"}", names[i]);
        assert_int_equal(conn_parse(text, strlen(text), &c, err, sizeof err), 0);
        assert_int_equal(c.scheme, i);
        conn_free(&c);
    }
    const char *unnamed = "{" PORTS_ZERO ",\"key\":\"k\"}";
    assert_int_equal(conn_parse(unnamed, strlen(unnamed), &c, err, sizeof err), 0);
    assert_int_equal(c.scheme, SIGN_SHA256);
    conn_free(&c);
    /* without a key nothing is signed: the scheme does not matter (as in jupyter_client) */
    const char *keyless = "{" PORTS_ZERO ",\"key\":\"\",\"signature_scheme\":\"hmac-md5\"}";
    assert_int_equal(conn_parse(keyless, strlen(keyless), &c, err, sizeof err), 0);
    conn_free(&c);
}

static void parse_ok(const char *text, conn_info *c)
{
    char err[256];
    if (conn_parse(text, strlen(text), c, err, sizeof err))
        fail_msg("%s: %s", text, err);
}

static void test_conn_resolve(void **state)
{
    conn_info c;
    char err[256];
    const char *as_is[] = { "127.0.0.1", "0.0.0.0", "*", "::1", "fe80::1%lo" };
    for (size_t i = 0; i < sizeof as_is / sizeof *as_is; i++) {
        char text[256];
        snprintf(text, sizeof text, "{" PORTS_ZERO ",\"ip\":\"%s\"}", as_is[i]);
        parse_ok(text, &c);
        assert_int_equal(conn_resolve(&c, err, sizeof err), 0);
        assert_string_equal(c.ip, as_is[i]);
        conn_free(&c);
    }
    parse_ok("{" PORTS_ZERO ",\"ip\":\"localhost\"}", &c);
    assert_int_equal(conn_resolve(&c, err, sizeof err), 0);
    assert_string_equal(c.ip, "127.0.0.1");     /* IPv4 first: what a client of "localhost" reaches */
    conn_free(&c);
    parse_ok("{" PORTS_ZERO ",\"ip\":\"/tmp/kernel\",\"transport\":\"ipc\"}", &c);
    assert_int_equal(conn_resolve(&c, err, sizeof err), 0);   /* an ipc path is no host name */
    assert_string_equal(c.ip, "/tmp/kernel");
    conn_free(&c);
}

static void test_conn_ports(void **state)
{
    assert_int_equal(conn_endpoint_port("tcp://127.0.0.1:40123"), 40123);
    assert_int_equal(conn_endpoint_port("tcp://[::1]:5"), 5);
    const char *not_ports[] = { "tcp://127.0.0.1:*", "tcp://127.0.0.1:", "tcp://h:0", "tcp://h:70000",
                                "tcp://h:12x", "no port", "" };
    for (size_t i = 0; i < sizeof not_ports / sizeof *not_ports; i++)
        assert_int_equal(conn_endpoint_port(not_ports[i]), -1);

    /* ipc: the first free suffixes, skipping files that exist and ports already given */
    char dir[] = "/tmp/cudalab-test-XXXXXX", path[512], text[1024], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/k-1", dir);
    fclose(fopen(path, "w"));
    snprintf(text, sizeof text, "{\"shell_port\":0,\"iopub_port\":3,\"stdin_port\":0,\"control_port\":0,"
             "\"hb_port\":0,\"ip\":\"%s/k\",\"transport\":\"ipc\",\"key\":\"s3cret\",\"extra\":[1]}", dir);
    conn_info c;
    parse_ok(text, &c);
    assert_true(conn_has_unset_port(&c));
    conn_choose_ipc_ports(&c);
    assert_false(conn_has_unset_port(&c));
    int want[PORT_COUNT] = { 2, 3, 4, 5, 6 };
    for (int p = 0; p < PORT_COUNT; p++)
        assert_int_equal(c.ports[p], want[p]);

    /* saved into the file: ports replaced, every other field and the file's mode kept */
    snprintf(path, sizeof path, "%s/kernel.json", dir);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, 0640), 0);
    assert_int_equal(conn_save_ports(path, &c, err, sizeof err), 0);
    conn_info back;
    assert_int_equal(conn_load(path, &back, err, sizeof err), 0);
    for (int p = 0; p < PORT_COUNT; p++)
        assert_int_equal(back.ports[p], want[p]);
    assert_string_equal(back.key, "s3cret");
    conn_free(&back);
    json_t *saved = json_load_file(path, 0, NULL), *extra = json_pack("[i]", 1);
    assert_true(json_equal(json_object_get(saved, "extra"), extra));
    json_decref(extra);
    json_decref(saved);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);

    /* a file that is gone is an error, not a crash */
    unlink(path);
    assert_int_equal(conn_save_ports(path, &c, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    conn_free(&c);
    snprintf(path, sizeof path, "%s/k-1", dir);
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
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
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_hmac_rfc4231),
        cmocka_unit_test(test_schemes),
        cmocka_unit_test(test_unsigned_signer),
        cmocka_unit_test(test_verify),
        cmocka_unit_test(test_decode_ok),
        cmocka_unit_test_setup_teardown(test_decode_signatures, guard_open, guard_close),
        cmocka_unit_test_setup_teardown(test_decode_replay_dates, guard_open, guard_close),
        cmocka_unit_test(test_decode_malformed),
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_conn_ok),
        cmocka_unit_test(test_conn_errors),
        cmocka_unit_test(test_conn_schemes),
        cmocka_unit_test(test_conn_resolve),
        cmocka_unit_test(test_conn_ports),
        cmocka_unit_test(test_frames),
    };
    return cmocka_run_group_tests_name("proto", tests, NULL, NULL);
}
