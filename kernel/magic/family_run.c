/* family_run.c — a timed family's command in one order for every family (family_run.h). */
#include <stdlib.h>

#include "magic/family_run.h"
#include "magic/show_source.h"
#include "magic/student_hooks.h"

/* The backend runs the family, or the error that says why not. */
static int backend_ready(magic_ctx *ctx, const family_spec *f)
{
    if (!ctx->backend)
        return magic_error(ctx, "RuntimeError", "%%%s runs in the device worker: no backend here", f->magic);
    if (!family_ops(f, ctx->backend))
        return magic_error(ctx, "RuntimeError", "the %s backend was built without %%%s (rebuild with %s)",
                           ctx->backend->name, f->magic, f->sources);
    return 0;
}

int family_run(magic_ctx *ctx, const family_command *cmd, const json_t *params, const char *body)
{
    const family_spec *f = cmd->family;
    int rc = show_source_run(ctx, params, cmd->shown ? cmd->shown : f);
    if (rc != 1)
        return rc;
    const magic_student_hooks *student = magic_student();
    if (json_is_true(json_object_get(params, "sanitize"))) {
        if (!student->sanitize)
            return magic_error(ctx, "RuntimeError", "--sanitize: students' kernels are not served here");
        return student->sanitize(ctx, f, params);
    }
    if (backend_ready(ctx, f) != 0 || family_students_runnable(ctx, f, params) != 0)
        return -1;
    json_t *p = cmd->params ? cmd->params(ctx, params, body) : json_deep_copy(params);
    if (!p)
        return ctx->error.ename[0] ? -1 : magic_error(ctx, "MemoryError", "out of memory");
    void *env = calloc(1, cmd->env_size ? cmd->env_size : 1);
    if (!env) {
        json_decref(p);
        return magic_error(ctx, "MemoryError", "out of memory");
    }
    rc = cmd->prepare ? cmd->prepare(ctx, params, p, env) : 0;
    static const char *const define_only[] = {"define", NULL};
    json_t **firsts = cmd->env_size >= cmd->firsts_at + sizeof(json_t *) ? (json_t **)((char *)env + cmd->firsts_at)
                                                                          : NULL;     /* an env without FAMILY_ENV */
    if (rc == 0 && firsts && student->first_values)
        *firsts = student->first_values(p, cmd->student_only ? cmd->student_only : define_only);
    if (rc == 0)
        rc = cmd->run_sweep ? cmd->run_sweep(ctx, cmd->sweep, p, env) : sweep_run(ctx, cmd->sweep, p, env);
    if (cmd->release)
        cmd->release(env);
    if (firsts)
        json_decref(*firsts);
    free(env);
    json_decref(p);
    return rc;
}
