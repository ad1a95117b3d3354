/* test_subst.c — session parameters: the %param line, the session's table,
 * and {NAME} / $NAME put into magic lines (kernel/lang/params.c, subst.c):
 * where they expand and where not, how a value goes in (one argument; an
 * expression's number or string), the literals, the errors and the columns
 * they point at, and the limits.
 */
#include "parse_fixtures.h"

#include "lang/params.h"
#include "magic_sink.h"

static int clean(void **state)
{
    test_lab_reset();
    return 0;
}

static void define(const char *name, const char *value)
{
    char why[300];
    if (param_set(test_lab(), name, value, why, sizeof why) != 0)
        fail_msg("param_set %s: %s", name, why);
}

/* subst_expand of s in mode, which must succeed: the expanded text (static). */
static const char *expand(const char *s, enum subst_mode mode)
{
    static char got[4096];
    subst_text t;
    error_info e = { 0 };
    size_t at;
    param_scope scope = { .lab = test_lab() };
    int rc = subst_expand(s, 0, mode, &scope, &t, &e, &at);
    if (rc < 0)
        fail_msg("%s: %s: %s", s, e.ename, e.evalue);
    snprintf(got, sizeof got, "%s", rc ? t.text : s);
    subst_text_free(&t);
    return got;
}

/* subst_expand of s, which must fail: the error, *at its offset. */
static error_info refused(const char *s, size_t *at)
{
    subst_text t;
    error_info e = { 0 };
    param_scope scope = { .lab = test_lab() };
    if (subst_expand(s, 0, SUBST_ARGS, &scope, &t, &e, at) >= 0)
        fail_msg("%s expanded, but should fail", s);
    assert_null(t.text);
    return e;
}

/* ---- subst_expand ---- */

static void references_and_literals(void **state)
{
    define("size", "64");
    define("v", "naive,tiled");
    assert_string_equal(expand("--size {size}", SUBST_ARGS), "--size \"64\"");
    assert_string_equal(expand("--variant $v --x=$v.", SUBST_ARGS), "--variant \"naive,tiled\" --x=\"naive,tiled\".");
    assert_string_equal(expand("$$ {{size}} }} $$v", SUBST_ARGS), "$ {size} } $v");
    /* what starts no name stays as typed */
    assert_string_equal(expand("{} {1} $5 ${ {size x} {size", SUBST_ARGS), "{} {1} $5 ${ {size x} {size");
    assert_string_equal(expand("a } b", SUBST_ARGS), "a } b");
    assert_string_equal(expand("nothing here", SUBST_ARGS), "nothing here");
}

static void quotes_and_comments(void **state)
{
    define("t", "say \"hi\" \\ #1");
    /* single quotes are as typed; double quotes expand, escaped so they read back */
    assert_string_equal(expand("'{t} $t' \"<{t}>\"", SUBST_ARGS), "'{t} $t' \"<say \\\"hi\\\" \\\\ #1>\"");
    /* a backslash escape in double quotes is never a reference's start */
    assert_string_equal(expand("\"\\${t}\"", SUBST_ARGS), "\"\\$say \\\"hi\\\" \\\\ #1\"");
    /* a comment starts a token; inside one, '#' is text */
    assert_string_equal(expand("a#$t # $t {nope}", SUBST_ARGS),
                        "a#\"say \\\"hi\\\" \\\\ #1\" # $t {nope}");
    /* an expression's comment starts anywhere; its single quotes have escapes */
    assert_string_equal(expand("'it\\'s {t}' == x#{nope}", SUBST_EXPR), "'it\\'s {t}' == x#{nope}");
}

static void expression_values(void **state)
{
    define("n", "2^20");
    define("f", "-1.5e3");
    define("b", "true");
    define("w", "tiled");
    define("p", "+5");
    assert_string_equal(expand("{n} + {f} == {b}", SUBST_EXPR), "2^20 + -1.5e3 == true");
    assert_string_equal(expand("m[variant={w}].x > {p}", SUBST_EXPR), "m[variant=\"tiled\"].x > \"+5\"");
    assert_string_equal(expand("\"{w}\" == '{w}'", SUBST_EXPR), "\"tiled\" == '{w}'");
}

static void undefined_names(void **state)
{
    size_t at;
    error_info e = refused("--size {size}", &at);
    assert_string_equal(e.ename, "NameError");
    assert_int_equal(at, 7);
    assert_string_equal(e.evalue, "{size} is not a parameter: none is defined (%param NAME VALUE defines one; "
                                  "write $$ or {{ for a literal $ or {)");
    define("size", "1");
    define("tile", "2");
    e = refused("--size $sise", &at);
    assert_int_equal(at, 7);
    assert_string_equal(e.evalue, "$sise is not a parameter; did you mean $size? (parameters: size, tile)");
    e = refused("--size $sise, 2", &at);            /* quoted as far as the reference goes */
    assert_string_equal(e.evalue, "$sise is not a parameter; did you mean $size? (parameters: size, tile)");
    e = refused("--x {zzzzzz}", &at);
    assert_string_equal(e.evalue, "{zzzzzz} is not a parameter (parameters: size, tile; write $$ or {{ for a "
                                  "literal $ or {)");
}

static void spans_map_back(void **state)
{
    define("v", "a b");
    const char *s = "x {v} y $$ $v z";
    subst_text t;
    error_info e;
    size_t at;
    param_scope scope = { .lab = test_lab() };
    assert_int_equal(subst_expand(s, 0, SUBST_ARGS, &scope, &t, &e, &at), 1);
    assert_string_equal(t.text, "x \"a b\" y $ \"a b\" z");
    assert_int_equal(subst_origin(&t, 0), 0);
    assert_int_equal(subst_origin(&t, 3), 2);          /* inside the value: its reference */
    assert_int_equal(subst_origin(&t, 8), 6);          /* y */
    assert_int_equal(subst_origin(&t, 10), 8);         /* the $ of $$ */
    assert_int_equal(subst_origin(&t, 12), 11);        /* the value of $v */
    assert_int_equal(subst_origin(&t, 18), 14);        /* z */
    assert_int_equal(subst_origin(&t, SIZE_MAX), SIZE_MAX);
    subst_text_free(&t);
}

static void expansion_is_bounded(void **state)
{
    static char big[PARAM_VALUE_MAX + 1];
    memset(big, 'x', PARAM_VALUE_MAX);
    define("big", big);
    char line[400] = "--title";
    for (int i = 0; i < 20; i++)
        strcat(line, " {big}");
    size_t at;
    error_info e = refused(line, &at);
    assert_string_equal(e.ename, "UsageError");
    assert_contains(e.evalue, "longer than 1024 KiB");
}

/* ---- the table ---- */

static void table_rules(void **state)
{
    char why[300];
    define("a", "1");
    define("a", "2");                               /* redefining replaces */
    assert_int_equal(param_count(test_lab()), 1);
    assert_string_equal(param_get(test_lab(), "a"), "2");
    assert_null(param_get(test_lab(), "b"));
    assert_int_equal(param_set(test_lab(), "1a", "x", why, sizeof why), -1);
    assert_contains(why, "'1a' is not a parameter name");
    assert_int_equal(param_set(test_lab(), "a-b", "x", why, sizeof why), -1);
    char name[PARAM_NAME_MAX + 2];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    assert_int_equal(param_set(test_lab(), name, "x", why, sizeof why), -1);
    assert_contains(why, "at most 64 characters");
    for (int i = 1; i < PARAM_COUNT_MAX; i++) {
        snprintf(name, sizeof name, "p%d", i);
        define(name, "v");
    }
    assert_int_equal(param_set(test_lab(), "one_more", "x", why, sizeof why), -1);
    assert_contains(why, "at most 256 parameters");
    define("p1", "w");                              /* a full table still takes redefinitions */
    test_lab_reset();
    static char big[PARAM_VALUE_MAX + 1];
    memset(big, 'x', PARAM_VALUE_MAX);
    for (int i = 0; i < (int)(PARAM_TOTAL_MAX / PARAM_VALUE_MAX); i++) {
        snprintf(name, sizeof name, "b%d", i);
        define(name, big);
    }
    assert_int_equal(param_set(test_lab(), "c", "x", why, sizeof why), -1);
    assert_contains(why, "at most 1024 KiB of values together");
}

/* ---- through the parser ---- */

static void magic_lines_see_values(void **state)
{
    define("n", "2^10");
    define("v", "naive,tiled");
    define("t", "two words #1");
    int count;
    command *c = ok("%matmul --size {n} --variant $v --title {t} --bin-width=$n # {nope}", &count);
    assert_json(json_object_get(c[0].params, "size"), "1024");
    assert_json(json_object_get(c[0].params, "variant"), "[\"naive\",\"tiled\"]");
    assert_json(json_object_get(c[0].params, "title"), "\"two words #1\"");
    assert_json(json_object_get(c[0].params, "bin_width"), "1024");
    assert_string_equal(c[0].source, "%matmul --size {n} --variant $v --title {t} --bin-width=$n # {nope}");
    commands_free(c, count);
    /* a value is text, never a flag */
    define("f", "--verbose");
    c = ok("%note {f}", &count);
    assert_json(c[0].params, "{\"loud\":false,\"text\":\"--verbose\"}");
    commands_free(c, count);
    /* a cell magic's first line expands, its body never */
    c = ok("%%note {t}\nbody {t} $v\n", &count);
    assert_json(json_object_get(c[0].params, "text"), "\"two words #1\"");
    assert_string_equal(c[0].body, "body {t} $v\n");
    commands_free(c, count);
}

static void errors_point_at_the_reference(void **state)
{
    define("size", "x");
    parse_error e = refused_with("%note ok\n%matmul --tile 8 --size {size}", "--size");
    assert_string_equal(e.error.ename, "UsageError");
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 25);
    assert_string_equal(e.source, "%matmul --tile 8 --size {size}");
    e = refused_as("%matmul --size 8 \\\n  --tile {sise}",
                   "{sise} is not a parameter; did you mean {size}? (parameters: size)");
    assert_string_equal(e.error.ename, "NameError");
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 10);
    /* the column after a value longer than its reference */
    define("long", "a long long value");
    e = refused_with("%matmul --title {long} --bogus", "unknown flag --bogus");
    assert_int_equal(e.column, 24);
}

static void param_lines(void **state)
{
    int count;
    command *c;
    parse_error e;
    /* a %param line counts for the lines below it at once; the last one wins */
    count = cell_parse(test_lab(), "%param size 64\n%echo {size}\n%param size \"6 4\"\n%echo $size", &c, &e);
    assert_int_equal(count, 4);
    assert_json(c[0].params, "{\"name\":\"size\",\"value\":\"64\"}");
    assert_json(json_object_get(c[1].params, "text"), "\"64\"");
    assert_json(json_object_get(c[3].params, "text"), "\"6 4\"");
    assert_null(param_get(test_lab(), "size"));                 /* parsing defines nothing for the session */
    commands_free(c, count);
    count = cell_parse(test_lab(), "%param", &c, &e);
    assert_json(c[0].params, "{}");
    commands_free(c, count);
    count = cell_parse(test_lab(), "%param x -5\n%param y -- --z\n%param z {x}", &c, &e);
    assert_int_equal(count, 3);
    assert_json(c[1].params, "{\"name\":\"y\",\"value\":\"--z\"}");
    assert_json(c[2].params, "{\"name\":\"z\",\"value\":\"-5\"}");
    commands_free(c, count);

    static const struct { const char *cell, *why; int column; } bad_lines[] = {
        {"%param 1x 3", "'1x' is not a parameter name", 8},
        {"%param x", "%param x needs a value, as in %param x 1024", 9},
        {"%param x a b", "%param x takes one value; quote it to keep its spaces, as in %param x \"a b\"", 12},
        {"%param 'x' 1", "a parameter's name is written as it is, without quotes", 8},
        {"%param --x 1", "%param takes no flags", 8},
    };
    for (size_t i = 0; i < sizeof bad_lines / sizeof bad_lines[0]; i++) {
        c = NULL;
        assert_int_equal(cell_parse(test_lab(), bad_lines[i].cell, &c, &e), -1);
        assert_string_equal(e.error.ename, "UsageError");
        assert_contains(e.error.evalue, bad_lines[i].why);
        assert_int_equal(e.column, bad_lines[i].column);
    }
}

static void expressions_see_values(void **state)
{
    int count;
    command *c;
    parse_error e;
    count = cell_parse(test_lab(), "%param n 64\n%param w tiled\n%assert {n} == 64 and m[variant=$w].x > 0 # {nope}\n"
                       "%score '{n}'", &c, &e);
    assert_int_equal(count, 4);
    assert_json(c[2].params, "{\"expr\":\"64 == 64 and m[variant=\\\"tiled\\\"].x > 0 # {nope}\"}");
    assert_json(c[3].params, "{\"expr\":\"'{n}'\"}");
    commands_free(c, count);
    /* an expression's error after a value points at the line as typed */
    assert_int_equal(cell_parse(test_lab(), "%param w tiled\n%assert {w} == )", &c, &e), -1);
    assert_string_equal(e.error.ename, "SyntaxError");
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 16);
}

static void param_runs(void **state)
{
    sink s;
    magic_ctx ctx;
    assert_int_equal(run_quiet("%param", NULL, &s, &ctx), 0);
    assert_string_equal(s.out, "no parameters: %param NAME VALUE defines one, {NAME} uses it\n");
    assert_int_equal(run_quiet("%param size 2^20", NULL, &s, &ctx), 0);
    assert_string_equal(s.out, "");
    assert_string_equal(param_get(test_lab(), "size"), "2^20");
    assert_int_equal(run_quiet("%param t \"a \\\"b\\\"\\n\"", NULL, &s, &ctx), 0);
    assert_int_equal(run_quiet("%param e ''", NULL, &s, &ctx), 0);
    assert_int_equal(run_quiet("%param", NULL, &s, &ctx), 0);
    assert_string_equal(s.out, "%param size 2^20\n%param t \"a \\\"b\\\"\\n\"\n%param e ''\n");
    /* every listing reads back as the values it lists, $ { } (which double quotes expand) included */
    assert_int_equal(run_quiet("%param c '{z}'", NULL, &s, &ctx), 0);
    assert_int_equal(run_quiet("%param b '$$ x {y}'", NULL, &s, &ctx), 0);
    assert_int_equal(run_quiet("%param q \"it's {{x}} $$y\"", NULL, &s, &ctx), 0);
    assert_string_equal(param_get(test_lab(), "q"), "it's {x} $y");
    assert_int_equal(run_quiet("%param", NULL, &s, &ctx), 0);
    char listing[sizeof s.out], *names[8], *values[8];
    snprintf(listing, sizeof listing, "%s", s.out);
    size_t n = param_count(test_lab());
    for (size_t i = 0; i < n; i++) {
        names[i] = strdup(param_name_at(test_lab(), i));
        values[i] = strdup(param_value_at(test_lab(), i));
    }
    test_lab_reset();
    for (char *line = strtok(listing, "\n"); line; line = strtok(NULL, "\n"))
        assert_int_equal(run_quiet(line, NULL, &s, &ctx), 0);
    assert_int_equal(param_count(test_lab()), n);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(param_get(test_lab(), names[i]), values[i]);
        free(names[i]);
        free(values[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(references_and_literals, clean),
        cmocka_unit_test_setup(quotes_and_comments, clean),
        cmocka_unit_test_setup(expression_values, clean),
        cmocka_unit_test_setup(undefined_names, clean),
        cmocka_unit_test_setup(spans_map_back, clean),
        cmocka_unit_test_setup(expansion_is_bounded, clean),
        cmocka_unit_test_setup(table_rules, clean),
        cmocka_unit_test_setup(magic_lines_see_values, clean),
        cmocka_unit_test_setup(errors_point_at_the_reference, clean),
        cmocka_unit_test_setup(param_lines, clean),
        cmocka_unit_test_setup(expressions_see_values, clean),
        cmocka_unit_test_setup(param_runs, clean),
    };
    return cmocka_run_group_tests(tests, NULL, clean);
}
