/* board.c — %submit and %leaderboard: a student's kernel sent to the class leaderboard, and the
 * board shown in the notebook (kernel/net/board.h: the service and its API).
 *
 * Both run in the kernel process: a call waits at most CUDALAB_BOARD_TIMEOUT seconds (a board
 * that is down fails the cell with a sentence, never hangs it). What the service answers is
 * treated as untrusted: only the API's fields of the expected types are read, strings are cut and
 * stripped of control characters, and lists are bounded, before anything is shown or recorded.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "magic/families.h"
#include "magic/magic.h"
#include "net/board.h"
#include "render/render.h"
#include "student/store.h"

#define BOARD_SHOWN_MAX 500             /* rows of a board's entries or failures shown and kept */
#define BOARD_FIELD_MAX 200             /* bytes of one string field of the service's answer */

static int board_failed(magic_ctx *ctx, const board_error *e)
{
    return magic_error(ctx, e->ename, "%s", e->text);
}

/* ---- %submit ---- */

/* A %%kernel option's value as the line would write it, appended to b (a bool as --x / --no-x). */
static int append_flag(strbuf *b, const flag_spec *f, const json_t *v)
{
    if (f->type == FLAG_BOOL) {
        bool def = f->def && strcmp(f->def, "true") == 0;
        if (json_is_true(v) != def)
            strbuf_printf(b, " --%s%s", json_is_true(v) ? "" : "no-", f->name);
        return 0;
    }
    if (f->type == FLAG_INT) {
        if (f->def && json_integer_value(v) == atoll(f->def))
            return 0;
        strbuf_printf(b, " --%s %lld", f->name, (long long)json_integer_value(v));
        return 0;
    }
    if (f->type == FLAG_DIMS) {
        size_t i;
        json_t *d;
        strbuf_printf(b, " --%s ", f->name);
        json_array_foreach(v, i, d)
            strbuf_printf(b, "%s%lld", i ? "x" : "", (long long)json_integer_value(d));
        return 0;
    }
    /* strings, given once or repeated (-D NAME=VALUE) */
    json_t *all = json_is_array(v) ? json_incref((json_t *)v) : json_pack("[O]", v);
    size_t i;
    json_t *s;
    int rc = 0;
    json_array_foreach(all, i, s) {
        const char *t = json_string_value(s);
        if (!t || strpbrk(t, "\"\\\n")) {
            rc = -1;
            break;
        }
        strbuf_printf(b, strpbrk(t, " \t'#") ? " --%s \"%s\"" : " --%s %s", f->name, t);
    }
    json_decref(all);
    return rc;
}

/* The %%kernel line's flags of d, but --for and --name (the board names the kernel) and the
 * quick check's switches (the board runs every check): what the board's runner repeats. */
static int kernel_flags_of(magic_ctx *ctx, const student_def *d, char **out)
{
    static const char *const board_owns[] = {"for", "name", "check", "cpu-check", NULL};
    const magic_spec *k = magic_find("kernel");
    strbuf b = STRBUF_INIT;
    strbuf_puts(&b, "");
    for (size_t i = 0; k && i < magic_flag_count(k); i++) {
        const flag_spec *f = magic_flag(k, i);
        bool owned = false;
        for (size_t j = 0; board_owns[j]; j++)
            owned |= strcmp(f->name, board_owns[j]) == 0;
        char key[96];
        snprintf(key, sizeof key, "%s", f->name);
        for (char *p = key; *p; p++)
            *p = *p == '-' ? '_' : *p;
        json_t *v = json_object_get(d->options, key);
        if (owned || !v || json_is_null(v))
            continue;
        if (append_flag(&b, f, v) != 0) {
            strbuf_free(&b);
            return magic_error(ctx, "UsageError", "%s's --%s holds a quote, a backslash or a newline: the board "
                               "cannot repeat it; define it plainly and run its %%%%kernel cell again", d->name,
                               f->name);
        }
    }
    char *s = strbuf_take(&b);
    if (!s)
        return magic_error(ctx, "MemoryError", "out of memory");
    *out = strdup(s[0] == ' ' ? s + 1 : s);
    free(s);
    return *out ? 0 : magic_error(ctx, "MemoryError", "out of memory");
}

/* A string field of the service's answer as shown: cut, no control characters; NULL when absent. */
static json_t *field_text(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    if (!s)
        return NULL;
    char out[BOARD_FIELD_MAX + 16];
    board_quote(s, BOARD_FIELD_MAX, out, sizeof out);
    return json_string(out);
}

/* A number field, or null (absent, not a number, not finite). */
static json_t *field_number(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) && isfinite(json_number_value(v)) ? json_real(json_number_value(v)) : json_null();
}

static json_t *text_or_null(json_t *s)
{
    return s ? s : json_null();
}

static int submit_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    const char *problem = json_string_value(json_object_get(params, "to"));
    if (!name)
        return magic_error(ctx, "UsageError", "which kernel? %%submit NAME --to PROBLEM (%%kernels lists yours)");
    const student_def *d = student_find(ctx->lab, name);
    if (!d || d->broken)
        return magic_error(ctx, "NameError", "no kernel of yours is named '%s' in this session: run its "
                           "%%%%kernel --for FAMILY --name %s cell first (%%kernels lists yours)", name, name);
    char *flags = NULL;
    if (kernel_flags_of(ctx, d, &flags) != 0)
        return -1;
    json_t *req = json_pack("{s:s, s:s, s:s, s:s, s:s}", "problem", problem, "name", name, "family",
                            d->family->magic, "source", d->source, "flags", flags), *reply = NULL;
    free(flags);
    board_error e;
    int rc = req ? board_call("POST", "api/submissions", req, &reply, &e) : -1;
    if (!req)
        return magic_error(ctx, "MemoryError", "out of memory");
    if (rc != 0) {
        json_decref(req);
        return board_failed(ctx, &e);
    }
    json_t *id = json_object_get(reply, "id");
    json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o}", "magic", "submit", "problem", problem,
                            "name", name, "family", d->family->magic, "source_hash", d->hash, "id",
                            json_is_integer(id) ? json_incref(id) : text_or_null(field_text(reply, "id")),
                            "status", text_or_null(field_text(reply, "status")), "position",
                            field_number(reply, "position"));
    json_decref(req);
    json_decref(reply);
    char title[300];
    snprintf(title, sizeof title, "%s submitted to %s", name, problem);
    json_t *view = view_new(title);
    json_t *t = view_add_table(view, NULL, NULL);
    view_table_row(t, json_pack("[s, O]", "submission", json_object_get(doc, "id")));
    view_table_row(t, json_pack("[s, O]", "status", json_object_get(doc, "status")));
    view_table_row(t, json_pack("[s, O]", "place in the queue", json_object_get(doc, "position")));
    char note[400];
    snprintf(note, sizeof note, "the board runs it alone on the GPU at the problem's hidden sizes and seeds, every "
             "timed rep checked; %%leaderboard %s shows where it stands", problem);
    view_add_note(view, note);
    return magic_result_built(ctx, doc, view);
}

static const flag_spec submit_flags[] = {
    {.name = "to", .type = FLAG_STRING, .opts = FLAG_REQUIRED,
     .help = "the problem's name on the board (ps2.matmul): the assignment says it"},
    {.name = NULL},
};

static const char *const submit_examples[] = {
    "%submit mytiled --to ps2.matmul",
    NULL,
};

const magic_spec magic_submit = {
    MAGIC_LOCAL_LINE(submit),
    .summary = "Send one of your kernels to the class leaderboard",
    .description =
        "Sends the kernel NAME of this session (the source of its last %%kernel cell that compiled, its "
        "family and its %%kernel flags) to the class board's problem PROBLEM. The board runs it later, alone "
        "on the GPU, at the problem's hidden sizes and seeds, beside the built-in ladder (naive, tiled, fast, "
        "cuBLAS/CUB), through the lesson checks and the check of every timed rep; a kernel that fails a "
        "check is listed as failed with the finding, never ranked. %leaderboard PROBLEM shows the board. "
        "Resubmitting is rate-limited per problem (BoardRateLimit says when to try again). Needs the course's "
        "board: CUDALAB_BOARD_URL and the hub's token (README, \"Class leaderboard\").",
    .flags = submit_flags,
    .positional = "NAME",
    .positional_help = "the kernel's name, as its %%kernel --name gave it",
};

/* ---- %leaderboard ---- */

/* The board's answer, read into the document: the API's fields of their types, bounded. */
static json_t *board_doc(const char *problem, const json_t *b)
{
    json_t *doc = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "magic", "leaderboard", "problem", problem,
                            "title", text_or_null(field_text(b, "title")), "gpu", text_or_null(field_text(b, "gpu")),
                            "clock_mhz", field_number(b, "clock_mhz"), "run_at", text_or_null(field_text(b, "run_at")),
                            "backend", text_or_null(field_text(b, "backend")), "queue", field_number(b, "queue"));
    json_t *refs = json_array(), *entries = json_array(), *failed = json_array();
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(b, "references"), i, o) {
        if (i >= BOARD_SHOWN_MAX)
            break;
        json_array_append_new(refs, json_pack("{s:o, s:o, s:o}", "variant", text_or_null(field_text(o, "variant")),
                                              "median_ms", field_number(o, "median_ms"), "ci95_rel",
                                              field_number(o, "ci95_rel")));
    }
    json_array_foreach(json_object_get(b, "entries"), i, o) {
        if (i >= BOARD_SHOWN_MAX)
            break;
        json_array_append_new(entries, json_pack("{s:o, s:b, s:o, s:b, s:o, s:o, s:o, s:o, s:o}", "rank",
                                                 field_number(o, "rank"), "tied",
                                                 json_is_true(json_object_get(o, "tied")), "user",
                                                 text_or_null(field_text(o, "user")), "you",
                                                 json_is_true(json_object_get(o, "you")), "name",
                                                 text_or_null(field_text(o, "name")), "median_ms",
                                                 field_number(o, "median_ms"), "ci95_rel",
                                                 field_number(o, "ci95_rel"), "score", field_number(o, "score"),
                                                 "submitted_at", text_or_null(field_text(o, "submitted_at"))));
    }
    json_array_foreach(json_object_get(b, "failed"), i, o) {
        if (i >= BOARD_SHOWN_MAX)
            break;
        json_array_append_new(failed, json_pack("{s:o, s:o, s:o, s:o}", "user", text_or_null(field_text(o, "user")),
                                                "name", text_or_null(field_text(o, "name")), "finding",
                                                text_or_null(field_text(o, "finding")), "line",
                                                field_number(o, "line")));
    }
    json_object_set_new(doc, "references", refs);
    json_object_set_new(doc, "entries", entries);
    json_object_set_new(doc, "failed", failed);
    return doc;
}

static const char *str_or(const json_t *o, const char *key, const char *def)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : def;
}

static json_t *board_view(const json_t *doc)
{
    char title[400], line[400];
    snprintf(title, sizeof title, "Leaderboard: %s (%s)", str_or(doc, "title", str_or(doc, "problem", "")),
             str_or(doc, "problem", ""));
    json_t *view = view_new(title);
    double clock = json_number_value(json_object_get(doc, "clock_mhz"));
    snprintf(line, sizeof line, "run on %s%s%.0f%s, %s backend, at %s; %lld waiting in the queue",
             str_or(doc, "gpu", "an unnamed device"), clock > 0 ? " at " : "", clock, clock > 0 ? " MHz" : "",
             str_or(doc, "backend", "an unnamed"), str_or(doc, "run_at", "an unknown time"),
             (long long)json_number_value(json_object_get(doc, "queue")));
    view_add_note(view, line);
    json_t *t = view_add_table(view, "ranked (score: geometric mean over the hidden sizes of the time ÷ the fastest "
                                     "reference's; lower is better)",
                               json_pack("[s, s, s, s, s, s, s]", "rank", "who", "kernel", "median ms", "±95%",
                                         "score", "submitted"));
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(doc, "entries"), i, o) {
        double rank = json_number_value(json_object_get(o, "rank"));
        char r[32], who[BOARD_FIELD_MAX + 16], ci[32];
        snprintf(r, sizeof r, "%s%.0f", json_is_true(json_object_get(o, "tied")) ? "=" : "", rank);
        snprintf(who, sizeof who, "%s%s", str_or(o, "user", "?"), json_is_true(json_object_get(o, "you")) ? " ←" : "");
        json_t *c = json_object_get(o, "ci95_rel");
        if (json_is_number(c))
            snprintf(ci, sizeof ci, "%.1f%%", 100 * json_number_value(c));
        else
            snprintf(ci, sizeof ci, "-");
        view_table_row(t, json_pack("[s, s, O, O, s, O, O]", r, who, json_object_get(o, "name"),
                                    json_object_get(o, "median_ms"), ci, json_object_get(o, "score"),
                                    json_object_get(o, "submitted_at")));
    }
    if (json_array_size(json_object_get(doc, "entries")) == 0)
        view_add_note(view, "nothing ranked yet");
    json_t *r = view_add_table(view, "the reference ladder (the same run)",
                               json_pack("[s, s, s]", "variant", "median ms", "±95%"));
    json_array_foreach(json_object_get(doc, "references"), i, o) {
        char ci[32];
        json_t *c = json_object_get(o, "ci95_rel");
        snprintf(ci, sizeof ci, json_is_number(c) ? "%.1f%%" : "-", 100 * json_number_value(c));
        view_table_row(r, json_pack("[O, O, s]", json_object_get(o, "variant"), json_object_get(o, "median_ms"), ci));
    }
    if (json_array_size(json_object_get(doc, "failed")) > 0) {
        json_t *f = view_add_table(view, "failed (not ranked)", json_pack("[s, s, s, s]", "who", "kernel", "finding",
                                                                          "line"));
        json_array_foreach(json_object_get(doc, "failed"), i, o)
            view_table_row(f, json_pack("[O, O, O, O]", json_object_get(o, "user"), json_object_get(o, "name"),
                                        json_object_get(o, "finding"), json_object_get(o, "line")));
    }
    return view;
}

/* The chart: each ranked kernel's median time by rank, the references as horizontal rules. */
static json_t *board_chart(const json_t *doc)
{
    json_t *view = view_new(NULL);
    char title[300];
    snprintf(title, sizeof title, "%s: students' times against the reference ladder", str_or(doc, "problem", ""));
    json_t *chart = view_add_chart(view, "line", title, "rank", "median time (ms)", VIEW_LOG_Y);
    const json_t *entries = json_object_get(doc, "entries");
    double last = 1;
    size_t i;
    json_t *o;
    view_chart_series(chart, "students", "point");
    json_array_foreach(entries, i, o) {
        double rank = json_number_value(json_object_get(o, "rank")), ms = json_number_value(json_object_get(o, "median_ms"));
        if (rank < 1 || !(ms > 0))
            continue;
        last = rank > last ? rank : last;
        view_chart_labelled_point(chart, "students", json_real(rank), ms, str_or(o, "user", NULL));
    }
    json_array_foreach(json_object_get(doc, "references"), i, o) {
        double ms = json_number_value(json_object_get(o, "median_ms"));
        if (!(ms > 0))
            continue;
        char series[BOARD_FIELD_MAX + 16];
        snprintf(series, sizeof series, "reference: %s", str_or(o, "variant", "?"));
        view_chart_series(chart, series, "line");
        view_chart_point(chart, series, json_real(1), ms);
        view_chart_point(chart, series, json_real(last > 1 ? last : 2), ms);
    }
    return view;
}

static int leaderboard_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    const char *problem = json_string_value(json_object_get(params, "problem"));
    if (!problem)
        return magic_error(ctx, "UsageError", "which problem? %%leaderboard PROBLEM (ps2.matmul: the assignment "
                           "says it)");
    char path[600], part[520];
    if (!board_path_escape(problem, part, sizeof part))
        return magic_error(ctx, "UsageError", "the problem's name is too long");
    snprintf(path, sizeof path, "api/boards/%s", part);
    json_t *reply = NULL;
    board_error e;
    if (board_call("GET", path, NULL, &reply, &e) != 0)
        return board_failed(ctx, &e);
    json_t *doc = board_doc(problem, reply);
    json_decref(reply);
    if (!doc)
        return magic_error(ctx, "MemoryError", "out of memory");
    json_t *chart = board_chart(doc), *view = board_view(doc);
    if (magic_result_built(ctx, doc, view) != 0) {
        json_decref(chart);
        return -1;
    }
    if (!chart)
        return magic_error(ctx, "MemoryError", "out of memory");
    magic_result(ctx, NULL, chart);     /* a view of one chart: published as Vega-Lite and SVG */
    return 0;
}

static const char *const leaderboard_examples[] = {
    "%leaderboard ps2.matmul",
    NULL,
};

const magic_spec magic_leaderboard = {
    MAGIC_LOCAL_LINE(leaderboard),
    .summary = "Show the class leaderboard of a problem: a table and a chart against the reference ladder",
    .description =
        "Shows the class board of PROBLEM: the ranked kernels (median time with its 95% interval, the score: "
        "the geometric mean over the hidden sizes of the time divided by the fastest reference's; kernels "
        "within noise of each other share a rank, shown =N), the reference ladder run beside them, the "
        "kernels that failed a check with the finding, the GPU and its clock. Students see their own entry "
        "(marked ←) and two anonymised neighbours each side; instructors see everyone. A chart follows: "
        "each kernel's time by rank, the references as horizontal lines. The document "
        "(application/vnd.cudalab.result+json) holds the board as the service gave it, checked.",
    .flags = magic_no_flags,
    .positional = "PROBLEM",
    .positional_help = "the problem's name on the board (ps2.matmul)",
};
