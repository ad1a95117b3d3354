/* expr_lex.h — the parser of %assert/%score expressions (expr_parse.c) and
 * its tokenizer (expr_lex.c): the tokens and the state they share. Only
 * kernel/grade/expr_parse.c and expr_lex.c include it.
 */
#ifndef CUDALAB_GRADE_EXPR_LEX_H
#define CUDALAB_GRADE_EXPR_LEX_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

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
    int depth;                  /* levels of nesting around the current token */
    int terms;                  /* nodes and selector keys so far */
    char *msg;
    size_t msglen;
    size_t at;
    bool failed;
} parser;

/* Fails the parse at byte at with a message (only the first failure counts). */
void expr_fail(parser *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Whether c may be a name's character (its first when first). */
bool expr_lex_name_char(char c, bool first);
/* A number as flags write it (text, at byte at); NULL when it is none, failed when out of range. */
json_t *expr_lex_number(parser *p, const char *text, size_t at);
/* A quoted string starting at p->s[i] into p->value: its end, or failed. */
size_t expr_lex_string(parser *p, size_t i);
/* The next token into p (t, ts, te, value), after p->pos. */
void expr_lex_next(parser *p);

#endif
