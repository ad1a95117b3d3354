/* test_fingerprint.c — the similarity of kernels' sources
 * (kernel/student/fingerprint.c): disguised copies of the built-in tiled
 * matmul (its %%kernel cell as --as-kernel makes it, read from this build:
 * renamed, reformatted, braces moved, comments added, independent statements
 * reordered, the loop variables renamed, a compound assignment written out,
 * the aliases of threadIdx written out, all of it at once) score at least
 * FINGERPRINT_FLAG; three independently written correct tiled kernels
 * (the .cu files of tests/similarity/, which tests/magics/test_similarity.py runs through
 * the CPU runner's check) score below it against every built-in variant and
 * against each other; and sources no compiler would take do not break it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "magic/show_source.h"
#include "student/fingerprint.h"

/* ---- helpers ---- */

/* A built-in variant's %%kernel cell without its %%kernel line: what a student would paste. */
static char *builtin(const char *family, const char *variant)
{
    char why[300];
    char *cell = show_source_kernel_cell(family, variant, why, sizeof why);
    if (!cell)
        return NULL;
    char *body = strdup(strchr(cell, '\n') + 1);
    free(cell);
    return body;
}

static double similarity(const char *a, const char *b)
{
    fingerprint fa, fb;
    assert_int_equal(fingerprint_make(a, &fa), 0);
    assert_int_equal(fingerprint_make(b, &fb), 0);
    double s = fingerprint_similarity(&fa, &fb);
    assert_true(s >= 0 && s <= 1);
    assert_true(s == fingerprint_similarity(&fb, &fa));
    fingerprint_free(&fa);
    fingerprint_free(&fb);
    return s;
}

static bool ident_char(char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* src (freed) with every whole word from as to: a new string. */
static char *renamed(char *src, const char *from, const char *to)
{
    size_t nf = strlen(from), nt = strlen(to), count = 0;
    for (const char *p = strstr(src, from); p; p = strstr(p + nf, from))
        count++;
    char *out = malloc(strlen(src) + count * nt + 1), *w = out;
    const char *p = src;
    for (const char *hit; (hit = strstr(p, from));) {
        bool word = (hit == src || !ident_char(hit[-1])) && !ident_char(hit[nf]);
        memcpy(w, p, (size_t)(hit - p));
        w += hit - p;
        memcpy(w, word ? to : from, word ? nt : nf);
        w += word ? nt : nf;
        p = hit + nf;
    }
    strcpy(w, p);
    free(src);
    return out;
}

/* src (freed) with its one occurrence of old replaced: fails the test where the built-in no
 * longer has it (update the disguise to the kernel as it is now). */
static char *replaced(char *src, const char *old, const char *new)
{
    char *hit = strstr(src, old);
    if (!hit)
        fail_msg("the built-in tiled kernel no longer has \"%s\"", old);
    char *out = malloc(strlen(src) - strlen(old) + strlen(new) + 1);
    sprintf(out, "%.*s%s%s", (int)(hit - src), src, new, hit + strlen(old));
    free(src);
    return out;
}

/* src (freed) with the whole lines holding a and b swapped. */
static char *swapped(char *src, const char *a, const char *b)
{
    char *ha = strstr(src, a), *hb = strstr(src, b);
    if (!ha || !hb)
        fail_msg("the built-in tiled kernel no longer has \"%s\" and \"%s\"", a, b);
    if (ha > hb) {
        char *t = ha;
        ha = hb;
        hb = t;
    }
    while (ha > src && ha[-1] != '\n')
        ha--;
    while (hb > src && hb[-1] != '\n')
        hb--;
    size_t la = strcspn(ha, "\n"), lb = strcspn(hb, "\n");
    char *out = malloc(strlen(src) + 1);
    sprintf(out, "%.*s%.*s%.*s%.*s%s", (int)(ha - src), src, (int)lb, hb, (int)(hb - ha - (ptrdiff_t)la), ha + la,
            (int)la, ha, hb + lb);
    free(src);
    return out;
}

/* src (freed) reformatted: each line's indentation gone, lines of code joined into
 * one (directives keep lines of their own), braces on lines of their own. */
static char *reformatted(char *src)
{
    char *out = malloc(3 * strlen(src) + 1), *w = out;
    for (const char *p = src; *p;) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, "\n");
        bool directive = *p == '#';
        for (size_t i = 0; i < n; i++) {
            if (p[i] == '{' || p[i] == '}') {
                *w++ = '\n';
                *w++ = p[i];
                *w++ = '\n';
            } else if (!(p[i] == '/' && p[i + 1] == '/')) {
                *w++ = p[i];
            } else {
                break;                  /* a line comment would swallow the joined lines */
            }
        }
        *w++ = directive ? '\n' : ' ';
        p += n + (p[n] == '\n');
    }
    *w = '\0';
    free(src);
    return out;
}

/* src (freed) with a comment after every statement and a header of the student's own. */
static char *commented(char *src)
{
    char *out = malloc(strlen(src) * 4 + 100), *w = out;
    w += sprintf(w, "/* Problem set 2, question 1: my tiled multiply.\n   Written by me. */\n");
    for (const char *p = src; *p; p++) {
        *w++ = *p;
        if (*p == ';' && p[1] == '\n')
            w += sprintf(w, " // this line does its part");
        if (*p == '{')
            w += sprintf(w, " /* begin */");
    }
    *w = '\0';
    free(src);
    return out;
}

static char *disguise_names(char *s)
{
    static const char *const names[][2] = {
        {"mytiled", "my_gemm"}, {"A", "left"}, {"B", "right"}, {"C", "result"}, {"m", "rows"}, {"n", "cols"},
        {"k", "depth"}, {"Ads", "shA"}, {"Bds", "shB"}, {"tx", "lx"}, {"ty", "ly"}, {"row", "r"}, {"col", "c"},
        {"pvalue", "acc"}, {"TILE", "BS"}, {"ka", "aIndex"}, {"kb", "bIndex"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        s = renamed(s, names[i][0], names[i][1]);
    return s;
}

static char *disguise_loops(char *s)
{
    return renamed(renamed(s, "ph", "step"), "i", "q");
}

static char *disguise_order(char *s)
{
    s = swapped(s, "int row =", "int col =");
    s = swapped(s, "__shared__ float Ads", "__shared__ float Bds");
    return swapped(s, "Ads[ty][tx] =", "Bds[ty][tx] =");
}

static char *disguise_braces(char *s)
{
    return replaced(s, "pvalue += Ads[ty][i] * Bds[i][tx];", "{ pvalue += Ads[ty][i] * Bds[i][tx]; }");
}

static char *disguise_compound(char *s)
{
    return replaced(s, "pvalue += Ads[ty][i] * Bds[i][tx];", "pvalue = pvalue + Ads[ty][i] * Bds[i][tx];");
}

static char *disguise_declarations(char *s)
{
    return replaced(s, "int tx = threadIdx.x, ty = threadIdx.y;", "int tx = threadIdx.x;\nint ty = threadIdx.y;");
}

/* The aliases of the builtins inlined: what the sample copy of ps2 does (grace's). */
static char *disguise_aliases(char *s)
{
    s = replaced(s, "int tx = threadIdx.x, ty = threadIdx.y;", "");
    return renamed(renamed(s, "tx", "threadIdx.x"), "ty", "threadIdx.y");
}

/* ---- disguised copies ---- */

static void check_disguise(const char *what, char *(*disguise)(char *))
{
    char *original = builtin("matmul", "tiled");
    assert_non_null(original);
    char *copy = disguise(strdup(original));
    assert_string_not_equal(copy, original);
    double s = similarity(copy, original);
    if (s < FINGERPRINT_FLAG)
        fail_msg("%s: similarity %.3f < %.2f\n%s", what, s, FINGERPRINT_FLAG, copy);
    free(copy);
    free(original);
}

static void identical_sources_score_one(void **state)
{
    char *t = builtin("matmul", "tiled");
    assert_true(similarity(t, t) == 1.0);
    free(t);
}

static void a_renamed_copy_is_similar(void **state) { check_disguise("renamed", disguise_names); }
static void a_reformatted_copy_is_similar(void **state) { check_disguise("reformatted", reformatted); }
static void a_commented_copy_is_similar(void **state) { check_disguise("commented", commented); }
static void a_reordered_copy_is_similar(void **state) { check_disguise("reordered", disguise_order); }
static void renamed_loop_variables_are_similar(void **state) { check_disguise("loop variables", disguise_loops); }
static void braces_and_split_declarations_are_similar(void **state)
{
    check_disguise("braces", disguise_braces);
    check_disguise("declarations", disguise_declarations);
}

static void a_compound_assignment_written_out_is_similar(void **state)
{
    char *original = builtin("matmul", "tiled");
    char *copy = disguise_compound(strdup(original));
    assert_true(similarity(copy, original) == 1.0);     /* the same statement once normalised */
    free(copy);
    free(original);
    assert_true(similarity("a[i] -= b * c;", "a[i] = a[i] - b * c;") == 1.0);
    assert_true(similarity("x ^= y;", "x = x ^ y;") == 1.0);
    /* comparisons and shifts are not compound assignments */
    assert_true(similarity("x == y;", "x = x = y;") < 1.0);
    assert_true(similarity("c = a <= b;", "c = a = a < b;") < 1.0);
    assert_true(similarity("w <<= 2;", "w = w < < 2;") < 1.0);
}

static char *everything(char *s)
{
    return commented(reformatted(disguise_names(disguise_loops(disguise_order(disguise_declarations(
        disguise_compound(s)))))));
}

static void every_disguise_at_once_is_similar(void **state) { check_disguise("all at once", everything); }

/* ---- aliases of the builtins ---- */

static void inlined_builtin_aliases_are_similar(void **state)
{
    char *original = builtin("matmul", "tiled");
    char *copy = disguise_aliases(strdup(original));
    assert_true(similarity(copy, original) == 1.0);     /* "tx" reads as threadIdx.x */
    free(copy);
    free(original);
    static const char *const aliased[][2] = {
        /* a cast, either spelling */
        {"int t = (int)threadIdx.x; o[t] = 1;", "o[threadIdx.x] = 1;"},
        {"const unsigned t = static_cast<unsigned>(blockDim.y); o[t] = 1;", "o[blockDim.y] = 1;"},
        /* mixed declarators: the others stay, the alias goes wherever it stands */
        {"int t = threadIdx.x, i = 5; o[i + t] = 1;", "int i = 5; o[i + threadIdx.x] = 1;"},
        {"int i = 5, t = gridDim.z, j = 2; o[i + t + j] = 1;", "int i = 5, j = 2; o[i + gridDim.z + j] = 1;"},
        {"int i = 5, t = blockIdx.x; o[i * t] = 1;", "int i = 5; o[i * blockIdx.x] = 1;"},
        {"int t = threadIdx.x, u = threadIdx.y; o[t] = o[u];", "o[threadIdx.x] = o[threadIdx.y];"},
        /* an alias used to declare another variable, and as an argument */
        {"int t = threadIdx.x; int s = t + 1; o[s] = fmaxf(t, s);", "int s = threadIdx.x + 1; o[s] = fmaxf(threadIdx.x, s);"},
        /* a member of the same name is not the alias */
        {"int t = threadIdx.x; o[t] = p.t;", "o[threadIdx.x] = p.t;"},
    };
    for (size_t i = 0; i < sizeof aliased / sizeof aliased[0]; i++) {
        double sim = similarity(aliased[i][0], aliased[i][1]);
        if (sim != 1.0)
            fail_msg("%s / %s: %.3f", aliased[i][0], aliased[i][1], sim);
    }
}

/* A name the source changes (or may change) or declares twice is a variable, not a builtin's
 * alias: for each, its declaration, the change and a use, against the same with the alias
 * wrongly inlined, differ; without the change they are the same. */
static void changed_aliases_are_not_inlined(void **state)
{
    static const char *const changes[] = {
        "t = 4;", "t += 32;", "t <<= 1;", "t++;", "--t;", "f(&t);", "{ int t = threadIdx.y; }", "g(int t);",
    };
    char kept[200], inlined[200], change[100];
    assert_true(similarity("int t = threadIdx.x; o[t] = 1; x = 2;", "o[threadIdx.x] = 1; x = 2;") == 1.0);
    size_t wrong = 0;
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
        snprintf(kept, sizeof kept, "int t = threadIdx.x; o[t] = 1; %s", changes[i]);
        char *c = renamed(strdup(changes[i]), "t", "threadIdx.x");
        snprintf(change, sizeof change, "%s", c);
        free(c);
        snprintf(inlined, sizeof inlined, "o[threadIdx.x] = 1; %s", change);
        double sim = similarity(kept, inlined);
        if (sim >= 1.0) {
            print_error("%s: inlined\n", kept);
            wrong++;
        }
    }
    assert_int_equal(wrong, 0);
}

/* The ps2 sample copy's disguise (the aliases inlined, names changed, loads reordered). */
static char *grace(char *s)
{
    return commented(reformatted(disguise_names(disguise_aliases(disguise_order(disguise_loops(s))))));
}

static void a_copy_with_its_aliases_inlined_is_similar(void **state) { check_disguise("aliases inlined", grace); }

/* A signature with a pointer more (a weights array a built-in keeps in __constant__ memory)
 * shifts no scalar parameter; one with a scalar more does. */
static void parameters_count_by_kind(void **state)
{
    const char *body = "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = in[i] * s; }";
    char base[300], pointer[300], scalar[300];
    snprintf(base, sizeof base, "__global__ void f(const float *in, float *out, int n, float s) %s", body);
    snprintf(pointer, sizeof pointer, "__global__ void f(const float *in, float *out, const float *w, int n, float s) %s",
             body);
    snprintf(scalar, sizeof scalar, "__global__ void f(const float *in, float *out, int m, int n, float s) %s", body);
    double with_pointer = similarity(base, pointer), with_scalar = similarity(base, scalar);
    if (!(with_pointer > with_scalar))
        fail_msg("a pointer more %.3f, a scalar more %.3f", with_pointer, with_scalar);
}

/* ---- independent solutions ---- */

#define SIMILARITY_DIR "tests/similarity/"
static const char *const independent[] = {"tiled_flat.cu", "tiled_dynamic.cu", "tiled_two_columns.cu"};
#define NINDEPENDENT (sizeof independent / sizeof independent[0])

static char *read_text(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, SIMILARITY_DIR "%s", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot read %s (run the unit tests from the repository's root)", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

static void independent_solutions_are_not_flagged_against_builtins(void **state)
{
    size_t nregions;
    const show_region *r = show_source_regions(&nregions);
    size_t compared = 0;
    for (size_t s = 0; s < NINDEPENDENT; s++) {
        char *mine = read_text(independent[s]);
        for (size_t i = 0; i < nregions; i++) {
            if (strcmp(r[i].family, "matmul") != 0 || (i > 0 && strcmp(r[i - 1].variant, r[i].variant) == 0 &&
                                                      strcmp(r[i - 1].family, r[i].family) == 0))
                continue;
            char *theirs = builtin("matmul", r[i].variant);
            if (!theirs)
                continue;           /* a variant without a %%kernel cell: nothing to paste */
            double sim = similarity(mine, theirs);
            if (sim >= FINGERPRINT_FLAG)
                fail_msg("%s against the built-in %s: %.3f >= %.2f", independent[s], r[i].variant, sim,
                         FINGERPRINT_FLAG);
            compared++;
            free(theirs);
        }
        free(mine);
    }
    assert_true(compared >= 2 * NINDEPENDENT);      /* naive and tiled at least */
}

static void independent_solutions_are_not_flagged_against_each_other(void **state)
{
    for (size_t a = 0; a < NINDEPENDENT; a++)
        for (size_t b = a + 1; b < NINDEPENDENT; b++) {
            char *x = read_text(independent[a]), *y = read_text(independent[b]);
            double sim = similarity(x, y);
            if (sim >= FINGERPRINT_FLAG)
                fail_msg("%s against %s: %.3f", independent[a], independent[b], sim);
            free(x);
            free(y);
        }
}

/* A copy of an independent solution is as recognisable as a copy of the built-in. */
static void a_disguised_copy_of_a_peer_is_similar(void **state)
{
    char *peer = read_text("tiled_dynamic.cu");
    char *copy = renamed(renamed(renamed(strdup(peer), "total", "sum"), "phase", "t"), "tileA", "As");
    copy = swapped(copy, "int aCol =", "int bRow =");
    copy = commented(reformatted(copy));
    double sim = similarity(copy, peer);
    if (sim < FINGERPRINT_FLAG)
        fail_msg("%.3f\n%s", sim, copy);
    free(copy);
    free(peer);
}

/* ---- what no compiler would take ---- */

static void hostile_sources_are_fingerprinted(void **state)
{
    static const char *const odd[] = {
        "", "}}}}{{{{;;;;", "/* never closed", "\"never closed", "__global__ void f(", "__global__ (((((",
        "#define X\n#include <x>", "for for for ( ( (", "else else do do", "int ,,,, ;", "__shared__",
        "__shared__ __shared__ float", "a.b->c->.d", "R\"x(raw never closed",
        /* aliases of builtins cut short */
        "int t = threadIdx.x", "int t = threadIdx.", "int t = (", "int t = (int", "int , t = threadIdx.x;",
        "int t = static_cast<int>(threadIdx.x", "int t = threadIdx.x, (((; t", "int t = blockIdx.x, u = t,",
    };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        fingerprint fp;
        assert_int_equal(fingerprint_make(odd[i], &fp), 0);
        char *t = builtin("matmul", "tiled");
        fingerprint ft;
        assert_int_equal(fingerprint_make(t, &ft), 0);
        double s = fingerprint_similarity(&fp, &ft);
        assert_true(s >= 0 && s < 0.2);
        fingerprint_free(&fp);
        fingerprint_free(&ft);
        free(t);
    }
    /* a source of nothing but __shared__ (every one looks ahead for its array's name) */
    size_t reps = 200000;
    char *shared = malloc(reps * 11 + 1);
    for (size_t i = 0; i < reps; i++)
        memcpy(shared + i * 11, "__shared__ ", 11);
    shared[reps * 11] = '\0';
    fingerprint fs;
    assert_int_equal(fingerprint_make(shared, &fs), 0);
    fingerprint_free(&fs);
    free(shared);
    /* a source of nothing but aliases (more than are followed), each used by the next */
    reps = 100000;
    char *aliases = malloc(reps * 40 + 1), *w = aliases;
    for (size_t i = 0; i < reps; i++)
        w += sprintf(w, "int t%zu = threadIdx.x, u = t%zu;", i % 1000, i % 997);
    fingerprint fa;
    assert_int_equal(fingerprint_make(aliases, &fa), 0);
    fingerprint_free(&fa);
    free(aliases);
    /* a long source: many parameters and shared arrays, deep nesting */
    size_t n = 1 << 20;
    char *big = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        big[i] = "__global__ void g(int a, int b) { __shared__ float s[4]; ((a)); }"[i % 64];
    big[n] = '\0';
    fingerprint fb;
    assert_int_equal(fingerprint_make(big, &fb), 0);
    assert_true(fingerprint_similarity(&fb, &fb) == 1.0);
    fingerprint_free(&fb);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(identical_sources_score_one),
        cmocka_unit_test(a_renamed_copy_is_similar),
        cmocka_unit_test(a_reformatted_copy_is_similar),
        cmocka_unit_test(a_commented_copy_is_similar),
        cmocka_unit_test(a_reordered_copy_is_similar),
        cmocka_unit_test(renamed_loop_variables_are_similar),
        cmocka_unit_test(braces_and_split_declarations_are_similar),
        cmocka_unit_test(a_compound_assignment_written_out_is_similar),
        cmocka_unit_test(every_disguise_at_once_is_similar),
        cmocka_unit_test(inlined_builtin_aliases_are_similar),
        cmocka_unit_test(changed_aliases_are_not_inlined),
        cmocka_unit_test(a_copy_with_its_aliases_inlined_is_similar),
        cmocka_unit_test(parameters_count_by_kind),
        cmocka_unit_test(independent_solutions_are_not_flagged_against_builtins),
        cmocka_unit_test(independent_solutions_are_not_flagged_against_each_other),
        cmocka_unit_test(a_disguised_copy_of_a_peer_is_similar),
        cmocka_unit_test(hostile_sources_are_fingerprinted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
