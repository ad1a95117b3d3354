/* lex.h — the cell language's lexical grammar as other folders use it: the
 * escapes of quoted text, the integer and float grammars, and where an
 * expression's text ends. %assert/%score (kernel/grade/) read the same strings
 * and numbers as a magic's arguments through it. The parser's own pieces stay
 * in parse_internal.h, which nothing outside kernel/lang/ includes.
 */
#ifndef CUDALAB_LANG_LEX_H
#define CUDALAB_LANG_LEX_H

#include <stdbool.h>
#include <stddef.h>

/* ---- parse_lex.c ---- */

/* The escapes of quoted text, in the cell language's double quotes and in
 * %assert/%score strings: the same list, the same code points. */
#define ESCAPES_TEXT "\\\\ \\' \\\" \\n \\t \\r \\xHH \\uHHHH \\UHHHHHHHH"

/* Decodes the escape at s[0] == '\\' (n bytes available): \\ \' \" \n \t \r,
 * \xHH \uHHHH \UHHHHHHHH as the UTF-8 of that code point, and a backslash
 * before a newline as nothing (a line continued inside quotes). Returns the
 * bytes it takes from s, with *outn bytes in out; 0 when s[1] starts no escape
 * (the caller decides: kept as typed, or an error); -1 with why set when it is
 * malformed, NUL, a surrogate or past U+10FFFF. */
int escape_decode(const char *s, size_t n, char out[4], size_t *outn, char *why, size_t whylen);

/* Where the expression text s ends: at a '#' outside quotes (in which a
 * backslash escapes the next character, in both kinds), or at its NUL;
 * *open says a quote is still open there. */
size_t expr_text_end(const char *s, bool *open);

/* ---- parse_number.c ---- */

enum num_status { NUM_OK, NUM_SYNTAX, NUM_FRACTION, NUM_OVERFLOW, NUM_NONFINITE };

/* 1024, -5, +7, 1_000_000, 2^20, 64K, 1.5Mi, 1e6, 2.5e3. Exact: a value
 * outside int64 is NUM_OVERFLOW, never wrapped or rounded; 2.5 is NUM_FRACTION.
 * (Only a mantissa with more than 19 significant digits is refused as
 * overflow even where a negative exponent would bring it back in range.) */
enum num_status number_int(const char *s, long long *out);
/* strtod over the whole string, with 1_000.5 separators; no hex. nan and
 * inf are NUM_NONFINITE, 1e999 NUM_OVERFLOW (tiny values round to 0). */
enum num_status number_float(const char *s, double *out);

#endif
