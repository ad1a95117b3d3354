/* test_parse_values.c — flag values: the integer grammar and its overflow
 * edges, floats, ranges, choices with suggestions, dims, comma lists,
 * defaults, and the edit distance behind every "did you mean".
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "magic/magic.h"
#include "lang/parse_internal.h"

#define assert_contains(hay, needle) do {                                         \
        if (!strstr((hay), (needle)))                                             \
            fail_msg("'%s'\n  does not contain '%s'", (hay), (needle));           \
    } while (0)

static const char *const variants[] = { "naive", "tiled", "cublas", NULL };

static const flag_spec size_flag = {.name = "size", .type = FLAG_INT, .imin = 1, .imax = 1073741824};
static const flag_spec seed_flag = {.name = "seed", .type = FLAG_INT};      /* no range: all of int64 */
static const flag_spec tile_flag = {.name = "tile", .type = FLAG_INT, .imin = 1, .imax = 64, .opts = FLAG_LIST};
static const flag_spec tol_flag = {.name = "tol", .type = FLAG_FLOAT, .fmin = 0, .fmax = 1};
static const flag_spec scale_flag = {.name = "scale", .type = FLAG_FLOAT};
static const flag_spec variant_flag = {.name = "variant", .type = FLAG_CHOICE, .choices = variants};
static const flag_spec variants_flag = {.name = "variant", .type = FLAG_CHOICE, .choices = variants,
                                        .opts = FLAG_LIST};
static const flag_spec block_flag = {.name = "block", .type = FLAG_DIMS, .imin = 1, .imax = 1024};
static const flag_spec check_flag = {.name = "check", .type = FLAG_BOOL};
static const flag_spec title_flag = {.name = "title", .type = FLAG_STRING};
static const flag_spec define_flag = {.name = "define", .type = FLAG_STRING, .opts = FLAG_LIST};
static const flag_spec width_flag = {.name = "bin-width", .type = FLAG_INT, .def = "2^4", .imin = 1, .imax = 64};
static const flag_spec broken_flag = {.name = "broken", .type = FLAG_INT, .def = "lots", .imin = 1, .imax = 9};

static void assert_json(const json_t *v, const char *want)
{
    char *got = json_dumps(v, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
    if (!got || strcmp(got, want) != 0) {
        char copy[512];
        snprintf(copy, sizeof copy, "%s", got ? got : "(null)");
        free(got);
        fail_msg("json %s\n  expected %s", copy, want);
    }
    free(got);
}

/* The value of f for text must dump as want. */
static void value_is(const flag_spec *f, const char *text, const char *want)
{
    char msg[512] = "";
    json_t *v = flag_value_parse(NULL, f, text, msg, sizeof msg);
    if (!v)
        fail_msg("--%s %s failed: %s", f->name, text, msg);
    assert_json(v, want);
    json_decref(v);
}

/* The value of f for text must be refused with exactly want. */
static void refused(const flag_spec *f, const char *text, const char *want)
{
    char msg[512] = "";
    json_t *v = flag_value_parse(NULL, f, text, msg, sizeof msg);
    if (v) {
        json_decref(v);
        fail_msg("--%s %s was accepted", f->name, text);
    }
    if (strcmp(msg, want) != 0)
        fail_msg("--%s %s:\n  got  %s\n  want %s", f->name, text, msg, want);
}

/* ---- the integer grammar ---- */

static void integer_forms(void **state)
{
    static const struct { const char *text; long long want; } cases[] = {
        { "1024", 1024 }, { "-5", -5 }, { "+7", 7 }, { "007", 7 }, { "0", 0 }, { "-0", 0 },
        { "1_000_000", 1000000 }, { "2^20", 1048576 }, { "2^0", 1 }, { "0^0", 1 }, { "0^5", 0 },
        { "1^99999999999999999999", 1 }, { "-2^3", -8 }, { "2^62", 4611686018427387904LL },
        { "64K", 65536 }, { "64k", 65536 }, { "64Ki", 65536 }, { "16M", 16777216 }, { "16mi", 16777216 },
        { "1G", 1073741824 }, { "1Gi", 1073741824 }, { "2T", 2199023255552LL }, { "1P", 1125899906842624LL },
        { "1.5K", 1536 }, { "2.50K", 2560 }, { "0.5K", 512 }, { "0.0009765625K", 1 },
        { "1e6", 1000000 }, { "1E6", 1000000 }, { "2.5e3", 2500 }, { "1e+3", 1000 }, { "1_0e1_0", 100000000000LL },
        { "1000e-3", 1 }, { "1000000000000000000000e-3", 1000000000000000000LL }, { "2.000", 2 },
        { "0e999999", 0 },
        { "9223372036854775807", INT64_MAX }, { "-9223372036854775808", INT64_MIN },
        { "-2^63", INT64_MIN }, { "8191P", 9222246136947933184LL }, { "-8192P", INT64_MIN },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long long v = 42;
        enum num_status st = number_int(cases[i].text, &v);
        if (st != NUM_OK || v != cases[i].want)
            fail_msg("number_int(%s) = %d, %lld; want %lld", cases[i].text, st, v, cases[i].want);
    }
}

static void integer_refusals(void **state)
{
    static const struct { const char *text; enum num_status want; } cases[] = {
        { "9223372036854775808", NUM_OVERFLOW }, { "-9223372036854775809", NUM_OVERFLOW },
        { "99999999999999999999", NUM_OVERFLOW }, { "2^63", NUM_OVERFLOW }, { "2^64", NUM_OVERFLOW },
        { "10^19", NUM_OVERFLOW }, { "3^99999999999999999999", NUM_OVERFLOW },
        { "99999999999999999999K", NUM_OVERFLOW }, { "8192P", NUM_OVERFLOW }, { "1e19", NUM_OVERFLOW },
        { "9.3e18", NUM_OVERFLOW }, { "1e999999999999", NUM_OVERFLOW },
        { "2.5", NUM_FRACTION }, { "1e-3", NUM_FRACTION }, { "1.5e0", NUM_FRACTION },
        { "0.3K", NUM_FRACTION }, { "1.0001K", NUM_FRACTION },
        { "", NUM_SYNTAX }, { "abc", NUM_SYNTAX }, { "-", NUM_SYNTAX }, { "1_", NUM_SYNTAX },
        { "_1", NUM_SYNTAX }, { "1__0", NUM_SYNTAX }, { "1.", NUM_SYNTAX }, { ".5", NUM_SYNTAX },
        { "1e", NUM_SYNTAX }, { "1e3K", NUM_SYNTAX }, { "2^", NUM_SYNTAX }, { "^2", NUM_SYNTAX },
        { "2^-1", NUM_SYNTAX }, { "1.5^2", NUM_SYNTAX }, { "1KB", NUM_SYNTAX }, { "1Q", NUM_SYNTAX },
        { "--5", NUM_SYNTAX }, { "0x10", NUM_SYNTAX }, { "1 0", NUM_SYNTAX }, { "1,000", NUM_SYNTAX },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long long v = 42;
        enum num_status st = number_int(cases[i].text, &v);
        if (st != cases[i].want)
            fail_msg("number_int(%s) = %d (value %lld); want %d", cases[i].text, st, v, cases[i].want);
        assert_int_equal(v, 42);        /* untouched on failure */
    }
}

static void integer_messages(void **state)
{
    value_is(&size_flag, "1G", "1073741824");
    value_is(&size_flag, "1", "1");
    refused(&size_flag, "0", "--size must be between 1 and 1073741824 (got 0)");
    refused(&size_flag, "2G", "--size must be between 1 and 1073741824 (got 2G = 2147483648)");
    refused(&size_flag, "9223372036854775808", "--size: '9223372036854775808' is beyond the 64-bit "
            "integer range; --size must be between 1 and 1073741824");
    refused(&size_flag, "2^64", "--size: '2^64' is beyond the 64-bit integer range; --size must be "
            "between 1 and 1073741824");
    refused(&size_flag, "99999999999999999999K", "--size: '99999999999999999999K' is beyond the 64-bit "
            "integer range; --size must be between 1 and 1073741824");
    refused(&seed_flag, "2^63", "--seed: '2^63' is beyond the 64-bit integer range; --seed must be "
            "between -9223372036854775808 and 9223372036854775807");
    value_is(&seed_flag, "-9223372036854775808", "-9223372036854775808");
    refused(&size_flag, "2.5", "--size must be whole numbers (got '2.5')");
    refused(&size_flag, "big", "--size expects an integer such as 1024, 2^20, 64K or 1e6 (got 'big')");
    refused(&size_flag, "", "--size expects an integer such as 1024, 2^20, 64K or 1e6 (got '')");
}

/* Every form of one value v (|v| up to 2^70) against exact 128-bit
 * arithmetic: in int64 it reads back exactly, beyond it is NUM_OVERFLOW,
 * never wrapped (2^64 used to read as 0, 2^64 * 1000 and 1.8446744073709551616e19 too). */
typedef unsigned __int128 u128;

static void u128_text(u128 v, char *buf)
{
    char tmp[48];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v);
    for (int i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = '\0';
}

static void form_reads(const char *text, bool neg, u128 mag)
{
    u128 limit = neg ? (u128)INT64_MAX + 1 : (u128)INT64_MAX;
    long long v = 42;
    enum num_status st = number_int(text, &v);
    if (mag > limit) {
        if (st != NUM_OVERFLOW || v != 42)
            fail_msg("number_int(%s) = status %d, %lld; want overflow", text, st, v);
        return;
    }
    long long want = neg ? (mag == limit ? INT64_MIN : -(long long)mag) : (long long)mag;
    if (st != NUM_OK || v != want)
        fail_msg("number_int(%s) = status %d, %lld; want %lld", text, st, v, want);
}

static void every_form(u128 mag)
{
    char d[48], text[160];
    u128_text(mag, d);
    size_t len = strlen(d);
    for (int neg = 0; neg <= 1; neg++) {
        const char *sign = neg ? "-" : "";
        snprintf(text, sizeof text, "%s%s", sign, d);
        form_reads(text, neg, mag);
        snprintf(text, sizeof text, "%s000%s", sign, d);                  /* leading zeros */
        form_reads(text, neg, mag);
        snprintf(text, sizeof text, "%s%s000e-3", sign, d);               /* trailing zeros, exponent */
        form_reads(text, neg, mag);
        snprintf(text, sizeof text, "%s%s000000", sign, d);               /* times a million ... */
        form_reads(text, neg, mag * 1000000);
        snprintf(text, sizeof text, "%s%s.000e6", sign, d);               /* ... written as a decimal */
        form_reads(text, neg, mag * 1000000);
        if (len > 1) {                                                   /* scientific */
            snprintf(text, sizeof text, "%s%c.%se%zu", sign, d[0], d + 1, len - 1);
            form_reads(text, neg, mag);
        }
        char sep[64];                                                    /* 1_000_000 */
        size_t k = 0;
        for (size_t i = 0; i < len; i++) {
            if (i && (len - i) % 3 == 0)
                sep[k++] = '_';
            sep[k++] = d[i];
        }
        sep[k] = '\0';
        snprintf(text, sizeof text, "%s%s", sign, sep);
        form_reads(text, neg, mag);
        for (int shift = 10; shift <= 50; shift += 10) {                  /* 64K, 16M, ... */
            u128 unit = (u128)1 << shift;
            if (mag % unit)
                continue;
            char q[48];
            u128_text(mag / unit, q);
            snprintf(text, sizeof text, "%s%s%c", sign, q, "KMGTP"[shift / 10 - 1]);
            form_reads(text, neg, mag);
        }
        for (int k2 = 0; k2 < 127; k2++)                                 /* 2^N */
            if (mag == (u128)1 << k2) {
                snprintf(text, sizeof text, "%s2^%d", sign, k2);
                form_reads(text, neg, mag);
            }
    }
}

static void integer_overflow_class(void **state)
{
    static const u128 edges[] = {
        (u128)1 << 53, (u128)1 << 62, (u128)INT64_MAX - 1, (u128)INT64_MAX, (u128)INT64_MAX + 1,
        (u128)INT64_MAX + 2, (u128)UINT64_MAX - 1, (u128)UINT64_MAX, (u128)UINT64_MAX + 1,
        (u128)UINT64_MAX + 2, (u128)UINT64_MAX + 6, (u128)1 << 65, (u128)1 << 70,
        (u128)10000000000000000000ULL, (u128)10000000000000000000ULL * 10, (u128)1844674407370955161ULL * 10,
        (u128)1844674407370955161ULL * 10 + 7, (u128)18446744073709551ULL * 1000,
    };
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        every_form(edges[i]);
        every_form(edges[i] * 1024);
    }
    for (u128 v = 1; v && v < (u128)1 << 70; v = v * 3 + 1)   /* and a spread of values between */
        every_form(v);
}

static void integer_overflow_messages(void **state)
{
    static const char *const forms[] = {
        "18446744073709551616", "18446744073709551616000", "1.8446744073709551616e19", "2^64",
        "16777216T", "17179869184G", "1e20", "18_446_744_073_709_551_616", "-18446744073709551616",
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char want[300];
        snprintf(want, sizeof want, "--seed: '%s' is beyond the 64-bit integer range; --seed must be "
                 "between -9223372036854775808 and 9223372036854775807", forms[i]);
        refused(&seed_flag, forms[i], want);
        snprintf(want, sizeof want, "--size: '%s' is beyond the 64-bit integer range; --size must be "
                 "between 1 and 1073741824", forms[i]);
        refused(&size_flag, forms[i], want);
        snprintf(want, sizeof want, "--block: '%s' is beyond the 64-bit integer range; --block sizes "
                 "must be between 1 and 1024", forms[i]);
        char dims_text[64];
        snprintf(dims_text, sizeof dims_text, "16x%s", forms[i]);
        refused(&block_flag, dims_text, want);
    }
    refused(&tile_flag, "8,18446744073709551616", "--tile: '18446744073709551616' is beyond the 64-bit "
            "integer range; --tile must be between 1 and 64");
}

/* ---- floats, bools, strings ---- */

static void floats(void **state)
{
    value_is(&tol_flag, "0.5", "0.5");
    value_is(&tol_flag, "1", "1.0");
    value_is(&scale_flag, "-1_000.25", "-1000.25");
    value_is(&scale_flag, "1e-400", "0.0");
    refused(&tol_flag, "2", "--tol must be between 0 and 1 (got 2)");
    refused(&tol_flag, "-0.1", "--tol must be between 0 and 1 (got -0.1)");
    refused(&scale_flag, "nan", "--scale must be a finite number (got 'nan')");
    refused(&scale_flag, "-Inf", "--scale must be a finite number (got '-Inf')");
    refused(&scale_flag, "infinity", "--scale must be a finite number (got 'infinity')");
    refused(&scale_flag, "1e999", "--scale: '1e999' is too large for a double");
    refused(&scale_flag, "0x1p3", "--scale expects a number such as 0.5, 2 or 1e-3 (got '0x1p3')");
    refused(&scale_flag, "1.5.2", "--scale expects a number such as 0.5, 2 or 1e-3 (got '1.5.2')");
    refused(&scale_flag, "", "--scale expects a number such as 0.5, 2 or 1e-3 (got '')");
}

static void bools_and_strings(void **state)
{
    value_is(&check_flag, "TRUE", "true");
    value_is(&check_flag, "off", "false");
    refused(&check_flag, "2", "--check expects true or false (or yes/no, on/off, 1/0; got '2')");
    refused(&check_flag, "true,false", "--check takes one value, not a list (got 'true,false')");
    value_is(&title_flag, "a, b", "\"a, b\"");
    value_is(&title_flag, "", "\"\"");
    refused(&title_flag, "\xff\xfe", "--title: the text is not valid UTF-8");
}

/* ---- choices, dims, lists ---- */

static void choices(void **state)
{
    value_is(&variant_flag, "cublas", "\"cublas\"");
    refused(&variant_flag, "tiledd",
            "unknown value 'tiledd' for --variant; did you mean 'tiled'? allowed: naive, tiled, cublas");
    refused(&variant_flag, "CUBLAS",
            "unknown value 'CUBLAS' for --variant; allowed: naive, tiled, cublas");
    refused(&variant_flag, "nave",
            "unknown value 'nave' for --variant; did you mean 'naive'? allowed: naive, tiled, cublas");
    refused(&variant_flag, "zzzzzz", "unknown value 'zzzzzz' for --variant; allowed: naive, tiled, cublas");
    refused(&variant_flag, "naive,tiled", "--variant takes one value, not a list (got 'naive,tiled')");
    value_is(&variants_flag, "naive,cublas", "[\"naive\",\"cublas\"]");
    refused(&variants_flag, "naive,tield",
            "unknown value 'tield' for --variant; did you mean 'tiled'? allowed: naive, tiled, cublas");
}

static void dims(void **state)
{
    value_is(&block_flag, "76x62", "[76,62]");
    value_is(&block_flag, "16X16x4", "[16,16,4]");
    value_is(&block_flag, "256", "[256]");
    value_is(&block_flag, "1Kx1", "[1024,1]");
    static const char *const shapes[] = { "16x", "x16", "1x2x3x4", "16xab", "", "x", "4x4,4" };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        char want[256];
        snprintf(want, sizeof want, "--block expects 1 to 3 sizes joined by x, such as 256, 16x16 or "
                 "8x8x4 (got '%s')", shapes[i]);
        if (strchr(shapes[i], ','))
            snprintf(want, sizeof want, "--block takes one value, not a list (got '%s')", shapes[i]);
        refused(&block_flag, shapes[i], want);
    }
    refused(&block_flag, "0x4", "--block sizes must be between 1 and 1024 (got 0)");
    refused(&block_flag, "16x2K", "--block sizes must be between 1 and 1024 (got 2K = 2048)");
    refused(&block_flag, "1.5x2", "--block sizes must be whole numbers (got '1.5')");
    refused(&block_flag, "2^64x1", "--block: '2^64' is beyond the 64-bit integer range; --block sizes "
            "must be between 1 and 1024");
}

static void lists(void **state)
{
    value_is(&tile_flag, "8,16,32", "[8,16,32]");
    value_is(&tile_flag, "8", "8");                   /* one value stays a scalar */
    value_is(&tile_flag, "2^3,1e1", "[8,10]");
    refused(&tile_flag, "8,,16", "--tile: empty item in the list '8,,16'");
    refused(&tile_flag, "8,", "--tile: empty item in the list '8,'");
    refused(&tile_flag, ",8", "--tile: empty item in the list ',8'");
    refused(&tile_flag, "8,99", "--tile must be between 1 and 64 (got 99)");
    refused(&size_flag, "8,16", "--size takes one value, not a list (got '8,16')");
    /* -D: a value without its NAME= belongs to the NAME before it */
    value_is(&define_flag, "UNROLL=1,2,4", "[\"UNROLL=1\",\"UNROLL=2\",\"UNROLL=4\"]");
    value_is(&define_flag, "A=1,B=2,3", "[\"A=1\",\"B=2\",\"B=3\"]");
    value_is(&define_flag, "FAST,X=1", "[\"FAST\",\"X=1\"]");
    value_is(&define_flag, "UNROLL=4", "\"UNROLL=4\"");
}

/* ---- defaults and keys ---- */

static void defaults(void **state)
{
    char msg[256] = "";
    json_t *v = flag_default_value(&width_flag, msg, sizeof msg);
    assert_json(v, "16");
    json_decref(v);
    v = flag_default_value(&check_flag, msg, sizeof msg);
    assert_json(v, "false");
    json_decref(v);
    v = flag_default_value(&size_flag, msg, sizeof msg);
    assert_json(v, "null");
    json_decref(v);
    assert_null(flag_default_value(&broken_flag, msg, sizeof msg));
    assert_string_equal(msg, "the default of --broken does not parse: --broken expects an integer "
                             "such as 1024, 2^20, 64K or 1e6 (got 'lots')");
    char key[32];
    flag_key(&width_flag, key, sizeof key);
    assert_string_equal(key, "bin_width");
}

/* ---- suggestions ---- */

static void edit_distances(void **state)
{
    assert_int_equal(edit_distance("", ""), 0);
    assert_int_equal(edit_distance("abc", ""), 3);
    assert_int_equal(edit_distance("", "abc"), 3);
    assert_int_equal(edit_distance("tile", "tile"), 0);
    assert_int_equal(edit_distance("tile", "tiel"), 2);
    assert_int_equal(edit_distance("kitten", "sitting"), 3);
    assert_int_equal(edit_distance("flaw", "lawn"), 2);
    assert_int_equal(edit_distance("matmull", "matmul"), 1);
}

static void nearest_names(void **state)
{
    static const char *const names[] = { "ab", "device", "echo", "help", "histo", "matmul", "reduce", NULL };
    static const struct { const char *word, *want; } cases[] = {
        { "matmull", "matmul" }, { "ecoh", "echo" }, { "hepl", "help" }, { "histogramm", NULL },
        { "x", NULL }, { "devices", "device" }, { "redcue", "reduce" }, { "hist", "histo" },
        { "zzzzzzzzzzzz", NULL }, { "x", NULL }, { "hx", NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        suggest s;
        suggest_init(&s, cases[i].word);
        for (int k = 0; names[k]; k++)
            suggest_add(&s, names[k]);
        if (cases[i].want ? !s.best || strcmp(s.best, cases[i].want) != 0 : s.best != NULL)
            fail_msg("nearest(%s) = %s, want %s", cases[i].word, s.best ? s.best : "none",
                     cases[i].want ? cases[i].want : "none");
    }
}

static void utf8_cuts(void **state)
{
    assert_int_equal(utf8_clip("abc", 10), 3);
    assert_int_equal(utf8_clip("abc", 2), 2);
    assert_int_equal(utf8_clip("a\xc3\xa9z", 2), 1);      /* never half of é */
    assert_int_equal(utf8_clip("a\xc3\xa9z", 3), 3);
    char buf[8] = "ab\xe2\x82";                            /* cut inside a 3-byte sequence */
    utf8_trim(buf);
    assert_string_equal(buf, "ab");
    char whole[8] = "ab\xe2\x82\xac";
    utf8_trim(whole);
    assert_string_equal(whole, "ab\xe2\x82\xac");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(integer_forms),
        cmocka_unit_test(integer_refusals),
        cmocka_unit_test(integer_messages),
        cmocka_unit_test(integer_overflow_class),
        cmocka_unit_test(integer_overflow_messages),
        cmocka_unit_test(floats),
        cmocka_unit_test(bools_and_strings),
        cmocka_unit_test(choices),
        cmocka_unit_test(dims),
        cmocka_unit_test(lists),
        cmocka_unit_test(defaults),
        cmocka_unit_test(edit_distances),
        cmocka_unit_test(nearest_names),
        cmocka_unit_test(utf8_cuts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
