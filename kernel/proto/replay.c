/* replay.c — the replay guard (see replay.h for the rules and their limits).
 *
 * Digests live in a ring in arrival order, found through an open-addressing
 * index; sessions in a small table searched linearly (a kernel has a handful).
 * Both are allocated once, at their caps, and touched only as they fill.
 */
#include "base/digest.h"
#include "proto/replay.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "proto/sign.h"

#define KEY_LEN 16              /* bytes of a signature or session id kept: 128 bits */

typedef struct session {
    unsigned char id[KEY_LEN];  /* SHA-256 prefix of header.session */
    uint32_t gen;               /* bumped whenever the slot passes to another session */
    bool used;
    double offset;              /* kernel clock - client clock, from its first message */
    double floor;               /* corrected dates at or before this are refused */
    double heard;               /* kernel clock of its last accepted message */
} session;

typedef struct digest {
    unsigned char mac[KEY_LEN]; /* the signature's first 128 bits */
    double when;                /* the message's corrected date */
    uint32_t session, gen;      /* whose floor to raise when it is forgotten */
} digest;

struct replay_cache {
    replay_limits lim;
    session *sessions;
    digest *ring;
    size_t next, count;         /* ring position of the next digest, digests held */
    uint32_t *slots;            /* index: 0 = empty, else ring position + 1 */
    size_t nslots;              /* power of two, >= 2 * max_digests */
    uint64_t seed;              /* of the index's hash */
    char why[128];
};

static double boot_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

replay_cache *replay_new(const replay_limits *limits)
{
    static const replay_limits defaults = { REPLAY_WINDOW_S, REPLAY_MAX_DIGESTS, REPLAY_MAX_SESSIONS,
                                            boot_clock };
    replay_cache *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->lim = limits ? *limits : defaults;
    if (!r->lim.clock)
        r->lim.clock = boot_clock;
    if (!r->lim.max_digests)
        r->lim.max_digests = 1;
    if (!r->lim.max_sessions)
        r->lim.max_sessions = 1;
    if (getrandom(&r->seed, sizeof r->seed, 0) != (ssize_t)sizeof r->seed)
        r->seed = (uint64_t)(uintptr_t)r;   /* without entropy: the address is still unknown outside */
    r->nslots = 1;
    while (r->nslots < 2 * r->lim.max_digests)
        r->nslots <<= 1;
    r->sessions = calloc(r->lim.max_sessions, sizeof *r->sessions);
    r->ring = calloc(r->lim.max_digests, sizeof *r->ring);
    r->slots = calloc(r->nslots, sizeof *r->slots);
    if (!r->sessions || !r->ring || !r->slots) {
        replay_free(r);
        return NULL;
    }
    return r;
}

void replay_free(replay_cache *r)
{
    if (!r)
        return;
    free(r->sessions);
    free(r->ring);
    free(r->slots);
    free(r);
}

/* ---- sessions ---- */

static void session_id(const char *name, size_t len, unsigned char id[KEY_LEN])
{
    unsigned char md[32];
    sha256_digest(name ? name : "", name ? len : 0, md);
    memcpy(id, md, KEY_LEN);
}

static session *session_find(replay_cache *r, const unsigned char id[KEY_LEN])
{
    for (size_t i = 0; i < r->lim.max_sessions; i++)
        if (r->sessions[i].used && memcmp(r->sessions[i].id, id, KEY_LEN) == 0)
            return &r->sessions[i];
    return NULL;
}

/* A free slot, or the slot of the session heard from least recently. */
static session *session_slot(replay_cache *r)
{
    session *pick = &r->sessions[0];
    for (size_t i = 0; i < r->lim.max_sessions; i++) {
        session *s = &r->sessions[i];
        if (!s->used)
            return s;
        if (s->heard < pick->heard)
            pick = s;
    }
    return pick;
}

static session *session_add(replay_cache *r, const unsigned char id[KEY_LEN], double offset)
{
    session *s = session_slot(r);
    uint32_t gen = s->gen + 1;
    *s = (session){ .gen = gen, .used = true, .offset = offset, .floor = -INFINITY };
    memcpy(s->id, id, KEY_LEN);
    return s;
}

/* ---- digests ---- */

static void key_of(const char *sig, size_t len, unsigned char mac[KEY_LEN])
{
    memset(mac, 0, KEY_LEN);
    for (size_t i = 0; i < len && i < 2 * KEY_LEN; i++) {
        unsigned char ch = (unsigned char)sig[i];
        unsigned v = ch >= 'a' ? ch - 'a' + 10u : ch - (unsigned)'0';   /* lowercase hex, as verified */
        mac[i / 2] |= (unsigned char)((v & 15) << (i % 2 ? 0 : 4));
    }
}

/* HMAC output is uniform, but a holder of the key could grind for signatures
 * that share index bits: all 128 bits are mixed with a seed of this process. */
static size_t slot_of(const replay_cache *r, const unsigned char mac[KEY_LEN])
{
    uint64_t lo, hi;
    memcpy(&lo, mac, sizeof lo);
    memcpy(&hi, mac + sizeof lo, sizeof hi);
    uint64_t h = (lo ^ r->seed) * 0x9e3779b97f4a7c15ull;
    h = (h ^ hi ^ (h >> 32)) * 0xbf58476d1ce4e5b9ull;
    return (size_t)(h ^ (h >> 29)) & (r->nslots - 1);
}

/* Finds mac's slot, or the empty slot where it would go. */
static size_t probe(const replay_cache *r, const unsigned char mac[KEY_LEN])
{
    size_t i = slot_of(r, mac);
    while (r->slots[i] && memcmp(r->ring[r->slots[i] - 1].mac, mac, KEY_LEN) != 0)
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
        r->slots[probe(r, r->ring[v - 1].mac)] = v;
    }
}

/* Forgets the oldest digest; its session's floor rises to its date. */
static void forget_oldest(replay_cache *r)
{
    digest *d = &r->ring[r->next];
    erase_slot(r, probe(r, d->mac));
    session *s = &r->sessions[d->session];
    if (s->used && s->gen == d->gen && d->when > s->floor)
        s->floor = d->when;
    r->count--;
}

static void remember(replay_cache *r, const unsigned char mac[KEY_LEN], double when, const session *s)
{
    if (r->count == r->lim.max_digests)
        forget_oldest(r);
    digest *d = &r->ring[r->next];
    memcpy(d->mac, mac, KEY_LEN);
    d->when = when;
    d->session = (uint32_t)(s - r->sessions);
    d->gen = s->gen;
    r->slots[probe(r, mac)] = (uint32_t)(r->next + 1);
    r->next = (r->next + 1) % r->lim.max_digests;
    r->count++;
}

/* ---- the verdict ---- */

enum replay_verdict replay_admit(replay_cache *r, const char *session_name, size_t session_len,
                                 double date, const char *sig, size_t sig_len)
{
    if (!isfinite(date) || date < 0)
        return REPLAY_UNDATED;
    double now = r->lim.clock();
    unsigned char id[KEY_LEN], mac[KEY_LEN];
    session_id(session_name, session_len, id);
    key_of(sig, sig_len, mac);
    if (r->slots[probe(r, mac)])
        return REPLAY_DUPLICATE;
    session *s = session_find(r, id);
    double when = s ? date + s->offset : now;   /* a new session's clock is learned from this */
    if (when < now - r->lim.window_s)
        return REPLAY_STALE;
    if (s && when <= s->floor)
        return REPLAY_BEFORE_FLOOR;
    if (!s)
        s = session_add(r, id, now - date);
    s->heard = now;
    remember(r, mac, when, s);
    return REPLAY_FRESH;
}

const char *replay_reason(replay_cache *r, enum replay_verdict v)
{
    switch (v) {
    case REPLAY_FRESH:
        return NULL;
    case REPLAY_DUPLICATE:
        return "duplicate signature (replayed message)";
    case REPLAY_STALE:
        snprintf(r->why, sizeof r->why, "older than the %.0f s replay window on its session's clock "
                 "(replayed, or the client's clock was set back)", r->lim.window_s);
        return r->why;
    case REPLAY_BEFORE_FLOOR:
        snprintf(r->why, sizeof r->why, "dated no later than a forgotten message of its session "
                 "(over %zu signatures in the replay window; replayed message)", r->lim.max_digests);
        return r->why;
    case REPLAY_UNDATED:
        return "signed message without a parsable header date (needed to refuse replays)";
    }
    return "refused";
}
