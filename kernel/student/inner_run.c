/* inner_run.c — a family's command run inside another (inner_run.h). */
#include "student/inner_run.h"

#include <string.h>

#include "lang/lang.h"

typedef struct capture {
    magic_ctx *outer;               /* where a kernel's printf goes, or NULL */
    json_t *doc;
} capture;

static void capture_stream(void *impl, const char *name, const char *text)
{
    capture *c = impl;
    if (c->outer)
        magic_stream(c->outer, name, text);
}

static void capture_result(void *impl, json_t *doc, json_t *view, const char *display_id, enum result_mode mode)
{
    (void)display_id;
    capture *c = impl;
    if (doc && (mode == RESULT_PLAIN || mode == RESULT_FINAL)) {
        json_decref(c->doc);
        c->doc = json_incref(doc);
    }
    json_decref(doc);
    json_decref(view);
}

static const magic_out capture_out = { capture_stream, capture_result };

int inner_run_line(magic_ctx *ctx, const cl_backend *backend, const char *line, bool streams, inner_run *out)
{
    memset(out, 0, sizeof *out);
    command *cmds = NULL;
    parse_error perr;
    int n = cell_parse(ctx->lab, line, &cmds, &perr);
    if (n != 1) {
        commands_free(cmds, n > 0 ? n : 0);
        return magic_error(ctx, "InternalError", "%s does not parse: %s", line, perr.error.evalue);
    }
    capture cap = { streams ? ctx : NULL, NULL };
    magic_ctx inner = { .sink.out = &capture_out, .sink.impl = &cap, .lab = ctx->lab, .backend = backend,
                        .dev.note = ctx->dev.note };
    out->rc = cmds[0].magic->run(&inner, cmds[0].params, NULL);
    commands_free(cmds, n);
    out->doc = cap.doc;
    out->error = inner.error;
    out->traceback = inner.traceback;
    return 0;
}

void inner_run_free(inner_run *r)
{
    json_decref(r->doc);
    json_decref(r->traceback);
    memset(r, 0, sizeof *r);
}
