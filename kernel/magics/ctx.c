/* ctx.c — how a running magic reports: thin wrappers over the ctx's sink, so
 * a magic never knows whether it runs in the kernel, the worker or the CLI. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>

#include "cudalab/magic.h"

void magic_stream(magic_ctx *ctx, const char *name, const char *text)
{
    ctx->out->stream(ctx->impl, name, text);
}

void magic_result(magic_ctx *ctx, json_t *doc, json_t *view)
{
    ctx->out->result(ctx->impl, doc, view, NULL, RESULT_PLAIN);
}

void magic_progress(magic_ctx *ctx, const char *display_id, json_t *doc, json_t *view, enum result_mode mode)
{
    ctx->out->result(ctx->impl, doc, view, display_id, mode);
}

int magic_error(magic_ctx *ctx, const char *ename, const char *fmt, ...)
{
    snprintf(ctx->ename, sizeof ctx->ename, "%s", ename);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->evalue, sizeof ctx->evalue, fmt, ap);
    va_end(ap);
    return -1;
}

static volatile sig_atomic_t cancel_flag;

bool magic_cancelled(void)
{
    return cancel_flag != 0;
}

void magic_cancel(void)
{
    cancel_flag = 1;
}

void magic_cancel_reset(void)
{
    cancel_flag = 0;
}
