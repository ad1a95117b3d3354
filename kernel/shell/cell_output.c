/* cell_output.c — what a running cell shows: stream text, coalesced (sent when
 * other output follows, when the command ends, past 64 KiB, or 50 ms after it
 * started to pile up, so a cell printing thousands of lines sends a handful of
 * messages, and capped at CUDALAB_MAX_OUTPUT), and results rendered to bundles:
 * display_data, update_display_data for progress (a sweep's final table is a
 * display_data of its own; a progress display's first frame has no text/plain, which a terminal
 * would keep), and the last command's result as the cell's
 * execute_result. A view's "next_input" text is kept for the reply's
 * set_next_input payload (execute.c). A %interact run's output goes to its
 * widget instead (interact.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "grade/recorded.h"
#include "render/render.h"
#include "shell/interact.h"
#include "shell/session.h"

void stream_flush(shell_session *s)
{
    struct cell *c = s->cell;
    if (!c || c->pend.len == 0)
        return;
    json_t *text = json_stringn(c->pend.data, c->pend.len);
    if (!text)      /* a command split a UTF-8 sequence across writes: keep what is valid */
        text = json_stringn_nocheck("", 0);
    if (c->ia)      /* a %interact run: into its widget's Output */
        interact_collect_stream(s, c->pend_name, text);
    else
        session_publish(s, &c->req.msg, "stream", json_pack("{s:s, s:o}", "name", c->pend_name, "text", text));
    strbuf_reset(&c->pend);
    c->flush_at_ms = 0;
}

static void stream_append(shell_session *s, const char *name, const char *text, size_t len)
{
    struct cell *c = s->cell;
    if (c->pend.len && strcmp(c->pend_name, name) != 0)
        stream_flush(s);                    /* keep stdout and stderr in order */
    if (strbuf_append(&c->pend, text, len) != 0) {
        c->pend.failed = false;             /* out of memory: this piece is lost, not those after it */
        return;
    }
    snprintf(c->pend_name, sizeof c->pend_name, "%s", name);
    if (c->flush_at_ms == 0)
        c->flush_at_ms = session_now_ms(s) + STREAM_FLUSH_MS;
    if (c->pend.len >= STREAM_FLUSH_BYTES)
        stream_flush(s);
}

static void cell_stream(void *impl, const char *name, const char *text)
{
    shell_session *s = impl;
    struct cell *c = s->cell;
    if (!c || c->silent || !text || !*text || c->stream_capped || !name)
        return;
    if (strcmp(name, "stdout") != 0 && strcmp(name, "stderr") != 0)
        name = "stdout";
    size_t len = strlen(text);
    if (c->stream_bytes + len > s->lim.max_output) {
        /* a runaway command must not flood iopub: show what fits, at a
         * character's boundary, say so once and drop the rest */
        size_t fits = (size_t)utf8_clip(text, s->lim.max_output - c->stream_bytes);
        stream_append(s, name, text, fits);
        c->stream_bytes += fits;
        char note[160];
        snprintf(note, sizeof note, "\n[cudalab: output truncated after %zu bytes "
                 "(CUDALAB_MAX_OUTPUT); the rest of this cell's output is not shown]\n", c->stream_bytes);
        stream_append(s, "stdout", note, strlen(note));
        stream_flush(s);
        c->stream_capped = true;
        return;
    }
    c->stream_bytes += len;
    stream_append(s, name, text, len);
}

/* A progress display's first frame. A terminal frontend (jupyter console) prints a display_data's
 * text/plain and ignores every update of it, so a first frame with text/plain would stay in its
 * scrollback above the final result for good. The display is created without text/plain (a
 * notebook renders its HTML at once; the console prints nothing) and at once updated to the whole
 * bundle, which frontends that follow updates show and a saved notebook keeps. Steals data and
 * transient. */
static void progress_show(shell_session *s, json_t *data, json_t *transient)
{
    struct cell *c = s->cell;
    json_t *first = json_copy(data);
    if (first)
        json_object_del(first, "text/plain");
    session_publish(s, &c->req.msg, "display_data",
                    json_pack("{s:o, s:{}, s:O}", "data", first ? first : json_object(), "metadata",
                              "transient", transient));
    session_publish(s, &c->req.msg, "update_display_data",
                    json_pack("{s:o, s:{}, s:o}", "data", data, "metadata", "transient", transient));
}

static void cell_result(void *impl, json_t *doc, json_t *view, const char *display_id, enum result_mode mode)
{
    shell_session *s = impl;
    struct cell *c = s->cell;
    stream_flush(s);
    bool stand_in = c && c->waiting && recording_is_stand_in(doc);
    if (stand_in) {                     /* a --gpu-only command not run here: its recording, or why none */
        char why[PATH_MAX + 400];
        if (!recording_stand_in(s->recording, cell_cmd(c), s->runs, c->count, doc, view, why, sizeof why)) {
            cell_stream(s, "stdout", why);
            json_decref(doc);
            json_decref(view);
            return;
        }
    } else if (c && c->waiting && !c->ia) {     /* a device command's: recorded, or shown beside its recording */
        recording_result(s->recording, cell_cmd(c), s->runs, c->count, doc, view,
                         mode == RESULT_PLAIN || mode == RESULT_FINAL);
    }
    if (doc && c && !stand_in && (mode == RESULT_PLAIN || mode == RESULT_FINAL))
        results_record(s->results, doc, c->count);     /* for %assert, silent cells too */
    json_t *next_input = json_object_get(view, "next_input");
    if (c && json_is_string(next_input)) {
        json_decref(c->next_input);
        c->next_input = json_incref(next_input);
    }
    if (c && !c->silent && !c->ia && display_id && mode == RESULT_END) {
        /* A progress display's last state: the line its command ended it with (what ran, in how long),
         * never an empty bundle, which a saved notebook would keep as an empty output. A terminal
         * (jupyter console) ignores update_display_data: a final result is a new output (FINAL). */
        json_t *last = json_is_object(view) ? render_bundle(NULL, view) : NULL;
        session_publish(s, &c->req.msg, "update_display_data",
                        json_pack("{s:o, s:{}, s:{s:s}}", "data", last ? last : json_object(), "metadata",
                                  "transient", "display_id", display_id));
    }
    /* a %interact run's progress is left out: the widget keeps the last result until the next one */
    bool shown = c && !c->silent && mode != RESULT_END && (!c->ia || mode == RESULT_PLAIN || mode == RESULT_FINAL);
    json_t *data = shown ? render_bundle(doc, view) : NULL;
    if (data && c->ia) {
        interact_collect_bundle(s, data);
    } else if (data) {
        json_t *transient = display_id ? json_pack("{s:s}", "display_id", display_id) : json_object();
        if (mode == RESULT_UPDATE) {
            session_publish(s, &c->req.msg, "update_display_data",
                           json_pack("{s:o, s:{}, s:o}", "data", data, "metadata", "transient", transient));
        } else if (mode == RESULT_FINAL) {
            json_decref(transient);
            session_publish(s, &c->req.msg, "display_data",
                           json_pack("{s:o, s:{}, s:{}}", "data", data, "metadata", "transient"));
        } else if (mode == RESULT_PLAIN && c->next == c->ncmds - 1) {
            /* the last command's result is the cell's value: Out[n] */
            history_set_output(s->history, c->count,
                               json_string_value(json_object_get(data, "text/plain")));
            json_decref(transient);
            session_publish(s, &c->req.msg, "execute_result",
                           json_pack("{s:i, s:o, s:{}}", "execution_count", c->count, "data", data, "metadata"));
        } else if (mode == RESULT_SHOW) {
            progress_show(s, data, transient);
        } else {
            session_publish(s, &c->req.msg, "display_data",
                           json_pack("{s:o, s:{}, s:o}", "data", data, "metadata", "transient", transient));
        }
    }
    json_decref(doc);
    json_decref(view);
}

const magic_out cell_out = { cell_stream, cell_result };

