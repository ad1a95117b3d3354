/* expr_internal.h — the syntax tree shared by expr_parse.c and expr_eval.c. */
#ifndef CUDALAB_EXPR_INTERNAL_H
#define CUDALAB_EXPR_INTERNAL_H

#include "grade/expr.h"

enum node_kind {
    N_LIT,          /* lit: a number, string, true, false or null */
    N_NAME,         /* name: a magic's newest result */
    N_SELECT,       /* name[keys=vals]: the newest runs with those values */
    N_FIELD,        /* a.name */
    N_INDEX,        /* a[b] */
    N_CALL,         /* name(args) */
    N_NEG,          /* -a */
    N_NOT,          /* not a */
    N_ARITH,        /* args[0] ops[1] args[1] ops[2] ...: a chain of + - or of * / % */
    N_CMP,          /* a op b, op one of == != < <= > >= */
    N_AND,          /* args[0] and args[1] and ... */
    N_OR,           /* args[0] or args[1] or ... */
};

enum cmp_op { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE };

/* A value while evaluating: one JSON value, or one per run (many, with a label
 * per run saying which it is). Runs of a result (after a name or a selector)
 * keep their document, so that fields fall back to it. */
typedef struct val {
    json_t *one;                /* owned, or NULL */
    json_t *many;               /* owned array, or NULL */
    json_t *labels;             /* owned array of strings, parallel to many */
    const json_t *doc;          /* runs: their document (borrowed from the store) */
    bool runs;                  /* one/many are runs of doc */
    const char *magic;          /* where the value came from, for messages (borrowed) */
    int cell;
} val;

typedef struct node node;
struct node {
    enum node_kind kind;
    int op;                     /* N_CMP: enum cmp_op */
    size_t start, end;          /* the node's source text */
    json_t *lit;                /* N_LIT */
    char *name;                 /* N_NAME, N_SELECT, N_FIELD, N_CALL */
    node *a, *b;                /* N_CMP, N_INDEX (a is the base): both; N_FIELD, N_NEG, N_NOT: a */
    node **args;                /* N_CALL: its arguments; N_ARITH, N_AND, N_OR: the operands */
    char *ops;                  /* N_ARITH: ops[i] joins args[i] to what comes before it */
    int nargs;
    char **keys;                /* N_SELECT */
    json_t **vals;
    int nsel;
    val v;                      /* the last value (kept for explanations) */
    bool evaluated;
};

struct expr {
    char *src;                  /* the source up to its comment; node offsets index it */
    size_t lead;                /* where the expression starts in src (after blanks) */
    node *root;
};

void val_clear(val *v);

#endif
