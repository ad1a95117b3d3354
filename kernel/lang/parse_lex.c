/* parse_lex.c — splits one line of a cell into tokens, the way a shell would,
 * and decodes the backslash escapes that quoted text shares with %assert
 * and %score expressions.
 *
 * Tokens are separated by whitespace. Single quotes keep text as is; double
 * quotes understand the escapes of escape_decode (\" \\ \n \t \xHH \uHHHH
 * ..., and a backslash-newline vanishes). Any other backslash in double
 * quotes stays literal, backslash and all, so Windows-ish paths and regexes
 * survive; a malformed \x, \u or \U, or one that means NUL (values are C
 * strings), is a SyntaxError naming it: text is never silently dropped. A
 * quoted part may sit inside a token: --title="a b" is one token. An unquoted
 * '#' at the start of a token begins a comment that runs to the end of the line.
 *
 * The lexer also says how the line ends: whole, inside an open quote, with a
 * continuation backslash, or at a bad escape. parse.c uses that to join
 * physical lines, and cell_completeness to answer "incomplete". The text of a
 * raw magic (%assert, %score) is an expression, whose own quotes decide
 * instead (lex_raw_end): 'it\'s' is one string there.
 *
 * Cost is linear in the line: each token is measured, then decoded into an
 * allocation of its own size; past LEX_MAX_WORDS tokens the rest of the line
 * is only scanned (for its quotes), so a 50 MB line of words costs neither
 * seconds nor gigabytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "lang/parse_internal.h"

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int escape_decode(const char *s, size_t n, char out[4], size_t *outn, char *why, size_t whylen)
{
    static const char simple[] = "\\'\"ntr", simple_to[] = "\\'\"\n\t\r";
    static const struct { char letter; int digits; const char *example; } wide[] = {
        {'x', 2, "\\x41"}, {'u', 4, "\\u00e9"}, {'U', 8, "\\U0001F600"},
    };
    if (n >= 2 && s[1] == '\n') {              /* a line continued inside the quotes */
        *outn = 0;
        return 2;
    }
    const char *hit = n >= 2 && s[1] ? strchr(simple, s[1]) : NULL;
    if (hit) {
        out[0] = simple_to[hit - simple];
        *outn = 1;
        return 2;
    }
    size_t w = 0;
    while (w < sizeof wide / sizeof wide[0] && !(n >= 2 && s[1] == wide[w].letter))
        w++;
    if (w == sizeof wide / sizeof wide[0])
        return 0;
    int digits = wide[w].digits;
    unsigned long cp = 0;
    for (int i = 0; i < digits; i++) {
        int h = (size_t)(2 + i) < n ? hex_digit(s[2 + i]) : -1;
        if (h < 0) {
            snprintf(why, whylen, "the escape \\%c needs %d hex digits, as in %s (write \\\\ for a "
                     "backslash)", s[1], digits, wide[w].example);
            return -1;
        }
        cp = cp << 4 | (unsigned long)h;
    }
    if (cp == 0) {
        snprintf(why, whylen, "the escape \\%.*s means NUL, which text cannot hold here (values are C "
                 "strings)", digits + 1, s + 1);
        return -1;
    }
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
        snprintf(why, whylen, "the escape \\%.*s is not a Unicode character (surrogates and values past "
                 "\\U0010FFFF are not)", digits + 1, s + 1);
        return -1;
    }
    *outn = utf8_encode(cp, out);
    return 2 + digits;
}

/* Where a double-quoted part that starts just after its quote at s[i] ends:
 * the closing quote, or the terminating NUL when the quote stays open. */
static size_t double_end(const char *s, size_t i)
{
    while (s[i] && s[i] != '"')
        i += s[i] == '\\' && s[i + 1] ? 2 : 1;
    return i;
}

/* Decodes the double-quoted text s[i..end) into buf. Returns 0, or -1 with
 * lx->at and lx->why saying which escape is bad. */
static int decode_double(const char *s, size_t i, size_t end, char *buf, size_t *bn, lexed *lx)
{
    while (i < end) {
        if (s[i] != '\\' || i + 1 >= end) {
            buf[(*bn)++] = s[i++];
            continue;
        }
        size_t outn = 0;
        int used = escape_decode(s + i, end - i, buf + *bn, &outn, lx->why, sizeof lx->why);
        if (used < 0) {
            lx->at = i;
            return -1;
        }
        if (used == 0) {                        /* not an escape: both characters, as typed */
            buf[(*bn)++] = s[i];
            buf[(*bn)++] = s[i + 1];
            i += 2;
            continue;
        }
        *bn += outn;
        i += (size_t)used;
    }
    return 0;
}

/* Where the token at s[i] ends (its quotes skipped); *open is the opening
 * quote left open at the end of the line, or SIZE_MAX. */
static size_t token_end(const char *s, size_t i, size_t *open)
{
    *open = SIZE_MAX;
    while (s[i] && !is_space(s[i])) {
        char q = s[i];
        if (q != '"' && q != '\'') {
            i++;
            continue;
        }
        size_t close = q == '"' ? double_end(s, i + 1) : i + 1 + strcspn(s + i + 1, "'");
        if (!s[close]) {
            *open = i;
            return close;
        }
        i = close + 1;
    }
    return i;
}

/* The text of the token s[start..end) without its quotes, decoded into buf
 * (which holds end - start + 1 bytes: decoding never lengthens). */
static int decode_token(const char *s, size_t start, size_t end, char *buf, size_t *bn, lexed *lx)
{
    size_t i = start;
    while (i < end) {
        char q = s[i];
        if (q != '"' && q != '\'') {
            buf[(*bn)++] = s[i++];
            continue;
        }
        size_t close = q == '"' ? double_end(s, i + 1) : i + 1 + strcspn(s + i + 1, "'");
        close = close < end ? close : end;
        if (q == '\'') {
            memcpy(buf + *bn, s + i + 1, close - i - 1);
            *bn += close - i - 1;
        } else if (decode_double(s, i + 1, close, buf, bn, lx) != 0) {
            return -1;
        }
        i = close + 1;
    }
    return 0;
}

/* Appends the token s[start..end) to lx. Returns 0, -1 when out of memory,
 * 1 at a bad escape (lx->end is then LEX_ESCAPE). */
static int push(const char *s, size_t start, size_t end, lexed *lx, size_t *cap)
{
    if ((size_t)lx->n + 1 >= *cap) {
        size_t grown = *cap * 2;
        token *tok = realloc(lx->tok, grown * sizeof *tok);
        if (tok)
            lx->tok = tok;
        bool *lead = realloc(lx->lead_quoted, grown * sizeof *lead);
        if (lead)
            lx->lead_quoted = lead;
        if (!tok || !lead)
            return -1;
        *cap = grown;
    }
    char *text = malloc(end - start + 1);
    size_t bn = 0;
    if (!text)
        return -1;
    if (decode_token(s, start, end, text, &bn, lx) != 0) {
        free(text);
        lx->end = LEX_ESCAPE;
        return 1;
    }
    text[bn] = '\0';
    lx->tok[lx->n] = (token){ .text = text, .start = start, .end = end };
    lx->lead_quoted[lx->n] = s[start] == '"' || s[start] == '\'';
    lx->tok[++lx->n] = (token){ 0 };
    return 0;
}

int lex_line(const char *s, lexed *lx)
{
    memset(lx, 0, sizeof *lx);
    size_t cap = 16, i = 0, last_end = 0;
    lx->tok = calloc(cap, sizeof *lx->tok);
    lx->lead_quoted = calloc(cap, sizeof *lx->lead_quoted);
    if (!lx->tok || !lx->lead_quoted)
        goto oom;
    for (;;) {
        while (is_space(s[i]))
            i++;
        if (!s[i] || s[i] == '#')
            break;
        size_t open, start = i;
        i = last_end = token_end(s, start, &open);
        if (lx->n < LEX_MAX_WORDS) {
            int rc = push(s, start, i, lx, &cap);
            if (rc < 0)
                goto oom;
            if (rc > 0)
                return 0;
        } else {
            lx->clipped = true;
        }
        if (open != SIZE_MAX) {
            lx->end = LEX_QUOTE;
            lx->at = open;
            return 0;
        }
    }
    /* s[last_end-1] of the last token is a raw character unless a quote closed it. */
    if (!s[i] && last_end > 0 && s[last_end - 1] == '\\') {
        lx->end = LEX_BACKSLASH;
        lx->at = last_end - 1;
    }
    return 0;
oom:
    lexed_free(lx);
    return -1;
}

size_t expr_text_end(const char *s, bool *open)
{
    char q = 0;
    size_t i = 0;
    for (; s[i]; i++) {
        if (q) {
            if (s[i] == '\\' && s[i + 1])
                i++;
            else if (s[i] == q)
                q = 0;
        } else if (s[i] == '\'' || s[i] == '"') {
            q = s[i];
        } else if (s[i] == '#') {
            break;
        }
    }
    *open = q != 0;
    return i;
}

enum lex_end lex_raw_end(const char *s, size_t from, size_t *at)
{
    bool open;
    size_t end = from + expr_text_end(s + from, &open), last = end;
    while (last > from && is_space(s[last - 1]))
        last--;
    if (open || s[end] || last == from || s[last - 1] != '\\')
        return LEX_DONE;
    *at = last - 1;
    return LEX_BACKSLASH;
}

void lexed_free(lexed *lx)
{
    if (lx->tok)
        for (int i = 0; i < lx->n; i++)
            free(lx->tok[i].text);
    free(lx->tok);
    free(lx->lead_quoted);
    memset(lx, 0, sizeof *lx);
}

/* The array always ends with a {NULL} token, so callers that got -1 (open
 * quote) can still walk the tokens, and tokens_free frees them all. */
int line_tokens(const char *line, token **out)
{
    lexed lx;
    *out = NULL;
    if (lex_line(line ? line : "", &lx) != 0)
        return -1;
    *out = lx.tok;
    free(lx.lead_quoted);
    return lx.end == LEX_QUOTE ? -1 : lx.n;
}

/* Frees up to the sentinel whatever n says: a caller that treats -1 as "no
 * tokens" and passes 0 must not leak the tokens it did not look at. */
void tokens_free(token *t, int n)
{
    (void)n;
    if (!t)
        return;
    for (int i = 0; t[i].text; i++)
        free(t[i].text);
    free(t);
}

size_t quote_token(const char *text, char *out, size_t len)
{
    size_t n = 0;
#define PUT(c) do { if (n + 1 < len) out[n] = (c); n++; } while (0)
    PUT('"');
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\') {
            PUT('\\');
            PUT((char)*c);
        } else if (*c < 0x20) {
            char hex[5];
            snprintf(hex, sizeof hex, "\\x%02X", *c);
            for (int i = 0; hex[i]; i++)
                PUT(hex[i]);
        } else {
            PUT((char)*c);
        }
    }
    PUT('"');
#undef PUT
    if (len)
        out[n < len ? n : len - 1] = '\0';
    return n;
}
