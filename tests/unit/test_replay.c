/* test_replay.c — unit tests for the replay guard (kernel/proto/replay.c):
 * per-session clocks, the window, the digest cap and its floors, the session
 * cap. The kernel's clock is injected, never slept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/replay.h"

#define T0 1000000.0            /* the kernel's clock at the start of each test */
#define DATE0 1767225600.0      /* a client's clock then: 2026-01-01T00:00:00Z */
#define WINDOW 600.0

static double fake_now;

static double fake_clock(void)
{
    return fake_now;
}

static replay_cache *guard(size_t max_digests, size_t max_sessions)
{
    fake_now = T0;
    replay_limits lim = { WINDOW, max_digests, max_sessions, fake_clock };
    replay_cache *r = replay_new(&lim);
    assert_non_null(r);
    return r;
}

/* A distinct signature per n, like HMAC output: 128 hex digits. */
static const char *sig(unsigned n)
{
    static char hex[129];
    uint64_t x = n * 0x9e3779b97f4a7c15ull + 1;
    for (int i = 0; i < 128; i += 16) {
        x ^= x >> 31;
        x *= 0xbf58476d1ce4e5b9ull;
        snprintf(hex + i, 17, "%016llx", (unsigned long long)x);
    }
    return hex;
}

static enum replay_verdict admit(replay_cache *r, const char *session, double date, unsigned n)
{
    const char *s = sig(n);
    return replay_admit(r, session, session ? strlen(session) : 0, date, s, strlen(s));
}

static void test_duplicates(void **state)
{
    replay_cache *r = guard(REPLAY_MAX_DIGESTS, 8);
    assert_int_equal(admit(r, "a", DATE0, 1), REPLAY_FRESH);
    assert_int_equal(admit(r, "a", DATE0, 1), REPLAY_DUPLICATE);
    assert_int_equal(admit(r, "b", DATE0, 1), REPLAY_DUPLICATE);   /* whatever the session */
    assert_int_equal(admit(r, "a", DATE0, 2), REPLAY_FRESH);
    assert_non_null(strstr(replay_reason(r, REPLAY_DUPLICATE), "duplicate signature"));
    assert_null(replay_reason(r, REPLAY_FRESH));
    /* 56 hex digits (SHA-224) are enough to tell signatures apart */
    assert_int_equal(replay_admit(r, "a", 1, DATE0, sig(3), 56), REPLAY_FRESH);
    assert_int_equal(replay_admit(r, "a", 1, DATE0, sig(3), 56), REPLAY_DUPLICATE);
    replay_free(r);
}

static void test_undated(void **state)
{
    replay_cache *r = guard(16, 8);
    assert_int_equal(admit(r, "a", NAN, 1), REPLAY_UNDATED);
    assert_int_equal(admit(r, "a", -1, 1), REPLAY_UNDATED);
    assert_int_equal(admit(r, "a", INFINITY, 1), REPLAY_UNDATED);
    assert_non_null(strstr(replay_reason(r, REPLAY_UNDATED), "date"));
    /* refused undated messages teach nothing: the session's clock comes from its first dated one */
    assert_int_equal(admit(r, "a", DATE0 - 7200, 2), REPLAY_FRESH);
    assert_int_equal(admit(r, "a", DATE0 - 7200 - WINDOW - 1, 3), REPLAY_STALE);
    replay_free(r);
}

/* The case: an old request resent after more messages than the cache holds. */
static void test_replay_after_a_flood(void **state)
{
    replay_cache *r = guard(REPLAY_MAX_DIGESTS, REPLAY_MAX_SESSIONS);
    assert_int_equal(admit(r, "client", DATE0, 0), REPLAY_FRESH);           /* the execute_request */
    for (unsigned i = 1; i <= 17000; i++) {
        fake_now += 0.0001;
        assert_int_equal(admit(r, "client", DATE0 + i * 0.0001, i), REPLAY_FRESH);
    }
    enum replay_verdict v = admit(r, "client", DATE0, 0);
    assert_int_equal(v, REPLAY_BEFORE_FLOOR);
    assert_non_null(strstr(replay_reason(r, v), "16384"));
    /* every message of the flood too, whether still remembered or not */
    for (unsigned i = 1; i <= 17000; i++) {
        v = admit(r, "client", DATE0 + i * 0.0001, i);
        assert_true(v == REPLAY_DUPLICATE || v == REPLAY_BEFORE_FLOOR);
    }
    assert_int_equal(admit(r, "client", DATE0 + 2, 20000), REPLAY_FRESH);  /* a new one runs */
    /* and much later, by the window alone */
    fake_now += 3600;
    assert_int_equal(admit(r, "client", DATE0, 0), REPLAY_STALE);
    assert_int_equal(admit(r, "client", DATE0 + 3600, 20001), REPLAY_FRESH);
    replay_free(r);
}

static void test_window(void **state)
{
    replay_cache *r = guard(64, 8);
    assert_int_equal(admit(r, "a", DATE0, 1), REPLAY_FRESH);
    assert_int_equal(admit(r, "a", DATE0 - 86400 * 365, 2), REPLAY_STALE);   /* far in the past */
    assert_int_equal(admit(r, "a", DATE0 - WINDOW - 0.001, 3), REPLAY_STALE);
    assert_int_equal(admit(r, "a", DATE0 - WINDOW + 1, 4), REPLAY_FRESH);    /* late, but inside */
    enum replay_verdict v = admit(r, "a", DATE0 - WINDOW - 1, 5);
    assert_non_null(strstr(replay_reason(r, v), "600 s replay window"));
    /* the window follows the kernel's clock: the same date goes stale as it runs */
    fake_now += WINDOW - 10;
    assert_int_equal(admit(r, "a", DATE0 - 5, 6), REPLAY_FRESH);
    fake_now += 20;
    assert_int_equal(admit(r, "a", DATE0 - 5, 7), REPLAY_STALE);
    replay_free(r);
}

static void test_client_clocks(void **state)
{
    replay_cache *r = guard(64, 8);
    /* two hours slow, two hours fast, a year off: each session's clock is learned */
    assert_int_equal(admit(r, "slow", DATE0 - 7200, 1), REPLAY_FRESH);
    assert_int_equal(admit(r, "fast", DATE0 + 7200, 2), REPLAY_FRESH);
    assert_int_equal(admit(r, "off", DATE0 - 86400 * 365, 3), REPLAY_FRESH);
    fake_now += 300;
    assert_int_equal(admit(r, "slow", DATE0 - 7200 + 300, 4), REPLAY_FRESH);
    assert_int_equal(admit(r, "fast", DATE0 + 7200 + 300, 5), REPLAY_FRESH);
    assert_int_equal(admit(r, "off", DATE0 - 86400 * 365 + 300, 6), REPLAY_FRESH);
    /* a slow session's date that would be fine on the fast one's clock is stale on its own */
    assert_int_equal(admit(r, "slow", DATE0 - 7200 - WINDOW, 7), REPLAY_STALE);

    /* a client clock jumping forward is accepted (its messages are remembered for longer) */
    assert_int_equal(admit(r, "slow", DATE0 + 3600, 8), REPLAY_FRESH);
    /* set back within the window: still fine */
    assert_int_equal(admit(r, "slow", DATE0 - 7200 + 250, 9), REPLAY_FRESH);
    /* set back by more than the window: refused until the client starts a new session */
    fake_now += 1000;
    assert_int_equal(admit(r, "slow", DATE0 - 7200 + 300, 10), REPLAY_STALE);
    assert_int_equal(admit(r, "slow-again", DATE0 - 7200 + 300, 10), REPLAY_FRESH);
    replay_free(r);
}

/* Only the flooding session's own late messages can hit its floor. */
static void test_floor_is_per_session(void **state)
{
    replay_cache *r = guard(4, 8);
    assert_int_equal(admit(r, "quiet", DATE0, 1), REPLAY_FRESH);
    assert_int_equal(admit(r, "loud", DATE0 + 7200, 100), REPLAY_FRESH);
    for (unsigned i = 1; i <= 10; i++) {
        fake_now += 1;
        assert_int_equal(admit(r, "loud", DATE0 + 7200 + i, 100 + i), REPLAY_FRESH);
    }
    /* "quiet"'s message was forgotten: its replay meets quiet's floor */
    assert_int_equal(admit(r, "quiet", DATE0, 1), REPLAY_BEFORE_FLOOR);
    /* quiet's new messages, dated after it, are fine; loud's floor is loud's own */
    assert_int_equal(admit(r, "quiet", DATE0 + 10.5, 2), REPLAY_FRESH);
    assert_int_equal(admit(r, "loud", DATE0 + 7200 + 5, 200), REPLAY_BEFORE_FLOOR);
    assert_int_equal(admit(r, "loud", DATE0 + 7200 + 11, 201), REPLAY_FRESH);
    replay_free(r);
}

static void test_session_cap(void **state)
{
    replay_cache *r = guard(64, 2);
    assert_int_equal(admit(r, "a", DATE0, 1), REPLAY_FRESH);
    fake_now += 1;
    assert_int_equal(admit(r, "b", DATE0 + 1, 2), REPLAY_FRESH);
    fake_now += 1;
    assert_int_equal(admit(r, "a", DATE0 + 2, 3), REPLAY_FRESH);     /* a: heard last */
    fake_now += 1;
    assert_int_equal(admit(r, "c", DATE0 - 7200, 4), REPLAY_FRESH);  /* takes b's place */
    /* a's and c's clocks are kept: their old dates are stale */
    assert_int_equal(admit(r, "a", DATE0 - 3600, 5), REPLAY_STALE);
    assert_int_equal(admit(r, "c", DATE0 - 7200 - 3600, 6), REPLAY_STALE);
    /* b was forgotten (as replay.h states): its next message starts it afresh */
    assert_int_equal(admit(r, "b", DATE0 - 3600, 7), REPLAY_FRESH);
    /* and b's old digest is still remembered */
    assert_int_equal(admit(r, "b", DATE0 + 1, 2), REPLAY_DUPLICATE);
    /* a NULL session is the empty one */
    assert_int_equal(admit(r, NULL, DATE0, 8), REPLAY_FRESH);
    assert_int_equal(admit(r, "", DATE0 - 3600, 9), REPLAY_STALE);
    replay_free(r);
}

/* Random traffic against the one promise: no signature is ever accepted twice
 * (while its session is remembered: here there are as many sessions as kept). */
static void test_never_twice(void **state)
{
    enum { OPS = 200000, SIGS = 3000, SESSIONS = 4 };
    replay_cache *r = guard(32, SESSIONS);
    bool *accepted = calloc(SIGS, sizeof *accepted);
    double *dated = calloc(SIGS, sizeof *dated);
    assert_non_null(accepted);
    uint64_t x = 12345;
    for (int op = 0; op < OPS; op++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned n = (unsigned)(x >> 33) % SIGS;
        char session[2] = { (char)('a' + n % SESSIONS), 0 };   /* a message's session and date */
        if (!dated[n])                                          /* are fixed when it is made */
            dated[n] = DATE0 + (fake_now - T0) + (double)((x >> 8) % 1200) - 900;
        fake_now += (double)((x >> 40) % 100) / 100;
        enum replay_verdict v = admit(r, session, dated[n], n);
        if (v == REPLAY_FRESH) {
            if (accepted[n])
                fail_msg("signature %u accepted twice (op %d)", n, op);
            accepted[n] = true;
        }
    }
    free(accepted);
    free(dated);
    replay_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_undated),
        cmocka_unit_test(test_replay_after_a_flood),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_client_clocks),
        cmocka_unit_test(test_floor_is_per_session),
        cmocka_unit_test(test_session_cap),
        cmocka_unit_test(test_never_twice),
    };
    return cmocka_run_group_tests_name("replay", tests, NULL, NULL);
}
