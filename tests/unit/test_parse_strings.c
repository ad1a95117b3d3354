/* test_parse_strings.c — quoted text in the cell language: the escapes that
 * double quotes share with %assert/%score strings, the errors for the ones
 * that cannot be (NUL, malformed, not a character), very long lines (the word
 * cap of ordinary magics; raw magics read their text instead), and the quotes
 * of raw magics, which belong to their expression.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "magic/magic.h"
#include "lang/parse_internal.h"
#include "test_lab.h"

#define assert_contains(hay, needle) do {                                         \
        if (!strstr((hay), (needle)))                                             \
            fail_msg("'%s'\n  does not contain '%s'", (hay), (needle));           \
    } while (0)

/* The tokens of line must be want[0..n-1]. */
static void tokens_are(const char *line, const char *const *want, int n)
{
    token *t;
    int got = line_tokens(line, &t);
    if (got != n)
        fail_msg("%s: %d tokens, want %d", line, got, n);
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].text, want[i]) != 0)
            fail_msg("%s: token %d is '%s', want '%s'", line, i, t[i].text, want[i]);
    tokens_free(t, got);
}

static parse_error refused(const char *cell, const char *ename, const char *what)
{
    command *c = NULL;
    parse_error e;
    int n = cell_parse(test_lab(), cell, &c, &e);
    if (n >= 0) {
        commands_free(c, n);
        fail_msg("accepted: %.80s", cell);
    }
    assert_string_equal(e.error.ename, ename);
    assert_contains(e.error.evalue, what);
    return e;
}

static void escapes_in_double_quotes(void **state)
{
    const char *want[] = {"%echo", "aA\xc3\xa9\xf0\x9f\x98\x80\t\"\\'\r\nb", "c\\x41", "C:\\path\\d+", "x'y"};
    tokens_are("%echo \"aA\\u00e9\\U0001F600\\t\\\"\\\\\\'\\r\\nb\" 'c\\x41' \"C:\\path\\d+\" \"x\\x27y\"", want, 5);
    const char *joined[] = {"%echo", "ab"};
    tokens_are("%echo \"a\\\nb\"", joined, 2);      /* a backslash-newline inside quotes vanishes */
    const char *outside[] = {"%echo", "a\\x00b"};   /* outside quotes a backslash is a character */
    tokens_are("%echo a\\x00b", outside, 2);
}

static void bad_escapes_are_errors(void **state)
{
    parse_error e = refused("%echo \"a\\x00b\"", "SyntaxError",
                            "the escape \\x00 means NUL, which text cannot hold here");
    assert_int_equal(e.line, 1);
    assert_int_equal(e.column, 9);                  /* the backslash */
    refused("%echo \"\\u0000\"", "SyntaxError", "the escape \\u0000 means NUL");
    refused("%echo \"\\U00000000\"", "SyntaxError", "the escape \\U00000000 means NUL");
    refused("%echo \"\\x4g\"", "SyntaxError", "the escape \\x needs 2 hex digits, as in \\x41");
    refused("%echo \"\\u12\"", "SyntaxError", "the escape \\u needs 4 hex digits, as in \\u00e9");
    refused("%echo \"\\U1F600\"", "SyntaxError", "the escape \\U needs 8 hex digits");
    refused("%echo \"\\ud800\"", "SyntaxError", "the escape \\ud800 is not a Unicode character");
    refused("%echo \"\\U00110000\"", "SyntaxError", "is not a Unicode character");
    refused("%histo --text \"ab\\x00\"", "SyntaxError", "means NUL");
    e = refused("%echo ok\n%echo \\\n  \"\\x00\"", "SyntaxError", "means NUL");
    assert_int_equal(e.line, 3);                    /* on the continued line, as typed */
    assert_string_equal(cell_completeness(test_lab(), "%echo \"\\x00\""), "invalid");
    assert_string_equal(cell_completeness(test_lab(), "%echo \"\\x41"), "incomplete");
}

static char *words(const char *head, const char *word, size_t n)
{
    size_t h = strlen(head), w = strlen(word);
    char *s = malloc(h + w * n + 1);
    assert_non_null(s);
    memcpy(s, head, h);
    for (size_t i = 0; i < n; i++)
        memcpy(s + h + w * i, word, w);
    s[h + w * n] = '\0';
    return s;
}

static void long_lines(void **state)
{
    char *cell = words("%echo", " a", LEX_MAX_WORDS - 1);  /* the name and LEX_MAX_WORDS - 1 words */
    command *c = NULL;
    parse_error e;
    assert_int_equal(cell_parse(test_lab(), cell, &c, &e), 1);
    assert_int_equal(strlen(json_string_value(json_object_get(c[0].params, "text"))), 2 * (LEX_MAX_WORDS - 1) - 1);
    commands_free(c, 1);
    free(cell);
    cell = words("%echo", " a", 10 * LEX_MAX_WORDS);
    refused(cell, "UsageError", "%echo takes at most 65536 words (flags, values and text); put long text "
            "in one quoted argument");
    free(cell);
    cell = words("%matmul --size 64", " --tile 8", LEX_MAX_WORDS);
    refused(cell, "UsageError", "%matmul takes at most 65536 words");
    free(cell);
    /* a raw magic reads its text: its own limit speaks, not the word cap */
    cell = words("%score 1", " + 1", LEX_MAX_WORDS);
    refused(cell, "SyntaxError", "%score: the expression is too long: 262145 bytes (the limit is 65536)");
    free(cell);
    /* one quoted word of any length is one word */
    char *big = words("%echo 'x", "ab", 1 << 19);
    size_t n = strlen(big);
    big = realloc(big, n + 2);
    big[n] = '\'';
    big[n + 1] = '\0';
    assert_int_equal(cell_parse(test_lab(), big, &c, &e), 1);
    assert_int_equal(strlen(json_string_value(json_object_get(c[0].params, "text"))), 1 + (1u << 20));
    commands_free(c, 1);
    free(big);
}

/* %assert and %score read the rest of their line as an expression, whose
 * quotes take escapes in both kinds: the cell's quoting rules do not apply. */
static void raw_magics_own_their_quotes(void **state)
{
    command *c = NULL;
    parse_error e;
    assert_int_equal(cell_parse(test_lab(), "%assert 'it\\'s' == \"it's\"\n%score 1 + \\\n  1 # it's", &c, &e), 2);
    assert_string_equal(json_string_value(json_object_get(c[0].params, "expr")), "'it\\'s' == \"it's\"");
    assert_string_equal(json_string_value(json_object_get(c[1].params, "expr")), "1 +    1 # it's");
    commands_free(c, 2);
    e = refused("%assert 'abc", "SyntaxError", "%assert: this ' quote is never closed");
    assert_int_equal(e.column, 9);
    refused("%score len(\"a\\x00\")", "SyntaxError", "the escape \\x00 means NUL");
    assert_string_equal(cell_completeness(test_lab(), "%assert 'abc"), "invalid");
    assert_string_equal(cell_completeness(test_lab(), "%echo 'abc"), "incomplete");
    assert_string_equal(cell_completeness(test_lab(), "%score 1 + \\"), "incomplete");
    assert_string_equal(cell_completeness(test_lab(), "%score 1 + \\  "), "incomplete");
    assert_string_equal(cell_completeness(test_lab(), "%score 1 # \\"), "complete");
    assert_string_equal(cell_completeness(test_lab(), "%score '1 \\"), "invalid");
}

/* quote_token's text reads back as one token holding exactly the text, whatever it holds. */
static void quoted_tokens_read_back_as_given(void **state)
{
    (void)state;
    static const char *const texts[] = {"plain", "X=1 --m 16 --n 16", "say \"hi\"", "back\\slash",
                                        "tab\tand\nnewline", "'single'", "", NULL};
    for (const char *const *t = texts; *t; t++) {
        char q[256];
        size_t n = quote_token(*t, q, sizeof q);
        assert_int_equal(n, strlen(q));
        token *tok = NULL;
        assert_int_equal(line_tokens(q, &tok), 1);
        assert_string_equal(tok[0].text, *t);
        tokens_free(tok, 1);
    }
    char small[6];
    assert_true(quote_token("longer than six", small, sizeof small) > sizeof small - 1);
    assert_int_equal(strlen(small), sizeof small - 1);     /* truncated, still terminated */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(escapes_in_double_quotes),
        cmocka_unit_test(quoted_tokens_read_back_as_given),
        cmocka_unit_test(bad_escapes_are_errors),
        cmocka_unit_test(long_lines),
        cmocka_unit_test(raw_magics_own_their_quotes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
