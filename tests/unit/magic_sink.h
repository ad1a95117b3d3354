/* magic_sink.h — the one harness for running a magic in a unit test: a magic_out
 * (sink) that keeps the last result document and its view, counts results,
 * documents, charts and stderr writes, and keeps what reached stdout and stderr;
 * and the ways to run a cell on a backend:
 *   run_cell   returns 2 with the parse error in ctx when the cell is not exactly
 *              one valid command (for tests of parse-time refusals);
 *   run_one    fails the test instead;
 *   run_quiet  as run_one, and fails the test when the command wrote to stderr.
 * Header-only (static inline, so a test that needs only part of it compiles
 * cleanly); included by the magic tests, after <cmocka.h>. */
#ifndef CUDALAB_TEST_MAGIC_SINK_H
#define CUDALAB_TEST_MAGIC_SINK_H

#include <stdio.h>
#include <string.h>

#include "lang/lang.h"
#include "magic/magic.h"
#include "test_lab.h"

#define SINK_MODES_KEPT 64

typedef struct sink {
    json_t *doc;                    /* the last result document */
    json_t *view;                   /* its view */
    int results;                    /* every result: documents, progress and charts */
    int docs;                       /* the results that had a document */
    int charts;                     /* plain results without a document */
    int modes[SINK_MODES_KEPT];     /* the first results' modes, in order */
    int stderr_writes;
    char out[1024], err[1024];      /* the text that reached stdout and stderr (cut to fit) */
} sink;

static inline void sink_stream(void *impl, const char *name, const char *text)
{
    sink *s = impl;
    int is_stderr = strcmp(name, "stderr") == 0;
    char *to = is_stderr ? s->err : s->out;
    s->stderr_writes += is_stderr;
    strncat(to, text, sizeof s->out - strlen(to) - 1);
}

static inline void sink_result(void *impl, json_t *doc, json_t *view, const char *display_id, enum result_mode mode)
{
    (void)display_id;
    sink *s = impl;
    if (s->results < SINK_MODES_KEPT)
        s->modes[s->results] = mode;
    s->results++;
    if (!doc) {                     /* progress and charts */
        s->charts += mode == RESULT_PLAIN;
        json_decref(view);
        return;
    }
    s->docs++;
    json_decref(s->doc);
    json_decref(s->view);
    s->doc = doc;
    s->view = view;
}

static const magic_out sink_out = {sink_stream, sink_result};

/* An empty sink and a ctx that writes into it and runs on be, in the test's session (test_lab.h). */
static inline void sink_start(sink *s, magic_ctx *ctx, const cl_backend *be)
{
    memset(s, 0, sizeof *s);
    *ctx = (magic_ctx){.sink.out = &sink_out, .sink.impl = s, .lab = test_lab(), .backend = be};
}

/* 0 when the command ran, the magic's -1 with ctx's ename/evalue, or 2 when the
 * cell is not exactly one valid command (the parse error in ctx). */
static inline int run_cell(const char *cell, const cl_backend *be, sink *s, magic_ctx *ctx)
{
    sink_start(s, ctx, be);
    command *c;
    parse_error e;
    int n = cell_parse(ctx->lab, cell, &c, &e);
    if (n > 1) {                    /* parsed, but a test cell is one command */
        commands_free(c, n);
        snprintf(ctx->error.ename, sizeof ctx->error.ename, "TestError");
        snprintf(ctx->error.evalue, sizeof ctx->error.evalue, "%d commands, not one", n);
        return 2;
    }
    if (n != 1) {
        snprintf(ctx->error.ename, sizeof ctx->error.ename, "%s", e.error.ename);
        snprintf(ctx->error.evalue, sizeof ctx->error.evalue, "%s", e.error.evalue);
        return 2;
    }
    int rc = c[0].magic->run(ctx, c[0].params, c[0].body);
    commands_free(c, n);
    return rc;
}

/* run_cell for a cell that must parse: fails the test when it does not. */
static inline int run_one(const char *cell, const cl_backend *be, sink *s, magic_ctx *ctx)
{
    int rc = run_cell(cell, be, s, ctx);
    if (rc == 2)
        fail_msg("%s does not parse: %s: %s", cell, ctx->error.ename, ctx->error.evalue);
    return rc;
}

/* run_one for a command that must say nothing on stderr. */
static inline int run_quiet(const char *cell, const cl_backend *be, sink *s, magic_ctx *ctx)
{
    int rc = run_one(cell, be, s, ctx);
    assert_int_equal(s->stderr_writes, 0);
    return rc;
}

/* doc.runs[i] of the last document; fails the test when there is none. */
static inline const json_t *run_at(const sink *s, size_t i)
{
    const json_t *r = json_array_get(json_object_get(s->doc, "runs"), i);
    if (!r)
        fail_msg("no run %zu", i);
    return r;
}

/* Drops the document, its view and ctx's traceback (ctx may be NULL). */
static inline void sink_free(sink *s, magic_ctx *ctx)
{
    json_decref(s->doc);
    json_decref(s->view);
    s->doc = s->view = NULL;
    if (ctx) {
        json_decref(ctx->traceback);
        ctx->traceback = NULL;
    }
}

#endif
