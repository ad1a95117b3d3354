/* host_tool.c — the host compiler run confined, a compile checked for inline asm between its
 * preprocessing and its compilation (see host_tool.h). */
#include "student/host_tool.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "student/confine.h"
#include "student/source_check.h"

#define PREPROCESSED_MAX (32u << 20)    /* a course's unit is under 1 MiB; a macro bomb stops here */
#define STUB_DIR "include"              /* in the private directory: the headers the prelude stands for */
#define UNIT_FILE "unit.ii"             /* in the private directory: the preprocessed unit */
#define STUB_LACKS "cudalab: %s has no CPU runner counterpart"  /* a stand-in's #error */

/* Appends text to *log (NULL: empty), a line break first when the log does not end with one. */
static void append(char **log, const char *text, size_t n)
{
    size_t have = *log ? strlen(*log) : 0;
    bool newline = have && (*log)[have - 1] != '\n';
    char *grown = realloc(*log, have + newline + n + 1);
    if (!grown)
        return;
    if (newline)
        grown[have++] = '\n';
    memcpy(grown + have, text, n);
    grown[have + n] = '\0';
    *log = grown;
}

static void note(char **log, const char *fmt, ...)
{
    char line[700];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(line, sizeof line, "%s", HOST_TOOL_NOTE);
    n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n < sizeof line - 2 ? (size_t)n : sizeof line - 2;
    line[len++] = '\n';
    append(log, line, len);
}

/* The notes a run calls for: why it did not finish, the limit the driver reports a program met,
 * a header the CPU runner does not have. */
static void run_notes(char **log, const confine_result *r, const confine_limits *lim)
{
    char why[400];
    if (r->end != CONFINE_EXITED) {
        note(log, "the host compiler did not finish: %s", confine_why(r, lim, why, sizeof why));
        return;
    }
    const char *said = r->log ? r->log : "";
    if (strstr(said, "out of memory") || strstr(said, "memory exhausted") || strstr(said, "Cannot allocate memory"))
        note(log, "the host compiler ran out of its memory limit (%llu MiB): a template or a macro that expands "
             "without end?", lim->address_space >> 20);
    if (strstr(said, "CPU time limit exceeded"))
        note(log, "the host compiler used its %lu s of CPU time: a template or a macro that expands without end?",
             lim->cpu_s);
    if (strstr(said, "File size limit exceeded"))
        note(log, "the host compiler wrote a file past its limit of %llu MiB", lim->file_size >> 20);
    for (size_t i = 0; i < source_header_count; i++) {
        const source_header *h = &source_headers[i];
        char stand_in[160];
        snprintf(stand_in, sizeof stand_in, STUB_LACKS, h->name);
        if (!h->on_cpu && strstr(said, stand_in))
            note(log, "<%s>: %s has no CPU runner counterpart: run this kernel on a GPU (--backend cuda)",
                 h->name, h->cpu_lacks);
    }
}

/* One confined run: its output in *r, its log and notes appended to *log. The exit status, or -1. */
static int run_one(char *const argv[], const confine_dir *d, const confine_limits *lim, confine_result *r,
                   char **log)
{
    confine_run(argv, d, lim, r);
    if (r->log_len)
        append(log, r->log, r->log_len);
    run_notes(log, r, lim);
    return r->end == CONFINE_EXITED ? r->status : -1;
}

/* <d>/include with a stand-in for each header a cell may include: empty for those the prelude stands
 * for, an #error for the others (a system's own copy of the CUDA headers, in /usr/local/include, is
 * never reached); -I of it into flag. */
static int write_stubs(const confine_dir *d, char *flag, size_t len)
{
    char dir[300], path[400];
    snprintf(dir, sizeof dir, "%s/" STUB_DIR, d->root);
    if (mkdir(dir, 0700) != 0)
        return -1;
    for (size_t i = 0; i < source_header_count; i++) {
        const source_header *h = &source_headers[i];
        snprintf(path, sizeof path, "%s/%s", dir, h->name);
        char *slash = strrchr(path, '/');
        *slash = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return -1;
        *slash = '/';
        FILE *f = fopen(path, "w");
        int n = !f ? -1 : h->on_cpu ? fprintf(f, "/* the CPU runner's prelude stands for %s */\n", h->name)
                                    : fprintf(f, "#error " STUB_LACKS "\n", h->name);
        if (!f || n < 0 || fclose(f) != 0)
            return -1;
    }
    return snprintf(flag, len, "-I%s", dir) < (int)len ? 0 : -1;
}

static int write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    bool ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* The compile in two steps; at[] the indexes of -c, the source and the object in argv. */
static int compile_checked(char *const argv[], size_t argc, size_t c_at, size_t src_at, size_t obj_at,
                           const confine_dir *d, const confine_limits *lim, const char *cell, char **log)
{
    char stubs[320], unit[300];
    snprintf(unit, sizeof unit, "%s/" UNIT_FILE, d->root);
    char **step = calloc(argc + 2, sizeof *step);
    if (!step || write_stubs(d, stubs, sizeof stubs) != 0) {
        free(step);
        note(log, "the host compiler's private directory could not be filled (%s)", strerror(errno));
        return -1;
    }
    /* 1. preprocess: -E to stdout, the stand-ins found after the runtime's own headers */
    memcpy(step, argv, argc * sizeof *step);
    step[c_at] = "-E";
    step[obj_at] = "-";
    step[argc] = stubs;
    confine_limits pre = *lim;
    pre.out_max = PREPROCESSED_MAX;
    confine_result r;
    int rc = run_one(step, d, &pre, &r, log);
    /* 2. no inline asm, from the cell's first line on */
    source_refusal refusal;
    if (rc == 0 && source_check_no_asm(r.out ? r.out : "", r.out_len, cell, &refusal) != 0) {
        if (refusal.line > 0)
            note(log, "line %d: %s", refusal.line, refusal.reason);
        else
            note(log, "%s", refusal.reason);
        rc = 1;
    }
    if (rc == 0 && write_file(unit, r.out ? r.out : "", r.out_len) != 0) {
        note(log, "the preprocessed unit could not be written (%s)", strerror(errno));
        rc = -1;
    }
    confine_result_free(&r);
    /* 3. compile what was checked */
    if (rc == 0) {
        memcpy(step, argv, argc * sizeof *step);
        step[src_at - 1] = "c++-cpp-output";
        step[src_at] = unit;
        step[argc] = NULL;
        rc = run_one(step, d, lim, &r, log);
        confine_result_free(&r);
    }
    free(step);
    return rc;
}

/* argv with its relative paths made absolute (the tool starts in the private directory): -o's, -I's
 * and every other operand that names an existing file; NULL when memory runs out. Free with
 * free_args(). */
static char **absolute_args(char *const argv[], size_t argc)
{
    char cwd[PATH_MAX];
    char **out = calloc(argc + 1, sizeof *out);
    if (!out || !getcwd(cwd, sizeof cwd)) {
        free(out);
        return NULL;
    }
    for (size_t i = 0; i < argc; i++) {
        const char *a = argv[i], *prev = i ? argv[i - 1] : "";
        bool value = strcmp(prev, "-x") == 0 || strcmp(prev, "--param") == 0;
        bool operand = i > 0 && a[0] != '-' && a[0] != '/' && !value &&
                       (strcmp(prev, "-o") == 0 || access(a, F_OK) == 0);
        bool include = strncmp(a, "-I", 2) == 0 && a[2] && a[2] != '/';
        size_t n = strlen(cwd) + strlen(a) + 4;
        if ((operand || include) && (out[i] = malloc(n)))
            snprintf(out[i], n, operand ? "%s/%s" : "-I%s/%s", cwd, operand ? a : a + 2);
        else
            out[i] = strdup(a);
        if (!out[i]) {
            for (size_t k = 0; k < i; k++)
                free(out[k]);
            free(out);
            return NULL;
        }
    }
    return out;
}

static void free_args(char **args)
{
    for (size_t i = 0; args && args[i]; i++)
        free(args[i]);
    free(args);
}

int host_tool_run(char *const argv[], char **log, double default_wall_s, const char *cell)
{
    *log = NULL;
    confine_limits lim;
    confine_compiler_limits(&lim, default_wall_s);
    confine_dir d;
    if (confine_dir_make(&d) != 0) {
        note(log, "no private directory for the host compiler could be made (%s)", strerror(errno));
        return -1;
    }
    /* a compile: -c, -x c++ SOURCE, -o OBJECT */
    size_t argc = 0, c_at = 0, src_at = 0, obj_at = 0;
    while (argv[argc])
        argc++;
    char **given = argv[0] ? absolute_args(argv, argc) : NULL;
    if (!given) {
        confine_dir_remove(&d);
        note(log, "out of memory starting the host compiler");
        return -1;
    }
    argv = given;
    for (argc = 0; argv[argc]; argc++) {
        if (strcmp(argv[argc], "-c") == 0)
            c_at = argc;
        else if (strcmp(argv[argc], "-o") == 0 && argv[argc + 1])
            obj_at = argc + 1;
        else if (strcmp(argv[argc], "-x") == 0 && argv[argc + 1] && strcmp(argv[argc + 1], "c++") == 0 &&
                 argv[argc + 2])
            src_at = argc + 2;
    }
    int rc;
    if (c_at && src_at && obj_at) {
        rc = compile_checked(argv, argc, c_at, src_at, obj_at, &d, &lim, cell, log);
    } else if (c_at) {
        /* a compile whose source cannot be told apart: never unchecked */
        note(log, "the host compiler's command line has no -x c++ SOURCE and -o OBJECT to check");
        rc = -1;
    } else {
        confine_result r;
        rc = run_one(argv, &d, &lim, &r, log);
        confine_result_free(&r);
    }
    confine_dir_remove(&d);
    free_args(given);
    return rc;
}
