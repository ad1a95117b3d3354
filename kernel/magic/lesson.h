/* lesson.h — the lesson checks of a student's kernel: check.lesson.<name> = {value, expected,
 * passed, line, why}, the figures of what a family's lecture teaches (tiles cut global loads,
 * privatised bins cut atomics, a convergent tree keeps warps whole, a halo is loaded once, a copy
 * reads consecutive floats), measured by the CPU runner's counted launch at the family's
 * quick-check size (kernel/student/lesson_run.c runs it) and compared with what the lesson's own
 * kernel gets for that launch. Pure arithmetic on that launch's counts, so that
 * tests/unit/test_lesson.c checks each figure without running a kernel.
 */
#ifndef CUDALAB_MAGIC_LESSON_H
#define CUDALAB_MAGIC_LESSON_H

#include <jansson.h>
#include <stdbool.h>

#include "cudalab/simt.h"

/* What the lesson run launched, and what its counted launch saw. */
typedef struct lesson_launch {
    const char *family;             /* the magic's name: "matmul" */
    int dim;                        /* the kernel's shape (2: %stencil --dim 2) */
    const cl_simt_lesson_taken *taken;  /* its counted launch: grid, block, buffers (their shapes are
                                           the sizes: A is m×k, a stencil's w has 2R+1 weights) */
} lesson_launch;

/* The lesson object {<name>: {value, expected, passed, line, why}} of l (a new reference), or
 * NULL for a family without lesson checks. */
json_t *lesson_figures(const lesson_launch *l);
/* On a GPU whose run was counted by its hardware (--counters through CUPTI, where profiling is
 * allowed): the counters that measure what a lesson check does, added to that check as
 * "gpu": {counter: value} (lesson changed in place; counters is the run's "counters" object). The
 * checks stay the CPU runner's: a GPU's counters cover the whole launch, not an instruction. */
void lesson_add_gpu_counters(json_t *lesson, const json_t *counters);
/* Whether every check of a lesson object passed. */
bool lesson_passed(const json_t *lesson);

#endif
