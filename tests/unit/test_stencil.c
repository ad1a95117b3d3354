/* test_stencil.c — %stencil on the CPU backend: both variants' CPU analogues
 * against the host reference in 1D and 2D (odd sizes, every block shape,
 * radii up to the block), hand-computed boundary values (ghost cells are 0),
 * the check catching a wrong element, and the magic's error paths end to end.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "magic/magic.h"
#include "cudalab/stencil.h"
#include "magics/stencil_internal.h"
#include "magic_sink.h"

extern const cl_stencil_ops cl_cpu_stencil_ops;

#define assert_contains(hay, needle) do {                                         \
        if (!strstr((hay), (needle)))                                             \
            fail_msg("'%s'\n  does not contain '%s'", (hay), (needle));           \
    } while (0)

/* Runs variant v of a on the CPU and checks every element: bit-exact. */
static void run_and_check(int v, const cl_stencil_args *a)
{
    uint64_t n = a->nx * a->ny;
    float *out = malloc(n * sizeof *out);
    cl_stencil_result *r = malloc(sizeof *r);
    char err[CL_ERR_LEN] = "";
    assert_non_null(out);
    assert_non_null(r);
    if (cl_cpu_stencil_ops.run(v, a, out, r, err) != 0)
        fail_msg("run: %s", err);
    assert_int_equal(r->times.reps, a->reps);
    cl_stencil_check c;
    assert_int_equal(cl_stencil_verify(a, out, &c, err), 0);
    if (c.mismatches || c.checked != n || c.bit_exact != n)
        fail_msg("dim %d v %d %llux%llu R %d block %dx%d: %llu mismatches, %llu bit-exact of %llu", a->dim, v,
                 (unsigned long long)a->nx, (unsigned long long)a->ny, a->radius, a->block[0], a->block[1],
                 (unsigned long long)c.mismatches, (unsigned long long)c.bit_exact, (unsigned long long)n);
    free(out);
    free(r);
}

static void every_variant_1d(void **state)
{
    static const uint64_t sizes[] = {1, 2, 7, 31, 32, 33, 255, 257, 1000, 4097};
    static const int blocks[] = {32, 64, 256};
    static const int radii[] = {1, 3, 16, 32};
    float w[2 * 32 + 1];
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t b = 0; b < sizeof blocks / sizeof *blocks; b++)
            for (size_t q = 0; q < sizeof radii / sizeof *radii; q++) {
                int R = radii[q];
                for (int j = 0; j < 2 * R + 1; j++)
                    w[j] = (float)(j % 3 - 1) * 0.25f + 0.1f * (float)j;   /* asymmetric: order shows */
                cl_stencil_args a = {.dim = 1, .nx = sizes[s], .ny = 1, .radius = R, .k = 2 * R + 1,
                                     .weights = w, .block = {blocks[b], 1}, .seed = 7, .reps = 1};
                for (int v = 0; v < CL_STENCIL_NVARIANTS; v++)
                    run_and_check(v, &a);
            }
}

static void every_variant_2d(void **state)
{
    static const uint64_t shapes[][2] = {{1, 1}, {5, 3}, {17, 33}, {64, 64}, {100, 37}};
    static const int tiles[][2] = {{4, 4}, {8, 8}, {16, 16}, {32, 32}, {32, 8}, {8, 32}, {4, 16}};
    float w[7 * 7];
    for (int j = 0; j < 49; j++)
        w[j] = (float)((j * 7) % 11 - 5) / 8.0f;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (size_t t = 0; t < sizeof tiles / sizeof *tiles; t++)
            for (int k = 1; k <= 7; k += 2) {
                if ((k - 1) / 2 > tiles[t][0] || (k - 1) / 2 > tiles[t][1])
                    continue;
                cl_stencil_args a = {.dim = 2, .nx = shapes[s][0], .ny = shapes[s][1], .radius = (k - 1) / 2,
                                     .k = k, .weights = w, .block = {tiles[t][0], tiles[t][1]}, .seed = 3,
                                     .reps = 2, .warmup = 1};
                for (int v = 0; v < CL_STENCIL_NVARIANTS; v++)
                    run_and_check(v, &a);
            }
}

/* A weight w and an index i in [lo, hi) where fmaf(w, x[i+1], x[i]) differs
 * from w*x[i+1] + x[i] in double rounded to float: the double lands halfway
 * between two floats, the exact sum just past it, and the second rounding
 * breaks the tie the wrong way. w is tried at the floats near the half ulp of
 * x[i] over x[i+1]; 0 if no i in the range has one. */
static float double_rounding_weight(uint64_t seed, uint64_t lo, uint64_t hi)
{
    for (uint64_t i = lo; i < hi; i++) {
        float a = cl_uniform(seed, i), x = cl_uniform(seed, i + 1);
        int e;
        frexpf(a, &e);
        if (a == 0.0f || x == 0.0f)
            continue;
        float w = ldexpf(1.0f, e - 25) / x;
        for (int step = 0; step < 64; step++, w = nextafterf(w, 2 * w))
            if ((float)((double)w * x + a) != fmaf(w, x, a))
                return w;
    }
    return 0.0f;
}

/* The analogues add each term in double and round it as fmaf would
 * (stencil_cpu.c, add_term): an output where rounding twice goes wrong, inside
 * a block away from the edges, still equals the reference bit for bit. */
static void double_rounding_exact(void **state)
{
    float w1[3] = {0.0f, 1.0f, double_rounding_weight(17, 64, 4000)};
    assert_true(w1[2] != 0.0f);
    cl_stencil_args a = {.dim = 1, .nx = 4096, .ny = 1, .radius = 1, .k = 3, .weights = w1, .block = {32, 1},
                         .seed = 17, .reps = 1};
    for (int v = 0; v < CL_STENCIL_NVARIANTS; v++)
        run_and_check(v, &a);
    /* 2D: the pixel's row 5 lies in the second row of 8x4 blocks, whose halo is inside the image */
    enum { NX = 2048 };
    float w2[9] = {0, 0, 0, 0, 1.0f, double_rounding_weight(19, 5 * NX + 16, 6 * NX - 16), 0, 0, 0};
    assert_true(w2[5] != 0.0f);
    cl_stencil_args b = {.dim = 2, .nx = NX, .ny = 12, .radius = 1, .k = 3, .weights = w2, .block = {8, 4},
                         .seed = 19, .reps = 1};
    for (int v = 0; v < CL_STENCIL_NVARIANTS; v++)
        run_and_check(v, &b);
}

/* Box R = 1 on 3 elements: the ends see one ghost cell (0). */
static void boundary_by_hand(void **state)
{
    float w[3] = {1.0f / 3, 1.0f / 3, 1.0f / 3}, out[3];
    cl_stencil_args a = {.dim = 1, .nx = 3, .ny = 1, .radius = 1, .k = 3, .weights = w, .block = {32, 1},
                         .seed = 11, .reps = 1};
    cl_stencil_result r;
    char err[CL_ERR_LEN];
    float x0 = cl_uniform(11, 0), x1 = cl_uniform(11, 1), x2 = cl_uniform(11, 2);
    for (int v = 0; v < CL_STENCIL_NVARIANTS; v++) {
        assert_int_equal(cl_cpu_stencil_ops.run(v, &a, out, &r, err), 0);
        assert_true(out[0] == fmaf(w[2], x1, fmaf(w[1], x0, 0.0f)));
        assert_true(out[1] == fmaf(w[2], x2, fmaf(w[1], x1, fmaf(w[0], x0, 0.0f))));
        assert_true(out[2] == fmaf(w[1], x2, fmaf(w[0], x1, 0.0f)));
    }
    /* laplace4 on a 1x1 image: only the centre term exists */
    float lap[9] = {0, 1, 0, 1, -4, 1, 0, 1, 0}, one;
    cl_stencil_args b = {.dim = 2, .nx = 1, .ny = 1, .radius = 1, .k = 3, .weights = lap, .block = {4, 4},
                         .seed = 11, .reps = 1};
    assert_int_equal(cl_cpu_stencil_ops.run(CL_STENCIL_TILED, &b, &one, &r, err), 0);
    assert_true(one == -4.0f * x0);
    assert_int_equal(r.launch.smem_bytes, 6 * 6 * 4);
}

static void check_catches_wrong_element(void **state)
{
    float w[5] = {1, 2, 3, 2, 1}, out[300];
    cl_stencil_args a = {.dim = 1, .nx = 300, .ny = 1, .radius = 2, .k = 5, .weights = w, .block = {64, 1},
                         .seed = 5, .reps = 1};
    cl_stencil_result r;
    char err[CL_ERR_LEN];
    assert_int_equal(cl_cpu_stencil_ops.run(CL_STENCIL_TILED, &a, out, &r, err), 0);
    out[129] = nextafterf(out[129], 10.0f);          /* one ulp: still within the bound */
    cl_stencil_check c;
    assert_int_equal(cl_stencil_verify(&a, out, &c, err), 0);
    assert_int_equal(c.mismatches, 0);
    assert_int_equal(c.bit_exact, 299);
    out[200] += 0.01f;                                /* a lost term's worth: caught */
    assert_int_equal(cl_stencil_verify(&a, out, &c, err), 0);
    assert_int_equal(c.mismatches, 1);
    assert_int_equal(c.first_bad, 200);
    assert_true(c.got == out[200] && c.want == out[200] - 0.01f);
    assert_int_equal(cl_cpu_stencil_ops.run(CL_STENCIL_NVARIANTS, &a, out, &r, err), -1);
    assert_contains(err, "no stencil variant");
    assert_int_equal(cl_cpu_stencil_ops.run(CL_VARIANT_STUDENT, &a, out, &r, err), -1);
    assert_contains(err, "no stencil variant");                 /* a student's id without its kernel */
    /* students' kernels run on the CPU runner; one not built for it is refused by name */
    assert_true(cl_cpu_stencil_ops.runs_student);
    cl_student_kernel k = {.name = "mystencil", .block = {256, 1, 1}};
    a.student = &k;
    assert_int_equal(cl_cpu_stencil_ops.run(CL_VARIANT_STUDENT, &a, out, &r, err), -1);
    assert_contains(err, "mystencil was not built for the CPU runner");
    a.student = NULL;
}

/* A student's kernel may add its terms in any order: its tolerance is terms x
 * 2^-24 where that is above ours (1e-6), so a sum in reverse order passes at a
 * large radius, and one accumulated in FP16 fails. */
static void student_tolerance_allows_any_order(void **state)
{
    enum { R = 200, N = 2000 };
    static float w[2 * R + 1], out[N];
    for (int j = 0; j <= 2 * R; j++)
        w[j] = 1.0f / (2 * R + 1);
    cl_student_kernel k = {.name = "mine"};
    cl_stencil_args a = {.dim = 1, .nx = N, .ny = 1, .radius = R, .k = 2 * R + 1, .weights = w, .block = {256, 1},
                         .seed = 9, .reps = 1};
    assert_true(cl_stencil_rtol(&a) == CL_STENCIL_RTOL);
    a.student = &k;
    assert_true(cl_stencil_rtol(&a) == (2 * R + 1) * 0x1p-24);
    for (int i = 0; i < N; i++) {            /* reverse order, plain multiply and add */
        float acc = 0.0f;
        for (int j = R; j >= -R; j--)
            if (i + j >= 0 && i + j < N)
                acc += w[j + R] * cl_uniform(9, (uint64_t)(i + j));
        out[i] = acc;
    }
    cl_stencil_check c;
    char err[CL_ERR_LEN];
    assert_int_equal(cl_stencil_verify(&a, out, &c, err), 0);
    assert_int_equal(c.mismatches, 0);
    for (int i = 0; i < N; i++) {            /* rounded to half precision's 11 bits after every add */
        float acc = 0.0f;
        for (int j = -R; j <= R; j++)
            if (i + j >= 0 && i + j < N) {
                acc += w[j + R] * cl_uniform(9, (uint64_t)(i + j));
                int e;
                float m = frexpf(acc, &e);
                acc = ldexpf(roundf(m * 2048.0f) / 2048.0f, e);
            }
        out[i] = acc;
    }
    assert_int_equal(cl_stencil_verify(&a, out, &c, err), 0);
    assert_true(c.mismatches > N / 2);
}

/* ---- the magic, end to end ---- */

static void magic_sweeps(void **state)
{
    sink s;
    magic_ctx ctx;
    if (run_cell("%stencil --size 999,1000 --radius 1,5 --reps 1 --warmup 0", cl_cpu_backend(), &s, &ctx))
        fail_msg("%s: %s", ctx.error.ename, ctx.error.evalue);
    json_t *runs = json_object_get(s.doc, "runs"), *r;
    assert_int_equal(json_array_size(runs), 2 * 2 * 2);     /* the default: the lesson's naive and tiled */
    size_t i;
    json_array_foreach(runs, i, r) {
        assert_true(json_is_true(json_object_get(json_object_get(r, "check"), "passed")));
        int R = (int)json_integer_value(json_object_get(r, "radius"));
        double reads = json_number_value(json_object_get(json_object_get(r, "model"), "global_reads_per_output"));
        bool tiled = strcmp(json_string_value(json_object_get(r, "variant")), "tiled") == 0;
        assert_true(fabs(reads - (tiled ? (256.0 + 2 * R) / 256.0 : 2 * R + 1)) < 1e-12);
    }
    sink_free(&s, &ctx);
    if (run_cell("%stencil --dim 2 --size 40x30 --filter gauss5 --block 8 --reps 1 --warmup 0",
                 cl_cpu_backend(), &s, &ctx))
        fail_msg("%s: %s", ctx.error.ename, ctx.error.evalue);
    json_array_foreach(json_object_get(s.doc, "runs"), i, r) {
        bool tiled = strcmp(json_string_value(json_object_get(r, "variant")), "tiled") == 0;
        double reads = json_number_value(json_object_get(json_object_get(r, "model"), "global_reads_per_output"));
        assert_true(fabs(reads - (tiled ? 144.0 / 64.0 : 25.0)) < 1e-12);
        assert_string_equal(json_string_value(json_object_get(r, "size")), "40x30");
    }
    sink_free(&s, &ctx);
    /* all: fast too, its model a thread's window of 4 + 2R over its 4 outputs */
    if (run_cell("%stencil --size 999 --radius 5 --variant all --reps 1 --warmup 0", cl_cpu_backend(), &s, &ctx))
        fail_msg("%s: %s", ctx.error.ename, ctx.error.evalue);
    runs = json_object_get(s.doc, "runs");
    assert_int_equal(json_array_size(runs), CL_STENCIL_NVARIANTS);
    r = json_array_get(runs, CL_STENCIL_FAST);
    assert_string_equal(json_string_value(json_object_get(r, "variant")), "fast");
    assert_true(json_is_true(json_object_get(json_object_get(r, "check"), "passed")));
    assert_true(fabs(json_number_value(json_object_get(json_object_get(r, "model"), "global_reads_per_output")) -
                     (CL_STENCIL_FAST_VX + 10.0) / CL_STENCIL_FAST_VX) < 1e-12);
    sink_free(&s, &ctx);
}

static void magic_errors(void **state)
{
    static const struct { const char *cell, *ename, *text; } cases[] = {
        {"%stencil --radius 64 --block 32", "UsageError", "halo must fit"},
        {"%stencil --block 48", "UsageError", "multiple of 32"},
        {"%stencil --dim 2 --block 64", "UsageError", "4..32"},
        {"%stencil --dim 2 --weights 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
         "1,1,1,1,1,1,1,1,1,1 --block 2", "UsageError", "4..32"},
        {"%stencil --dim 2 --weights 1,2,3,4", "UsageError", "odd side"},
        {"%stencil --dim 2 --weights 1,2,x", "UsageError", "not a number"},
        {"%stencil --weights 1,2", "UsageError", "odd count"},
        {"%stencil --weights 1,2,1 --radius 3", "UsageError", "radius-1"},
        {"%stencil --filter box", "UsageError", "--filter is for --dim 2"},
        {"%stencil --dim 2 --radius 2", "UsageError", "--radius is for --dim 1"},
        {"%stencil --dim 2 --filter box --weights 1", "UsageError", "not both"},
        {"%stencil --dim 2 --weights 0,1,0,1,-4,1,0,1,0 --normalize", "UsageError", "sum to 0"},
        {"%stencil --normalize", "UsageError", "--normalize applies to --weights"},
        {"%stencil --size 2^50", "MemoryError", "largest size that fits"},
        {"%stencil --dim 2 --size 1000000x1000000", "MemoryError", "largest square that fits"},
        {"%stencil --dim 2 --size 4x4x4", "UsageError", "3D"},
        {"%stencil --size 4x4", "UsageError", "--dim 2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        sink s;
        magic_ctx ctx;
        int rc = run_cell(cases[i].cell, cl_cpu_backend(), &s, &ctx);
        if (rc == 0)
            fail_msg("%s: succeeded", cases[i].cell);
        assert_string_equal(ctx.error.ename, cases[i].ename);
        assert_contains(ctx.error.evalue, cases[i].text);
        sink_free(&s, &ctx);
    }
    /* a backend without the family */
    cl_backend none = *cl_cpu_backend();
    none.stencil = NULL;
    sink s;
    magic_ctx ctx;
    assert_int_equal(run_cell("%stencil", &none, &s, &ctx), -1);
    assert_contains(ctx.error.evalue, "without %stencil");
}

static void filters_named(void **state)
{
    float w[25];
    int k;
    st_env env = {.dim = 2};
    assert_int_equal(st_point_weights(&env, 0, "gauss5", w, &k), 25);
    assert_int_equal(k, 5);
    assert_true(w[12] == 36.0f / 256 && w[0] == 1.0f / 256 && w[1] == 4.0f / 256);
    assert_int_equal(st_point_weights(&env, 0, "laplace8", w, &k), 9);
    assert_true(w[4] == -8.0f && w[0] == 1.0f);
    st_point_weights(&env, 0, "box", w, &k);
    assert_true(w[3] == 1.0f / 9);
    env.dim = 1;
    assert_int_equal(st_point_weights(&env, 4, NULL, w, &k), 9);
    assert_true(w[8] == 1.0f / 9);
    assert_null(st_filter_find("sobel"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_variant_1d),
        cmocka_unit_test(every_variant_2d),
        cmocka_unit_test(double_rounding_exact),
        cmocka_unit_test(boundary_by_hand),
        cmocka_unit_test(check_catches_wrong_element),
        cmocka_unit_test(student_tolerance_allows_any_order),
        cmocka_unit_test(magic_sweeps),
        cmocka_unit_test(magic_errors),
        cmocka_unit_test(filters_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
