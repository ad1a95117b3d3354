/* results.c — the session's result documents, newest first (see results.h). */
#include "cudalab/results.h"

#include <stdlib.h>

struct result_store {
    json_t *doc[RESULTS_KEEP];      /* a ring: head is the newest */
    int cell[RESULTS_KEEP];
    size_t head, n;
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
        json_decref(rs->doc[(rs->head + i) % RESULTS_KEEP]);
    free(rs);
}

void results_record(result_store *rs, const json_t *doc, int cell)
{
    if (!rs || !json_is_string(json_object_get(doc, "magic")))
        return;
    rs->head = (rs->head + RESULTS_KEEP - 1) % RESULTS_KEEP;
    if (rs->n == RESULTS_KEEP)
        json_decref(rs->doc[rs->head]);     /* the oldest goes */
    else
        rs->n++;
    rs->doc[rs->head] = json_incref((json_t *)doc);
    rs->cell[rs->head] = cell;
}

size_t results_count(const result_store *rs)
{
    return rs ? rs->n : 0;
}

const json_t *results_get(const result_store *rs, size_t i, int *cell)
{
    if (!rs || i >= rs->n)
        return NULL;
    size_t at = (rs->head + i) % RESULTS_KEEP;
    if (cell)
        *cell = rs->cell[at];
    return rs->doc[at];
}
