/* expr_internal.h — what the files of kernel/grade's expression language share:
 * the syntax tree (expr_parse.c builds it), the values met while evaluating,
 * and the functions each evaluation file gives the others. */
#ifndef CUDALAB_EXPR_INTERNAL_H
#define CUDALAB_EXPR_INTERNAL_H

#include "grade/expr.h"
#include "grade/expr_funcs.h"

enum node_kind {
    N_LIT,          /* lit: a number, string, true, false or null */
    N_NAME,         /* name: a magic's newest result (node.from: whose) */
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

/* Whose results a name reads (expr.h): the session's, gpu.NAME, recorded.NAME. */
enum name_from { FROM_LIVE, FROM_GPU, FROM_RECORDED };

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
    const char *device;         /* a recorded result's: the device it was recorded on (borrowed), else NULL */
} val;

typedef struct node node;
struct node {
    enum node_kind kind;
    int op;                     /* N_CMP: enum cmp_op */
    size_t start, end;          /* the node's source text */
    json_t *lit;                /* N_LIT */
    char *name;                 /* N_NAME, N_SELECT, N_FIELD, N_CALL */
    enum name_from from;        /* N_NAME, N_SELECT: the results it reads */
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

/* ---- values and their text (expr_value.c) ---- */

void val_clear(val *v);
/* Every value holds (one per run: all of them). */
bool val_truthy(const val *v);
/* The value's elements: one per run, or the one value. */
size_t val_count(const val *v);
const json_t *val_elem(const val *v, size_t i);
/* The label of run i ("variant=tiled"), or "?". */
const char *val_label(const val *v, size_t i);
/* Sets v to values, collapsed to one when every run has the same (both stolen). */
void val_set(val *v, json_t *values, json_t *labels);
/* A value for people: a number, 'text', a run, or one value per run with its label. */
void val_format(const val *v, int prec, char *buf, size_t len);

bool jv_truthy(const json_t *j);
/* A number, or a boolean counting 1 or 0. */
bool jv_is_num(const json_t *j);
double jv_num(const json_t *j);
/* An integer or a boolean as an exact integer. */
bool jv_int(const json_t *j, long long *out);
/* a <=> b for numbers: exact between integers. */
int jv_cmp(const json_t *a, const json_t *b);
/* Equal, numbers by value (1 == 1.0). */
bool jv_same(const json_t *a, const json_t *b);
/* j for messages: prec significant digits (17: as many as tell it apart). */
void jv_format(const json_t *j, int prec, char *buf, size_t len);
/* j as a selector writes it: text without its quotes, other values as jv_format. */
void jv_plain(const json_t *j, char *buf, size_t len);
/* "a number", "text", "a list"...: what j is, for messages. */
const char *jv_type(const json_t *j);

/* ---- one evaluation (expr_eval.c) ---- */

typedef struct ev {
    const result_store *rs;
    const result_store *recorded;   /* the recorded GPU results shown so far, or NULL (expr.h) */
    const expr *e;
    expr_report *rep;
} ev;

/* Fills the report's error; -1. */
int ev_fail(ev *x, const char *ename, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An OverflowError: what (the expression) overflows, how (the operation). */
int ev_overflow(ev *x, const char *what, const char *how);
/* The source text from start to end, or of node n, clipped to buf. */
const char *ev_span(const ev *x, size_t start, size_t end, char *buf, size_t len);
const char *ev_src(const ev *x, const node *n, char *buf, size_t len);
/* 0 when v is one value; else -1 with an error saying that what needs one. */
int ev_need_one(ev *x, const node *n, const val *v, const char *what);
/* The text of a comparison operator (enum cmp_op). */
extern const char *const cmp_op_text[];

/* ---- names, selectors, fields and indexes (expr_select.c) ---- */

/* Each evaluates n (an N_NAME or N_SELECT; N_FIELD; N_INDEX) into n->v, its
 * operands evaluated already: 0, or -1 with the error in x's report. */
int ev_name(ev *x, node *n);
int ev_field(ev *x, node *n);
int ev_index(ev *x, node *n);

/* ---- functions (expr_funcs.c) ---- */

/* The call n into n->v, its arguments evaluated already. */
int ev_call(ev *x, node *n);
/* The name of function i, in the table's order; NULL past the last. */
const char *expr_function_name(size_t i);
/* The names of the functions that have every flag in `with` (0: all of them),
 * for messages: "abs, all, any" or, as calls, "all(), any() or max()". */
void expr_functions_text(unsigned with, bool calls, char *buf, size_t len);

/* ---- why an assertion is false (expr_explain.c) ---- */

/* Fills x's report for an assertion whose root evaluated false: an
 * AssertionError saying why, and "where" lines with the values compared. */
void explain_false(ev *x);

#endif
