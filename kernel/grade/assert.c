/* assert.c — %assert and %score: checks over the session's results, for
 * notebooks that test themselves and for autograders (nbgrader).
 *
 *   %assert matmul.check.passed
 *   %assert matmul[variant=tiled,tile=16].gflops > 2 * matmul[variant=naive].gflops
 *   %score  min(1, histo[variant=privatized].gbs / histo[variant=sectioned].gbs / 4)
 *
 * Both run in the kernel process and read only result documents (expr.h has
 * the language). A true %assert shows nothing; a false one is an
 * AssertionError giving the values compared and where they came from. %score
 * makes the number the cell's result (text/plain is the bare number), which
 * nbgrader takes as the partial credit of an autograded cell.
 */
#include <stdio.h>
#include <string.h>

#include "base/text.h"
#include "magic/magic.h"
#include "render/render.h"
#include "grade/expr.h"
#include "grade/expr_funcs.h"
#include "grade/recorded.h"
#include "lang/lex.h"

static int check_expr(const struct lab_session *lab, const char *text, char *msg, size_t len, size_t *at)
{
    expr *e = expr_parse(text, msg, len, at);
    expr_free(e);
    return e ? 0 : -1;
}

/* The expression of params, parsed; NULL after magic_error. */
static expr *parsed(magic_ctx *ctx, const json_t *params)
{
    char msg[400];
    size_t at;
    expr *e = expr_parse(json_string_value(json_object_get(params, "expr")), msg, sizeof msg, &at);
    if (!e)
        magic_error(ctx, "SyntaxError", "%s", msg);
    return e;
}

static int report(magic_ctx *ctx, expr_report *rep)
{
    magic_error(ctx, rep->error.ename, "%s", rep->error.evalue);
    ctx->traceback = rep->lines;
    return -1;
}

static int assert_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    expr *e = parsed(ctx, params);
    if (!e)
        return -1;
    expr_report rep;
    int holds = expr_check_with(e, ctx->grading.results, recording_results(ctx->grading.recording), &rep);
    bool no_recording = holds == -1 && strcmp(rep.error.ename, EXPR_NO_RECORDING) == 0;
    if (no_recording || (holds == -1 && strcmp(rep.error.ename, EXPR_NOT_RECORDED) == 0)) {
        /* a claim about a GPU, where none ran and none was recorded (for this command): nothing to
         * check it against */
        char note[1200];
        snprintf(note, sizeof note, "not checked here (no GPU, %s): %s\n",
                 no_recording ? "no recorded GPU results" : "the recording has no result for this command",
                 expr_source(e));
        magic_stream(ctx, "stdout", note);
        json_decref(rep.lines);
        holds = 1;
    }
    expr_free(e);
    return holds == 1 ? 0 : report(ctx, &rep);
}

static int score_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    expr *e = parsed(ctx, params);
    if (!e)
        return -1;
    expr_report rep;
    double value;
    int rc = expr_number_with(e, ctx->grading.results, recording_results(ctx->grading.recording), &value, &rep);
    if (rc == 0) {
        char text[64];
        snprintf(text, sizeof text, "%.15g", value == 0 ? 0.0 : value);   /* never "-0" */
        json_t *doc = json_pack("{s:s, s:s, s:f}", "magic", "score", "expr", expr_source(e), "value", value);
        json_t *view = json_pack("{s:[{s:s, s:s}]}", "blocks", "type", "text", "text", text);
        magic_result(ctx, doc, view);
    }
    expr_free(e);
    return rc == 0 ? 0 : report(ctx, &rep);
}

#define EXPR_HELP \
    "EXPR reads the session's results. A name is a magic and stands for its newest\n" \
    "result; NAME[key=value,...] picks the newest run with those values (a sweep's\n" \
    "runs, or earlier results of that magic). Fields follow with '.', keys and\n" \
    "list items with [...]: matmul.check.passed, histo.bins['a-d'],\n" \
    "matmul[variant=tiled,tile=16].gflops, device.devices[0].sms. A field is\n" \
    "looked up in the run, then in its result, then in the result's params; one\n" \
    "with the same value in every run is that value, otherwise it has one value\n" \
    "per run, which functions reduce to one (count counts them). gpu.NAME reads\n" \
    "NAME's live results where they came from a GPU and the recorded ones\n" \
    "(%recorded) otherwise; recorded.NAME only the recorded ones. Functions:\n" \
    EXPR_FUNCTIONS_HELP \
    "Operators: == != < <= > >= + - * / % and or not, parentheses; literals:\n" \
    "numbers (2^20 and 64K too), 'text', true, false, null.\n" \
    "Text takes the escapes " ESCAPES_TEXT ". Whole numbers are\n" \
    "exact (64-bit); a result past the largest double is an OverflowError. One\n" \
    "expression holds at most " STR(EXPR_MAX_TERMS) " terms and " STR(EXPR_MAX_DEPTH) " levels of nesting.\n" \
    "Results are kept for the kernel's life (the newest 64); a restart forgets them."


static const flag_spec no_flags[] = { {.name = NULL} };

/* What %assert and %score share: a line magic of the kernel itself, without
 * flags, whose whole line (raw) is EXPR, checked by parsing it. */
#define EXPR_MAGIC \
    .flags = no_flags, .positional = "EXPR", .mode = MAGIC_LINE, .where = MAGIC_LOCAL, .raw = true, \
    .check = check_expr

static const char *const assert_examples[] = {
    "%assert matmul.check.passed",
    "%assert matmul[variant=tiled,tile=16].gflops > 2 * matmul[variant=naive].gflops",
    "%assert histo.bins['a-d'] == 5",
    "%assert all(reduce.check.passed) and count(reduce) == 6",
    NULL,
};

const magic_spec magic_assert = {
    .name = "assert",
    .summary = "Check the session's results: an error saying why when EXPR is false",
    .description = "Evaluates EXPR over the results of the commands run so far. When it is\n"
                   "true nothing is shown; when it is false the cell fails with an\n"
                   "AssertionError giving the values compared and the cell each came from,\n"
                   "and a result that does not exist is a LookupError. A value with one entry\n"
                   "per run must hold for every run. Checks written this way give the same\n"
                   "answer on every run of a notebook: results are seeded, only timings vary.\n\n"
                   EXPR_HELP,
    EXPR_MAGIC,
    .positional_help = "the expression to check (the rest of the line)",
    .run = assert_run,
    .examples = assert_examples,
};

static const char *const score_examples[] = {
    "%score matmul.check.passed",
    "%score min(2, matmul[variant=tiled,tile=16].gflops / matmul[variant=naive].gflops)",
    "%score (histo.bins['a-d'] == 5) + (histo.bins['m-p'] == 10)",
    NULL,
};

const magic_spec magic_score = {
    .name = "score",
    .summary = "The value of EXPR as the cell's result: partial credit for nbgrader",
    .description = "Evaluates EXPR (as %assert does) to a number, true counting 1 and false 0,\n"
                   "and makes it the cell's result, shown as the bare number. nbgrader reads\n"
                   "an autograded cell's result as its points, so %score as the last line of\n"
                   "a test cell gives partial credit; clamp it with min() and max() to the\n"
                   "cell's points.\n\n"
                   EXPR_HELP,
    EXPR_MAGIC,
    .positional_help = "the expression to score (the rest of the line)",
    .run = score_run,
    .examples = score_examples,
};
