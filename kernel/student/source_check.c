/* source_check.c — a cell's directives checked before any compiler sees it (see source_check.h).
 *
 * The scan follows translation phases 1 to 3 closely enough that every line a
 * compiler takes for a directive is one it examines: newlines are \n, \r\n and
 * a lone \r (g++ counts a lone \r, NVRTC does not: taking it is the safe side);
 * backslash-newlines are joined first; comments are skipped, a block comment
 * across lines included (it keeps a directive going); string and character
 * literals and pp-numbers (1'000) are skipped whole. Where the compilers differ
 * or a literal does not end, the cell is refused rather than guessed at. Every
 * directive is checked, in #if 0 blocks too.
 */
#include "student/source_check.h"
#include "student/source_check_internal.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one list of headers a cell may include. NVRTC finds each in the CUDA
 * toolkit's include directory (compile.c gives it -I); the C library's headers
 * (math.h, stdint.h, stdio.h) are not among them because NVRTC has none, and a
 * kernel needs none: the math functions, printf and the integer types are
 * built in. */
const source_header source_headers[] = {
    { "cuda_runtime.h", true, NULL },
    { "cuda_runtime_api.h", true, NULL },
    { "device_launch_parameters.h", true, NULL },
    { "device_functions.h", true, NULL },
    { "vector_types.h", true, NULL },
    { "cuda_fp16.h", false, "half precision (__half)" },
    { "cuda_bf16.h", false, "bfloat16 (__nv_bfloat16)" },
    { "math_constants.h", false, "the CUDART_ constants" },
    { "mma.h", false, "tensor core fragments (wmma)" },
    { "cooperative_groups.h", false, "cooperative groups" },
    { "cooperative_groups/reduce.h", false, "cooperative groups" },
    { "cuda_pipeline.h", false, "asynchronous copies (cp.async)" },
};
const size_t source_header_count = sizeof source_headers / sizeof source_headers[0];

/* Pragma words that name a file or an include rule: GCC dependency reads a
 * file's date, include_alias renames headers (EDG), pch_preprocess loads one. */
static const char *const file_pragmas[] = { "dependency", "include_alias", "pch_preprocess" };

/* Identifiers that ask the compiler about host files. */
static const char *const file_queries[] = { "__has_include", "__has_include_next", "__has_embed" };

const source_header *source_header_find(const char *name)
{
    for (size_t i = 0; i < source_header_count; i++)
        if (strcmp(source_headers[i].name, name) == 0)
            return &source_headers[i];
    return NULL;
}

const char *source_allowed_headers(void)
{
    static char list[1024];
    if (!list[0]) {
        size_t used = 0;
        for (size_t i = 0; i < source_header_count && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s<%s>", i ? ", " : "",
                                     source_headers[i].name);
    }
    return list;
}

/* ---- phases 1 and 2: one logical text, each byte with its cell line ---- */

typedef struct spliced {
    char *s;                        /* newlines as \n, backslash-newlines gone */
    int *line;                      /* the cell line of each byte */
    size_t n;
} spliced;

int source_refuse(source_refusal *r, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    r->line = line;
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
    return -1;
}

/* The length of the newline at p (\n, \r\n or \r), or 0. */
static size_t newline_at(const char *p)
{
    return p[0] == '\n' ? 1 : p[0] == '\r' ? (p[1] == '\n' ? 2 : 1) : 0;
}

static int splice(const char *text, int first_line, spliced *out, source_refusal *r)
{
    size_t len = strlen(text);
    out->s = malloc(len + 1);
    out->line = malloc((len + 1) * sizeof *out->line);
    out->n = 0;
    if (!out->s || !out->line)
        return source_refuse(r, first_line, "out of memory checking the cell");
    int line = first_line;
    for (const char *p = text; *p;) {
        size_t nl;
        if (*p == '\\') {
            const char *q = p + 1;
            while (*q == ' ' || *q == '\t' || *q == '\f' || *q == '\v')
                q++;
            if ((nl = newline_at(q))) {
                /* g++ joins a backslash and spaces before a newline, NVRTC does not: the
                 * next line would be a directive for one compiler and not the other */
                if (q != p + 1)
                    return source_refuse(r, line, "a backslash followed by spaces ends the line: remove the spaces "
                                         "(compilers disagree whether it continues the line)");
                p = q + nl;
                line++;
                continue;
            }
        }
        if ((nl = newline_at(p))) {
            out->line[out->n] = line++;
            out->s[out->n++] = '\n';
            p += nl;
            continue;
        }
        out->line[out->n] = line;
        out->s[out->n++] = *p++;
    }
    out->line[out->n] = line;
    out->s[out->n] = '\0';
    return 0;
}

/* ---- phase 3: tokens, enough of them ---- */

typedef struct scanner {
    const spliced *t;
    size_t i;
    source_refusal *r;
} scanner;

static char at(const scanner *sc, size_t k)
{
    return sc->i + k < sc->t->n ? sc->t->s[sc->i + k] : '\0';
}

static int line_here(const scanner *sc)
{
    return sc->t->line[sc->i < sc->t->n ? sc->i : sc->t->n];
}

bool source_ident_start(char c)
{
    return isalpha((unsigned char)c) || c == '_' || c == '$' || (unsigned char)c >= 0x80;
}

bool source_ident_char(char c)
{
    return source_ident_start(c) || isdigit((unsigned char)c);
}

/* Skips spaces and comments; newlines too when across_lines (a block comment
 * always crosses them: it is one space). 0, or -1 on a comment that never ends. */
static int skip_blank(scanner *sc, bool across_lines)
{
    for (;;) {
        char c = at(sc, 0);
        if (c == ' ' || c == '\t' || c == '\f' || c == '\v' || (c == '\n' && across_lines)) {
            sc->i++;
        } else if (c == '/' && at(sc, 1) == '/') {
            while (at(sc, 0) && at(sc, 0) != '\n')
                sc->i++;
        } else if (c == '/' && at(sc, 1) == '*') {
            int line = line_here(sc);
            const char *end = strstr(sc->t->s + sc->i + 2, "*/");
            if (!end)
                return source_refuse(sc->r, line, "a /* comment that never ends");
            sc->i = (size_t)(end - sc->t->s) + 2;
        } else {
            return 0;
        }
    }
}

/* The identifier at the cursor into buf (clipped), the cursor after it. */
static void read_ident(scanner *sc, char *buf, size_t len)
{
    size_t start = sc->i, n = 0;
    while (source_ident_char(at(sc, 0)))
        sc->i++;
    n = sc->i - start < len - 1 ? sc->i - start : len - 1;
    memcpy(buf, sc->t->s + start, n);
    buf[n] = '\0';
}

/* A string or character literal from its opening quote; the cursor after it.
 * *body and *blen: its contents. -1 when it does not close on its line: the
 * compilers then disagree about the rest of the line. */
static int read_literal(scanner *sc, const char **body, size_t *blen)
{
    char quote = at(sc, 0);
    int line = line_here(sc);
    sc->i++;
    size_t start = sc->i;
    for (;;) {
        char c = at(sc, 0);
        if (c == '\0' || c == '\n')
            return source_refuse(sc->r, line, "a %s that is not closed on its line", quote == '"' ? "\"" : "'");
        if (c == '\\' && at(sc, 1) && at(sc, 1) != '\n') {
            sc->i += 2;
            continue;
        }
        sc->i++;
        if (c == quote)
            break;
    }
    if (body)
        *body = sc->t->s + start, *blen = sc->i - start - 1;
    return 0;
}

/* A pp-number: digits, identifier characters, '.', e+ p- and 1'000's separators. */
static void read_number(scanner *sc)
{
    sc->i++;
    for (;;) {
        char c = at(sc, 0);
        if ((c == 'e' || c == 'E' || c == 'p' || c == 'P') && (at(sc, 1) == '+' || at(sc, 1) == '-'))
            sc->i += 2;
        else if (c == '\'' && source_ident_char(at(sc, 1)))
            sc->i += 2;
        else if (source_ident_char(c) || c == '.')
            sc->i++;
        else
            return;
    }
}

static bool one_of(const char *word, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(word, list[i]) == 0)
            return true;
    return false;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Does the text [p, p+n) hold one of the file pragmas as a word? */
static const char *file_pragma_in(const char *p, size_t n)
{
    for (size_t k = 0; k < COUNT(file_pragmas); k++) {
        size_t wl = strlen(file_pragmas[k]);
        for (size_t i = 0; i + wl <= n; i++)
            if (memcmp(p + i, file_pragmas[k], wl) == 0 && (i == 0 || !source_ident_char(p[i - 1])) &&
                (i + wl == n || !source_ident_char(p[i + wl])))
                return file_pragmas[k];
    }
    return NULL;
}

/* _Pragma, the cursor after it: only as _Pragma("…") with a literal, and no file pragma in it. */
static int check_pragma_operator(scanner *sc, int line)
{
    const char *body = NULL;
    size_t blen = 0;
    if (skip_blank(sc, true) != 0)
        return -1;
    bool shaped = at(sc, 0) == '(';
    if (shaped) {
        sc->i++;
        if (skip_blank(sc, true) != 0)
            return -1;
        while (at(sc, 0) == 'L' || at(sc, 0) == 'u' || at(sc, 0) == 'U' || at(sc, 0) == '8')
            sc->i++;
        shaped = at(sc, 0) == '"' && read_literal(sc, &body, &blen) == 0 && skip_blank(sc, true) == 0 &&
                 at(sc, 0) == ')';
    }
    if (!shaped)
        return source_refuse(sc->r, line, "_Pragma is accepted with a string literal only, as in _Pragma(\"unroll\")");
    const char *word = file_pragma_in(body, blen);
    if (word)
        return source_refuse(sc->r, line, "_Pragma(\"… %s …\") reaches for a file of the host: not in a kernel", word);
    return 0;
}

/* The code tokens from the cursor to the end of the line (to the end of the
 * text when across_lines): identifiers that reach files refused. */
static int check_tokens(scanner *sc, bool across_lines, bool in_pragma);

/* #include: exactly <name> with name allowed. The cursor is after "include". */
static int check_include(scanner *sc, int line)
{
    if (skip_blank(sc, false) != 0)
        return -1;
    char open = at(sc, 0), close = open == '<' ? '>' : '"';
    if (open != '<' && open != '"')
        return source_refuse(sc->r, line, "#include takes a header name, <name>, not a macro; the headers a kernel may "
                             "include: %s", source_allowed_headers());
    size_t start = ++sc->i;
    while (at(sc, 0) && at(sc, 0) != '\n' && at(sc, 0) != close)
        sc->i++;
    if (at(sc, 0) != close)
        return source_refuse(sc->r, line, "#include %c… has no closing %c", open, close);
    size_t n = sc->i - start;
    char name[200];
    snprintf(name, sizeof name, "%.*s%s", (int)(n < 120 ? n : 120), sc->t->s + start, n > 120 ? "…" : "");
    sc->i++;
    if (skip_blank(sc, false) != 0)
        return -1;
    if (at(sc, 0) && at(sc, 0) != '\n')
        return source_refuse(sc->r, line, "#include %c%s%c has more after the header name", open, name, close);
    const source_header *h = n < 120 ? source_header_find(name) : NULL;
    if (!h)
        return source_refuse(sc->r, line, "#include %c%s%c: a kernel may include only %s (nothing else is read)", open,
                             name, close, source_allowed_headers());
    if (open == '"')
        return source_refuse(sc->r, line, "#include \"%s\": write #include <%s> (a quoted name is looked for in the "
                             "notebook's folder first)", name, name);
    return 0;
}

/* #line N, without a file name: a name would point diagnostics (and the
 * compiler's quoting of source lines) at another file. */
static int check_line(scanner *sc, int line)
{
    if (skip_blank(sc, false) != 0)
        return -1;
    bool number = isdigit((unsigned char)at(sc, 0));
    while (isdigit((unsigned char)at(sc, 0)))
        sc->i++;
    if (!number || skip_blank(sc, false) != 0 || (at(sc, 0) && at(sc, 0) != '\n'))
        return source_refuse(sc->r, line, "#line is accepted with a line number only (no file name, no macro)");
    return 0;
}

/* A directive; the cursor on its #, %: or ??=. */
static int check_directive(scanner *sc)
{
    int line = line_here(sc);
    sc->i += at(sc, 0) == '#' ? 1 : at(sc, 0) == '%' ? 2 : 3;
    if (skip_blank(sc, false) != 0)
        return -1;
    char c = at(sc, 0);
    if (c == '\n' || c == '\0')
        return 0;                   /* the null directive */
    if (isdigit((unsigned char)c))
        return source_refuse(sc->r, line, "a line marker (# %c…) is not accepted: it renames the file diagnostics "
                             "point to", c);
    if (!source_ident_start(c))
        return source_refuse(sc->r, line, "'#' followed by '%c' is not a directive", c);
    char name[64];
    read_ident(sc, name, sizeof name);
    if (strcmp(name, "include") == 0)
        return check_include(sc, line);
    if (strcmp(name, "line") == 0)
        return check_line(sc, line);
    if (strcmp(name, "error") == 0 || strcmp(name, "warning") == 0) {
        while (at(sc, 0) && at(sc, 0) != '\n')     /* free text: an apostrophe in it is no literal */
            sc->i++;
        return 0;
    }
    static const char *const plain[] = { "define", "undef", "if", "ifdef", "ifndef", "elif", "elifdef",
                                         "elifndef", "else", "endif" };
    if (one_of(name, plain, COUNT(plain)))
        return check_tokens(sc, false, false);
    if (strcmp(name, "pragma") == 0)
        return check_tokens(sc, false, true);
    static const char *const reaching[] = { "include_next", "import", "embed" };
    if (one_of(name, reaching, COUNT(reaching)))
        return source_refuse(sc->r, line, "#%s reads a file of the host: a kernel may include only %s, with #include",
                             name, source_allowed_headers());
    return source_refuse(sc->r, line, "#%s is not a directive a kernel may use", name);
}

static int check_tokens(scanner *sc, bool across_lines, bool in_pragma)
{
    bool line_start = across_lines;
    for (;;) {
        if (skip_blank(sc, false) != 0)
            return -1;
        char c = at(sc, 0);
        if (c == '\0' || (c == '\n' && !across_lines))
            return 0;
        if (c == '\n') {
            sc->i++;
            line_start = true;
            continue;
        }
        int line = line_here(sc);
        if (line_start && (c == '#' || (c == '%' && at(sc, 1) == ':') ||
                           (c == '?' && at(sc, 1) == '?' && at(sc, 2) == '='))) {
            if (check_directive(sc) != 0)
                return -1;
            continue;               /* the cursor is at the directive's end of line */
        }
        line_start = false;
        if (source_ident_start(c)) {
            char word[64];
            read_ident(sc, word, sizeof word);
            bool prefix = strcmp(word, "L") == 0 || strcmp(word, "u") == 0 || strcmp(word, "U") == 0 ||
                          strcmp(word, "u8") == 0;
            bool raw_prefix = strcmp(word, "R") == 0 || strcmp(word, "LR") == 0 || strcmp(word, "uR") == 0 ||
                              strcmp(word, "UR") == 0 || strcmp(word, "u8R") == 0;
            if (raw_prefix && at(sc, 0) == '"')
                return source_refuse(sc->r, line, "raw string literals (R\"(…)\") are not accepted in a kernel");
            if (prefix && (at(sc, 0) == '"' || at(sc, 0) == '\'')) {
                if (read_literal(sc, NULL, NULL) != 0)
                    return -1;
            } else if (one_of(word, file_queries, COUNT(file_queries))) {
                return source_refuse(sc->r, line, "%s asks the compiler about files of the host: not in a kernel",
                                     word);
            } else if (strcmp(word, "_Pragma") == 0) {
                if (check_pragma_operator(sc, line) != 0)
                    return -1;
            } else if (in_pragma && one_of(word, file_pragmas, COUNT(file_pragmas))) {
                return source_refuse(sc->r, line, "#pragma … %s reaches for a file of the host: not in a kernel", word);
            }
        } else if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)at(sc, 1)))) {
            read_number(sc);
        } else if (c == '"' || c == '\'') {
            if (read_literal(sc, NULL, NULL) != 0)
                return -1;
        } else {
            sc->i++;
        }
    }
}

int source_check_cell(const char *text, int first_line, source_refusal *r)
{
    memset(r, 0, sizeof *r);
    spliced t = { 0 };
    int rc = splice(text ? text : "", first_line, &t, r);
    if (rc == 0) {
        scanner sc = { &t, 0, r };
        rc = check_tokens(&sc, true, false);
    }
    free(t.s);
    free(t.line);
    return rc;
}
