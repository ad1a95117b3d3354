/* sweep_broken.c — variants broken on purpose (CL_V_BROKEN) in a sweep's
 * result: a wrong answer is what they are for, so it is reported, not failed.
 *
 * Each of their runs gets "expected": "wrong", an "outcome" and the fields that
 * change from run to run ("nondeterministic"):
 *   - "wrong": the check caught the bug, as a lecture wants it to;
 *   - "right": the bug did not show in this run (a race the warps did not hit, an
 *     off-by-one the size left no thread for); on a GPU, racecheck is asked about
 *     a kernel with shared memory, and its findings go in "found";
 *   - "stopped": the CPU runner stopped the kernel at the bug (or the guard past
 *     an output caught a write outside it): the run is that error and its
 *     findings, since there is no result to check.
 * The view gets a note per variant saying which, and what was found.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"
#include "magic/families.h"
#include "magic/sweep.h"
#include "magic/sweep_internal.h"
#include "student/run.h"
#include "student/sanitize.h"
#include "student/store.h"

static const family_broken *broken_of(const sweep_spec *s, const json_t *run_or_point)
{
    const family_spec *f = family_find(s->magic);
    return f ? family_broken_find(f, json_string_value(json_object_get(run_or_point, "variant"))) : NULL;
}

bool sweep_broken_expected(const json_t *run)
{
    const char *e = json_string_value(json_object_get(run, "expected"));
    return e && strcmp(e, "wrong") == 0;
}

/* The run's fields that change from run to run where the bug shows: its times,
 * and what the row lists. */
static json_t *nondeterministic(const family_broken *b)
{
    json_t *out = json_pack("[s]", "time_ms");
    for (const char *const *p = b->nondeterministic; p && *p; p++)
        json_array_append_new(out, json_string(*p));
    return out;
}

/* racecheck of the broken kernel at its quick-check size, from the cache when
 * it has run before: what the GPU did not show. NULL where there is nothing to
 * ask (no shared memory, the CPU runner, a sanitized process). */
static json_t *racecheck(magic_ctx *ctx, const student_def *d, const json_t *point)
{
    if (getenv(SANITIZE_ENV) || (ctx->backend && strcmp(ctx->backend->name, "cpu") == 0))
        return NULL;
    const json_t *tile = json_object_get(point, "tile");
    student_launch sl;
    if (student_prepare(ctx, d, point, json_is_integer(tile) ? (int)json_integer_value(tile) : 0, &sl) != 0) {
        error_clear(&ctx->error);
        return NULL;
    }
    json_t *r = student_racecheck_cached(d, sl.build.key);
    student_launch_free(&sl);
    return r;
}

/* The run of a broken kernel that its run stopped (ctx's error): the error and
 * its findings (the traceback), for the table and the note, with what the point
 * says of the table's own columns (its size, its block). */
static json_t *stopped_run(magic_ctx *ctx, const sweep_spec *s, const json_t *point)
{
    json_t *run = json_pack("{s:O, s:s, s:s, s:n, s:{s:b, s:s, s:s, s:o}}", "variant",
                            json_object_get(point, "variant"), "backend",
                            ctx->backend ? ctx->backend->name : "?", "source", "broken on purpose", "time_ms",
                            "check", "passed", 0, "method", "none: the kernel was stopped", "error",
                            ctx->error.evalue, "findings",
                            ctx->traceback ? json_incref(ctx->traceback) : json_array());
    json_object_set_new(run, "outcome", json_string("stopped"));
    for (const sweep_column *c = s->columns; c->path; c++) {
        const json_t *v = json_object_get(point, c->path);
        /* 0 is a flag's "chosen for you" (--grid 0): not what ran */
        if (!strchr(c->path, '.') && !json_object_get(run, c->path) && (json_is_string(v) || (json_is_number(v) && json_number_value(v) != 0)))
            json_object_set(run, c->path, (json_t *)v);
    }
    return run;
}

int sweep_broken_point(magic_ctx *ctx, const sweep_spec *s, const json_t *point, int rc, json_t *runs,
                       size_t from)
{
    const family_broken *b = broken_of(s, point);
    if (!b)
        return rc;
    /* stopped by the CPU runner (KernelError) or the guard past an output (CheckError): the bug
     * found; a fault, a timeout or an interrupt stays the cell's error */
    if (rc != 0 && (strcmp(ctx->error.ename, "KernelError") == 0 || strcmp(ctx->error.ename, "CheckError") == 0)) {
        json_array_append_new(runs, stopped_run(ctx, s, point));
        error_clear(&ctx->error);
        json_decref(ctx->traceback);
        ctx->traceback = NULL;
        rc = 0;
    }
    if (rc != 0)
        return rc;
    for (size_t i = from; i < json_array_size(runs); i++) {
        json_t *run = json_array_get(runs, i);
        json_object_set_new(run, "expected", json_string("wrong"));
        json_object_set_new(run, "nondeterministic", nondeterministic(b));
        if (json_object_get(run, "outcome"))
            continue;               /* stopped */
        const json_t *passed = sweep_path_get(run, "check.passed");
        json_object_set_new(run, "outcome", json_string(json_is_false(passed) ? "wrong" : json_is_true(passed)
                                                                                ? "right" : "unchecked"));
        json_t *found = json_is_true(passed) ? racecheck(ctx, student_find(ctx->lab, b->v.name), point) : NULL;
        if (found)
            json_object_set_new(run, "found", found);
    }
    return 0;
}

const char *sweep_broken_cell(const json_t *run)
{
    const char *o = json_string_value(json_object_get(run, "outcome"));
    return !o ? NULL : strcmp(o, "wrong") == 0 ? "wrong (expected)" : strcmp(o, "right") == 0 ? "ok (bug hid)"
         : strcmp(o, "stopped") == 0 ? "stopped (expected)" : "unchecked";
}

/* "histo[1] = 20312, expected 21004; 4,231 of 90,117 counts lost (4.7%)" */
static void wrong_text(const json_t *check, char *buf, size_t len)
{
    const char *first = json_string_value(json_object_get(check, "first_wrong"));
    const char *method = json_string_value(json_object_get(check, "method"));
    const json_t *err = json_object_get(check, "max_rel_err");
    size_t o = first ? (size_t)snprintf(buf, len, "%s", first)
             : json_is_number(err) ? (size_t)snprintf(buf, len, "%s found a relative error of %.3g",
                                                      method ? method : "the check", json_number_value(err))
             : (size_t)snprintf(buf, len, "see the check column");
    const json_t *want = json_object_get(check, "expected_total"), *got = json_object_get(check, "counted_total");
    if (json_is_integer(want) && json_is_integer(got) && json_integer_value(got) < json_integer_value(want) && o < len) {
        json_int_t lost = json_integer_value(want) - json_integer_value(got);
        snprintf(buf + o, len - o, "; %lld of %lld counts lost (%.2g%%)", (long long)lost,
                 (long long)json_integer_value(want), 100.0 * (double)lost / (double)json_integer_value(want));
    }
}

/* The lines of found (a racecheck result) or of a stopped run's findings, under head. */
static void add_lines(json_t *view, const char *head, const json_t *lines)
{
    char *text = NULL;
    size_t size;
    FILE *out = open_memstream(&text, &size);
    if (!out)
        return;
    fputs(head, out);
    size_t i;
    const json_t *l;
    json_array_foreach(lines, i, l)
        fprintf(out, "\n  %s", json_string_value(l));
    fclose(out);
    view_add_text(view, text);
    free(text);
}

static void note_run(json_t *view, const family_broken *b, const json_t *run)
{
    const char *outcome = json_string_value(json_object_get(run, "outcome"));
    const json_t *check = json_object_get(run, "check");
    char note[1200], what[400];
    int o = snprintf(note, sizeof note, "%s is broken on purpose: %s. ", b->v.name, b->v.teaches);
    size_t at = o > 0 && (size_t)o < sizeof note ? (size_t)o : sizeof note - 1;
    if (strcmp(outcome, "wrong") == 0) {
        wrong_text(check, what, sizeof what);
        snprintf(note + at, sizeof note - at, "Its result is wrong, as expected: %s. The wrong numbers change from "
                 "run to run", what);
        view_add_note(view, note);
    } else if (strcmp(outcome, "stopped") == 0) {
        const char *err = json_string_value(json_object_get(check, "error"));
        snprintf(note + at, sizeof note - at, "It was stopped, as expected: %s", err ? err : "?");
        view_add_note(view, note);
        const json_t *findings = json_object_get(check, "findings");
        if (json_array_size(findings) > 0)
            add_lines(view, "what was found:", findings);
    } else if (strcmp(outcome, "right") == 0) {
        const json_t *found = json_object_get(run, "found");
        const char *status = json_string_value(json_object_get(found, "status"));
        snprintf(note + at, sizeof note - at, "Its result came out right this time: the bug did not show in this "
                 "run%s", !found ? ""
                 : strcmp(status, "failed") == 0 ? ", but racecheck (compute-sanitizer) finds it (below)"
                 : strcmp(status, "passed") == 0 ? ", and racecheck (compute-sanitizer) found no race either"
                 : "; racecheck, which could find it, is unavailable (below)");
        view_add_note(view, note);
        if (status && strcmp(status, "failed") == 0)
            add_lines(view, "racecheck (compute-sanitizer) at the quick check's size:",
                      json_object_get(found, "findings"));
        else if (status && strcmp(status, "passed") != 0) {
            json_t *why = json_pack("[O]", json_object_get(found, "reason"));
            add_lines(view, "racecheck unavailable:", why);
            json_decref(why);
        }
    } else {
        snprintf(note + at, sizeof note - at, "It ran unchecked (--no-check), so whether the bug showed is unknown");
        view_add_note(view, note);
    }
}

void sweep_broken_notes(json_t *view, const sweep_spec *s, const json_t *runs)
{
    size_t i;
    const json_t *run;
    json_array_foreach(runs, i, run) {
        const family_broken *b = broken_of(s, run);
        if (!b || !json_is_string(json_object_get(run, "outcome")))
            continue;
        /* one note per variant and outcome: the first run of each tells it */
        bool said = false;
        for (size_t j = 0; j < i && !said; j++) {
            const json_t *before = json_array_get(runs, j);
            said = json_equal(json_object_get(before, "variant"), json_object_get(run, "variant")) &&
                   json_equal(json_object_get(before, "outcome"), json_object_get(run, "outcome"));
        }
        if (!said)
            note_run(view, b, run);
    }
}
