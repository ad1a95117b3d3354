/* text.h — text utilities below every layer: suggestions, messages cut at a
 * UTF-8 boundary (the UTF-8 helpers themselves are in utf8.h), byte counts for
 * people. No dependency on anything else in the kernel. */
#ifndef CUDALAB_BASE_TEXT_H
#define CUDALAB_BASE_TEXT_H

#include <stddef.h>

/* Levenshtein distance over bytes; SIZE_MAX if out of memory. */
size_t edit_distance(const char *a, const char *b);

/* The nearest of several candidates to a word, within a third of its length
 * (at least 2 edits): init, add each candidate, read best (NULL if none). */
typedef struct suggest {
    const char *word;
    const char *best;       /* borrowed from the candidates */
    size_t dist;
} suggest;
void suggest_init(suggest *s, const char *word);
void suggest_add(suggest *s, const char *candidate);

/* Writes the formatted message into buf (len bytes, cut at a UTF-8
 * boundary) and returns -1, so that a function reporting into a caller's
 * buffer can `return fail_into(err, len, ...)`. */
int fail_into(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A byte count in binary units for people: "512 B", "1.5 GiB"; past EiB in
 * bytes with an exponent. Writes into buf. */
void format_bytes(double bytes, char *buf, size_t len);

/* The directory this process's executable is in (/proc/self/exe), into buf:
 * where lib/cudalab/ is found beside it, in the build tree and in an install.
 * 0, or -1. */
int exe_dir(char *buf, size_t len);

/* A macro's value as a string literal, for help texts that state a limit: STR(EXPR_MAX_TERMS). */
#define STR_(x) #x
#define STR(x) STR_(x)

#endif
