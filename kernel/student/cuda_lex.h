/* cuda_lex.h — CUDA C++ source cut into tokens for the __shared__ rewrite
 * (shared_rewrite.c): a lexer that knows where the code is (not in comments,
 * literals or directives), each token with the cell line it starts on, and
 * where the lines of code end. Only kernel/student/ includes it.
 */
#ifndef CUDALAB_STUDENT_CUDA_LEX_H
#define CUDALAB_STUDENT_CUDA_LEX_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { TK_IDENT, TK_NUMBER, TK_STRING, TK_PUNCT, TK_DIRECTIVE } tk_kind;

typedef struct token {
    tk_kind kind;
    size_t at, end;             /* offsets into the source */
    int line;                   /* the cell line it starts on */
} token;

typedef struct lexed {
    token *tok;
    size_t n, cap;
    size_t *breaks;             /* offsets of the newlines that end a line of code (not in a comment) */
    size_t nbreaks, capb;
    bool failed;
} lexed;

/* Cuts the source into tokens (comments and whitespace dropped, a directive
 * one token) and notes where lines of code end, into lx (zeroed by the
 * caller; the caller frees lx->tok and lx->breaks). 0, or -1 out of memory. */
int cuda_lex(const char *s, int first_line, lexed *lx);
/* The newlines in s[from, to). */
int cuda_count_lines(const char *s, size_t from, size_t to);

#endif
