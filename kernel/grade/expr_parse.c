/* expr_parse.c — %assert/%score expressions into a syntax tree (expr.h), over the tokens of expr_lex.c.
 *
 *   or      := and (('or' | '||') and)*
 *   and     := not (('and' | '&&') not)*
 *   not     := ('not' | '!') not | cmp
 *   cmp     := sum (('==' | '!=' | '<' | '<=' | '>' | '>=') sum)?
 *   sum     := term (('+' | '-') term)*
 *   term    := unary (('*' | '/' | '%') unary)*
 *   unary   := '-' unary | postfix
 *   postfix := primary ('.' NAME | '[' or ']')*
 *   primary := NUMBER | STRING | true | false | null | '(' or ')'
 *            | NAME '(' [or (',' or)*] ')'             a function
 *            | NAME ['[' KEY '=' VALUE (',' KEY '=' VALUE)* ']']   a result, a selector
 *
 * A selector's VALUE is a number, a quoted string, true/false/null, or a bare
 * word such as tiled, cublas-tf32 or 2^20 (read like a flag's value).
 *
 * The (...)* repetitions of or, and, sum and term build one node with a list
 * of operands, not a left-deep tree, so that evaluating, explaining and
 * freeing recurse only as deep as the nesting. Nesting is bounded by
 * EXPR_MAX_DEPTH, the tree's size by EXPR_MAX_TERMS and the source by
 * EXPR_MAX_BYTES, each refused here, before anything runs.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "base/utf8.h"
#include "grade/expr_internal.h"
#include "grade/expr_lex.h"
#include "lang/lex.h"
#include "magic/magic.h"

/* One more term; fails past EXPR_MAX_TERMS. */
static bool count_term(parser *p, size_t at)
{
    if (++p->terms <= EXPR_MAX_TERMS)
        return true;
    expr_fail(p, at, "the expression is too long: more than %d terms (values, names, calls, operations and "
              "selector keys; the limit is %d): split the check into several", EXPR_MAX_TERMS, EXPR_MAX_TERMS);
    return false;
}

/* One more level of nesting; fails past EXPR_MAX_DEPTH. leave() undoes it. */
static bool enter(parser *p)
{
    if (p->depth < EXPR_MAX_DEPTH) {
        p->depth++;
        return true;
    }
    expr_fail(p, p->ts, "the expression is nested too deeply: more than %d levels (each parenthesis, call, "
              "[index], .field, unary '-' and 'not' is one; the limit is %d)", EXPR_MAX_DEPTH, EXPR_MAX_DEPTH);
    return false;
}

static void leave(parser *p)
{
    p->depth--;
}

static node *node_new(parser *p, enum node_kind kind, size_t start)
{
    if (p->failed || !count_term(p, start))
        return NULL;
    node *n = calloc(1, sizeof *n);
    if (!n)
        expr_fail(p, start, "out of memory");
    else {
        n->kind = kind;
        n->start = start;
        n->end = p->te;
    }
    return n;
}

/* Room for item count of an array grown by doubling: its capacity is the
 * next power of two, so it grows when count is 0 or a power of two. */
static bool room(void **items, int count, size_t size)
{
    if (count & (count - 1))
        return true;
    void *grown = realloc(*items, (count ? 2 * (size_t)count : 1) * size);
    if (grown)
        *items = grown;
    return grown != NULL;
}

static void node_free(node *n)
{
    if (!n)
        return;
    node_free(n->a);
    node_free(n->b);
    for (int i = 0; i < n->nargs; i++)
        node_free(n->args[i]);
    free(n->args);
    free(n->ops);
    for (int i = 0; i < n->nsel; i++) {
        free(n->keys[i]);
        json_decref(n->vals[i]);
    }
    free(n->keys);
    free(n->vals);
    json_decref(n->lit);
    free(n->name);
    val_clear(&n->v);
    free(n);
}

static const char *token_text(const parser *p, char *buf, size_t len)
{
    if (p->t == T_END)
        return "the end of the expression";
    snprintf(buf, len, "'%.*s'", utf8_clip(p->s + p->ts, p->te - p->ts < 40 ? p->te - p->ts : 40),
             p->s + p->ts);
    return buf;
}

static bool expect(parser *p, enum tk t, const char *what)
{
    if (p->t == t) {
        expr_lex_next(p);
        return true;
    }
    char buf[64];
    expr_fail(p, p->ts, "expected %s, found %s", what, token_text(p, buf, sizeof buf));
    return false;
}

static node *parse_or(parser *p);

/* The value of a selector's key, at p->s[i]: quoted, or a bare word read by
 * hand, so that words like cublas-tf32 need no quotes. Sets *end. */
static json_t *selector_value(parser *p, size_t i, size_t *end, const char *key)
{
    if (i < p->len && (p->s[i] == '\'' || p->s[i] == '"')) {
        *end = expr_lex_string(p, i);
        json_t *v = p->value;
        p->value = NULL;
        return v;
    }
    size_t e = i;
    while (e < p->len && !isspace((unsigned char)p->s[e]) && p->s[e] != ',' && p->s[e] != ']')
        e++;
    *end = e;
    if (e == i) {
        expr_fail(p, i, "expected a value after '%s='", key);
        return NULL;
    }
    char *text = strndup(p->s + i, e - i);
    json_t *v = NULL;
    if (!text)
        expr_fail(p, i, "out of memory");
    else if (strcmp(text, "true") == 0 || strcmp(text, "false") == 0)
        v = json_boolean(text[0] == 't');
    else if (strcmp(text, "null") == 0)
        v = json_null();
    else if (!(v = expr_lex_number(p, text, i)) && !p->failed)
        v = json_stringn(p->s + i, e - i);
    free(text);
    if (!v && !p->failed)
        expr_fail(p, i, "the value of '%s' is not valid UTF-8", key);
    return v;
}

/* key=value pairs of a selector; the '[' is current. */
static node *parse_selector(parser *p, node *n)
{
    n->kind = N_SELECT;
    do {
        expr_lex_next(p);                    /* past '[' or ',' */
        if (p->t != T_NAME) {
            char buf[64];
            expr_fail(p, p->ts, "expected a field name in the selector, found %s", token_text(p, buf, sizeof buf));
            return n;
        }
        if (!count_term(p, p->ts))
            return n;
        char *key = strndup(p->s + p->ts, p->te - p->ts);
        expr_lex_next(p);
        if (p->t != T_ASSIGN && p->t != T_EQ) {
            free(key);
            char buf[64];
            expr_fail(p, p->ts, "expected '=' after the selector's field, found %s", token_text(p, buf, sizeof buf));
            return n;
        }
        size_t i = p->pos, e = i;
        while (i < p->len && isspace((unsigned char)p->s[i]))
            i++;
        json_t *v = key ? selector_value(p, i, &e, key) : NULL;
        bool fits = room((void **)&n->keys, n->nsel, sizeof *n->keys)
                 && room((void **)&n->vals, n->nsel, sizeof *n->vals);
        if (!key || !v || !fits) {
            free(key);
            json_decref(v);
            expr_fail(p, i, "out of memory");
            return n;
        }
        n->keys[n->nsel] = key;
        n->vals[n->nsel++] = v;
        p->pos = e;
        expr_lex_next(p);
    } while (!p->failed && p->t == T_COMMA);
    n->end = p->te;
    expect(p, T_RB, "',' or ']' to end the selector");
    return n;
}

/* '[' is current: a selector when a name and a single '=' follow. */
static bool selector_follows(const parser *p)
{
    size_t i = p->te;
    while (i < p->len && isspace((unsigned char)p->s[i]))
        i++;
    if (i >= p->len || !expr_lex_name_char(p->s[i], true))
        return false;
    while (i < p->len && expr_lex_name_char(p->s[i], false))
        i++;
    while (i < p->len && isspace((unsigned char)p->s[i]))
        i++;
    return i < p->len && p->s[i] == '=' && (i + 1 >= p->len || p->s[i + 1] != '=');
}

/* Appends an operand (and for N_ARITH its operator) to n's list; frees it
 * when there is no room. */
static void add_operand(parser *p, node *n, node *operand, char op)
{
    if (!operand)
        return;
    if (!room((void **)&n->args, n->nargs, sizeof *n->args)
        || (n->kind == N_ARITH && !room((void **)&n->ops, n->nargs, sizeof *n->ops))) {
        expr_fail(p, operand->start, "out of memory");
        node_free(operand);
        return;
    }
    if (n->kind == N_ARITH)
        n->ops[n->nargs] = op;
    n->args[n->nargs++] = operand;
    n->end = operand->end;
}

static node *parse_call(parser *p, node *n)
{
    n->kind = N_CALL;
    if (!enter(p))
        return n;
    expr_lex_next(p);                        /* past '(' */
    while (!p->failed && p->t != T_RP) {
        add_operand(p, n, parse_or(p), 0);
        if (p->t != T_COMMA)
            break;
        expr_lex_next(p);
    }
    n->end = p->te;
    expect(p, T_RP, "',' or ')' after the function's arguments");
    leave(p);
    return n;
}

/* The current name is gpu or recorded, and '.' and a magic's name follow:
 * which results the name after it reads (expr.h). Otherwise FROM_LIVE: a
 * magic's result that is itself called so (gpu.x where no magic is x) keeps
 * its plain meaning. */
static enum name_from source_prefix(const parser *p)
{
    size_t n = p->te - p->ts;
    enum name_from from = n == 3 && strncmp(p->s + p->ts, "gpu", 3) == 0 ? FROM_GPU
                        : n == 8 && strncmp(p->s + p->ts, "recorded", 8) == 0 ? FROM_RECORDED : FROM_LIVE;
    size_t i = p->te;
    while (from != FROM_LIVE && i < p->len && isspace((unsigned char)p->s[i]))
        i++;
    if (from == FROM_LIVE || i >= p->len || p->s[i] != '.')
        return FROM_LIVE;
    i++;
    while (i < p->len && isspace((unsigned char)p->s[i]))
        i++;
    size_t s = i;
    while (i < p->len && expr_lex_name_char(p->s[i], i == s))
        i++;
    char name[64];
    if (i == s || i - s >= sizeof name)
        return FROM_LIVE;
    snprintf(name, sizeof name, "%.*s", (int)(i - s), p->s + s);
    return magic_find(name) ? from : FROM_LIVE;
}

static node *parse_primary(parser *p)
{
    size_t start = p->ts;
    char buf[64];
    node *n;
    switch (p->t) {
    case T_NUM: case T_STR: case T_TRUE: case T_FALSE: case T_NULL:
        n = node_new(p, N_LIT, start);
        if (n)
            n->lit = p->t == T_TRUE ? json_true() : p->t == T_FALSE ? json_false()
                   : p->t == T_NULL ? json_null() : json_incref(p->value);
        expr_lex_next(p);
        return n;
    case T_LP:
        if (!enter(p))
            return NULL;
        expr_lex_next(p);
        n = parse_or(p);
        expect(p, T_RP, "')'");
        leave(p);
        return n;
    case T_NAME:
        n = node_new(p, N_NAME, start);
        if (!n)
            return NULL;
        n->from = source_prefix(p);
        if (n->from != FROM_LIVE) {
            expr_lex_next(p);                /* past the prefix, to the '.' */
            expr_lex_next(p);                /* to the magic's name */
        }
        n->name = strndup(p->s + p->ts, p->te - p->ts);
        expr_lex_next(p);
        if (p->t == T_LP)
            return parse_call(p, n);
        if (p->t == T_LB && selector_follows(p))
            return parse_selector(p, n);
        return n;
    default:
        expr_fail(p, p->ts, "expected a value, a result name or '(', found %s", token_text(p, buf, sizeof buf));
        return NULL;
    }
}

/* A node over a (and b): N_CMP, N_INDEX, N_FIELD, N_NEG, N_NOT. */
static node *binary(parser *p, enum node_kind kind, int op, size_t start, node *a, node *b)
{
    node *n = node_new(p, kind, start);
    if (!n) {
        node_free(a);
        node_free(b);
        return NULL;
    }
    n->op = op;
    n->a = a;
    n->b = b;
    n->end = b ? b->end : a ? a->end : n->end;
    return n;
}

/* Each '.field' and '[index]' of a chain is one more level of nesting: the
 * tree grows one deeper per step. */
static node *parse_postfix(parser *p)
{
    node *n = parse_primary(p);
    int steps = 0;
    while (!p->failed && (p->t == T_DOT || p->t == T_LB) && enter(p)) {
        steps++;
        size_t start = n ? n->start : p->ts;
        if (p->t == T_DOT) {
            expr_lex_next(p);
            if (p->t != T_NAME) {
                char buf[64];
                expr_fail(p, p->ts, "expected a field name after '.', found %s", token_text(p, buf, sizeof buf));
                break;
            }
            node *f = binary(p, N_FIELD, 0, start, n, NULL);
            n = f;
            if (!f)
                break;
            f->name = strndup(p->s + p->ts, p->te - p->ts);
            f->end = p->te;
            expr_lex_next(p);
        } else {
            expr_lex_next(p);
            node *idx = parse_or(p);
            n = binary(p, N_INDEX, 0, start, n, idx);
            if (n)
                n->end = p->te;
            expect(p, T_RB, "']'");
        }
    }
    p->depth -= steps;
    return n;
}

static node *parse_unary(parser *p)
{
    if (p->t != T_MINUS && p->t != T_PLUS)
        return parse_postfix(p);
    if (!enter(p))
        return NULL;
    size_t start = p->ts;
    bool neg = p->t == T_MINUS;
    expr_lex_next(p);
    node *a = parse_unary(p);
    node *n = neg && a ? binary(p, N_NEG, 0, start, a, NULL) : a;
    leave(p);
    return n;
}

/* operand (op operand)* as one node of kind with every operand, or the first
 * operand alone when no op follows. is_op says whether a token is an op and
 * which character it stands for. */
static node *chain(parser *p, enum node_kind kind, node *(*operand)(parser *), bool (*is_op)(enum tk, char *))
{
    node *first = operand(p);
    char op;
    if (p->failed || !is_op(p->t, &op))
        return first;
    node *n = node_new(p, kind, first ? first->start : p->ts);
    if (!n) {
        node_free(first);
        return NULL;
    }
    add_operand(p, n, first, 0);
    while (!p->failed && is_op(p->t, &op)) {
        expr_lex_next(p);
        add_operand(p, n, operand(p), op);
    }
    return n;
}

static bool term_op(enum tk t, char *op)
{
    *op = t == T_STAR ? '*' : t == T_SLASH ? '/' : '%';
    return t == T_STAR || t == T_SLASH || t == T_PCT;
}

static bool sum_op(enum tk t, char *op)
{
    *op = t == T_PLUS ? '+' : '-';
    return t == T_PLUS || t == T_MINUS;
}

static bool and_op(enum tk t, char *op)
{
    *op = 0;
    return t == T_AND;
}

static bool or_op(enum tk t, char *op)
{
    *op = 0;
    return t == T_OR;
}

static node *parse_term(parser *p)
{
    return chain(p, N_ARITH, parse_unary, term_op);
}

static node *parse_sum(parser *p)
{
    return chain(p, N_ARITH, parse_term, sum_op);
}

static bool cmp_token(enum tk t, int *op)
{
    switch (t) {
    case T_EQ: *op = OP_EQ; return true;
    case T_NE: *op = OP_NE; return true;
    case T_LT: *op = OP_LT; return true;
    case T_LE: *op = OP_LE; return true;
    case T_GT: *op = OP_GT; return true;
    case T_GE: *op = OP_GE; return true;
    default: return false;
    }
}

static node *parse_cmp(parser *p)
{
    node *n = parse_sum(p);
    int op;
    if (p->t == T_ASSIGN)
        expr_fail(p, p->ts, "'=' is not a comparison: write '==' (a single '=' belongs in a selector "
                  "such as matmul[variant=tiled])");
    if (p->failed || !cmp_token(p->t, &op))
        return n;
    expr_lex_next(p);
    n = binary(p, N_CMP, op, n ? n->start : p->ts, n, parse_sum(p));
    int again;
    if (!p->failed && cmp_token(p->t, &again))
        expr_fail(p, p->ts, "comparisons do not chain: join them with 'and', as in a < b and b < c");
    return n;
}

static node *parse_not(parser *p)
{
    if (p->t != T_NOT)
        return parse_cmp(p);
    if (!enter(p))
        return NULL;
    size_t start = p->ts;
    expr_lex_next(p);
    node *a = parse_not(p);
    node *n = a ? binary(p, N_NOT, 0, start, a, NULL) : NULL;
    leave(p);
    return n;
}

static node *parse_and(parser *p)
{
    return chain(p, N_AND, parse_not, and_op);
}

static node *parse_or(parser *p)
{
    return chain(p, N_OR, parse_and, or_op);
}

/* Where the expression ends: before its comment and trailing blanks. */
static size_t expression_length(const char *s)
{
    bool open;
    size_t i = expr_text_end(s, &open);
    while (i > 0 && isspace((unsigned char)s[i - 1]))
        i--;
    return i;
}

expr *expr_parse(const char *src, char *msg, size_t len, size_t *at)
{
    src = src ? src : "";
    size_t lead = strspn(src, " \t\r\n\v\f");
    parser p = { .s = src, .len = expression_length(src), .pos = lead, .msg = msg, .msglen = len };
    *at = SIZE_MAX;
    if (p.len <= lead) {
        snprintf(msg, len, "an expression is missing, as in matmul.check.passed");
        *at = lead;
        return NULL;
    }
    if (p.len - lead > EXPR_MAX_BYTES) {
        snprintf(msg, len, "the expression is too long: %zu bytes (the limit is %d): split the check "
                 "into several", p.len - lead, EXPR_MAX_BYTES);
        return NULL;
    }
    expr_lex_next(&p);
    node *root = parse_or(&p);
    if (!p.failed && p.t != T_END) {
        char buf[64];
        expr_fail(&p, p.ts, "unexpected %s after a complete expression", token_text(&p, buf, sizeof buf));
    }
    json_decref(p.value);
    expr *e = p.failed ? NULL : calloc(1, sizeof *e);
    if (e && root) {
        e->src = strndup(src, p.len);
        e->lead = lead;
        e->root = root;
    }
    if (!e || !e->src || !root) {
        if (!p.failed)
            expr_fail(&p, lead, "out of memory");
        node_free(root);
        if (e)
            free(e->src);
        free(e);
        *at = p.at;
        return NULL;
    }
    return e;
}

void expr_free(expr *e)
{
    if (!e)
        return;
    node_free(e->root);
    free(e->src);
    free(e);
}

const char *expr_source(const expr *e)
{
    return e->src + e->lead;
}
