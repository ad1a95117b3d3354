/* store.h — the session's student kernels: what each %%kernel cell defined.
 *
 * The kernel process keeps the definitions (source and the %%kernel line's
 * options) in its session (magic/lab_session.h, the part LAB_KERNELS) for the
 * session's life: they survive a worker that faulted and restarted. Each is
 * also a variant of its family in the session (family_register), so the
 * family magic's parser, completion and %help know it at once. A command that
 * names student kernels carries their definitions to the worker
 * (student_attach, the magic's attach hook), where student_install makes the
 * worker's session's store and registry the same; the worker compiles through
 * its session's cache.
 */
#ifndef CUDALAB_STUDENT_STORE_H
#define CUDALAB_STUDENT_STORE_H

#include <jansson.h>
#include <stdbool.h>

#include "magic/families.h"
#include "magic/magic.h"

typedef struct student_def {
    char *name;
    const family_spec *family;
    char *source;
    json_t *options;                /* the %%kernel line's params (for, name, block, define, ...) */
    char hash[65];                  /* sha256 of the source */
    bool tiled;                     /* the source uses TILE: --tile sets it */
    int dim;                        /* the %%kernel line's --dim: 2 for a family's 2D shape */
    const cl_student_contract *contract;    /* what it implements: its family's, of its --dim or --bt */
    const char *quick;              /* the family magic's flags of its quick check (family_spec.quick) */
    const family_broken *broken;    /* a variant broken on purpose, shipped with cudalab (not the
                                       student's: never in the store's list), or NULL */
} student_def;

/* The functions that take a magic_ctx act on its session, ctx->lab. */

/* Defines (or redefines) a kernel and registers its variant. 0, or -1 with
 * the error in ctx (a built-in's name, `all`, --dim 2 for a family without a
 * 2D shape, the store full). */
int student_define(magic_ctx *ctx, const family_spec *f, const char *name, const char *source,
                   const json_t *options);
/* Whether the store has room for a kernel named name (a new one, or one it
 * holds: redefined in place). 0, or -1 with the error in ctx naming the limit
 * (FAMILY_MAX_RUNTIME kernels a session). */
int student_room(magic_ctx *ctx, const char *name);
/* Forgets one kernel of the session (its variant too); no-op when unknown. */
void student_drop(lab_session *lab, const char *name);
/* A student's kernel of the session by name, or a variant broken on purpose
 * (its definition made on first use and kept for the session's life), or NULL. */
const student_def *student_find(lab_session *lab, const char *name);
size_t student_count(const lab_session *lab);
const student_def *student_at(const lab_session *lab, size_t i);

/* The definitions of the student kernels a family command's --variant names,
 * {"name": {"for", "source", "options"}}, or NULL when it names none. The
 * attach hook of every family magic (magic.h), which also refuses
 * --show-source for a family the session's assignment grades
 * (show_source_refusal: the worker's session does not know a notebook's
 * %assignment). */
int student_attach(magic_ctx *ctx, const struct command *cmd, json_t **kernels);
/* Worker side: the store becomes exactly `kernels` (NULL: empty). 0, or -1 with the error in ctx. */
int student_install(magic_ctx *ctx, const json_t *kernels);

/* The name rule: a C identifier of at most 64 bytes that is not a built-in
 * or broken variant of f nor `all`. 0, or -1 with a UsageError. */
int student_name_ok(magic_ctx *ctx, const family_spec *f, const char *name);

#endif
