/* splice.c — a source with edits spliced in (see splice.h), written so that
 * every line keeps its number: an edit's newlines are kept, and what waits for
 * the end of a line goes after it, followed by a #line back to the numbering.
 */
#include "student/splice.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

typedef struct writer {
    strbuf out;
    strbuf pending;               /* #define lines waiting for the end of the current line */
    int line;                   /* the cell line being written */
    const char *file;
} writer;

/* A newline of the source: written, then any #define lines waiting for it and a #line back to the numbering. */
static void end_line(writer *w)
{
    strbuf_puts(&w->out, "\n");
    w->line++;
    if (w->pending.len) {
        strbuf_append(&w->out, w->pending.data, w->pending.len);
        w->pending.len = 0;
        strbuf_printf(&w->out, "#line %d \"", w->line);
        for (const char *f = w->file; *f; f++) {
            if (*f == '"' || *f == '\\')
                strbuf_puts(&w->out, "\\");
            strbuf_append(&w->out, f, 1);
        }
        strbuf_puts(&w->out, "\"\n");
    }
}

static void copy_text(writer *w, const char *s, size_t from, size_t to)
{
    strbuf_append(&w->out, s + from, to - from);
    w->line += cuda_count_lines(s, from, to);
}

/* The source with the edits in place: their newlines kept, code newlines
 * followed by what waits for them. */
char *splice_edits(const char *s, const lexed *lx, const splice_edit *edits, size_t nedits, int first_line,
                   const char *file)
{
    writer w = { { 0 }, { 0 }, first_line, file };
    size_t len = strlen(s), pos = 0, e = 0, b = 0;
    while (pos < len) {
        while (b < lx->nbreaks && lx->breaks[b] < pos)
            b++;
        size_t next_edit = e < nedits ? edits[e].at : len;
        size_t next_break = b < lx->nbreaks ? lx->breaks[b] : len;
        if (next_edit <= next_break && e < nedits) {
            const splice_edit *ed = &edits[e++];
            copy_text(&w, s, pos, ed->at);
            strbuf_puts(&w.out, ed->text);
            if (ed->after)
                strbuf_puts(&w.pending, ed->after);
            for (size_t k = ed->at; k < ed->end; k++)
                if (s[k] == '\n')
                    end_line(&w);
            pos = ed->end;
        } else if (b < lx->nbreaks) {
            copy_text(&w, s, pos, next_break);
            end_line(&w);
            pos = next_break + 1;
        } else {
            copy_text(&w, s, pos, len);
            pos = len;
        }
    }
    if (w.pending.len) {        /* the source ends on the declaration's line */
        strbuf_puts(&w.out, "\n");
        strbuf_append(&w.out, w.pending.data, w.pending.len);
    }
    bool failed = w.pending.failed;
    strbuf_free(&w.pending);
    char *text = strbuf_take(&w.out);
    if (failed) {
        free(text);
        return NULL;
    }
    return text;
}
