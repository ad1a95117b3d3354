/* sanitize.c — compute-sanitizer on a student's kernel, in a process of its own (see sanitize.h). */
#include "student/sanitize.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "lang/lang.h"
#include "magic/sweep.h"
#include "student/compile.h"

#define FINDINGS_MAX 30

static bool executable(const char *path)
{
    return access(path, X_OK) == 0;
}

static int find_sanitizer(char *buf, size_t len)
{
    const char *env = getenv("CUDALAB_SANITIZER"), *home = getenv("CUDA_HOME"), *path = getenv("PATH");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return executable(buf) ? 0 : -1;
    }
    for (const char *p = path; p && *p;) {
        size_t n = strcspn(p, ":");
        snprintf(buf, len, "%.*s/compute-sanitizer", (int)n, p);
        if (n && executable(buf))
            return 0;
        p += n + (p[n] == ':');
    }
    if (home && *home && snprintf(buf, len, "%s/bin/compute-sanitizer", home) > 0 && executable(buf))
        return 0;
    snprintf(buf, len, "/usr/local/cuda/bin/compute-sanitizer");
    return executable(buf) ? 0 : -1;
}

/* The %%kernel cell that defines d, with --no-check off: its quick check is the run.
 * A variant broken on purpose is every process's already: its family command at
 * the quick check's size is the run. */
static char *cell_text(const student_def *d)
{
    char *text = NULL;
    size_t size;
    FILE *out = open_memstream(&text, &size);
    if (!out)
        return NULL;
    if (d->broken) {
        fprintf(out, "%%%s %s --variant %s --reps 1 --warmup 0", d->family->magic, d->quick, d->name);
        fclose(out);
        return text;
    }
    const json_t *o = d->options, *v;
    /* --no-cpu-check: the tool watches the GPU's run; the CPU runner's (a child process it would follow,
     * whose own signal handling it cannot take: "failed to handle a hardware exception") is not its */
    fprintf(out, "%%%%kernel --for %s --name %s --dim %d --no-cpu-check", d->family->magic, d->name, d->dim);
    if (json_is_true(json_object_get(o, "bt")))
        fprintf(out, " --bt");
    static const char *const dims[] = {"block", "grid"};
    for (int i = 0; i < 2; i++)
        if (json_is_array(v = json_object_get(o, dims[i]))) {
            fprintf(out, " --%s ", dims[i]);
            for (size_t k = 0; k < json_array_size(v); k++)
                fprintf(out, "%s%lld", k ? "x" : "", (long long)json_integer_value(json_array_get(v, k)));
        }
    static const char *const ints[][2] = {{"smem", "smem"}, {"maxrregcount", "maxrregcount"}, {"opt_level", "opt-level"}};
    for (int i = 0; i < 3; i++)
        if (json_is_integer(v = json_object_get(o, ints[i][0])))
            fprintf(out, " --%s %lld", ints[i][1], (long long)json_integer_value(v));
    size_t k;
    json_t *def;
    char quoted[600];
    json_array_foreach(json_object_get(o, "define"), k, def) {
        quote_token(json_string_value(def), quoted, sizeof quoted);
        fprintf(out, " -D %s", quoted);
    }
    if (json_is_true(json_object_get(o, "fast_math")))
        fprintf(out, " --fast-math");
    /* the body starts on the same cell line as the student's, so the lines match */
    int first = (int)json_integer_value(json_object_get(o, "first_line"));
    fputc('\n', out);
    for (int l = 2; l < first; l++)
        fputc('\n', out);
    fputs(d->source, out);
    fclose(out);
    return text;
}

/* Runs argv with stdout and stderr into path, at most timeout_s; the exit status, or -1 (*why set). */
static int run_to_file(char *const argv[], const char *path, int timeout_s, char *why, size_t wlen)
{
    pid_t pid = fork();
    if (pid < 0)
        return snprintf(why, wlen, "fork: %s", strerror(errno)), -1;
    if (pid == 0) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(127);
        setenv(SANITIZE_ENV, "1", 1);
        execv(argv[0], argv);
        _exit(127);
    }
    double until = monotonic_ms() + timeout_s * 1e3;
    int st = 0;
    pid_t r;
    while ((r = waitpid(pid, &st, WNOHANG)) == 0 && monotonic_ms() < until)
        nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
    if (r == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return snprintf(why, wlen, "compute-sanitizer took longer than %d s", timeout_s), -1;
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        return snprintf(why, wlen, "compute-sanitizer could not be started"), -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A line of the report for a student: its indentation kept short, and
 * "in cell:11" (the cubin's line table) as "at line 11". */
static json_t *finding_line(const char *t)
{
    char out[1100];
    size_t o = 0;
    size_t indent = strspn(t, " ");
    t += indent > 2 ? indent - 2 : 0;
    for (const char *p = t; *p && o + 16 < sizeof out;) {
        if (strncmp(p, " in cell:", 9) == 0) {
            o += (size_t)snprintf(out + o, sizeof out - o, " at line ");
            p += 9;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    return json_string(out);
}

/* The report's findings (the "=========" lines that matter) and its error count; *internal the
 * tool's own failure ("Internal Sanitizer Error: ..."), which says nothing of the kernel. */
static json_t *findings_of(const char *path, int *errors, bool *summary, char *internal, size_t len)
{
    json_t *out = json_array();
    FILE *f = fopen(path, "r");
    char line[1024];
    *errors = 0;
    *summary = false;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "========= ", 10) != 0)
            continue;
        char *t = line + 10;
        const char *s;
        if (strstr(t, "Internal Sanitizer Error") && !*internal)
            snprintf(internal, len, "%.200s", t);
        /* "ERROR SUMMARY: 2 errors" (memcheck, synccheck, initcheck), or
         * "RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)": the errors count */
        if ((s = strstr(t, "SUMMARY: "))) {
            *summary = true;
            const char *paren = strchr(s, '(');
            *errors += atoi(paren ? paren + 1 : s + strlen("SUMMARY: "));
            json_array_append_new(out, json_string(t));
            continue;
        }
        if (strstr(t, "Host Frame") || strstr(t, "Saved host backtrace") || strstr(t, "COMPUTE-SANITIZER") ||
            strspn(t, " ") == strlen(t) || json_array_size(out) >= FINDINGS_MAX)
            continue;
        json_array_append_new(out, finding_line(t));
    }
    if (f)
        fclose(f);
    return out;
}

json_t *student_sanitize(const student_def *d, const char *tool)
{
    double t0 = monotonic_ms();
    char tool_path[PATH_MAX], exe[PATH_MAX], why[300] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (find_sanitizer(tool_path, sizeof tool_path) != 0 || n <= 0)
        return json_pack("{s:s, s:s, s:[], s:s}", "tool", tool, "status", "unavailable", "findings", "reason",
                         "compute-sanitizer was not found (it ships with the CUDA toolkit: put its bin/ on "
                         "PATH, or set CUDALAB_SANITIZER)");
    exe[n] = '\0';
    char dir[] = "/tmp/cudalab-sanitize-XXXXXX";
    if (!mkdtemp(dir))
        return json_pack("{s:s, s:s, s:[], s:s}", "tool", tool, "status", "unavailable", "findings", "reason",
                         "no temporary directory");
    char cell[PATH_MAX], report[PATH_MAX];
    snprintf(cell, sizeof cell, "%s/cell.txt", dir);
    snprintf(report, sizeof report, "%s/report.txt", dir);
    char *text = cell_text(d);
    FILE *f = text ? fopen(cell, "w") : NULL;
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    free(text);
    char *argv[] = { tool_path, (char *)"--tool", (char *)tool, (char *)"--print-limit", (char *)"10",
                     exe, (char *)"--run-file", cell, NULL };
    int rc = f ? run_to_file(argv, report, SANITIZE_TIMEOUT_S, why, sizeof why) : -1;
    int errors = 0;
    bool summary = false;
    char internal[300] = "";
    json_t *findings = rc >= 0 ? findings_of(report, &errors, &summary, internal, sizeof internal) : json_array();
    json_t *out;
    if (rc >= 0 && *internal) {     /* the tool broke: no verdict on the kernel either way */
        snprintf(why, sizeof why, "compute-sanitizer failed (%.250s)", internal);
        summary = false;
    }
    if (rc < 0 || !summary) {
        if (rc >= 0 && !*internal)
            snprintf(why, sizeof why, "compute-sanitizer gave no summary (exit status %d)%s", rc,
                     json_array_size(findings) ? "" : ": profiling or debugging may be disabled on this machine");
        out = json_pack("{s:s, s:s, s:o, s:s}", "tool", tool, "status", "unavailable", "findings", findings,
                        "reason", why);
    } else {
        out = json_pack("{s:s, s:s, s:o}", "tool", tool, "status", errors ? "failed" : "passed", "findings", findings);
    }
    json_object_set_new(out, "seconds", json_real((monotonic_ms() - t0) / 1e3));
    unlink(cell);
    unlink(report);
    rmdir(dir);
    return out;
}

int student_sanitize_command(magic_ctx *ctx, const family_spec *f, const json_t *params)
{
    static const char *const tools[] = {"memcheck", "racecheck", "synccheck", "initcheck"};
    json_t *names = sweep_as_list(json_object_get(params, "variant"));
    json_t *results = json_object(), *rows = json_array(), *details = json_array();
    int failed = 0;
    size_t i;
    json_t *v;
    const char *at = f->quick;       /* each kernel runs at its own quick check's size */
    json_array_foreach(names, i, v) {
        const student_def *d = student_find(ctx->lab, json_string_value(v));
        if (!d)
            continue;
        at = d->quick;
        json_t *list = json_array();
        for (size_t t = 0; t < sizeof tools / sizeof tools[0]; t++) {
            json_t *r = student_sanitize(d, tools[t]);
            const char *status = json_string_value(json_object_get(r, "status"));
            json_t *found = json_object_get(r, "findings");
            failed += strcmp(status, "failed") == 0;
            json_array_append_new(rows, json_pack("[s, s, s, o]", d->name, tools[t], status,
                                                  json_object_get(r, "reason") ? json_incref(json_object_get(r, "reason"))
                                                  : json_sprintf("%.1f s", json_real_value(json_object_get(r, "seconds")))));
            if (strcmp(status, "failed") == 0) {
                json_array_append_new(details, json_sprintf("%s, %s:", d->name, tools[t]));
                json_array_extend(details, found);
            }
            json_array_append_new(list, r);
        }
        json_object_set_new(results, d->name, list);
    }
    json_decref(names);
    if (json_object_size(results) == 0) {
        json_decref(results);
        json_decref(rows);
        json_decref(details);
        return magic_error(ctx, "UsageError", "--sanitize runs your own kernels: name one with --variant "
                           "(%%kernels lists them)");
    }
    char quick[256];
    snprintf(quick, sizeof quick, "%%%s %s", f->magic, at);
    json_t *doc = json_pack("{s:s, s:s, s:o}", "magic", f->magic, "sanitize_size", quick, "sanitize", results);
    json_t *blocks = json_pack("[{s:s, s:[s, s, s, s], s:o}]", "type", "table", "columns", "kernel", "tool", "status",
                               "time or reason", "rows", rows);
    size_t k;
    json_t *l;
    char *joined = NULL;
    size_t size;
    FILE *out = open_memstream(&joined, &size);
    json_array_foreach(details, k, l)
        if (out)
            fprintf(out, "%s%s", k ? "\n" : "", json_string_value(l));
    if (out)
        fclose(out);
    if (joined && joined[0])
        json_array_append_new(blocks, json_pack("{s:s, s:s}", "type", "text", "text", joined));
    free(joined);
    json_decref(details);
    json_array_append_new(blocks, json_pack("{s:s, s:o}", "type", "note", "text",
                                            json_sprintf("each tool ran the kernel once at %s, in a process of its own",
                                                         quick)));
    char title[160];
    snprintf(title, sizeof title, "compute-sanitizer on your kernels for %%%s", f->magic);
    magic_result(ctx, doc, json_pack("{s:s, s:o}", "title", title, "blocks", blocks));
    if (failed)
        return magic_error(ctx, "SanitizerError", "compute-sanitizer found %d problem%s (above, with their lines)",
                           failed, failed == 1 ? "" : "s");
    return 0;
}

static bool uses_shared(const char *source)
{
    return strstr(source, "__shared__") != NULL;
}

json_t *student_racecheck_cached(const student_def *d, const char *key)
{
    if (!uses_shared(d->source))
        return NULL;
    char dir[900], path[1000];
    bool cacheable = student_cache_dir(dir, sizeof dir) == 0;
    if (cacheable) {
        snprintf(path, sizeof path, "%s/%s.racecheck.json", dir, key);
        json_t *hit = json_load_file(path, 0, NULL);
        if (json_is_object(hit))
            return hit;
        json_decref(hit);
    }
    json_t *r = student_sanitize(d, "racecheck");
    /* an unavailable sanitizer may be there next time: only verdicts are kept */
    if (cacheable && strcmp(json_string_value(json_object_get(r, "status")), "unavailable") != 0 &&
        json_dump_file(r, path, JSON_COMPACT) != 0)
        klog("kernel cache: cannot write %s", path);
    return r;
}
