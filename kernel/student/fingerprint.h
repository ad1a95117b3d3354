/* fingerprint.h — how alike two kernels' sources are, in a way that renaming,
 * reformatting and reordering independent statements do not hide: what the
 * instructor's similarity report (cudalab --similarity, exec/similarity.c)
 * puts beside a grade. It is evidence for a person to read, never a grade:
 * the lecture's own tiled kernel is the textbook answer, and honest
 * solutions resemble it.
 *
 * A source is cut by the CUDA lexer (cuda_lex.h: comments, whitespace and
 * directives gone) and normalised: a local that only names a builtin
 * ("int tx = threadIdx.x;", never changed after) reads as that builtin where
 * it is used, its declarator gone (inlining or adding such aliases hides
 * nothing); keywords, types, CUDA's builtins and member names (threadIdx.x's
 * x) stay themselves; the kernel's parameters become their position among
 * its pointer parameters or among its other ones (the family fixes the
 * signature, not the names; a signature with one pointer more, as a weights
 * array that a built-in keeps in __constant__ memory, shifts no scalar);
 * __shared__ arrays become one name, every other identifier another; numbers
 * and strings one token each. The token stream is cut into
 * statements (at ';', braces, and after the header of for/if/while/else, so
 * that a body with or without braces reads the same; a declaration of several
 * variables as one statement per variable; "s += e" as "s = s + e"). The fingerprint is
 *   - the multiset of the statements' hashes, and
 *   - the winnowed k-grams (MOSS's winnowing) of the normalised tokens of
 *     each statement, as a set,
 * both of which ignore the statements' order. The similarity of two
 * fingerprints is the mean of the two Dice coefficients: 1 for the same
 * normalised statements, 0 for nothing in common.
 */
#ifndef CUDALAB_STUDENT_FINGERPRINT_H
#define CUDALAB_STUDENT_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#define FINGERPRINT_FLAG 0.8        /* the similarity from which a report flags a pair (cudalab
                                     * --similarity's default --threshold): disguised copies of a
                                     * built-in score above it, independent solutions below
                                     * (tests/unit/test_fingerprint.c) */
#define FINGERPRINT_K 5             /* tokens per k-gram */
#define FINGERPRINT_WINDOW 4        /* k-grams per winnowing window */

typedef struct fingerprint {
    uint64_t *statements;           /* the statements' hashes, sorted (a multiset) */
    size_t nstatements;
    uint64_t *grams;                /* the winnowed k-grams' hashes, sorted, distinct */
    size_t ngrams;
} fingerprint;

/* The fingerprint of a CUDA source (a %%kernel cell's body) into fp, which the
 * caller frees with fingerprint_free. 0, or -1 out of memory (fp then empty). */
int fingerprint_make(const char *source, fingerprint *fp);
void fingerprint_free(fingerprint *fp);

/* Removes from fp the statements and k-grams that base has (every copy): the
 * code every student was given (a starter cell's signature and scaffold), as
 * MOSS's base files, which would otherwise make every pair alike. */
void fingerprint_remove(fingerprint *fp, const fingerprint *base);

/* The similarity of a and b in [0, 1]: the mean of the Dice coefficients of
 * their statements (as multisets) and of their k-grams; 0 when either is empty. */
double fingerprint_similarity(const fingerprint *a, const fingerprint *b);

#endif
