/* digest.c — SHA-256 helpers (see digest.h for why the low-level calls). */
#define OPENSSL_SUPPRESS_DEPRECATED     /* SHA256_Init & co.: deprecated in 3.0, not removed */
#include <openssl/sha.h>

#include "base/digest.h"

void sha256_digest(const void *data, size_t len, unsigned char md[SHA256_DIGEST_LENGTH])
{
    SHA256_CTX c;
    SHA256_Init(&c);
    SHA256_Update(&c, data, len);
    SHA256_Final(md, &c);
}

void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";
    unsigned char md[SHA256_DIGEST_LENGTH];
    sha256_digest(data, len, md);
    for (size_t i = 0; i < sizeof md; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[2 * sizeof md] = '\0';
}
