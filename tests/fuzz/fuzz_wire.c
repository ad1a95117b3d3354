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
 *         stream of operations and compare it with a simple model
 *   0x70  (with 0x08) replay cache capacity - 1
 *   0x80  (without 0x08) a replay cache of capacity 2 instead of 1024
 *
 * Properties checked (abort() on violation, so libFuzzer reports a crash):
 * success fills msg_type/msg_id as non-empty strings and four JSON objects;
 * failure leaves a reason and an empty message; a keyed decode succeeds only
 * with a correct signature; the replay cache answers exactly like a FIFO of
 * the last `capacity` signatures.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sign.h"
#include "proto/wire.h"

#define FUZZ_KEY "cudalab-fuzz-key"     /* tests/fuzz/make_corpus.py signs its seeds with it */
#define SEP 0x1e
#define MAX_FRAMES 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static signer *keyed, *unsigned_signer;

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
    keyed = signer_new(FUZZ_KEY, strlen(FUZZ_KEY));
    unsigned_signer = signer_new("", 0);
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
static bool sign_frames(const blob *f, size_t n, size_t d, char hex[SIG_HEX_LEN + 1])
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
            check(right_sig && f[d + 1].len == SIG_HEX_LEN &&
                  memcmp(f[d + 1].data, right_sig, SIG_HEX_LEN) == 0, "accepted only when signed right");
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
    char right[SIG_HEX_LEN + 1];
    bool signable = sign_frames(frames, nf, d, right);
    if ((mode & 0x02) && signable) {
        frames[d + 1].data = right;
        frames[d + 1].len = SIG_HEX_LEN;
    }
    replay_cache *r = replay_new(mode & 0x80 ? 2 : 1024);
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

/* ---- the replay cache against a model ---- */

static void op_sig(uint8_t b, char sig[SIG_HEX_LEN])
{
    /* 16 distinct hashed prefixes, 16 distinct tails: lots of probe collisions */
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < SIG_HEX_LEN; i++)
        sig[i] = i < 16 ? hex[(b & 15) ^ (i & 1)] : hex[(b >> 4) ^ (i & 3)];
}

static void fuzz_replay(uint8_t mode, const uint8_t *p, size_t n)
{
    size_t cap = 1 + ((mode >> 4) & 7);
    replay_cache *r = replay_new(cap);
    check(r != NULL, "replay_new");
    char model[8][SIG_HEX_LEN];
    size_t count = 0, oldest = 0;
    for (size_t i = 0; i < n; i++) {
        char sig[SIG_HEX_LEN];
        op_sig(p[i], sig);
        bool want = false;
        for (size_t j = 0; j < count; j++)
            want |= memcmp(model[(oldest + j) % cap], sig, SIG_HEX_LEN) == 0;
        bool got = replay_seen(r, sig);
        check(got == want, "replay cache agrees with a FIFO of the last capacity signatures");
        if (!want) {
            if (count == cap) {
                oldest = (oldest + 1) % cap;
                count--;
            }
            memcpy(model[(oldest + count) % cap], sig, SIG_HEX_LEN);
            count++;
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
