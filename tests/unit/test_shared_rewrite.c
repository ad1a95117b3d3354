/* test_shared_rewrite.c — __shared__ declarations rewritten for the CPU
 * runner (kernel/student/shared_rewrite.c): the exact text each form becomes
 * at function and file scope, ids in source order, every line keeping its
 * number, comments, literals and directives left alone, the declarations it
 * refuses and why, __device__ variables noticed; and a tiled matmul, after
 * the rewrite, through g++ with the prelude (skipped without g++).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "student/shared_rewrite.h"

/* ---- helpers ---- */

/* The rewrite of a source that starts on cell line 1; fails the test on an error. */
static char *rewritten(const char *src, int *nshared)
{
    shared_rewrite r;
    char err[256];
    if (shared_rewrite_source(src, 1, "cell", &r, err, sizeof err) != 0)
        fail_msg("rewrite failed: %s", err);
    if (nshared)
        *nshared = r.nshared;
    return r.text;
}

static void assert_rewrites_to(const char *src, const char *want)
{
    char *got = rewritten(src, NULL);
    if (strcmp(got, want) != 0)
        fail_msg("source\n%s\ngot\n%s\nwant\n%s", src, got, want);
    free(got);
}

/* The reason the rewrite refuses a source (cell line 1 first). */
static void assert_refused(const char *src, const char *want)
{
    shared_rewrite r;
    char err[256] = "unset";
    if (shared_rewrite_source(src, 1, "cell", &r, err, sizeof err) == 0) {
        fail_msg("rewrote what should be refused:\n%s\ninto\n%s", src, r.text);
        shared_rewrite_free(&r);
    }
    assert_string_equal(err, want);
}

static bool device_globals(const char *src)
{
    shared_rewrite r;
    char err[256];
    if (shared_rewrite_source(src, 1, "cell", &r, err, sizeof err) != 0)
        fail_msg("rewrite failed: %s", err);
    bool g = r.device_globals;
    shared_rewrite_free(&r);
    return g;
}

static int lines_of(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Lines of out that the rewrite added: a #line, or a file-scope declaration's
 * lines (#undef, placement, slot, #define NAME __cudalab_shared_slot_ID). */
static int inserted_lines(const char *out)
{
    int n = 0;
    for (const char *l = out; *l;) {
        const char *eol = strchr(l, '\n') ? strchr(l, '\n') : l + strlen(l);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(eol - l), l);
        n += strncmp(line, "#line ", 6) == 0 || strstr(line, "__cudalab_shared_place_") ||
             strstr(line, "__cudalab_shared_slot_") || strstr(line, "__cudalab_place_file_shared") ||
             strstr(line, "#undef __cudalab_shared_bind");
        l = *eol ? eol + 1 : eol;
    }
    return n;
}

/* The line (1-based) of out that holds needle. */
static int line_holding(const char *out, const char *needle)
{
    const char *at = strstr(out, needle);
    if (!at)
        fail_msg("no \"%s\" in\n%s", needle, out);
    int line = 1;
    for (const char *p = out; p < at; p++)
        line += *p == '\n';
    return line;
}

#define TILE_CALL(ID, NAME) \
    "float (&" NAME ")[TILE][TILE] = *(float (*)[TILE][TILE])\"" NAME "\"_cudalab_shared(" #ID ", sizeof(float), " \
    "alignof(float), __LINE__, 2, (unsigned)(TILE), (unsigned)(TILE));"

/* ---- function scope ---- */

static void tile_2d_with_a_macro_size(void **state)
{
    (void)state;
    assert_rewrites_to("__global__ void k() {\n"
                       "    __shared__ float As[TILE][TILE];\n"
                       "    As[0][0] = 1.0f;\n"
                       "}\n",
                       "__global__ void k() {\n"
                       "    " TILE_CALL(0, "As") "\n"
                       "    As[0][0] = 1.0f;\n"
                       "}\n");
}

static void several_declarators_share_a_line(void **state)
{
    (void)state;
    assert_rewrites_to("__global__ void k() {\n"
                       "    __shared__ float As[TILE][TILE], Bs[TILE][TILE];  // tiles\n"
                       "}\n",
                       "__global__ void k() {\n"
                       "    " TILE_CALL(0, "As") " " TILE_CALL(1, "Bs") "  // tiles\n"
                       "}\n");
    assert_rewrites_to("void f() { __shared__ int a[BLOCK+1], n, b[2*R + 16][4]; }",
                       "void f() { "
                       "int (&a)[BLOCK+1] = *(int (*)[BLOCK+1])\"a\"_cudalab_shared(0, sizeof(int), alignof(int), "
                       "__LINE__, 1, (unsigned)(BLOCK+1)); "
                       "int &n = *(int *)\"n\"_cudalab_shared(1, sizeof(int), alignof(int), __LINE__, 0); "
                       "int (&b)[2*R + 16][4] = *(int (*)[2*R + 16][4])\"b\"_cudalab_shared(2, sizeof(int), alignof(int), "
                       "__LINE__, 2, (unsigned)(2*R + 16), (unsigned)(4)); }");
}

static void a_scalar(void **state)
{
    (void)state;
    assert_rewrites_to("void f() {\n\t__shared__ float total;\n}",
                       "void f() {\n\tfloat &total = *(float *)\"total\"_cudalab_shared(0, sizeof(float), alignof(float), "
                       "__LINE__, 0);\n}");
}

static void a_pointer(void **state)
{
    (void)state;
    assert_rewrites_to("void f() { __shared__ float *rows[4]; }",
                       "void f() { float * (&rows)[4] = *(float * (*)[4])\"rows\"_cudalab_shared(0, sizeof(float *), "
                       "alignof(float *), __LINE__, 1, (unsigned)(4)); }");
}

static void template_types(void **state)
{
    (void)state;
    assert_rewrites_to("void f() { __shared__ Pair<int, float> t[3], u; }",
                       "void f() { Pair<int, float> (&t)[3] = *(Pair<int, float> (*)[3])\"t\"_cudalab_shared(0, "
                       "sizeof(Pair<int, float>), alignof(Pair<int, float>), __LINE__, 1, (unsigned)(3)); "
                       "Pair<int, float> &u = *(Pair<int, float> *)\"u\"_cudalab_shared(1, sizeof(Pair<int, float>), "
                       "alignof(Pair<int, float>), __LINE__, 0); }");
}

static void volatile_and_unsigned_int_types(void **state)
{
    (void)state;
    assert_rewrites_to("void f() { __shared__ volatile unsigned int hist[256]; }",
                       "void f() { volatile unsigned int (&hist)[256] = *(volatile unsigned int (*)[256])"
                       "\"hist\"_cudalab_shared(0, sizeof(volatile unsigned int), alignof(volatile unsigned int), "
                       "__LINE__, 1, (unsigned)(256)); }");
    /* the qualifier before __shared__, a vector type, const after the type */
    assert_rewrites_to("void f() { volatile __shared__ int s[32]; }",
                       "void f() { volatile int (&s)[32] = *(volatile int (*)[32])\"s\"_cudalab_shared(0, "
                       "sizeof(volatile int), alignof(volatile int), __LINE__, 1, (unsigned)(32)); }");
    assert_rewrites_to("void f() { __shared__ float4 v[8]; }",
                       "void f() { float4 (&v)[8] = *(float4 (*)[8])\"v\"_cudalab_shared(0, sizeof(float4), "
                       "alignof(float4), __LINE__, 1, (unsigned)(8)); }");
    assert_rewrites_to("void f() { __shared__ int const  c[2]; }",
                       "void f() { int const (&c)[2] = *(int const (*)[2])\"c\"_cudalab_shared(0, sizeof(int const), "
                       "alignof(int const), __LINE__, 1, (unsigned)(2)); }");
}

static void static_before_or_after_shared(void **state)
{
    (void)state;
    const char *want = "void f() { float (&x)[4] = *(float (*)[4])\"x\"_cudalab_shared(0, sizeof(float), alignof(float), "
                       "__LINE__, 1, (unsigned)(4)); }";
    assert_rewrites_to("void f() { static __shared__ float x[4]; }", want);
    assert_rewrites_to("void f() { __shared__ static float x[4]; }", want);
    assert_rewrites_to("void f() { __shared__ float x[4]; }", want);
}

static void align_gives_the_alignment(void **state)
{
    (void)state;
    const char *want = "void f() { float (&a)[8] = *(float (*)[8])\"a\"_cudalab_shared(0, sizeof(float), 16, "
                       "__LINE__, 1, (unsigned)(8)); }";
    assert_rewrites_to("void f() { __shared__ __align__(16) float a[8]; }", want);
    assert_rewrites_to("void f() { __align__(16) __shared__ float a[8]; }", want);
    assert_rewrites_to("void f() { __shared__ float __align__(16) a[8]; }", want);
    assert_rewrites_to("void f() { alignas(16) __shared__ float a[8]; }", want);
}

static void extern_is_the_dynamic_memory(void **state)
{
    (void)state;
    assert_rewrites_to("__global__ void k() {\n    extern __shared__ float buf[];\n}\n",
                       "__global__ void k() {\n    float *const buf = (float *)\"buf\"_cudalab_dyn_shared(sizeof(float), "
                       "alignof(float), __LINE__);\n}\n");
    assert_rewrites_to("void k() { extern __shared__ __align__(16) unsigned char raw[]; }",
                       "void k() { unsigned char *const raw = (unsigned char *)\"raw\"_cudalab_dyn_shared("
                       "sizeof(unsigned char), 16, __LINE__); }");
}

static void ids_in_source_order(void **state)
{
    (void)state;
    int n;
    char *out = rewritten("__global__ void a() { __shared__ int x[1]; extern __shared__ int d[]; }\n"
                          "__global__ void b() { __shared__ int y[2], z[3]; if (1) { __shared__ int w; } }\n",
                          &n);
    assert_int_equal(n, 4);
    assert_non_null(strstr(out, "\"x\"_cudalab_shared(0, sizeof(int), alignof(int)"));
    assert_non_null(strstr(out, "\"y\"_cudalab_shared(1, sizeof(int), alignof(int)"));
    assert_non_null(strstr(out, "\"z\"_cudalab_shared(2, sizeof(int), alignof(int)"));
    assert_non_null(strstr(out, "\"w\"_cudalab_shared(3, sizeof(int), alignof(int)"));
    free(out);
}

static void sixty_four_is_the_most(void **state)
{
    (void)state;
    char src[8192];
    size_t at = (size_t)snprintf(src, sizeof src, "__global__ void k() {\n");
    for (int i = 0; i < 64; i++)
        at += (size_t)snprintf(src + at, sizeof src - at, "    __shared__ int a%d[4];\n", i);
    snprintf(src + at, sizeof src - at, "}\n");
    int n;
    char *out = rewritten(src, &n);
    assert_int_equal(n, 64);
    assert_non_null(strstr(out, "\"a63\"_cudalab_shared(63, sizeof(int), alignof(int)"));
    free(out);
    /* the 65th, on line 66 */
    snprintf(src + at, sizeof src - at, "    __shared__ int one_more;\n}\n");
    assert_refused(src, "line 66: more than 64 __shared__ declarations (the CPU runner places at most 64 arrays "
                        "per kernel source)");
    /* declarators count one by one */
    at = (size_t)snprintf(src, sizeof src, "void k() {\n    __shared__ int a0");
    for (int i = 1; i < 65; i++)
        at += (size_t)snprintf(src + at, sizeof src - at, ", a%d", i);
    snprintf(src + at, sizeof src - at, ";\n}\n");
    assert_refused(src, "line 2: more than 64 __shared__ declarations (the CPU runner places at most 64 arrays "
                        "per kernel source)");
}

/* ---- line numbers ---- */

static void a_declaration_over_lines_keeps_them(void **state)
{
    (void)state;
    assert_rewrites_to("void f() {\n"
                       "    __shared__ float\n"
                       "        a[4];\n"
                       "    a[0] = 0;\n"
                       "}\n",
                       "void f() {\n"
                       "    float (&a)[4] = *(float (*)[4])\"a\"_cudalab_shared(0, sizeof(float), alignof(float), "
                       "__LINE__, 1, (unsigned)(4));\n"
                       "\n"
                       "    a[0] = 0;\n"
                       "}\n");
    /* a size over lines and a comment inside read on one line */
    assert_rewrites_to("void f() { __shared__ int b[BLOCK /* pad */ +\n 1]; }",
                       "void f() { int (&b)[BLOCK + 1] = *(int (*)[BLOCK + 1])\"b\"_cudalab_shared(0, sizeof(int), "
                       "alignof(int), __LINE__, 1, (unsigned)(BLOCK + 1));\n }");
}

/* What follows a file-scope declaration's line for id ID: its placement and
 * slot, the name #defined to the slot. */
#define SLOT_LINES(ID, NAME, ELEM, DIMS, PLACEMENT)                                                      \
    "#undef __cudalab_shared_place_" #ID "\n#undef __cudalab_shared_slot_" #ID "\n"                       \
    "extern \"C\" void *__cudalab_shared_place_" #ID "() { return " PLACEMENT "; }\n"                     \
    "extern \"C\" " ELEM " (&__cudalab_shared_slot_" #ID ")" DIMS ";\n"                                    \
    "#define " NAME " __cudalab_shared_slot_" #ID "\n"

static void file_scope_array_through_a_slot(void **state)
{
    (void)state;
    const char *src = "#define N 8\n"
                      "__shared__ float grid[N][N + 1];  // one per block\n"
                      "__global__ void k() { grid[0][0] = 1; }\n";
    shared_rewrite r;
    char err[256];
    assert_int_equal(shared_rewrite_source(src, 5, "cell", &r, err, sizeof err), 0);
    /* the declaration leaves its line; the lines after it name its cell line, 6 */
    assert_string_equal(r.text,
                        "#define N 8\n"
                        "  // one per block\n"
                        SLOT_LINES(0, "grid", "float", "[N][N + 1]",
                                   "\"grid\"_cudalab_shared(0, sizeof(float), alignof(float), 6, 2, (unsigned)(N), "
                                   "(unsigned)(N + 1))")
                        "#line 7 \"cell\"\n"
                        "__global__ void k() { grid[0][0] = 1; }\n"
                        "#undef __cudalab_place_file_shared\n#undef __cudalab_shared_bind\n"
                        "#undef __cudalab_shared_place_0\nextern \"C\" void *__cudalab_shared_place_0();\n"
                        "static inline void __cudalab_place_file_shared(int) {"
                        " __cudalab_shared_bind(0, __cudalab_shared_place_0()); }\n");
    assert_int_equal(r.nshared, 1);
    assert_int_equal(lines_of(r.text) - inserted_lines(r.text), lines_of(src));
    shared_rewrite_free(&r);
    /* static is dropped; a scalar's slot is a reference to it */
    char *out = rewritten("static __shared__ int flag;\n", NULL);
    assert_non_null(strstr(out, "extern \"C\" int &__cudalab_shared_slot_0;\n#define flag __cudalab_shared_slot_0\n"));
    assert_non_null(strstr(out, "return \"flag\"_cudalab_shared(0, sizeof(int), alignof(int), 1, 0); }"));
    free(out);
}

static void file_scope_extern_through_a_slot(void **state)
{
    (void)state;
    const char *src = "extern __shared__ double dyn[];\n"
                      "__global__ void k() {\n"
                      "    dyn[threadIdx.x] = 0;\n"
                      "}\n";
    shared_rewrite r;
    char err[256];
    assert_int_equal(shared_rewrite_source(src, 3, "my \"cell\"", &r, err, sizeof err), 0);
    assert_string_equal(r.text,
                        "\n"
                        SLOT_LINES(0, "dyn", "double", "[]",
                                   "\"dyn\"_cudalab_dyn_shared(sizeof(double), alignof(double), 3)")
                        "#line 4 \"my \\\"cell\\\"\"\n"
                        "__global__ void k() {\n"
                        "    dyn[threadIdx.x] = 0;\n"
                        "}\n"
                        "#undef __cudalab_place_file_shared\n#undef __cudalab_shared_bind\n"
                        "#undef __cudalab_shared_place_0\nextern \"C\" void *__cudalab_shared_place_0();\n"
                        "static inline void __cudalab_place_file_shared(int) {"
                        " __cudalab_shared_bind(0, __cudalab_shared_place_0()); }\n");
    assert_int_equal(r.nshared, 1);     /* a file-scope extern takes an id: its slot's */
    assert_int_equal(lines_of(r.text) - inserted_lines(r.text), lines_of(src));
    shared_rewrite_free(&r);
}

/* Two file-scope declarations, one over two lines, a comment running on:
 * the #defines wait for the end of a line of code (never inside a comment),
 * and the #line after them gives the next line its number. */
static void file_scope_defines_wait_for_the_line_end(void **state)
{
    (void)state;
    const char *src = "__shared__ int a[2]; __shared__ int /* x\n"
                      "  y */ b[3]; /* still\n"
                      "  a comment */\n"
                      "__global__ void k() { a[0] = b[0]; }\n";
    shared_rewrite r;
    char err[256];
    assert_int_equal(shared_rewrite_source(src, 10, "cell", &r, err, sizeof err), 0);
    assert_int_equal(lines_of(r.text) - inserted_lines(r.text), lines_of(src));
    /* both declarations leave the first line; the newline inside b's declaration ends it */
    assert_int_equal(line_holding(r.text, "#define a __cudalab_shared_slot_0"), 6);
    assert_int_equal(line_holding(r.text, "#define b __cudalab_shared_slot_1"), 11);
    assert_int_equal(line_holding(r.text, "#line 11 \"cell\""), 12);
    assert_int_equal(line_holding(r.text, " /* still"), 13);
    assert_int_equal(line_holding(r.text, "__global__ void k()"), 15);
    shared_rewrite_free(&r);
    /* a comment that runs on past the line: the #define waits for the end of its line */
    const char *src2 = "__shared__ int c[2]; /* runs\n"
                       "  on */ int x;\n"
                       "int y;\n";
    assert_int_equal(shared_rewrite_source(src2, 10, "cell", &r, err, sizeof err), 0);
    assert_int_equal(lines_of(r.text) - inserted_lines(r.text), lines_of(src2));
    assert_int_equal(line_holding(r.text, "  on */ int x;"), 2);
    assert_int_equal(line_holding(r.text, "#define c __cudalab_shared_slot_0"), 7);
    assert_int_equal(line_holding(r.text, "#line 12 \"cell\""), 8);
    assert_int_equal(line_holding(r.text, "int y;"), 9);
    shared_rewrite_free(&r);
}

static void namespaces_are_file_scope(void **state)
{
    (void)state;
    char *out = rewritten("namespace lab {\n__shared__ int t[4];\n}\n", NULL);
    assert_non_null(strstr(out, "extern \"C\" int (&__cudalab_shared_slot_0)[4];\n"
                                "#define t __cudalab_shared_slot_0\n#line 3 \"cell\"\n}\n"));
    free(out);
    out = rewritten("struct S { int x; };\n__global__ void k() { __shared__ S s[4]; }\n", NULL);
    assert_non_null(strstr(out, "S (&s)[4] = *(S (*)[4])\"s\"_cudalab_shared(0"));
    free(out);
}

/* ---- left alone ---- */

static void not_code_is_left_alone(void **state)
{
    (void)state;
    const char *srcs[] = {
        "void f() {\n    // __shared__ float a[4];\n}\n",
        "void f() {\n    /* __shared__ float a[4];\n       __shared__ int b; */\n}\n",
        "void f() { const char *s = \"__shared__ int x;\"; }\n",
        "void f() { const char *s = \"a \\\" __shared__ int x;\"; char c = '\\''; }\n",
        "void f() { const char *s = R\"(__shared__ \" int x;)\"; }\n",
        "#define DECLARE __shared__ float tile[16]\n",
        "#define DECLARE(n) \\\n    __shared__ float n[16]; \\\n    __shared__ int n##_count;\nvoid f() {}\n",
        "  #  if 0 /* __shared__\n */ __shared__ int z;\n#endif\n",
        "void f() { char q = '\"'; } // __shared__ \\\n  __shared__ int spliced;\n",
    };
    for (size_t i = 0; i < sizeof srcs / sizeof srcs[0]; i++) {
        int n = -1;
        char *out = rewritten(srcs[i], &n);
        if (strcmp(out, srcs[i]) != 0)
            fail_msg("changed:\n%s\ninto\n%s", srcs[i], out);
        assert_int_equal(n, 0);
        free(out);
    }
}

static void code_after_a_comment_or_string_is_read(void **state)
{
    (void)state;
    char *out = rewritten("void f() { const char *s = \"}\"; /* { */ char c = '{';\n"
                          "#pragma unroll\n"
                          "    __shared__ int x[2]; }\n"
                          "__shared__ int g[3];\n",
                          NULL);
    /* the braces in the literals and the comment did not count: x is local, g global */
    assert_non_null(strstr(out, "    int (&x)[2] = *(int (*)[2])\"x\"_cudalab_shared(0,"));
    assert_non_null(strstr(out, "extern \"C\" int (&__cudalab_shared_slot_1)[3];"));
    free(out);
}

/* ---- refused ---- */

#define UNREADABLE(L) "line " #L ": cannot read this __shared__ declaration (write it as __shared__ TYPE NAME[SIZE]...;)"

static void what_cannot_be_read_is_refused(void **state)
{
    (void)state;
    assert_refused("void f() {\n    __shared__ int x = 0;\n}", UNREADABLE(2));
    assert_refused("void f() {\n\n    __shared__ float a[2] = {1, 2};\n}", UNREADABLE(3));
    assert_refused("void f() { __shared__ void (*fp)(int); }", UNREADABLE(1));
    assert_refused("void f() {\n __shared__ float a[4]\n}", UNREADABLE(2));
    assert_refused("void f() { __shared__ float a[4] }", UNREADABLE(1));
    assert_refused("void f() { __shared__ a[4]; }", UNREADABLE(1));
    assert_refused("void f() { __shared__ float[4]; }", UNREADABLE(1));
    assert_refused("void f() { __shared__ float a[]; }", UNREADABLE(1));
    assert_refused("void f() { extern __shared__ float a[4]; }", UNREADABLE(1));
    assert_refused("void f() { extern __shared__ float a[], b[]; }", UNREADABLE(1));
    assert_refused("void f() { __shared__ float a[1][2][3][4][5]; }", UNREADABLE(1));
    assert_refused("void f() { x = sizeof(__shared__ int); }", UNREADABLE(1));
    assert_refused("void f() { if (c) __shared__ int y[2]; }", UNREADABLE(1));
    assert_refused("__global__ void k(__shared__ float *p) {}", UNREADABLE(1));
    assert_refused("void f() { __shared__ float a[4 }", UNREADABLE(1));
    assert_refused("void f() { __shared__ float a[4];\n__shared__ int b = 1; }", UNREADABLE(2));
}

/* ---- __device__ variables ---- */

static void device_variables_are_noticed(void **state)
{
    (void)state;
    assert_true(device_globals("__device__ int counter;\n__global__ void k() {}\n"));
    assert_true(device_globals("__device__ float table[3] = {1, 2, 3};\n"));
    assert_true(device_globals("static __device__ unsigned int done = 0;\n"));
    assert_true(device_globals("__device__ __align__(16) float buf[4];\n"));
    assert_true(device_globals("__device__ int a, b;\n"));
    assert_true(device_globals("namespace lab { __device__ int hits; }\n"));
    assert_true(device_globals("__device__ float helper(float x) { return x; }\n__device__ int counter;\n"));

    assert_false(device_globals("__device__ float helper(float x) { return x * 2.0f; }\n"));
    assert_false(device_globals("__device__ __forceinline__ int g() { int v = 0; return v; }\n"));
    assert_false(device_globals("__device__ float f(int);\n"));
    assert_false(device_globals("template <int N> __device__ float h(float (&a)[N]) { return a[0]; }\n"));
    assert_false(device_globals("__global__ void k(float *x) { __device__ int local; }\n"));
    assert_false(device_globals("__constant__ float coeffs[4];\nint host_side;\n"));
    assert_false(device_globals("// __device__ int counter;\n#define X __device__ int c;\n"));
    assert_false(device_globals("__device__ __shared__ int s[4];\n"));
}

/* ---- the prelude accepts the output ---- */

static bool on_path(const char *prog)
{
    const char *path = getenv("PATH");
    char buf[4096];
    while (path && *path) {
        size_t n = strcspn(path, ":");
        snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, prog);
        if (n && access(buf, X_OK) == 0)
            return true;
        path += n + (path[n] == ':');
    }
    return false;
}

static const char matmul_cell[] =
    "#define TILE 16\n"
    "\n"
    "__shared__ float scratch[TILE];          // file scope, one per block\n"
    "extern __shared__ float dynamic_tail[];\n"
    "__device__ int launches;\n"
    "\n"
    "__device__ __forceinline__ float at(const float *M, int r, int c, int n)\n"
    "{\n"
    "    return (r < n && c < n) ? M[r * n + c] : 0.0f;\n"
    "}\n"
    "\n"
    "__global__ void mytiled(const float *A, const float *B, float *C, int n)\n"
    "{\n"
    "    __shared__ float As[TILE][TILE], Bs[TILE][TILE + 1];\n"
    "    __shared__ __align__(16) float\n"
    "        partial[2 * TILE];\n"
    "    static __shared__ volatile unsigned int steps;\n"
    "    extern __shared__ float dyn[];\n"
    "    int tx = threadIdx.x, ty = threadIdx.y;\n"
    "    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;\n"
    "    float sum = 0.0f;\n"
    "    if (tx == 0 && ty == 0)\n"
    "        steps = 0;\n"
    "    for (int t = 0; t < (n + TILE - 1) / TILE; t++) {\n"
    "        As[ty][tx] = at(A, row, t * TILE + tx, n);\n"
    "        Bs[ty][tx] = at(B, t * TILE + ty, col, n);\n"
    "        __syncthreads();\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < TILE; k++)\n"
    "            sum += As[ty][k] * Bs[k][tx];\n"
    "        __syncthreads();\n"
    "        if (tx == 0 && ty == 0)\n"
    "            steps = steps + 1;\n"
    "    }\n"
    "    partial[tx] = sum;\n"
    "    scratch[tx % TILE] = dyn[0] + dynamic_tail[0];\n"
    "    if (row < n && col < n)\n"
    "        C[row * n + col] = sum; /* __shared__ in a comment */\n"
    "    atomicAdd(&launches, 1);\n"
    "}\n";

static void gxx_compiles_a_rewritten_tiled_matmul(void **state)
{
    (void)state;
    if (!on_path("g++"))
        skip();
    /* the tests run from the repository's root (make test-unit) */
    if (access("cpu/simt/runtime/cudalab_simt.h", R_OK) != 0)
        fail_msg("no cpu/simt/runtime/cudalab_simt.h here: run from the repository's root");

    shared_rewrite r;
    char err[256];
    assert_int_equal(shared_rewrite_source(matmul_cell, 2, "cell", &r, err, sizeof err), 0);
    assert_int_equal(r.nshared, 6);        /* the file-scope extern takes one too */
    assert_true(r.device_globals);

    FILE *gxx = popen("g++ -std=c++17 -fsyntax-only -I cpu/simt/runtime -x c++ -", "w");
    assert_non_null(gxx);
    fprintf(gxx, "#include \"cudalab_simt.h\"\n#line 2 \"cell\"\n%s", r.text);
    int status = pclose(gxx);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("g++ refused the rewritten source:\n%s", r.text);
    shared_rewrite_free(&r);
}

/* __LINE__ in the rewritten source is still the cell's line: g++ says so. */
static void gxx_sees_the_cell_lines(void **state)
{
    (void)state;
    if (!on_path("g++"))
        skip();
    const char *src = "__shared__ int g[4];\n"
                      "extern __shared__ int d[];\n"
                      "void f() {\n"
                      "    __shared__ float\n"
                      "        a[4];\n"
                      "    static_assert(__LINE__ == 16, \"line\");\n"
                      "}\n"
                      "static_assert(__LINE__ == 18, \"line\");\n";
    shared_rewrite r;
    char err[256];
    assert_int_equal(shared_rewrite_source(src, 11, "cell", &r, err, sizeof err), 0);
    FILE *gxx = popen("g++ -std=c++17 -fsyntax-only -I cpu/simt/runtime -x c++ -", "w");
    assert_non_null(gxx);
    fprintf(gxx, "#include \"cudalab_simt.h\"\n#line 11 \"cell\"\n%s", r.text);
    int status = pclose(gxx);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("g++ refused (or the lines moved):\n%s", r.text);
    shared_rewrite_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tile_2d_with_a_macro_size),
        cmocka_unit_test(several_declarators_share_a_line),
        cmocka_unit_test(a_scalar),
        cmocka_unit_test(a_pointer),
        cmocka_unit_test(template_types),
        cmocka_unit_test(volatile_and_unsigned_int_types),
        cmocka_unit_test(static_before_or_after_shared),
        cmocka_unit_test(align_gives_the_alignment),
        cmocka_unit_test(extern_is_the_dynamic_memory),
        cmocka_unit_test(ids_in_source_order),
        cmocka_unit_test(sixty_four_is_the_most),
        cmocka_unit_test(a_declaration_over_lines_keeps_them),
        cmocka_unit_test(file_scope_array_through_a_slot),
        cmocka_unit_test(file_scope_extern_through_a_slot),
        cmocka_unit_test(file_scope_defines_wait_for_the_line_end),
        cmocka_unit_test(namespaces_are_file_scope),
        cmocka_unit_test(not_code_is_left_alone),
        cmocka_unit_test(code_after_a_comment_or_string_is_read),
        cmocka_unit_test(what_cannot_be_read_is_refused),
        cmocka_unit_test(device_variables_are_noticed),
        cmocka_unit_test(gxx_compiles_a_rewritten_tiled_matmul),
        cmocka_unit_test(gxx_sees_the_cell_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
