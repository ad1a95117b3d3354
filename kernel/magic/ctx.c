/* ctx.c — how a running magic reports: thin wrappers over the ctx's sink, so
 * a magic never knows whether it runs in the kernel, the worker or the CLI. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/digest.h"
#include "base/utf8.h"
#include "magic/magic.h"
#include "cudalab/host.h"

void magic_stream(magic_ctx *ctx, const char *name, const char *text)
{
    ctx->sink.out->stream(ctx->sink.impl, name, text);
}

/* A result repeats its parameters, and a parameter can be a whole input (the
 * body of a %%histo cell): a long one is repeated in part, with its length
 * and digest, so that a 10 MB input does not make a 10 MB result (nor fill
 * the session's results, which %assert reads). */
static void bound_echo(json_t *doc)
{
    json_t *params = json_object_get(doc, "params"), *v;
    const char *key;
    json_object_foreach(params, key, v) {
        size_t len = json_string_length(v);
        if (!json_is_string(v) || len <= RESULT_ECHO_MAX)
            continue;
        const char *text = json_string_value(v);
        char hex[SHA256_HEX_LEN + 1];
        sha256_hex(text, len, hex);
        int head = utf8_clip(text, RESULT_ECHO_MAX);
        json_object_set_new(params, key, json_sprintf("%.*s[... %zu bytes in all, sha256 %s]",
                                                      head, text, len, hex));
    }
}

void magic_result(magic_ctx *ctx, json_t *doc, json_t *view)
{
    bound_echo(doc);
    ctx->sink.out->result(ctx->sink.impl, doc, view, NULL, RESULT_PLAIN);
}

int magic_result_built(magic_ctx *ctx, json_t *doc, json_t *view)
{
    if (!doc || !view) {
        json_decref(doc);
        json_decref(view);
        return magic_error(ctx, "MemoryError", "out of memory");
    }
    magic_result(ctx, doc, view);
    return 0;
}

void magic_progress(magic_ctx *ctx, const char *display_id, json_t *doc, json_t *view, enum result_mode mode)
{
    bound_echo(doc);
    ctx->sink.out->result(ctx->sink.impl, doc, view, display_id, mode);
}

int magic_error(magic_ctx *ctx, const char *ename, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_setv(&ctx->error, ename, fmt, ap);
    va_end(ap);
    return -1;
}

/* The flag lives with the CPU backend, whose long loops poll it too. */
bool magic_cancelled(void)
{
    return cl_cancel_requested();
}

void magic_cancel(void)
{
    cl_cancel_request();
}

void magic_cancel_reset(void)
{
    cl_cancel_reset();
}

int magic_turn_take(magic_ctx *ctx, char *err)
{
    double waited = 0;
    if (!ctx->share.turn)
        return 0;
    int rc = ctx->share.turn(ctx, true, &waited);
    ctx->share.wait_ms += waited;
    if (rc != 0)
        snprintf(err, CL_ERR_LEN, "%.*s", utf8_clip(ctx->share.error.evalue, CL_ERR_LEN - 1), ctx->share.error.evalue);
    return rc;
}

const char *magic_backend_ename(const cl_backend *b)
{
    return !b || strcmp(b->name, "cpu") == 0 ? "RuntimeError" : "CudaError";
}

double magic_peak_fp32_gflops(const cl_device_props *p)
{
    return 2.0 * p->sm_count * p->cores_per_sm * (double)p->clock_khz / 1e6;
}

double magic_peak_bandwidth_gbs(const cl_device_props *p)
{
    return 2.0 * (double)p->mem_clock_khz * 1e3 * (p->mem_bus_width_bits / 8.0) / 1e9;
}

int magic_device_props(magic_ctx *ctx, cl_device_props *out)
{
    char err[CL_ERR_LEN] = "";
    memset(out, 0, sizeof *out);
    if (ctx->backend->device_props(ctx->dev.index, out, err) != 0)
        return magic_error(ctx, magic_backend_ename(ctx->backend), "device %d: %s", ctx->dev.index, err);
    return 0;
}

void magic_cpu_default(magic_ctx *ctx, const char *what)
{
    if (!ctx->dev.note_buf)
        return;
    size_t used = strlen(ctx->dev.note_buf);
    bool first = !strstr(ctx->dev.note_buf, "CPU defaults: ");
    snprintf(ctx->dev.note_buf + used, ctx->dev.note_len - used, "%s%s", first ? (used ? "; CPU defaults: " : "CPU defaults: ")
             : ", ", what);
}

int magic_copy_bandwidth(magic_ctx *ctx, const cl_backend *b, double *gbs, char *err)
{
    if (!b->copy_bandwidth) {
        err[0] = '\0';
        return -1;
    }
    return MAGIC_TIMED(ctx, err, b->copy_bandwidth(gbs, err));
}

int magic_turn_give(magic_ctx *ctx, int rc)
{
    if (ctx->share.turn)
        ctx->share.turn(ctx, false, NULL);
    return rc;
}

const flag_spec magic_no_flags[] = {
    {.name = NULL},
};

const flag_spec magic_device_flags[] = {
    {.name = "gpu-only", .type = FLAG_BOOL, .def = "false",
     .help = "for what only a GPU can run (GPU-scale sizes): on a GPU the command runs as usual; on the CPU "
             "backend it does not run, and the cell shows this command's recorded GPU result (%recorded), which "
             "gpu.NAME in %assert reads, or says that there is none"},
    {.name = NULL},
};

static size_t table_size(const flag_spec *t)
{
    size_t n = 0;
    while (t && t[n].name)
        n++;
    return n;
}

static bool takes_device_flags(const magic_spec *m)
{
    return m->where == MAGIC_WORKER && (m->mode & MAGIC_LINE);
}

size_t magic_flag_count(const magic_spec *m)
{
    return table_size(m->flags) + (takes_device_flags(m) ? table_size(magic_device_flags) : 0);
}

const flag_spec *magic_flag(const magic_spec *m, size_t i)
{
    size_t own = table_size(m->flags);
    return i < own ? &m->flags[i] : &magic_device_flags[i - own];
}
