/* cuda_lex.c — the lexer of cuda_lex.h: CUDA C++ source cut into tokens,
 * comments, literals (raw strings too), numbers, directives and spliced lines
 * told apart, for the __shared__ rewrite.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "student/cuda_lex.h"

static bool is_ident_start(char c) { return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

/* A backslash that splices the next line onto this one (\ newline, or \ CR LF). */
static size_t splice_len(const char *s, size_t i)
{
    if (s[i] != '\\')
        return 0;
    if (s[i + 1] == '\n')
        return 2;
    if (s[i + 1] == '\r' && s[i + 2] == '\n')
        return 3;
    return 0;
}

static void add_token(lexed *lx, tk_kind kind, size_t at, size_t end, int line)
{
    if (lx->failed)
        return;
    if (array_grow(&lx->tok, &lx->cap, lx->n + 1, sizeof *lx->tok) != 0) {
        lx->failed = true;
        return;
    }
    lx->tok[lx->n++] = (token){ kind, at, end, line };
}

static void add_break(lexed *lx, size_t at)
{
    if (lx->failed)
        return;
    if (array_grow(&lx->breaks, &lx->capb, lx->nbreaks + 1, sizeof *lx->breaks) != 0) {
        lx->failed = true;
        return;
    }
    lx->breaks[lx->nbreaks++] = at;
}

/* The end of a comment starting at i ("//" or "/ *"); a // comment stops
 * before its newline (which ends the line), a spliced one runs on. */
static size_t skip_comment(const char *s, size_t i)
{
    if (s[i + 1] == '*') {
        const char *e = strstr(s + i + 2, "*/");
        return e ? (size_t)(e - s) + 2 : strlen(s);
    }
    for (i += 2; s[i] && s[i] != '\n'; i++)
        if (splice_len(s, i))
            i += splice_len(s, i) - 1;
    return i;
}

/* The end of a "..." or '...' literal starting at i; an unterminated one ends at its line's end. */
static size_t skip_literal(const char *s, size_t i)
{
    char q = s[i];
    for (i++; s[i] && s[i] != '\n'; i++) {
        if (s[i] == '\\' && s[i + 1])
            i++;
        else if (s[i] == q)
            return i + 1;
    }
    return i;
}

/* The end of a raw string R"delim( ... )delim" whose quote is at i. */
static size_t skip_raw_string(const char *s, size_t i)
{
    size_t d = i + 1;
    while (s[d] && s[d] != '(' && d - i <= 17)
        d++;
    if (s[d] != '(')
        return skip_literal(s, i);
    char close[20];
    snprintf(close, sizeof close, ")%.*s\"", (int)(d - i - 1), s + i + 1);
    const char *e = strstr(s + d, close);
    return e ? (size_t)(e - s) + strlen(close) : strlen(s);
}

/* Whether the identifier [at, end) is a raw string's prefix (R, u8R, uR, UR, LR). */
static bool raw_prefix(const char *s, size_t at, size_t end)
{
    size_t n = end - at;
    return s[end] == '"' && s[end - 1] == 'R' &&
           (n == 1 || (n == 2 && strchr("uUL", s[at])) || (n == 3 && s[at] == 'u' && s[at + 1] == '8'));
}

/* The end of a preprocessor line starting at i ('#'), before its newline:
 * spliced lines and comments that run over lines belong to it. */
static size_t skip_directive(const char *s, size_t i)
{
    while (s[i] && s[i] != '\n') {
        if (splice_len(s, i))
            i += splice_len(s, i);
        else if (s[i] == '/' && (s[i + 1] == '*' || s[i + 1] == '/'))
            i = skip_comment(s, i);
        else if (s[i] == '"' || s[i] == '\'')
            i = skip_literal(s, i);
        else
            i++;
    }
    return i;
}

/* A pp-number: digits, letters, dots, digit separators, exponent signs. */
static size_t skip_number(const char *s, size_t i)
{
    for (i++;; i++) {
        if ((s[i] == '+' || s[i] == '-') && strchr("eEpP", s[i - 1]))
            continue;
        if (!(is_ident_char(s[i]) || s[i] == '.' || (s[i] == '\'' && is_ident_char(s[i + 1]))))
            return i;
    }
}

int cuda_count_lines(const char *s, size_t from, size_t to)
{
    int n = 0;
    for (size_t i = from; i < to; i++)
        n += s[i] == '\n';
    return n;
}

int cuda_lex(const char *s, int first_line, lexed *lx)
{
    size_t i = 0, counted = 0;
    int line = first_line;
    bool line_start = true;     /* only blanks (or comments) so far on this line: a '#' starts a directive */
    while (s[i]) {
        char c = s[i];
        if (c == '\n') {
            add_break(lx, i++);
            line_start = true;
            continue;
        }
        if (is_blank(c)) {
            i++;
            continue;
        }
        if (splice_len(s, i)) {
            i += splice_len(s, i);
            continue;
        }
        if (c == '/' && (s[i + 1] == '/' || s[i + 1] == '*')) {
            i = skip_comment(s, i);
            continue;
        }
        line += cuda_count_lines(s, counted, i);
        counted = i;
        size_t end;
        tk_kind kind;
        if (c == '#' && line_start) {
            end = skip_directive(s, i);
            kind = TK_DIRECTIVE;
        } else if (is_ident_start(c)) {
            for (end = i + 1; is_ident_char(s[end]); end++)
                ;
            kind = TK_IDENT;
            if (raw_prefix(s, i, end)) {
                end = skip_raw_string(s, end);
                kind = TK_STRING;
            }
        } else if (is_digit(c) || (c == '.' && is_digit(s[i + 1]))) {
            end = skip_number(s, i);
            kind = TK_NUMBER;
        } else if (c == '"' || c == '\'') {
            end = skip_literal(s, i);
            kind = TK_STRING;
        } else {
            end = i + (c == ':' && s[i + 1] == ':' ? 2 : 1);
            kind = TK_PUNCT;
        }
        add_token(lx, kind, i, end, line);
        line_start = false;
        i = end;
    }
    return lx->failed ? -1 : 0;
}
