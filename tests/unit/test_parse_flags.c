/* test_parse_flags.c — the arguments of a command: flag spellings, switches,
 * repeated and missing values, unknown flags with suggestions, positional
 * text, required flags, line versus cell mode, and the first error stopping
 * the cell. The fake magics are in parse_fixtures.h.
 */
#include "parse_fixtures.h"

/* ---- flags ---- */

static void every_flag_present_with_defaults(void **state)
{
    int n;
    command *c = ok("%matmul", &n);
    /* reals print differently across jansson versions: check tol apart */
    assert_true(json_is_real(json_object_get(c[0].params, "tol")));
    assert_float_equal(json_real_value(json_object_get(c[0].params, "tol")), 1e-5, 1e-20);
    json_object_del(c[0].params, "tol");
    assert_json(c[0].params, "{\"bin_width\":1,\"block\":[16,16],\"check\":true,\"size\":1024,"
                             "\"tile\":16,\"title\":null,\"variant\":\"tiled\",\"verbose\":false}");
    commands_free(c, n);
}

/* Flags with a CPU default that the user left alone are named in the command;
 * on the CPU backend they take it, and the change is said. */
static void cpu_defaults_apply_to_what_was_not_given(void **state)
{
    int n;
    char changed[200];
    command *c = ok("%matmul --tile 8", &n);
    assert_json(c[0].cpu_defaulted, "[\"size\"]");
    json_t *p = params_cpu_defaults(c[0].magic, c[0].params, c[0].cpu_defaulted, changed, sizeof changed);
    assert_json(json_object_get(p, "size"), "256");
    assert_json(json_object_get(p, "tile"), "8");
    assert_json(json_object_get(c[0].params, "size"), "1024");      /* the parsed params are left as they were */
    assert_string_equal(changed, "--size 2^8 (1024 on a GPU)");
    json_decref(p);
    commands_free(c, n);

    c = ok("%matmul", &n);
    assert_json(c[0].cpu_defaulted, "[\"size\",\"tile\"]");
    p = params_cpu_defaults(c[0].magic, c[0].params, c[0].cpu_defaulted, changed, sizeof changed);
    assert_json(json_object_get(p, "tile"), "4");
    assert_string_equal(changed, "--size 2^8 (1024 on a GPU), --tile 4 (16 on a GPU)");
    json_decref(p);
    commands_free(c, n);

    c = ok("%matmul -n 9 --tile 2", &n);
    assert_null(c[0].cpu_defaulted);
    p = params_cpu_defaults(c[0].magic, c[0].params, c[0].cpu_defaulted, changed, sizeof changed);
    assert_ptr_equal(p, c[0].params);
    assert_string_equal(changed, "");
    json_decref(p);
    commands_free(c, n);
}

static void flag_spellings(void **state)
{
    int n;
    parse_error e = bad("%matmul --size=2K -n 4 --tile 8");
    assert_string_equal(e.error.ename, "UsageError");
    assert_string_equal(e.error.evalue, "--size is given twice");

    command *c = ok("%matmul -n 4 --bin-width=8 --block 4x2 --title hello", &n);
    assert_json(json_object_get(c[0].params, "size"), "4");
    assert_json(json_object_get(c[0].params, "bin_width"), "8");
    assert_json(json_object_get(c[0].params, "block"), "[4,2]");
    assert_json(json_object_get(c[0].params, "title"), "\"hello\"");
    assert_null(json_object_get(c[0].params, "bin-width"));
    commands_free(c, n);
}

static void switches(void **state)
{
    static const struct { const char *cell; const char *check, *verbose; } cases[] = {
        { "%matmul", "true", "false" },
        { "%matmul --no-check --verbose", "false", "true" },
        { "%matmul --check=false --verbose=YES", "false", "true" },
        { "%matmul --check=0 --verbose=on", "false", "true" },
        { "%matmul -c --no-verbose", "true", "false" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n;
        command *c = ok(cases[i].cell, &n);
        assert_json(json_object_get(c[0].params, "check"), cases[i].check);
        assert_json(json_object_get(c[0].params, "verbose"), cases[i].verbose);
        commands_free(c, n);
    }
    refused_as("%matmul --check=maybe",
               "--check expects true or false (or yes/no, on/off, 1/0; got 'maybe')");
    refused_with("%matmul --no-check=1", "--no-check takes no value");
    refused_as("%matmul --no-size", "--size is not an on/off flag, so --no-size means nothing");
    refused_with("%matmul --check false",
                 "unexpected argument 'false' for %matmul: on/off flags take --flag=false");
    refused_as("%matmul --no-check --check", "--check is given twice");
}

static void duplicates_and_missing_values(void **state)
{
    parse_error e = refused_as("%matmul -n 8 --size 16", "--size is given twice");
    assert_int_equal(e.column, 14);
    refused_as("%matmul --tile 8 --tile 16",
               "--tile is given twice; for several values give one comma list (a,b,c)");
    refused_as("%matmul --size", "--size needs a value, e.g. --size 1024");
    refused_as("%matmul --title --size 4", "--title needs a value");
    refused_as("%matmul --size=", "--size needs a value after '='");
    int n;
    /* a negative number is a value, not a flag */
    refused_as("%matmul --title= --size -5K", "--size must be between 1 and 1073741824 (got -5K = -5120)");
    command *c = ok("%matmul --title=", &n);
    assert_json(json_object_get(c[0].params, "title"), "\"\"");
    commands_free(c, n);
    c = ok("%matmul --title \"-dash\"", &n);
    assert_json(json_object_get(c[0].params, "title"), "\"-dash\"");
    commands_free(c, n);
}

static void unknown_flags_suggest(void **state)
{
    parse_error e = bad("%matmul --tiel 8");
    assert_string_equal(e.error.ename, "UsageError");
    assert_string_equal(e.error.evalue, "unknown flag --tiel for %matmul; did you mean --tile?");
    assert_int_equal(e.line, 1);
    assert_int_equal(e.column, 9);
    refused_as("%matmul --varient=naive", "unknown flag --varient for %matmul; did you mean --variant?");
    refused_as("%matmul --no-chek", "unknown flag --no-chek for %matmul; did you mean --no-check?");
    refused_as("%matmul --zzzzzzzz 1", "unknown flag --zzzzzzzz for %matmul; its flags are --size, --tile, "
                                       "--variant, --check, --verbose, --tol, --block, --title, --bin-width");
    refused_with("%matmul -q", "unknown flag -q for %matmul; its flags are --size");
    refused_as("%matmul -size 4", "write --size with two dashes (got -size)");
    refused_as("%matmul -n1024", "write -n VALUE with a space (got -n1024)");
    refused_as("%%script --x\nbody", "%script takes no flags (got --x)");
}

static void positional_text(void **state)
{
    int n;
    command *c = ok("%note   several   words 'and  quoted' -5 -- --loud", &n);
    assert_json(c[0].params, "{\"loud\":false,\"text\":\"several words and  quoted -5 --loud\"}");
    commands_free(c, n);
    c = ok("%note \"--loud\"", &n);
    assert_json(c[0].params, "{\"loud\":false,\"text\":\"--loud\"}");
    commands_free(c, n);

    parse_error e = bad("%matmul --size 4 extra");
    assert_string_equal(e.error.ename, "UsageError");
    assert_string_equal(e.error.evalue, "unexpected argument 'extra' for %matmul; usage: %matmul [--size N] "
                                  "[--tile N,...] [--variant NAME,...] [--no-check] [--verbose] [--tol X] "
                                  "[--block AxB] [--title TEXT] [--bin-width N]");
    assert_int_equal(e.column, 18);
}

static void required_flags(void **state)
{
    parse_error e = refused_as("%need", "missing required flag --m for %need; usage: %need --m N");
    assert_int_equal(e.line, 1);
    assert_int_equal(e.column, 0);
    assert_string_equal(e.source, "%need");
    int n;
    command *c = ok("%need --m 7", &n);
    assert_json(c[0].params, "{\"m\":7}");
    commands_free(c, n);
}

static void line_and_cell_modes(void **state)
{
    refused_as("%%matmul\nbody", "%%matmul is not a cell magic; write %matmul as a line of its own");
    refused_as("%script", "%script is a cell magic: write %%script as the cell's first line "
                          "and its input below it");
}

static void first_error_stops(void **state)
{
    parse_error e = bad("%matmul\n%matmul --size 0\n%matmul --tiel 3");
    assert_int_equal(e.line, 2);
    assert_string_equal(e.error.evalue, "--size must be between 1 and 1073741824 (got 0)");
    assert_int_equal(e.column, 16);
    assert_string_equal(e.source, "%matmul --size 0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_flag_present_with_defaults),
        cmocka_unit_test(cpu_defaults_apply_to_what_was_not_given),
        cmocka_unit_test(flag_spellings),
        cmocka_unit_test(switches),
        cmocka_unit_test(duplicates_and_missing_values),
        cmocka_unit_test(unknown_flags_suggest),
        cmocka_unit_test(positional_text),
        cmocka_unit_test(required_flags),
        cmocka_unit_test(line_and_cell_modes),
        cmocka_unit_test(first_error_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
