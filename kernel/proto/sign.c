/* sign.c — HMAC (RFC 2104) over OpenSSL's low-level SHA-2 calls (see sign.h).
 *
 * The HMAC construction is composed here from the direct SHA224/256/384/512_*
 * calls rather than through EVP_MAC, HMAC() or even the one-shot SHA256():
 * in OpenSSL 3 all of those fetch an implementation from a provider, and the
 * provider machinery costs the kernel process about 2 MB of resident memory
 * (and EVP_MAC a context allocation per message) for the same digest. The key
 * is absorbed once: each message starts from copies of the keyed inner and
 * outer states. Checked against the RFC 4231 vectors in tests/unit/test_proto.c.
 */
#define OPENSSL_SUPPRESS_DEPRECATED     /* SHA256_Init & co.: deprecated in 3.0, not removed */
#include "proto/sign.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SHA-224 and SHA-256 share one state type, SHA-384 and SHA-512 the other. */
typedef union sha2_ctx {
    SHA256_CTX s256;
    SHA512_CTX s512;
} sha2_ctx;

typedef struct sha2 {
    const char *scheme;                 /* its name in a connection file */
    size_t block, digest;               /* bytes */
    int (*init)(sha2_ctx *);
    int (*update)(sha2_ctx *, const void *, size_t);
    int (*final)(unsigned char *, sha2_ctx *);
} sha2;

static int init224(sha2_ctx *c) { return SHA224_Init(&c->s256); }
static int init256(sha2_ctx *c) { return SHA256_Init(&c->s256); }
static int init384(sha2_ctx *c) { return SHA384_Init(&c->s512); }
static int init512(sha2_ctx *c) { return SHA512_Init(&c->s512); }
static int update256(sha2_ctx *c, const void *p, size_t n) { return SHA256_Update(&c->s256, p, n); }
static int update512(sha2_ctx *c, const void *p, size_t n) { return SHA512_Update(&c->s512, p, n); }
static int final224(unsigned char *md, sha2_ctx *c) { return SHA224_Final(md, &c->s256); }
static int final256(unsigned char *md, sha2_ctx *c) { return SHA256_Final(md, &c->s256); }
static int final384(unsigned char *md, sha2_ctx *c) { return SHA384_Final(md, &c->s512); }
static int final512(unsigned char *md, sha2_ctx *c) { return SHA512_Final(md, &c->s512); }

static const sha2 hashes[SIGN_SCHEME_COUNT] = {
    [SIGN_SHA224] = { "hmac-sha224", SHA256_CBLOCK, SHA224_DIGEST_LENGTH, init224, update256, final224 },
    [SIGN_SHA256] = { "hmac-sha256", SHA256_CBLOCK, SHA256_DIGEST_LENGTH, init256, update256, final256 },
    [SIGN_SHA384] = { "hmac-sha384", SHA512_CBLOCK, SHA384_DIGEST_LENGTH, init384, update512, final384 },
    [SIGN_SHA512] = { "hmac-sha512", SHA512_CBLOCK, SHA512_DIGEST_LENGTH, init512, update512, final512 },
};

#define MAX_BLOCK SHA512_CBLOCK
#define MAX_DIGEST SHA512_DIGEST_LENGTH

int sign_scheme_parse(const char *name)
{
    for (int i = 0; i < SIGN_SCHEME_COUNT; i++)
        if (strcmp(name, hashes[i].scheme) == 0)
            return i;
    return -1;
}

const char *sign_scheme_names(void)
{
    static char names[SIGN_SCHEME_COUNT * 16];
    if (!names[0])
        for (int i = 0; i < SIGN_SCHEME_COUNT; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                     hashes[i].scheme);
    return names;
}

struct signer {
    const sha2 *hash;           /* NULL when signing is off */
    sha2_ctx inner, outer;      /* states after H(K ^ ipad) and H(K ^ opad) */
};

/* The key as one block: hashed first when longer than a block (RFC 2104). */
static int key_block(const sha2 *h, const char *key, size_t key_len, unsigned char block[MAX_BLOCK])
{
    memset(block, 0, MAX_BLOCK);
    if (key_len <= h->block) {
        memcpy(block, key, key_len);
        return 1;
    }
    sha2_ctx c;
    int ok = h->init(&c) && h->update(&c, key, key_len) && h->final(block, &c);
    OPENSSL_cleanse(&c, sizeof c);
    return ok;
}

/* Starts ctx as H((K ^ pad) ...) for pad 0x36 (inner) or 0x5c (outer). */
static int keyed_state(const sha2 *h, const unsigned char block[MAX_BLOCK], unsigned char pad,
                       sha2_ctx *ctx)
{
    unsigned char padded[MAX_BLOCK];
    for (size_t i = 0; i < h->block; i++)
        padded[i] = block[i] ^ pad;
    int ok = h->init(ctx) && h->update(ctx, padded, h->block);
    OPENSSL_cleanse(padded, sizeof padded);
    return ok;
}

signer *signer_new(enum sign_scheme scheme, const char *key, size_t key_len)
{
    if ((unsigned)scheme >= SIGN_SCHEME_COUNT)
        return NULL;
    signer *s = calloc(1, sizeof *s);
    if (!s || key_len == 0)
        return s;
    const sha2 *h = &hashes[scheme];
    unsigned char block[MAX_BLOCK];
    int ok = key_block(h, key, key_len, block) && keyed_state(h, block, 0x36, &s->inner) &&
             keyed_state(h, block, 0x5c, &s->outer);
    OPENSSL_cleanse(block, sizeof block);
    if (!ok) {
        signer_free(s);
        return NULL;
    }
    s->hash = h;
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
    return s && s->hash;
}

size_t signer_hex_len(const signer *s)
{
    return signer_enabled(s) ? 2 * s->hash->digest : 0;
}

static int mac_parts(const signer *s, const void *const parts[], const size_t lens[], size_t n,
                     unsigned char out[MAX_DIGEST])
{
    const sha2 *h = s->hash;
    sha2_ctx c = s->inner;
    unsigned char inner[MAX_DIGEST];
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++)
        ok = h->update(&c, parts[i], lens[i]);
    ok = ok && h->final(inner, &c);
    c = s->outer;
    ok = ok && h->update(&c, inner, h->digest) && h->final(out, &c);
    OPENSSL_cleanse(&c, sizeof c);
    return ok ? 0 : -1;
}

/* n bytes as 2n lowercase hex digits and a NUL. */
static void to_hex(const unsigned char *bytes, size_t n, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[bytes[i] >> 4];
        hex[2 * i + 1] = digits[bytes[i] & 15];
    }
    hex[2 * n] = '\0';
}

int wire_sign(const signer *s, const void *const parts[], const size_t lens[], size_t nparts,
              char hex[SIG_HEX_MAX + 1])
{
    unsigned char mac[MAX_DIGEST];
    if (!signer_enabled(s) || mac_parts(s, parts, lens, nparts, mac))
        return -1;
    to_hex(mac, s->hash->digest, hex);
    return 0;
}

bool wire_verify(const signer *s, const void *sig, size_t sig_len, const void *const parts[],
                 const size_t lens[], size_t nparts)
{
    char expect[SIG_HEX_MAX + 1];
    if (sig_len == 0 || sig_len != signer_hex_len(s) || wire_sign(s, parts, lens, nparts, expect))
        return false;
    return CRYPTO_memcmp(expect, sig, sig_len) == 0;
}
