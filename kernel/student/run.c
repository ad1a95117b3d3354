/* run.c — a student's kernel for one point of its family's sweep (see run.h). */
#include "student/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "student/lesson_run.h"

static const json_t *given(const json_t *point, const json_t *line, const char *key)
{
    const json_t *v = json_object_get(point, key);
    return v && !json_is_null(v) ? v : json_object_get(line, key);
}

static int int_or(const json_t *v, int fallback)
{
    return json_is_integer(v) ? (int)json_integer_value(v) : fallback;
}

int student_target_cc(const cl_backend *b, int dev, bool *modelled)
{
    cl_device_props p;
    char err[CL_ERR_LEN];
    memset(&p, 0, sizeof p);
    *modelled = !b || strcmp(b->name, "cpu") == 0 || b->device_props(dev, &p, err) != 0 || p.cc_major <= 0;
    return *modelled ? 90 : p.cc_major * 10 + p.cc_minor;
}

/* Adds "NAME=VALUE" to defines, replacing an earlier value of NAME. */
static void define(json_t *defines, const char *text)
{
    size_t n = strcspn(text, "=");
    size_t i;
    json_t *d;
    json_array_foreach(defines, i, d) {
        const char *s = json_string_value(d);
        if (strncmp(s, text, n) == 0 && (s[n] == '=' || s[n] == '\0')) {
            json_array_set_new(defines, i, json_string(text));
            return;
        }
    }
    json_array_append_new(defines, json_string(text));
}

/* The compile options of a kernel for one point: the %%kernel line's, with the
 * point's (STUDENT_RUN_FLAGS) on top, and -D TILE=tile when tile > 0. defines
 * is a new array the caller frees. */
static student_options student_options_for(const student_def *d, const json_t *point, int tile, json_t **defines)
{
    const json_t *line = d->options;
    *defines = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(line, "define"), i, v)
        define(*defines, json_string_value(v));
    const char *pd = json_string_value(json_object_get(point, "define"));
    if (pd)
        define(*defines, pd);
    if (tile > 0) {
        char t[32];
        snprintf(t, sizeof t, "TILE=%d", tile);
        define(*defines, t);
    }
    student_options o = {
        *defines,
        int_or(given(point, line, "maxrregcount"), 0),
        int_or(given(point, line, "opt_level"), -1),
        json_is_true(json_object_get(point, "fast_math")) || json_is_true(json_object_get(line, "fast_math")),
    };
    return o;
}

/* [x] or [x, y] or [x, y, z] into out, missing dimensions 1; all 0 when v is not dimensions. */
static void dims_into(const json_t *v, int out[3])
{
    if (json_is_array(v) && json_is_array(json_array_get(v, 0)))
        v = json_array_get(v, 0);   /* a list flag's one value (a magic that does not sweep it: %grid) */
    for (int i = 0; i < 3; i++)
        out[i] = !json_is_array(v) ? 0 : i < (int)json_array_size(v) ? (int)json_integer_value(json_array_get(v, i)) : 1;
}

static double limit_ms(void)
{
    const char *e = getenv(STUDENT_LIMIT_ENV);
    double s = e && *e ? strtod(e, NULL) : 0;
    return (s > 0 ? s : STUDENT_LIMIT_DEFAULT_S) * 1e3;
}

int student_prepare(magic_ctx *ctx, const student_def *d, const json_t *point, int tile, student_launch *out)
{
    memset(out, 0, sizeof *out);
    out->def = d;
    out->point = json_incref((json_t *)point);
    json_t *defines;
    student_options o = student_options_for(d, point, d->tiled ? tile : 0, &defines);
    bool modelled;
    int cc = student_target_cc(ctx->backend, ctx->dev.index, &modelled);
    student_source src = { d->name, d->family->magic, d->contract, d->source,
                           int_or(json_object_get(d->options, "first_line"), 2) };
    int rc = student_compile(ctx, &src, &o, cc, &out->build);
    if (rc != 0) {
        json_decref(defines);
        student_launch_free(out);
        return -1;
    }
    cl_student_kernel *k = &out->kernel;
    k->name = d->name;
    k->hash = out->build.key;
    k->image = out->build.cubin;
    k->image_bytes = out->build.cubin_bytes;
    k->entry = out->build.lowered;
    k->flags = d->contract->flags;
    const json_t *block = given(point, d->options, "block");
    if (json_is_array(block))
        dims_into(block, k->block);
    else if (d->tiled && tile > 0 && (d->contract->flags & CL_V_TILE))
        k->block[0] = k->block[1] = tile, k->block[2] = 1;
    else
        memcpy(k->block, d->contract->block, sizeof k->block);
    dims_into(given(point, d->options, "grid"), k->grid);
    const json_t *smem = given(point, d->options, "smem");
    k->dyn_smem = (size_t)int_or(smem, 0);
    k->dyn_smem_given = json_is_integer(smem);
    k->limit_ms = limit_ms();
    k->diagnosis = out->diagnosis;
    k->diagnosis_len = sizeof out->diagnosis;
    if (ctx->backend && strcmp(ctx->backend->name, "cpu") == 0) {
        /* no GPU: the same source, checked by NVRTC above, runs on the CPU runner */
        if (host_build_runner(ctx, &src, &o, &out->host) != 0) {
            json_decref(defines);
            student_launch_free(out);
            return -1;
        }
        k->host_runner = out->host.runner;
        k->host_object = out->host.path;
        k->host_one_process = out->host.one_process;
        k->sandbox = out->sandbox;
        k->sandbox_len = sizeof out->sandbox;
    }
    json_decref(defines);
    return 0;
}

void student_launch_free(student_launch *l)
{
    json_decref(l->point);
    student_build_free(&l->build);
    memset(l, 0, sizeof *l);
}

json_t *student_resources_json(const student_resources *r)
{
    if (!r->known)
        return json_null();
    return json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "registers", r->registers, "static_smem", r->static_smem,
                     "stack", r->stack, "spill_stores", r->spill_stores, "spill_loads", r->spill_loads,
                     "barriers", r->barriers);
}

void student_run_json(const student_launch *l, json_t *run)
{
    json_object_set_new(run, "source", json_string(l->def->broken ? "broken on purpose" : "student"));
    json_object_set_new(run, "source_hash", json_string(l->def->hash));
    json_object_set_new(run, "compile", json_pack("{s:s, s:O, s:f, s:b}", "arch", l->build.arch, "options",
                                                  l->build.options, "ms", l->build.ms, "cached", l->build.cached));
    json_object_set_new(run, "resources", student_resources_json(&l->build.res));
    if (l->kernel.host_runner)
        json_object_set_new(run, "runner", student_runner_json(l));
}

json_t *student_runner_json(const student_launch *l)
{
    json_t *runner = json_pack("{s:f, s:b, s:b}", "ms", l->host.ms, "cached", l->host.cached, "one_process",
                               l->host.one_process);
    if (!l->sandbox[0])
        return runner;              /* not launched (yet) */
    json_t *layers = json_array();
    for (const char *p = l->sandbox; *p;) {
        size_t n = strcspn(p, ",");
        if (n)
            json_array_append_new(layers, json_stringn(p, n));
        p += n + (p[n] == ',');
    }
    json_object_set_new(runner, "sandbox", layers);
    return runner;
}

json_t *student_first_values(const json_t *params, const char *const *keys)
{
    json_t *out = json_object();
    for (size_t i = 0; keys[i]; i++) {
        const json_t *v = json_object_get(params, keys[i]);
        json_object_set(out, keys[i], json_is_array(v) ? json_array_get(v, 0) : v ? (json_t *)v : json_null());
    }
    return out;
}

bool student_at_first(const json_t *firsts, const json_t *point)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)firsts, key, v) {
        const json_t *p = json_object_get(point, key);
        if (p && !json_equal(p, v))
            return false;
    }
    return true;
}

/* What a CUDA error usually means in a student's kernel, by the words of cudaGetErrorString. */
static const struct {
    const char *says, *means;
} fault_hints[] = {
    {"launch limit", "an endless loop, or a __syncthreads() that not every thread of the block reaches "
                     "(CUDALAB_KERNEL_TIMEOUT sets the limit)"},
    {"illegal memory access", "an access outside an array: compare every index with its bound before "
                              "using it (the last blocks of the grid are only partly inside the matrix)"},
    {"misaligned address", "a pointer cast to a wider type (float4, double, int2) at an address that is "
                           "not a multiple of its size"},
    {"device-side assert", "an assert() in the kernel failed: its message is printed above"},
    {"illegal instruction", "the kernel stopped itself with __trap(), or ran an invalid instruction"},
    {"unspecified launch failure", "the kernel stopped (__trap() or an invalid access)"},
    {"too many resources", "a block needs more registers than an SM holds: a smaller --block, or --maxrregcount"},
    {"invalid configuration", "the block or grid is outside what the device allows"},
    {"threads per block", "a smaller --block, or fewer registers per thread (--maxrregcount)"},
    {"shared memory", "less shared memory per block: smaller tiles or a smaller --smem"},
};

/* "your kernel " before a student's kernel's name; nothing before one broken on purpose. */
static const char *whose(const student_def *d)
{
    return d->broken ? "" : "your kernel ";
}

/* The CPU runner's findings, one per line, as the traceback. */
static int cpu_runner_failed(magic_ctx *ctx, const student_launch *l, const char *point, const char *err)
{
    bool timeout = strstr(err, "launch limit") != NULL;
    /* the first finding whole (err holds CL_ERR_LEN bytes of it) */
    size_t first = strcspn(l->diagnosis, "\n");
    magic_error(ctx, timeout ? "TimeoutError" : "KernelError", "%s%s failed on the CPU runner (%s): %.*s",
                whose(l->def), l->def->name, point, first ? (int)first : (int)strlen(err),
                first ? l->diagnosis : err);
    json_t *tb = json_array();
    for (const char *p = l->diagnosis; *p;) {
        size_t n = strcspn(p, "\n");
        if (n)
            json_array_append_new(tb, json_sprintf("%.*s", (int)n, p));
        p += n + (p[n] == '\n');
    }
    if (json_array_size(tb) > 1)
        json_array_insert_new(tb, 0, json_string("what the CPU runner found (the first of each kind, by block):"));
    else
        json_array_clear(tb);
    json_decref(ctx->traceback);
    ctx->traceback = tb;
    return -1;
}

/* Whether err is a rep's failed check: "rep R of N ..." (cpu/simt/reps.c on the CPU runner, the
 * family runners on a GPU): a result that depends on which launch it is, the kernel's fault. */
static bool rep_check_failed(const char *err)
{
    int r, n, end = 0;
    return sscanf(err, "rep %d of %d%n", &r, &n, &end) == 2 && err[end] == ' ' && r >= 1 && r <= n;
}

/* On a GPU: the CPU runner's findings on the kernel (its lesson run), as the run's KernelError. 1
 * when they are the error, 0 when it found nothing (or could not run it). */
static int cpu_runner_found(magic_ctx *ctx, const student_launch *l)
{
    lesson_result r;
    if (!ctx->lab)
        return 0;                   /* no session to run it in */
    if (student_cpu_check_off(l->def, l->point) || student_lesson(ctx, l->def, l->point, &r) != 0) {
        error_clear(&ctx->error);
        return 0;
    }
    bool found = strcmp(r.found.ename, "KernelError") == 0;
    if (found) {
        ctx->error = r.found;
        json_decref(ctx->traceback);
        ctx->traceback = json_incref(r.lines);
    }
    lesson_result_free(&r);
    return found;
}

int student_run_failed(magic_ctx *ctx, const student_launch *l, const char *point, const char *err)
{
    if (!l->kernel.host_runner && !strstr(err, "launch limit") && cpu_runner_found(ctx, l))
        return -1;
    if (rep_check_failed(err)) {
        magic_error(ctx, "CheckError", "%s%s failed (%s): %s", whose(l->def), l->def->name, point, err);
        json_t *tb = json_array();
        json_array_append_new(tb, json_string("every rep runs on inputs of its own and is checked: a kernel must "
                                              "compute each launch's result from that launch's inputs (no answer "
                                              "kept from another run, no launch left unwritten)"));
        json_decref(ctx->traceback);
        ctx->traceback = tb;
        return -1;
    }
    if (l->kernel.host_runner)
        return cpu_runner_failed(ctx, l, point, err);
    const char *name = l->def->name;
    bool timeout = strstr(err, "launch limit") != NULL, outside = strstr(err, " wrote outside ") != NULL;
    magic_error(ctx, timeout ? "TimeoutError" : outside ? "CheckError" : "CudaError",
                "%s%s failed (%s): %s", whose(l->def), name, point, err);
    json_t *tb = json_array();
    for (size_t i = 0; i < sizeof fault_hints / sizeof fault_hints[0]; i++)
        if (strstr(err, fault_hints[i].says)) {
            json_array_append_new(tb, json_sprintf("what it usually means: %s", fault_hints[i].means));
            break;
        }
    if (!timeout)
        json_array_append_new(tb, json_sprintf("to find the line: add --sanitize to the command (compute-sanitizer "
                                               "memcheck and racecheck at a small size)"));
    json_decref(ctx->traceback);
    ctx->traceback = tb;
    return -1;
}

