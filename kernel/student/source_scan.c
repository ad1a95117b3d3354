/* source_scan.c — what is read from a student's source without compiling it
 * (see source_scan.h): the first __global__ function's name, whether it uses
 * TILE, and the types of a contract's parameter list that the compile-time
 * signature check compares.
 */
#include "student/source_scan.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the signature ---- */

int student_param_types(const char *params, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (const char *p = params; *p;) {
        size_t end = strcspn(p, ",");
        /* the words of one parameter: its last identifier is its name, every "const" goes */
        char words[16][64];
        int nw = 0;
        for (size_t i = 0; i < end;) {
            if (p[i] == ' ') {
                i++;
                continue;
            }
            size_t w = p[i] == '*' ? 1 : strcspn(p + i, " *,");
            if (w > end - i)
                w = end - i;
            if (nw == 16 || w >= sizeof words[0])
                return -1;
            snprintf(words[nw++], sizeof words[0], "%.*s", (int)w, p + i);
            i += w;
        }
        if (nw > 0 && (isalpha((unsigned char)words[nw - 1][0]) || words[nw - 1][0] == '_'))
            nw--;
        const char *sep = n ? ", " : "";
        for (int i = 0; i < nw; i++) {
            if (strcmp(words[i], "const") == 0)
                continue;
            int w = snprintf(out + n, len - n, "%s%s", sep, words[i]);
            if (w < 0 || (size_t)w >= len - n)
                return -1;
            n += (size_t)w;
            sep = " ";
        }
        p += end;
        if (*p == ',')
            p++;
    }
    return 0;
}

/* ---- finding things in the source ---- */

/* The source with comments and string literals blanked (same length), so
 * that a word search sees code only. */
static char *code_only(const char *text)
{
    char *s = strdup(text);
    for (char *p = s; p && *p; p++) {
        if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n')
                *p++ = ' ';
            if (!*p)
                break;
        } else if (p[0] == '/' && p[1] == '*') {
            while (*p && !(p[0] == '*' && p[1] == '/'))
                *p++ = ' ';
            if (!*p)
                break;
            p[0] = p[1] = ' ';
            p++;
        } else if (*p == '"') {
            for (p++; *p && *p != '"' && *p != '\n'; p++) {
                if (p[0] == '\\' && p[1])
                    *p++ = ' ';
                *p = ' ';
            }
            if (!*p)
                break;
        }
    }
    return s;
}

static bool word_at(const char *s, const char *p, const char *word)
{
    size_t n = strlen(word);
    return strncmp(p, word, n) == 0 && (p == s || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
           !(isalnum((unsigned char)p[n]) || p[n] == '_');
}

/* The identifier right before s[at] (spaces skipped), as [*b, *e). */
static void word_before(const char *s, const char *at, const char **b, const char **e)
{
    *e = at;
    while (*e > s && isspace((unsigned char)(*e)[-1]))
        (*e)--;
    *b = *e;
    while (*b > s && (isalnum((unsigned char)(*b)[-1]) || (*b)[-1] == '_'))
        (*b)--;
}

void student_first_kernel(const char *text, char *buf, size_t len)
{
    buf[0] = '\0';
    char *s = code_only(text);
    for (const char *p = s; s && !buf[0] && (p = strstr(p, "__global__")); p += 10) {
        if (!word_at(s, p, "__global__"))
            continue;
        /* the name is the word before the parameter list's '(': not an
         * attribute's, as in __global__ void __launch_bounds__(256) k(...) */
        for (const char *open = strchr(p, '('); open; open = strchr(open + 1, '(')) {
            const char *b, *e;
            word_before(s, open, &b, &e);
            if (b < e && (size_t)(e - b) == strlen("__launch_bounds__") && strncmp(b, "__launch_bounds__", 17) == 0) {
                open = strchr(open, ')');       /* its arguments: (256) or (256, 2) */
                if (!open)
                    break;
                continue;
            }
            if (b < e)
                snprintf(buf, len, "%.*s", (int)(e - b), b);
            break;
        }
    }
    free(s);
}

bool student_uses_tile(const char *text)
{
    char *s = code_only(text);
    bool found = false;
    for (const char *p = s; s && !found && (p = strstr(p, "TILE")); p += 4)
        found = word_at(s, p, "TILE");
    free(s);
    return found;
}
