/* parse_lex.c — splits one line of a cell into tokens, the way a shell would.
 *
 * Tokens are separated by whitespace. Single quotes keep text as is; double
 * quotes understand \" \\ \n \t (and a backslash-newline vanishes); any other
 * backslash stays literal, so Windows-ish paths and regexes survive. A quoted
 * part may sit inside a token: --title="a b" is one token. An unquoted '#' at
 * the start of a token begins a comment that runs to the end of the line.
 *
 * The lexer also says how the line ends: whole, inside an open quote, or with
 * a continuation backslash. parse.c uses that to join physical lines, and
 * cell_completeness to answer "incomplete".
 */
#include <stdlib.h>
#include <string.h>

#include "magics/parse_internal.h"

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Copies a double-quoted part starting just after the quote. Returns the index
 * of the closing quote, or of the terminating NUL when the quote stays open. */
static size_t read_double(const char *s, size_t i, char *buf, size_t *bn)
{
    while (s[i] && s[i] != '"') {
        if (s[i] != '\\' || !s[i + 1]) {
            buf[(*bn)++] = s[i++];
            continue;
        }
        char c = s[i + 1];
        switch (c) {
        case '"': case '\\': buf[(*bn)++] = c; break;
        case 'n': buf[(*bn)++] = '\n'; break;
        case 't': buf[(*bn)++] = '\t'; break;
        case '\n': break;                       /* line continued inside the quote */
        default: buf[(*bn)++] = '\\'; buf[(*bn)++] = c; break;
        }
        i += 2;
    }
    return i;
}

static size_t read_single(const char *s, size_t i, char *buf, size_t *bn)
{
    while (s[i] && s[i] != '\'')
        buf[(*bn)++] = s[i++];
    return i;
}

static int push(lexed *lx, const char *buf, size_t bn, size_t start, size_t end, bool lead)
{
    char *text = malloc(bn + 1);
    if (!text)
        return -1;
    memcpy(text, buf, bn);
    text[bn] = '\0';
    lx->tok[lx->n] = (token){ .text = text, .start = start, .end = end };
    lx->lead_quoted[lx->n] = lead;
    lx->n++;
    return 0;
}

/* Reads one token at s[*i] (not a space, not a comment) into lx. */
static int read_token(const char *s, size_t *i, char *buf, lexed *lx)
{
    size_t start = *i, bn = 0, j = *i;
    bool lead = s[j] == '"' || s[j] == '\'';
    while (s[j] && !is_space(s[j])) {
        char q = s[j];
        if (q != '"' && q != '\'') {
            buf[bn++] = s[j++];
            continue;
        }
        size_t open = j;
        j = q == '"' ? read_double(s, j + 1, buf, &bn) : read_single(s, j + 1, buf, &bn);
        if (!s[j]) {
            lx->end = LEX_QUOTE;
            lx->at = open;
            break;
        }
        j++;                                    /* the closing quote */
    }
    *i = j;
    return push(lx, buf, bn, start, j, lead);
}

int lex_line(const char *s, lexed *lx)
{
    memset(lx, 0, sizeof *lx);
    size_t len = strlen(s);
    /* Every token but the last is followed by a space and takes >= 1 byte,
     * so len/2 + 1 tokens plus the sentinel always fit. */
    size_t cap = len / 2 + 2;
    char *buf = malloc(len + 1);
    lx->tok = calloc(cap, sizeof *lx->tok);
    lx->lead_quoted = calloc(cap, sizeof *lx->lead_quoted);
    if (!buf || !lx->tok || !lx->lead_quoted)
        goto oom;
    size_t i = 0;
    for (;;) {
        while (is_space(s[i]))
            i++;
        if (!s[i] || s[i] == '#')
            break;
        if (read_token(s, &i, buf, lx) != 0)
            goto oom;
        if (lx->end == LEX_QUOTE)
            break;
    }
    /* s[end-1] of the last token is a raw character unless a quote closed it. */
    if (lx->end == LEX_DONE && !s[i] && lx->n > 0 && s[lx->tok[lx->n - 1].end - 1] == '\\') {
        lx->end = LEX_BACKSLASH;
        lx->at = lx->tok[lx->n - 1].end - 1;
    }
    free(buf);
    return 0;
oom:
    free(buf);
    lexed_free(lx);
    return -1;
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
