/* test_render.c — unit tests for the renderer (kernel/render): exact text and
 * HTML for small views, number formatting, truncation of long tables,
 * malformed views, the MIME bundle and the view builders.
 *
 * Expected outputs are written out in full so that any change to the layout
 * shows up here as a diff a reviewer can read.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"

#include "render_helpers.h"

/* ---- helpers ---- */

static void expect_text(const json_t *view, const char *want)
{
    char *got = render_text(view);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* The same for a view written as JSON text. */
static void expect_view_text(const char *view_json, const char *want)
{
    json_t *view = parse(view_json);
    expect_text(view, want);
    json_decref(view);
}

/* A table of n rows [i, "r<i>"] under columns ["i", "name"]. */
static json_t *long_view(int n)
{
    json_t *view = view_new(NULL);
    json_t *t = view_add_table(view, NULL, json_pack("[s,s]", "i", "name"));
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", i);
        view_table_row(t, json_pack("[i,s]", i, name));
    }
    return view;
}

/* ---- text/plain ---- */

static void test_text_small_view(void **state)
{
    json_t *view = view_new("matmul 1024×1024×1024");
    view_add_note(view, "backend: cuda (NVIDIA H100)");
    json_t *t = view_add_table(view, "timings",
                               json_pack("[s,s,s,s,s]", "variant", "tile", "median µs",
                                         "GFLOP/s", "ok"));
    view_table_row(t, json_pack("[s,n,f,f,b]", "naive", 2113.4, 1016.0, 1));
    view_table_row(t, json_pack("[s,i,f,f,b]", "tiled ≥16", 16, 0.2712, 7953.2, 0));
    view_add_note(view, "checked: freivalds x3");

    expect_text(view,
        "matmul 1024×1024×1024\n"
        "note: backend: cuda (NVIDIA H100)\n"
        "\n"
        "timings\n"
        "variant    tile  median µs  GFLOP/s  ok\n"
        "---------  ----  ---------  -------  ---\n"
        "naive         -       2113     1016  yes\n"
        "tiled ≥16    16     0.2712     7953  no\n"
        "\n"
        "note: checked: freivalds x3\n");
    json_decref(view);
}

static void test_text_blocks_and_lines(void **state)
{
    json_t *view = view_new(NULL);
    view_add_text(view, "raw:\n  x = 1   \n\n\n");
    view_add_note(view, "first line\nsecond line");
    view_add_text(view, "no newline at the end");
    expect_text(view,
        "raw:\n"
        "  x = 1\n"
        "\n"
        "note: first line\n"
        "      second line\n"
        "\n"
        "no newline at the end\n");
    json_decref(view);

    /* Nothing to show: no bytes at all, not a stray newline. */
    view = view_new(NULL);
    expect_text(view, "");
    json_decref(view);
}

static void test_text_no_trailing_spaces(void **state)
{
    /* Left-aligned last column and empty trailing cells both pad with spaces. */
    expect_view_text("{\"blocks\": [{\"type\": \"table\", \"columns\": [\"n\", \"name\", \"x\"],"
                     " \"rows\": [[1, \"a\", null], [22, \"bbbbbb\", \"\"], [3, \"c \"]]}]}",
        " n  name    x\n"
        "--  ------  -\n"
        " 1  a       -\n"
        "22  bbbbbb\n"
        " 3  c\n");
}

/* ---- numbers ---- */

static void test_number_formats(void **state)
{
    static const struct { const char *json; const char *want; } cases[] = {
        /* integers in full, no separators */
        { "4712", "4712" }, { "-3", "-3" }, { "81559", "81559" }, { "0", "0" },
        { "134217728", "134217728" }, { "9223372036854775807", "9223372036854775807" },
        /* zero */
        { "0.0", "0" }, { "-0.0", "0" },
        /* |x| >= 1e6 or |x| < 1e-3: %.4g */
        { "3.1e-7", "3.1e-07" }, { "1e6", "1e+06" }, { "1234567.0", "1.235e+06" },
        { "-2.5e7", "-2.5e+07" }, { "0.0005", "0.0005" }, { "0.00012345", "0.0001234" },
        /* otherwise 4 significant digits, never scientific, integer digits kept */
        { "7953.2", "7953" }, { "999999.4", "999999" }, { "123.456", "123.5" },
        { "14.83", "14.83" }, { "-14.83", "-14.83" }, { "0.2712", "0.2712" },
        { "0.001", "0.001" }, { "0.001234", "0.001234" }, { "1.0", "1" },
        /* trailing zeros stripped, also after rounding */
        { "0.5", "0.5" }, { "2.5000", "2.5" }, { "100.04", "100" }, { "16.0", "16" },
        /* never rounded onto the next power of ten: the max of floats below 1 is not "1" */
        { "9.99996", "9.99996" }, { "0.99999833107", "0.999998" }, { "-0.99999833107", "-0.999998" },
        { "0.99999994", "0.9999999" }, { "999.97", "999.97" }, { "0.0099999", "0.0099999" },
        { "0.9999999999", "1" }, { "0.99994", "0.9999" }, { "0.99996", "0.99996" }, { "0.9994", "0.9994" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *v = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
        assert_non_null(v);
        char buf[64];
        render_number(v, buf, sizeof buf);
        if (strcmp(buf, cases[i].want) != 0)
            fail_msg("render_number(%s) = \"%s\", want \"%s\"", cases[i].json, buf, cases[i].want);
        json_decref(v);
    }
}

static void test_number_edges(void **state)
{
    char buf[8] = "xxxxxxx";
    json_t *s = json_string("12");
    json_t *big = json_integer(81559);

    render_number(s, buf, sizeof buf);          /* not a number: empty */
    assert_string_equal(buf, "");
    render_number(NULL, buf, sizeof buf);
    assert_string_equal(buf, "");
    render_number(big, buf, 4);                 /* truncated, still terminated */
    assert_string_equal(buf, "815");
    strcpy(buf, "keep");
    render_number(big, buf, 0);                 /* no room: untouched */
    assert_string_equal(buf, "keep");
    render_number(big, NULL, 16);

    json_decref(s);
    json_decref(big);
}

/* ---- text/html ---- */

static void test_html_small_view(void **state)
{
    json_t *view = view_new("histo");
    view_add_note(view, "256 bins");
    json_t *t = view_add_table(view, "runs", json_pack("[s,s]", "variant", "ms"));
    view_table_row(t, json_pack("[s,f]", "shared", 0.27));
    view_table_row(t, json_pack("[s,n]", "global"));
    view_add_text(view, "a\nb\n");

    char *html = render_html(view);
    assert_string_equal(html,
        "<div class=\"cudalab-result\">\n"
        "<h4 style=\"margin:0.3em 0\">histo</h4>\n"
        "<p class=\"cudalab-note\" style=\"margin:0.2em 0;font-style:italic;white-space:pre-wrap\">"
        "256 bins</p>\n"
        "<table class=\"cudalab-table\" style=\"border-collapse:collapse;"
        "font-variant-numeric:tabular-nums;margin:0.4em 0\">\n"
        "<caption style=\"caption-side:top;text-align:left;font-weight:bold;color:inherit\">"
        "runs</caption>\n"
        "<thead><tr><th style=\"text-align:left\">variant</th>"
        "<th style=\"text-align:right\">ms</th></tr></thead>\n"
        "<tbody>\n"
        "<tr><td style=\"text-align:left\">shared</td><td style=\"text-align:right\">0.27</td></tr>\n"
        "<tr><td style=\"text-align:left\">global</td><td style=\"text-align:right\">-</td></tr>\n"
        "</tbody>\n"
        "</table>\n"
        "<pre style=\"margin:0.4em 0\">a\nb\n</pre>\n"
        "</div>\n");
    free(html);
    json_decref(view);
}

static void test_html_escapes_everything(void **state)
{
    const char *evil = "<script>alert(\"x\")</script> & 'y'";
    const char *safe = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;";

    json_t *view = view_new(evil);
    view_add_note(view, evil);
    view_add_text(view, evil);
    json_t *t = view_add_table(view, evil, json_pack("[s]", evil));
    view_table_row(t, json_pack("[s]", evil));

    char *html = render_html(view);
    /* title, note, text, caption, column header, cell: each whole, each once */
    assert_int_equal(count(html, safe), 6);
    assert_int_equal(count(html, ">&lt;script"), 6);
    assert_null(strstr(html, "<script"));
    assert_null(strstr(html, "'y"));
    assert_null(strstr(html, "\"x"));
    assert_null(strstr(html, "& "));
    free(html);

    /* text/plain shows the string as it is. */
    char *text = render_text(view);
    assert_non_null(strstr(text, "note: <script>alert(\"x\")</script> & 'y'\n"));
    free(text);
    json_decref(view);
}

/* ---- long tables ---- */

/* How a renderer shows the rows of long_view: what each row (and header line)
 * of the output holds once, how many of those the header takes, and what
 * stands either side of a row's name. */
typedef struct long_format {
    char *(*render)(const json_t *view);
    const char *row_mark;
    int header_rows;
    const char *before_name, *after_name;
} long_format;

static const long_format as_text = { render_text, "\n", 2, "", "\n" };
static const long_format as_html = { render_html, "<tr>", 1, ">", "<" };

/* long_view(n) rendered as f says. */
static char *long_rendered(const long_format *f, int n)
{
    json_t *view = long_view(n);
    char *out = f->render(view);
    json_decref(view);
    assert_non_null(out);
    return out;
}

static bool shows_row(const char *out, const long_format *f, int i)
{
    char needle[32];
    snprintf(needle, sizeof needle, "%sr%d%s", f->before_name, i, f->after_name);
    return strstr(out, needle) != NULL;
}

/* 500 rows as f renders them: the first 100, the line that says what is cut
 * (around is that line with its neighbours, as f writes them), the last 20.
 * Returns the rendering for the format's own checks. */
static char *cut_at_100_and_20(const long_format *f, const char *around)
{
    char *out = long_rendered(f, 500);
    assert_int_equal(count(out, f->row_mark), f->header_rows + 100 + 1 + 20);
    assert_non_null(strstr(out, around));
    assert_false(shows_row(out, f, 100));
    assert_false(shows_row(out, f, 479));
    assert_true(shows_row(out, f, 499));
    return out;
}

static void test_truncation_text(void **state)
{
    char *text = cut_at_100_and_20(&as_text,
        " 98  r98\n"
        " 99  r99\n"
        "... 380 rows not shown (every row is in the result document) ...\n"
        "480  r480\n"
        "481  r481\n");
    assert_true(strncmp(text, "  i  name\n---  ----\n  0  r0\n  1  r1\n", 36) == 0);
    size_t n = strlen(text);
    assert_string_equal(text + n - 20, "498  r498\n499  r499\n");
    free(text);

    /* 200 rows are all shown; 201 are cut. */
    text = long_rendered(&as_text, 200);
    assert_int_equal(count(text, "\n"), 202);
    assert_null(strstr(text, "not shown"));
    free(text);

    text = long_rendered(&as_text, 201);
    assert_int_equal(count(text, "\n"), 2 + 100 + 1 + 20);
    assert_non_null(strstr(text, "\n... 81 rows not shown (every row is in the result document) ...\n"));
    free(text);
}

static void test_truncation_html(void **state)
{
    free(cut_at_100_and_20(&as_html,
        "<tr><td style=\"text-align:right\">99</td><td style=\"text-align:left\">r99</td></tr>\n"
        "<tr><td colspan=\"2\" style=\"text-align:center;font-style:italic\">"
        "... 380 rows not shown (every row is in the result document) ...</td></tr>\n"
        "<tr><td style=\"text-align:right\">480</td><td style=\"text-align:left\">r480</td></tr>\n"));
}

/* ---- malformed views ---- */

static void test_malformed_views(void **state)
{
    const char *empty_html = "<div class=\"cudalab-result\">\n</div>\n";
    const char *nothing[] = {
        "[]", "42", "{}", "{\"blocks\": {}}", "{\"title\": 7, \"blocks\": 3}",
        "{\"title\": \"\", \"blocks\": [42, null, [], {}, {\"type\": 7}, {\"type\": \"chart\"},"
        " {\"type\": \"note\"}, {\"type\": \"text\", \"text\": 5}, {\"type\": \"text\", \"text\": \"\\n\"},"
        " {\"type\": \"table\"}, {\"type\": \"table\", \"columns\": \"x\", \"rows\": 5},"
        " {\"type\": \"table\", \"columns\": [], \"rows\": [[], \"x\"]}]}",
    };
    for (size_t i = 0; i < sizeof nothing / sizeof nothing[0]; i++) {
        json_t *view = parse(nothing[i]);
        expect_text(view, "");
        char *html = render_html(view);
        assert_string_equal(html, empty_html);
        free(html);
        json_decref(view);
    }
    expect_text(NULL, "");
    char *html = render_html(NULL);
    assert_string_equal(html, empty_html);
    free(html);
}

static void test_ragged_rows(void **state)
{
    /* Short rows are padded, the longest row widens the table, a row that is
     * not an array is skipped, nested values show as compact JSON. */
    static const char ragged[] =
        "{\"blocks\": [{\"type\": \"table\", \"title\": 9, \"columns\": [\"a\", \"b\"],"
        " \"rows\": [[1], [2, \"x\", \"extra\"], \"not a row\", [[1,2], {\"k\": true}]]}]}";
    expect_view_text(ragged,
        "a      b\n"
        "-----  ----------  -----\n"
        "    1\n"
        "    2  x           extra\n"
        "[1,2]  {\"k\":true}\n");

    json_t *view = parse(ragged);
    char *html = render_html(view);
    assert_int_equal(count(html, "<th "), 3);
    assert_int_equal(count(html, "<td "), 9);
    assert_non_null(strstr(html, "<th style=\"text-align:left\"></th></tr></thead>"));
    assert_non_null(strstr(html, "<td style=\"text-align:left\">{&quot;k&quot;:true}</td>"));
    free(html);
    json_decref(view);
}

/* ---- bundle ---- */

static void test_bundle(void **state)
{
    json_t *doc = parse("{\"magic\": \"matmul\", \"runs\": [{\"gflops\": 7953.2}]}");
    json_t *view = view_new("matmul");
    json_t *t = view_add_table(view, NULL, json_pack("[s]", "GFLOP/s"));
    view_table_row(t, json_pack("[f]", 7953.2));

    json_t *bundle = render_bundle(doc, view);
    assert_non_null(bundle);
    assert_int_equal(json_object_size(bundle), 3);
    assert_string_equal(json_string_value(json_object_get(bundle, "text/plain")),
                        "matmul\n\nGFLOP/s\n-------\n   7953\n");
    char *html = render_html(view);
    assert_string_equal(json_string_value(json_object_get(bundle, "text/html")), html);
    free(html);
    json_t *copy = json_object_get(bundle, RESULT_MIME);
    assert_true(json_equal(copy, doc));
    assert_ptr_not_equal(copy, doc);            /* doc is borrowed, not shared */
    json_object_set_new(doc, "magic", json_string("changed"));
    assert_string_equal(json_string_value(json_object_get(copy, "magic")), "matmul");
    json_decref(bundle);

    bundle = render_bundle(NULL, view);
    assert_int_equal(json_object_size(bundle), 2);
    assert_null(json_object_get(bundle, RESULT_MIME));
    assert_non_null(json_object_get(bundle, "text/plain"));
    assert_non_null(json_object_get(bundle, "text/html"));
    json_decref(bundle);

    bundle = render_bundle(doc, NULL);          /* no view: empty text, doc still there */
    assert_string_equal(json_string_value(json_object_get(bundle, "text/plain")), "");
    assert_true(json_equal(json_object_get(bundle, RESULT_MIME), doc));
    json_decref(bundle);

    json_decref(view);
    json_decref(doc);
}

/* ---- builders ---- */

static void expect_dump(const json_t *v, const char *want)
{
    char *got = json_dumps(v, JSON_COMPACT);
    assert_string_equal(got, want);
    free(got);
}

static void test_builders(void **state)
{
    json_t *view = view_new(NULL);
    expect_dump(view, "{\"blocks\":[]}");
    json_decref(view);

    view = view_new("t");
    view_add_note(view, "n");
    json_t *t = view_add_table(view, "x", json_pack("[s]", "a"));
    view_table_row(t, json_pack("[i]", 1));
    json_t *bare = view_add_table(view, NULL, NULL);
    view_table_row(bare, json_pack("[b]", 0));
    view_add_text(view, "pre");
    view_add_note(view, NULL);                  /* ignored */
    expect_dump(view,
        "{\"title\":\"t\",\"blocks\":["
        "{\"type\":\"note\",\"text\":\"n\"},"
        "{\"type\":\"table\",\"title\":\"x\",\"columns\":[\"a\"],\"rows\":[[1]]},"
        "{\"type\":\"table\",\"rows\":[[false]]},"
        "{\"type\":\"text\",\"text\":\"pre\"}]}");
    json_decref(view);

    /* Text that is not UTF-8 is kept, with '?' for the bytes JSON cannot hold. */
    view = view_new("caf\xe9");
    view_add_note(view, "\xff ok");
    expect_dump(view, "{\"title\":\"caf?\",\"blocks\":[{\"type\":\"note\",\"text\":\"? ok\"}]}");
    json_decref(view);
}

static void test_builders_on_bad_views(void **state)
{
    /* Stolen arguments are released even when there is nowhere to put them:
     * ASan and valgrind report a leak here if not. */
    json_t *not_view = json_array();
    assert_null(view_add_table(NULL, "x", json_pack("[s]", "a")));
    assert_null(view_add_table(not_view, NULL, json_pack("[s]", "a")));
    view_table_row(NULL, json_pack("[i]", 1));
    view_table_row(not_view, json_pack("[i]", 1));
    view_add_note(NULL, "n");
    view_add_text(not_view, "t");
    assert_int_equal(json_array_size(not_view), 0);
    json_decref(not_view);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_small_view),
        cmocka_unit_test(test_text_blocks_and_lines),
        cmocka_unit_test(test_text_no_trailing_spaces),
        cmocka_unit_test(test_number_formats),
        cmocka_unit_test(test_number_edges),
        cmocka_unit_test(test_html_small_view),
        cmocka_unit_test(test_html_escapes_everything),
        cmocka_unit_test(test_truncation_text),
        cmocka_unit_test(test_truncation_html),
        cmocka_unit_test(test_malformed_views),
        cmocka_unit_test(test_ragged_rows),
        cmocka_unit_test(test_bundle),
        cmocka_unit_test(test_builders),
        cmocka_unit_test(test_builders_on_bad_views),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
