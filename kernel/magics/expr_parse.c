/* expr_parse.c — %assert/%score expressions into a syntax tree (expr.h).
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
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "magics/expr_internal.h"
#include "magics/parse_internal.h"

#define MAX_DEPTH 64

enum tk {
    T_END, T_NUM, T_STR, T_NAME, T_LP, T_RP, T_LB, T_RB, T_COMMA, T_DOT, T_ASSIGN,
    T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE, T_PLUS, T_MINUS, T_STAR, T_SLASH, T_PCT,
    T_AND, T_OR, T_NOT, T_TRUE, T_FALSE, T_NULL,
};

typedef struct parser {
    const char *s;
    size_t len;                 /* the expression ends here (a '#' comment is cut off) */
    size_t pos;                 /* after the current token */
    enum tk t;                  /* the current token */
    size_t ts, te;              /* its text */
    json_t *value;              /* T_NUM, T_STR: its value (owned) */
    int depth;
    char *msg;
    size_t msglen;
    size_t at;
    bool failed;
} parser;

static void fail(parser *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void fail(parser *p, size_t at, const char *fmt, ...)
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

static bool name_char(char c, bool first)
{
    return isalpha((unsigned char)c) || c == '_' || (!first && isdigit((unsigned char)c));
}

/* A number as flags write it: 1024, 2.5, 1e-3, 2^20, 64K, 1_000. */
static json_t *number_value(const char *text)
{
    long long i;
    double d;
    if (number_int(text, &i) == NUM_OK)
        return json_integer(i);
    if (number_float(text, &d) == NUM_OK)
        return json_real(d);
    return NULL;
}

static size_t number_end(const char *s, size_t i, size_t len)
{
    while (i < len && (isalnum((unsigned char)s[i]) || s[i] == '.' || s[i] == '_' || s[i] == '^'
                       || ((s[i] == '+' || s[i] == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E'))))
        i++;
    return i;
}

/* A quoted string starting at s[i]; sets p->value. Returns the end or fails. */
static size_t string_token(parser *p, size_t i)
{
    char q = p->s[i];
    size_t j = i + 1, n = 0;
    char *buf = malloc(p->len - i);
    if (!buf) {
        fail(p, i, "out of memory");
        return p->len;
    }
    for (; j < p->len && p->s[j] != q; j++) {
        if (p->s[j] == '\\' && j + 1 < p->len)
            j++;
        buf[n++] = p->s[j];
    }
    if (j >= p->len) {
        free(buf);
        fail(p, i, "this %c quote is never closed", q);
        return p->len;
    }
    p->value = json_stringn(buf, n);
    free(buf);
    if (!p->value)
        fail(p, i, "the string is not valid UTF-8");
    return j + 1;
}

static const struct { const char *text; enum tk t; } words[] = {
    {"and", T_AND}, {"or", T_OR}, {"not", T_NOT}, {"true", T_TRUE}, {"false", T_FALSE},
    {"null", T_NULL}, {"True", T_TRUE}, {"False", T_FALSE}, {"None", T_NULL},
};

static void next(parser *p)
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
        char text[64];
        snprintf(text, sizeof text, "%.*s", (int)(e - i), s + i);
        p->value = e - i < sizeof text ? number_value(text) : NULL;
        if (!p->value)
            fail(p, i, "'%.*s' is not a number", utf8_clip(s + i, e - i < 40 ? e - i : 40), s + i);
        p->t = T_NUM;
    } else if (c == '\'' || c == '"') {
        e = string_token(p, i);
        p->t = T_STR;
    } else if (name_char(c, true)) {
        while (e < p->len && name_char(s[e], false))
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
        fail(p, i, "unexpected character '%.*s'", utf8_clip(s + i, 4), s + i);
        p->t = T_END;
    }
    p->te = p->pos = e;
}

static node *node_new(parser *p, enum node_kind kind, size_t start)
{
    node *n = calloc(1, sizeof *n);
    if (!n)
        fail(p, start, "out of memory");
    else {
        n->kind = kind;
        n->start = start;
        n->end = p->te;
    }
    return n;
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
        next(p);
        return true;
    }
    char buf[64];
    fail(p, p->ts, "expected %s, found %s", what, token_text(p, buf, sizeof buf));
    return false;
}

static node *parse_or(parser *p);

/* key=value pairs of a selector; the '[' is current. */
static node *parse_selector(parser *p, node *n)
{
    n->kind = N_SELECT;
    do {
        next(p);                    /* past '[' or ',' */
        if (p->t != T_NAME) {
            char buf[64];
            fail(p, p->ts, "expected a field name in the selector, found %s", token_text(p, buf, sizeof buf));
            return n;
        }
        char *key = strndup(p->s + p->ts, p->te - p->ts);
        next(p);
        if (p->t != T_ASSIGN && p->t != T_EQ) {
            free(key);
            char buf[64];
            fail(p, p->ts, "expected '=' after the selector's field, found %s", token_text(p, buf, sizeof buf));
            return n;
        }
        /* the value: read by hand, so that bare words like cublas-tf32 need no quotes */
        size_t i = p->pos;
        while (i < p->len && isspace((unsigned char)p->s[i]))
            i++;
        json_t *v = NULL;
        size_t e = i;
        if (i < p->len && (p->s[i] == '\'' || p->s[i] == '"')) {
            e = string_token(p, i);
            v = p->value;
            p->value = NULL;
        } else {
            while (e < p->len && !isspace((unsigned char)p->s[e]) && p->s[e] != ',' && p->s[e] != ']')
                e++;
            char text[128];
            snprintf(text, sizeof text, "%.*s", (int)(e - i), p->s + i);
            if (e == i)
                fail(p, i, "expected a value after '%s='", key ? key : "");
            else if (strcmp(text, "true") == 0 || strcmp(text, "false") == 0)
                v = json_boolean(text[0] == 't');
            else if (strcmp(text, "null") == 0)
                v = json_null();
            else if (!(v = number_value(text)))
                v = json_stringn(p->s + i, e - i);
        }
        char **keys = realloc(n->keys, (size_t)(n->nsel + 1) * sizeof *keys);
        json_t **vals = keys ? realloc(n->vals, (size_t)(n->nsel + 1) * sizeof *vals) : NULL;
        if (keys)
            n->keys = keys;
        if (vals)
            n->vals = vals;
        if (!key || !v || !keys || !vals) {
            free(key);
            json_decref(v);
            fail(p, i, "out of memory");
            return n;
        }
        n->keys[n->nsel] = key;
        n->vals[n->nsel++] = v;
        p->pos = e;
        next(p);
    } while (!p->failed && p->t == T_COMMA);
    expect(p, T_RB, "',' or ']' to end the selector");
    return n;
}

/* '[' is current: a selector when a name and a single '=' follow. */
static bool selector_follows(const parser *p)
{
    size_t i = p->te;
    while (i < p->len && isspace((unsigned char)p->s[i]))
        i++;
    if (i >= p->len || !name_char(p->s[i], true))
        return false;
    while (i < p->len && name_char(p->s[i], false))
        i++;
    while (i < p->len && isspace((unsigned char)p->s[i]))
        i++;
    return i < p->len && p->s[i] == '=' && (i + 1 >= p->len || p->s[i + 1] != '=');
}

static node *parse_call(parser *p, node *n)
{
    n->kind = N_CALL;
    next(p);                        /* past '(' */
    while (!p->failed && p->t != T_RP) {
        node *arg = parse_or(p);
        node **args = realloc(n->args, (size_t)(n->nargs + 1) * sizeof *args);
        if (!args) {
            node_free(arg);
            fail(p, p->ts, "out of memory");
            break;
        }
        n->args = args;
        n->args[n->nargs++] = arg;
        if (p->t != T_COMMA)
            break;
        next(p);
    }
    expect(p, T_RP, "',' or ')' after the function's arguments");
    return n;
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
        next(p);
        return n;
    case T_LP:
        next(p);
        n = parse_or(p);
        expect(p, T_RP, "')'");
        return n;
    case T_NAME:
        n = node_new(p, N_NAME, start);
        if (!n)
            return NULL;
        n->name = strndup(p->s + p->ts, p->te - p->ts);
        next(p);
        if (p->t == T_LP)
            return parse_call(p, n);
        if (p->t == T_LB && selector_follows(p))
            return parse_selector(p, n);
        return n;
    default:
        fail(p, p->ts, "expected a value, a result name or '(', found %s", token_text(p, buf, sizeof buf));
        return NULL;
    }
}

static node *binary(parser *p, enum node_kind kind, int op, node *a, node *b)
{
    node *n = node_new(p, kind, a ? a->start : 0);
    if (!n) {
        node_free(a);
        node_free(b);
        return NULL;
    }
    n->op = op;
    n->a = a;
    n->b = b;
    n->end = b ? b->end : n->end;
    return n;
}

static node *parse_postfix(parser *p)
{
    node *n = parse_primary(p);
    while (!p->failed && (p->t == T_DOT || p->t == T_LB)) {
        if (p->t == T_DOT) {
            next(p);
            if (p->t != T_NAME) {
                char buf[64];
                fail(p, p->ts, "expected a field name after '.', found %s", token_text(p, buf, sizeof buf));
                break;
            }
            node *f = binary(p, N_FIELD, 0, n, NULL);
            if (!f)
                return NULL;
            f->name = strndup(p->s + p->ts, p->te - p->ts);
            f->end = p->te;
            n = f;
            next(p);
        } else {
            next(p);
            node *idx = parse_or(p);
            n = binary(p, N_INDEX, 0, n, idx);
            if (n)
                n->end = p->te;
            expect(p, T_RB, "']'");
        }
    }
    return n;
}

static node *parse_unary(parser *p)
{
    if (++p->depth > MAX_DEPTH) {
        fail(p, p->ts, "the expression is nested too deeply");
        return NULL;
    }
    node *n;
    if (p->t == T_MINUS || p->t == T_PLUS) {
        size_t start = p->ts;
        bool neg = p->t == T_MINUS;
        next(p);
        node *a = parse_unary(p);
        if (!neg || !a)
            n = a;
        else if ((n = binary(p, N_NEG, 0, a, NULL)) != NULL) {
            n->start = start;
            n->end = a->end;
        }
    } else {
        n = parse_postfix(p);
    }
    p->depth--;
    return n;
}

static node *parse_term(parser *p)
{
    node *n = parse_unary(p);
    while (!p->failed && (p->t == T_STAR || p->t == T_SLASH || p->t == T_PCT)) {
        int op = p->t == T_STAR ? '*' : p->t == T_SLASH ? '/' : '%';
        next(p);
        n = binary(p, N_ARITH, op, n, parse_unary(p));
    }
    return n;
}

static node *parse_sum(parser *p)
{
    node *n = parse_term(p);
    while (!p->failed && (p->t == T_PLUS || p->t == T_MINUS)) {
        int op = p->t == T_PLUS ? '+' : '-';
        next(p);
        n = binary(p, N_ARITH, op, n, parse_term(p));
    }
    return n;
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
        fail(p, p->ts, "'=' is not a comparison: write '==' (a single '=' belongs in a selector "
             "such as matmul[variant=tiled])");
    if (p->failed || !cmp_token(p->t, &op))
        return n;
    next(p);
    n = binary(p, N_CMP, op, n, parse_sum(p));
    int again;
    if (!p->failed && cmp_token(p->t, &again))
        fail(p, p->ts, "comparisons do not chain: join them with 'and', as in a < b and b < c");
    return n;
}

static node *parse_not(parser *p)
{
    if (p->t != T_NOT)
        return parse_cmp(p);
    if (++p->depth > MAX_DEPTH) {
        fail(p, p->ts, "the expression is nested too deeply");
        return NULL;
    }
    size_t start = p->ts;
    next(p);
    node *a = parse_not(p);
    node *n = binary(p, N_NOT, 0, a, NULL);
    if (n) {
        n->start = start;
        n->end = a ? a->end : n->end;
    }
    p->depth--;
    return n;
}

static node *parse_and(parser *p)
{
    node *n = parse_not(p);
    while (!p->failed && p->t == T_AND) {
        next(p);
        n = binary(p, N_AND, 0, n, parse_not(p));
    }
    return n;
}

static node *parse_or(parser *p)
{
    if (++p->depth > MAX_DEPTH) {
        fail(p, p->ts, "the expression is nested too deeply");
        return NULL;
    }
    node *n = parse_and(p);
    while (!p->failed && p->t == T_OR) {
        next(p);
        n = binary(p, N_OR, 0, n, parse_and(p));
    }
    p->depth--;
    return n;
}

/* Where the expression ends: at a '#' outside quotes. */
static size_t expression_length(const char *s)
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
    next(&p);
    node *root = parse_or(&p);
    if (!p.failed && p.t != T_END) {
        char buf[64];
        fail(&p, p.ts, "unexpected %s after a complete expression", token_text(&p, buf, sizeof buf));
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
            fail(&p, lead, "out of memory");
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
