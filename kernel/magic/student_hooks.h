/* student_hooks.h — what the framework asks of students' kernels.
 *
 * kernel/student/ sits above the framework (it includes magic/ and lang/), so
 * nothing in kernel/magic/ includes it: the student layer fills this table and
 * registers it (student_hooks_register, where commands run: worker_exec). Left
 * unregistered, the framework asks nothing of students' kernels. A hook the
 * framework needs from student/ is one more field here.
 */
#ifndef CUDALAB_MAGIC_STUDENT_HOOKS_H
#define CUDALAB_MAGIC_STUDENT_HOOKS_H

#include <jansson.h>

#include "magic/magic.h"

struct family_spec;

typedef struct magic_student_hooks {
    /* racecheck's findings (compute-sanitizer, from its cache when it has run)
     * for the session's kernel NAME at a sweep's POINT, as a student_sanitize
     * result; NULL where there is nothing to ask (no shared memory, the CPU
     * runner, a sanitized process). */
    json_t *(*racecheck)(magic_ctx *ctx, const char *name, const json_t *point);
    /* --sanitize on a family's magic: compute-sanitizer's tools on the named kernels
     * (student_sanitize_command). */
    int (*sanitize)(magic_ctx *ctx, const struct family_spec *f, const json_t *params);
    /* The first values of the flags only students' kernels honour (keys, NULL-terminated): a
     * built-in variant runs at those alone (student_first_values); a new reference. */
    json_t *(*first_values)(const json_t *params, const char *const *keys);
    /* A student's kernel's run at point (run.source "student"): its check gets the lesson checks
     * (check.lesson) and the CPU runner's findings (check.tools["cpu-runner"]; on a GPU too). 0, or
     * -1 with the error in ctx where the CPU runner found something (KernelError, on any backend). */
    int (*lesson)(magic_ctx *ctx, json_t *run, const json_t *point);
} magic_student_hooks;

/* Registers the table (static storage, not copied); NULL unregisters. */
void magic_student_hooks_set(const magic_student_hooks *hooks);
/* The registered table: never NULL (an empty one when none is), its fields NULL where not given. */
const magic_student_hooks *magic_student(void);

#endif
