/* recorded_join.c — a CPU run and the GPU run recorded for the same command, as one comparison
 * (recorded.h): this machine's table and the recording's, joined into one table whose rows are
 * matched by what identifies a run (its variant and parameters) and whose measured columns stand
 * side by side, each headed with the device it was measured on. Read once, not two tables read
 * twice.
 *
 * A table's identifying columns are its leading columns of text and whole numbers (variant, m, n,
 * k, tile, precision); the first column that holds a fraction (a time, a rate) and those after it
 * are measured. A table of text only (%device's property and value) is identified by its first
 * column. Rows match on every identifying column, else (this machine ran smaller CPU defaults) on
 * the textual ones in order, the recorded value of a differing number shown beside this machine's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grade/recorded.h"

#define JOIN_MAX_COLUMNS 64

static int column_of(const json_t *table, const char *name);

/* The index of view's table of runs: the first table with a variant column (a histogram's bins come
 * before its runs), else the first table; -1 when none. */
static long runs_table_at(const json_t *view)
{
    json_t *b;
    size_t i;
    long first = -1;
    json_array_foreach(json_object_get(view, "blocks"), i, b)
        if (json_is_array(json_object_get(b, "columns")) && json_is_array(json_object_get(b, "rows"))) {
            if (column_of(b, "variant") >= 0)
                return (long)i;
            if (first < 0)
                first = (long)i;
        }
    return first;
}

const json_t *recorded_runs_table(const json_t *view)
{
    long at = runs_table_at(view);
    return at < 0 ? NULL : json_array_get(json_object_get(view, "blocks"), (size_t)at);
}

static int column_of(const json_t *table, const char *name)
{
    json_t *c;
    size_t i;
    json_array_foreach(json_object_get(table, "columns"), i, c)
        if (json_is_string(c) && strcmp(json_string_value(c), name) == 0)
            return (int)i;
    return -1;
}

static bool holds_fraction(const json_t *table, size_t col)
{
    json_t *row;
    size_t i;
    json_array_foreach(json_object_get(table, "rows"), i, row)
        if (json_is_real(json_array_get(row, col)))
            return true;
    return false;
}

/* How many leading columns of here identify a run (each in there too, by name): 0 when none. */
static size_t identifying(const json_t *here, const json_t *there)
{
    size_t n = json_array_size(json_object_get(here, "columns")), keys = 0;
    for (; keys < n; keys++) {
        const char *name = json_string_value(json_array_get(json_object_get(here, "columns"), keys));
        int other = name ? column_of(there, name) : -1;
        if (other < 0 || holds_fraction(here, keys) || holds_fraction(there, (size_t)other))
            break;
    }
    return keys == n ? (n > 1 ? 1 : 0) : keys;     /* text only: the first column names the row */
}

/* Whether row a of here and row b of there match on the first keys columns (textual ones only). */
static bool same_run(const json_t *here, const json_t *a, const json_t *there, const json_t *b, size_t keys,
                     bool text_only)
{
    for (size_t k = 0; k < keys; k++) {
        const json_t *x = json_array_get(a, k);
        int other = column_of(there, json_string_value(json_array_get(json_object_get(here, "columns"), k)));
        const json_t *y = json_array_get(b, (size_t)other);
        if ((!text_only || json_is_string(x) || json_is_string(y)) && !json_equal((json_t *)x, (json_t *)y)
            && !(json_is_null(x) && json_is_null(y)))
            return false;
    }
    return true;
}

/* A measured column's header on one device: "GFLOP/s (H200)". */
static json_t *headed(const char *name, const char *device)
{
    return json_sprintf("%s (%s)", name, device);
}

/* One joined row: here's identifying cells (a recorded number that differs beside it), then each
 * measured column of here and there side by side (null where that side has none). */
static json_t *joined_row(const json_t *here, const json_t *a, const json_t *there, const json_t *b, size_t keys,
                          const char *there_name, const int *pair, size_t measured)
{
    json_t *row = json_array();
    for (size_t k = 0; k < keys; k++) {
        const json_t *x = a ? json_array_get(a, k) : NULL;
        int other = column_of(there, json_string_value(json_array_get(json_object_get(here, "columns"), k)));
        const json_t *y = b ? json_array_get(b, (size_t)other) : NULL;
        if (!a)
            json_array_append(row, (json_t *)y);
        else if (b && !json_equal((json_t *)x, (json_t *)y) && !(json_is_null(x) && json_is_null(y))) {
            char *xs = json_dumps(x, JSON_ENCODE_ANY), *ys = json_dumps(y, JSON_ENCODE_ANY);
            json_array_append_new(row, json_sprintf("%s (%s: %s)", json_is_string(x) ? json_string_value(x) : xs,
                                                    there_name, json_is_string(y) ? json_string_value(y) : ys));
            free(xs);
            free(ys);
        } else
            json_array_append(row, (json_t *)x);
    }
    for (size_t m = 0; m < measured; m++) {
        int h = pair[2 * m], t = pair[2 * m + 1];
        json_array_append(row, a && h >= 0 ? json_array_get(a, (size_t)h) : json_null());
        json_array_append(row, b && t >= 0 ? json_array_get(b, (size_t)t) : json_null());
    }
    return row;
}

bool recorded_join(json_t *view, const json_t *there, const char *here_name, const char *there_name,
                   const char *note)
{
    long at = runs_table_at(view);
    json_t *here = at < 0 ? NULL : json_array_get(json_object_get(view, "blocks"), (size_t)at);
    size_t keys = here && there ? identifying(here, there) : 0;
    if (keys == 0)
        return false;
    const json_t *hc = json_object_get(here, "columns"), *tc = json_object_get(there, "columns");
    /* the measured columns, here's order, then those only the recording has: pairs of indices (-1: none) */
    int pair[2 * JOIN_MAX_COLUMNS];
    size_t measured = 0;
    for (size_t i = keys; i < json_array_size(hc) && measured < JOIN_MAX_COLUMNS; i++, measured++) {
        pair[2 * measured] = (int)i;
        pair[2 * measured + 1] = column_of(there, json_string_value(json_array_get(hc, i)));
    }
    for (size_t i = 0; i < json_array_size(tc) && measured < JOIN_MAX_COLUMNS; i++) {
        const char *name = json_string_value(json_array_get(tc, i));
        int mine = name ? column_of(here, name) : -1;
        if (mine < 0) {
            pair[2 * measured] = -1;
            pair[2 * measured + 1] = (int)i;
            measured++;
        }
    }
    /* rows: here's, each with its recorded match (exact first, then by the textual columns) */
    const json_t *hr = json_object_get(here, "rows"), *tr = json_object_get(there, "rows");
    size_t nh = json_array_size(hr), nt = json_array_size(tr), matched = 0;
    long *match = calloc(nh + 1, sizeof *match);
    bool *taken = calloc(nt + 1, sizeof *taken);
    json_t *columns = json_array(), *rows = json_array();
    if (!match || !taken || !columns || !rows) {
        free(match);
        free(taken);
        json_decref(columns);
        json_decref(rows);
        return false;
    }
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < nh; i++)
            for (size_t j = 0; j < nt && !match[i]; j++)
                if (!taken[j] && same_run(here, json_array_get(hr, i), there, json_array_get(tr, j), keys, pass == 1)) {
                    match[i] = (long)j + 1;
                    taken[j] = true;
                    matched++;
                }
    if (matched == 0) {             /* nothing in common: two tables, as they are, say more */
        free(match);
        free(taken);
        json_decref(columns);
        json_decref(rows);
        return false;
    }
    for (size_t k = 0; k < keys; k++)
        json_array_append(columns, json_array_get(hc, k));
    for (size_t m = 0; m < measured; m++) {
        const char *name = json_string_value(json_array_get(pair[2 * m] >= 0 ? hc : tc,
                                                            (size_t)(pair[2 * m] >= 0 ? pair[2 * m] : pair[2 * m + 1])));
        json_array_append_new(columns, headed(name ? name : "?", here_name));
        json_array_append_new(columns, headed(name ? name : "?", there_name));
    }
    for (size_t i = 0; i < nh; i++) {
        const json_t *b = match[i] ? json_array_get(tr, (size_t)(match[i] - 1)) : NULL;
        json_array_append_new(rows, joined_row(here, json_array_get(hr, i), there, b, keys, there_name, pair, measured));
    }
    for (size_t j = 0; j < nt; j++)         /* recorded runs this machine did not make */
        if (!taken[j])
            json_array_append_new(rows, joined_row(here, NULL, there, json_array_get(tr, j), keys, there_name, pair,
                                                   measured));
    json_object_set_new(here, "columns", columns);
    json_object_set_new(here, "rows", rows);
    json_array_insert_new(json_object_get(view, "blocks"), (size_t)at, json_pack("{s:s, s:s}", "type", "note", "text", note));
    free(match);
    free(taken);
    return true;
}
