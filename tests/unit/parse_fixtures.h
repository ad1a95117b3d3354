/* parse_fixtures.h — fake magics and helpers shared by the parser tests
 * (test_parse.c, test_parse_flags.c). A fake registry passed to
 * cell_parse_with covers every flag type without depending on real magics.
 * Everything is static: each test program gets its own copy.
 */
#ifndef CUDALAB_TEST_PARSE_FIXTURES_H
#define CUDALAB_TEST_PARSE_FIXTURES_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "magic/magic.h"
#include "lang/parse_internal.h"
#include "test_lab.h"

#define assert_contains(hay, needle) do {                                         \
        if (!strstr((hay), (needle)))                                             \
            fail_msg("'%s'\n  does not contain '%s'", (hay), (needle));           \
    } while (0)

static const char *const variants[] = { "naive", "tiled", "cublas", NULL };

static const flag_spec mm_flags[] = {
    {.name = "size", .short_name = 'n', .type = FLAG_INT, .def = "1024", .cpu_def = "2^8", .imin = 1,
     .imax = 1073741824},
    {.name = "tile", .type = FLAG_INT, .def = "16", .cpu_def = "4", .imin = 1, .imax = 64, .opts = FLAG_LIST},
    {.name = "variant", .type = FLAG_CHOICE, .def = "tiled", .choices = variants, .opts = FLAG_LIST},
    {.name = "check", .short_name = 'c', .type = FLAG_BOOL, .def = "true"},
    {.name = "verbose", .type = FLAG_BOOL},
    {.name = "tol", .type = FLAG_FLOAT, .def = "1e-5", .fmin = 0, .fmax = 1},
    {.name = "block", .type = FLAG_DIMS, .def = "16x16", .imin = 1, .imax = 1024},
    {.name = "title", .type = FLAG_STRING},
    {.name = "bin-width", .type = FLAG_INT, .def = "1", .imin = 1, .imax = 4096},
    {.name = NULL},
};
static const flag_spec need_flags[] = {
    {.name = "m", .type = FLAG_INT, .imin = 1, .imax = 100, .opts = FLAG_REQUIRED},
    {.name = NULL},
};
static const flag_spec note_flags[] = {
    {.name = "loud", .type = FLAG_BOOL},
    {.name = NULL},
};
static const flag_spec none[] = { {.name = NULL} };

static const magic_spec fake_matmul = { .name = "matmul", .flags = mm_flags, .mode = MAGIC_LINE };
static const magic_spec fake_need = { .name = "need", .flags = need_flags, .mode = MAGIC_LINE };
static const magic_spec fake_note = { .name = "note", .flags = note_flags, .positional = "TEXT",
                                      .mode = MAGIC_LINE | MAGIC_CELL };
static const magic_spec fake_script = { .name = "script", .flags = none, .mode = MAGIC_CELL };
static const magic_spec fake_help = { .name = "help", .flags = none, .positional = "NAME", .mode = MAGIC_LINE };

static const magic_spec *fake_find(const char *name)
{
    static const magic_spec *const all[] = { &fake_help, &fake_matmul, &fake_need, &fake_note, &fake_script };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

/* Parses cell with the fakes and insists on success. */
static inline command *ok(const char *cell, int *n)
{
    command *c;
    parse_error e;
    *n = cell_parse_with(test_lab(), cell, fake_find, &c, &e);
    if (*n < 0)
        fail_msg("cell %s\n  failed: %s: %s", cell, e.error.ename, e.error.evalue);
    return c;
}

/* Parses cell with the fakes and insists on failure. */
static inline parse_error bad(const char *cell)
{
    static command sentinel;
    command *c = &sentinel;         /* must be reset to NULL */
    parse_error e;
    int n = cell_parse_with(test_lab(), cell, fake_find, &c, &e);
    if (n >= 0)
        fail_msg("cell %s\n  parsed, but should fail", cell);
    assert_null(c);
    return e;
}

/* Parses cell with the fakes, insists on failure with exactly the message
 * want, and returns the error for more checks. */
static inline parse_error refused_as(const char *cell, const char *want)
{
    parse_error e = bad(cell);
    assert_string_equal(e.error.evalue, want);
    return e;
}

/* The same, for a message that holds part. */
static inline parse_error refused_with(const char *cell, const char *part)
{
    parse_error e = bad(cell);
    assert_contains(e.error.evalue, part);
    return e;
}

static inline void assert_json(const json_t *v, const char *want)
{
    char *got = json_dumps(v, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
    if (strcmp(got, want) != 0) {
        char copy[1024];
        strncpy(copy, got, sizeof copy - 1);
        copy[sizeof copy - 1] = '\0';
        free(got);
        fail_msg("json %s\n  expected %s", copy, want);
    }
    free(got);
}

#endif
