/* digest.h — SHA-256 of a buffer, raw and as hex: for digests that stand in
 * for long inputs (history, result documents) and keys (the replay guard).
 * Through the low-level calls, as HMAC is: the one-shot SHA256() would load
 * OpenSSL's providers into the kernel process. */
#ifndef CUDALAB_BASE_DIGEST_H
#define CUDALAB_BASE_DIGEST_H

#include <stddef.h>

#define SHA256_HEX_LEN 64
void sha256_digest(const void *data, size_t len, unsigned char md[32]);
void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1]);

#endif
