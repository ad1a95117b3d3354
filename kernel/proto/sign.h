/* sign.h — HMAC-SHA256 message signatures and replay detection.
 *
 * Jupyter signs the four JSON frames (header, parent_header, metadata,
 * content) in that order; the signature is the lowercase hex digest. Buffers
 * are not signed. With an empty key nothing is signed or checked.
 */
#ifndef CUDALAB_SIGN_H
#define CUDALAB_SIGN_H

#include <stdbool.h>
#include <stddef.h>

#define SIG_HEX_LEN 64

typedef struct signer signer;

/* key may be empty (then signing is off). Returns NULL on allocation failure. */
signer *signer_new(const char *key, size_t key_len);
void signer_free(signer *s);
bool signer_enabled(const signer *s);

/* Hex digest of the parts, written to hex (SIG_HEX_LEN + 1 bytes). Returns 0, or -1
 * when signing is off or OpenSSL fails. */
int wire_sign(const signer *s, const void *const parts[], const size_t lens[], size_t nparts,
              char hex[SIG_HEX_LEN + 1]);

/* Constant-time check of a received signature against the parts. */
bool wire_verify(const signer *s, const void *sig, size_t sig_len, const void *const parts[],
                 const size_t lens[], size_t nparts);

/* A bounded memory of signatures already accepted, to refuse replays.
 * Remembers the last `capacity` signatures. */
typedef struct replay_cache replay_cache;
replay_cache *replay_new(size_t capacity);
void replay_free(replay_cache *r);
/* Returns true if sig was seen before; otherwise remembers it and returns false. */
bool replay_seen(replay_cache *r, const char sig[SIG_HEX_LEN]);

#endif
