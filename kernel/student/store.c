/* store.c — the session's student kernels (see store.h). */
#include "student/store.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"
#include "lang/lang.h"
#include "magic/show_source.h"
#include "magic/sweep.h"
#include "student/compile.h"

#define NAME_MAX_BYTES 64

/* The session's part LAB_KERNELS: the student's definitions, and those of the
 * variants broken on purpose that have run in the session (made on first use
 * from the family's row: their name and source are the row's, borrowed). */
typedef struct student_store {
    student_def defs[FAMILY_MAX_RUNTIME];
    size_t ndefs;
    student_def shipped[FAMILY_MAX_RUNTIME];
    size_t nshipped;
} student_store;

static void def_free(student_def *d)
{
    free(d->name);
    free(d->source);
    json_decref(d->options);
    memset(d, 0, sizeof *d);
}

static void store_drop(void *part)
{
    student_store *st = part;
    for (size_t i = 0; i < st->ndefs; i++)
        def_free(&st->defs[i]);
    for (size_t i = 0; i < st->nshipped; i++)
        json_decref(st->shipped[i].options);
    st->ndefs = st->nshipped = 0;
}

/* The session's store, made on first use; NULL when out of memory (or no session). */
static student_store *store_of(lab_session *lab)
{
    return lab_part_make(lab, LAB_KERNELS, sizeof(student_store), store_drop);
}

/* The store where the session has one already, else NULL: what only reads needs. */
static const student_store *store_if_any(const lab_session *lab)
{
    return lab_part(lab, LAB_KERNELS);
}

int student_name_ok(magic_ctx *ctx, const family_spec *f, const char *name)
{
    size_t n = name ? strlen(name) : 0;
    bool ident = n > 0 && n <= NAME_MAX_BYTES && (isalpha((unsigned char)name[0]) || name[0] == '_');
    for (size_t i = 1; ident && i < n; i++)
        ident = isalnum((unsigned char)name[i]) || name[i] == '_';
    if (!ident)
        return magic_error(ctx, "UsageError", "--name '%.*s': a kernel's name is a C identifier of at most "
                           "%d characters", NAME_MAX_BYTES, name ? name : "", NAME_MAX_BYTES);
    if (strcmp(name, "all") == 0 || family_builtin(f, name) >= 0 || family_broken_find(f, name))
        return magic_error(ctx, "UsageError", "--name %s: %%%s has a variant of that name already (%s); "
                           "choose another name for your kernel", name, f->magic,
                           strcmp(name, "all") == 0 ? "`all` runs every built-in variant"
                           : family_broken_find(f, name) ? "one broken on purpose" : "a built-in one");
    return 0;
}

static const student_def *shipped_find(lab_session *lab, const char *name)
{
    const student_store *had = store_if_any(lab);
    for (size_t i = 0; had && i < had->nshipped; i++)
        if (strcmp(had->shipped[i].name, name) == 0)
            return &had->shipped[i];
    size_t at = 0;
    const family_spec *f;
    const family_broken *b = NULL;
    while (!b && (f = family_next_taking_kernels(&at)))
        b = family_broken_find(f, name);
    student_store *st = b ? store_of(lab) : NULL;
    if (!st || st->nshipped == FAMILY_MAX_RUNTIME)
        return NULL;
    /* the source's own lines: its line 1 is the kernel's line 1, as --show-source shows it */
    student_def d = { (char *)b->v.name, f, (char *)b->source, json_pack("{s:i}", "first_line", 1), "",
                      student_uses_tile(b->source), 1, f->student, f->quick, b };
    sha256_hex(d.source, strlen(d.source), d.hash);
    st->shipped[st->nshipped] = d;
    return &st->shipped[st->nshipped++];
}

/* The student's own kernel of that name, or NULL. */
static student_def *own_find(lab_session *lab, const char *name)
{
    student_store *st = lab_part(lab, LAB_KERNELS);
    for (size_t i = 0; st && name && i < st->ndefs; i++)
        if (strcmp(st->defs[i].name, name) == 0)
            return &st->defs[i];
    return NULL;
}

const student_def *student_find(lab_session *lab, const char *name)
{
    const student_def *d = own_find(lab, name);
    return d ? d : name ? shipped_find(lab, name) : NULL;
}

size_t student_count(const lab_session *lab)
{
    const student_store *st = store_if_any(lab);
    return st ? st->ndefs : 0;
}

const student_def *student_at(const lab_session *lab, size_t i)
{
    return i < student_count(lab) ? &store_if_any(lab)->defs[i] : NULL;
}

int student_room(magic_ctx *ctx, const char *name)
{
    if (student_count(ctx->lab) < FAMILY_MAX_RUNTIME || own_find(ctx->lab, name))
        return 0;
    return magic_error(ctx, "UsageError", "a session holds at most %d kernels of its own, and this one has %d: "
                       "give this cell the --name of one of them to replace it (%%kernels lists them), or restart "
                       "the kernel to start over", FAMILY_MAX_RUNTIME, FAMILY_MAX_RUNTIME);
}

/* Re-registers every kernel's variant: the session's family registry mirrors its store. */
static int reregister(magic_ctx *ctx)
{
    family_forget_runtime(ctx->lab);
    for (size_t i = 0; i < student_count(ctx->lab); i++) {
        const student_def *d = student_at(ctx->lab, i);
        char teaches[160];
        snprintf(teaches, sizeof teaches, "your kernel (%%%%kernel, source sha256 %.12s)", d->hash);
        cl_variant v = { d->name, d->contract->launch, teaches, CL_V_BLOCK | (d->tiled ? CL_V_TILE : 0) };
        if (family_register(ctx, d->family, &v) != 0)
            return -1;
    }
    return 0;
}

int student_define(magic_ctx *ctx, const family_spec *f, const char *name, const char *source,
                   const json_t *options)
{
    if (student_name_ok(ctx, f, name) != 0)
        return -1;
    if (student_room(ctx, name) != 0)
        return -1;
    student_store *st = store_of(ctx->lab);
    if (!st)
        return magic_error(ctx, "MemoryError", "out of memory");
    student_def *d = own_find(ctx->lab, name);
    const json_t *dim = json_object_get(options, "dim");
    int shape = json_is_integer(dim) ? (int)json_integer_value(dim) : 1;
    if (shape == 2 && !f->student_2d)
        return magic_error(ctx, "UsageError", "--dim 2: kernels for %%%s are one-dimensional (%%stencil takes "
                           "2D kernels)", f->magic);
    bool bt = json_is_true(json_object_get(options, "bt"));
    if (bt && !f->student_bt)
        return magic_error(ctx, "UsageError", "--bt: kernels for %%%s take their inputs as they are (%%matmul "
                           "kernels take B transposed)", f->magic);
    const cl_student_contract *contract = shape == 2 ? f->student_2d : bt ? f->student_bt : f->student;
    student_def fresh = { strdup(name), f, strdup(source), json_deep_copy(options), "", student_uses_tile(source),
                          shape, contract, shape == 2 ? f->quick_2d : f->quick, NULL };
    if (!fresh.name || !fresh.source || !fresh.options) {
        def_free(&fresh);
        return magic_error(ctx, "MemoryError", "out of memory");
    }
    sha256_hex(source, strlen(source), fresh.hash);
    if (d)
        def_free(d);
    else
        d = &st->defs[st->ndefs++];
    *d = fresh;
    return reregister(ctx);
}

void student_drop(lab_session *lab, const char *name)
{
    student_def *d = own_find(lab, name);
    if (!d)
        return;
    student_store *st = store_of(lab);
    def_free(d);
    *d = st->defs[--st->ndefs];
    magic_ctx quiet = { .lab = lab };
    reregister(&quiet);
    json_decref(quiet.traceback);
}

/* Forgets every kernel of the session. */
static void student_forget_all(lab_session *lab)
{
    student_store *st = lab_part(lab, LAB_KERNELS);
    for (size_t i = 0; st && i < st->ndefs; i++)
        def_free(&st->defs[i]);
    if (st)
        st->ndefs = 0;
    family_forget_runtime(lab);
}

int student_attach(magic_ctx *ctx, const command *cmd, json_t **kernels)
{
    *kernels = NULL;
    if (show_source_refusal(ctx, cmd->params, cmd->magic->name) != 0)
        return -1;
    const json_t *given = json_object_get(cmd->params, "variant");
    json_t *list = given ? sweep_as_list(given) : NULL;
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        const student_def *d = student_find(ctx->lab, json_string_value(v));
        if (!d || d->broken)
            continue;               /* the worker has the broken ones of its own */
        if (!*kernels)
            *kernels = json_object();
        json_object_set_new(*kernels, d->name, json_pack("{s:s, s:s, s:O}", "for", d->family->magic,
                                                        "source", d->source, "options", d->options));
    }
    json_decref(list);
    return 0;
}

int student_install(magic_ctx *ctx, const json_t *kernels)
{
    student_forget_all(ctx->lab);
    const char *name;
    json_t *k;
    json_object_foreach((json_t *)kernels, name, k) {
        const family_spec *f = family_find(json_string_value(json_object_get(k, "for")));
        const char *source = json_string_value(json_object_get(k, "source"));
        if (!f || !f->student || !source)
            return magic_error(ctx, "InternalError", "the definition of kernel %s did not reach the worker whole",
                               name);
        if (student_define(ctx, f, name, source, json_object_get(k, "options")) != 0)
            return -1;
    }
    return 0;
}
