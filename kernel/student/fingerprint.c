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
    int param_rank[NAMES_MAX];      /* its position among the parameters of its kind: pointers, the others */
    bool param_pointer[NAMES_MAX];
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
    int ranks[2] = {0, 0};          /* the next position of a scalar, of a pointer */
    bool pointer = false;           /* a '*' in the parameter so far */
    for (int depth = 0; i + 1 < lx->n; i++) {
        const token *t = &lx->tok[i];
        depth += tok_is(src, t, "(") - tok_is(src, t, ")");
        if (depth == 0)
            break;
        pointer = depth == 1 && (tok_is(src, t, ",") || tok_is(src, t, "(")) ? false : pointer || tok_is(src, t, "*");
        bool ends = tok_is(src, &lx->tok[i + 1], ",") || tok_is(src, &lx->tok[i + 1], ")");
        if (depth == 1 && t->kind == TK_IDENT && ends && nm->nparams < NAMES_MAX) {
            nm->param_pointer[nm->nparams] = pointer;
            nm->param_rank[nm->nparams] = ranks[pointer]++;
            nm->param[nm->nparams++] = tok_text(src, t);
        }
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

static bool is_punct(const char *src, const lexed *lx, size_t i, char c)
{
    return i < lx->n && lx->tok[i].kind == TK_PUNCT && lx->tok[i].end - lx->tok[i].at == 1 && src[lx->tok[i].at] == c;
}

static bool is_type_word(const char *src, const lexed *lx, size_t i)
{
    text_ref w = tok_text(src, &lx->tok[i]);
    return lx->tok[i].kind == TK_IDENT && word_in(type_words, w.at, w.len);
}

static bool is_member(const char *src, const lexed *lx, size_t i)
{
    return i > 0 && (is_punct(src, lx, i - 1, '.') || (i > 1 && is_punct(src, lx, i - 1, '>') && is_punct(src, lx, i - 2, '-')));
}

/* The normalised form of token i (see fingerprint.h). */
static norm normalise(const char *src, const lexed *lx, size_t i, const source_names *nm)
{
    const token *t = &lx->tok[i];
    text_ref w = tok_text(src, t);
    norm n = {.h = FNV_START, .cls = N_PLAIN};
    bool member = is_member(src, lx, i);
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
            n.h = fnv(fnv(n.h, nm->param_pointer[p] ? "#P*" : "#P", nm->param_pointer[p] ? 3 : 2), &nm->param_rank[p],
                      sizeof nm->param_rank[p]);
        } else if (name_index(nm->shared, nm->nshared, w) >= 0) {
            n.h = fnv(n.h, "#A", 2);
        } else {
            n.h = fnv(n.h, "#V", 2);
        }
        break;
    }
    return n;
}

/* ---- aliases of CUDA's builtins ----
 *
 * "int tx = threadIdx.x;" and then tx everywhere reads the same as threadIdx.x
 * written out: a copy that inlines the lecture kernel's aliases (or a kernel
 * that names the builtins the lecture writes out) would otherwise differ in
 * every statement that uses one. So a local declared with an initializer that
 * is only a builtin's member (threadIdx, blockIdx, blockDim, gridDim; .x, .y or
 * .z; a cast allowed) and that the source never changes (no assignment of any
 * kind, ++/--, or &name) reads as the builtin wherever it is used, and its
 * declarator goes ("int tx = threadIdx.x, i = 5;" leaves "int i = 5;"). Names
 * are not scoped here: a name declared anywhere else (another alias, a
 * parameter of a __device__ function, a field) is not an alias. At most
 * NAMES_MAX aliases, all checked in one pass: linear in the source. */

typedef struct alias {
    text_ref name;
    size_t decl;                    /* the token of its name in its declaration */
    size_t builtin;                 /* the token of threadIdx (or blockIdx, ...): it and the next two are what it reads as */
    size_t statement;               /* the first token of its declaration (its type) */
    bool valid;
} alias;

typedef struct aliases {
    alias at[NAMES_MAX];
    size_t n;
} aliases;

static const char *const builtin_vectors[] = {"threadIdx", "blockIdx", "blockDim", "gridDim", NULL};

/* The token of the builtin when tokens [i, ...) are "threadIdx.x" (or the like), optionally after a
 * cast "(int)" or inside "static_cast<int>(...)", followed by ',' or ';'; else 0. */
static size_t builtin_initializer(const char *src, const lexed *lx, size_t i)
{
    bool static_cast = i < lx->n && tok_is(src, &lx->tok[i], "static_cast");
    if (static_cast || is_punct(src, lx, i, '(')) {
        size_t j = i + 1 + static_cast;     /* past "static_cast<" or "(" */
        if (static_cast && !is_punct(src, lx, i + 1, '<'))
            return 0;
        size_t types = j;
        while (j < lx->n && j < types + SHARED_LOOK && is_type_word(src, lx, j))   /* a bounded look */
            j++;
        if (j == types || !is_punct(src, lx, j, static_cast ? '>' : ')'))
            return 0;
        i = j + 1 + static_cast;            /* past ")" or ">(" */
        if (static_cast && !is_punct(src, lx, j + 1, '('))
            return 0;
    }
    if (i + 3 >= lx->n || lx->tok[i].kind != TK_IDENT || !is_punct(src, lx, i + 1, '.'))
        return 0;
    text_ref v = tok_text(src, &lx->tok[i]), m = tok_text(src, &lx->tok[i + 2]);
    if (!word_in(builtin_vectors, v.at, v.len) || m.len != 1 || m.at[0] < 'x' || m.at[0] > 'z')
        return 0;
    size_t after = i + 3 + static_cast;
    if (static_cast && !is_punct(src, lx, i + 3, ')'))
        return 0;
    return is_punct(src, lx, after, ',') || is_punct(src, lx, after, ';') ? i : 0;
}

/* Whether token i (a use of a name) changes it or may: "=" after it (not "=="), "op=" or "<<=",
 * "++"/"--" on either side, or "&" before it as an operator of one operand. */
static bool changes(const char *src, const lexed *lx, size_t i)
{
    static const char ops[] = "+-*/%&|^";
    if (is_punct(src, lx, i + 1, '='))
        return !is_punct(src, lx, i + 2, '=');
    for (const char *op = ops; *op; op++)
        if ((is_punct(src, lx, i + 1, *op) && is_punct(src, lx, i + 2, '=')) ||
            ((*op == '+' || *op == '-') && is_punct(src, lx, i + 1, *op) && is_punct(src, lx, i + 2, *op)) ||
            ((*op == '+' || *op == '-') && i > 1 && is_punct(src, lx, i - 1, *op) && is_punct(src, lx, i - 2, *op)))
            return true;
    if ((is_punct(src, lx, i + 1, '<') || is_punct(src, lx, i + 1, '>')) && is_punct(src, lx, i + 3, '='))
        return true;                /* "<<=", ">>=" (and, conservatively, "< <=") */
    if (i > 0 && is_punct(src, lx, i - 1, '&')) {
        const token *before = i > 1 ? &lx->tok[i - 2] : NULL;
        bool operand = before && (before->kind == TK_IDENT || before->kind == TK_NUMBER ||
                                  is_punct(src, lx, i - 2, ')') || is_punct(src, lx, i - 2, ']'));
        return !operand;
    }
    return false;
}

/* Where a scan of the tokens is: the statement it is in, for whether a name is being declared. */
typedef struct decl_scan {
    size_t statement;               /* the first token of the statement */
    int depth;                      /* of ( and [ since it */
} decl_scan;

/* Steps the scan over token i; whether i is a name a declaration declares: it comes after a type
 * (a variable, a parameter, a field), or after a ',' outside parentheses in a statement that starts
 * with a type. */
static bool declares(const char *src, const lexed *lx, size_t i, decl_scan *sc)
{
    if (is_punct(src, lx, i, ';') || is_punct(src, lx, i, '{') || is_punct(src, lx, i, '}')) {
        *sc = (decl_scan){.statement = i + 1};
        return false;
    }
    sc->depth += (is_punct(src, lx, i, '(') || is_punct(src, lx, i, '[')) - (is_punct(src, lx, i, ')') || is_punct(src, lx, i, ']'));
    return lx->tok[i].kind == TK_IDENT && i > sc->statement &&
           (is_type_word(src, lx, i - 1) ||
            (sc->depth == 0 && is_punct(src, lx, i - 1, ',') && is_type_word(src, lx, sc->statement)));
}

static bool same_name(const char *src, const token *t, text_ref name)
{
    return t->kind == TK_IDENT && t->end - t->at == name.len && memcmp(src + t->at, name.at, name.len) == 0;
}

/* The source's aliases of builtins (above), each marked valid when it is one. */
static void find_aliases(const char *src, const lexed *lx, const source_names *nm, aliases *al)
{
    decl_scan sc = {0};
    for (size_t i = 0; i < lx->n; i++) {
        text_ref w = tok_text(src, &lx->tok[i]);
        if (!declares(src, lx, i, &sc) || sc.depth != 0 || !is_type_word(src, lx, sc.statement) ||
            !is_punct(src, lx, i + 1, '=') || is_punct(src, lx, i + 2, '=') ||
            word_in(kept_words, w.at, w.len) || name_index(nm->param, nm->nparams, w) >= 0 ||
            name_index(nm->shared, nm->nshared, w) >= 0)
            continue;
        size_t b = builtin_initializer(src, lx, i + 2);
        if (b == 0 || al->n == NAMES_MAX)
            continue;
        al->at[al->n++] = (alias){.name = w, .decl = i, .builtin = b, .statement = sc.statement, .valid = true};
    }
    sc = (decl_scan){0};
    for (size_t i = 0; i < lx->n && al->n > 0; i++) {
        bool declared = declares(src, lx, i, &sc);
        if (lx->tok[i].kind != TK_IDENT || is_member(src, lx, i))
            continue;
        for (size_t a = 0; a < al->n; a++)
            if (i != al->at[a].decl && same_name(src, &lx->tok[i], al->at[a].name))
                al->at[a].valid &= !declared && !changes(src, lx, i);
    }
}

static const alias *alias_of(const char *src, const lexed *lx, size_t i, const aliases *al)
{
    if (is_member(src, lx, i))
        return NULL;
    for (size_t a = 0; a < al->n; a++)
        if (al->at[a].valid && same_name(src, &lx->tok[i], al->at[a].name))
            return &al->at[a];
    return NULL;
}

/* Token i into order: an alias's use as its builtin's three tokens, another token as itself. */
static size_t read_token(const char *src, const lexed *lx, const aliases *al, size_t i, size_t *order)
{
    const alias *use = alias_of(src, lx, i, al);
    if (!use) {
        order[0] = i;
        return 1;
    }
    for (size_t b = 0; b < 3; b++)
        order[b] = use->builtin + b;
    return 3;
}

/* The declaration at tokens [i, ...), which declares an alias, into order: its type, then its
 * declarators that are not aliases, with their commas and its ';' — nothing when none is left.
 * The index of its ';' (or the end of the source) is put in *end. */
static size_t read_declaration(const char *src, const lexed *lx, const aliases *al, size_t i, size_t *end,
                               size_t *order)
{
    size_t n = 0, j = i, kept = 0;
    while (j < lx->n && is_type_word(src, lx, j))
        order[n++] = j++;
    for (int depth = 0; j < lx->n && !(depth == 0 && is_punct(src, lx, j, ';'));) {
        size_t from = j;
        for (; j < lx->n; j++) {
            depth += (is_punct(src, lx, j, '(') || is_punct(src, lx, j, '[') || is_punct(src, lx, j, '{')) -
                     (is_punct(src, lx, j, ')') || is_punct(src, lx, j, ']') || is_punct(src, lx, j, '}'));
            if (depth <= 0 && (is_punct(src, lx, j, ',') || is_punct(src, lx, j, ';')))
                break;
        }
        depth = depth < 0 ? 0 : depth;      /* a stray ')' */
        const alias *a = alias_of(src, lx, from, al);
        if (!(a && a->decl == from)) {      /* not the alias's own declarator */
            if (kept++ > 0)
                order[n++] = from - 1;      /* the ',' before it */
            for (size_t k = from; k < j; k++)
                if (lx->tok[k].kind != TK_DIRECTIVE)
                    n += read_token(src, lx, al, k, order + n);
        }
        if (j < lx->n && is_punct(src, lx, j, ','))
            j++;
    }
    *end = j;
    if (kept == 0)
        return 0;
    if (j < lx->n)
        order[n++] = j;
    return n;
}

/* The tokens of the source as the fingerprint reads them, into order (3 × lx->n entries at
 * most: an alias's use is its builtin's three tokens): directives left out, each alias's uses
 * as its builtin, its declarator gone with its comma, a declaration left with none gone. */
static size_t read_order(const char *src, const lexed *lx, const aliases *al, size_t *order)
{
    size_t n = 0, next_alias = 0;   /* aliases come in the order of their declarations */
    for (size_t i = 0; i < lx->n; i++) {
        if (lx->tok[i].kind == TK_DIRECTIVE)
            continue;
        while (next_alias < al->n && (!al->at[next_alias].valid || al->at[next_alias].statement < i))
            next_alias++;
        if (next_alias < al->n && al->at[next_alias].statement == i)
            n += read_declaration(src, lx, al, i, &i, order + n);
        else
            n += read_token(src, lx, al, i, order + n);
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
    size_t *order = NULL;
    int rc = -1;
    if (cuda_lex(source, 1, &lx) != 0)
        goto out;
    source_names names = {0};
    find_names(source, &lx, &names);
    aliases al = {0};
    find_aliases(source, &lx, &names, &al);
    size_t cap = 3 * lx.n + 1;      /* read_order's bound */
    order = malloc(cap * sizeof *order);
    tk = malloc(cap * sizeof *tk);
    if (!order || !tk)
        goto out;
    size_t n = read_order(source, &lx, &al, order);
    for (size_t i = 0; i < n; i++)
        tk[i] = normalise(source, &lx, order[i], &names);
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
    free(order);
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
