/* replay.h — refuses replayed messages, in bounded memory, without taking a
 * client's clock for absolute time.
 *
 * A signed message captured on the wire stays validly signed: sent again byte
 * for byte it would run again. The guard accepts each signed message once and
 * refuses it ever after, however many messages came in between:
 *
 *  - Clocks. Each client session (header.session) gets a clock offset, learned
 *    from its first accepted message: offset = kernel clock - the message's date.
 *    A message's corrected date is its date + its session's offset, so a client
 *    2 hours slow (or fast) is as good as one in sync. The kernel clock is
 *    CLOCK_BOOTTIME: never set back, and it counts a suspended laptop's sleep.
 *  - Window. A message whose corrected date is more than the window
 *    (REPLAY_WINDOW_S) before the kernel clock is refused as stale.
 *  - Digests. Every accepted message's signature is remembered (its first 128
 *    bits); one seen before is refused as a duplicate. At most
 *    REPLAY_MAX_DIGESTS are kept. To make room the oldest is forgotten and its
 *    session's floor is raised to that message's corrected date; a message
 *    dated at or before its session's floor is refused. So an accepted message
 *    is refused later by its digest, by its session's floor, or by the window,
 *    and only a flood of over REPLAY_MAX_DIGESTS messages of one session within
 *    the window can refuse one of its own messages that arrive out of order.
 *  - Sessions. At most REPLAY_MAX_SESSIONS are kept; a new one takes the place
 *    of the one heard from least recently.
 *  - Dates. A signed message without a parsable date (jupyter_client and
 *    JupyterLab always send one) is refused: nothing would stop its replay.
 *
 * Limits, stated: a client whose clock is set back by more than the window
 * has its messages refused as stale until it starts a new session (a new
 * kernel connection); when the kernel runs on the client's machine, so does a
 * step of that machine's wall clock. A session is forgotten only after
 * REPLAY_MAX_SESSIONS newer ones; a message of a forgotten session older than
 * the digests kept would count as the first of a new session. Forgetting
 * nothing would need memory without bound, and the only one who can start
 * sessions is a holder of the key.
 */
#ifndef CUDALAB_REPLAY_H
#define CUDALAB_REPLAY_H

#include <stddef.h>

#define REPLAY_WINDOW_S 600.0           /* 10 minutes of the kernel's clock */
#define REPLAY_MAX_DIGESTS 16384        /* 640 KiB: 32 bytes each, 8 in the index */
#define REPLAY_MAX_SESSIONS 1024        /* 48 KiB: 48 bytes each */

typedef struct replay_limits {
    double window_s;
    size_t max_digests, max_sessions;
    double (*clock)(void);      /* kernel seconds, never going back; NULL: CLOCK_BOOTTIME */
} replay_limits;

typedef struct replay_cache replay_cache;

/* limits NULL means the defaults above. Returns NULL on allocation failure. */
replay_cache *replay_new(const replay_limits *limits);
void replay_free(replay_cache *r);

enum replay_verdict {
    REPLAY_FRESH,               /* accepted, and remembered */
    REPLAY_DUPLICATE,           /* its signature was seen before */
    REPLAY_STALE,               /* dated more than the window ago */
    REPLAY_BEFORE_FLOOR,        /* dated before messages of its session already forgotten */
    REPLAY_UNDATED,             /* no parsable date */
};

/* Judges one signed message whose signature has been verified: sig is that
 * hex signature, session its header's session (NULL counts as ""), date its
 * header's date in seconds since the epoch (NaN or negative: missing or not
 * parsable). Remembers it when fresh. */
enum replay_verdict replay_admit(replay_cache *r, const char *session, size_t session_len,
                                 double date, const char *sig, size_t sig_len);
/* A reason for the log, naming the limit that applied ("duplicate signature
 * (replayed message)"); valid until the next call. NULL for REPLAY_FRESH. */
const char *replay_reason(replay_cache *r, enum replay_verdict v);

#endif
