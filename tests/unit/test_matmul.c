/* test_matmul.c — %matmul without a GPU: every CPU-backend variant against an
 * independent double product at odd sizes, the check (full and Freivalds)
 * catching wrong, missing and non-finite elements, the generator, and the
 * magic end to end: documents, `all`, tiles, refusals before allocation, and
 * a fake CUDA backend whose runs fail, lie or count, and place them under roofs.
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

#include "lang/lang.h"
#include "magic/magic.h"
#include "cudalab/matmul.h"
#include "../cpu/matmul_cpu.h"

#include "magic_sink.h"

/* ---- helpers ---- */

static float *product_of(int m, int n, int k, uint64_t seed)
{
    float *a = malloc(((size_t)m * k + (size_t)k * n) * sizeof *a);
    float *c = malloc((size_t)m * n * sizeof *c);
    assert_non_null(a);
    assert_non_null(c);
    float *b = a + (size_t)m * k;
    for (size_t i = 0; i < (size_t)m * k; i++)
        a[i] = cl_matmul_a(seed, i);
    for (size_t i = 0; i < (size_t)k * n; i++)
        b[i] = cl_matmul_b(seed, i);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int q = 0; q < k; q++)
                s += (double)a[(size_t)i * k + q] * b[(size_t)q * n + j];
            c[(size_t)i * n + j] = (float)s;
        }
    free(a);
    return c;
}

/* The contract's id of a variant name (-1 for none). */
static int id_of(const char *name)
{
    for (int v = 0; v < CL_MATMUL_NVARIANTS; v++)
        if (strcmp(cl_matmul_variants[v].name, name) == 0)
            return v;
    return -1;
}

/* Runs one CPU-backend variant and returns C (caller frees). */
static float *run_cpu(const char *variant, int m, int n, int k, int tile, cl_matmul_result *r)
{
    const cl_matmul_ops *ops = cl_cpu_backend()->matmul;
    assert_non_null(ops);
    cl_matmul_args a = { .m = m, .n = n, .k = k, .tile = tile, .seed = 5, .reps = 1, .warmup = 0 };
    a.c = malloc((size_t)m * n * sizeof *a.c);
    assert_non_null(a.c);
    char err[CL_ERR_LEN] = "";
    if (ops->run(id_of(variant), &a, r, err) != 0)
        fail_msg("%s %dx%dx%d tile %d: %s", variant, m, n, k, tile, err);
    return a.c;
}

/* ---- the CPU backend's variants ---- */

static const int sizes[][3] = { {1, 1, 1}, {64, 64, 64}, {100, 100, 100}, {127, 127, 127},
                                {3, 5, 7}, {33, 65, 17}, {130, 1, 129}, {1, 200, 3} };

static void every_variant_matches_the_product(void **state)
{
    (void)state;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int m = sizes[s][0], n = sizes[s][1], k = sizes[s][2];
        float *want = product_of(m, n, k, 5);
        for (const cl_variant *v = cl_matmul_variants; v < cl_matmul_variants + CL_MATMUL_NVARIANTS; v++) {
            static const int tiles[] = CL_MATMUL_TILES;
            assert_true(cl_cpu_backend()->matmul->has((int)(v - cl_matmul_variants)));
            for (int t = 0; tiles[t]; t++) {
                if (t > 0 && !(v->flags & CL_V_TILE))
                    break;
                cl_matmul_result r;
                float *c = run_cpu(v->name, m, n, k, tiles[t], &r);
                /* the wmma analogues round A and B: their format's tolerance, against Σ|a·b| ≤ k */
                cl_matmul_format fmt = cl_matmul_format_of(r.precision);
                for (size_t i = 0; i < (size_t)m * n; i++) {
                    double tol = fmt == CL_MATMUL_FMT_FP32 ? 1e-5 * (k + 1) : cl_matmul_tolerance(fmt, true) * k;
                    if (!(fabs(c[i] - want[i]) <= tol))
                        fail_msg("%s tile %d %dx%dx%d: C[%zu] = %g, want %g", v->name, tiles[t], m, n,
                                 k, i, c[i], want[i]);
                }
                cl_matmul_check chk;
                char err[CL_ERR_LEN];
                assert_int_equal(cl_matmul_verify(m, n, k, 5, c, fmt, &chk, err), 0);
                if (!chk.passed)
                    fail_msg("%s: check failed, max_rel_err %g", v->name, chk.max_rel_err);
                assert_int_equal(r.times.reps, 1);
                assert_true(r.times.ms[0] >= 0);
                assert_true(r.impl[0] != '\0');
                free(c);
            }
        }
        free(want);
    }
}

/* --tile's range is the tile list's first and last: the list ascends. */
static void tile_range_is_the_lists(void **state)
{
    (void)state;
    static const int tiles[] = CL_MATMUL_TILES;
    int n = 1;
    for (; tiles[n]; n++)
        assert_true(tiles[n] > tiles[n - 1]);
    assert_int_equal(CL_MATMUL_TILE_MIN, tiles[0]);
    assert_int_equal(CL_MATMUL_TILE_MAX, tiles[n - 1]);
}

static void launch_and_model(void **state)
{
    (void)state;
    cl_matmul_result r;
    free(run_cpu("tiled", 64, 64, 64, 16, &r));
    assert_int_equal(r.launch.grid[0], 4);
    assert_int_equal(r.launch.grid[1], 4);
    assert_int_equal(r.launch.block[0], 16);
    assert_int_equal(r.launch.smem_bytes, 2 * 16 * 16 * 4);
    assert_true(fabs(r.global_loads - 2.0 * 64 * 64 * 64 / 16) < 1e-6);

    free(run_cpu("naive", 100, 60, 7, 16, &r));
    assert_int_equal(r.launch.grid[0], 4);     /* ⌈60/16⌉ */
    assert_int_equal(r.launch.grid[1], 7);     /* ⌈100/16⌉ */
    assert_true(fabs(r.global_loads - 2.0 * 100 * 60 * 7) < 1e-6);

    free(run_cpu("fast", 256, 256, 8, 16, &r));
    assert_true(fabs(2.0 * 256 * 256 * 8 / r.global_loads - 128.0) < 1e-9);
    free(run_cpu("cublas", 8, 8, 8, 16, &r));
    assert_true(r.global_loads == 0);
    /* the system's BLAS in FP32, or the reference product where there is none */
    assert_true(strstr(r.impl, "cblas_sgemm") ? strcmp(r.precision, "fp32") == 0
                                              : strstr(r.impl, "CPU reference") && strcmp(r.precision, "fp64") == 0);
    /* ceil: a partial block still reads whole rows of A and columns of B */
    assert_true(fabs(cl_matmul_loads_blocked(100, 100, 10, 32, 32) - (100.0 * 10 * 4 * 2)) < 1e-9);
}

static void run_errors(void **state)
{
    (void)state;
    const cl_matmul_ops *ops = cl_cpu_backend()->matmul;
    cl_matmul_result r;
    char err[CL_ERR_LEN] = "";
    cl_matmul_args a = { .m = 4, .n = 4, .k = 4, .tile = 16, .seed = 1, .reps = 1 };
    assert_int_equal(ops->run(id_of("warp-specialized"), &a, &r, err), -1);
    assert_non_null(strstr(err, "no matmul variant -1"));
    a.m = 0;
    assert_int_equal(ops->run(id_of("naive"), &a, &r, err), -1);
    assert_non_null(strstr(err, "invalid"));
    a.m = 4, a.reps = -1;
    assert_int_equal(ops->run(id_of("naive"), &a, &r, err), -1);
    a.reps = 1, a.tile = 0;
    assert_int_equal(ops->run(id_of("tiled"), &a, &r, err), -1);
    assert_int_equal(ops->run(id_of("naive"), &a, &r, err), 0);      /* naive ignores the tile */
    assert_int_equal(ops->run(-1, &a, &r, err), -1);
    assert_int_equal(ops->run(CL_MATMUL_NVARIANTS, &a, &r, err), -1);
    assert_false(ops->has(-1));
    assert_true(ops->has(id_of("cpu")));
}

/* ---- the check ---- */

static void check_catches_wrong_elements(void **state)
{
    (void)state;
    cl_matmul_check chk;
    char err[CL_ERR_LEN];
    /* full product: one element off by one unit of its dot product's scale / k */
    float *c = product_of(50, 40, 30, 9);
    assert_int_equal(cl_matmul_verify(50, 40, 30, 9, c, CL_MATMUL_FMT_FP32, &chk, err), 0);
    assert_true(chk.passed);
    assert_string_equal(chk.method, "full fp64 product");
    assert_true(chk.max_rel_err < 1e-6);
    c[17 * 40 + 3] += 0.25f;
    assert_int_equal(cl_matmul_verify(50, 40, 30, 9, c, CL_MATMUL_FMT_FP32, &chk, err), 0);
    assert_false(chk.passed);
    assert_int_equal(chk.worst_row, 17);
    assert_int_equal(chk.worst_col, 3);
    /* NaN never passes, and is reported as non-finite */
    c[17 * 40 + 3] = NAN;
    assert_int_equal(cl_matmul_verify(50, 40, 30, 9, c, CL_MATMUL_FMT_FP32, &chk, err), 0);
    assert_false(chk.passed);
    assert_true(isnan(chk.max_rel_err));
    /* the wrong seed is a wrong product */
    free(c);
    c = product_of(50, 40, 30, 9);
    assert_int_equal(cl_matmul_verify(50, 40, 30, 10, c, CL_MATMUL_FMT_FP32, &chk, err), 0);
    assert_false(chk.passed);
    /* the inputs kept between checks follow the problem, back and forth */
    assert_int_equal(cl_matmul_verify(50, 40, 30, 9, c, CL_MATMUL_FMT_FP32, &chk, err), 0);
    assert_true(chk.passed);
    assert_int_equal(cl_matmul_verify(50, 40, 31, 9, c, CL_MATMUL_FMT_FP32, &chk, err), 0);
    assert_false(chk.passed);
    free(c);
}

static void freivalds_beyond_512_cubed(void **state)
{
    (void)state;
    int m = 600, n = 520, k = 450;              /* 1.4e8 multiply-adds > 512³ */
    cl_matmul_result r;
    float *c = run_cpu("cublas", m, n, k, 16, &r);
    cl_matmul_check chk;
    char err[CL_ERR_LEN];
    assert_int_equal(cl_matmul_verify(m, n, k, 5, c, CL_MATMUL_FMT_FP32, &chk, err), 0);
    assert_string_equal(chk.method, "freivalds x3");
    assert_true(chk.passed);
    assert_true(chk.tol == CL_MATMUL_TOL_FP32_FREI);
    assert_int_equal(chk.worst_col, -1);
    c[(size_t)599 * n + 519] += 0.5f;           /* one wrong element in the last row */
    assert_int_equal(cl_matmul_verify(m, n, k, 5, c, CL_MATMUL_FMT_FP32, &chk, err), 0);
    assert_false(chk.passed);
    assert_int_equal(chk.worst_row, 599);
    c[(size_t)599 * n + 519] = INFINITY;
    assert_int_equal(cl_matmul_verify(m, n, k, 5, c, CL_MATMUL_FMT_FP32, &chk, err), 0);
    assert_false(chk.passed);
    assert_true(isnan(chk.max_rel_err));
    /* TF32's tolerance is looser, and stated */
    c[(size_t)599 * n + 519] = 0;
    assert_int_equal(cl_matmul_verify(10, 10, 10, 5, c, CL_MATMUL_FMT_TF32, &chk, err), 0);
    assert_true(chk.tol == CL_MATMUL_TOL_TF32);
    free(c);
}

static void generator_and_threads(void **state)
{
    (void)state;
    float a[6 * 7], b[7 * 5];
    cl_matmul_fill(a, b, 6, 5, 7, 3, false);
    for (int i = 0; i < 42; i++) {
        assert_true(a[i] == cl_matmul_a(3, (uint64_t)i));
        assert_true(a[i] != 0 && a[i] >= -1 && a[i] < 1);
    }
    for (int i = 0; i < 35; i++)
        assert_true(b[i] == cl_matmul_b(3, (uint64_t)i));
    assert_true(cl_matmul_a(3, 0) != cl_matmul_b(3, 0));
    assert_true(cl_matmul_a(3, 0) != cl_matmul_a(4, 0));
}

/* Bᵀ from the same generator: the corner-turning variants' input, the same product. */
static void transposed_fill(void **state)
{
    (void)state;
    float a[6 * 7], bt[5 * 7];
    cl_matmul_fill(a, bt, 6, 5, 7, 3, true);
    for (int i = 0; i < 42; i++)
        assert_true(a[i] == cl_matmul_a(3, (uint64_t)i));
    for (int j = 0; j < 5; j++)
        for (int i = 0; i < 7; i++)
            assert_true(bt[j * 7 + i] == cl_matmul_b(3, (uint64_t)(i * 5 + j)));
}

/* The roundings of the wmma analogues, at ties and at the ends of FP16's range. */
static void rounding_to_formats(void **state)
{
    (void)state;
    /* TF32 keeps 10 mantissa bits, ties away from zero (cvt.rna) */
    assert_true(cpu_mm_round(CL_MATMUL_FMT_TF32, 1.0f + 0x1p-11f) == 1.0f + 0x1p-10f);
    assert_true(cpu_mm_round(CL_MATMUL_FMT_TF32, -(1.0f + 0x1p-11f)) == -(1.0f + 0x1p-10f));
    assert_true(cpu_mm_round(CL_MATMUL_FMT_TF32, 1.0f + 0x1p-12f) == 1.0f);
    /* FP16: 10 bits, ties to even; subnormals in steps of 2^-24; past 65504 infinity */
    assert_true(cpu_mm_round(CL_MATMUL_FMT_FP16, 1.0f + 0x1p-11f) == 1.0f);
    assert_true(cpu_mm_round(CL_MATMUL_FMT_FP16, 1.0f + 3 * 0x1p-11f) == 1.0f + 0x1p-9f);
    assert_true(cpu_mm_round(CL_MATMUL_FMT_FP16, 0.1f) == 0.0999755859375f);
    assert_true(cpu_mm_round(CL_MATMUL_FMT_FP16, 0x1p-20f + 0x1p-25f) == 0x1p-20f);
    assert_true(cpu_mm_round(CL_MATMUL_FMT_FP16, 3 * 0x1p-25f) == 0x1p-23f);
    assert_true(cpu_mm_round(CL_MATMUL_FMT_FP16, 65504.0f) == 65504.0f);
    assert_true(isinf(cpu_mm_round(CL_MATMUL_FMT_FP16, 70000.0f)));
    /* BF16: 7 bits, ties to even, FP32's range */
    assert_true(cpu_mm_round(CL_MATMUL_FMT_BF16, 1.0f + 0x1p-8f) == 1.0f);
    assert_true(cpu_mm_round(CL_MATMUL_FMT_BF16, 1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);
    assert_true(cpu_mm_round(CL_MATMUL_FMT_BF16, 1e30f) != 1e30f && fabsf(cpu_mm_round(CL_MATMUL_FMT_BF16, 1e30f) / 1e30f - 1) < 0x1p-8f);
    assert_true(cpu_mm_round(CL_MATMUL_FMT_FP32, 0.1f) == 0.1f);
    assert_true(isnan(cpu_mm_round(CL_MATMUL_FMT_BF16, NAN)));
    /* names and tolerances: about 10 unit roundoffs, 5e-3 for an 11-bit significand as cuBLAS TF32 had */
    assert_int_equal(cl_matmul_format_of("bf16"), CL_MATMUL_FMT_BF16);
    assert_int_equal(cl_matmul_format_of("fp16"), CL_MATMUL_FMT_FP16);
    assert_int_equal(cl_matmul_format_of("fp64"), CL_MATMUL_FMT_FP32);
    assert_true(cl_matmul_tolerance(CL_MATMUL_FMT_TF32, true) == CL_MATMUL_TOL_TF32);
    assert_true(cl_matmul_tolerance(CL_MATMUL_FMT_FP16, false) == CL_MATMUL_TOL_TF32);
    assert_true(cl_matmul_tolerance(CL_MATMUL_FMT_BF16, true) == 8 * CL_MATMUL_TOL_TF32);
    assert_true(cl_matmul_tolerance(CL_MATMUL_FMT_FP32, true) == CL_MATMUL_TOL_FP32);
    assert_true(cl_matmul_tolerance(CL_MATMUL_FMT_FP32, false) == CL_MATMUL_TOL_FP32_FREI);
    assert_string_equal(cl_matmul_flags_precision(cl_matmul_variants[CL_MATMUL_V_WMMA_BF16].flags), "bf16");
    assert_string_equal(cl_matmul_flags_precision(cl_matmul_variants[CL_MATMUL_V_ASYNC].flags), "fp32");
    /* Hopper's half-precision rungs and their cuBLAS references: labelled (and so checked) as their format */
    assert_string_equal(cl_matmul_flags_precision(cl_matmul_variants[CL_MATMUL_V_WGMMA_FP16].flags), "fp16");
    assert_string_equal(cl_matmul_flags_precision(cl_matmul_variants[CL_MATMUL_V_WGMMA_BF16].flags), "bf16");
    assert_string_equal(cl_matmul_flags_precision(cl_matmul_variants[CL_MATMUL_V_CUBLAS_FP16].flags), "fp16");
    assert_string_equal(cl_matmul_flags_precision(cl_matmul_variants[CL_MATMUL_V_CUBLAS_BF16].flags), "bf16");
    assert_true(cl_matmul_variants[CL_MATMUL_V_WGMMA_FP16].flags & CL_MATMUL_SM90A);
    assert_true(cl_matmul_variants[CL_MATMUL_V_CUBLAS_BF16].flags & CL_MATMUL_SM80);
}

/* The wmma and wgmma analogues lose what their format loses: more than FP32's tolerance, within theirs. */
static void rounded_formats_lose_precision(void **state)
{
    (void)state;
    static const struct { const char *name, *precision; } runs[] = {
        {"wmma-tf32", "tf32"}, {"wmma-fp16", "fp16"}, {"wmma-bf16", "bf16"}, {"async", "fp32"},
        {"wgmma-fp16", "fp16"}, {"wgmma-bf16", "bf16"} };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        cl_matmul_result r;
        float *c = run_cpu(runs[i].name, 70, 90, 110, 16, &r);
        assert_string_equal(r.precision, runs[i].precision);
        cl_matmul_format fmt = cl_matmul_format_of(r.precision);
        cl_matmul_check chk;
        char err[CL_ERR_LEN];
        assert_int_equal(cl_matmul_verify(70, 90, 110, 5, c, fmt, &chk, err), 0);
        assert_true(chk.passed);
        if (fmt == CL_MATMUL_FMT_FP32)
            assert_true(chk.max_rel_err < CL_MATMUL_TOL_FP32);
        else
            assert_true(chk.max_rel_err > 10 * CL_MATMUL_TOL_FP32);
        free(c);
    }
}

/* ---- the magic ---- */

extern const magic_spec magic_matmul;

static void magic_all_variants_cpu(void **state)
{
    (void)state;
    sink s;
    magic_ctx ctx;
    assert_int_equal(run_quiet("%matmul --m 33 --n 17 --k 9 --variant all --tile 4,8 --reps 2 --warmup 0",
                              cl_cpu_backend(), &s, &ctx), 0);
    const json_t *runs = json_object_get(s.doc, "runs");
    /* the contract's rows in order, the CL_V_TILE ones (tiled, tiled-bt) at tiles 4 and 8, the others once */
    const char *want[2 * CL_MATMUL_NVARIANTS];
    size_t nwant = 0;
    for (int v = 0; v < CL_MATMUL_NVARIANTS; v++) {
        want[nwant++] = cl_matmul_variants[v].name;
        if (cl_matmul_variants[v].flags & CL_V_TILE)
            want[nwant++] = cl_matmul_variants[v].name;
    }
    assert_int_equal(json_array_size(runs), nwant);
    for (size_t i = 0; i < nwant; i++) {
        const json_t *r = run_at(&s, i);
        assert_string_equal(json_string_value(json_object_get(r, "variant")), want[i]);
        assert_string_equal(json_string_value(json_object_get(r, "backend")), "cpu");
        assert_int_equal(json_integer_value(json_object_get(r, "m")), 33);
        assert_true(json_is_true(json_object_get(json_object_get(r, "check"), "passed")));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "time_ms"), "reps")), 2);
        assert_true(json_is_number(json_object_get(r, "gflops")));
        assert_non_null(json_object_get(json_object_get(r, "model"), "smem_per_block"));
    }
    assert_string_equal(want[3], "tiled");     /* cpu, naive, naive-bt, tiled at 4, tiled at 8 */
    assert_int_equal(json_integer_value(json_object_get(run_at(&s, 3), "tile")), 4);
    assert_int_equal(json_integer_value(json_object_get(run_at(&s, 4), "tile")), 8);
    assert_true(json_is_null(json_object_get(run_at(&s, 1), "tile")));
    assert_string_equal(json_string_value(json_object_get(run_at(&s, 0), "precision")), "fp64");
    assert_string_equal(json_string_value(json_object_get(run_at(&s, 1), "precision")), "fp32");
    double cgma = json_real_value(json_object_get(json_object_get(run_at(&s, 1), "model"), "cgma"));
    assert_true(fabs(cgma - 1.0) < 1e-12);
    /* the host loop has no global memory: no traffic model, rather than a GPU kernel's CGMA 1 */
    assert_true(json_is_null(json_object_get(json_object_get(run_at(&s, 0), "model"), "cgma")));
    assert_true(json_is_null(json_object_get(json_object_get(run_at(&s, 0), "model"), "global_loads")));
    sink_free(&s, &ctx);

    assert_int_equal(run_quiet("%matmul --size 20 --variant naive --no-check --reps 1",
                              cl_cpu_backend(), &s, &ctx), 0);
    const json_t *chk = json_object_get(run_at(&s, 0), "check");
    assert_true(json_is_null(json_object_get(chk, "passed")));
    sink_free(&s, &ctx);
}

static void magic_refusals(void **state)
{
    (void)state;
    static const struct { const char *cell, *ename, *text; } cases[] = {
        {"%matmul --tile 12 --size 8", "UsageError", "TILE_WIDTH 2, 4, 8, 16 and 32"},
        {"%matmul --size 2^40", "MemoryError", "largest square size that fits"},
        {"%matmul --m 46341 --n 46341 --k 1 --variant naive --no-check", "UsageError", NULL},
        {"%matmul --size 2048 --variant cpu", "UsageError", "of host work"},
        {"%matmul --size 8,2048 --variant naive --reps 20", "UsageError", "--size 2048"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sink s;
        magic_ctx ctx;
        assert_int_equal(run_quiet(cases[i].cell, cl_cpu_backend(), &s, &ctx), -1);
        assert_string_equal(ctx.error.ename, cases[i].ename);
        if (cases[i].text && !strstr(ctx.error.evalue, cases[i].text))
            fail_msg("%s: %s", cases[i].cell, ctx.error.evalue);
        assert_int_equal(s.docs, 0);            /* refused before any point ran */
        sink_free(&s, &ctx);
    }
}

/* ---- a fake CUDA backend ---- */

static int fake_mode;                   /* 0: runs fine, 1: run fails, 2: C is wrong, 3: right, but checked
                                           one timed rep fewer than it ran (a harness that lost one) */

static int fake_count(int *count, char *err)
{
    (void)err;
    *count = 1;
    return 0;
}

static int fake_props(int dev, cl_device_props *p, char *err)
{
    (void)dev, (void)err;
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "Fake GPU");
    p->sm_count = 2, p->cores_per_sm = 128, p->clock_khz = 1000000;
    p->free_mem = 1ull << 30, p->l2_bytes = 1 << 20;
    return 0;
}

static int fake_versions(int dev, cl_versions *v, char *err)
{
    (void)dev, (void)err;
    memset(v, 0, sizeof *v);
    return 0;
}

static int fake_run(int variant, const cl_matmul_args *a, cl_matmul_result *out, char *err)
{
    if (!a->c) {                        /* --no-check: pretend, at any size */
        memset(out, 0, sizeof *out);
        out->times.reps = a->reps;
        for (int r = 0; r < a->reps; r++)
            out->times.ms[r] = 1.0f;
        return 0;
    }
    if (fake_mode == 1) {
        snprintf(err, CL_ERR_LEN, "mm_fast_kernel: an illegal memory access was encountered");
        return -1;
    }
    int rc = cl_cpu_backend()->matmul->run(id_of("cublas"), a, out, err);
    snprintf(out->precision, sizeof out->precision, "%s", cl_matmul_variants[variant].flags & CL_MATMUL_TF32 ? "tf32" : "fp32");
    if (rc == 0 && fake_mode == 2 && a->c)
        a->c[0] += 1.0f;
    if (rc == 0 && fake_mode == 3)
        out->times.reps_checked = out->times.reps - 1;
    return rc;
}

/* A GPU backend with two of the contract's variants. */
static bool fake_has(int v)
{
    return v == CL_MATMUL_V_FAST || v == CL_MATMUL_V_CUBLAS_TF32;
}
static const cl_matmul_ops fake_ops = { fake_has, fake_run, false };

/* whether the sweep asked for --check-reps all (it asks for the default again after the command) */
static int fake_check_all;
static void fake_set_check_reps(int all)
{
    fake_check_all |= all;
}
static const cl_backend fake_checking_backend = {
    .name = "cuda", .abi = CL_BACKEND_ABI, .device_count = fake_count, .device_props = fake_props,
    .versions = fake_versions, .matmul = &fake_ops, .set_check_reps = fake_set_check_reps,
};

static const cl_backend fake_backend = {
    .name = "cuda", .abi = CL_BACKEND_ABI, .device_count = fake_count, .device_props = fake_props,
    .versions = fake_versions, .matmul = &fake_ops,
};

static const cl_backend fake_without_matmul = {
    .name = "cuda", .abi = CL_BACKEND_ABI, .device_count = fake_count, .device_props = fake_props,
    .versions = fake_versions,
};

/* A GPU backend that counts (--counters): fixed counts, one of them missing (NaN). */
static int fake_counting;
static void fake_set_counters(int on)
{
    fake_counting = on;
}
static int fake_counters(cl_counters *out)
{
    if (!fake_counting)
        return -1;
    memset(out, 0, sizeof *out);
    out->measured = 1;
    out->passes = 4;
    snprintf(out->source, sizeof out->source, "hardware (fake)");
    out->dram_read_bytes = 4096, out->dram_write_bytes = 1024, out->l2_hit_pct = 50, out->l1_hit_pct = NAN;
    out->achieved_occupancy_pct = 25, out->shared_bank_conflicts = 0, out->global_load_sectors_per_request = 4;
    out->warp_execution_efficiency_pct = 100, out->flop = 2.0 * 16 * 16 * 16;
    return 0;
}
static const cl_backend fake_counting_backend = {
    .name = "cuda", .abi = CL_BACKEND_ABI, .device_count = fake_count, .device_props = fake_props,
    .versions = fake_versions, .matmul = &fake_ops, .set_counters = fake_set_counters, .counters = fake_counters,
};

/* The column headers of the view's table (the first table block). */
static bool has_column(const json_t *view, const char *header)
{
    size_t i, j;
    const json_t *b, *c;
    json_array_foreach(json_object_get(view, "blocks"), i, b)
        json_array_foreach(json_object_get(b, "columns"), j, c)
            if (strcmp(json_string_value(c), header) == 0)
                return true;
    return false;
}

/* The view's notes that hold part. */
static int notes_with(const json_t *view, const char *part)
{
    size_t i;
    const json_t *b;
    int count = 0;
    json_array_foreach(json_object_get(view, "blocks"), i, b)
        count += strcmp(json_string_value(json_object_get(b, "type")), "note") == 0 &&
                 strstr(json_string_value(json_object_get(b, "text")), part) != NULL;
    return count;
}

static bool has_note(const json_t *view, const char *part)
{
    return notes_with(view, part) > 0;
}

static void magic_counters(void **state)
{
    (void)state;
    sink s;
    magic_ctx ctx;
    fake_mode = 0;
    /* counted: the names, NaN as null, the matmul CGMA the DRAM saw, the model beside it in the table */
    assert_int_equal(run_quiet("%matmul --size 16 --variant fast --reps 1 --warmup 0 --counters",
                               &fake_counting_backend, &s, &ctx), 0);
    const json_t *c = json_object_get(run_at(&s, 0), "counters");
    assert_string_equal(json_string_value(json_object_get(c, "source")), "hardware (fake)");
    assert_int_equal(json_integer_value(json_object_get(c, "passes")), 4);
    assert_true(json_number_value(json_object_get(c, "dram_read_bytes")) == 4096);
    assert_true(json_is_null(json_object_get(c, "l1_hit_pct")));
    assert_true(fabs(json_number_value(json_object_get(c, "cgma_dram")) - 8192.0 / 1024) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(c, "flop_per_dram_byte")) - 8192.0 / 5120) < 1e-9);
    assert_true(has_column(s.view, "model MB") && has_column(s.view, "CGMA (DRAM)") &&
                has_column(s.view, "DRAM read MB") && has_column(s.view, "warp eff %"));
    assert_true(has_note(s.view, "performance counters"));
    assert_int_equal(fake_counting, 0);          /* asked again for the next command only */
    sink_free(&s, &ctx);

    /* --bandwidth: the bound from the model's CGMA and from the DRAM's */
    assert_int_equal(run_quiet("%matmul --size 16 --variant fast --reps 1 --warmup 0 --counters --bandwidth 150",
                               &fake_counting_backend, &s, &ctx), 0);
    c = json_object_get(run_at(&s, 0), "counters");
    assert_true(fabs(json_number_value(json_object_get(c, "bound_gflops")) - 150.0 / 4 * 8) < 1e-9);
    assert_true(has_column(s.view, "bound (DRAM)"));
    assert_false(has_column(s.view, "bound GFLOP/s"));  /* the fake's run has no traffic model: no bound */
    sink_free(&s, &ctx);

    /* not asked: no counters, no columns */
    assert_int_equal(run_quiet("%matmul --size 16 --variant fast --reps 1 --warmup 0", &fake_counting_backend, &s,
                               &ctx), 0);
    assert_null(json_object_get(run_at(&s, 0), "counters"));
    assert_false(has_column(s.view, "model MB") || has_column(s.view, "DRAM read MB"));
    sink_free(&s, &ctx);

    /* a backend without counters, and the host loop on a GPU run: unavailable, with the reason, no columns */
    assert_int_equal(run_quiet("%matmul --size 16 --variant cpu,fast --reps 1 --warmup 0 --counters", &fake_backend,
                               &s, &ctx), 0);
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(run_at(&s, 0), "counters"), "source")),
                           "unavailable: host code"));
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(run_at(&s, 1), "counters"), "source")),
                           "unavailable: the CPU backend has no hardware counters"));
    assert_true(has_note(s.view, "counters unavailable for cpu: host code"));
    sink_free(&s, &ctx);
    /* a reason two runs share is said once, naming both */
    assert_int_equal(run_quiet("%matmul --size 16 --variant cpu,fast,cublas-tf32 --reps 1 --warmup 0 --counters",
                               &fake_backend, &s, &ctx), 0);
    assert_int_equal(notes_with(s.view, "no hardware counters"), 1);
    assert_true(has_note(s.view, "counters unavailable for fast, cublas-tf32: the CPU backend"));
    assert_false(has_column(s.view, "DRAM read MB"));
    sink_free(&s, &ctx);
}

/* The counting GPU with a memory clock: a theoretical bandwidth of 2 × 1 GHz × 256 bits = 64 GB/s
 * beside its 512 GFLOP/s, so the ridge lies at 8 FLOP/byte (no copy is measured). */
static int fake_props_roofs(int dev, cl_device_props *p, char *err)
{
    int rc = fake_props(dev, p, err);
    p->mem_clock_khz = 1000000, p->mem_bus_width_bits = 256;
    return rc;
}
static const cl_backend fake_roofed_backend = {
    .name = "cuda", .abi = CL_BACKEND_ABI, .device_count = fake_count, .device_props = fake_props_roofs,
    .versions = fake_versions, .matmul = &fake_ops, .set_counters = fake_set_counters, .counters = fake_counters,
};

static double number_at(const json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

/* --roofline where only the counters can place a run (the fake's runs have no traffic model), under
 * the theoretical bandwidth; tensor cores and the host loop left off with their reasons; and a device
 * with no bandwidth at all: no chart, saying why. */
static void magic_roofline(void **state)
{
    (void)state;
    sink s;
    magic_ctx ctx;
    fake_mode = 0;
    assert_int_equal(run_quiet("%matmul --size 16 --variant cpu,fast,cublas-tf32 --reps 1 --warmup 0 --counters "
                               "--roofline", &fake_roofed_backend, &s, &ctx), 0);
    const json_t *roofs = json_object_get(s.doc, "roofline");
    assert_true(number_at(roofs, "peak_fp32_gflops") == 512 && number_at(roofs, "bandwidth_gbs") == 64);
    assert_string_equal(json_string_value(json_object_get(roofs, "bandwidth_source")), "theoretical");
    assert_true(number_at(roofs, "ridge_intensity") == 8);
    const json_t *fast = json_object_get(run_at(&s, 1), "roofline");
    assert_string_equal(json_string_value(json_object_get(fast, "intensity_source")), "counters");
    assert_true(fabs(number_at(fast, "intensity") - 8192.0 / 5120) < 1e-12);   /* FLOPs over DRAM bytes */
    assert_true(number_at(fast, "gflops") == number_at(run_at(&s, 1), "gflops"));
    assert_true(fabs(number_at(fast, "bound_gflops") - 64 * 1.6) < 1e-9);
    assert_true(fabs(number_at(fast, "pct_of_bound") - 100 * number_at(fast, "gflops") / (64 * 1.6)) < 1e-9);
    assert_string_equal(json_string_value(json_object_get(fast, "bound")), "memory");
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(run_at(&s, 0), "roofline"),
                                                             "left_off")), "host CPU"));
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(run_at(&s, 2), "roofline"),
                                                             "left_off")), "tensor cores"));
    assert_true(has_column(s.view, "% of roof"));
    assert_true(has_note(s.view, "the theoretical bandwidth (no copy was measured), 64 GB/s (ridge at 8 FLOP/byte)"));
    assert_true(has_note(s.view, "left off the roofline for cublas-tf32: tensor cores"));
    assert_int_equal(s.charts, 1);              /* the roofline; two runs have no sweep chart */
    sink_free(&s, &ctx);

    /* no counts and no model: no point; no bandwidth: no roofs, no chart */
    assert_int_equal(run_quiet("%matmul --size 16 --variant fast --reps 1 --warmup 0 --roofline", &fake_backend,
                               &s, &ctx), 0);
    roofs = json_object_get(s.doc, "roofline");
    assert_true(json_is_null(json_object_get(roofs, "bandwidth_gbs")) &&
                json_is_null(json_object_get(roofs, "ridge_intensity")));
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(run_at(&s, 0), "roofline"),
                                                             "left_off")), "no traffic model"));
    assert_true(has_note(s.view, "no roofline chart: the device reports no memory bandwidth"));
    assert_false(has_column(s.view, "% of roof"));
    assert_int_equal(s.charts, 0);
    sink_free(&s, &ctx);

    /* not asked: nothing */
    assert_int_equal(run_quiet("%matmul --size 16 --variant fast --reps 1 --warmup 0", &fake_roofed_backend, &s,
                               &ctx), 0);
    assert_null(json_object_get(s.doc, "roofline"));
    assert_null(json_object_get(run_at(&s, 0), "roofline"));
    sink_free(&s, &ctx);
}

/* check.reps_checked is what the backend says it checked, never what was asked: one fewer than the
 * timed reps, under --check-reps all too, is said ("drawn"), and the sweep still asked for all. */
static void magic_reps_checked_from_backend(void **state)
{
    (void)state;
    sink s;
    magic_ctx ctx;
    fake_mode = 0;
    fake_check_all = 0;
    assert_int_equal(run_quiet("%matmul --size 16 --variant fast --reps 4 --warmup 0 --check-reps all",
                               &fake_checking_backend, &s, &ctx), 0);
    const json_t *check = json_object_get(run_at(&s, 0), "check");
    assert_int_equal(fake_check_all, 1);
    assert_int_equal(json_integer_value(json_object_get(check, "reps_checked")), 4);
    assert_string_equal(json_string_value(json_object_get(check, "reps_check")), "all");
    /* said once: in the check, not left in the timings */
    assert_null(json_object_get(json_object_get(run_at(&s, 0), "time_ms"), "reps_checked"));
    sink_free(&s, &ctx);

    fake_mode = 3;
    assert_int_equal(run_quiet("%matmul --size 16 --variant fast --reps 4 --warmup 0 --check-reps all",
                               &fake_checking_backend, &s, &ctx), 0);
    check = json_object_get(run_at(&s, 0), "check");
    assert_true(json_is_true(json_object_get(check, "passed")));
    assert_int_equal(json_integer_value(json_object_get(check, "reps_checked")), 3);
    assert_string_equal(json_string_value(json_object_get(check, "reps_check")), "drawn");
    sink_free(&s, &ctx);
    fake_mode = 0;

    /* --no-check: nothing checked, nothing said */
    assert_int_equal(run_quiet("%matmul --size 16 --variant fast --reps 2 --no-check", &fake_checking_backend,
                               &s, &ctx), 0);
    assert_null(json_object_get(json_object_get(run_at(&s, 0), "check"), "reps_checked"));
    sink_free(&s, &ctx);
}

/* The device budget counts the copies of C that --check-reps all keeps (one per timed rep: --reps N,
 * or the CL_REPS_AUTO_MIN --reps auto always runs), so a size that fits two drawn copies but not
 * those is refused before anything runs, saying how many copies and the largest size that does fit. */
static void magic_check_reps_all_budget(void **state)
{
    (void)state;
    sink s;
    magic_ctx ctx;
    fake_mode = 0;
    /* 1 GiB free, twice the 1 MiB L2 reserved: 4000² floats × (3 + 2) fit, × (3 + 50) do not; 6000²
     * × (3 + 2) fit, × (3 + 10) do not */
    assert_int_equal(run_quiet("%matmul --size 4000 --variant fast --reps 50 --no-check", &fake_checking_backend,
                               &s, &ctx), 0);
    sink_free(&s, &ctx);
    static const struct { const char *cell; int copies; } refused[] = {
        {"%matmul --size 4000 --variant fast --reps 50 --no-check --check-reps all", 50},
        {"%matmul --size 6000 --variant fast --reps auto --no-check --check-reps all", CL_REPS_AUTO_MIN},
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        assert_int_equal(run_quiet(refused[i].cell, &fake_checking_backend, &s, &ctx), -1);
        assert_string_equal(ctx.error.ename, "MemoryError");
        assert_int_equal(s.docs, 0);            /* refused up front, not failed mid-run */
        char copies[64], largest[64];
        snprintf(copies, sizeof copies, "%d copies of C kept", refused[i].copies);
        snprintf(largest, sizeof largest, "largest square size that fits: %lld",
                 (long long)floor(sqrt((double)((1ull << 30) - (2u << 20)) / (4.0 * (3 + refused[i].copies)))));
        if (!strstr(ctx.error.evalue, copies) || !strstr(ctx.error.evalue, largest))
            fail_msg("%s: %s (wanted '%s' and '%s')", refused[i].cell, ctx.error.evalue, copies, largest);
        sink_free(&s, &ctx);
    }
}

static void magic_fake_gpu(void **state)
{
    (void)state;
    sink s;
    magic_ctx ctx;
    fake_mode = 0;
    assert_int_equal(run_quiet("%matmul --size 16 --variant all --reps 1 --warmup 0", &fake_backend, &s, &ctx), 0);
    /* all = the host loop + the backend's table */
    assert_int_equal(json_array_size(json_object_get(s.doc, "runs")), 3);
    assert_string_equal(json_string_value(json_object_get(run_at(&s, 0), "backend")), "cpu");
    assert_string_equal(json_string_value(json_object_get(run_at(&s, 1), "backend")), "cuda");
    const json_t *tf32 = run_at(&s, 2);
    assert_string_equal(json_string_value(json_object_get(tf32, "precision")), "tf32");
    assert_true(json_real_value(json_object_get(json_object_get(tf32, "check"), "tolerance")) == CL_MATMUL_TOL_TF32);
    /* % of the fake's peak: 2 × 2 SMs × 128 cores × 1 GHz = 512 GFLOP/s */
    double g = json_number_value(json_object_get(run_at(&s, 1), "gflops"));
    double pct = json_number_value(json_object_get(run_at(&s, 1), "pct_of_peak"));
    assert_true(fabs(pct - 100.0 * g / 512.0) < 1e-6 * (pct + 1));
    sink_free(&s, &ctx);

    /* the host loop is left out of `all` where it would exceed the host limit */
    assert_int_equal(run_quiet("%matmul --size 3300 --variant all --reps 1 --warmup 0 --no-check",
                              &fake_backend, &s, &ctx), 0);
    assert_int_equal(json_array_size(json_object_get(s.doc, "runs")), 2);
    assert_string_equal(json_string_value(json_object_get(run_at(&s, 0), "variant")), "fast");
    sink_free(&s, &ctx);

    assert_int_equal(run_quiet("%matmul --size 10000 --variant fast", &fake_backend, &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "MemoryError");
    assert_non_null(strstr(ctx.error.evalue, "device memory"));
    sink_free(&s, &ctx);

    assert_int_equal(run_quiet("%matmul --size 8 --variant naive", &fake_backend, &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "UsageError");
    assert_non_null(strstr(ctx.error.evalue, "not available on the cuda backend"));
    sink_free(&s, &ctx);

    fake_mode = 1;
    assert_int_equal(run_quiet("%matmul --size 8 --variant fast", &fake_backend, &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "CudaError");
    assert_non_null(strstr(ctx.error.evalue, "illegal memory access"));
    sink_free(&s, &ctx);

    fake_mode = 2;
    assert_int_equal(run_quiet("%matmul --size 8 --variant fast --reps 1", &fake_backend, &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "CheckError");
    assert_int_equal(s.docs, 1);                /* the table is shown, then the cell fails */
    sink_free(&s, &ctx);

    assert_int_equal(run_quiet("%matmul --size 8", &fake_without_matmul, &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "RuntimeError");
    sink_free(&s, &ctx);

    assert_int_equal(run_quiet("%matmul --size 8", NULL, &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "RuntimeError");
    sink_free(&s, &ctx);
    fake_mode = 0;
}

/* A GPU backend that has the Hopper-only variant, on a device of compute capability fake_cc.0. */
static int fake_cc = 8;
static int fake_props_cc(int dev, cl_device_props *p, char *err)
{
    int rc = fake_props(dev, p, err);
    p->cc_major = fake_cc;
    return rc;
}
static bool fake_has_wgmma(int v)
{
    return v == CL_MATMUL_V_FAST || v == CL_MATMUL_V_WGMMA_TF32;
}
static const cl_matmul_ops fake_wgmma_ops = { fake_has_wgmma, fake_run, false };
static const cl_backend fake_wgmma_backend = {
    .name = "cuda", .abi = CL_BACKEND_ABI, .device_count = fake_count, .device_props = fake_props_cc,
    .versions = fake_versions, .matmul = &fake_wgmma_ops,
};

static const char *variant_at(sink *s, size_t i)
{
    return json_string_value(json_object_get(run_at(s, i), "variant"));
}

/* CL_MATMUL_SM90A: `all` takes wgmma-tf32 on a compute capability 9.0 device only; named, it
 * reaches the backend anywhere (which refuses it saying why). */
static void magic_sm90a_only_where_it_runs(void **state)
{
    (void)state;
    sink s;
    magic_ctx ctx;
    fake_mode = 0;
    fake_cc = 8;
    assert_int_equal(run_quiet("%matmul --size 16 --variant all --reps 1 --warmup 0", &fake_wgmma_backend, &s, &ctx), 0);
    assert_int_equal(json_array_size(json_object_get(s.doc, "runs")), 2);         /* cpu, fast */
    assert_string_equal(variant_at(&s, 1), "fast");
    sink_free(&s, &ctx);
    assert_int_equal(run_quiet("%matmul --size 16 --variant wgmma-tf32 --reps 1 --warmup 0", &fake_wgmma_backend, &s,
                               &ctx), 0);
    assert_string_equal(variant_at(&s, 0), "wgmma-tf32");
    assert_string_equal(json_string_value(json_object_get(run_at(&s, 0), "precision")), "tf32");
    sink_free(&s, &ctx);

    fake_cc = 9;
    assert_int_equal(run_quiet("%matmul --size 16 --variant all --reps 1 --warmup 0", &fake_wgmma_backend, &s, &ctx), 0);
    assert_int_equal(json_array_size(json_object_get(s.doc, "runs")), 3);
    assert_string_equal(variant_at(&s, 2), "wgmma-tf32");
    sink_free(&s, &ctx);
    fake_cc = 8;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_variant_matches_the_product),
        cmocka_unit_test(tile_range_is_the_lists),
        cmocka_unit_test(launch_and_model),
        cmocka_unit_test(run_errors),
        cmocka_unit_test(check_catches_wrong_elements),
        cmocka_unit_test(freivalds_beyond_512_cubed),
        cmocka_unit_test(generator_and_threads),
        cmocka_unit_test(transposed_fill),
        cmocka_unit_test(rounding_to_formats),
        cmocka_unit_test(rounded_formats_lose_precision),
        cmocka_unit_test(magic_all_variants_cpu),
        cmocka_unit_test(magic_refusals),
        cmocka_unit_test(magic_fake_gpu),
        cmocka_unit_test(magic_reps_checked_from_backend),
        cmocka_unit_test(magic_check_reps_all_budget),
        cmocka_unit_test(magic_counters),
        cmocka_unit_test(magic_roofline),
        cmocka_unit_test(magic_sm90a_only_where_it_runs),
    };
    return cmocka_run_group_tests_name("matmul", tests, NULL, NULL);
}
