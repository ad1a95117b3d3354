/* source_asm.c — inline asm found in a preprocessed translation unit (see
 * source_check_no_asm in source_check.h): on the CPU path, after the host
 * compiler's -E, so that asm from a header the cell includes is found too,
 * named by the cell line (or the header) it comes from.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "student/source_check.h"
#include "student/source_check_internal.h"

/* A line marker of -E output, `# 12 "file" 1 3`: its line number and file. */
static bool line_marker(const char *p, const char *end, long *lineno, const char **file, size_t *flen)
{
    if (*p != '#')
        return false;
    p++;
    while (p < end && *p == ' ')
        p++;
    if (p >= end || !isdigit((unsigned char)*p))
        return false;
    *lineno = strtol(p, (char **)&p, 10);
    while (p < end && *p == ' ')
        p++;
    if (p >= end || *p != '"')
        return false;
    const char *f = ++p;
    while (p < end && *p != '"')
        p += *p == '\\' ? 2 : 1;
    *file = f;
    *flen = (size_t)(p - f);
    return true;
}

static bool is_asm(const char *p, size_t n)
{
    return (n == 3 && memcmp(p, "asm", 3) == 0) || (n == 5 && memcmp(p, "__asm", 5) == 0) ||
           (n == 7 && memcmp(p, "__asm__", 7) == 0);
}

/* The asm word on [p, end), skipping literals (raw ones to their delimiter): its start, or NULL. */
static const char *asm_in_line(const char *p, const char *end, const char *text_end, const char **resume)
{
    *resume = NULL;
    while (p < end) {
        if (source_ident_start(*p)) {
            const char *w = p;
            while (p < end && source_ident_char(*p))
                p++;
            if (is_asm(w, (size_t)(p - w)))
                return w;
            size_t wl = (size_t)(p - w);
            bool raw = (wl == 1 && w[0] == 'R') || (wl == 2 && w[1] == 'R' && strchr("LuU", w[0])) ||
                       (wl == 3 && memcmp(w, "u8R", 3) == 0);
            if (raw && p < end && *p == '"') {
                /* a raw string from a header: to its )delim", perhaps lines later; one that does not
                 * close as expected is read on as ordinary text (more is searched, never less) */
                const char *d = p + 1, *open = memchr(d, '(', (size_t)(end - d));
                if (open && open - d <= 16) {
                    char close[20];
                    int cl = snprintf(close, sizeof close, ")%.*s\"", (int)(open - d), d);
                    const char *stop = memmem(open, (size_t)(text_end - open), close, (size_t)cl);
                    if (stop) {
                        *resume = stop + cl;
                        return NULL;
                    }
                }
            }
        } else if (isdigit((unsigned char)*p)) {
            while (p < end &&
                   (source_ident_char(*p) || *p == '.' || (*p == '\'' && p + 1 < end && source_ident_char(p[1]))))
                p++;
        } else if (*p == '"' || *p == '\'') {
            char q = *p++;
            while (p < end && *p != q)
                p += *p == '\\' ? 2 : 1;
            p++;
        } else {
            p++;
        }
    }
    return NULL;
}

int source_check_no_asm(const char *preprocessed, size_t len, const char *cell, source_refusal *r)
{
    memset(r, 0, sizeof *r);
    const char *p = preprocessed, *end = preprocessed + len;
    size_t cell_len = strlen(cell);
    bool started = false, in_cell = false;
    long lineno = 0;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        const char *file;
        size_t flen;
        long marked;
        if (line_marker(p, eol, &marked, &file, &flen)) {
            in_cell = flen == cell_len && memcmp(file, cell, flen) == 0;
            started |= in_cell;
            lineno = marked;
        } else if (started) {
            for (const char *q = p;;) {
                const char *resume = NULL;
                const char *w = asm_in_line(q, eol, end, &resume);
                if (w) {
                    size_t wl = 0;
                    while (w + wl < eol && source_ident_char(w[wl]))
                        wl++;
                    if (in_cell)
                        return source_refuse(r, (int)lineno, "inline %.*s is PTX or SASS, which only a GPU runs: the "
                                             "CPU runner cannot run this kernel (run it on a GPU, --backend cuda)",
                                             (int)wl, w);
                    return source_refuse(r, 0, "inline %.*s (in a header the cell includes) is PTX or SASS, which "
                                         "only a GPU runs: the CPU runner cannot run this kernel (run it on a GPU, "
                                         "--backend cuda)", (int)wl, w);
                }
                if (!resume)
                    break;
                for (const char *c = q; c < resume; c++)   /* the lines a raw string spans */
                    lineno += *c == '\n';
                q = resume;
                eol = memchr(q, '\n', (size_t)(end - q));
                if (!eol)
                    eol = end;
            }
            lineno++;
        }
        p = eol + (eol < end);
    }
    return 0;
}
