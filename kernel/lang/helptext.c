/* helptext.c — help generated from the magic specs: usage lines, the flags
 * table, examples, and the list of all magics. Plain, aligned, deterministic
 * text, used by %help, inspect_request and the command line; %help's rich view
 * reuses the per-flag cells so text and HTML say the same thing.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "lang/parse_internal.h"

#define COLS 5

__attribute__((format(printf, 3, 4)))
static void add(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
    utf8_trim(buf);
}

static size_t nflags(const magic_spec *m)
{
    return magic_flag_count(m);
}

static const char *metavar(const flag_spec *f)
{
    switch (f->type) {
    case FLAG_INT:    return "N";
    case FLAG_FLOAT:  return "X";
    case FLAG_DIMS:   return "AxB";
    case FLAG_CHOICE: return "NAME";
    case FLAG_STRING: return "TEXT";
    case FLAG_BOOL:   break;
    }
    return "";
}

/* A switch that is on by default is shown the way it is used: --no-check. */
static bool on_by_default(const flag_spec *f)
{
    char msg[256];
    json_t *v = f->type == FLAG_BOOL ? flag_default_value(f, msg, sizeof msg) : NULL;
    bool on = json_is_true(v);
    json_decref(v);
    return on;
}

static void usage(const magic_spec *m, bool cell, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s", cell ? "%%" : "%", m->name);
    for (size_t i = 0; i < nflags(m); i++) {
        const flag_spec *f = magic_flag(m, i);
        bool req = f->opts & FLAG_REQUIRED;
        add(buf, len, " %s--%s%s", req ? "" : "[", on_by_default(f) ? "no-" : "", f->name);
        if (f->type != FLAG_BOOL)
            add(buf, len, " %s%s", metavar(f), f->opts & FLAG_LIST ? ",..." : "");
        add(buf, len, "%s", req ? "" : "]");
    }
    if (m->positional)
        add(buf, len, " %s", m->positional);
}

void magic_usage(const magic_spec *m, char *buf, size_t len)
{
    usage(m, !(m->mode & MAGIC_LINE), buf, len);
}

void flag_label(const flag_spec *f, char *buf, size_t len)
{
    if (f->short_name)
        snprintf(buf, len, "-%c, --%s", f->short_name, f->name);
    else
        snprintf(buf, len, "--%s", f->name);
}

const char *flag_type_name(const flag_spec *f)
{
    switch (f->type) {
    case FLAG_BOOL:   return "bool";
    case FLAG_INT:    return "int";
    case FLAG_FLOAT:  return "float";
    case FLAG_STRING: return "string";
    case FLAG_CHOICE: return "choice";
    case FLAG_DIMS:   return "dims";
    }
    return "?";
}

void flag_default_text(const flag_spec *f, char *buf, size_t len)
{
    if (f->opts & FLAG_REQUIRED)
        snprintf(buf, len, "required");
    else if (f->def && f->cpu_def)
        snprintf(buf, len, "%s (CPU: %s)", f->def, f->cpu_def);
    else if (f->def)
        snprintf(buf, len, "%s", f->def);
    else
        snprintf(buf, len, "%s", f->type == FLAG_BOOL ? "false" : "-");
}

void flag_allowed_text(const lab_session *lab, const flag_spec *f, char *buf, size_t len)
{
    buf[0] = '\0';
    bool iset = !(f->imin == 0 && f->imax == 0), fset = !(f->fmin == 0 && f->fmax == 0);
    if (f->type == FLAG_INT && iset)
        snprintf(buf, len, "%lld..%lld", f->imin, f->imax);
    else if (f->type == FLAG_FLOAT && fset)
        snprintf(buf, len, "%g..%g", f->fmin, f->fmax);
    else if (f->type == FLAG_DIMS && iset)
        snprintf(buf, len, "1-3 sizes, each %lld..%lld", f->imin < 1 ? 1 : f->imin, f->imax);
    else if (f->type == FLAG_DIMS)
        snprintf(buf, len, "1-3 positive sizes");
    else if (f->type == FLAG_CHOICE) {
        const char *c;
        for (size_t i = 0; (c = flag_choice(lab, f, i)); i++)
            add(buf, len, "%s%s", i ? "|" : "", c);
    }
}

static void student_text(FILE *out, const family_spec *fam);

/* The family's variants, from its contract: name, what it teaches, its launch. */
static void variants_text(FILE *out, const lab_session *lab, const family_spec *fam)
{
    size_t w = 0;
    const cl_variant *v;
    for (size_t i = 0; (v = family_variant(lab, fam, i)); i++)
        if (utf8_chars(v->name) > w)
            w = utf8_chars(v->name);
    fprintf(out, "\nVariants (--variant; all runs every one but those broken on purpose):\n");
    for (size_t i = 0; (v = family_variant(lab, fam, i)); i++)
        fprintf(out, "  %s%*s  %s%s (launch: %s)\n", v->name, (int)(w - utf8_chars(v->name)), "", v->teaches,
                v->flags & CL_V_BROKEN ? " [broken on purpose: a wrong result is expected]"
                : v->flags & CL_V_RUNTIME ? " [yours]" : "", v->launch);
    if (fam->student)
        student_text(out, fam);
}

/* What a student's kernel for the family implements (%%kernel --for it), in each shape. */
static void student_text(FILE *out, const family_spec *fam)
{
    fprintf(out, "\nYour own kernels (%%%%kernel --for %s --name NAME) implement:\n"
            "  __global__ void NAME(%s)\n  launch: %s\n  quick check: %%%s %s\n", fam->magic,
            fam->student->params, fam->student->launch, fam->magic, fam->quick);
    if (fam->student_2d)
        fprintf(out, "In 2D (%%%%kernel --for %s --dim 2 --name NAME):\n"
                "  __global__ void NAME(%s)\n  launch: %s\n  quick check: %%%s %s\n", fam->magic,
                fam->student_2d->params, fam->student_2d->launch, fam->magic, fam->quick_2d);
    if (fam->student_bt)
        fprintf(out, "With B transposed (%%%%kernel --for %s --bt --name NAME), for corner turning:\n"
                "  __global__ void NAME(%s)\n  launch: %s\n", fam->magic, fam->student_bt->params,
                fam->student_bt->launch);
}

/* %help kernel: every family that takes students' kernels. */
static void student_families_text(FILE *out)
{
    size_t at = 0;
    for (const family_spec *fam; (fam = family_next_taking_kernels(&at));)
        student_text(out, fam);
}

char *magic_help_head(const lab_session *lab, const magic_spec *m)
{
    char *text = NULL, line[1024];
    size_t size;
    FILE *out = open_memstream(&text, &size);
    if (!out)
        return NULL;
    if (m->mode & MAGIC_LINE) {
        usage(m, false, line, sizeof line);
        fprintf(out, "%s\n", line);
    }
    if (m->mode & MAGIC_CELL) {
        usage(m, true, line, sizeof line);
        fprintf(out, "%s\n  (a cell magic: the rest of the cell is its input)\n", line);
    }
    fprintf(out, "\n%s\n", m->summary ? m->summary : "");
    if (m->description && m->description[0])
        fprintf(out, "\n%s\n", m->description);
    if (family_of_magic(m))
        variants_text(out, lab, family_of_magic(m));
    if (strcmp(m->name, "kernel") == 0)
        student_families_text(out);
    if (m->positional)
        fprintf(out, "\nArguments:\n  %s  %s\n", m->positional, m->positional_help ? m->positional_help : "");
    fclose(out);
    return text;
}

char *magic_help_examples(const magic_spec *m)
{
    char *text = NULL;
    size_t size;
    FILE *out = open_memstream(&text, &size);
    if (!out)
        return NULL;
    if (m->examples && m->examples[0]) {
        fprintf(out, "Examples:\n");
        for (int i = 0; m->examples[i]; i++)
            fprintf(out, "  %s\n", m->examples[i]);
    }
    fclose(out);
    return text;
}

/* The flags of m as an aligned text table, with a header row. The help column
 * comes last and unpadded, so it is never cut whatever its length. */
static void flags_table(FILE *out, const lab_session *lab, const magic_spec *m)
{
    size_t n = nflags(m);
    char (*cell)[COLS - 1][200] = calloc(n + 1, sizeof *cell);
    if (!cell)
        return;
    static const char *const head[COLS] = { "flag", "type", "default", "allowed", "help" };
    size_t w[COLS - 1] = { 0 };
    bool lists = false;
    for (size_t r = 0; r <= n; r++) {
        const flag_spec *f = r ? magic_flag(m, r - 1) : NULL;
        if (!f) {
            for (int c = 0; c < COLS - 1; c++)
                snprintf(cell[0][c], sizeof cell[0][c], "%s", head[c]);
        } else {
            flag_label(f, cell[r][0], sizeof cell[r][0]);
            snprintf(cell[r][1], sizeof cell[r][1], "%s%s", flag_type_name(f),
                     f->opts & FLAG_LIST ? " list" : "");
            flag_default_text(f, cell[r][2], sizeof cell[r][2]);
            flag_allowed_text(lab, f, cell[r][3], sizeof cell[r][3]);
            lists |= (f->opts & FLAG_LIST) != 0;
        }
        for (int c = 0; c < COLS - 1; c++)
            if (utf8_chars(cell[r][c]) > w[c])
                w[c] = utf8_chars(cell[r][c]);
    }
    fprintf(out, "\nFlags:\n");
    for (size_t r = 0; r <= n; r++) {
        const char *help = r ? magic_flag(m, r - 1)->help : head[COLS - 1];
        char line[1024] = "  ";
        for (int c = 0; c < COLS - 1; c++)
            add(line, sizeof line, "%s%*s  ", cell[r][c], (int)(w[c] - utf8_chars(cell[r][c])), "");
        size_t end = strlen(line);
        while (!(help && help[0]) && end > 0 && line[end - 1] == ' ')
            line[--end] = '\0';
        fprintf(out, "%s%s\n", line, help ? help : "");
    }
    if (lists)
        fprintf(out, "\nA list type takes one value or a comma list such as 8,16,32: one run per value.\n");
    free(cell);
}

char *magic_help_text(const lab_session *lab, const magic_spec *m)
{
    char *head = magic_help_head(lab, m), *examples = magic_help_examples(m), *text = NULL;
    size_t size;
    FILE *out = head && examples ? open_memstream(&text, &size) : NULL;
    if (out) {
        fputs(head, out);
        if (nflags(m) > 0)
            flags_table(out, lab, m);
        if (examples[0])
            fprintf(out, "\n%s", examples);
        fclose(out);
    }
    free(head);
    free(examples);
    return text;
}

/* Listed as %name, or %%name when it is only a cell magic: 1 or 2 bytes. */
static size_t prefix(const magic_spec *m)
{
    return m->mode & MAGIC_LINE ? 1 : 2;
}

char *magic_list_text(void)
{
    size_t count, w = 0;
    const magic_spec *const *all = magic_all(&count);
    char *text = NULL;
    size_t size;
    FILE *out = open_memstream(&text, &size);
    if (!out)
        return NULL;
    for (size_t i = 0; i < count; i++)
        if (strlen(all[i]->name) + prefix(all[i]) > w)
            w = strlen(all[i]->name) + prefix(all[i]);
    fprintf(out, "cudalab magics:\n");
    for (size_t i = 0; i < count; i++) {
        char name[96];
        snprintf(name, sizeof name, "%s%s", prefix(all[i]) == 1 ? "%" : "%%", all[i]->name);
        fprintf(out, "  %-*s  %s\n", (int)w, name, all[i]->summary ? all[i]->summary : "");
    }
    fprintf(out, "\n%%help NAME or %%NAME? shows the flags and examples of one magic.\n");
    fclose(out);
    return text;
}
