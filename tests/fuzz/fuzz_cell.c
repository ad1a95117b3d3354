/* fuzz_cell.c — libFuzzer target for the magic language: cell_parse,
 * cell_completeness and line_tokens (plus the number grammars they use).
 *
 * The input is a cell's text (cut at its first NUL: cells come from JSON
 * strings, which cannot hold one). Each input is parsed twice: with the real
 * registry, and with a fake one whose magics carry every flag type (choice,
 * dims, float, lists, required), as tests/unit/parse_fixtures.h does.
 *
 * Properties checked (abort() on violation): every allocation is freed (the
 * leak checker runs at exit of each input); a parse either gives commands
 * with a magic, a params object and a source, or an error with a name and a
 * message; the error message, the quoted source and every token of valid
 * UTF-8 input are valid UTF-8 (they go into JSON, and jansson refuses
 * anything else, which would turn an error reply into "ok"); token offsets
 * lie inside the line; is_complete agrees with a parse.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "magic/magic.h"
#include "lang/parse_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_cell: property violated: %s\n", what);
        abort();
    }
}

/* RFC 3629 UTF-8: no overlongs, no surrogates, nothing past U+10FFFF. */
static bool utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i], lo = 0x80, hi = 0xBF;   /* range of the second byte */
        size_t k;                                   /* continuation bytes */
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            k = 1;
        else if (c >= 0xE0 && c <= 0xEF)
            k = 2, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        else if (c >= 0xF0 && c <= 0xF4)
            k = 3, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        else
            return false;
        if (i + k >= n || p[i + 1] < lo || p[i + 1] > hi)
            return false;
        for (size_t j = 2; j <= k; j++)
            if ((p[i + j] & 0xC0) != 0x80)
                return false;
        i += k + 1;
    }
    return true;
}

static bool str_utf8(const char *s)
{
    return utf8_valid(s, strlen(s));
}

/* ---- a fake registry with every flag type ---- */

static const char *const variants[] = { "naive", "tiled", "cublas", NULL };
static const flag_spec mm_flags[] = {
    {.name = "size", .short_name = 'n', .type = FLAG_INT, .def = "1024", .imin = 1, .imax = 1073741824},
    {.name = "tile", .type = FLAG_INT, .def = "16", .imin = 1, .imax = 64, .opts = FLAG_LIST},
    {.name = "variant", .type = FLAG_CHOICE, .def = "tiled", .choices = variants, .opts = FLAG_LIST},
    {.name = "check", .short_name = 'c', .type = FLAG_BOOL, .def = "true"},
    {.name = "verbose", .type = FLAG_BOOL},
    {.name = "tol", .type = FLAG_FLOAT, .def = "1e-5", .fmin = 0, .fmax = 1},
    {.name = "scale", .type = FLAG_FLOAT, .def = "1", .fmin = -1e300, .fmax = 1e300, .opts = FLAG_LIST},
    {.name = "block", .type = FLAG_DIMS, .def = "16x16", .imin = 1, .imax = 1024},
    {.name = "grid", .type = FLAG_DIMS, .opts = FLAG_LIST},
    {.name = "title", .type = FLAG_STRING},
    {.name = "bin-width", .type = FLAG_INT, .def = "1", .imin = 1, .imax = 4096},
    {.name = "seed", .type = FLAG_INT, .def = "1", .imin = -9223372036854775807LL - 1,
     .imax = 9223372036854775807LL},
    {.name = NULL},
};
static const flag_spec need_flags[] = {
    {.name = "m", .type = FLAG_INT, .imin = 1, .imax = 100, .opts = FLAG_REQUIRED},
    {.name = "mode", .short_name = 'M', .type = FLAG_CHOICE, .choices = variants, .opts = FLAG_REQUIRED},
    {.name = NULL},
};
static const flag_spec note_flags[] = {
    {.name = "loud", .short_name = 'l', .type = FLAG_BOOL},
    {.name = NULL},
};
static const flag_spec no_flags[] = { {.name = NULL} };

static const magic_spec fake_matmul = { .name = "matmul", .flags = mm_flags, .mode = MAGIC_LINE };
static const magic_spec fake_need = { .name = "need", .flags = need_flags, .mode = MAGIC_LINE };
static const magic_spec fake_note = { .name = "note", .flags = note_flags, .positional = "TEXT",
                                      .mode = MAGIC_LINE | MAGIC_CELL };
static const magic_spec fake_script = { .name = "script", .flags = no_flags, .mode = MAGIC_CELL };
static const magic_spec fake_help = { .name = "help", .flags = no_flags, .positional = "NAME",
                                      .mode = MAGIC_LINE };

static const magic_spec *fake_find(const char *name)
{
    static const magic_spec *const all[] = { &fake_help, &fake_matmul, &fake_need, &fake_note, &fake_script };
    for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

/* ---- checks ---- */

static bool in_array(const char *s, size_t n)
{
    return memchr(s, '\0', n) != NULL;
}

static int parse_checked(const char *cell, bool fake, bool valid_utf8)
{
    command *cmds = (command *)1;           /* must be overwritten */
    parse_error err;
    int n = fake ? cell_parse_with(NULL, cell, fake_find, &cmds, &err) : cell_parse(NULL, cell, &cmds, &err);
    if (n < 0) {
        check(n == -1 && cmds == NULL, "a failed parse returns -1 and no commands");
        check(in_array(err.error.ename, sizeof err.error.ename) && in_array(err.error.evalue, sizeof err.error.evalue) &&
              in_array(err.source, sizeof err.source), "error strings terminated");
        check(err.error.ename[0] && err.error.evalue[0], "an error has a name and a message");
        check(err.line >= 0 && err.column >= 0, "error position");
        if (valid_utf8)
            check(str_utf8(err.error.evalue) && str_utf8(err.source) && str_utf8(err.error.ename),
                  "error text of UTF-8 input is UTF-8");
        return n;
    }
    check(n == 0 || cmds != NULL, "commands returned");
    for (int i = 0; i < n; i++) {
        check(cmds[i].magic && json_is_object(cmds[i].params) && cmds[i].source, "command filled");
        check(cmds[i].line >= 1, "command line number");
        if (cmds[i].body)
            check(i == 0, "only the first command may be a cell magic with a body");
        if (valid_utf8) {
            /* the worker gets params through json_dumps; the kernel echoes source */
            char *p = json_dumps(cmds[i].params, JSON_COMPACT);
            check(p != NULL, "params serialise");
            free(p);
            check(str_utf8(cmds[i].source) && (!cmds[i].body || str_utf8(cmds[i].body)),
                  "command text of UTF-8 input is UTF-8");
        }
    }
    commands_free(cmds, n);
    return n;
}

static void tokens_checked(const char *line, bool valid_utf8)
{
    token *t = NULL;
    int n = line_tokens(line, &t);
    size_t len = strlen(line);
    check(n >= -1, "token count");
    check(t != NULL, "the token array always comes back");
    int count = 0;
    size_t prev_end = 0;
    for (; t[count].text; count++) {
        check(t[count].start <= t[count].end && t[count].end <= len, "token offsets inside the line");
        check(t[count].start >= prev_end, "tokens in order, not overlapping");
        prev_end = t[count].end;
        if (valid_utf8)
            check(str_utf8(t[count].text), "tokens of UTF-8 input are UTF-8");
        long long iv;
        double fv;
        enum num_status si = number_int(t[count].text, &iv);
        enum num_status sf = number_float(t[count].text, &fv);
        check(si <= NUM_NONFINITE && sf <= NUM_NONFINITE, "number status");
        if (sf == NUM_OK)
            check(fv == fv && fv - fv == 0, "a float that parses is finite");
    }
    check(n == -1 || n == count, "count matches the sentinel");
    tokens_free(t, n < 0 ? 0 : n);          /* as complete.c does: frees up to the sentinel */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *cell = malloc(size + 1);
    if (!cell)
        return 0;
    memcpy(cell, data, size);
    cell[size] = '\0';
    size_t len = strlen(cell);
    bool valid = utf8_valid(cell, len);

    int real = parse_checked(cell, false, valid);
    parse_checked(cell, true, valid);

    const char *state = cell_completeness(NULL, cell);
    check(state && (strcmp(state, "complete") == 0 || strcmp(state, "incomplete") == 0 ||
                    strcmp(state, "invalid") == 0), "completeness is one of three words");
    if (real >= 0)
        check(strcmp(state, "invalid") != 0, "a cell that parses is not invalid");
    else
        check(strcmp(state, "complete") != 0, "a cell that fails to parse is not complete");

    /* line by line, as complete_request and inspect_request see them */
    tokens_checked(cell, valid);
    for (char *p = cell;;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        tokens_checked(p, valid);
        if (!nl)
            break;
        p = nl + 1;
    }
    free(cell);
    return 0;
}
