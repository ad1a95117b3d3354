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
#include "test_lab.h"

/* ---- helpers ---- */

static void assert_json_is(const json_t *v, const char *want)
{
    char *got = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!got || strcmp(got, want) != 0)
        fail_msg("got  %s\nwant %s", got ? got : "(null)", want);
    free(got);
}

/* One compiler log and all a student reads of it: how many errors, the error
 * and warning lines (as JSON text), and the entry's resources from ptxas -v
 * (all zero, not known, where ptxas did not report the entry). */
typedef struct log_case {
    const char *log;
    const char *name;           /* --name */
    const char *lowered;        /* the entry's mangled name; NULL where the cell did not compile */
    int nerr;
    const char *errors, *warnings;
    student_resources res;
    bool demangles;             /* names a function only NVRTC's C++ runtime demangles */
} log_case;

/* A test per case: the case is the test's state (LOG_CASE below). */
static void log_reads_as_the_case_says(void **state)
{
    const log_case *c = *state;
    char why[600];
    if (c->demangles && nvrtc_load(why, sizeof why) != 0) {
        print_message("skipped: demangling needs NVRTC: %s\n", why);
        skip();
    }
    student_source src = { c->name, "matmul", &cl_matmul_student, "", 2 };
    json_t *errors = json_array(), *warnings = json_array();
    student_resources res = {0};
    assert_int_equal(student_translate_log(c->log, &src, c->lowered, errors, warnings, &res), c->nerr);
    assert_json_is(errors, c->errors);
    assert_json_is(warnings, c->warnings);
    assert_int_equal(res.known, c->res.known);
    assert_int_equal(res.registers, c->res.registers);
    assert_int_equal(res.static_smem, c->res.static_smem);
    assert_int_equal(res.barriers, c->res.barriers);
    assert_int_equal(res.stack, c->res.stack);
    assert_int_equal(res.spill_stores, c->res.spill_stores);
    assert_int_equal(res.spill_loads, c->res.spill_loads);
    json_decref(errors);
    json_decref(warnings);
}

#define LOG_CASE(c) { #c, log_reads_as_the_case_says, NULL, NULL, (void *)&(c) }

#define MYTILED "_Z7mytiledPKfS0_Pfiii"


/* ---- the compiler's diagnostics ---- */

/* Cell lines 3..5: `int unused;`, `C[0] = A[0] + foo;`, `float x = "s";`. The
 * warning comes without NVRTC's number; no Remark, no count of errors. */
static const log_case errors_and_warnings_with_cell_lines = {
    .log = "cell(4): error: identifier \"foo\" is undefined\n"
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
           "2 errors detected in the compilation of \"cell\".\n",
    .name = "mytiled",
    .nerr = 2,
    .errors = "[\"line 4: error: identifier \\\"foo\\\" is undefined\","
              "\"        C[0] = A[0] + foo;\","
              "\"                      ^\","
              "\"line 5: error: a value of type \\\"const char *\\\" cannot be used to initialize an "
              "entity of type \\\"float\\\"\","
              "\"        float x = \\\"s\\\";\","
              "\"                  ^\"]",
    .warnings = "[\"line 3: warning: variable \\\"unused\\\" was declared but never referenced\","
                "\"        int unused;\","
                "\"            ^\"]",
};

/* The error with its source line and caret, without the count of errors.
 * "Compilation terminated." is NVRTC's boilerplate too: were it kept, it
 * would become a warning line (and so the last line of the CompileError's
 * traceback). */
static const log_case catastrophic_error_is_an_error = {
    .log = "cell(2): catastrophic error: cannot open source file \"nofile.h\"\n"
           "  #include \"nofile.h\"\n"
           "                     ^\n"
           "\n"
           "1 catastrophic error detected in the compilation of \"cell\".\n"
           "Compilation terminated.\n",
    .name = "mytiled",
    .nerr = 1,
    .errors = "[\"line 2: error: cannot open source file \\\"nofile.h\\\"\","
              "\"    #include \\\"nofile.h\\\"\","
              "\"                       ^\"]",
    .warnings = "[]",
};

/* --name mytiled whose cell has (const float *A, const float *B, float *C,
 * int M, int N): one plain line, for our trailer's text and its caret are not
 * the student's. */
static const log_case wrong_signature_names_the_expected_one = {
    .log = "cudalab(15): error: static assertion failed with \"cudalab-signature\"\n"
           "  static_assert(__cudalab_sig<decltype(mytiled)>::__cudalab_ok, \"cudalab-signature\");\n"
           "  ^\n"
           "\n"
           "1 error detected in the compilation of \"cell\".\n",
    .name = "mytiled",
    .nerr = 1,
    .errors = "[\"error: %matmul runs __global__ void mytiled(const float *A, const float *B, float *C, "
              "int M, int N, int K); the parameters of mytiled do not match (%help kernel shows every "
              "family's)\"]",
    .warnings = "[]",
};

/* --name mine, and the cell defines only `other`: none of our lines (the
 * static_assert, the name map) shows. A kernel that does not exist has no
 * parameters to mismatch: the failed static_assert that follows from it adds
 * no "the parameters of mine do not match". */
static const log_case undefined_name_says_so = {
    .log = "cudalab(8): error: identifier \"mine\" is undefined\n"
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
           "3 errors detected in the compilation of \"cell\".\n",
    .name = "mine",
    .nerr = 1,
    .errors = "[\"error: the cell defines no kernel named mine (--name says which __global__ function to run)\"]",
    .warnings = "[]",
};

/* --name mytiled on a __device__ function of the right parameters. */
static const log_case device_function_is_not_a_kernel = {
    .log = "__nv_name_map(2): error: Name expression cannot form address of a non-__global__ function. Input "
           "name expression was: \" & mytiled\"\n"
           "  #pragma nv_mangled_name &mytiled\n"
           "                          ^\n"
           "\n"
           "1 error detected in the compilation of \"cell\".\n",
    .name = "mytiled",
    .nerr = 1,
    .errors = "[\"error: mytiled is not a __global__ function: a kernel is declared __global__ void mytiled(...)\"]",
    .warnings = "[]",
};

/* ---- ptxas -v: its info lines are read, not shown ---- */

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

static const log_case resources_of_the_entry_only = {
    .log = log_two_kernels, .name = "mytiled", .lowered = MYTILED,
    .errors = "[]", .warnings = "[]",
    .res = { .registers = 31, .static_smem = 1024, .barriers = 1, .known = true },
};

/* the other kernel's lines, when it is the one asked for */
static const log_case resources_of_the_kernel_asked_for = {
    .log = log_two_kernels, .name = "helper", .lowered = "_Z6helperPf",
    .errors = "[]", .warnings = "[]",
    .res = { .registers = 12, .static_smem = 2048, .barriers = 1, .known = true },
};

/* A device function the entry calls, reported after the entry with its own
 * stack and spills: fib's 24 bytes are fib's. */
static const log_case stack_of_a_called_function_is_its_own = {
    .log = "ptxas info    : 2 bytes gmem\n"
           "ptxas info    : Compiling entry function '" MYTILED "' for 'sm_90'\n"
           "ptxas info    : Function properties for " MYTILED "\n"
           "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
           "ptxas info    : Used 136 registers, used 0 barriers\n"
           "ptxas info    : Compile time = 19.254 ms\n"
           "ptxas info    : Function properties for _Z3fibi\n"
           "ptxas         .     24 bytes stack frame, 20 bytes spill stores, 20 bytes spill loads\n",
    .name = "mytiled", .lowered = MYTILED,
    .errors = "[]", .warnings = "[]",
    .res = { .registers = 136, .known = true },
};

/* -maxrregcount=16: spills and a stack in the entry itself, and ptxas's warning. */
static const log_case stack_and_spills_of_the_entry = {
    .log = "ptxas warning : For profile sm_90 adjusting per thread register count of 16 to lower bound of 24\n"
           "ptxas info    : Overriding maximum register limit 256 for '" MYTILED "' with  24 of maxrregcount option\n"
           "ptxas info    : 0 bytes gmem\n"
           "ptxas info    : Compiling entry function '" MYTILED "' for 'sm_90'\n"
           "ptxas info    : Function properties for " MYTILED "\n"
           "ptxas         .     288 bytes stack frame, 180 bytes spill stores, 228 bytes spill loads\n"
           "ptxas info    : Used 24 registers, used 0 barriers, 288 bytes cumulative stack size\n"
           "ptxas info    : Compile time = 24.995 ms\n",
    .name = "mytiled", .lowered = MYTILED,
    .errors = "[]",
    .warnings = "[\"ptxas warning : For profile sm_90 adjusting per thread register count of 16 to lower bound of 24\"]",
    .res = { .registers = 24, .stack = 288, .spill_stores = 180, .spill_loads = 228, .known = true },
};

/* What ptxas -v says of the entry in both logs below, up to its compile time. */
#define MYTILED_OF_10_REGISTERS \
    "ptxas info    : 0 bytes gmem\n" \
    "ptxas info    : Compiling entry function '" MYTILED "' for 'sm_90'\n" \
    "ptxas info    : Function properties for " MYTILED "\n" \
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n" \
    "ptxas info    : Used 10 registers, used 0 barriers\n"

/* ptxas's warning on a function's minnctapersm, naming the function fn. */
#define MINNCTAPERSM_WARNING(fn) \
    "ptxas warning : Value of minnctapersm for entry " fn " is out of range. minnctapersm will be ignored"

/* ptxas's warnings name the entry by the student's name, with no help from a demangler */
static const log_case ptxas_warning_names_the_entry_as_written = {
    .log = MINNCTAPERSM_WARNING(MYTILED) "\n"
           MYTILED_OF_10_REGISTERS
           "ptxas info    : Compile time = 4.625 ms\n",
    .name = "mytiled", .lowered = MYTILED,
    .errors = "[]",
    .warnings = "[\"" MINNCTAPERSM_WARNING("mytiled") "\"]",
    .res = { .registers = 10, .known = true },
};

/* and another function through the C++ runtime NVRTC brings */
static const log_case ptxas_warning_names_another_function_demangled = {
    .log = MINNCTAPERSM_WARNING("_Z6helperPf") "\n"
           MYTILED_OF_10_REGISTERS
           "ptxas info    : Compile time = 4.736 ms\n"
           "ptxas info    : Compiling entry function '_Z6helperPf' for 'sm_90'\n"
           "ptxas info    : Function properties for _Z6helperPf\n"
           "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
           "ptxas info    : Used 10 registers, used 0 barriers\n"
           "ptxas info    : Compile time = 1.522 ms\n",
    .name = "mytiled", .lowered = MYTILED,
    .errors = "[]",
    .warnings = "[\"" MINNCTAPERSM_WARNING("helper(float*)") "\"]",
    .res = { .registers = 10, .known = true },
    .demangles = true,
};

static const log_case empty_log = {
    .log = "", .name = "mytiled", .lowered = MYTILED, .errors = "[]", .warnings = "[]",
};

static const log_case no_log = {
    .log = NULL, .name = "mytiled", .lowered = MYTILED, .errors = "[]", .warnings = "[]",
};

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

/* Parses a cell of one command and checks one of its parameters, as JSON text. */
static void assert_param_is(const char *cell, const char *key, const char *want)
{
    parse_error e;
    command *c = NULL;
    int n = cell_parse(test_lab(), cell, &c, &e);
    if (n != 1)
        fail_msg("'%s' does not parse: %s", cell, e.error.evalue);
    assert_json_is(json_object_get(c[0].params, key), want);
    commands_free(c, n);
}

static void define_repeats_on_the_kernel_line(void **state)
{
    (void)state;
    static const char cell[] = "%%kernel --for matmul -D A=1 -D B=2\n__global__ void k(float *C) {}";
    assert_param_is(cell, "define", "[\"A=1\",\"B=2\"]");
    assert_param_is(cell, "for", "\"matmul\"");
    assert_param_is("%%kernel --for matmul --define=ONLY\n__global__ void k(float *C) {}", "define", "[\"ONLY\"]");
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
    assert_param_is("%matmul --block 16x16", "block", "[[16,16]]");
    assert_param_is("%matmul --block 8x8,16x16", "block", "[[8,8],[16,16]]");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        LOG_CASE(errors_and_warnings_with_cell_lines),
        LOG_CASE(catastrophic_error_is_an_error),
        LOG_CASE(wrong_signature_names_the_expected_one),
        LOG_CASE(undefined_name_says_so),
        LOG_CASE(device_function_is_not_a_kernel),
        LOG_CASE(resources_of_the_entry_only),
        LOG_CASE(resources_of_the_kernel_asked_for),
        LOG_CASE(stack_of_a_called_function_is_its_own),
        LOG_CASE(stack_and_spills_of_the_entry),
        LOG_CASE(ptxas_warning_names_the_entry_as_written),
        LOG_CASE(ptxas_warning_names_another_function_demangled),
        LOG_CASE(empty_log),
        LOG_CASE(no_log),
        cmocka_unit_test(first_kernel_of_a_source),
        cmocka_unit_test(first_kernel_with_launch_bounds),
        cmocka_unit_test(uses_tile_in_code_only),
        cmocka_unit_test(define_repeats_on_the_kernel_line),
        cmocka_unit_test(block_is_a_list_of_dimensions),
        cmocka_unit_test(contract_types_from_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
