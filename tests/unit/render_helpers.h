/* render_helpers.h — what the render tests share: a view written as JSON text in
 * the test (the test fails on a typo rather than rendering NULL), and counting
 * the lines, rows or tags of a rendering. Header-only; included after <cmocka.h>. */
#ifndef CUDALAB_TEST_RENDER_HELPERS_H
#define CUDALAB_TEST_RENDER_HELPERS_H

#include <string.h>

#include <jansson.h>

static inline json_t *parse(const char *s)
{
    json_error_t err;
    json_t *v = json_loads(s, JSON_DECODE_ANY, &err);
    if (!v)
        fail_msg("bad JSON in test: %s (line %d)", err.text, err.line);
    return v;
}

/* How often needle occurs in hay, overlaps included. */
static inline size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

#endif
