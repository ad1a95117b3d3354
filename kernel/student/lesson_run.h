/* lesson_run.h — the lesson checks' run of a student's kernel (worker side): the family's quick
 * check on the CPU runner, whatever the backend, as one counted launch (cl_cpu_lesson_mode), its
 * figures (magic/lesson.h) and what the runner found, cached per source, options and launch so
 * that a repeated run costs nothing. On a GPU the same run is the kernel's bug parity: the CPU
 * runner's findings fail its check as they would on the CPU backend.
 */
#ifndef CUDALAB_STUDENT_LESSON_RUN_H
#define CUDALAB_STUDENT_LESSON_RUN_H

#include <jansson.h>
#include <stdbool.h>

#include "magic/magic.h"
#include "student/store.h"

typedef struct lesson_result {
    json_t *lesson;                 /* check.lesson (a new reference), or NULL: no lesson checks for the
                                       family, or no counted launch ran to its end */
    error_info found;               /* the CPU runner's error on the kernel (ename "" when none) */
    json_t *lines;                  /* and its lines (the findings), or NULL */
} lesson_result;

/* Whether the CPU runner's run is off for d at point: --no-cpu-check on the family's command or on
 * the %%kernel line (either turns it off). */
bool student_cpu_check_off(const student_def *d, const json_t *point);
/* The lesson run of d at point (the launch overrides a family's command gives: --tile, --block, -D,
 * --smem; NULL: none), from the cache when it has run. 0 with out filled, or -1 with the error in
 * ctx (the quick check's line does not parse). */
int student_lesson(magic_ctx *ctx, const student_def *d, const json_t *point, lesson_result *out);
void lesson_result_free(lesson_result *r);

#endif
