/* store.c — the session's student kernels (see store.h). */
#include "student/store.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"
#include "lang/lang.h"
#include "magic/sweep.h"
#include "student/compile.h"

#define NAME_MAX_BYTES 64

static student_def defs[FAMILY_MAX_RUNTIME];
static size_t ndefs;

static void def_free(student_def *d)
{
    free(d->name);
    free(d->source);
    json_decref(d->options);
    memset(d, 0, sizeof *d);
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

/* The definitions of the variants broken on purpose that have run in this process. */
static student_def shipped[FAMILY_MAX_RUNTIME];
static size_t nshipped;

static const student_def *shipped_find(const char *name)
{
    for (size_t i = 0; i < nshipped; i++)
        if (strcmp(shipped[i].name, name) == 0)
            return &shipped[i];
    size_t at = 0;
    const family_spec *f;
    const family_broken *b = NULL;
    while (!b && (f = family_next_taking_kernels(&at)))
        b = family_broken_find(f, name);
    if (!b || nshipped == FAMILY_MAX_RUNTIME)
        return NULL;
    /* the source's own lines: its line 1 is the kernel's line 1, as --show-source shows it */
    student_def d = { (char *)b->v.name, f, (char *)b->source, json_pack("{s:i}", "first_line", 1), "",
                      student_uses_tile(b->source), 1, f->student, f->quick, b };
    sha256_hex(d.source, strlen(d.source), d.hash);
    shipped[nshipped] = d;
    return &shipped[nshipped++];
}

const student_def *student_find(const char *name)
{
    for (size_t i = 0; name && i < ndefs; i++)
        if (strcmp(defs[i].name, name) == 0)
            return &defs[i];
    return name ? shipped_find(name) : NULL;
}

size_t student_count(void)
{
    return ndefs;
}

const student_def *student_at(size_t i)
{
    return i < ndefs ? &defs[i] : NULL;
}

int student_room(magic_ctx *ctx, const char *name)
{
    if (ndefs < FAMILY_MAX_RUNTIME || student_find(name))
        return 0;
    return magic_error(ctx, "UsageError", "a session holds at most %d kernels of its own, and this one has %d: "
                       "give this cell the --name of one of them to replace it (%%kernels lists them), or restart "
                       "the kernel to start over", FAMILY_MAX_RUNTIME, FAMILY_MAX_RUNTIME);
}

/* Re-registers every kernel's variant: the family registry mirrors the store. */
static int reregister(magic_ctx *ctx)
{
    family_forget_runtime();
    for (size_t i = 0; i < ndefs; i++) {
        char teaches[160];
        snprintf(teaches, sizeof teaches, "your kernel (%%%%kernel, source sha256 %.12s)", defs[i].hash);
        cl_variant v = { defs[i].name, defs[i].contract->launch, teaches,
                         CL_V_BLOCK | (defs[i].tiled ? CL_V_TILE : 0) };
        if (family_register(ctx, defs[i].family, &v) != 0)
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
    student_def *d = (student_def *)student_find(name);
    const json_t *dim = json_object_get(options, "dim");
    int shape = json_is_integer(dim) ? (int)json_integer_value(dim) : 1;
    if (shape == 2 && !f->student_2d)
        return magic_error(ctx, "UsageError", "--dim 2: kernels for %%%s are one-dimensional (%%stencil takes "
                           "2D kernels)", f->magic);
    student_def fresh = { strdup(name), f, strdup(source), json_deep_copy(options), "", student_uses_tile(source),
                          shape, shape == 2 ? f->student_2d : f->student, shape == 2 ? f->quick_2d : f->quick, NULL };
    if (!fresh.name || !fresh.source || !fresh.options) {
        def_free(&fresh);
        return magic_error(ctx, "MemoryError", "out of memory");
    }
    sha256_hex(source, strlen(source), fresh.hash);
    if (d)
        def_free(d);
    else
        d = &defs[ndefs++];
    *d = fresh;
    return reregister(ctx);
}

void student_drop(const char *name)
{
    student_def *d = (student_def *)student_find(name);
    if (!d)
        return;
    def_free(d);
    *d = defs[--ndefs];
    magic_ctx quiet = {0};
    reregister(&quiet);
}

/* Forgets every kernel. */
static void student_forget_all(void)
{
    for (size_t i = 0; i < ndefs; i++)
        def_free(&defs[i]);
    ndefs = 0;
    family_forget_runtime();
}

int student_attach(magic_ctx *ctx, const command *cmd, json_t **kernels)
{
    *kernels = NULL;
    const json_t *given = json_object_get(cmd->params, "variant");
    json_t *list = given ? sweep_as_list(given) : NULL;
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        const student_def *d = student_find(json_string_value(v));
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
    student_forget_all();
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
