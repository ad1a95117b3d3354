/* history.c — the cells of this session, for history_request (tail, range, search).
 *
 * Bounded, so that a long session or a hostile client cannot grow the kernel
 * for good: the newest HISTORY_KEEP cells within HISTORY_MAX_BYTES are kept,
 * and a cell (or its output) longer than HISTORY_ENTRY_MAX is kept as a line
 * giving its length and SHA-256 digest, which is all a history search or a
 * frontend's up-arrow could use of a 50 MB paste.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/digest.h"
#include "shell/session.h"

#define HISTORY_SESSION 1   /* one kernel process = one session; history is not persisted */
#define HISTORY_KEEP 10000
#define HISTORY_MAX_BYTES (8u << 20)
#define HISTORY_ENTRY_MAX (64u << 10)

struct hentry {
    int line;
    char *input;
    char *output;           /* text/plain of the cell's execute_result, or NULL */
};

struct history {
    struct hentry *v;
    size_t n, cap;
    size_t bytes;           /* of every input and output kept */
};

struct history *history_new(void)
{
    return calloc(1, sizeof(struct history));
}

void history_free(struct history *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n; i++) {
        free(h->v[i].input);
        free(h->v[i].output);
    }
    free(h->v);
    free(h);
}

/* A copy of text, or for a long one the line that stands for it. */
static char *kept_text(const char *text, const char *what)
{
    size_t len = strlen(text);
    if (len <= HISTORY_ENTRY_MAX)
        return strdup(text);
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(text, len, hex);
    char *line = malloc(256);
    if (line)
        snprintf(line, 256, "# [cudalab: a %zu-byte %s (sha256 %s) is longer than history keeps (%u bytes)]",
                 len, what, hex, HISTORY_ENTRY_MAX);
    return line;
}

static size_t entry_bytes(const struct hentry *e)
{
    return strlen(e->input) + (e->output ? strlen(e->output) : 0);
}

/* Drops the oldest entries until the bounds hold with room for `more` bytes. */
static void make_room(struct history *h, size_t more)
{
    size_t drop = 0;
    while (drop < h->n && (h->n - drop >= HISTORY_KEEP || h->bytes + more > HISTORY_MAX_BYTES)) {
        h->bytes -= entry_bytes(&h->v[drop]);
        free(h->v[drop].input);
        free(h->v[drop].output);
        drop++;
    }
    if (drop) {
        memmove(h->v, h->v + drop, (h->n - drop) * sizeof *h->v);
        h->n -= drop;
    }
}

void history_add(struct history *h, int line, const char *input)
{
    char *copy = kept_text(input, "cell");
    if (!copy)
        return;
    make_room(h, strlen(copy));
    if (array_grow(&h->v, &h->cap, h->n + 1, sizeof *h->v) != 0) {
        free(copy);
        return;
    }
    h->v[h->n++] = (struct hentry){ line, copy, NULL };
    h->bytes += strlen(copy);
}

void history_set_output(struct history *h, int line, const char *output)
{
    if (h->n == 0 || h->v[h->n - 1].line != line)
        return;
    struct hentry *e = &h->v[h->n - 1];
    if (e->output) {
        h->bytes -= strlen(e->output);
        free(e->output);
    }
    e->output = output ? kept_text(output, "output") : NULL;
    if (e->output)
        h->bytes += strlen(e->output);
}

static json_t *entry_json(const struct hentry *e, int with_output)
{
    json_t *in = json_string(e->input);
    if (!in)
        in = json_string("");
    if (with_output)
        in = json_pack("[o, s?]", in, e->output);
    return json_pack("[i, i, o]", HISTORY_SESSION, e->line, in);
}

static long get_int(const json_t *c, const char *key, long def)
{
    const json_t *v = json_object_get(c, key);
    return json_is_integer(v) ? (long)json_integer_value(v) : def;
}

static void select_entries(const struct history *h, const json_t *c, json_t *out, int with_output)
{
    const char *type = json_string_value(json_object_get(c, "hist_access_type"));
    long n = get_int(c, "n", 10);
    size_t from = 0, to = h->n;            /* index range in h->v */
    if (type && strcmp(type, "range") == 0) {
        long session = get_int(c, "session", 0);
        if (session != 0 && session != HISTORY_SESSION)
            return;
        long start = get_int(c, "start", 1), stop = get_int(c, "stop", 0);
        for (size_t i = 0; i < h->n; i++)
            if (h->v[i].line >= start && (stop <= 0 || h->v[i].line < stop))
                json_array_append_new(out, entry_json(&h->v[i], with_output));
        return;
    }
    if (type && strcmp(type, "search") == 0) {
        const char *pattern = json_string_value(json_object_get(c, "pattern"));
        n = get_int(c, "n", 0);             /* a search without n returns every match */
        int unique = json_is_true(json_object_get(c, "unique"));
        /* newest first, so that unique keeps each input's latest entry; the
         * object serves as a set of inputs already taken */
        json_t *taken = json_object(), *newest = json_array();
        for (size_t i = h->n; i-- > 0 && (n <= 0 || json_array_size(newest) < (size_t)n);) {
            if (fnmatch(pattern ? pattern : "*", h->v[i].input, 0) != 0)
                continue;
            if (unique && json_object_get(taken, h->v[i].input))
                continue;
            if (unique)
                json_object_set_new(taken, h->v[i].input, json_true());
            json_array_append_new(newest, entry_json(&h->v[i], with_output));
        }
        for (size_t i = json_array_size(newest); i-- > 0;)
            json_array_append(out, json_array_get(newest, i));
        json_decref(newest);
        json_decref(taken);
        return;
    }
    /* tail (and anything else): the last n */
    if (n >= 0 && (size_t)n < h->n)
        from = h->n - (size_t)n;
    for (size_t i = from; i < to; i++)
        json_array_append_new(out, entry_json(&h->v[i], with_output));
}

enum handled handle_history(shell_session *s, shell_request *req)
{
    json_t *list = json_array();
    select_entries(s->history, req->msg.content, list, json_is_true(json_object_get(req->msg.content, "output")));
    session_reply(s, req, "history_reply", json_pack("{s:s, s:o}", "status", "ok", "history", list));
    return HANDLED_DONE;
}
