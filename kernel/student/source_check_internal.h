/* source_check_internal.h — what the directive check (source_check.c) shares
 * with the inline-asm search (source_asm.c). Only kernel/student/ includes it.
 */
#ifndef CUDALAB_STUDENT_SOURCE_CHECK_INTERNAL_H
#define CUDALAB_STUDENT_SOURCE_CHECK_INTERNAL_H

#include <stdbool.h>

#include "student/source_check.h"

/* Fills r (the cell line, the reason) and returns -1. */
int source_refuse(source_refusal *r, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Whether c may start, or continue, an identifier. */
bool source_ident_start(char c);
bool source_ident_char(char c);

#endif
