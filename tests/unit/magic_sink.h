/* magic_sink.h — running one magic cell in a unit test: a magic_out that keeps the
 * last result document (and its view), and run_cell, which parses the cell and runs
 * its one command on the given backend. Header-only; included by the family tests. */
#ifndef CUDALAB_TEST_MAGIC_SINK_H
#define CUDALAB_TEST_MAGIC_SINK_H

#include <stdio.h>
#include <string.h>

#include "lang/lang.h"
#include "magic/magic.h"

typedef struct sink {
    json_t *doc;                    /* the last result document */
    json_t *view;                   /* its view */
} sink;

static void sink_stream(void *impl, const char *name, const char *text)
{
    (void)impl, (void)name, (void)text;
}

static void sink_result(void *impl, json_t *doc, json_t *view, const char *display_id, enum result_mode mode)
{
    (void)display_id, (void)mode;
    sink *s = impl;
    if (doc) {
        json_decref(s->doc);
        json_decref(s->view);
        s->doc = doc;
        s->view = view;
    } else {
        json_decref(view);
    }
}

static const magic_out sink_out = {sink_stream, sink_result};

/* 0 when the command ran, the magic's -1 with ctx's ename/evalue, or 2 when the
 * cell is not exactly one valid command (the parse error in ctx). */
static int run_cell(const char *cell, const cl_backend *be, sink *s, magic_ctx *ctx)
{
    memset(s, 0, sizeof *s);
    *ctx = (magic_ctx){.out = &sink_out, .impl = s, .backend = be};
    command *c;
    parse_error e;
    int n = cell_parse(cell, &c, &e);
    if (n != 1) {
        snprintf(ctx->error.ename, sizeof ctx->error.ename, "%s", e.error.ename);
        snprintf(ctx->error.evalue, sizeof ctx->error.evalue, "%s", e.error.evalue);
        if (n > 0)
            commands_free(c, n);
        return 2;
    }
    int rc = c[0].magic->run(ctx, c[0].params, c[0].body);
    commands_free(c, n);
    return rc;
}

static void sink_free(sink *s)
{
    json_decref(s->doc);
    json_decref(s->view);
    s->doc = s->view = NULL;
}

#endif
