/* hooks.c — what the framework (kernel/magic/, below this layer) asks of
 * students' kernels, registered as its student_hooks table. */
#include <stdlib.h>
#include <string.h>

#include "magic/check.h"
#include "magic/lesson.h"
#include "magic/student_hooks.h"
#include "student/hooks.h"
#include "student/lesson_run.h"
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

/* The lesson checks and the CPU runner's findings of a student's kernel's run (student_hooks.h). */
static int lesson(magic_ctx *ctx, json_t *run, const json_t *point)
{
    const char *variant = json_string_value(json_object_get(run, "variant"));
    const char *source = json_string_value(json_object_get(run, "source"));
    json_t *check = json_object_get(run, "check");
    const student_def *d = variant ? student_find(ctx->lab, variant) : NULL;
    if (!d || !source || strcmp(source, "student") != 0 || !json_is_object(check) ||
        json_is_null(json_object_get(check, "passed")) || student_cpu_check_off(d, point))
        return 0;
    lesson_result r;
    if (student_lesson(ctx, d, point, &r) != 0)
        return -1;
    if (r.lesson) {
        lesson_add_gpu_counters(r.lesson, json_object_get(run, "counters"));
        json_object_set(check, "lesson", r.lesson);
    }
    bool failed = check_cpu_runner(check, r.found.ename, r.found.evalue, r.lines);
    if (failed) {
        ctx->error = r.found;
        json_decref(ctx->traceback);
        ctx->traceback = json_incref(r.lines);
    }
    lesson_result_free(&r);
    return failed ? -1 : 0;
}

static const magic_student_hooks hooks = {
    .racecheck = racecheck,
    .sanitize = student_sanitize_command,
    .first_values = student_first_values,
    .lesson = lesson,
};

void student_hooks_register(void)
{
    magic_student_hooks_set(&hooks);
}
