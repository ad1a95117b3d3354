/* check.c — the one check document of every family's run (check.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "magic/check.h"

json_t *json_real_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

json_t *check_new(bool passed, const char *method, double tolerance)
{
    return json_pack("{s:b, s:s?, s:o, s:{s:i, s:n}}", "passed", passed, "method", method, "tolerance",
                     tolerance >= 0 ? json_real(tolerance) : json_null(), "wrong", "count", 0, "first");
}

json_t *check_skipped(const char *why)
{
    return json_pack("{s:n, s:s}", "passed", "method", why ? why : "skipped (--no-check)");
}

static void set_wrong(json_t *check, uint64_t count, json_t *at, json_t *got, json_t *want)
{
    json_t *first = count && at ? json_pack("{s:o, s:o, s:o}", "at", at, "got", got, "want", want)
                          : (json_decref(at), json_decref(got), json_decref(want), json_null());
    json_object_set_new(check, "wrong", json_pack("{s:I, s:o}", "count", (json_int_t)count, "first", first));
    if (count)
        json_object_set_new(check, "passed", json_false());
}

void check_wrong(json_t *check, uint64_t count, json_t *at, double got, double want)
{
    set_wrong(check, count, at, json_real_or_null(got), json_real_or_null(want));
}

void check_wrong_int(json_t *check, uint64_t count, json_t *at, long long got, long long want)
{
    set_wrong(check, count, at, json_integer(got), json_integer(want));
}

void check_first_wrong(json_t *check, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    utf8_trim(text);
    json_object_set_new(check, "first_wrong", json_string(text));
}

void check_tool(json_t *check, const char *tool, json_t *report)
{
    json_t *tools = json_object_get(check, "tools");
    if (!tools) {
        tools = json_object();
        json_object_set_new(check, "tools", tools);
    }
    json_object_set_new(tools, tool, report);
}

bool check_cpu_runner(json_t *check, const char *ename, const char *evalue, const json_t *lines)
{
    json_t *report;
    bool failed = strcmp(ename, "KernelError") == 0;
    if (!*ename || strcmp(ename, "CheckError") == 0)
        report = json_pack("{s:s, s:s, s:[]}", "tool", "cpu-runner", "status", "passed", "findings");
    else if (failed)
        report = json_pack("{s:s, s:s, s:o}", "tool", "cpu-runner", "status", "failed", "findings",
                           json_array_size(lines) ? json_deep_copy(lines) : json_pack("[s]", evalue));
    else
        report = json_pack("{s:s, s:s, s:[], s:s}", "tool", "cpu-runner", "status", "unavailable", "findings",
                           "reason", evalue);
    check_tool(check, "cpu-runner", report);
    if (failed)
        json_object_set_new(check, "passed", json_false());
    return failed;
}

/* The old spellings, as the families wrote them until the check was one document. */
static const struct {
    const char *old, *now, *more;
} check_renames[] = {
    {"mismatches", "check.wrong.count", NULL},
    {"mismatched_bins", "check.wrong.count", NULL},
    {"first_bad", "check.wrong.first", "its index is check.wrong.first.at.index (at.row and at.col in 2D), beside got and want"},
    {"first_mismatch", "check.wrong.first", "its bin is check.wrong.first.at.bin, and expected is check.wrong.first.want"},
    {"tol", "check.tolerance", NULL},
    {"rtol", "check.tolerance", NULL},
    {"racecheck", "check.tools.racecheck", "the CPU runner's is check.tools['cpu-runner']"},
    {"findings", "check.tools", "each tool's lines are check.tools.<tool>.findings"},
    {"found", "check.tools.racecheck", NULL},
};

const char *check_renamed(const char *field, const char **more)
{
    for (size_t i = 0; i < sizeof check_renames / sizeof *check_renames; i++)
        if (strcmp(field, check_renames[i].old) == 0) {
            if (more)
                *more = check_renames[i].more;
            return check_renames[i].now;
        }
    return NULL;
}
