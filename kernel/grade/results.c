/* results.c — the session's result documents, newest first (see results.h). */
#include "grade/results.h"
#include "base/buf.h"

#include <stdlib.h>
#include <string.h>

struct kept {
    json_t *doc;
    int cell;
    size_t bytes;
};

struct result_store {
    struct kept *v;             /* oldest first: appending is the common case */
    size_t n, cap;
    size_t bytes;
    size_t evicted;
    int evicted_cell;
};

result_store *results_new(void)
{
    return calloc(1, sizeof(result_store));
}

void results_free(result_store *rs)
{
    if (!rs)
        return;
    for (size_t i = 0; i < rs->n; i++)
        json_decref(rs->v[i].doc);
    free(rs->v);
    free(rs);
}

/* Drops the oldest documents until one of `more` bytes fits the bounds. */
static void make_room(result_store *rs, size_t more)
{
    size_t drop = 0;
    while (drop < rs->n && (rs->n - drop >= RESULTS_KEEP || rs->bytes + more > RESULTS_MAX_BYTES)) {
        rs->bytes -= rs->v[drop].bytes;
        rs->evicted_cell = rs->v[drop].cell;
        json_decref(rs->v[drop].doc);
        drop++;
    }
    if (drop) {
        memmove(rs->v, rs->v + drop, (rs->n - drop) * sizeof *rs->v);
        rs->n -= drop;
        rs->evicted += drop;
    }
}

void results_record(result_store *rs, const json_t *doc, int cell)
{
    if (!rs || !json_is_string(json_object_get(doc, "magic")))
        return;
    size_t bytes = json_dumpb(doc, NULL, 0, JSON_COMPACT);
    make_room(rs, bytes);
    if (array_grow(&rs->v, &rs->cap, rs->n + 1, sizeof *rs->v) != 0)
        return;
    rs->v[rs->n++] = (struct kept){ json_incref((json_t *)doc), cell, bytes };
    rs->bytes += bytes;
}

size_t results_count(const result_store *rs)
{
    return rs ? rs->n : 0;
}

const json_t *results_get(const result_store *rs, size_t i, int *cell)
{
    if (!rs || i >= rs->n)
        return NULL;
    const struct kept *k = &rs->v[rs->n - 1 - i];
    if (cell)
        *cell = k->cell;
    return k->doc;
}

size_t results_evicted(const result_store *rs, int *last_cell)
{
    if (last_cell)
        *last_cell = rs ? rs->evicted_cell : 0;
    return rs ? rs->evicted : 0;
}
