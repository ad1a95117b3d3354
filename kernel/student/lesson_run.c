/* lesson_run.c — the lesson checks' run of a student's kernel (lesson_run.h).
 *
 * The run is the family's magic, in an inner command on the CPU backend, at the kernel's quick
 * check's size with --counters and the CPU backend's lesson mode: one launch, counted, untimed. It
 * never runs inside itself (the family's run of the kernel it makes asks for no lesson).
 */
#include "student/lesson_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudalab/simt.h"
#include "lang/lang.h"
#include "magic/lab_session.h"
#include "magic/lesson.h"
#include "student/inner_run.h"

#define CACHE_MAX 256               /* lesson runs kept; past that the cache starts again */

/* The session's part (LAB_LESSONS): its lesson runs, and whether one is under way. */
typedef struct lesson_runs {
    json_t *cache;                  /* key -> {"lesson", "ename", "evalue", "lines"} */
    bool running;                   /* a lesson run is under way: its own run asks for none */
} lesson_runs;

static void lesson_runs_drop(void *part)
{
    json_decref(((lesson_runs *)part)->cache);
}

bool student_cpu_check_off(const student_def *d, const json_t *point)
{
    return json_is_false(json_object_get(point, "cpu_check")) || json_is_false(json_object_get(d->options, "cpu_check"));
}

/* The quick check's line with point's launch overrides, into line. */
static void lesson_line(const student_def *d, const json_t *point, char *line, size_t len)
{
    int n = snprintf(line, len, "%%%s %s --variant %s --reps 1 --warmup 0 --counters", d->family->magic, d->quick,
                     d->name);
    const json_t *tile = json_object_get(point, "tile"), *smem = json_object_get(point, "smem");
    const json_t *define = json_object_get(point, "define"), *block = json_object_get(point, "block");
    if (json_is_integer(tile) && n < (int)len)
        n += snprintf(line + n, len - (size_t)n, " --tile %lld", (long long)json_integer_value(tile));
    if (json_is_integer(smem) && n < (int)len)
        n += snprintf(line + n, len - (size_t)n, " --smem %lld", (long long)json_integer_value(smem));
    if (json_is_string(define) && n < (int)len) {     /* quoted: the student's text, one value */
        char quoted[600];
        quote_token(json_string_value(define), quoted, sizeof quoted);
        n += snprintf(line + n, len - (size_t)n, " -D %s", quoted);
    }
    if (json_is_array(block) && json_array_size(block) > 0 && n < (int)len) {
        n += snprintf(line + n, len - (size_t)n, " --block ");
        for (size_t i = 0; i < json_array_size(block) && n < (int)len; i++)
            n += snprintf(line + n, len - (size_t)n, "%s%lld", i ? "x" : "",
                          (long long)json_integer_value(json_array_get(block, i)));
    }
}

/* Runs the lesson run: its cache entry (a new reference), or NULL with the error in ctx. */
static json_t *lesson_fresh(magic_ctx *ctx, lesson_runs *runs, const student_def *d, const char *line)
{
    inner_run r;
    cl_cpu_lesson_mode(1);
    runs->running = true;
    int rc = inner_run_line(ctx, cl_cpu_backend(), line, false, &r);
    runs->running = false;
    cl_cpu_lesson_mode(0);
    if (rc != 0)
        return NULL;
    cl_simt_lesson_taken taken;
    json_t *lesson = NULL;
    if (cl_cpu_lesson_taken(&taken) == 0) {
        lesson_launch l = { d->family->magic, d->dim, &taken };
        lesson = lesson_figures(&l);
    }
    json_t *e = json_pack("{s:o, s:s, s:s, s:O}", "lesson", lesson ? lesson : json_null(), "ename", r.error.ename,
                          "evalue", r.error.evalue, "lines", r.traceback ? r.traceback : json_null());
    inner_run_free(&r);
    return e;
}

int student_lesson(magic_ctx *ctx, const student_def *d, const json_t *point, lesson_result *out)
{
    memset(out, 0, sizeof *out);
    lesson_runs *runs = lab_part_make(ctx->lab, LAB_LESSONS, sizeof *runs, lesson_runs_drop);
    if (!runs)
        return magic_error(ctx, "MemoryError", "out of memory (the lesson checks' run)");
    if (runs->running || d->broken)
        return 0;
    char line[1024];
    lesson_line(d, point, line, sizeof line);
    char *options = json_dumps(d->options, JSON_SORT_KEYS | JSON_COMPACT);
    json_t *key = json_sprintf("%s\n%s\n%s", d->hash, options ? options : "", line);
    free(options);
    if (!runs->cache || json_object_size(runs->cache) >= CACHE_MAX) {
        json_decref(runs->cache);
        runs->cache = json_object();
    }
    json_t *e = json_incref(json_object_get(runs->cache, json_string_value(key)));
    if (!e) {
        e = lesson_fresh(ctx, runs, d, line);
        if (!e) {
            json_decref(key);
            return -1;
        }
        json_object_set(runs->cache, json_string_value(key), e);
    }
    json_decref(key);
    json_t *lesson = json_object_get(e, "lesson");
    out->lesson = json_is_object(lesson) ? json_deep_copy(lesson) : NULL;
    snprintf(out->found.ename, sizeof out->found.ename, "%s", json_string_value(json_object_get(e, "ename")));
    snprintf(out->found.evalue, sizeof out->found.evalue, "%s", json_string_value(json_object_get(e, "evalue")));
    json_t *lines = json_object_get(e, "lines");
    out->lines = json_is_array(lines) ? json_deep_copy(lines) : NULL;
    json_decref(e);
    return 0;
}

void lesson_result_free(lesson_result *r)
{
    json_decref(r->lesson);
    json_decref(r->lines);
    memset(r, 0, sizeof *r);
}
