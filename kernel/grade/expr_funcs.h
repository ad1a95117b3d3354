/* expr_funcs.h — the functions of the %assert/%score language, one row each.
 *
 * The rows are the one list of them: expr_funcs.c builds the evaluator's
 * table from them (as SQLite's func.c builds its built-ins with FUNCTION()
 * rows), and the help (EXPR_FUNCTIONS_HELP), completion (expr_names) and the
 * "did you mean" and "functions: ..." of errors read them. Adding a function
 * is one row here and one fn_NAME(call *) in expr_funcs.c.
 */
#ifndef CUDALAB_EXPR_FUNCS_H
#define CUDALAB_EXPR_FUNCS_H

/* How a function takes its arguments (the flags column). */
enum {
    FN_NUMBERS = 1,     /* the numbers of its arguments: the elements of its one argument
                           (one per run, or a list's items), or its several arguments */
    FN_SCALARS = 2,     /* each argument one number */
    FN_REDUCES = 4,     /* turns one value per run into one: suggested when a value has several */
};

/* X(name, fewest arguments, most (-1: no limit), flags, what it takes (for
 * "NAME() takes ..."), what it gives (for the help)). Sorted by name. */
#define EXPR_FUNCTIONS(X) \
    X(abs,   1,  1, FN_SCALARS,              "one argument", \
      "the number without its sign") \
    X(all,   1,  1, FN_REDUCES,              "one argument", \
      "true when every value (one per run, or a list's) is true") \
    X(any,   1,  1, FN_REDUCES,              "one argument", \
      "true when one of them is") \
    X(count, 1,  1, 0,                       "one argument", \
      "how many runs or values; the length of a list, object or text") \
    X(len,   1,  1, 0,                       "one argument", \
      "the same as count") \
    X(max,   1, -1, FN_NUMBERS | FN_REDUCES, "at least one argument", \
      "the largest of the numbers (one per run, a list's, or its arguments)") \
    X(mean,  1,  1, FN_NUMBERS | FN_REDUCES, "one argument", \
      "the mean of the numbers") \
    X(min,   1, -1, FN_NUMBERS | FN_REDUCES, "at least one argument", \
      "the smallest of the numbers") \
    X(round, 1,  2, FN_SCALARS,              "a number and optionally a count of digits", \
      "the number rounded, to a whole number or to that many digits") \
    X(sum,   1,  1, FN_NUMBERS,              "one argument", \
      "the sum of the numbers")

/* The functions as lines of help text: "  name(): what it gives\n"... */
#define EXPR_FUNCTION_HELP_LINE_(name, fewest, most, flags, takes, gives) "  " #name "(): " gives "\n"
#define EXPR_FUNCTIONS_HELP EXPR_FUNCTIONS(EXPR_FUNCTION_HELP_LINE_)

#endif
