/* hooks.c — what the framework (kernel/magic/, below this layer) asks of
 * students' kernels, registered as its student_hooks table. */
#include <stdlib.h>
#include <string.h>

#include "magic/student_hooks.h"
#include "student/hooks.h"
#include "student/run.h"
#include "student/sanitize.h"
#include "student/store.h"

/* racecheck of a broken kernel at its quick-check size, from the cache when it
 * has run before: what the GPU did not show in a sweep's run. */
static json_t *racecheck(magic_ctx *ctx, const char *name, const json_t *point)
{
    if (getenv(SANITIZE_ENV) || (ctx->backend && strcmp(ctx->backend->name, "cpu") == 0))
        return NULL;
    const student_def *d = student_find(ctx->lab, name);
    const json_t *tile = json_object_get(point, "tile");
    student_launch sl;
    if (student_prepare(ctx, d, point, json_is_integer(tile) ? (int)json_integer_value(tile) : 0, &sl) != 0) {
        error_clear(&ctx->error);
        return NULL;
    }
    json_t *r = student_racecheck_cached(d, sl.build.key);
    student_launch_free(&sl);
    return r;
}

static const magic_student_hooks hooks = {
    .racecheck = racecheck,
    .sanitize = student_sanitize_command,
    .first_values = student_first_values,
};

void student_hooks_register(void)
{
    magic_student_hooks_set(&hooks);
}
