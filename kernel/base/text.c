/* text.c — small text utilities every layer uses: "did you mean" (edit
 * distance and the nearest candidate), a message cut at a UTF-8 boundary
 * (fail_into), and the one byte-count formatter of the kernel's messages.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/text.h"
#include "base/utf8.h"

/* Levenshtein distance over bytes, two rows. SIZE_MAX if out of memory. */
size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t *row = malloc((lb + 1) * sizeof *row);
    if (!row)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];           /* row[i-1][j-1] */
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];         /* row[i-1][j] */
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    size_t d = row[lb];
    free(row);
    return d;
}

void suggest_init(suggest *s, const char *word)
{
    s->word = word;
    s->best = NULL;
    s->dist = SIZE_MAX;
}

void suggest_add(suggest *s, const char *candidate)
{
    size_t lw = strlen(s->word), lc = strlen(candidate);
    size_t limit = lw / 3 > 2 ? lw / 3 : 2;
    /* The distance is at least the length difference: skip hopeless ones
     * before paying for the table (the word may be a pasted paragraph). */
    size_t diff = lw > lc ? lw - lc : lc - lw;
    if (diff > limit)
        return;
    size_t d = edit_distance(s->word, candidate);
    /* d >= lc means nothing of the candidate survives: no suggestion. */
    if (d <= limit && d < lc && d < s->dist) {
        s->best = candidate;
        s->dist = d;
    }
}

void format_bytes(double b, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (u < 6 && b >= 1024) {
        b /= 1024;
        u++;
    }
    if (b >= 1024)                  /* past EiB: an absurd request, in bytes */
        snprintf(buf, len, "%.3g bytes", b * pow(1024.0, 6));
    else
        snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, units[u]);
}

int fail_into(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    utf8_trim(buf);
    return -1;
}

int exe_dir(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0 || (size_t)n >= len - 1)
        return -1;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    return 0;
}
