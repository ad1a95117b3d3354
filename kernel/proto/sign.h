/* sign.h — HMAC message signatures over the SHA-2 family.
 *
 * Jupyter signs the four JSON frames (header, parent_header, metadata,
 * content) in that order; the signature is the lowercase hex digest. Buffers
 * are not signed. With an empty key nothing is signed or checked. Which hash
 * is named by the connection file's signature_scheme ("hmac-sha256", ...).
 */
#ifndef CUDALAB_SIGN_H
#define CUDALAB_SIGN_H

#include <stdbool.h>
#include <stddef.h>

/* The schemes jupyter_client can name that we support: every SHA-2 hash. */
enum sign_scheme { SIGN_SHA224, SIGN_SHA256, SIGN_SHA384, SIGN_SHA512, SIGN_SCHEME_COUNT };

#define SIGN_SCHEME_DEFAULT SIGN_SHA256     /* when the connection file names none */
#define SIG_HEX_MAX 128                     /* hex digest of the longest hash, SHA-512 */

/* The scheme a connection file names ("hmac-sha512"), or -1 when it is not supported. */
int sign_scheme_parse(const char *name);
/* "hmac-sha224, hmac-sha256, ...": the supported names, for error messages. */
const char *sign_scheme_names(void);

typedef struct signer signer;

/* key may be empty (then signing is off). Returns NULL on allocation failure
 * or an unknown scheme. */
signer *signer_new(enum sign_scheme scheme, const char *key, size_t key_len);
void signer_free(signer *s);
bool signer_enabled(const signer *s);
/* Length of a signature in hex digits (56 to 128), or 0 when signing is off. */
size_t signer_hex_len(const signer *s);

/* Hex digest of the parts, NUL-terminated in hex (signer_hex_len + 1 bytes, at
 * most SIG_HEX_MAX + 1). Returns 0, or -1 when signing is off. */
int wire_sign(const signer *s, const void *const parts[], const size_t lens[], size_t nparts,
              char hex[SIG_HEX_MAX + 1]);

/* Constant-time check of a received signature against the parts. */
bool wire_verify(const signer *s, const void *sig, size_t sig_len, const void *const parts[],
                 const size_t lens[], size_t nparts);

#endif
