/* expr_lex.c — the tokens of %assert/%score expressions (see expr_lex.h):
 * numbers as flags write them, quoted strings with their escapes, names and
 * the words and, or, not, true, false, null (and Python's spellings), and
 * the operators; a character that starts none of them fails where it stands.
 */
#include "grade/expr_lex.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "lang/lex.h"

void expr_fail(parser *p, size_t at, const char *fmt, ...)
{
    if (p->failed)
        return;
    p->failed = true;
    p->at = at;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->msg, p->msglen, fmt, ap);
    va_end(ap);
}

bool expr_lex_name_char(char c, bool first)
{
    return isalpha((unsigned char)c) || c == '_' || (!first && isdigit((unsigned char)c));
}

/* A number as flags write it: 1024, 2.5, 1e-3, 2^20, 64K, 1_000. An integer
 * form (no '.', no exponent) must fit in 64 bits, any form in a double. NULL
 * when text is no number; NULL with p failed when it is one out of range. */
json_t *expr_lex_number(parser *p, const char *text, size_t at)
{
    long long i;
    double d;
    int q = utf8_clip(text, 40);
    const char *more = strlen(text) > (size_t)q ? "..." : "";
    enum num_status st = number_int(text, &i);
    if (st == NUM_OK)
        return json_integer(i);
    if (st == NUM_OVERFLOW && !strpbrk(text, ".eE")) {
        bool digits = !*more && strspn(text, "0123456789_") == strlen(text);   /* suggest N.0 */
        expr_fail(p, at, "the integer %.*s%s is beyond the 64-bit range (%lld to %lld)%s%.*s%s%s", q, text, more,
                  (long long)INT64_MIN, (long long)INT64_MAX, digits ? "; for a float write " : "",
                  digits ? q : 0, text, digits ? more : "", digits ? ".0" : "");
        return NULL;
    }
    st = number_float(text, &d);
    if (st == NUM_OK)
        return json_real(d);
    if (st == NUM_OVERFLOW || st == NUM_NONFINITE)
        expr_fail(p, at, "the number %.*s%s is beyond the range of a double (about 1.8e308)", q, text, more);
    return NULL;
}

static size_t number_end(const char *s, size_t i, size_t len)
{
    while (i < len && (isalnum((unsigned char)s[i]) || s[i] == '.' || s[i] == '_' || s[i] == '^'
                       || ((s[i] == '+' || s[i] == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E'))))
        i++;
    return i;
}

/* Decodes the string body s[i..j) into buf; fails at a bad or unknown escape. */
static size_t string_body(parser *p, size_t i, size_t j, char *buf)
{
    size_t n = 0;
    while (i < j && !p->failed) {
        if (p->s[i] != '\\') {
            buf[n++] = p->s[i++];
            continue;
        }
        char why[160];
        size_t outn = 0;
        int used = escape_decode(p->s + i, j - i, buf + n, &outn, why, sizeof why);
        if (used < 0) {
            expr_fail(p, i, "%s", why);
        } else if (used == 0) {
            int c = (int)utf8_char_bytes(p->s[i + 1]);
            c = utf8_clip(p->s + i + 1, (size_t)c < j - i - 1 ? (size_t)c : j - i - 1);
            expr_fail(p, i, "unknown escape \\%.*s in a string; the escapes are %s (write \\\\ for a "
                      "backslash)", c, p->s + i + 1, ESCAPES_TEXT);
        } else {
            n += outn;
            i += (size_t)used;
        }
    }
    return n;
}

/* A quoted string starting at s[i]; sets p->value. Returns the end or fails. */
size_t expr_lex_string(parser *p, size_t i)
{
    char q = p->s[i];
    size_t j = i + 1;
    while (j < p->len && p->s[j] != q)
        j += p->s[j] == '\\' && j + 1 < p->len ? 2 : 1;
    if (j >= p->len) {
        expr_fail(p, i, "this %c quote is never closed", q);
        return p->len;
    }
    char *buf = malloc(j - i);          /* decoding never lengthens */
    if (!buf) {
        expr_fail(p, i, "out of memory");
        return p->len;
    }
    size_t n = string_body(p, i + 1, j, buf);
    if (!p->failed) {
        p->value = json_stringn(buf, n);
        if (!p->value)
            expr_fail(p, i, "the string is not valid UTF-8");
    }
    free(buf);
    return j + 1;
}

static const struct { const char *text; enum tk t; } words[] = {
    {"and", T_AND}, {"or", T_OR}, {"not", T_NOT}, {"true", T_TRUE}, {"false", T_FALSE},
    {"null", T_NULL}, {"True", T_TRUE}, {"False", T_FALSE}, {"None", T_NULL},
};

void expr_lex_next(parser *p)
{
    json_decref(p->value);
    p->value = NULL;
    const char *s = p->s;
    size_t i = p->pos;
    while (i < p->len && isspace((unsigned char)s[i]))
        i++;
    p->ts = i;
    if (i >= p->len) {
        p->t = T_END;
        p->te = p->pos = i;
        return;
    }
    char c = s[i], d = i + 1 < p->len ? s[i + 1] : '\0';
    size_t e = i + 1;
    static const char single[] = "()[],.+-*/%<>=!";
    static const enum tk single_t[] = {T_LP, T_RP, T_LB, T_RB, T_COMMA, T_DOT, T_PLUS, T_MINUS,
                                       T_STAR, T_SLASH, T_PCT, T_LT, T_GT, T_ASSIGN, T_NOT};
    if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)d))) {
        e = number_end(s, i, p->len);
        char *text = strndup(s + i, e - i);
        if (!text)
            expr_fail(p, i, "out of memory");
        p->value = text ? expr_lex_number(p, text, i) : NULL;
        free(text);
        if (!p->value)
            expr_fail(p, i, "'%.*s' is not a number", utf8_clip(s + i, e - i < 40 ? e - i : 40), s + i);
        p->t = T_NUM;
    } else if (c == '\'' || c == '"') {
        e = expr_lex_string(p, i);
        p->t = T_STR;
    } else if (expr_lex_name_char(c, true)) {
        while (e < p->len && expr_lex_name_char(s[e], false))
            e++;
        p->t = T_NAME;
        for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
            if (strlen(words[k].text) == e - i && memcmp(words[k].text, s + i, e - i) == 0)
                p->t = words[k].t;
    } else if ((c == '=' || c == '!' || c == '<' || c == '>') && d == '=') {
        e = i + 2;
        p->t = c == '=' ? T_EQ : c == '!' ? T_NE : c == '<' ? T_LE : T_GE;
    } else if ((c == '&' && d == '&') || (c == '|' && d == '|')) {
        e = i + 2;
        p->t = c == '&' ? T_AND : T_OR;
    } else if (strchr(single, c)) {
        p->t = single_t[strchr(single, c) - single];
    } else {
        expr_fail(p, i, "unexpected character '%.*s'", utf8_clip(s + i, 4), s + i);
        p->t = T_END;
    }
    p->te = p->pos = e;
}
