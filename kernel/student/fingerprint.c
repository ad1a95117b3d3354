/* fingerprint.c — a kernel's source as normalised statements and winnowed
 * k-grams, and the similarity of two (fingerprint.h).
 */
#include "student/fingerprint.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "student/cuda_lex.h"

/* Words that keep their spelling: what a kernel does is in them (the rest is names). */
static const char *const kept_words[] = {
    /* C and C++ */
    "auto", "bool", "break", "case", "char", "const", "constexpr", "continue", "default", "do", "double",
    "else", "enum", "extern", "false", "float", "for", "goto", "if", "inline", "int", "long", "nullptr",
    "reinterpret_cast", "return", "short", "signed", "sizeof", "static", "static_cast", "struct", "switch",
    "template", "true", "typedef", "typename", "unsigned", "void", "volatile", "while",
    "size_t", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
    /* CUDA */
    "__global__", "__device__", "__shared__", "__constant__", "__restrict__", "__forceinline__",
    "__noinline__", "__align__", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize",
    "__syncthreads", "__syncwarp", "__threadfence", "__ldg", "atomicAdd", "atomicSub", "atomicMax",
    "atomicMin", "atomicCAS", "atomicExch", "atomicInc", "atomicOr", "atomicAnd",
    "__shfl_sync", "__shfl_down_sync", "__shfl_up_sync", "__shfl_xor_sync", "__ballot_sync",
    "__activemask", "float2", "float4", "int2", "int4", "make_float2", "make_float4",
    "min", "max", "fminf", "fmaxf", "fmaf", "sqrtf", "expf", "fabsf",
    NULL,
};
static const char *const type_words[] = {
    "auto", "bool", "char", "const", "double", "float", "int", "long", "short", "signed", "unsigned",
    "volatile", "size_t", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t",
    "uint64_t", "float2", "float4", "int2", "int4", "static", "constexpr", "__shared__", NULL,
};
static const char *const header_words[] = {"for", "if", "while", "switch", NULL}; /* "(...)" then a body */

#define NAMES_MAX 64                /* parameters, __shared__ arrays: more are other names */
#define SHARED_LOOK 16              /* tokens after __shared__ where its array's name may be */

enum norm_class { N_PLAIN, N_NAME, N_TYPE, N_HEADER, N_ELSE };

/* One normalised token: its hash, what it is for the cut into statements, and its
 * character when it is a one-character punctuator (';', '{', ...), else 0. */
typedef struct norm {
    uint64_t h;
    enum norm_class cls;
    char punct;
} norm;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}
#define FNV_START 1469598103934665603ULL

static bool word_in(const char *const *words, const char *s, size_t n)
{
    for (size_t i = 0; words[i]; i++)
        if (strlen(words[i]) == n && memcmp(words[i], s, n) == 0)
            return true;
    return false;
}

typedef struct text_ref {
    const char *at;
    size_t len;
} text_ref;

typedef struct source_names {
    text_ref param[NAMES_MAX];
    size_t nparams;
    text_ref shared[NAMES_MAX];
    size_t nshared;
} source_names;

static text_ref tok_text(const char *src, const token *t)
{
    return (text_ref){src + t->at, t->end - t->at};
}

static bool tok_is(const char *src, const token *t, const char *s)
{
    return t->end - t->at == strlen(s) && memcmp(src + t->at, s, t->end - t->at) == 0;
}

/* The first __global__ function's parameters, by position, and every __shared__ array's name. */
static void find_names(const char *src, const lexed *lx, source_names *nm)
{
    size_t i = 0;
    while (i < lx->n && !tok_is(src, &lx->tok[i], "__global__"))
        i++;
    while (i < lx->n && !tok_is(src, &lx->tok[i], "("))
        i++;
    for (int depth = 0; i + 1 < lx->n; i++) {
        const token *t = &lx->tok[i];
        depth += tok_is(src, t, "(") - tok_is(src, t, ")");
        if (depth == 0)
            break;
        bool ends = tok_is(src, &lx->tok[i + 1], ",") || tok_is(src, &lx->tok[i + 1], ")");
        if (depth == 1 && t->kind == TK_IDENT && ends && nm->nparams < NAMES_MAX)
            nm->param[nm->nparams++] = tok_text(src, t);
    }
    for (i = 0; i < lx->n; i++) {
        if (!tok_is(src, &lx->tok[i], "__shared__"))
            continue;
        /* the name comes within a few tokens ("extern __shared__ __align__(16) float s[]"): a
         * bounded look, so that a source of nothing but __shared__ stays linear */
        for (size_t j = i + 1; j < lx->n && j <= i + SHARED_LOOK && !tok_is(src, &lx->tok[j], ";"); j++) {
            text_ref w = tok_text(src, &lx->tok[j]);
            if (lx->tok[j].kind == TK_IDENT && !word_in(kept_words, w.at, w.len)) {
                if (nm->nshared < NAMES_MAX)
                    nm->shared[nm->nshared++] = w;
                break;
            }
        }
    }
}

static int name_index(const text_ref *names, size_t n, text_ref w)
{
    for (size_t i = 0; i < n; i++)
        if (names[i].len == w.len && memcmp(names[i].at, w.at, w.len) == 0)
            return (int)i;
    return -1;
}

/* The normalised form of token i (see fingerprint.h). */
static norm normalise(const char *src, const lexed *lx, size_t i, const source_names *nm)
{
    const token *t = &lx->tok[i];
    text_ref w = tok_text(src, t);
    norm n = {.h = FNV_START, .cls = N_PLAIN};
    bool member = i > 0 && (tok_is(src, &lx->tok[i - 1], ".") ||
                            (i > 1 && tok_is(src, &lx->tok[i - 1], ">") && tok_is(src, &lx->tok[i - 2], "-")));
    switch (t->kind) {
    case TK_NUMBER:
        n.h = fnv(n.h, "#N", 2);
        break;
    case TK_STRING:
        n.h = fnv(n.h, "#S", 2);
        break;
    case TK_PUNCT:
        n.h = fnv(n.h, w.at, w.len);
        n.punct = w.len == 1 ? w.at[0] : 0;
        break;
    case TK_DIRECTIVE:
        break;                      /* not reached: directives are dropped */
    case TK_IDENT:
        if (member || word_in(kept_words, w.at, w.len)) {
            n.h = fnv(n.h, w.at, w.len);
            n.cls = word_in(header_words, w.at, w.len) ? N_HEADER
                    : word_in(type_words, w.at, w.len) ? N_TYPE
                    : (w.len == 4 && memcmp(w.at, "else", 4) == 0) || (w.len == 2 && memcmp(w.at, "do", 2) == 0)
                        ? N_ELSE : N_PLAIN;
            break;
        }
        n.cls = N_NAME;
        int p = name_index(nm->param, nm->nparams, w);
        if (p >= 0) {
            n.h = fnv(fnv(n.h, "#P", 2), &p, sizeof p);
        } else if (name_index(nm->shared, nm->nshared, w) >= 0) {
            n.h = fnv(n.h, "#A", 2);
        } else {
            n.h = fnv(n.h, "#V", 2);
        }
        break;
    }
    return n;
}

/* ---- growing arrays of hashes ---- */

typedef struct hashes {
    uint64_t *v;
    size_t n, cap;
    bool failed;
} hashes;

static void push(hashes *a, uint64_t h)
{
    if (a->failed)
        return;
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        uint64_t *v = realloc(a->v, cap * sizeof *v);
        if (!v) {
            a->failed = true;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = h;
}

/* ---- statements ---- */

typedef struct builder {
    hashes statements, grams;
    hashes stmt;                    /* the statement being built, its tokens' hashes */
} builder;

/* MOSS's winnowing of the statement's k-grams: the least hash of each window of
 * FINGERPRINT_WINDOW consecutive k-grams (a statement shorter than a k-gram is one). */
static void winnow(builder *b, const uint64_t *h, size_t n)
{
    if (n < FINGERPRINT_K) {
        push(&b->grams, fnv(FNV_START, h, n * sizeof *h));
        return;
    }
    size_t ngrams = n - FINGERPRINT_K + 1;
    size_t window = ngrams < FINGERPRINT_WINDOW ? ngrams : FINGERPRINT_WINDOW;
    size_t last = SIZE_MAX;
    for (size_t start = 0; start + window <= ngrams; start++) {
        size_t best = start;
        uint64_t best_h = UINT64_MAX;
        for (size_t g = start; g < start + window; g++) {
            uint64_t gh = fnv(FNV_START, h + g, FINGERPRINT_K * sizeof *h);
            if (gh <= best_h) {
                best_h = gh;
                best = g;
            }
        }
        if (best != last)
            push(&b->grams, best_h);
        last = best;
    }
}

static void emit(builder *b, const uint64_t *h, size_t n)
{
    if (n == 0)
        return;
    push(&b->statements, fnv(FNV_START, h, n * sizeof *h));
    winnow(b, h, n);
}

/* One variable of a declaration of several: the type's hashes h[0, type_end), then h[from, to). */
static void emit_declarator(builder *b, const uint64_t *h, size_t type_end, size_t from, size_t to)
{
    hashes one = {0};
    for (size_t j = 0; j < type_end; j++)
        push(&one, h[j]);
    for (size_t j = from; j < to; j++)
        push(&one, h[j]);
    b->statements.failed |= one.failed;
    emit(b, one.v, one.n);
    free(one.v);
}

/* A statement of n tokens, tk[from, ...) with hashes h: a compound assignment
 * at its top level ("s += e") as what it stands for ("s = s + e"). */
static void emit_assignment(builder *b, const norm *tk, size_t from, const uint64_t *h, size_t n)
{
    static const char ops[] = "+-*/%&|^";
    int depth = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        char c = tk[from + i].punct;
        depth += (c == '(' || c == '[') - (c == ')' || c == ']');
        bool compound = depth == 0 && i > 0 && c && strchr(ops, c) && tk[from + i + 1].punct == '=' &&
                        !strchr(ops, tk[from + i - 1].punct ? tk[from + i - 1].punct : '=') &&
                        !(i + 2 < n && tk[from + i + 2].punct == '=');
        if (!compound)
            continue;
        hashes one = {0};
        for (size_t j = 0; j < i; j++)          /* s = */
            push(&one, h[j]);
        push(&one, h[i + 1]);
        for (size_t j = 0; j <= i; j++)         /* s + */
            push(&one, h[j]);
        for (size_t j = i + 2; j < n; j++)      /* e */
            push(&one, h[j]);
        b->statements.failed |= one.failed;
        emit(b, one.v, one.n);
        free(one.v);
        return;
    }
    emit(b, h, n);
}

/* Ends the statement being built, whose tokens are tk[from, ...): a
 * declaration of several variables ("int a = 1, b = 2") as one statement per
 * variable, each with the type. */
static void end_statement(builder *b, const norm *tk, size_t from)
{
    size_t n = b->stmt.n, type_end = 0, start;
    const uint64_t *h = b->stmt.v;
    while (type_end < n && tk[from + type_end].cls == N_TYPE)
        type_end++;
    bool several = false;
    int depth = 0;
    for (size_t i = start = type_end; type_end > 0 && i < n; i++) {
        char c = tk[from + i].punct;
        depth += (c == '(' || c == '[' || c == '{') - (c == ')' || c == ']' || c == '}');
        if (depth == 0 && c == ',') {
            emit_declarator(b, h, type_end, start, i);
            start = i + 1;
            several = true;
        }
    }
    if (several)
        emit_declarator(b, h, type_end, start, n);
    else
        emit_assignment(b, tk, from, h, n);
    b->stmt.n = 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Cuts the normalised tokens into statements (fingerprint.h). */
static void cut(builder *b, const norm *tk, size_t n)
{
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        char c = tk[i].punct;
        if (c == ';' || c == '{' || c == '}') {
            end_statement(b, tk, from);
            from = i + 1;
            continue;
        }
        if (b->stmt.n == 0)
            from = i;
        push(&b->stmt, tk[i].h);
        if (tk[i].cls == N_ELSE && !(i + 1 < n && tk[i + 1].cls == N_HEADER)) {
            end_statement(b, tk, from);
            from = i + 1;
        } else if (tk[i].cls == N_HEADER && i + 1 < n && tk[i + 1].punct == '(') {
            int depth = 0;
            size_t j = i + 1;
            for (; j < n; j++) {
                push(&b->stmt, tk[j].h);
                depth += (tk[j].punct == '(') - (tk[j].punct == ')');
                if (depth == 0)
                    break;
            }
            end_statement(b, tk, from);
            i = j;
            from = j + 1;
        }
    }
    end_statement(b, tk, from);
}

void fingerprint_free(fingerprint *fp)
{
    free(fp->statements);
    free(fp->grams);
    *fp = (fingerprint){0};
}

int fingerprint_make(const char *source, fingerprint *fp)
{
    *fp = (fingerprint){0};
    lexed lx = {0};
    builder b = {0};
    norm *tk = NULL;
    int rc = -1;
    if (cuda_lex(source, 1, &lx) != 0)
        goto out;
    source_names names = {0};
    find_names(source, &lx, &names);
    tk = malloc((lx.n ? lx.n : 1) * sizeof *tk);
    if (!tk)
        goto out;
    size_t n = 0;
    for (size_t i = 0; i < lx.n; i++)
        if (lx.tok[i].kind != TK_DIRECTIVE)
            tk[n++] = normalise(source, &lx, i, &names);
    cut(&b, tk, n);
    if (b.statements.failed || b.grams.failed || b.stmt.failed)
        goto out;
    qsort(b.statements.v, b.statements.n, sizeof *b.statements.v, cmp_u64);
    qsort(b.grams.v, b.grams.n, sizeof *b.grams.v, cmp_u64);
    size_t distinct = 0;
    for (size_t i = 0; i < b.grams.n; i++)
        if (distinct == 0 || b.grams.v[distinct - 1] != b.grams.v[i])
            b.grams.v[distinct++] = b.grams.v[i];
    fp->statements = b.statements.v;
    fp->nstatements = b.statements.n;
    fp->grams = b.grams.v;
    fp->ngrams = distinct;
    b.statements.v = b.grams.v = NULL;
    rc = 0;
out:
    free(b.statements.v);
    free(b.grams.v);
    free(b.stmt.v);
    free(tk);
    free(lx.tok);
    free(lx.breaks);
    return rc;
}

static bool has(const uint64_t *v, size_t n, uint64_t h)
{
    return bsearch(&h, v, n, sizeof *v, cmp_u64) != NULL;
}

/* Keeps the hashes of v[0, n) that the sorted array base lacks; the new count. */
static size_t keep_missing(uint64_t *v, size_t n, const uint64_t *base, size_t nbase)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (!has(base, nbase, v[i]))
            v[kept++] = v[i];
    return kept;
}

void fingerprint_remove(fingerprint *fp, const fingerprint *base)
{
    fp->nstatements = keep_missing(fp->statements, fp->nstatements, base->statements, base->nstatements);
    fp->ngrams = keep_missing(fp->grams, fp->ngrams, base->grams, base->ngrams);
}

/* 2·|a ∩ b| / (|a| + |b|) of two sorted arrays (as multisets). */
static double dice(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
    if (na == 0 || nb == 0)
        return 0;
    size_t i = 0, j = 0, common = 0;
    while (i < na && j < nb) {
        if (a[i] == b[j]) {
            common++;
            i++;
            j++;
        } else if (a[i] < b[j]) {
            i++;
        } else {
            j++;
        }
    }
    return 2.0 * (double)common / (double)(na + nb);
}

double fingerprint_similarity(const fingerprint *a, const fingerprint *b)
{
    return (dice(a->statements, a->nstatements, b->statements, b->nstatements) +
            dice(a->grams, a->ngrams, b->grams, b->ngrams)) / 2;
}
