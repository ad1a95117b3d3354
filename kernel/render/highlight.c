/* highlight.c — CUDA C (and plain C) source as syntax-highlighted HTML, for
 * the "code" block of a view (--show-source): comments, strings and
 * characters, numbers, preprocessor lines, C/C++ keywords, types, and what
 * CUDA adds (__global__, __shared__, __syncthreads, threadIdx, ...).
 *
 * A small lexer, not a parser: it only has to colour code we wrote, and must
 * never lose or reorder a byte. Every byte of the source comes out, escaped;
 * the colours are inline styles (a notebook has none of our CSS) chosen to
 * read on light and dark themes alike.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memtext.h"
#include "render/render.h"

enum tok_class { TOK_PLAIN, TOK_COMMENT, TOK_STRING, TOK_NUMBER, TOK_PREPROC, TOK_KEYWORD, TOK_TYPE, TOK_CUDA };

static const struct { const char *name, *style; } tok_styles[] = {
    [TOK_PLAIN] = {NULL, NULL},
    [TOK_COMMENT] = {"cl-com", "color:#6a8759;font-style:italic"},
    [TOK_STRING] = {"cl-str", "color:#c2410c"},
    [TOK_NUMBER] = {"cl-num", "color:#0e7c86"},
    [TOK_PREPROC] = {"cl-pp", "color:#9a6700"},
    [TOK_KEYWORD] = {"cl-kw", "color:#a626a4;font-weight:bold"},
    [TOK_TYPE] = {"cl-ty", "color:#2f6fbf"},
    [TOK_CUDA] = {"cl-cuda", "color:#d1242f;font-weight:bold"},
};

static const char *const keywords[] = {
    "break", "case", "class", "const", "constexpr", "continue", "default", "do", "else", "enum",
    "extern", "false", "for", "goto", "if", "inline", "namespace", "nullptr", "operator", "return",
    "sizeof", "static", "static_assert", "static_cast", "reinterpret_cast", "struct", "switch",
    "template", "true", "typedef", "typename", "union", "using", "volatile", "while", NULL,
};

static const char *const types[] = {
    "auto", "bool", "char", "dim3", "double", "float", "float2", "float4", "int", "int2", "int4",
    "int8_t", "int16_t", "int32_t", "int64_t", "long", "short", "signed", "size_t", "uint2",
    "uint3", "uint4", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "unsigned", "void",
    "cudaError_t", "cudaStream_t", "cublasStatus_t", NULL,
};

/* CUDA's qualifiers, built-in variables and the intrinsics a lecture shows. */
static const char *const cuda_words[] = {
    "__global__", "__device__", "__host__", "__shared__", "__constant__", "__managed__",
    "__restrict__", "__forceinline__", "__noinline__", "__launch_bounds__", "__align__",
    "__syncthreads", "__syncwarp", "__threadfence", "__shfl_down_sync", "__shfl_sync",
    "__shfl_xor_sync", "__ldg", "atomicAdd", "atomicMax", "atomicMin", "atomicCAS", "threadIdx",
    "blockIdx", "blockDim", "gridDim", "warpSize", NULL,
};

static int in_list(const char *const *list, const char *s, size_t n)
{
    for (; *list; list++)
        if (strlen(*list) == n && memcmp(*list, s, n) == 0)
            return 1;
    return 0;
}

static enum tok_class word_class(const char *s, size_t n)
{
    if (in_list(cuda_words, s, n))
        return TOK_CUDA;
    if (in_list(keywords, s, n))
        return TOK_KEYWORD;
    if (in_list(types, s, n))
        return TOK_TYPE;
    return TOK_PLAIN;
}

static void put_escaped(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(s[i], f);
        }
    }
}

static void put_token(FILE *f, enum tok_class c, const char *s, size_t n)
{
    if (c == TOK_PLAIN) {
        put_escaped(f, s, n);
        return;
    }
    fprintf(f, "<span class=\"%s\" style=\"%s\">", tok_styles[c].name, tok_styles[c].style);
    put_escaped(f, s, n);
    fputs("</span>", f);
}

static int ident_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_';
}

/* The length of the token at s and its class. Comments, strings and
 * preprocessor lines end at the end of the source when not closed. */
static size_t next_token(const char *s, int line_start, enum tok_class *c)
{
    size_t n = 0;
    if (s[0] == '/' && s[1] == '/') {
        *c = TOK_COMMENT;
        return strcspn(s, "\n");
    }
    if (s[0] == '/' && s[1] == '*') {
        const char *end = strstr(s + 2, "*/");
        *c = TOK_COMMENT;
        return end ? (size_t)(end + 2 - s) : strlen(s);
    }
    if (s[0] == '"' || s[0] == '\'') {
        *c = TOK_STRING;
        for (n = 1; s[n] && s[n] != s[0] && s[n] != '\n'; n++)
            if (s[n] == '\\' && s[n + 1])
                n++;
        return s[n] == s[0] ? n + 1 : n;
    }
    if (s[0] == '#' && line_start) {
        /* the directive's line, up to a comment on it (coloured as one) */
        *c = TOK_PREPROC;
        while (s[n] && s[n] != '\n' && !(s[n] == '/' && (s[n + 1] == '/' || s[n + 1] == '*')))
            n++;
        return n;
    }
    if (isdigit((unsigned char)s[0]) || (s[0] == '.' && isdigit((unsigned char)s[1]))) {
        /* 42, 0x1F, 1.5e-3f, 16u, 1ull: digits, letters and dots, and a sign after an exponent */
        *c = TOK_NUMBER;
        for (n = 1; ident_char(s[n]) || s[n] == '.' ||
                    ((s[n] == '+' || s[n] == '-') && (s[n - 1] == 'e' || s[n - 1] == 'E') &&
                     !(s[0] == '0' && (s[1] == 'x' || s[1] == 'X')));
             n++)
            ;
        return n;
    }
    if (ident_char(s[0])) {
        while (ident_char(s[n]))
            n++;
        *c = word_class(s, n);
        return n;
    }
    *c = TOK_PLAIN;
    return 1;
}

void highlight_code(FILE *f, const char *src)
{
    int line_start = 1;             /* only blanks since the last newline */
    while (*src) {
        enum tok_class c;
        size_t n = next_token(src, line_start, &c);
        put_token(f, c, src, n);
        for (size_t i = 0; i < n; i++)
            line_start = src[i] == '\n' ? 1 : line_start && (src[i] == ' ' || src[i] == '\t');
        src += n;
    }
}

char *highlight_html(const char *src)
{
    memtext m;
    FILE *f = memtext_open(&m);
    if (!f)
        return NULL;
    highlight_code(f, src ? src : "");
    return memtext_close(&m);
}
