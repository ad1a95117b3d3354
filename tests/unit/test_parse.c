/* test_parse.c — the cell language: lines, cell magics, comments, quoting,
 * continuation, help forms, unknown magics, completeness, tokens and error
 * positions. Flags and their errors are in test_parse_flags.c, value grammars
 * (numbers, choices, dims, lists) in test_parse_values.c.
 */
#include "parse_fixtures.h"

/* ---- cell structure ---- */

static void empty_and_comment_cells(void **state)
{
    int n;
    command *c = ok("", &n);
    assert_int_equal(n, 0);
    assert_null(c);
    c = ok("  \n# just a note\n\t\n", &n);
    assert_int_equal(n, 0);
    assert_null(c);
}

static void line_magics_in_order(void **state)
{
    int n;
    command *c = ok("# setup\n%matmul --size 64\n\n%note hello\n  %matmul", &n);
    assert_int_equal(n, 3);
    assert_ptr_equal(c[0].magic, &fake_matmul);
    assert_int_equal(c[0].line, 2);
    assert_string_equal(c[0].source, "%matmul --size 64");
    assert_null(c[0].body);
    assert_ptr_equal(c[1].magic, &fake_note);
    assert_int_equal(c[1].line, 4);
    assert_json(c[1].params, "{\"loud\":false,\"text\":\"hello\"}");
    assert_int_equal(c[2].line, 5);
    commands_free(c, n);
}

static void cell_magic_takes_the_rest(void **state)
{
    int n;
    command *c = ok("# a comment first\n%%note --loud\n  body \"open\n\n%matmul --bad\n# kept\n", &n);
    assert_int_equal(n, 1);
    assert_ptr_equal(c[0].magic, &fake_note);
    assert_int_equal(c[0].line, 2);
    assert_string_equal(c[0].body, "  body \"open\n\n%matmul --bad\n# kept\n");
    assert_json(c[0].params, "{\"loud\":true,\"text\":null}");
    commands_free(c, n);

    c = ok("%%script", &n);
    assert_int_equal(n, 1);
    assert_string_equal(c[0].body, "");
    commands_free(c, n);
    c = ok("%%note title words\r\nbody\r\n", &n);
    assert_string_equal(c[0].body, "body\r\n");
    assert_json(json_object_get(c[0].params, "text"), "\"title words\"");
    commands_free(c, n);
}

static void cell_magic_must_come_first(void **state)
{
    parse_error e = bad("%matmul\n\n%%script\nbody");
    assert_string_equal(e.error.ename, "SyntaxError");
    assert_contains(e.error.evalue, "cell magics must come first");
    assert_contains(e.error.evalue, "%%script");
    assert_int_equal(e.line, 3);
    assert_string_equal(e.source, "%%script");
}

/* A command continued over thousands of lines is refused, not parsed in
 * quadratic time while the kernel stops answering. */
static void long_continuations_are_bounded(void **state)
{
    size_t lines = 1001, len = 0;
    char *cell = malloc(lines * 4 + 16);
    len += (size_t)sprintf(cell, "%%matmul");
    for (size_t i = 0; i < lines; i++)
        len += (size_t)sprintf(cell + len, " \\\n");
    sprintf(cell + len, "--size 4");
    parse_error e = bad(cell);
    assert_string_equal(e.error.ename, "SyntaxError");
    assert_contains(e.error.evalue, "at most 1000 lines");
    free(cell);
    int n;
    command *c = ok("%matmul \\\n \\\n --size 4", &n);
    assert_int_equal(n, 1);
    commands_free(c, n);
}

static void non_magic_lines_are_syntax_errors(void **state)
{
    parse_error e = bad("%matmul\nprint(1)");
    assert_string_equal(e.error.ename, "SyntaxError");
    assert_string_equal(e.error.evalue, "cudalab cells hold magic commands: 'print(1)' is not one; "
                                  "start the line with %; try %help");
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 1);
    assert_string_equal(e.source, "print(1)");
    e = refused_as("  matmul --size 4", "cudalab cells hold magic commands: start the line with %, "
                                        "as in %matmul; try %help");
    assert_int_equal(e.column, 3);
    e = bad("\"%matmul\"");
    assert_string_equal(e.error.ename, "SyntaxError");
    refused_as("%", "% must be followed by a magic name, as in %help");
    refused_as("%% --x", "%% must be followed by a magic name, as in %help");
}

static void continuation_joins_lines(void **state)
{
    int n;
    command *c = ok("%matmul --size 64 \\   \n    --tile 8,16 \\\n--no-check\n%note x", &n);
    assert_int_equal(n, 2);
    assert_json(json_object_get(c[0].params, "size"), "64");
    assert_json(json_object_get(c[0].params, "tile"), "[8,16]");
    assert_json(json_object_get(c[0].params, "check"), "false");
    assert_int_equal(c[0].line, 1);
    assert_int_equal(c[1].line, 4);
    commands_free(c, n);

    /* a comment line does not continue, even ending with a backslash */
    c = ok("# note \\\n%note a", &n);
    assert_int_equal(n, 1);
    commands_free(c, n);

    /* errors point at the physical line and column */
    parse_error e = bad("%matmul --size 64 \\\n  --tiel 8");
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 3);
    assert_string_equal(e.source, "  --tiel 8");

    e = bad("%matmul --tiel 8 \\\r\n  --size 64");    /* source: the line as typed */
    assert_int_equal(e.line, 1);
    assert_int_equal(e.column, 9);
    assert_string_equal(e.source, "%matmul --tiel 8 \\");
    e = bad("%note \"a\nb\" --loud \\\n --loud");
    assert_int_equal(e.line, 3);
    assert_int_equal(e.column, 2);
    assert_string_equal(e.source, " --loud");
    assert_string_equal(e.error.evalue, "--loud is given twice");

    e = bad("%matmul --size 64 \\");
    assert_string_equal(e.error.ename, "SyntaxError");
    assert_contains(e.error.evalue, "ends with \\");
    assert_int_equal(e.column, 19);
}

static void quoting_and_escapes(void **state)
{
    int n;
    command *c = ok("%note \"a \\\"b\\\" \\\\ \\n\\t\" 'single \\n kept' x\"y z\"w \"\" \\q", &n);
    assert_json(json_object_get(c[0].params, "text"),
                "\"a \\\"b\\\" \\\\ \\n\\t single \\\\n kept xy zw  \\\\q\"");
    commands_free(c, n);

    c = ok("%matmul --title=\"two  words\" --variant 'naive'", &n);
    assert_json(json_object_get(c[0].params, "title"), "\"two  words\"");
    assert_json(json_object_get(c[0].params, "variant"), "\"naive\"");
    commands_free(c, n);

    /* a quote left open runs into the next line, newline included */
    c = ok("%note \"first\nsecond\" end\n%matmul", &n);
    assert_int_equal(n, 2);
    assert_json(json_object_get(c[0].params, "text"), "\"first\\nsecond end\"");
    assert_int_equal(c[1].line, 3);
    commands_free(c, n);

    parse_error e = bad("%note ok\n%note 'never closed\n\n");
    assert_string_equal(e.error.ename, "SyntaxError");
    assert_string_equal(e.error.evalue, "this ' quote is never closed");
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 7);
}

static void trailing_comments_and_crlf(void **state)
{
    int n;
    command *c = ok("%matmul --size 64   # a big one\r\n%note a#b # gone\r\n", &n);
    assert_int_equal(n, 2);
    assert_json(json_object_get(c[0].params, "size"), "64");
    assert_json(json_object_get(c[1].params, "text"), "\"a#b\"");
    commands_free(c, n);
}

/* ---- help ---- */

static void help_forms(void **state)
{
    static const struct { const char *cell, *params; } cases[] = {
        { "%matmul?", "{\"name\":\"matmul\"}" },
        { "%matmul??", "{\"name\":\"matmul\"}" },
        { "?matmul", "{\"name\":\"matmul\"}" },
        { "??%matmul", "{\"name\":\"matmul\"}" },
        { "%%note?", "{\"name\":\"note\"}" },
        { "%nosuch?", "{\"name\":\"nosuch\"}" },     /* %help says it is unknown */
        { "%?", "{\"name\":null}" },
        { "?", "{\"name\":null}" },
        { "%help", "{\"name\":null}" },
        { "%help matmul", "{\"name\":\"matmul\"}" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n;
        command *c = ok(cases[i].cell, &n);
        assert_int_equal(n, 1);
        assert_ptr_equal(c[0].magic, &fake_help);
        assert_null(c[0].body);
        assert_json(c[0].params, cases[i].params);
        commands_free(c, n);
    }
    refused_as("%matmul? --size 4", "%matmul? asks for help and takes no arguments");
}

static void unknown_magics(void **state)
{
    command *c;
    parse_error e;
    assert_int_equal(cell_parse(test_lab(), "%ecoh hi", &c, &e), -1);
    assert_null(c);
    assert_string_equal(e.error.ename, "UsageError");
    assert_string_equal(e.error.evalue, "unknown magic %ecoh; did you mean %echo?");
    assert_int_equal(e.line, 1);
    assert_int_equal(cell_parse(test_lab(), "%%ecoh\nbody", &c, &e), -1);
    assert_string_equal(e.error.evalue, "unknown magic %%ecoh; did you mean %%echo?");
    assert_int_equal(cell_parse(test_lab(), "%qqqqqqqq", &c, &e), -1);
    assert_string_equal(e.error.evalue, "unknown magic %qqqqqqqq; %help lists them all");
    refused_as("%matmull", "unknown magic %matmull; %help lists them all");
}

/* ---- completeness and tokens ---- */

static void completeness(void **state)
{
    static const struct { const char *cell, *want; } cases[] = {
        { "", "complete" },
        { "# nothing", "complete" },
        { "%echo hi", "complete" },
        { "%echo \"abc", "incomplete" },
        { "%echo 'abc\ndef", "incomplete" },
        { "%echo a \\", "incomplete" },
        { "%echo a \\\n", "incomplete" },
        { "%%echo", "incomplete" },
        { "%%echo --stderr\n", "incomplete" },
        { "%%echo\nx", "complete" },
        { "%%echo\n\"unclosed", "complete" },
        { "%echo?", "complete" },
        { "%ecoh", "invalid" },
        { "%echo --stder", "invalid" },
        { "hello", "invalid" },
        { "%%help", "invalid" },
        { "%echo ok\n%ecoh\n%echo \"open", "incomplete" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(cell_completeness(test_lab(), cases[i].cell), cases[i].want) != 0)
            fail_msg("cell_completeness(test_lab(), %s) = %s, want %s", cases[i].cell,
                     cell_completeness(test_lab(), cases[i].cell), cases[i].want);
}

static void tokens_with_offsets(void **state)
{
    token *t;
    int n = line_tokens("%matmul  --tile 8,16 --title=\"a b\" # note", &t);
    assert_int_equal(n, 4);
    static const struct { const char *text; size_t start, end; } want[] = {
        { "%matmul", 0, 7 }, { "--tile", 9, 15 }, { "8,16", 16, 20 }, { "--title=a b", 21, 34 },
    };
    for (int i = 0; i < n; i++) {
        assert_string_equal(t[i].text, want[i].text);
        assert_int_equal(t[i].start, want[i].start);
        assert_int_equal(t[i].end, want[i].end);
    }
    assert_null(t[n].text);
    tokens_free(t, n);

    n = line_tokens("%echo \"open ended", &t);
    assert_int_equal(n, -1);
    assert_string_equal(t[0].text, "%echo");
    assert_string_equal(t[1].text, "open ended");
    assert_int_equal(t[1].start, 6);
    assert_int_equal(t[1].end, 17);
    assert_null(t[2].text);
    tokens_free(t, 0);              /* still frees both (ASan/valgrind check) */

    n = line_tokens("", &t);
    assert_int_equal(n, 0);
    assert_null(t[0].text);
    tokens_free(t, n);
}

static void utf8_positions(void **state)
{
    parse_error e = bad("%note é\n%matmul --títle x");
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 9);
    assert_string_equal(e.source, "%matmul --títle x");
    assert_contains(e.error.evalue, "unknown flag --títle for %matmul; did you mean --title?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_and_comment_cells),
        cmocka_unit_test(long_continuations_are_bounded),
        cmocka_unit_test(line_magics_in_order),
        cmocka_unit_test(cell_magic_takes_the_rest),
        cmocka_unit_test(cell_magic_must_come_first),
        cmocka_unit_test(non_magic_lines_are_syntax_errors),
        cmocka_unit_test(continuation_joins_lines),
        cmocka_unit_test(quoting_and_escapes),
        cmocka_unit_test(trailing_comments_and_crlf),
        cmocka_unit_test(help_forms),
        cmocka_unit_test(unknown_magics),
        cmocka_unit_test(completeness),
        cmocka_unit_test(tokens_with_offsets),
        cmocka_unit_test(utf8_positions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
