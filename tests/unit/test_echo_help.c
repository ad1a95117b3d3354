/* test_echo_help.c — the registry, the generated help text, and the %echo
 * and %help magics run end to end: cell text -> cell_parse -> run() -> what
 * reaches the output sink.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "magic/magic.h"
#include "lang/parse_internal.h"
#include "lang/params.h"

#include "magic_sink.h"

extern const magic_spec magic_echo;
extern const magic_spec magic_help;

#define assert_contains(hay, needle) do {                                         \
        if (!strstr((hay), (needle)))                                             \
            fail_msg("'%s'\n  does not contain '%s'", (hay), (needle));           \
    } while (0)

/* ---- registry ---- */

static void registry(void **state)
{
    size_t n;
    const magic_spec *const *all = magic_all(&n);
    assert_true(n >= 3);
    for (size_t i = 1; i < n; i++)
        if (strcmp(all[i - 1]->name, all[i]->name) >= 0)
            fail_msg("registry not sorted: %s before %s", all[i - 1]->name, all[i]->name);
    assert_ptr_equal(magic_find("echo"), &magic_echo);
    assert_ptr_equal(magic_find("help"), &magic_help);
    assert_null(magic_find("Echo"));
    assert_null(magic_find(""));
    assert_string_equal(magic_nearest("ecoh"), "echo");
    assert_string_equal(magic_nearest("ECHO"), "echo");
    assert_null(magic_nearest("qqqqqqqqqq"));
}

/* ---- help text ---- */

static void usage_lines(void **state)
{
    char buf[256];
    magic_usage(&magic_echo, buf, sizeof buf);
    assert_string_equal(buf, "%echo [--stderr] TEXT");
    magic_usage(&magic_help, buf, sizeof buf);
    assert_string_equal(buf, "%help NAME");
}

static void help_text_of_echo(void **state)
{
    char *t = magic_help_text(NULL, &magic_echo);
    assert_non_null(t);
    const char *top = "%echo [--stderr] TEXT\n%%echo [--stderr] TEXT\n"
                      "  (a cell magic: the rest of the cell is its input)\n";
    assert_true(strncmp(t, top, strlen(top)) == 0);
    assert_contains(t, "\nPrint text into the cell's output\n");
    assert_contains(t, "\nArguments:\n  TEXT  the text to print\n");
    assert_contains(t, "\nFlags:\n  flag      type  default  allowed  help\n"
                       "  --stderr  bool  false             write to the stderr stream instead of stdout\n");
    assert_null(strstr(t, " \n"));               /* no trailing blanks */
    assert_contains(t, "\nExamples:\n  %echo Tile sizes from 8 to 32:\n");
    char *again = magic_help_text(NULL, &magic_echo);
    assert_string_equal(t, again);                  /* deterministic */
    free(again);
    free(t);
}

static void list_text(void **state)
{
    char *t = magic_list_text();
    assert_non_null(t);
    assert_contains(t, "cudalab magics:\n");
    /* summaries start in one column, whatever the longest name is */
    const char *echo = strstr(t, "\n  %echo "), *help = strstr(t, "\n  %help ");
    assert_non_null(echo);
    assert_non_null(help);
    const char *s1 = strstr(echo, "Print text into the cell's output\n");
    const char *s2 = strstr(help, "List the magics, or show one magic's usage");
    assert_non_null(s1);
    assert_non_null(s2);
    assert_int_equal(s1 - echo, s2 - help);
    assert_contains(t, "\n%help NAME or %NAME? shows the flags and examples of one magic.\n");
    assert_true(strstr(t, "%echo") < strstr(t, "%help"));
    free(t);
}

/* ---- %echo ---- */

static void echo_line_and_cell(void **state)
{
    sink s;
    magic_ctx ctx;
    assert_int_equal(run_one("%echo hello   world", NULL, &s, &ctx), 0);
    assert_string_equal(s.out, "hello world\n");
    assert_string_equal(s.err, "");
    assert_int_equal(run_one("%echo --stderr 'oops  !'", NULL, &s, &ctx), 0);
    assert_string_equal(s.out, "");
    assert_string_equal(s.err, "oops  !\n");
    assert_int_equal(run_one("%echo", NULL, &s, &ctx), 0);
    assert_string_equal(s.out, "\n");
    assert_int_equal(run_one("%%echo\nline one\n  line two", NULL, &s, &ctx), 0);
    assert_string_equal(s.out, "line one\n  line two\n");
    assert_int_equal(run_one("%%echo title\nbody\n", NULL, &s, &ctx), 0);
    assert_string_equal(s.out, "title\nbody\n");
    assert_int_equal(run_one("%%echo", NULL, &s, &ctx), 0);
    assert_string_equal(s.out, "");
    assert_int_equal(s.results, 0);
}

/* ---- %help ---- */

static void help_list(void **state)
{
    sink s;
    magic_ctx ctx;
    assert_int_equal(run_one("%help", NULL, &s, &ctx), 0);
    assert_int_equal(s.results, 1);
    assert_string_equal(json_string_value(json_object_get(s.doc, "magic")), "help");
    assert_true(json_is_null(json_object_get(s.doc, "topic")));
    json_t *list = json_object_get(s.doc, "magics");
    size_t n;
    magic_all(&n);
    assert_int_equal(json_array_size(list), n);
    bool found = false;
    for (size_t i = 0; i < n; i++)
        found |= strcmp(json_string_value(json_object_get(json_array_get(list, i), "name")), "echo") == 0;
    assert_true(found);
    json_t *block = json_array_get(json_object_get(s.view, "blocks"), 0);
    assert_string_equal(json_string_value(json_object_get(block, "type")), "text");
    assert_contains(json_string_value(json_object_get(block, "text")), "%echo");
    sink_free(&s, &ctx);
}

static void help_one_magic(void **state)
{
    static const char *const cells[] = { "%help echo", "%help %echo", "%help %%echo", "%echo?", "?echo" };
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
        sink s;
        magic_ctx ctx;
        assert_int_equal(run_one(cells[i], NULL, &s, &ctx), 0);
        assert_string_equal(json_string_value(json_object_get(s.doc, "topic")), "echo");
        assert_string_equal(json_string_value(json_object_get(s.doc, "usage")), "%echo [--stderr] TEXT");
        json_t *flag = json_array_get(json_object_get(s.doc, "flags"), 0);
        char *got = json_dumps(flag, JSON_SORT_KEYS | JSON_COMPACT);
        assert_string_equal(got, "{\"choices\":null,\"default\":false,\"help\":\"write to the stderr stream "
                                 "instead of stdout\",\"list\":false,\"max\":null,\"min\":null,\"name\":"
                                 "\"stderr\",\"required\":false,\"short\":null,\"type\":\"bool\"}");
        free(got);
        assert_true(json_is_true(json_object_get(s.doc, "cell")));
        assert_string_equal(json_string_value(json_object_get(s.view, "title")), "%echo");
        json_t *blocks = json_object_get(s.view, "blocks");
        assert_string_equal(json_string_value(json_object_get(json_array_get(blocks, 1), "type")), "table");
        sink_free(&s, &ctx);
    }
}

static void help_unknown_name(void **state)
{
    sink s;
    magic_ctx ctx;
    assert_int_equal(run_one("%help ecoh", NULL, &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "UsageError");
    assert_string_equal(ctx.error.evalue, "unknown magic %ecoh; did you mean %echo?");
    assert_int_equal(run_one("%qqqqqqqq?", NULL, &s, &ctx), -1);
    assert_string_equal(ctx.error.evalue, "unknown magic %qqqqqqqq; %help lists them all");
    assert_int_equal(s.results, 0);
}

/* Every example %help shows parses and validates: a student copies them, in
 * order, so a %param example defines what the examples after it use. */
static void help_examples_parse(void **state)
{
    size_t n;
    const magic_spec *const *all = magic_all(&n);
    for (size_t i = 0; i < n; i++)
        for (const char *const *ex = all[i]->examples; ex && *ex; ex++) {
            command *cmds;
            parse_error err;
            char why[300];
            int got = cell_parse(test_lab(), *ex, &cmds, &err);
            if (got < 1)
                fail_msg("%%%s example '%s': %s: %s", all[i]->name, *ex, err.error.ename, err.error.evalue);
            const char *name = json_string_value(json_object_get(cmds[0].params, "name"));
            if (strcmp(cmds[0].magic->name, PARAM_MAGIC) == 0 && name &&
                param_set(test_lab(), name, json_string_value(json_object_get(cmds[0].params, "value")), why,
                          sizeof why))
                fail_msg("%%%s example '%s': %s", all[i]->name, *ex, why);
            commands_free(cmds, got);
        }
    test_lab_reset();
}

/* Every CPU default a magic declares parses and is within its flag's range
 * (params_cpu_defaults would skip a bad one silently). */
static void cpu_defaults_parse(void **state)
{
    size_t n, declared = 0;
    const magic_spec *const *all = magic_all(&n);
    for (size_t i = 0; i < n; i++)
        for (const flag_spec *f = all[i]->flags; f && f->name; f++) {
            if (!f->cpu_def)
                continue;
            char why[400];
            json_t *v = flag_value_parse(NULL, f, f->cpu_def, why, sizeof why);
            if (!v)
                fail_msg("%%%s --%s: CPU default '%s': %s", all[i]->name, f->name, f->cpu_def, why);
            json_decref(v);
            declared++;
        }
    assert_true(declared > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registry),
        cmocka_unit_test(help_examples_parse),
        cmocka_unit_test(cpu_defaults_parse),
        cmocka_unit_test(usage_lines),
        cmocka_unit_test(help_text_of_echo),
        cmocka_unit_test(list_text),
        cmocka_unit_test(echo_line_and_cell),
        cmocka_unit_test(help_list),
        cmocka_unit_test(help_one_magic),
        cmocka_unit_test(help_unknown_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
