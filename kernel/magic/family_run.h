/* family_run.h — a timed family's command, whole: what every family's magic
 * does around its own points, so that a front-end declares what differs and
 * contains no control flow another family also needs.
 *
 * family_run() takes the command through its life in one order for every
 * family: --show-source (and --as-kernel), --sanitize, the backend (present,
 * and built with the family), the parameters (a copy the front-end may
 * resolve in place), the front-end's environment (prepare / release), then the
 * sweep over the points (sweep.h), whose run_point builds one run and its
 * check (check.h). The student layer is reached through its hooks
 * (student_hooks.h: sanitize, the flags only students' kernels honour), never
 * by #include from here.
 */
#ifndef CUDALAB_MAGIC_FAMILY_RUN_H
#define CUDALAB_MAGIC_FAMILY_RUN_H

#include <jansson.h>
#include <stddef.h>

#include "magic/families.h"
#include "magic/magic.h"
#include "magic/sweep.h"

typedef struct family_command {
    const family_spec *family;
    const family_spec *shown;       /* what --show-source shows where that is not the family's variants
                                       (%vecadd's operations); NULL: the family */
    const sweep_spec *sweep;
    /* The parameters the points read: NULL, a copy of the validated ones; else a new reference,
     * or NULL with the error in ctx (%histo turns --text into sizes). */
    json_t *(*params)(magic_ctx *ctx, const json_t *params, const char *body);
    /* The front-end's environment (FAMILY_ENV): its bytes, zeroed before prepare, and where it
     * keeps the first values of the flags only students' kernels honour (json_t *student_firsts:
     * a built-in variant runs at those alone), which family_run fills after prepare. */
    size_t env_size, firsts_at;
    const char *const *student_only; /* those flags; NULL: -D (--define) alone */
    /* Fills env from the parameters (resolving --variant and the like in p; given: the validated
     * parameters as the user gave them): 0, or -1 with the error in ctx; release then still runs.
     * NULL: nothing to prepare. */
    int (*prepare)(magic_ctx *ctx, const json_t *given, json_t *p, void *env);
    void (*release)(void *env);     /* frees what prepare made; NULL: nothing */
    /* The sweep itself where the family wraps sweep_run (%histo's bins); NULL: sweep_run. */
    int (*run_sweep)(magic_ctx *ctx, const sweep_spec *s, const json_t *p, void *env);
} family_command;

#define FAMILY_ENV(type) .env_size = sizeof(type), .firsts_at = offsetof(type, student_firsts)

/* Runs the command (a magic_spec's run with the family's declaration bound):
 * 0, 1 when a check failed (as sweep_run), or -1 with the error in ctx. */
int family_run(magic_ctx *ctx, const family_command *cmd, const json_t *params, const char *body);

#endif
