/* parse_number.c — the number grammars of flag values.
 *
 * Integers are what an instructor types for sizes: 1024, 2^20, 64K (binary
 * multipliers K M G T P, optionally Ki Mi ...), 1e6, 1.5K, 1_000_000. They are
 * evaluated exactly in unsigned 64-bit arithmetic with every multiplication
 * checked, so 2^63 or 99999999999999999999K is reported as overflow instead of
 * wrapping into a small, plausible-looking size.
 *
 * A decimal mantissa is kept as d * 10^x with the trailing zeros of its digits
 * moved into x, so 1000000000000000000000e-3 is exact and 2.50K is 2560.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lang/parse_internal.h"

#define EXP_CAP 100000L             /* exponents beyond this only matter for 0 */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Length of a digit run with single '_' between digits (1_000); 0 if none.
 * A misplaced '_' ends the run, and the leftover makes the caller refuse. */
static size_t digit_run(const char *s)
{
    size_t i = 0;
    while (is_digit(s[i]) || (s[i] == '_' && i > 0 && is_digit(s[i - 1]) && is_digit(s[i + 1])))
        i++;
    return i;
}

static bool mul_u64(uint64_t *v, uint64_t m)
{
    if (m != 0 && *v > UINT64_MAX / m)
        return false;
    *v *= m;
    return true;
}

/* Accumulates a plain digit run; *big when it does not fit. */
static uint64_t run_value(const char *s, size_t n, bool *big)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '_')
            continue;
        uint64_t dig = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - dig) / 10)
            *big = true;
        v = v * 10 + dig;           /* meaningless once big, never read then */
    }
    return v;
}

typedef struct decimal {
    uint64_t d;                     /* significant digits, no trailing zeros (or 0) */
    long x;                         /* value = d * 10^x */
    bool big;                       /* d did not fit */
} decimal;

/* Feeds one digit of the mantissa; frac says it is after the point. Once big,
 * d is left as it was: it must never wrap (2^64 would wrap to exactly 0). */
static void decimal_digit(decimal *m, long *pending, char c, bool frac)
{
    if (frac)
        m->x--;
    if (c == '0' || m->big) {
        *pending += c == '0';
        return;
    }
    uint64_t d = m->d, dig = (uint64_t)(c - '0');
    for (long k = 0; k <= *pending && !m->big; k++)
        m->big = !mul_u64(&d, 10);
    m->big = m->big || d > UINT64_MAX - dig;
    if (!m->big)
        m->d = d + dig;
    *pending = 0;
}

/* Reads digits[.digits] at s; returns the length read, 0 on a syntax error. */
static size_t read_decimal(const char *s, decimal *m)
{
    long pending = 0;
    size_t n = digit_run(s);
    if (n == 0)
        return 0;
    *m = (decimal){ 0 };
    for (size_t i = 0; i < n; i++)
        if (s[i] != '_')
            decimal_digit(m, &pending, s[i], false);
    if (s[n] == '.') {
        size_t f = digit_run(s + n + 1);
        if (f == 0)
            return 0;
        for (size_t i = n + 1; i < n + 1 + f; i++)
            if (s[i] != '_')
                decimal_digit(m, &pending, s[i], true);
        n += 1 + f;
    }
    m->x += pending;                /* zeros that were never multiplied in */
    return n;
}

/* d * 10^x * 2^k as an exact integer magnitude. */
static enum num_status decimal_value(const decimal *m, int k, uint64_t *out)
{
    uint64_t v = m->d;
    if (m->big)
        return NUM_OVERFLOW;
    if (v == 0) {
        *out = 0;
        return NUM_OK;
    }
    if (m->x >= 0) {
        for (long i = 0; i < m->x; i++)
            if (!mul_u64(&v, 10))
                return NUM_OVERFLOW;
    } else {
        /* v has no factor 10, so 10^j | v * 2^k needs 5^j | v and 2^j | v * 2^k. */
        long j = -m->x;
        for (long i = 0; i < j; i++) {
            if (v % 5 != 0)
                return NUM_FRACTION;
            v /= 5;
        }
        long both = j < k ? j : k;  /* powers of two that cancel */
        j -= both;
        k -= (int)both;
        for (long i = 0; i < j; i++) {
            if (v % 2 != 0)
                return NUM_FRACTION;
            v /= 2;
        }
    }
    for (int i = 0; i < k; i++)
        if (!mul_u64(&v, 2))
            return NUM_OVERFLOW;
    *out = v;
    return NUM_OK;
}

/* base^exp for plain digit runs: 2^20. */
static enum num_status power_value(const char *s, size_t n, const char *e, uint64_t *out)
{
    size_t m = digit_run(e);
    if (m == 0 || e[m])
        return NUM_SYNTAX;
    bool bbig = false, ebig = false;
    uint64_t base = run_value(s, n, &bbig), exp = run_value(e, m, &ebig);
    if (!ebig && exp == 0) {
        *out = 1;
        return NUM_OK;
    }
    if (!bbig && base <= 1) {
        *out = base;
        return NUM_OK;
    }
    if (bbig || ebig || exp > 64)
        return NUM_OVERFLOW;
    uint64_t v = 1;
    for (uint64_t i = 0; i < exp; i++)
        if (!mul_u64(&v, base))
            return NUM_OVERFLOW;
    *out = v;
    return NUM_OK;
}

/* The exponent of 1e6 (signed, capped: only 0 survives a huge one). */
static bool read_exponent(const char *s, long *out)
{
    bool neg = *s == '-';
    if (*s == '+' || *s == '-')
        s++;
    size_t n = digit_run(s);
    if (n == 0 || s[n])
        return false;
    bool big = false;
    uint64_t v = run_value(s, n, &big);
    long e = big || v > EXP_CAP ? EXP_CAP : (long)v;
    *out = neg ? -e : e;
    return true;
}

/* The magnitude of an unsigned number: decimal, then e, a suffix or nothing. */
static enum num_status magnitude(const char *s, uint64_t *out)
{
    size_t n = digit_run(s);
    if (n > 0 && s[n] == '^')
        return power_value(s, n, s + n + 1, out);
    decimal m;
    n = read_decimal(s, &m);
    if (n == 0)
        return NUM_SYNTAX;
    const char *q = s + n;
    int k = 0;
    if (*q == 'e' || *q == 'E') {
        long e;
        if (!read_exponent(q + 1, &e))
            return NUM_SYNTAX;
        m.x += e;
    } else if (*q) {
        const char *units = "KMGTP", *u = strchr(units, toupper((unsigned char)*q));
        if (!u)
            return NUM_SYNTAX;
        k = 10 * (int)(u - units + 1);
        q++;
        if (*q == 'i' || *q == 'I')
            q++;
        if (*q)
            return NUM_SYNTAX;
    }
    return decimal_value(&m, k, out);
}

enum num_status number_int(const char *s, long long *out)
{
    bool neg = *s == '-';
    if (*s == '+' || *s == '-')
        s++;
    uint64_t mag;
    enum num_status st = magnitude(s, &mag);
    if (st != NUM_OK)
        return st;
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    if (mag > limit)
        return NUM_OVERFLOW;
    if (neg)
        *out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(long long)mag;
    else
        *out = (long long)mag;
    return NUM_OK;
}

enum num_status number_float(const char *s, double *out)
{
    const char *t = s + (*s == '+' || *s == '-');
    if (strncasecmp(t, "inf", 3) == 0 || strncasecmp(t, "nan", 3) == 0)
        return NUM_NONFINITE;
    size_t len = strlen(s);
    char *buf = malloc(len + 1);
    if (!buf)
        return NUM_SYNTAX;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool sep = c == '_' && i > 0 && is_digit(s[i - 1]) && is_digit(s[i + 1]);
        if (!sep && !is_digit(c) && !strchr(".+-eE", c)) {
            free(buf);
            return NUM_SYNTAX;
        }
        if (!sep)
            buf[n++] = c;
    }
    buf[n] = '\0';
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    bool whole = end != buf && *end == '\0';
    int e = errno;
    free(buf);
    if (!whole)
        return NUM_SYNTAX;
    if (e == ERANGE && fabs(v) > 1.0)
        return NUM_OVERFLOW;
    if (!isfinite(v))
        return NUM_NONFINITE;
    *out = v;
    return NUM_OK;
}
