/* expr.h — the expressions of %assert and %score, over the session's results.
 *
 *   matmul.check.passed                          the newest %matmul result's field
 *   matmul[variant=tiled,tile=16].gflops         the newest run with those fields
 *   histo.bins['a-d'] == 5                       index an object by key (or an array by number)
 *   reduce[variant=fast].gbs > 0.5 * reduce[variant=cub].gbs
 *   all(matmul.check.passed) and count(matmul) == 5
 *   gpu.matmul[variant=tiled].gflops > 1000      on a GPU the live result, else the recorded one
 *
 * A name is a magic; it stands for the runs of that magic's newest result (a
 * document's "runs", or the document itself when it has none). A selector
 * NAME[key=value, ...] picks the runs of the newest result that has runs with
 * those values. A field is looked up in each run, then in its document, then
 * in the document's params; a field with one value in every run is that
 * value, otherwise it has one value per run (min, max, sum, mean, all, any,
 * count reduce them; comparing them needs a selector). Operators: or and not
 * (also || && !), == != < <= > >=, + - * / %, unary -, parentheses; literals:
 * numbers (2^20, 64K as in flags), 'strings' or "strings", true false null.
 * Functions: the rows of expr_funcs.h (abs, min, count...). '#' ends
 * the expression (a comment). Strings know the escapes of the cell language's
 * double quotes (ESCAPES_TEXT in lang/lex.h); any other is an error.
 *
 * Arithmetic on integers is exact in 64 bits (a result beyond them becomes a
 * float); a result beyond the largest double is an OverflowError, never an
 * infinity or a NaN, and a literal beyond its type's range is a SyntaxError.
 */
#ifndef CUDALAB_EXPR_H
#define CUDALAB_EXPR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "grade/results.h"

typedef struct expr expr;

/* Limits, checked by expr_parse, so that no expression can exhaust the stack
 * or the kernel's memory: chains of one precedence (a + b - c, a and b and c)
 * are one node with many operands, so every walk of the tree recurses only
 * through nesting. All three are far beyond what a person writes. */
#define EXPR_MAX_BYTES (64 << 10)   /* of source, comment excluded */
#define EXPR_MAX_TERMS 4096         /* values, names, calls, operations, selector keys */
#define EXPR_MAX_DEPTH 64           /* levels of (), calls, [index], .field, unary -, not */

/* What went wrong, or why an assertion is false: a Jupyter error's ename and
 * evalue, and extra traceback lines ("where ..." with the values that were
 * compared). lines is a new reference or NULL; the caller frees it. */
typedef struct expr_report {
    error_info error;
    json_t *lines;
} expr_report;

/* Parses src. NULL on a syntax error: msg says what, *at is the byte offset. */
expr *expr_parse(const char *src, char *msg, size_t len, size_t *at);
void expr_free(expr *e);
/* The source the expression was parsed from, trimmed, without its comment. */
const char *expr_source(const expr *e);

/* %assert: 1 when e holds (every value, when it has one per run), 0 when it
 * does not (rep says which values made it false), -1 on an error (rep). */
int expr_check(expr *e, const result_store *rs, expr_report *rep);
/* %score: e as a number (true = 1, false = 0): 0, or -1 with rep filled. */
int expr_number(expr *e, const result_store *rs, double *out, expr_report *rep);

/* The same where the session has recorded GPU results (grade/recorded.h):
 * gpu.NAME reads rs when NAME's newest result there came from a GPU (backend
 * "cuda") and recorded otherwise; recorded.NAME always reads recorded. When it
 * would read recorded and recorded is NULL (no recording loaded: nothing to
 * check against), the error's ename is EXPR_NO_RECORDING. The plain forms
 * above pass NULL. */
#define EXPR_NO_RECORDING "NoRecordedResults"
/* ... and when NAME's newest result ran here, off a GPU, by a command the loaded recording lacks. */
#define EXPR_NOT_RECORDED "CommandNotRecorded"
int expr_check_with(expr *e, const result_store *rs, const result_store *recorded, expr_report *rep);
int expr_number_with(expr *e, const result_store *rs, const result_store *recorded, double *out,
                     expr_report *rep);

/* For completion: the names that can follow "src." (the fields of what src is:
 * for runs, theirs, their document's and its params'), or with src NULL the
 * names an expression can start with (magics with a result, functions).
 * A new array of strings, sorted; empty when src does not evaluate. */
json_t *expr_names(const char *src, const result_store *rs);

#endif
