/* test_source_check.c — a cell's directives checked before a compiler sees it
 * (kernel/student/source_check.c): every spelling of an #include of a host
 * file refused at its cell line (quoted, angled, computed, through a
 * continuation, a comment, a digraph or a trigraph), the other directives and
 * operators that reach files (#include_next, #import, #embed, __has_include,
 * line markers, #line "file", #pragma GCC dependency and its _Pragma), the
 * forms compilers read differently; what a kernel writes every day accepted
 * (allowed headers, comments and strings holding directives, #pragma unroll,
 * digit separators); and inline asm found in preprocessed output from the
 * cell's first line on, not before.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "student/source_check.h"

static void assert_accepted(const char *src)
{
    source_refusal r;
    if (source_check_cell(src, 1, &r) != 0)
        fail_msg("refused (line %d: %s):\n%s", r.line, r.reason, src);
}

/* Refused at cell line `line` (the source starts on line 1), with `words` in the reason. */
static void assert_refused(const char *src, int line, const char *words)
{
    source_refusal r;
    if (source_check_cell(src, 1, &r) == 0)
        fail_msg("accepted:\n%s", src);
    if (r.line != line || !strstr(r.reason, words))
        fail_msg("refused at line %d with \"%s\"; wanted line %d with \"%s\", for:\n%s", r.line, r.reason, line,
                 words, src);
}

#define KERNEL "__global__ void k(float *a) { a[threadIdx.x] = 1.0f; }\n"

static void everyday_kernels_are_accepted(void **state)
{
    (void)state;
    assert_accepted("#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n" KERNEL);
    assert_accepted("%:include <device_launch_parameters.h>\n" KERNEL);
    assert_accepted("#  include /* why */ <cuda_runtime.h> // and a note\n" KERNEL);
    assert_accepted("// #include <stdio.h>\n/* #include \"/etc/passwd\"\n#include_next <x> */\n" KERNEL);
    assert_accepted("#define TILE 16\n#define IDX(r, c) ((r) * TILE + (c))\n#ifndef TILE\n#error no TILE\n#endif\n"
                    KERNEL);
    assert_accepted("__global__ void k(float *a) {\n#pragma unroll\n for (int i = 0; i < 4; i++) a[i] = 1'000'000;\n"
                    " const char *s = \"#include </etc/passwd>\"; char c = '\"'; (void)s; (void)c; }\n");
    assert_accepted("#define UNROLL _Pragma(\"unroll 4\")\n#error it's fine: free text\n#line 40\n" KERNEL);
    assert_accepted("#if 0\n#endif\n#\n" KERNEL);
    assert_accepted("int x = 0x1p-3 + 1e+5 + u8'a' + L'b';\n" KERNEL);
}

static void includes_of_host_files_are_refused(void **state)
{
    (void)state;
    assert_refused(KERNEL "#include \"/etc/shadow\"\n", 2, "a kernel may include only <cuda_runtime.h>");
    assert_refused("#include </etc/passwd>\n", 1, "#include </etc/passwd>");
    assert_refused("\n\n#include \"../x\"\n", 3, "\"../x\"");
    assert_refused("#include \"/dev/zero\"\n", 1, "/dev/zero");
    assert_refused("#include \"/proc/self/environ\"\n", 1, "/proc/self/environ");
    assert_refused("#include <stdio.h>\n", 1, "<cuda_fp16.h>");
    assert_refused("#include \"cuda_runtime.h\"\n", 1, "write #include <cuda_runtime.h>");
    assert_refused("#include <cuda_runtime.h> \"/etc/passwd\"\n", 1, "more after the header name");
    assert_refused("#include <cuda_runtime.h\n", 1, "no closing >");
}

static void every_spelling_of_include_is_seen(void **state)
{
    (void)state;
    assert_refused("#define H \"/etc/passwd\"\n#include H\n", 2, "not a macro");
    assert_refused("%:include \"/etc/passwd\"\n", 1, "/etc/passwd");
    assert_refused("?\?=include \"/etc/passwd\"\n", 1, "/etc/passwd");
    assert_refused("#inc\\\nlude \"/etc/passwd\"\n", 1, "/etc/passwd");
    assert_refused("#include \\\n\"/etc/passwd\"\n", 1, "/etc/passwd");
    assert_refused("# /* a comment\n across lines */ include \"/etc/passwd\"\n", 1, "/etc/passwd");
    assert_refused("#include /* c */ \"/etc/passwd\"\n", 1, "/etc/passwd");
    assert_refused("int x;\r#include \"/etc/passwd\"\n", 2, "/etc/passwd");
    assert_refused("int x;\r\n#include \"/etc/passwd\"\r\n", 2, "/etc/passwd");
    assert_refused("  \t#include \"/etc/passwd\"\n", 1, "/etc/passwd");
    assert_refused("#if 0\n#include \"/etc/passwd\"\n#endif\n", 2, "/etc/passwd");
    assert_refused("/* */ #include \"/etc/passwd\"\n", 1, "/etc/passwd");
}

static void other_ways_to_files_are_refused(void **state)
{
    (void)state;
    assert_refused("#include_next <cuda_runtime.h>\n", 1, "#include_next reads a file");
    assert_refused("#import \"/etc/passwd\"\n", 1, "#import");
    assert_refused("#embed \"/etc/passwd\"\n", 1, "#embed");
    assert_refused("#if __has_include(\"/etc/passwd\")\n#endif\n", 1, "__has_include asks");
    assert_refused("#define H __has_include_next\n", 1, "__has_include_next");
    assert_refused("int a = __has_embed(\"/etc/passwd\");\n", 1, "__has_embed");
    assert_refused("#pragma GCC dependency \"/etc/passwd\"\n", 1, "dependency");
    assert_refused("_Pragma(\"GCC dependency \\\"/etc/passwd\\\"\")\n", 1, "dependency");
    assert_refused("#define P(x) _Pragma(#x)\nP(GCC dependency \"/etc/passwd\")\n", 1, "string literal only");
    assert_refused("# 1 \"/etc/passwd\"\n", 1, "line marker");
    assert_refused("#line 1 \"/etc/passwd\"\n", 1, "line number only");
    assert_refused("#line N\n", 1, "line number only");
    assert_refused("#ident \"x\"\n", 1, "#ident is not a directive");
    assert_refused("#sccs \"x\"\n", 1, "#sccs");
}

static void forms_read_differently_are_refused(void **state)
{
    (void)state;
    assert_refused("int x; \\ \n#include \"/etc/passwd\"\n", 1, "backslash followed by spaces");
    assert_refused("const char *s = R\"(\n#include <x>\n)\";\n", 1, "raw string");
    assert_refused("int a; /* never closed\n", 1, "never ends");
    assert_refused("\nchar c = 'x;\n", 2, "not closed on its line");
    assert_refused("const char *s = \"abc\n\";\n", 1, "not closed on its line");
}

static void lines_count_from_the_first_line(void **state)
{
    (void)state;
    source_refusal r;
    assert_int_equal(source_check_cell("int a;\n/* x\n y */\n#include <x>\n", 7, &r), -1);
    assert_int_equal(r.line, 10);
    assert_int_equal(source_check_cell("#define A \\\n  1\n#include <x>\n", 2, &r), -1);
    assert_int_equal(r.line, 4);
}

static void the_allowed_list_is_the_table(void **state)
{
    (void)state;
    const char *list = source_allowed_headers();
    for (size_t i = 0; i < source_header_count; i++) {
        char want[80];
        snprintf(want, sizeof want, "<%s>", source_headers[i].name);
        assert_non_null(strstr(list, want));
        assert_ptr_equal(source_header_find(source_headers[i].name), &source_headers[i]);
        /* a header the prelude does not stand for says what a GPU would give */
        assert_true(source_headers[i].on_cpu == (source_headers[i].cpu_lacks == NULL));
    }
    assert_null(source_header_find("stdio.h"));
}

/* ---- inline asm in preprocessed output ---- */

#define PRELUDE_II "# 0 \"unit.cpp\"\n# 1 \"cudalab_simt.h\" 1\nextern int f(void) __asm__(\"g\");\n" \
                   "# 2 \"unit.cpp\" 2\n"

static int asm_line(const char *ii, char *reason, size_t len)
{
    source_refusal r;
    int rc = source_check_no_asm(ii, strlen(ii), "cell", &r);
    snprintf(reason, len, "%s", r.reason);
    return rc == 0 ? -1 : r.line;
}

static void asm_is_found_from_the_cell_on(void **state)
{
    (void)state;
    char why[512];
    /* the prelude's (before the cell) is no matter; strings and longer words are not asm */
    assert_int_equal(asm_line(PRELUDE_II "# 2 \"cell\"\nint a;\nconst char *s = \"asm\"; int asm_x;\n"
                              "# 1 \"cudalab-entry\"\nvoid e(void) {}\n", why, sizeof why), -1);
    assert_int_equal(asm_line(PRELUDE_II "# 2 \"cell\"\nint a;\n\nint b; __asm__ volatile(\"\");\n", why,
                              sizeof why), 4);
    assert_non_null(strstr(why, "inline __asm__ is PTX or SASS"));
    assert_non_null(strstr(why, "--backend cuda"));
    assert_int_equal(asm_line(PRELUDE_II "# 5 \"cell\"\nasm(\".incbin \\\"/etc/shadow\\\"\");\n", why, sizeof why),
                     5);
    assert_int_equal(asm_line(PRELUDE_II "# 2 \"cell\"\n# 1 \"x.h\" 1\n__asm (\"\");\n", why, sizeof why), 0);
    assert_non_null(strstr(why, "a header the cell includes"));
    /* a raw string spanning lines is skipped, and the lines after it still counted */
    assert_int_equal(asm_line(PRELUDE_II "# 2 \"cell\"\nconst char *s = R\"x(asm\n asm )x\"; int a;\n\n"
                              "__asm__(\"\");\n", why, sizeof why), 5);
    /* no cell, nothing searched */
    assert_int_equal(asm_line(PRELUDE_II "int b; __asm__(\"\");\n", why, sizeof why), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(everyday_kernels_are_accepted),
        cmocka_unit_test(includes_of_host_files_are_refused),
        cmocka_unit_test(every_spelling_of_include_is_seen),
        cmocka_unit_test(other_ways_to_files_are_refused),
        cmocka_unit_test(forms_read_differently_are_refused),
        cmocka_unit_test(lines_count_from_the_first_line),
        cmocka_unit_test(the_allowed_list_is_the_table),
        cmocka_unit_test(asm_is_found_from_the_cell_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
