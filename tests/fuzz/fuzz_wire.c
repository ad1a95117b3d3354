/* fuzz_wire.c — libFuzzer target for wire_decode and the replay cache.
 *
 * Input layout: one mode byte, then the message's frames separated by the
 * byte 0x1E (ASCII record separator, never valid inside JSON text), e.g.
 *
 *   <mode> id \x1e <IDS|MSG> \x1e sig \x1e header \x1e parent \x1e metadata \x1e content [\x1e buffer...]
 *
 * Mode bits:
 *   0x01  decode with a signer for FUZZ_KEY (else with an unsigned signer)
 *   0x02  re-sign: replace the signature frame by the correct HMAC of the four
 *         JSON frames, so the keyed path reaches the JSON and header checks
 *   0x04  decode the same frames a second time with the same replay cache: a
 *         signed message accepted once must now be refused as a replay
 *   0x08  instead of a message, drive the replay cache with the input as a
 *         stream of operations (see fuzz_replay) and check its promise
 *   0x70  (with 0x08) replay cache digest capacity - 1
 *   0x80  (without 0x08) a replay cache of 2 digests instead of the default
 *
 * Properties checked (abort() on violation, so libFuzzer reports a crash):
 * success fills msg_type/msg_id as non-empty strings and four JSON objects;
 * failure leaves a reason and an empty message; a keyed decode succeeds only
 * with a correct signature; the replay cache never accepts a signature twice,
 * however small it is and whatever the dates and the time between.
 * The replay cache's clock is the fuzzer's, so a run depends only on its input.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/replay.h"
#include "proto/sign.h"
#include "proto/wire.h"

#define FUZZ_KEY "cudalab-fuzz-key"     /* tests/fuzz/make_corpus.py signs its seeds with it */
#define SEP 0x1e
#define MAX_FRAMES 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static signer *keyed, *unsigned_signer;
static double fuzz_now = 1e6;   /* the replay cache's clock */

static double fuzz_clock(void)
{
    return fuzz_now;
}

static replay_cache *new_cache(size_t max_digests, size_t max_sessions)
{
    replay_limits lim = { REPLAY_WINDOW_S, max_digests, max_sessions, fuzz_clock };
    fuzz_now = 1e6;
    return replay_new(&lim);
}

static void check(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_wire: property violated: %s\n", what);
        abort();
    }
}

static void setup(void)
{
    if (keyed)
        return;
    keyed = signer_new(SIGN_SHA256, FUZZ_KEY, strlen(FUZZ_KEY));
    unsigned_signer = signer_new(SIGN_SHA256, "", 0);
    check(keyed && unsigned_signer && signer_enabled(keyed) && !signer_enabled(unsigned_signer),
          "signers");
}

static size_t split_frames(const uint8_t *p, size_t n, blob *frames)
{
    size_t nf = 0, start = 0;
    for (size_t i = 0; i <= n && nf < MAX_FRAMES; i++) {
        if (i == n || p[i] == SEP) {
            frames[nf].data = (void *)(p + start);
            frames[nf].len = i - start;
            nf++;
            start = i + 1;
        }
    }
    return nf;
}

static size_t delim_index(const blob *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (f[i].len == strlen(WIRE_DELIM) && memcmp(f[i].data, WIRE_DELIM, f[i].len) == 0)
            return i;
    return n;
}

/* Correct signature of frames d+2..d+5, or false when there are too few frames. */
static bool sign_frames(const blob *f, size_t n, size_t d, char hex[SIG_HEX_MAX + 1])
{
    if (d >= n || n - d < 6)
        return false;
    const void *parts[4];
    size_t lens[4];
    for (int i = 0; i < 4; i++) {
        parts[i] = f[d + 2 + i].data;
        lens[i] = f[d + 2 + i].len;
    }
    return wire_sign(keyed, parts, lens, 4, hex) == 0;
}

static bool empty_msg(const wire_msg *m)
{
    return !m->ids && !m->nids && !m->header && !m->parent && !m->metadata && !m->content &&
           !m->buffers && !m->nbuffers && !m->msg_type && !m->msg_id;
}

static int decode_checked(const blob *f, size_t n, const signer *s, replay_cache *r,
                          const char *right_sig)
{
    wire_msg m;
    char why[128];
    memset(why, 'x', sizeof why);
    why[sizeof why - 1] = '\0';
    int rc = wire_decode(f, n, s, r, &m, why, sizeof why);
    check(rc == 0 || rc == -1, "return value is 0 or -1");
    if (rc == 0) {
        size_t d = delim_index(f, n);
        check(d < n && m.nids == d && m.nbuffers == n - d - 6, "ids and buffers counted");
        check(json_is_object(m.header) && json_is_object(m.parent) && json_is_object(m.metadata) &&
              json_is_object(m.content), "four JSON objects");
        check(m.msg_type && m.msg_type[0] && m.msg_id && m.msg_id[0], "msg_type and msg_id");
        if (signer_enabled(s))
            check(right_sig && f[d + 1].len == strlen(right_sig) &&
                  memcmp(f[d + 1].data, right_sig, f[d + 1].len) == 0, "accepted only when signed right");
        for (size_t i = 0; i < m.nids; i++)
            check(m.ids[i].len == f[i].len && memcmp(m.ids[i].data, f[i].data, f[i].len) == 0,
                  "ids copied");
        for (size_t i = 0; i < m.nbuffers; i++)
            check(m.buffers[i].len == f[d + 6 + i].len, "buffers copied");
        /* what the handlers do with a message: serialise its parts again */
        char *h = wire_dumps(m.header, NULL), *c = wire_dumps(m.content, NULL);
        check(h && c, "re-serialise");
        free(h);
        free(c);
    } else {
        check(strlen(why) > 0 && strlen(why) < sizeof why && why[0] != 'x', "a reason is given");
        check(empty_msg(&m), "nothing is left in a refused message");
    }
    wire_msg_free(&m);
    check(empty_msg(&m), "wire_msg_free clears");
    return rc;
}

static void fuzz_message(uint8_t mode, const uint8_t *p, size_t n)
{
    blob frames[MAX_FRAMES];
    size_t nf = split_frames(p, n, frames);
    size_t d = delim_index(frames, nf);
    const signer *s = mode & 0x01 ? keyed : unsigned_signer;
    char right[SIG_HEX_MAX + 1];
    bool signable = sign_frames(frames, nf, d, right);
    if ((mode & 0x02) && signable) {
        frames[d + 1].data = right;
        frames[d + 1].len = strlen(right);
    }
    replay_cache *r = mode & 0x80 ? new_cache(2, 2) : new_cache(REPLAY_MAX_DIGESTS, REPLAY_MAX_SESSIONS);
    check(r != NULL, "replay_new");
    int rc = decode_checked(frames, nf, s, r, signable ? right : NULL);
    if (mode & 0x04) {
        int again = decode_checked(frames, nf, s, r, signable ? right : NULL);
        if (signer_enabled(s))
            check(rc != 0 || again != 0, "a replayed signed message is refused");
        else
            check(again == rc, "unsigned decoding does not depend on history");
    }
    /* the NULL replay cache is allowed too */
    decode_checked(frames, nf, s, NULL, signable ? right : NULL);
    replay_free(r);
}

/* ---- the replay cache's promise ---- */

#define REPLAY_SESSIONS 4       /* as many as the cache keeps: none is forgotten */

/* Message id's signature: 4 distinct values in the bits the index hashes (lots
 * of probe collisions), the id in the rest. */
static void op_sig(uint8_t id, char sig[64])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 64; i++)
        sig[i] = i < 16 ? hex[(id & 3) ^ (i & 1)] : hex[(id >> (4 * (i & 1))) & 15];
}

/* Each byte is an operation: 0xf0..0xff advances the clock by (b & 15) * 40 s;
 * any other byte sends message b, of session b % REPLAY_SESSIONS, dated when it
 * is first sent at the session's clock minus up to 11 minutes (so some are
 * stale, some fall before a floor). A signature accepted twice is a violation. */
static void fuzz_replay(uint8_t mode, const uint8_t *p, size_t n)
{
    replay_cache *r = new_cache(1 + ((mode >> 4) & 7), REPLAY_SESSIONS);
    check(r != NULL, "replay_new");
    double date[256];
    bool made[256] = { false }, accepted[256] = { false };
    for (size_t i = 0; i < n; i++) {
        uint8_t b = p[i];
        if (b >= 0xf0) {
            fuzz_now += (b & 15) * 40.0;
            continue;
        }
        if (!made[b]) {
            date[b] = 1.7e9 + (fuzz_now - 1e6) - (b % 12) * 60.0;
            made[b] = true;
        }
        char sig[64], session[2] = { (char)('a' + b % REPLAY_SESSIONS), 0 };
        op_sig(b, sig);
        enum replay_verdict v = replay_admit(r, session, 1, date[b], sig, sizeof sig);
        check(v == REPLAY_FRESH || replay_reason(r, v) != NULL, "a refusal has a reason");
        if (v == REPLAY_FRESH) {
            check(!accepted[b], "a signature is never accepted twice");
            accepted[b] = true;
        }
    }
    replay_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size == 0)
        return 0;
    uint8_t mode = data[0];
    if (mode & 0x08)
        fuzz_replay(mode, data + 1, size - 1);
    else
        fuzz_message(mode, data + 1, size - 1);
    return 0;
}
