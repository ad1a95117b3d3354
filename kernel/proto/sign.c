/* sign.c — HMAC-SHA256 (RFC 2104) over OpenSSL's SHA-256, and the replay cache.
 *
 * The HMAC construction is composed here from OpenSSL's direct SHA256_* calls
 * rather than through EVP_MAC: the provider machinery behind EVP_MAC costs the
 * kernel process about 2 MB of resident memory and a context allocation per
 * message, for the same digest. The key is absorbed once: each message starts
 * from copies of the keyed inner and outer states. Checked against the RFC 4231
 * vectors in tests/unit/test_proto.c.
 */
#define OPENSSL_SUPPRESS_DEPRECATED     /* SHA256_Init & co.: deprecated in 3.0, not removed */
#include "proto/sign.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct signer {
    int enabled;
    SHA256_CTX inner, outer;    /* states after H(K ^ ipad) and H(K ^ opad) */
};

signer *signer_new(const char *key, size_t key_len)
{
    signer *s = calloc(1, sizeof *s);
    if (!s || key_len == 0)
        return s;
    unsigned char block[SHA256_CBLOCK] = { 0 };
    if (key_len > SHA256_CBLOCK)
        SHA256((const unsigned char *)key, key_len, block);   /* long keys are hashed first */
    else
        memcpy(block, key, key_len);
    unsigned char ipad[SHA256_CBLOCK], opad[SHA256_CBLOCK];
    for (int i = 0; i < SHA256_CBLOCK; i++) {
        ipad[i] = block[i] ^ 0x36;
        opad[i] = block[i] ^ 0x5c;
    }
    s->enabled = SHA256_Init(&s->inner) && SHA256_Update(&s->inner, ipad, sizeof ipad) &&
                 SHA256_Init(&s->outer) && SHA256_Update(&s->outer, opad, sizeof opad);
    OPENSSL_cleanse(block, sizeof block);
    OPENSSL_cleanse(ipad, sizeof ipad);
    OPENSSL_cleanse(opad, sizeof opad);
    if (!s->enabled) {
        signer_free(s);
        return NULL;
    }
    return s;
}

void signer_free(signer *s)
{
    if (!s)
        return;
    OPENSSL_cleanse(s, sizeof *s);
    free(s);
}

bool signer_enabled(const signer *s)
{
    return s && s->enabled;
}

static int mac_parts(const signer *s, const void *const parts[], const size_t lens[], size_t n,
                     unsigned char out[SHA256_DIGEST_LENGTH])
{
    if (!signer_enabled(s))
        return -1;
    SHA256_CTX c = s->inner;
    unsigned char inner[SHA256_DIGEST_LENGTH];
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++)
        ok = SHA256_Update(&c, parts[i], lens[i]);
    ok = ok && SHA256_Final(inner, &c);
    c = s->outer;
    ok = ok && SHA256_Update(&c, inner, sizeof inner) && SHA256_Final(out, &c);
    OPENSSL_cleanse(&c, sizeof c);
    return ok ? 0 : -1;
}

int wire_sign(const signer *s, const void *const parts[], const size_t lens[], size_t nparts,
              char hex[SIG_HEX_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";
    unsigned char mac[32];
    if (mac_parts(s, parts, lens, nparts, mac))
        return -1;
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[mac[i] >> 4];
        hex[2 * i + 1] = digits[mac[i] & 15];
    }
    hex[SIG_HEX_LEN] = '\0';
    return 0;
}

bool wire_verify(const signer *s, const void *sig, size_t sig_len, const void *const parts[],
                 const size_t lens[], size_t nparts)
{
    char expect[SIG_HEX_LEN + 1];
    if (sig_len != SIG_HEX_LEN || wire_sign(s, parts, lens, nparts, expect))
        return false;
    return CRYPTO_memcmp(expect, sig, SIG_HEX_LEN) == 0;
}

/* ---- replay cache: a ring of the last N signatures plus an open-addressing
 * index into it. Signatures are HMAC output, so their first bytes hash well. */

struct replay_cache {
    size_t capacity, next, count;
    char (*ring)[SIG_HEX_LEN];
    uint32_t *slots;            /* 0 = empty, else ring index + 1 */
    size_t nslots;              /* power of two, >= 2 * capacity */
};

replay_cache *replay_new(size_t capacity)
{
    replay_cache *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->capacity = capacity ? capacity : 1;
    r->nslots = 1;
    while (r->nslots < 2 * r->capacity)
        r->nslots <<= 1;
    r->ring = calloc(r->capacity, sizeof *r->ring);
    r->slots = calloc(r->nslots, sizeof *r->slots);
    if (!r->ring || !r->slots) {
        replay_free(r);
        return NULL;
    }
    return r;
}

void replay_free(replay_cache *r)
{
    if (!r)
        return;
    free(r->ring);
    free(r->slots);
    free(r);
}

static size_t slot_of(const replay_cache *r, const char *sig)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 16; i++)
        h = (h ^ (unsigned char)sig[i]) * 1099511628211ull;
    return (size_t)h & (r->nslots - 1);
}

/* Finds sig's slot, or the empty slot where it would go. */
static size_t probe(const replay_cache *r, const char *sig)
{
    size_t i = slot_of(r, sig);
    while (r->slots[i] && memcmp(r->ring[r->slots[i] - 1], sig, SIG_HEX_LEN) != 0)
        i = (i + 1) & (r->nslots - 1);
    return i;
}

/* Removes the entry at slot i, re-inserting the rest of its probe run. */
static void erase_slot(replay_cache *r, size_t i)
{
    r->slots[i] = 0;
    for (size_t j = (i + 1) & (r->nslots - 1); r->slots[j]; j = (j + 1) & (r->nslots - 1)) {
        uint32_t v = r->slots[j];
        r->slots[j] = 0;
        r->slots[probe(r, r->ring[v - 1])] = v;
    }
}

bool replay_seen(replay_cache *r, const char sig[SIG_HEX_LEN])
{
    size_t i = probe(r, sig);
    if (r->slots[i])
        return true;
    if (r->count == r->capacity) {          /* forget the oldest */
        erase_slot(r, probe(r, r->ring[r->next]));
        r->count--;
        i = probe(r, sig);
    }
    memcpy(r->ring[r->next], sig, SIG_HEX_LEN);
    r->slots[i] = (uint32_t)(r->next + 1);
    r->next = (r->next + 1) % r->capacity;
    r->count++;
    return false;
}
