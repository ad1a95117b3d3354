/* shared_rewrite.c — __shared__ declarations rewritten for the CPU runner
 * (see shared_rewrite.h): over the tokens of cuda_lex.c (which knows where
 * the code is: not in comments, literals or directives), each declaration
 * read token by token, and the output put together from the source and the
 * edits by splice.c so that every line keeps its number. */
#include "student/shared_rewrite.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "student/cuda_lex.h"
#include "student/splice.h"

#define MAX_SHARED 64           /* ids 0..63: the runtime's table of declaration sites */
#define MAX_DIMS 4              /* what __cudalab_shared reads */
#define MAX_TYPE_TOKENS 256     /* a declaration's type, templates included */

/* ---- the rewriter ---- */

typedef struct rewriter {
    const char *src;
    lexed lx;
    splice_edit *edits;
    size_t nedits, capedits;
    int nshared;
    bool device_globals;
    strbuf file_places;           /* file scope: each declaration's placement, declared again after the source */
    strbuf file_binds;            /* and the calls that bind its slot */
    char *err;
    size_t err_len;
} rewriter;

static const char *const type_words[] = {
    "int", "float", "double", "char", "short", "long", "unsigned", "signed", "void", "bool", "const",
    "volatile", "auto", "struct", "union", "enum", "class", "typename", "static", "extern", "__shared__",
    "__device__", "__align__", "alignas", "__restrict__", NULL,
};

static size_t tok_len(const rewriter *rw, size_t i) { return rw->lx.tok[i].end - rw->lx.tok[i].at; }
static const char *tok_text(const rewriter *rw, size_t i) { return rw->src + rw->lx.tok[i].at; }

static bool is_word(const rewriter *rw, size_t i, const char *w)
{
    return i < rw->lx.n && rw->lx.tok[i].kind == TK_IDENT && tok_len(rw, i) == strlen(w) &&
           memcmp(tok_text(rw, i), w, tok_len(rw, i)) == 0;
}

static bool is_punct(const rewriter *rw, size_t i, const char *p)
{
    return i < rw->lx.n && rw->lx.tok[i].kind == TK_PUNCT && tok_len(rw, i) == strlen(p) &&
           memcmp(tok_text(rw, i), p, tok_len(rw, i)) == 0;
}

/* A token that ends a statement or a block: no declaration reads across one. */
static bool is_barrier(const rewriter *rw, size_t i)
{
    return i >= rw->lx.n || rw->lx.tok[i].kind == TK_DIRECTIVE || is_punct(rw, i, ";") || is_punct(rw, i, "{") ||
           is_punct(rw, i, "}");
}

/* A name a student may give a variable: an identifier that is not a type word. */
static bool is_name(const rewriter *rw, size_t i)
{
    if (i >= rw->lx.n || rw->lx.tok[i].kind != TK_IDENT)
        return false;
    for (const char *const *w = type_words; *w; w++)
        if (is_word(rw, i, *w))
            return false;
    return true;
}

/* The token that closes the bracket at i: for "(" and "[" the round and
 * square brackets inside count; for "<" (a template's arguments) the angles
 * only. 0 when the statement ends first. */
static size_t matching(const rewriter *rw, size_t i)
{
    bool angle = is_punct(rw, i, "<");
    int depth = 0;
    for (size_t j = i; !is_barrier(rw, j); j++) {
        if (angle ? is_punct(rw, j, "<") : is_punct(rw, j, "(") || is_punct(rw, j, "["))
            depth++;
        else if (angle ? is_punct(rw, j, ">") : is_punct(rw, j, ")") || is_punct(rw, j, "]"))
            depth--;
        if (depth == 0)
            return j;
    }
    return 0;
}

/* Appends tokens idx[0..n) as the source writes them, one space where the
 * source has any gap (whitespace, a comment, a dropped token), so that a
 * type or a size spread over lines reads on one. */
static void put_tokens(const rewriter *rw, const size_t *idx, size_t n, strbuf *b)
{
    for (size_t k = 0; k < n; k++) {
        if (k > 0 && (idx[k] != idx[k - 1] + 1 || rw->lx.tok[idx[k]].at != rw->lx.tok[idx[k - 1]].end))
            strbuf_puts(b, " ");
        strbuf_append(b, tok_text(rw, idx[k]), tok_len(rw, idx[k]));
    }
}

/* Tokens [from, to) the same way. */
static void put_range(const rewriter *rw, size_t from, size_t to, strbuf *b)
{
    for (size_t k = from; k < to; k++) {
        if (k > from && rw->lx.tok[k].at != rw->lx.tok[k - 1].end)
            strbuf_puts(b, " ");
        strbuf_append(b, tok_text(rw, k), tok_len(rw, k));
    }
}

static int fail(rewriter *rw, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(rewriter *rw, int line, const char *fmt, ...)
{
    if (rw->err && rw->err_len) {
        int n = snprintf(rw->err, rw->err_len, "line %d: ", line);
        if (n >= 0 && (size_t)n < rw->err_len) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(rw->err + n, rw->err_len - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

static int unreadable(rewriter *rw, int line)
{
    return fail(rw, line, "cannot read this __shared__ declaration (write it as __shared__ TYPE NAME[SIZE]...;)");
}

static int out_of_memory(rewriter *rw)
{
    if (rw->err && rw->err_len)
        snprintf(rw->err, rw->err_len, "out of memory");
    return -1;
}

/* ---- reading one declaration ---- */

typedef struct declarator {
    size_t ptr[8];              /* "*" and cv words between the type and the name */
    size_t nptr;
    size_t name;                /* token index */
    size_t dim[MAX_DIMS][2];    /* token ranges of the sizes, [from, to) */
    int ndims;
} declarator;

typedef struct shared_decl {
    size_t first, semi;         /* token indices: the first specifier, the ';' */
    size_t type[MAX_TYPE_TOKENS];
    size_t ntype;
    size_t align[2];            /* __align__(N) / alignas(N): N's token range; from == to: none */
    bool is_extern;
    declarator *d;              /* ndecl of them */
    size_t ndecl, capdecl;
} shared_decl;

/* Specifiers and type, from the statement's first token to the first
 * declarator's name (which ends up as the last of sd->type); the index of the
 * token after it. __shared__ must be among them; static, extern, __device__
 * and the alignment are taken out of the type. */
static size_t read_specifiers(rewriter *rw, size_t i, size_t shared_at, shared_decl *sd)
{
    for (;;) {
        if (is_word(rw, i, "__shared__") || is_word(rw, i, "static") || is_word(rw, i, "__device__")) {
            i++;
        } else if (is_word(rw, i, "extern")) {
            sd->is_extern = true;
            i++;
        } else if (is_word(rw, i, "__align__") || is_word(rw, i, "alignas")) {
            size_t close = is_punct(rw, i + 1, "(") ? matching(rw, i + 1) : 0;
            if (!close || close == i + 2)
                return 0;
            sd->align[0] = i + 2;
            sd->align[1] = close;
            i = close + 1;
        } else if (rw->lx.tok[i].kind == TK_IDENT || is_punct(rw, i, "::") || is_punct(rw, i, "*")) {
            size_t last = i;
            if (rw->lx.tok[i].kind == TK_IDENT && is_punct(rw, i + 1, "<") && !(last = matching(rw, i + 1)))
                return 0;
            for (; i <= last; i++) {
                if (sd->ntype == MAX_TYPE_TOKENS)
                    return 0;
                sd->type[sd->ntype++] = i;
            }
        } else {
            break;
        }
    }
    return i > shared_at ? i : 0;
}

static declarator *new_declarator(shared_decl *sd)
{
    if (array_grow(&sd->d, &sd->capdecl, sd->ndecl + 1, sizeof *sd->d) != 0)
        return NULL;
    declarator *d = &sd->d[sd->ndecl++];
    memset(d, 0, sizeof *d);
    return d;
}

/* The sizes after a declarator's name: [E]... ; the index after them, 0 when unreadable. */
static size_t read_dims(rewriter *rw, size_t i, declarator *d)
{
    while (is_punct(rw, i, "[")) {
        size_t close = matching(rw, i);
        if (!close || d->ndims == MAX_DIMS)
            return 0;
        d->dim[d->ndims][0] = i + 1;
        d->dim[d->ndims][1] = close;
        d->ndims++;
        i = close + 1;
    }
    return i;
}

/* Moves the first declarator's pointer part and name from the end of the type into d. */
static int split_first(rewriter *rw, shared_decl *sd, size_t shared_at, declarator *d)
{
    if (sd->ntype < 2 || !is_name(rw, sd->type[sd->ntype - 1]) || sd->type[sd->ntype - 1] < shared_at)
        return -1;             /* no type, no name, or __shared__ after the name */
    d->name = sd->type[--sd->ntype];
    size_t star = sd->ntype;
    int angle = 0;
    for (size_t k = 0; k < sd->ntype; k++) {
        size_t t = sd->type[k];
        angle += is_punct(rw, t, "<") - is_punct(rw, t, ">");
        if (angle == 0 && is_punct(rw, t, "*")) {
            star = k;
            break;
        }
    }
    if (star == 0 || sd->ntype - star > sizeof d->ptr / sizeof d->ptr[0])
        return -1;
    for (size_t k = star; k < sd->ntype; k++) {
        size_t t = sd->type[k];
        if (!is_punct(rw, t, "*") && !is_word(rw, t, "const") && !is_word(rw, t, "volatile") &&
            !is_word(rw, t, "__restrict__"))
            return -1;
        d->ptr[d->nptr++] = t;
    }
    sd->ntype = star;
    return 0;
}

/* A later declarator after ',': pointer part, name, sizes; the index after it or 0. */
static size_t read_declarator(rewriter *rw, size_t i, declarator *d)
{
    while (is_punct(rw, i, "*") || is_word(rw, i, "const") || is_word(rw, i, "volatile") ||
           is_word(rw, i, "__restrict__")) {
        if (d->nptr == sizeof d->ptr / sizeof d->ptr[0])
            return 0;
        d->ptr[d->nptr++] = i++;
    }
    if (!is_name(rw, i))
        return 0;
    d->name = i;
    return read_dims(rw, i + 1, d);
}

/* The whole declaration from the statement's first token: 0, or -1 (unreadable). */
static int read_declaration(rewriter *rw, size_t first, size_t shared_at, shared_decl *sd)
{
    sd->first = first;
    size_t i = read_specifiers(rw, first, shared_at, sd);
    declarator *d = i ? new_declarator(sd) : NULL;
    if (!d || split_first(rw, sd, shared_at, d) != 0 || !(i = read_dims(rw, i, d)))
        return -1;
    while (is_punct(rw, i, ",")) {
        if (!(d = new_declarator(sd)) || !(i = read_declarator(rw, i + 1, d)))
            return -1;
    }
    if (!is_punct(rw, i, ";"))
        return -1;             /* an initializer, a function's parameters, no ';' */
    sd->semi = i;
    for (size_t k = 0; k < sd->ndecl; k++) {
        bool unsized = false;
        for (int j = 0; j < sd->d[k].ndims; j++)
            unsized |= sd->d[k].dim[j][0] == sd->d[k].dim[j][1];
        /* extern: exactly NAME[] (its size is the launch's); otherwise every size given */
        if (sd->is_extern ? sd->ndecl != 1 || sd->d[k].ndims != 1 || !unsized : unsized)
            return -1;
    }
    return 0;
}

/* ---- writing one declaration ---- */

/* A declarator's element type: the declaration's type and its own pointer part. */
static void put_elem(const rewriter *rw, const shared_decl *sd, const declarator *d, strbuf *b)
{
    put_tokens(rw, sd->type, sd->ntype, b);
    if (d->nptr) {
        strbuf_puts(b, " ");
        put_tokens(rw, d->ptr, d->nptr, b);
    }
}

static void put_align(const rewriter *rw, const shared_decl *sd, const char *elem, strbuf *b)
{
    if (sd->align[0] < sd->align[1])
        put_range(rw, sd->align[0], sd->align[1], b);
    else
        strbuf_printf(b, "alignof(%s)", elem);
}

/* "[E1][E2]" into dims, ", (unsigned)(E1), (unsigned)(E2)" into args. */
static void put_dims(const rewriter *rw, const declarator *d, strbuf *dims, strbuf *args)
{
    for (int j = 0; j < d->ndims; j++) {
        strbuf e = STRBUF_INIT;
        put_range(rw, d->dim[j][0], d->dim[j][1], &e);
        strbuf_printf(dims, "[%s]", e.data ? e.data : "");
        strbuf_printf(args, ", (unsigned)(%s)", e.data ? e.data : "");
        dims->failed |= e.failed;
        strbuf_free(&e);
    }
}

/* The call that places one static declarator, at cell line `line` (0: __LINE__, the call's own):
 * "NAME"_cudalab_shared(ID, sizeof, ALIGN, LINE, NDIMS, ...). The prelude's literal operator names
 * the runtime: an identifier of ours here would be open to the student's #defines. */
static void put_call(const rewriter *rw, const shared_decl *sd, const declarator *d, int id, const char *elem,
                     const char *args, int line, strbuf *b)
{
    strbuf_printf(b, "\"%.*s\"_cudalab_shared(%d, sizeof(%s), ", (int)tok_len(rw, d->name), tok_text(rw, d->name), id,
              elem);
    put_align(rw, sd, elem, b);
    if (line > 0)
        strbuf_printf(b, ", %d, %d%s)", line, d->ndims, args);
    else
        strbuf_printf(b, ", __LINE__, %d%s)", d->ndims, args);
}

/* One declarator at function scope: a reference to the runtime's placement. */
static void put_local(const rewriter *rw, const shared_decl *sd, const declarator *d, int id, const char *elem,
                      const char *dims, const char *args, strbuf *b)
{
    const char *name = tok_text(rw, d->name);
    int len = (int)tok_len(rw, d->name);
    if (d->ndims)
        strbuf_printf(b, "%s (&%.*s)%s = *(%s (*)%s)", elem, len, name, dims, elem, dims);
    else
        strbuf_printf(b, "%s &%.*s = *(%s *)", elem, len, name, elem);
    put_call(rw, sd, d, id, elem, args, 0, b);
    strbuf_puts(b, ";");
}

/* The lines after a file-scope declaration's line that make NAME its slot:
 *     #undef __cudalab_shared_place_ID / __cudalab_shared_slot_ID
 *     extern "C" void *__cudalab_shared_place_ID() { return PLACEMENT; }
 *     extern "C" ELEM (&__cudalab_shared_slot_ID)DIMS;
 *     #define NAME __cudalab_shared_slot_ID
 * NAME stays one identifier, so a parameter or local called NAME declares its
 * own (as NVRTC reads it); the slot is a reference the entry binds to the
 * block's placement (__cudalab_place_file_shared, written after the source).
 * C linkage: the slot is the runtime's symbol, and the placement is found
 * from outside a namespace the declaration may be in. */
static void put_slot(rewriter *rw, const declarator *d, int id, const char *elem, const char *dims,
                     const char *placement, strbuf *after)
{
    strbuf_printf(after, "#undef __cudalab_shared_place_%d\n#undef __cudalab_shared_slot_%d\n", id, id);
    strbuf_printf(after, "extern \"C\" void *__cudalab_shared_place_%d() { return %s; }\n", id, placement);
    if (dims)
        strbuf_printf(after, "extern \"C\" %s (&__cudalab_shared_slot_%d)%s;\n", elem, id, dims);
    else
        strbuf_printf(after, "extern \"C\" %s &__cudalab_shared_slot_%d;\n", elem, id);
    strbuf_printf(after, "#define %.*s __cudalab_shared_slot_%d\n", (int)tok_len(rw, d->name), tok_text(rw, d->name), id);
    strbuf_printf(&rw->file_places, "#undef __cudalab_shared_place_%d\nextern \"C\" void *__cudalab_shared_place_%d();\n",
              id, id);
    strbuf_printf(&rw->file_binds, " __cudalab_shared_bind(%d, __cudalab_shared_place_%d());", id, id);
}

/* One declarator at file scope: its slot (the declaration itself leaves nothing on its line). */
static void put_global(rewriter *rw, const shared_decl *sd, const declarator *d, int id, const char *elem,
                       const char *dims, const char *args, strbuf *after)
{
    strbuf call = { 0 };
    put_call(rw, sd, d, id, elem, args, rw->lx.tok[d->name].line, &call);
    put_slot(rw, d, id, elem, d->ndims ? dims : NULL, call.data ? call.data : "", after);
    after->failed |= call.failed;
    strbuf_free(&call);
}

/* extern __shared__ TYPE NAME[]: the launch's dynamic shared memory (at file
 * scope through a slot, which takes an id). */
static void put_dynamic(rewriter *rw, const shared_decl *sd, bool file_scope, strbuf *b, strbuf *after)
{
    const declarator *d = &sd->d[0];
    strbuf elem = { 0 };
    put_elem(rw, sd, d, &elem);
    const char *e = elem.data ? elem.data : "";
    const char *name = tok_text(rw, d->name);
    int len = (int)tok_len(rw, d->name);
    strbuf call = { 0 };
    strbuf_printf(&call, "\"%.*s\"_cudalab_dyn_shared(sizeof(%s), ", len, name, e);
    put_align(rw, sd, e, &call);
    if (file_scope)
        strbuf_printf(&call, ", %d)", rw->lx.tok[d->name].line);
    else
        strbuf_puts(&call, ", __LINE__)");
    if (file_scope)
        put_slot(rw, d, rw->nshared++, e, "[]", call.data ? call.data : "", after);
    else
        strbuf_printf(b, "%s *const %.*s = (%s *)%s;", e, len, name, e, call.data ? call.data : "");
    b->failed |= elem.failed || call.failed;
    strbuf_free(&elem);
    strbuf_free(&call);
}

static int add_edit(rewriter *rw, size_t at, size_t end, strbuf *text, strbuf *after)
{
    bool failed = text->failed || after->failed;
    splice_edit e = { at, end, strbuf_take(text), after->len ? strbuf_take(after) : NULL };
    strbuf_free(after);
    if (!failed && e.text)
        failed = array_grow(&rw->edits, &rw->capedits, rw->nedits + 1, sizeof *rw->edits) != 0;
    if (failed || !e.text) {
        free(e.text);
        free(e.after);
        return -1;
    }
    rw->edits[rw->nedits++] = e;
    return 0;
}

/* The declaration whose __shared__ is token shared_at, its statement starting
 * at token first: read, ids given, its edit noted. The index of its ';', or
 * 0 with rw->err set. */
static size_t rewrite_declaration(rewriter *rw, size_t first, size_t shared_at, bool file_scope, int *status)
{
    shared_decl *sd = calloc(1, sizeof *sd);
    if (!sd) {
        *status = out_of_memory(rw);
        return 0;
    }
    int line = rw->lx.tok[shared_at].line;
    size_t semi = 0;
    *status = 0;
    if (read_declaration(rw, first, shared_at, sd) != 0) {
        *status = unreadable(rw, line);
    } else if ((!sd->is_extern || file_scope) && rw->nshared + (int)sd->ndecl > MAX_SHARED) {
        *status = fail(rw, line, "more than %d __shared__ declarations (the CPU runner places at most %d "
                       "arrays per kernel source)", MAX_SHARED, MAX_SHARED);
    } else {
        strbuf text = { 0 }, after = { 0 };
        if (sd->is_extern)
            put_dynamic(rw, sd, file_scope, &text, &after);
        for (size_t k = 0; !sd->is_extern && k < sd->ndecl; k++) {
            strbuf elem = { 0 }, dims = { 0 }, args = { 0 };
            put_elem(rw, sd, &sd->d[k], &elem);
            put_dims(rw, &sd->d[k], &dims, &args);
            const char *e = elem.data ? elem.data : "", *ds = dims.data ? dims.data : "", *as = args.data ? args.data : "";
            if (file_scope) {
                put_global(rw, sd, &sd->d[k], rw->nshared++, e, ds, as, &after);
            } else {
                if (k > 0)
                    strbuf_puts(&text, " ");
                put_local(rw, sd, &sd->d[k], rw->nshared++, e, ds, as, &text);
            }
            text.failed |= elem.failed || dims.failed || args.failed;
            strbuf_free(&elem);
            strbuf_free(&dims);
            strbuf_free(&args);
        }
        if (add_edit(rw, rw->lx.tok[first].at, rw->lx.tok[sd->semi].end, &text, &after) != 0)
            *status = out_of_memory(rw);
        else
            semi = sd->semi;
    }
    free(sd->d);
    free(sd);
    return semi;
}

/* ---- file scope ---- */

/* Whether the file-scope statement starting at token i defines a __device__
 * variable: __device__ among its words before a ';', '=' or '[' comes, and
 * no '(' or '{' before that (a function). Attributes' parentheses and a
 * template's <...> do not count. */
static bool defines_device_variable(const rewriter *rw, size_t i)
{
    static const char *const wrapped[] = { "__align__", "alignas", "__attribute__", "__launch_bounds__",
                                           "__declspec", NULL };
    bool device = false, shared = false;
    for (; i < rw->lx.n; i++) {
        if (rw->lx.tok[i].kind == TK_DIRECTIVE)
            continue;
        device |= is_word(rw, i, "__device__");
        shared |= is_word(rw, i, "__shared__");
        bool skip = false;
        for (const char *const *w = wrapped; *w; w++)
            skip |= is_word(rw, i, *w);
        size_t close = 0;
        if (skip && is_punct(rw, i + 1, "("))
            close = matching(rw, i + 1);
        else if (is_word(rw, i, "template") && is_punct(rw, i + 1, "<"))
            close = matching(rw, i + 1);
        if (close) {
            i = close;
            continue;
        }
        if (is_punct(rw, i, ";") || is_punct(rw, i, "=") || is_punct(rw, i, "["))
            return device && !shared;
        if (is_punct(rw, i, "(") || is_punct(rw, i, "{") || is_punct(rw, i, "}"))
            return false;
    }
    return false;
}

/* Whether the '{' at token i, in the statement starting at first, opens a
 * namespace or an extern "C" block (whose inside is still file scope). */
static bool opens_namespace(const rewriter *rw, size_t first, size_t i)
{
    if (is_word(rw, first, "namespace") || (is_word(rw, first, "inline") && is_word(rw, first + 1, "namespace")))
        return true;
    return is_word(rw, first, "extern") && first + 2 == i && rw->lx.tok[first + 1].kind == TK_STRING;
}

/* Walks the tokens: statements and braces followed, each __shared__
 * declaration rewritten. 0, or -1 with rw->err set. */
static int walk(rewriter *rw)
{
    size_t first = 0;           /* the current statement's first token */
    size_t code_depth = 0;      /* braces open that are not namespaces' (a function's, a struct's, ...) */
    size_t depth = 0;
    uint64_t ns_bits = 0;       /* which of the first 64 open braces are namespaces' */
    for (size_t i = 0; i < rw->lx.n; i++) {
        const token *t = &rw->lx.tok[i];
        if (t->kind == TK_DIRECTIVE) {
            first = i + 1;
            continue;
        }
        if (i == first && code_depth == 0 && !rw->device_globals)
            rw->device_globals = defines_device_variable(rw, i);
        if (is_punct(rw, i, ";")) {
            first = i + 1;
        } else if (is_punct(rw, i, "{")) {
            bool ns = depth < 64 && opens_namespace(rw, first, i);   /* deeper: code */
            if (ns)
                ns_bits |= (uint64_t)1 << depth;
            else if (depth < 64)
                ns_bits &= ~((uint64_t)1 << depth);
            code_depth += !ns;
            depth++;
            first = i + 1;
        } else if (is_punct(rw, i, "}")) {
            if (depth > 0) {
                depth--;
                bool ns = depth < 64 && (ns_bits >> depth & 1);
                code_depth -= !ns && code_depth > 0;
            }
            first = i + 1;
        } else if (is_word(rw, i, "__shared__")) {
            int status;
            size_t semi = rewrite_declaration(rw, first, i, code_depth == 0, &status);
            if (status != 0)
                return -1;
            i = semi;
            first = semi + 1;
        }
    }
    return 0;
}

/* ---- the output ---- */

/* After the source, when it has file-scope __shared__ declarations: the
 * overload of the prelude's __cudalab_place_file_shared that the entry calls
 * before the kernel, binding every slot to the running block's placement.
 * Its names are #undef-ed first: the student's #defines end with the source. */
static char *with_file_places(rewriter *rw, char *text)
{
    if (!text || rw->file_binds.len == 0)
        return text;
    bool failed = rw->file_places.failed || rw->file_binds.failed;
    strbuf b = { 0 };
    size_t n = strlen(text);
    strbuf_printf(&b, "%s%s#undef __cudalab_place_file_shared\n#undef __cudalab_shared_bind\n%s", text,
              n && text[n - 1] == '\n' ? "" : "\n", rw->file_places.data ? rw->file_places.data : "");
    strbuf_printf(&b, "static inline void __cudalab_place_file_shared(int) {%s }\n", rw->file_binds.data);
    free(text);
    char *out = strbuf_take(&b);
    if (failed) {
        free(out);
        return NULL;
    }
    return out;
}

int shared_rewrite_source(const char *src, int first_line, const char *file, shared_rewrite *out, char *err,
                          size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (err && err_len)
        err[0] = '\0';
    rewriter rw = { .src = src, .err = err, .err_len = err_len };
    int rc = cuda_lex(src, first_line, &rw.lx) != 0 ? out_of_memory(&rw) : walk(&rw);
    char *text = rc == 0 ? splice_edits(src, &rw.lx, rw.edits, rw.nedits, first_line, file ? file : "") : NULL;
    if (rc == 0 && !(out->text = with_file_places(&rw, text)))
        rc = out_of_memory(&rw);
    if (rc == 0) {
        out->nshared = rw.nshared;
        out->device_globals = rw.device_globals;
    }
    for (size_t k = 0; k < rw.nedits; k++) {
        free(rw.edits[k].text);
        free(rw.edits[k].after);
    }
    free(rw.edits);
    strbuf_free(&rw.file_places);
    strbuf_free(&rw.file_binds);
    free(rw.lx.tok);
    free(rw.lx.breaks);
    return rc;
}

void shared_rewrite_free(shared_rewrite *r)
{
    if (!r)
        return;
    free(r->text);
    r->text = NULL;
}
