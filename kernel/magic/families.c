/* families.c — variants of a family as the framework serves them (families.h):
 * the contract's table plus the variants registered at run time, --variant's
 * choices, selection with `all`, and the one memory-fit refusal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "base/utf8.h"
#include "magic/families.h"
#include "magic/lab_session.h"
#include "magic/sweep.h"

const family_spec *family_of_magic(const magic_spec *m)
{
    for (const flag_spec *f = m ? m->flags : NULL; f && f->name; f++)
        if (f->family)
            return f->family;
    return NULL;
}

const family_spec *family_find(const char *magic)
{
    return family_of_magic(magic_find(magic));
}

const family_spec *family_next_taking_kernels(size_t *at)
{
    size_t count;
    const magic_spec *const *all = magic_all(&count);
    while (*at < count) {
        const family_spec *f = family_of_magic(all[(*at)++]);
        if (f && f->student)
            return f;
    }
    return NULL;
}

/* ---- variants registered at run time: the session's part LAB_VARIANTS ---- */

typedef struct runtime_variant {
    const family_spec *family;
    cl_variant v;                   /* strings owned */
} runtime_variant;

typedef struct runtime_variants {
    runtime_variant at[FAMILY_MAX_RUNTIME];
    size_t n;
} runtime_variants;

static void runtime_free(runtime_variant *r)
{
    free((char *)r->v.name);
    free((char *)r->v.launch);
    free((char *)r->v.teaches);
}

static void runtime_drop(void *part)
{
    runtime_variants *rt = part;
    for (size_t k = 0; k < rt->n; k++)
        runtime_free(&rt->at[k]);
    rt->n = 0;
}

/* The session's run-time variants, or NULL where it has none yet. */
static const runtime_variants *runtime_of(const lab_session *lab)
{
    return lab_part(lab, LAB_VARIANTS);
}

static size_t broken_count(const family_spec *f)
{
    size_t n = 0;
    while (f->broken && f->broken[n].v.name)
        n++;
    return n;
}

size_t family_count(const lab_session *lab, const family_spec *f)
{
    size_t n = f->nvariants + broken_count(f);
    const runtime_variants *rt = runtime_of(lab);
    for (size_t i = 0; rt && i < rt->n; i++)
        n += rt->at[i].family == f;
    return n;
}

const cl_variant *family_variant(const lab_session *lab, const family_spec *f, size_t i)
{
    if (i < f->nvariants)
        return &f->variants[i];
    i -= f->nvariants;
    if (i < broken_count(f))
        return &f->broken[i].v;
    i -= broken_count(f);
    const runtime_variants *rt = runtime_of(lab);
    for (size_t k = 0; rt && k < rt->n; k++)
        if (rt->at[k].family == f && i-- == 0)
            return &rt->at[k].v;
    return NULL;
}

int family_index(const lab_session *lab, const family_spec *f, const char *name)
{
    const cl_variant *v;
    for (size_t i = 0; name && (v = family_variant(lab, f, i)); i++)
        if (strcmp(v->name, name) == 0)
            return (int)i;
    return -1;
}

const family_broken *family_broken_find(const family_spec *f, const char *name)
{
    for (size_t i = 0; name && f->broken && f->broken[i].v.name; i++)
        if (strcmp(f->broken[i].v.name, name) == 0)
            return &f->broken[i];
    return NULL;
}

int family_builtin(const family_spec *f, const char *name)
{
    for (size_t i = 0; name && i < f->nvariants; i++)
        if (strcmp(f->variants[i].name, name) == 0)
            return (int)i;
    return -1;
}

int family_point_variant(magic_ctx *ctx, const family_spec *f, const json_t *point)
{
    const char *name = json_string_value(json_object_get(point, "variant"));
    int v = family_builtin(f, name);
    if (v < 0)
        magic_error(ctx, "RuntimeError", "%%%s has no built-in variant '%s'", f->magic, name ? name : "?");
    return v;
}

int family_register(magic_ctx *ctx, const family_spec *f, const cl_variant *v)
{
    if (strcmp(v->name, "all") == 0 || family_builtin(f, v->name) >= 0 || family_broken_find(f, v->name))
        return magic_error(ctx, "UsageError", "'%s': %%%s already has a variant of that name "
                           "(choose another)", v->name, f->magic);
    runtime_variants *rt = lab_part_make(ctx->lab, LAB_VARIANTS, sizeof *rt, runtime_drop);
    if (!rt)
        return magic_error(ctx, "MemoryError", "out of memory");
    runtime_variant *slot = NULL;
    for (size_t k = 0; k < rt->n && !slot; k++)
        if (rt->at[k].family == f && strcmp(rt->at[k].v.name, v->name) == 0)
            slot = &rt->at[k];
    if (slot)
        runtime_free(slot);
    else if (rt->n == FAMILY_MAX_RUNTIME)
        return magic_error(ctx, "UsageError", "this session already has %d kernels of its own; "
                           "restart the kernel to start over", FAMILY_MAX_RUNTIME);
    else
        slot = &rt->at[rt->n++];
    slot->family = f;
    slot->v = (cl_variant){strdup(v->name), strdup(v->launch ? v->launch : ""),
                           strdup(v->teaches ? v->teaches : ""), v->flags | CL_V_RUNTIME};
    if (!slot->v.name || !slot->v.launch || !slot->v.teaches) {
        runtime_free(slot);
        *slot = rt->at[--rt->n];
        return magic_error(ctx, "MemoryError", "out of memory");
    }
    return 0;
}

void family_forget_runtime(lab_session *lab)
{
    runtime_variants *rt = lab_part(lab, LAB_VARIANTS);
    if (rt)
        runtime_drop(rt);
}

const char *flag_choice(const lab_session *lab, const flag_spec *fl, size_t i)
{
    if (!fl->family) {
        for (size_t k = 0; fl->choices && fl->choices[k]; k++)
            if (k == i)
                return fl->choices[k];
        return NULL;
    }
    size_t n = family_count(lab, fl->family);
    return i < n ? family_variant(lab, fl->family, i)->name : i == n ? "all" : NULL;
}

/* ---- --variant ---- */

bool family_list_has(const json_t *list, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
        if (strcmp(json_string_value(v), name) == 0)
            return true;
    return false;
}

/* "naive, tiled, fast": what the backend has, for an error. */
static void available_text(const lab_session *lab, const family_spec *f, variant_available_fn available,
                           void *user, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    const cl_variant *v;
    for (size_t i = 0; (v = family_variant(lab, f, i)) && used < len; i++)
        if (available(v, i, user))
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", v->name);
    utf8_trim(buf);
}

/* The default: the contract's rows, which every backend of the family
 * implements, and students' kernels (the caller has refused them already where
 * the backend cannot run them: student_refuse_backend). */
static bool contract_or_named(const cl_variant *v, size_t index, void *user)
{
    return index < ((const family_spec *)user)->nvariants || (v->flags & CL_V_RUNTIME);
}

json_t *family_select(magic_ctx *ctx, const family_spec *f, const json_t *given,
                      variant_available_fn available, void *user, const char *backend)
{
    if (!available)
        available = contract_or_named, user = (void *)f;
    json_t *list = sweep_as_list(given), *out = json_array();
    size_t i;
    json_t *g;
    json_array_foreach(list, i, g) {
        const char *name = json_string_value(g);
        const cl_variant *v;
        if (name && strcmp(name, "all") == 0) {
            /* every built-in variant: a student's kernel, or one broken on purpose, runs when named */
            for (size_t k = 0; (v = family_variant(ctx->lab, f, k)); k++)
                if (!(v->flags & (CL_V_RUNTIME | CL_V_BROKEN)) && available(v, k, user) &&
                    !family_list_has(out, v->name))
                    json_array_append_new(out, json_string(v->name));
            continue;
        }
        int at = family_index(ctx->lab, f, name);
        if (at < 0 || !available(family_variant(ctx->lab, f, (size_t)at), (size_t)at, user)) {
            char have[512];
            available_text(ctx->lab, f, available, user, have, sizeof have);
            magic_error(ctx, "UsageError", at < 0 ? "unknown --variant '%s' (%s has: %s)"
                        : "--variant %s is not available on the %s backend (it has: %s)",
                        name ? name : "?", at < 0 ? f->magic : backend, have);
            json_decref(list);
            json_decref(out);
            return NULL;
        }
        if (!family_list_has(out, name))
            json_array_append_new(out, json_string(name));
    }
    json_decref(list);
    return out;
}

/* ---- memory ---- */

int magic_memory_fit(magic_ctx *ctx, const mem_need *n)
{
    char need[48], have[48];
    format_bytes(n->bytes, need, sizeof need);
    double most = 0;
    /* a shared GPU: what fits beside the other commands' reservations is waited for, not refused for
     * what they hold now; what could never fit is refused at once */
    int r = ctx->share.reserve && strcmp(n->where, "device") == 0 ? ctx->share.reserve(ctx, n->bytes, &most) : 2;
    if (r == 0)
        return 0;
    if (r < 0) {
        /* the wait's own error (a copy: the message is written again into ctx, naming what waited) */
        error_info why = ctx->error;
        if (!why.ename[0])
            error_set(&why, "KeyboardInterrupt", "interrupted while waiting for it");
        return magic_error(ctx, why.ename, "%s: %s of device memory: %s", n->what, need, why.evalue);
    }
    if (r == 1) {
        format_bytes(most, have, sizeof have);
        return magic_error(ctx, "MemoryError", "%s needs %s of device memory%s%s%s; this device has %s for one "
                           "command (90%% of its memory less a context, or CUDALAB_GPU_MEMORY_GIB)%s%s%s", n->what, need,
                           n->holds ? " (" : "", n->holds ? n->holds : "", n->holds ? ")" : "", have,
                           n->largest ? " (" : "", n->largest ? n->largest : "", n->largest ? ")" : "");
    }
    if (n->free <= 0 || n->bytes <= n->free)
        return 0;
    format_bytes(n->free, have, sizeof have);
    return magic_error(ctx, "MemoryError", "%s needs %s of %s memory%s%s%s; this %s has %s free%s%s%s",
                       n->what, need, n->where, n->holds ? " (" : "", n->holds ? n->holds : "",
                       n->holds ? ")" : "", n->where, have, n->largest ? " (" : "",
                       n->largest ? n->largest : "", n->largest ? ")" : "");
}

uint64_t fit_largest(double (*bytes)(uint64_t n, const void *arg), const void *arg, double room,
                     uint64_t hi)
{
    uint64_t lo = 0;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (bytes(mid, arg) <= room)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

const void *family_ops(const family_spec *f, const cl_backend *b)
{
    return b && f->ops_at ? *(const void *const *)((const char *)b + f->ops_at) : NULL;
}

bool family_runs_student(const family_spec *f, const cl_backend *b)
{
    const void *ops = family_ops(f, b);
    return ops && *(const bool *)((const char *)ops + f->runs_student_at);
}

int family_refuse_student(magic_ctx *ctx, const char *name)
{
    return magic_error(ctx, "UsageError", "%s is your kernel: it runs on a GPU, and this worker runs on the %s "
                       "backend%s%s (%%%%kernel still compiles it and reports its registers and shared memory)",
                       name, ctx->backend ? ctx->backend->name : "?",
                       ctx->dev.note && *ctx->dev.note ? ": " : "",
                       ctx->dev.note ? ctx->dev.note : "");
}

int family_students_runnable(magic_ctx *ctx, const family_spec *f, const json_t *params)
{
    if (family_runs_student(f, ctx->backend))
        return 0;
    const json_t *given = json_object_get(params, "variant");
    for (size_t i = 0; i < (json_is_array(given) ? json_array_size(given) : 1); i++) {
        const char *name = json_string_value(json_is_array(given) ? json_array_get(given, i) : given);
        int id = name ? family_index(ctx->lab, f, name) : -1;
        if (id >= 0 && (family_variant(ctx->lab, f, (size_t)id)->flags & CL_V_RUNTIME))
            return family_refuse_student(ctx, name);
    }
    return 0;
}
