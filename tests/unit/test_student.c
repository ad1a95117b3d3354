/* test_student.c — a student's %%kernel without a GPU: the NVRTC log turned
 * into what a student reads (kernel/student/compile.c: the cell's line
 * numbers, the caret lines, our own checks in plain words, NVRTC's
 * boilerplate dropped, ptxas -v read for the entry only, names demangled),
 * finding the kernel and TILE in a source, and how the %%kernel line and the
 * family magic parse -D and --block.
 *
 * The logs are NVRTC 13.0's own, captured once from the program that
 * compile.c builds (the cell after #line 2 "cell", our signature trailer as
 * "cudalab", name expression &NAME, -arch=sm_90 -lineinfo -Xptxas -v).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cudalab/coalesce.h"
#include "cudalab/grid.h"
#include "cudalab/histo.h"
#include "cudalab/matmul.h"
#include "cudalab/reduce.h"
#include "cudalab/stencil.h"
#include "cudalab/vecadd.h"
#include "lang/lang.h"
#include "student/compile.h"
#include "student/nvrtc.h"

/* ---- helpers ---- */

static void assert_json_is(const json_t *v, const char *want)
{
    char *got = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!got || strcmp(got, want) != 0)
        fail_msg("got  %s\nwant %s", got ? got : "(null)", want);
    free(got);
}

typedef struct translated {
    json_t *errors, *warnings;
    student_resources res;
    int nerr;
} translated;

static translated translate(const char *log, const char *name, const char *lowered)
{
    student_source src = { name, "matmul", &cl_matmul_student, "", 2 };
    translated t = { json_array(), json_array(), {0}, 0 };
    t.nerr = student_translate_log(log, &src, lowered, t.errors, t.warnings, &t.res);
    return t;
}

static void translated_free(translated *t)
{
    json_decref(t->errors);
    json_decref(t->warnings);
}

static bool any_contains(const json_t *lines, const char *needle)
{
    size_t i;
    json_t *l;
    json_array_foreach(lines, i, l)
        if (strstr(json_string_value(l), needle))
            return true;
    return false;
}

#define MYTILED "_Z7mytiledPKfS0_Pfiii"


/* ---- the compiler's diagnostics ---- */

/* Cell lines 3..5: `int unused;`, `C[0] = A[0] + foo;`, `float x = "s";`. */
static const char log_errors_and_warning[] =
    "cell(4): error: identifier \"foo\" is undefined\n"
    "      C[0] = A[0] + foo;\n"
    "                    ^\n"
    "\n"
    "cell(5): error: a value of type \"const char *\" cannot be used to initialize an entity of type \"float\"\n"
    "      float x = \"s\";\n"
    "                ^\n"
    "\n"
    "cell(3): warning #177-D: variable \"unused\" was declared but never referenced\n"
    "      int unused;\n"
    "          ^\n"
    "\n"
    "Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"\n"
    "\n"
    "2 errors detected in the compilation of \"cell\".\n";

static void errors_and_warnings_with_cell_lines(void **state)
{
    (void)state;
    translated t = translate(log_errors_and_warning, "mytiled", NULL);
    assert_int_equal(t.nerr, 2);
    assert_json_is(t.errors,
                   "[\"line 4: error: identifier \\\"foo\\\" is undefined\","
                   "\"        C[0] = A[0] + foo;\","
                   "\"                      ^\","
                   "\"line 5: error: a value of type \\\"const char *\\\" cannot be used to initialize an "
                   "entity of type \\\"float\\\"\","
                   "\"        float x = \\\"s\\\";\","
                   "\"                  ^\"]");
    /* the warning without NVRTC's number; no Remark, no count of errors */
    assert_json_is(t.warnings,
                   "[\"line 3: warning: variable \\\"unused\\\" was declared but never referenced\","
                   "\"        int unused;\","
                   "\"            ^\"]");
    assert_false(t.res.known);
    translated_free(&t);
}

static const char log_catastrophic[] =
    "cell(2): catastrophic error: cannot open source file \"nofile.h\"\n"
    "  #include \"nofile.h\"\n"
    "                     ^\n"
    "\n"
    "1 catastrophic error detected in the compilation of \"cell\".\n"
    "Compilation terminated.\n";

static void catastrophic_error_is_an_error(void **state)
{
    (void)state;
    translated t = translate(log_catastrophic, "mytiled", NULL);
    assert_int_equal(t.nerr, 1);
    assert_json_is(json_array_get(t.errors, 0), "\"line 2: error: cannot open source file \\\"nofile.h\\\"\"");
    assert_int_equal(json_array_size(t.errors), 3);         /* with its source line and caret */
    assert_false(any_contains(t.errors, "detected in the compilation"));
    /* "Compilation terminated." is NVRTC's boilerplate too, yet it becomes a
     * warning line (and so the last line of the CompileError's traceback) */
    assert_true(json_array_size(t.warnings) == 0);
    translated_free(&t);
}

/* --name mytiled whose cell has (const float *A, const float *B, float *C, int M, int N). */
static const char log_signature[] =
    "cudalab(15): error: static assertion failed with \"cudalab-signature\"\n"
    "  static_assert(__cudalab_sig<decltype(mytiled)>::__cudalab_ok, \"cudalab-signature\");\n"
    "  ^\n"
    "\n"
    "1 error detected in the compilation of \"cell\".\n";

static void wrong_signature_names_the_expected_one(void **state)
{
    (void)state;
    translated t = translate(log_signature, "mytiled", NULL);
    assert_int_equal(t.nerr, 1);
    /* one plain line: our trailer's text and its caret are not the student's */
    assert_json_is(t.errors,
                   "[\"error: %matmul runs __global__ void mytiled(const float *A, const float *B, float *C, "
                   "int M, int N, int K); the parameters of mytiled do not match (%help kernel shows every "
                   "family's)\"]");
    assert_true(json_array_size(t.warnings) == 0);
    translated_free(&t);
}

/* --name mine, and the cell defines only `other`. */
static const char log_undefined[] =
    "cudalab(8): error: identifier \"mine\" is undefined\n"
    "  static_assert(__cudalab_sig<decltype(mine)>::__cudalab_ok, \"cudalab-signature\");\n"
    "                                      ^\n"
    "\n"
    "cudalab(15): error: static assertion failed with \"cudalab-signature\"\n"
    "  static_assert(__cudalab_sig<decltype(mine)>::__cudalab_ok, \"cudalab-signature\");\n"
    "  ^\n"
    "\n"
    "__nv_name_map(2): error: Error in parsing name expression for lowered name lookup. Input name "
    "expression was: \" & mine\"\n"
    "  #pragma nv_mangled_name &mine\n"
    "                          ^\n"
    "\n"
    "3 errors detected in the compilation of \"cell\".\n";

static void undefined_name_says_so(void **state)
{
    (void)state;
    translated t = translate(log_undefined, "mine", NULL);
    assert_string_equal(json_string_value(json_array_get(t.errors, 0)),
                        "error: the cell defines no kernel named mine (--name says which __global__ "
                        "function to run)");
    assert_false(any_contains(t.errors, "static_assert"));
    assert_false(any_contains(t.errors, "nv_mangled_name"));
    assert_false(any_contains(t.errors, "__nv_name_map"));
    /* a kernel that does not exist has no parameters to mismatch: the failed
     * static_assert that follows from it should not add "the parameters of
     * mine do not match" */
    assert_true(json_array_size(t.errors) == 1 && t.nerr == 1);
    translated_free(&t);
}

static void undefined_name_shows_none_of_our_lines(void **state)
{
    (void)state;
    translated t = translate(log_undefined, "mine", NULL);
    assert_true(json_array_size(t.warnings) == 0);
    translated_free(&t);
}

/* --name mytiled on a __device__ function of the right parameters. */
static const char log_device[] =
    "__nv_name_map(2): error: Name expression cannot form address of a non-__global__ function. Input "
    "name expression was: \" & mytiled\"\n"
    "  #pragma nv_mangled_name &mytiled\n"
    "                          ^\n"
    "\n"
    "1 error detected in the compilation of \"cell\".\n";

static void device_function_is_not_a_kernel(void **state)
{
    (void)state;
    translated t = translate(log_device, "mytiled", NULL);
    assert_int_equal(t.nerr, 1);
    assert_json_is(t.errors, "[\"error: mytiled is not a __global__ function: a kernel is declared "
                             "__global__ void mytiled(...)\"]");
    assert_true(json_array_size(t.warnings) == 0);
    translated_free(&t);
}

/* ---- ptxas -v ---- */

/* Two kernels: `helper` (2048 bytes of smem, 12 registers) is compiled after the entry. */
static const char log_two_kernels[] =
    "ptxas info    : 2 bytes gmem\n"
    "ptxas info    : Compiling entry function '" MYTILED "' for 'sm_90'\n"
    "ptxas info    : Function properties for " MYTILED "\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 31 registers, used 1 barriers, 1024 bytes smem\n"
    "ptxas info    : Compile time = 16.024 ms\n"
    "ptxas info    : Compiling entry function '_Z6helperPf' for 'sm_90'\n"
    "ptxas info    : Function properties for _Z6helperPf\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 12 registers, used 1 barriers, 2048 bytes smem\n"
    "ptxas info    : Compile time = 2.305 ms\n";

static void resources_of_the_entry_only(void **state)
{
    (void)state;
    translated t = translate(log_two_kernels, "mytiled", MYTILED);
    assert_int_equal(t.nerr, 0);
    assert_true(t.res.known);
    assert_int_equal(t.res.registers, 31);
    assert_int_equal(t.res.static_smem, 1024);
    assert_int_equal(t.res.barriers, 1);
    assert_int_equal(t.res.stack, 0);
    assert_int_equal(t.res.spill_stores, 0);
    assert_int_equal(t.res.spill_loads, 0);
    /* ptxas's info lines are read, not shown */
    assert_int_equal(json_array_size(t.errors), 0);
    assert_int_equal(json_array_size(t.warnings), 0);
    translated_free(&t);

    /* the other kernel's lines, when it is the one asked for */
    t = translate(log_two_kernels, "helper", "_Z6helperPf");
    assert_int_equal(t.res.registers, 12);
    assert_int_equal(t.res.static_smem, 2048);
    translated_free(&t);
}

/* A device function the entry calls, reported after the entry with its own stack and spills. */
static const char log_device_function_after[] =
    "ptxas info    : 2 bytes gmem\n"
    "ptxas info    : Compiling entry function '" MYTILED "' for 'sm_90'\n"
    "ptxas info    : Function properties for " MYTILED "\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 136 registers, used 0 barriers\n"
    "ptxas info    : Compile time = 19.254 ms\n"
    "ptxas info    : Function properties for _Z3fibi\n"
    "ptxas         .     24 bytes stack frame, 20 bytes spill stores, 20 bytes spill loads\n";

/* -maxrregcount=16: spills and a stack in the entry itself, and ptxas's warning. */
static const char log_spills[] =
    "ptxas warning : For profile sm_90 adjusting per thread register count of 16 to lower bound of 24\n"
    "ptxas info    : Overriding maximum register limit 256 for '" MYTILED "' with  24 of maxrregcount option\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function '" MYTILED "' for 'sm_90'\n"
    "ptxas info    : Function properties for " MYTILED "\n"
    "ptxas         .     288 bytes stack frame, 180 bytes spill stores, 228 bytes spill loads\n"
    "ptxas info    : Used 24 registers, used 0 barriers, 288 bytes cumulative stack size\n"
    "ptxas info    : Compile time = 24.995 ms\n";

static void stack_and_spills(void **state)
{
    (void)state;
    translated t = translate(log_device_function_after, "mytiled", MYTILED);
    assert_int_equal(t.res.registers, 136);
    assert_int_equal(t.res.static_smem, 0);
    assert_int_equal(t.res.stack, 0);           /* fib's 24 bytes are fib's */
    assert_int_equal(t.res.spill_stores, 0);
    assert_int_equal(t.res.spill_loads, 0);
    assert_int_equal(json_array_size(t.warnings), 0);
    translated_free(&t);

    t = translate(log_spills, "mytiled", MYTILED);
    assert_int_equal(t.nerr, 0);
    assert_int_equal(t.res.registers, 24);
    assert_int_equal(t.res.stack, 288);
    assert_int_equal(t.res.spill_stores, 180);
    assert_int_equal(t.res.spill_loads, 228);
    assert_int_equal(t.res.barriers, 0);
    assert_json_is(t.warnings, "[\"ptxas warning : For profile sm_90 adjusting per thread register count of 16 "
                               "to lower bound of 24\"]");
    translated_free(&t);
}

static const char log_entry_warning[] =
    "ptxas warning : Value of minnctapersm for entry " MYTILED " is out of range. minnctapersm will be ignored\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function '" MYTILED "' for 'sm_90'\n"
    "ptxas info    : Function properties for " MYTILED "\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 10 registers, used 0 barriers\n"
    "ptxas info    : Compile time = 4.625 ms\n";

static const char log_helper_warning[] =
    "ptxas warning : Value of minnctapersm for entry _Z6helperPf is out of range. minnctapersm will be ignored\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function '" MYTILED "' for 'sm_90'\n"
    "ptxas info    : Function properties for " MYTILED "\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 10 registers, used 0 barriers\n"
    "ptxas info    : Compile time = 4.736 ms\n"
    "ptxas info    : Compiling entry function '_Z6helperPf' for 'sm_90'\n"
    "ptxas info    : Function properties for _Z6helperPf\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 10 registers, used 0 barriers\n"
    "ptxas info    : Compile time = 1.522 ms\n";

static void ptxas_warnings_name_functions_as_written(void **state)
{
    (void)state;
    /* the entry by the student's name, with no help from a demangler */
    translated t = translate(log_entry_warning, "mytiled", MYTILED);
    assert_int_equal(t.nerr, 0);
    assert_json_is(t.warnings, "[\"ptxas warning : Value of minnctapersm for entry mytiled is out of range. "
                               "minnctapersm will be ignored\"]");
    assert_int_equal(t.res.registers, 10);
    translated_free(&t);

    /* another function through the C++ runtime NVRTC brings */
    char why[600];
    if (nvrtc_load(why, sizeof why) != 0) {
        print_message("skipped: demangling needs NVRTC: %s\n", why);
        skip();
    }
    t = translate(log_helper_warning, "mytiled", MYTILED);
    assert_json_is(t.warnings, "[\"ptxas warning : Value of minnctapersm for entry helper(float*) is out of "
                               "range. minnctapersm will be ignored\"]");
    assert_int_equal(t.res.registers, 10);
    translated_free(&t);
}

static void empty_log(void **state)
{
    (void)state;
    translated t = translate("", "mytiled", MYTILED);
    assert_int_equal(t.nerr, 0);
    assert_int_equal(json_array_size(t.errors), 0);
    assert_int_equal(json_array_size(t.warnings), 0);
    assert_false(t.res.known);
    translated_free(&t);
    t = translate(NULL, "mytiled", MYTILED);
    assert_int_equal(t.nerr, 0);
    translated_free(&t);
}

/* ---- the source ---- */

static void first_kernel_of_a_source(void **state)
{
    (void)state;
    static const struct { const char *text, *want; } cases[] = {
        { "__global__ void mytiled(const float *A) {}", "mytiled" },
        { "__device__ float f(float x) { return x; }\n__global__  void\n  k2 (float *C) {}\n__global__ void k3() {}",
          "k2" },
        /* comments and strings are not code */
        { "// __global__ void commented(float *C) {}\n/* __global__ void blocked() {} */\n"
          "const char *s = \"__global__ void quoted()\";\n__global__ void real_one(float *C) {}",
          "real_one" },
        { "/* a comment\n   over lines __global__ void no() */ __global__ void yes(int n) {}", "yes" },
        { "#define my__global__ 1\n__global__ void after_word(int n) {}", "after_word" },
        { "__device__ void helper(float *C) {}", "" },
        { "// __global__ void only_in_a_comment() {}", "" },
        { "", "" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64] = "junk";
        student_first_kernel(cases[i].text, buf, sizeof buf);
        if (strcmp(buf, cases[i].want) != 0)
            fail_msg("case %zu: got '%s', want '%s'", i, buf, cases[i].want);
    }
}

/* Courses teach __launch_bounds__ early; without --name its kernel is found
 * as "__launch_bounds__" (the first '(' after __global__), and the cell fails
 * with "the cell defines no kernel named __launch_bounds__". */
static void first_kernel_with_launch_bounds(void **state)
{
    (void)state;
    char buf[64];
    student_first_kernel("__global__ void __launch_bounds__(256, 2) bounded(float *C) {}", buf, sizeof buf);
    assert_true(strcmp(buf, "bounded") == 0);
}

static void uses_tile_in_code_only(void **state)
{
    (void)state;
    assert_true(student_uses_tile("__shared__ float As[TILE][TILE];"));
    assert_true(student_uses_tile("#ifndef TILE\n#define TILE 16\n#endif\n"));
    assert_true(student_uses_tile("int t = TILE*2;"));
    assert_false(student_uses_tile("// TILE is not used\nint x;"));
    assert_false(student_uses_tile("/* TILE */ int x;"));
    assert_false(student_uses_tile("const char *s = \"TILE\";"));
    assert_false(student_uses_tile("const char *s = \"a \\\" TILE\";"));
    assert_false(student_uses_tile("int TILES = 4, MY_TILE = 2, TILE_W = 3;"));
    assert_false(student_uses_tile(""));
}

/* ---- parsing ---- */

static command *parsed(const char *cell, int *n)
{
    parse_error e;
    command *c = NULL;
    *n = cell_parse(cell, &c, &e);
    if (*n != 1)
        fail_msg("'%s' does not parse: %s", cell, e.error.evalue);
    return c;
}

static void define_repeats_on_the_kernel_line(void **state)
{
    (void)state;
    int n;
    command *c = parsed("%%kernel --for matmul -D A=1 -D B=2\n__global__ void k(float *C) {}", &n);
    assert_json_is(json_object_get(c[0].params, "define"), "[\"A=1\",\"B=2\"]");
    assert_string_equal(json_string_value(json_object_get(c[0].params, "for")), "matmul");
    commands_free(c, n);
    c = parsed("%%kernel --for matmul --define=ONLY\n__global__ void k(float *C) {}", &n);
    assert_json_is(json_object_get(c[0].params, "define"), "[\"ONLY\"]");
    commands_free(c, n);
}

/* The compile-time checks' types come from each contract's parameter list: const and names dropped. */
static void contract_types_from_params(void **state)
{
    (void)state;
    static const struct { const char *params, *types; } cases[] = {
        { CL_MATMUL_STUDENT_PARAMS, "float *, float *, float *, int, int, int" },
        { CL_VECADD_STUDENT_PARAMS, "float *, float *, float *, int" },
        { CL_REDUCE_STUDENT_PARAMS, "float *, float *, int" },
        { CL_HISTO_STUDENT_PARAMS, "unsigned char *, long long, unsigned int *" },
        { CL_STENCIL_STUDENT_PARAMS, "float *, float *, float *, int, int" },
        { CL_STENCIL_STUDENT_2D_PARAMS, "float *, float *, float *, int, int, int" },
        { CL_COALESCE_STUDENT_PARAMS, "float *, float *, unsigned long long, unsigned long long" },
        { CL_GRID_STUDENT_PARAMS, "float *, float *, int, int" },
        { "const float*x,int  n", "float *, int" },
    };
    char out[128];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(student_param_types(cases[i].params, out, sizeof out), 0);
        assert_string_equal(out, cases[i].types);
    }
    assert_int_equal(student_param_types(CL_MATMUL_STUDENT_PARAMS, out, 8), -1);   /* too long for out */
}

static void block_is_a_list_of_dimensions(void **state)
{
    (void)state;
    int n;
    command *c = parsed("%matmul --block 16x16", &n);
    assert_json_is(json_object_get(c[0].params, "block"), "[[16,16]]");
    commands_free(c, n);
    c = parsed("%matmul --block 8x8,16x16", &n);
    assert_json_is(json_object_get(c[0].params, "block"), "[[8,8],[16,16]]");
    commands_free(c, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(errors_and_warnings_with_cell_lines),
        cmocka_unit_test(catastrophic_error_is_an_error),
        cmocka_unit_test(wrong_signature_names_the_expected_one),
        cmocka_unit_test(undefined_name_says_so),
        cmocka_unit_test(undefined_name_shows_none_of_our_lines),
        cmocka_unit_test(device_function_is_not_a_kernel),
        cmocka_unit_test(resources_of_the_entry_only),
        cmocka_unit_test(stack_and_spills),
        cmocka_unit_test(ptxas_warnings_name_functions_as_written),
        cmocka_unit_test(empty_log),
        cmocka_unit_test(first_kernel_of_a_source),
        cmocka_unit_test(first_kernel_with_launch_bounds),
        cmocka_unit_test(uses_tile_in_code_only),
        cmocka_unit_test(define_repeats_on_the_kernel_line),
        cmocka_unit_test(block_is_a_list_of_dimensions),
        cmocka_unit_test(contract_types_from_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
