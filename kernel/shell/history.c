/* history.c — the cells of this session, for history_request (tail, range, search). */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"

#define HISTORY_SESSION 1   /* one kernel process = one session; history is not persisted */

struct hentry {
    int line;
    char *input;
    char *output;           /* text/plain of the cell's execute_result, or NULL */
};

struct history {
    struct hentry *v;
    size_t n, cap;
};

enum handled handle_history(kernel *k, void *sock, wire_msg *req);

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

void history_add(struct history *h, int line, const char *input)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        struct hentry *nv = realloc(h->v, cap * sizeof *nv);
        if (!nv)
            return;
        h->v = nv;
        h->cap = cap;
    }
    char *copy = strdup(input);
    if (!copy)
        return;
    h->v[h->n++] = (struct hentry){ line, copy, NULL };
}

void history_set_output(struct history *h, int line, const char *output)
{
    if (h->n == 0 || h->v[h->n - 1].line != line)
        return;
    free(h->v[h->n - 1].output);
    h->v[h->n - 1].output = output ? strdup(output) : NULL;
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

enum handled handle_history(kernel *k, void *sock, wire_msg *req)
{
    json_t *list = json_array();
    select_entries(k->history, req->content, list, json_is_true(json_object_get(req->content, "output")));
    kernel_reply(k, sock, req, "history_reply", json_pack("{s:s, s:o}", "status", "ok", "history", list));
    return HANDLED_DONE;
}
