/* similarity.c — cudalab --similarity: the instructor's report of how alike
 * the students' kernels are to the built-in variants of their family and to
 * each other (student/fingerprint.h), to read beside the grades. It flags;
 * it never grades: the lecture's own kernel is the textbook answer.
 *
 *   cudalab --similarity [--threshold T] [--base NOTEBOOK]... [--json] NOTEBOOK...
 *
 * Each notebook's code cells that are %%kernel cells (parsed as the kernel
 * parses them) give one graded kernel per --name (the last definition, as a
 * run of the notebook leaves it). The student and the assignment are the two
 * folders above the notebook, as in nbgrader's submitted/STUDENT/ASSIGNMENT/.
 * --base names a notebook every student was given (the assignment's release
 * version): the code of its %%kernel cells (the starters' signatures and
 * scaffolding) is left out of every comparison, as MOSS's base files are.
 * One row per kernel, in the order given, as CSV (a header line first) or,
 * with --json, one object per line, with the same keys:
 *
 *   student, assignment, notebook, kernel, family,
 *   builtin, builtin_similarity     the most similar built-in variant of the family (its
 *                                   %%kernel cell as --as-kernel makes it, else its source as
 *                                   --show-source shows it; the variants broken on purpose too)
 *   peer, peer_kernel, peer_similarity   the most similar kernel of the family by another student
 *                                   ("" and 0 when none)
 *   flagged                         "builtin", "peer", "builtin peer" or "": which similarity
 *                                   reaches the threshold (a list in --json)
 *
 * Similarities have three decimals. Exit status 0; 1 when a notebook could
 * not be read (the others are still reported); 2 on a usage error.
 */
#include "exec/similarity.h"

#include <libgen.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "exec/cli.h"
#include "lang/lang.h"
#include "magic/families.h"
#include "magic/show_source.h"
#include "student/fingerprint.h"
#include "student/source_scan.h"

/* One graded kernel of one notebook, or one built-in variant (student NULL). */
typedef struct kernel_print {
    char *student, *assignment, *notebook, *name;
    const char *family;             /* the family_spec's magic: static */
    fingerprint fp;
} kernel_print;

typedef struct prints {
    kernel_print *at;
    size_t n, cap;
} prints;

static void prints_free(prints *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->at[i].student);
        free(p->at[i].assignment);
        free(p->at[i].notebook);
        free(p->at[i].name);
        fingerprint_free(&p->at[i].fp);
    }
    free(p->at);
}

/* Adds a kernel (the strings copied); 0, or -1 out of memory. */
static int prints_add(prints *p, const char *student, const char *assignment, const char *notebook,
                      const char *name, const char *family, const char *source)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        kernel_print *at = realloc(p->at, cap * sizeof *at);
        if (!at)
            return -1;
        p->at = at;
        p->cap = cap;
    }
    kernel_print *k = &p->at[p->n];
    *k = (kernel_print){.student = student ? strdup(student) : NULL, .assignment = strdup(assignment),
                        .notebook = strdup(notebook), .name = strdup(name), .family = family};
    p->n++;                         /* kept even half made: prints_free frees what it has */
    return fingerprint_make(source, &k->fp) != 0 || (student && !k->student) || !k->assignment || !k->notebook ||
                   !k->name ? -1 : 0;
}

/* ---- the built-in variants ---- */

/* The code a student could paste of a variant: its %%kernel cell's body, else its shown source. */
static char *builtin_source(const char *family, const char *variant)
{
    char why[300];
    char *cell = show_source_kernel_cell(family, variant, why, sizeof why);
    if (!cell)
        return show_source_text(family, variant, NULL);
    char *nl = strchr(cell, '\n');
    char *body = strdup(nl ? nl + 1 : "");
    free(cell);
    return body;
}

static int add_builtins(prints *out)
{
    size_t n;
    const show_region *r = show_source_regions(&n);
    for (size_t i = 0; i < n; i++) {
        const family_spec *f = family_find(r[i].family);
        /* a part the %%kernel cell leaves out (stencil's 2D kernel) is a kernel of its own: "tiled 2D" */
        bool part = r[i].part && *r[i].part;
        char name[160];
        snprintf(name, sizeof name, "%s%s%s", r[i].variant, part ? " " : "", part ? r[i].part : "");
        bool seen = false;
        for (size_t j = 0; j < out->n && !seen; j++)
            seen = strcmp(out->at[j].name, name) == 0 && strcmp(out->at[j].family, r[i].family) == 0;
        if (!f || seen)
            continue;
        char *source = part ? strdup(r[i].text) : builtin_source(r[i].family, r[i].variant);
        int rc = source ? prints_add(out, NULL, "", "", name, f->magic, source) : 0;
        free(source);
        if (rc != 0)
            return -1;
    }
    size_t at = 0;
    for (const family_spec *f; (f = family_next_taking_kernels(&at));)
        for (const family_broken *b = f->broken; b && b->v.name; b++)
            if (prints_add(out, NULL, "", "", b->v.name, f->magic, b->source) != 0)
                return -1;
    return 0;
}

/* ---- the submitted notebooks ---- */

/* A code cell's text: "source" is a string or a list of strings. New string, or NULL. */
static char *cell_text(const json_t *cell)
{
    const json_t *src = json_object_get(cell, "source");
    if (json_is_string(src))
        return strdup(json_string_value(src));
    size_t len = 0, i;
    const json_t *part;
    json_array_foreach(src, i, part)
        len += json_string_length(part);
    char *text = malloc(len + 1), *w = text;
    if (!text)
        return NULL;
    json_array_foreach(src, i, part) {
        memcpy(w, json_string_value(part) ? json_string_value(part) : "", json_string_length(part));
        w += json_string_length(part);
    }
    *w = '\0';
    return text;
}

/* The folder name `up` levels above path ("" when there is none). */
static void folder_above(const char *path, int up, char *buf, size_t len)
{
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    char *p = copy;
    for (int i = 0; i < up; i++)
        p = dirname(p);
    snprintf(buf, len, "%s", strcmp(p, ".") == 0 || strcmp(p, "/") == 0 ? "" : basename(p));
}

/* The %%kernel cell's kernel, replacing an earlier definition of the same name in this notebook. */
static int add_kernel_cell(prints *out, size_t first_of_notebook, const char *path, const command *cmd)
{
    const char *family = json_string_value(json_object_get(cmd->params, "for"));
    const family_spec *f = family ? family_find(family) : NULL;
    if (!f || !f->student || !cmd->body)
        return 0;                   /* the kernel refuses it too: nothing runs, nothing to grade */
    char name[256];
    const char *given = json_string_value(json_object_get(cmd->params, "name"));
    if (given)
        snprintf(name, sizeof name, "%s", given);
    else
        student_first_kernel(cmd->body, name, sizeof name);
    for (size_t i = first_of_notebook; i < out->n; i++)
        if (strcmp(out->at[i].name, name) == 0) {
            fingerprint_free(&out->at[i].fp);
            out->at[i].family = f->magic;
            return fingerprint_make(cmd->body, &out->at[i].fp);
        }
    char student[256], assignment[256];
    folder_above(path, 2, student, sizeof student);
    folder_above(path, 1, assignment, sizeof assignment);
    return prints_add(out, student, assignment, path, name, f->magic, cmd->body);
}

static int add_notebook(prints *out, const char *path)
{
    char *text = cli_read_file(path);
    json_error_t jerr;
    json_t *nb = text ? json_loads(text, 0, &jerr) : NULL;
    free(text);
    if (!nb) {
        fprintf(stderr, "cudalab --similarity: cannot read the notebook %s%s%s\n", path, text ? ": " : "",
                text ? jerr.text : "");
        return -1;
    }
    size_t first = out->n, i;
    const json_t *cell;
    int rc = 0;
    json_array_foreach(json_object_get(nb, "cells"), i, cell) {
        const char *type = json_string_value(json_object_get(cell, "cell_type"));
        if (!type || strcmp(type, "code") != 0)
            continue;
        char *src = cell_text(cell);
        command *cmds = NULL;
        parse_error perr;
        int n = src && strncmp(src + strspn(src, " \t\r\n"), "%%kernel", 8) == 0 ? cell_parse(NULL, src, &cmds, &perr)
                                                                                : 0;
        if (n < 0)
            fprintf(stderr, "cudalab --similarity: %s: a %%%%kernel cell that does not parse (%s: %s): not reported\n",
                    path, perr.error.ename, perr.error.evalue);
        for (int c = 0; c < n && rc == 0; c++)
            if (strcmp(cmds[c].magic->name, "kernel") == 0)
                rc = add_kernel_cell(out, first, path, &cmds[c]);
        if (n > 0)
            commands_free(cmds, n);
        free(src);
    }
    json_decref(nb);
    if (rc != 0)
        fprintf(stderr, "cudalab --similarity: out of memory\n");
    return rc;
}

/* ---- the report ---- */

typedef struct best {
    const kernel_print *with;
    double similarity;
} best;

/* The row of kernel k: the most similar built-in and peer, as JSON. */
static json_t *row(const kernel_print *k, const prints *builtins, const prints *kernels, double threshold)
{
    best b = {0}, p = {0};
    for (size_t i = 0; i < builtins->n; i++) {
        const kernel_print *o = &builtins->at[i];
        double s = o->family == k->family ? fingerprint_similarity(&k->fp, &o->fp) : -1;
        if (s > b.similarity || (!b.with && s >= 0))
            b = (best){o, s};
    }
    for (size_t i = 0; i < kernels->n; i++) {
        const kernel_print *o = &kernels->at[i];
        if (o->family != k->family || strcmp(o->student, k->student) == 0)
            continue;
        double s = fingerprint_similarity(&k->fp, &o->fp);
        if (s > p.similarity || !p.with)
            p = (best){o, s};
    }
    b.similarity = round(b.similarity * 1000) / 1000;   /* as printed: flagged exactly when it reads so */
    p.similarity = round(p.similarity * 1000) / 1000;
    json_t *flagged = json_array();
    if (b.with && b.similarity >= threshold)
        json_array_append_new(flagged, json_string("builtin"));
    if (p.with && p.similarity >= threshold)
        json_array_append_new(flagged, json_string("peer"));
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:f, s:s, s:s, s:f, s:o}", "student", k->student,
                     "assignment", k->assignment, "notebook", k->notebook, "kernel", k->name, "family", k->family,
                     "builtin", b.with ? b.with->name : "", "builtin_similarity", b.similarity, "peer",
                     p.with ? p.with->student : "", "peer_kernel", p.with ? p.with->name : "", "peer_similarity",
                     p.similarity, "flagged", flagged);
}

static const char *const columns[] = {"student", "assignment", "notebook", "kernel", "family", "builtin",
                                      "builtin_similarity", "peer", "peer_kernel", "peer_similarity", "flagged",
                                      NULL};

/* A CSV field (RFC 4180): quoted where it holds a comma, a quote or a line break. */
static void csv_field(const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static void print_csv(const json_t *r)
{
    for (size_t c = 0; columns[c]; c++) {
        const json_t *v = json_object_get(r, columns[c]);
        if (c)
            putchar(',');
        if (json_is_real(v)) {
            printf("%.3f", json_real_value(v));
        } else if (json_is_array(v)) {
            char words[64] = "";
            size_t i;
            const json_t *w;
            json_array_foreach(v, i, w)
                snprintf(words + strlen(words), sizeof words - strlen(words), "%s%s", i ? " " : "",
                         json_string_value(w));
            csv_field(words);
        } else {
            csv_field(json_string_value(v));
        }
    }
    putchar('\n');
}

static void usage(FILE *f)
{
    fprintf(f, "usage: cudalab --similarity [--threshold T] [--base NOTEBOOK]... [--json] NOTEBOOK...\n"
            "  each graded kernel (%%%%kernel cell) of the notebooks, with its highest similarity to the\n"
            "  built-in variants of its family and to another student's kernel, flagged from T (default %g);\n"
            "  the code of the --base notebooks' %%%%kernel cells (what every student was given) left out\n",
            FINGERPRINT_FLAG);
}

int similarity_main(int argc, char **argv)
{
    double threshold = FINGERPRINT_FLAG;
    bool json_mode = false;
    int first = argc, rc = 0;
    prints builtins = {0}, kernels = {0}, base = {0};
    for (int i = 0; i < argc; i++) {
        char *end;
        if (strcmp(argv[i], "--json") == 0) {
            json_mode = true;
        } else if (strcmp(argv[i], "--threshold") == 0 && i + 1 < argc) {
            threshold = strtod(argv[++i], &end);
            if (*end || end == argv[i] || !(threshold >= 0 && threshold <= 1)) {
                fprintf(stderr, "cudalab --similarity: --threshold %s: a number from 0 to 1\n", argv[i]);
                prints_free(&base);
                return 2;
            }
        } else if (strcmp(argv[i], "--base") == 0 && i + 1 < argc) {
            if (add_notebook(&base, argv[++i]) != 0)
                rc = 1;
        } else if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            prints_free(&base);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            fprintf(stderr, "cudalab --similarity: unknown or incomplete argument '%s'\n", argv[i]);
            usage(stderr);
            prints_free(&base);
            return 2;
        } else {
            first = i;
            break;
        }
    }
    if (first == argc) {
        usage(stderr);
        prints_free(&base);
        return 2;
    }
    if (add_builtins(&builtins) != 0) {
        fprintf(stderr, "cudalab --similarity: out of memory\n");
        rc = 2;
    }
    for (int i = first; i < argc && rc != 2; i++)
        if (add_notebook(&kernels, argv[i]) != 0)
            rc = 1;
    for (size_t b = 0; b < base.n; b++) {
        for (size_t i = 0; i < builtins.n; i++)
            fingerprint_remove(&builtins.at[i].fp, &base.at[b].fp);
        for (size_t i = 0; i < kernels.n; i++)
            fingerprint_remove(&kernels.at[i].fp, &base.at[b].fp);
    }
    if (!json_mode && rc != 2)
        for (size_t c = 0; columns[c]; c++)
            printf("%s%s", c ? "," : "", columns[c]);
    if (!json_mode && rc != 2)
        putchar('\n');
    for (size_t i = 0; i < kernels.n && rc != 2; i++) {
        json_t *r = row(&kernels.at[i], &builtins, &kernels, threshold);
        if (!r) {
            rc = 2;
            break;
        }
        if (json_mode) {
            char *line = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
            if (line)
                puts(line);
            free(line);
        } else {
            print_csv(r);
        }
        json_decref(r);
    }
    fflush(stdout);
    prints_free(&builtins);
    prints_free(&kernels);
    prints_free(&base);
    return rc;
}
