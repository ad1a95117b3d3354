/* splice.h — a source with edits spliced in (splice.c), every line keeping
 * its number so that the compiler's diagnostics and __LINE__ still name the
 * cell's lines; the __shared__ rewrite (shared_rewrite.c) writes its output
 * with it. Only kernel/student/ includes it.
 */
#ifndef CUDALAB_STUDENT_SPLICE_H
#define CUDALAB_STUDENT_SPLICE_H

#include <stddef.h>

#include "student/cuda_lex.h"

typedef struct splice_edit {
    size_t at, end;             /* the source range replaced (its newlines are kept) */
    char *text;                 /* what stands in its place, on its first line */
    char *after;                /* whole lines to insert once its line has ended (#define …), or NULL */
} splice_edit;

/* The source s (lexed into lx: where its lines of code end) with the edits,
 * in source order and not overlapping, in place; after a line that has an
 * edit's lines to insert, a #line directive names file and the next line
 * (first_line is the source's first). A malloc'ed string, or NULL out of memory. */
char *splice_edits(const char *s, const lexed *lx, const splice_edit *edits, size_t nedits, int first_line,
                   const char *file);

#endif
