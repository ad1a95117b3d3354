/* expr_value.c — the values of %assert/%score expressions (expr_internal.h's
 * val: one JSON value, or one per run with a label each), and their text in
 * messages: truth, numbers (true and false count 1 and 0), equality, order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "grade/expr_internal.h"

void val_clear(val *v)
{
    json_decref(v->one);
    json_decref(v->many);
    json_decref(v->labels);
    memset(v, 0, sizeof *v);
}

void jv_format(const json_t *j, int prec, char *buf, size_t len)
{
    if (json_is_integer(j)) {
        snprintf(buf, len, "%lld", (long long)json_integer_value(j));
    } else if (json_is_real(j)) {
        /* prec 17 means "every digit that matters": the shortest that reads back the same */
        double d = json_real_value(j);
        for (int p = prec < 17 ? prec : 15; p <= 17; p++) {
            snprintf(buf, len, "%.*g", p, d);
            if (prec < 17 || strtod(buf, NULL) == d)
                break;
        }
    } else if (json_is_string(j)) {
        snprintf(buf, len, "'%.*s'", utf8_clip(json_string_value(j), len > 8 ? len - 8 : 0),
                 json_string_value(j));
    } else if (!j) {
        snprintf(buf, len, "nothing");
    } else {
        char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(6));
        if (s && strlen(s) + 1 > len && len > 4)
            snprintf(buf, len, "%.*s...", utf8_clip(s, len - 4), s);
        else
            snprintf(buf, len, "%s", s ? s : "?");
        free(s);
    }
}

const char *val_label(const val *v, size_t i)
{
    const char *l = json_string_value(json_array_get(v->labels, i));
    return l ? l : "?";
}

/* A value for people: a number, 'text', a run ("the run variant=naive"),
 * or one value per run ("4.52 (variant=naive), 3.2 (variant=tiled)"). */
void val_format(const val *v, int prec, char *buf, size_t len)
{
    if (v->one && v->runs) {
        snprintf(buf, len, "the run %s of %%%s", val_label(v, 0), v->magic ? v->magic : "?");
        return;
    }
    if (v->one || !v->many) {
        jv_format(v->one, prec, buf, len);
        return;
    }
    size_t n = json_array_size(v->many), at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && at + 8 < len; i++) {
        char one[96];
        if (v->runs)
            snprintf(one, sizeof one, "run");
        else
            jv_format(json_array_get(v->many, i), prec, one, sizeof one);
        int w = snprintf(buf + at, len - at, "%s%s (%s)", i ? ", " : "", one, val_label(v, i));
        if (w < 0 || (size_t)w >= len - at) {
            snprintf(buf + (len > 5 ? len - 5 : 0), len > 5 ? 5 : len, "...");
            return;
        }
        at += (size_t)w;
    }
}

void jv_plain(const json_t *j, char *buf, size_t len)
{
    if (json_is_string(j))
        snprintf(buf, len, "%s", json_string_value(j));
    else
        jv_format(j, 6, buf, len);
}

const char *jv_type(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "a list";
    case JSON_STRING: return "text";
    case JSON_INTEGER: case JSON_REAL: return "a number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

bool jv_truthy(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_TRUE: return true;
    case JSON_INTEGER: return json_integer_value(j) != 0;
    case JSON_REAL: return json_real_value(j) != 0;
    case JSON_STRING: return json_string_length(j) > 0;
    case JSON_ARRAY: return json_array_size(j) > 0;
    case JSON_OBJECT: return json_object_size(j) > 0;
    default: return false;
    }
}

/* Every value holds (one per run: all of them). */
bool val_truthy(const val *v)
{
    if (v->one)
        return jv_truthy(v->one);
    size_t i;
    json_t *j;
    json_array_foreach(v->many, i, j)
        if (!jv_truthy(j))
            return false;
    return v->many != NULL;
}

bool jv_is_num(const json_t *j)
{
    return json_is_number(j) || json_is_boolean(j);
}

double jv_num(const json_t *j)
{
    return json_is_boolean(j) ? (json_is_true(j) ? 1 : 0) : json_number_value(j);
}

/* An integer or a boolean as an exact integer. */
bool jv_int(const json_t *j, long long *out)
{
    if (json_is_integer(j))
        *out = json_integer_value(j);
    else if (json_is_boolean(j))
        *out = json_is_true(j);
    else
        return false;
    return true;
}

/* a <=> b for numbers (true and false count 1 and 0): exact between
 * integers, which doubles are not beyond 2^53; as doubles otherwise. */
int jv_cmp(const json_t *a, const json_t *b)
{
    long long p, q;
    if (jv_int(a, &p) && jv_int(b, &q))
        return (p > q) - (p < q);
    double x = jv_num(a), y = jv_num(b);
    return (x > y) - (x < y);
}

bool jv_same(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return jv_cmp(a, b) == 0;
    return json_equal((json_t *)a, (json_t *)b);
}

/* Sets v to its values, collapsed to one when every run has the same. */
void val_set(val *v, json_t *values /* stolen */, json_t *labels /* stolen */)
{
    size_t n = json_array_size(values);
    bool one = n >= 1;
    for (size_t i = 1; i < n && one; i++)
        one = jv_same(json_array_get(values, 0), json_array_get(values, i));
    if (one) {
        v->one = json_incref(json_array_get(values, 0));
        json_decref(values);
        v->labels = labels;
    } else {
        v->many = values;
        v->labels = labels;
    }
}

/* The value's elements: one per run, or the one value. */
size_t val_count(const val *v)
{
    return v->one ? 1 : json_array_size(v->many);
}

const json_t *val_elem(const val *v, size_t i)
{
    return v->one ? v->one : json_array_get(v->many, i);
}
