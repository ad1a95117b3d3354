/* board.c — the board service's API as the kernel calls it (board.h). */
#include "net/board.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/utf8.h"

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static int timeout_s(void)
{
    const char *v = env(BOARD_TIMEOUT_ENV);
    int s = v ? atoi(v) : 0;
    return s > 0 && s <= 600 ? s : BOARD_TIMEOUT_S;
}

bool board_path_escape(const char *part, char *out, size_t len)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)part; *p; p++) {
        if (o + 4 > len)
            return false;
        if (isalnum(*p) || *p == '.' || *p == '_' || *p == '-' || *p == '~')
            out[o++] = (char)*p;
        else
            o += (size_t)snprintf(out + o, len - o, "%%%02X", *p);
    }
    if (o >= len)
        return false;
    out[o] = '\0';
    return true;
}

void board_quote(const char *text, size_t max, char *out, size_t len)
{
    int n = utf8_clip(text, max);
    snprintf(out, len, "%.*s%s", n, text, text[n] ? " [...]" : "");
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
}

static int refused(board_error *e, int status, const json_t *body, const char *path)
{
    const char *text = json_string_value(json_object_get(body, "error"));
    char said[BOARD_ERROR_TEXT_MAX + 16];
    board_quote(text ? text : "(no error text)", BOARD_ERROR_TEXT_MAX, said, sizeof said);
    e->status = status;
    if (status == 429) {
        json_t *after = json_object_get(body, "retry_after_s");
        if (json_is_number(after) && json_number_value(after) >= 0)
            e->retry_after_s = json_number_value(after);
        e->ename = "BoardRateLimit";
        if (e->retry_after_s >= 0)
            snprintf(e->text, sizeof e->text, "the board asks you to wait: %s (try again in %.0f s)", said,
                     e->retry_after_s);
        else
            snprintf(e->text, sizeof e->text, "the board asks you to wait: %s", said);
    } else if (status == 401 || status == 403) {
        e->ename = "BoardRefused";
        snprintf(e->text, sizeof e->text, "the board refused your token (%d): %s", status, said);
    } else if (status < 500) {
        e->ename = "BoardRefused";
        snprintf(e->text, sizeof e->text, "the board refused %s (%d): %s", path, status, said);
    } else {
        e->ename = "BoardError";
        snprintf(e->text, sizeof e->text, "the board failed (%d): %s", status, said);
    }
    return -1;
}

int board_call(const char *method, const char *path, const json_t *body, json_t **reply, board_error *e)
{
    memset(e, 0, sizeof *e);
    e->ename = "BoardError";
    e->retry_after_s = -1;
    *reply = NULL;
    const char *base = env(BOARD_URL_ENV);
    if (!base) {
        snprintf(e->text, sizeof e->text, "no class board is configured: %s is not set (the course's hub sets it "
                 "to the board service's http:// address)", BOARD_URL_ENV);
        return -1;
    }
    const char *token = env(BOARD_TOKEN_ENV);
    if (!token)
        token = env(BOARD_HUB_TOKEN_ENV);
    if (!token) {
        snprintf(e->text, sizeof e->text, "no token for the class board: neither %s nor %s is set (a hub's "
                 "single-user server sets %s)", BOARD_TOKEN_ENV, BOARD_HUB_TOKEN_ENV, BOARD_HUB_TOKEN_ENV);
        return -1;
    }
    size_t bl = strlen(base);
    char *url = malloc(bl + strlen(path) + 2), *auth = malloc(strlen(token) + 8);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (!url || !auth || (body && !text)) {
        free(url);
        free(auth);
        free(text);
        snprintf(e->text, sizeof e->text, "out of memory");
        return -1;
    }
    sprintf(url, "%s%s%s", base, bl && base[bl - 1] == '/' ? "" : "/", path);
    sprintf(auth, "token %s", token);
    http_request req = {.method = method, .url = url, .authorization = auth, .content_type = "application/json",
                        .body = text, .body_len = text ? strlen(text) : 0, .connect_ms = BOARD_CONNECT_S * 1000,
                        .timeout_ms = timeout_s() * 1000};
    http_response r;
    char err[HTTP_ERR_LEN];
    int rc = http_fetch(&req, &r, err);
    free(url);
    free(auth);
    free(text);
    if (rc != 0) {
        snprintf(e->text, sizeof e->text, "%s", err);
        return -1;
    }
    json_t *doc = NULL;
    if (r.body_len > 0) {
        json_error_t je;
        doc = json_loadb(r.body, r.body_len, 0, &je);
    }
    if (r.status >= 400) {
        rc = refused(e, r.status, doc, path);
    } else if (r.status < 200 || r.status >= 300) {
        snprintf(e->text, sizeof e->text, "the board answered %s with status %d", path, r.status);
        rc = -1;
    } else if (r.status != 204 && !json_is_object(doc)) {
        snprintf(e->text, sizeof e->text, "the board's answer to %s is not the API's JSON (is %s the board "
                 "service?)", path, BOARD_URL_ENV);
        rc = -1;
    } else {
        *reply = doc;
        doc = NULL;
    }
    json_decref(doc);
    http_response_free(&r);
    return rc;
}

/* ---- the class view ---- */

bool board_class_view_on(void)
{
    const char *v = env(BOARD_CLASS_VIEW_ENV);
    return v && strcmp(v, "1") == 0 && env(BOARD_URL_ENV);
}

/* A finding's line: the number after "line " in its text, or 0. */
static long finding_line(const char *text)
{
    for (const char *p = text ? strstr(text, "line ") : NULL; p; p = strstr(p + 1, "line "))
        if (isdigit((unsigned char)p[5]))
            return strtol(p + 5, NULL, 10);
    return 0;
}

static void add_finding(json_t *findings, const char *text)
{
    if (!text || json_array_size(findings) >= 32)
        return;
    long line = finding_line(text);
    json_array_append_new(findings, json_pack("{s:s, s:o}", "text", text, "line",
                                              line > 0 ? json_integer(line) : json_null()));
}

json_t *board_quickcheck_summary(const json_t *doc, const char *exercise)
{
    const char *name = json_string_value(json_object_get(doc, "name"));
    json_t *check = json_object_get(doc, "check");
    if (!name || !exercise || !json_is_object(check))
        return NULL;
    json_t *lesson = json_object(), *findings = json_array();
    const char *key;
    json_t *c;
    json_object_foreach(json_object_get(check, "lesson"), key, c) {
        bool ok = json_is_true(json_object_get(c, "passed"));
        json_object_set_new(lesson, key, json_boolean(ok));
        if (!ok)
            add_finding(findings, json_string_value(json_object_get(c, "why")));
    }
    add_finding(findings, json_string_value(json_object_get(check, "first_wrong")));
    add_finding(findings, json_string_value(json_object_get(check, "error")));
    json_object_foreach(json_object_get(check, "tools"), key, c) {
        size_t i;
        json_t *line;
        if (strcmp(json_string_value(json_object_get(c, "status")) ? json_string_value(json_object_get(c, "status"))
                                                                   : "", "failed") == 0)
            json_array_foreach(json_object_get(c, "findings"), i, line)
                add_finding(findings, json_string_value(line));
    }
    json_t *time = json_object_get(doc, "time_ms");
    /* copies only: the summary goes to another thread, the document stays here */
    return json_pack("{s:s, s:s, s:b, s:b, s:o, s:o, s:o}", "exercise", exercise, "name", name, "compiled", 1,
                     "passed", json_is_true(json_object_get(check, "passed")), "lesson", lesson, "time_ms",
                     json_is_number(time) ? json_real(json_number_value(time)) : json_null(), "findings", findings);
}

static atomic_int posts_in_flight;

static void *post_thread(void *arg)
{
    json_t *summary = arg, *reply = NULL;
    board_error e;
    if (board_call("POST", "api/quickchecks", summary, &reply, &e) != 0)
        klog("class view: the quick check of %s was not posted: %s: %s",
             json_string_value(json_object_get(summary, "name")), e.ename, e.text);
    json_decref(reply);
    json_decref(summary);
    atomic_fetch_sub(&posts_in_flight, 1);
    return NULL;
}

void board_post_quickcheck(json_t *summary)
{
    if (!summary)
        return;
    if (atomic_fetch_add(&posts_in_flight, 1) >= BOARD_POSTS_IN_FLIGHT) {
        atomic_fetch_sub(&posts_in_flight, 1);
        klog("class view: %d posts still waiting for the board; the quick check of %s was not posted",
             BOARD_POSTS_IN_FLIGHT, json_string_value(json_object_get(summary, "name")));
        json_decref(summary);
        return;
    }
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, post_thread, summary) != 0) {
        atomic_fetch_sub(&posts_in_flight, 1);
        klog("class view: no thread for the post of %s's quick check", json_string_value(json_object_get(summary,
                                                                                                         "name")));
        json_decref(summary);
    }
    pthread_attr_destroy(&attr);
}
