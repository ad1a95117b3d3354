/* test_reduce.c — %reduce on the CPU backend: every variant's CPU analogue
 * against the host reference (odd sizes, every block, op and dtype), the ops
 * table's timed runs, the check's tolerance, and the magic's error paths
 * (bad block, absurd sizes, missing backend, failed checks) run end to end.
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

#include "../cpu/reduce_cpu.h"
#include "lang/lang.h"
#include "magic/magic.h"
#include "cudalab/reduce.h"
#include "magics/reduce_internal.h"

#include "magic_sink.h"

extern const magic_spec magic_reduce;

#define assert_contains(hay, needle) do {                                         \
        if (!strstr((hay), (needle)))                                             \
            fail_msg("'%s'\n  does not contain '%s'", (hay), (needle));           \
    } while (0)

static const uint64_t sizes[] = {1, 2, 3, 5, 63, 64, 65, 511, 512, 513, 4097, 100003, 1u << 17};
static const int blocks[] = {32, 64, 256, 1024};

/* The reference value of (a->op) for the input of a. */
static double ref_value(const cl_reduce_args *a, const cl_reduce_ref *r)
{
    if (a->dtype == CL_REDUCE_INT)
        return (double)(a->op == CL_REDUCE_SUM ? r->isum : a->op == CL_REDUCE_MAX ? r->imax : r->imin);
    return a->op == CL_REDUCE_SUM ? r->sum : a->op == CL_REDUCE_MAX ? r->max : r->min;
}

/* Float sums within the magic's own bound; everything else exact. */
static void assert_matches(const cl_reduce_args *a, const cl_reduce_ref *r, double got, const char *what)
{
    double want = ref_value(a, r);
    if (a->dtype == CL_REDUCE_FLOAT && a->op == CL_REDUCE_SUM) {
        double lg = log2((double)a->n), scale = fmax(fabs(r->sum), sqrt(r->sum_sq));
        double tol = 1e-5 * fmax(lg, 1.0) * scale;
        if (!(fabs(got - want) <= tol))
            fail_msg("%s n=%llu block=%d: sum %.9g, reference %.9g (tol %.3g)", what,
                     (unsigned long long)a->n, a->block, got, want, tol);
    } else if (got != want) {
        fail_msg("%s n=%llu block=%d dtype=%d op=%d: %.9g, reference %.9g", what,
                 (unsigned long long)a->n, a->block, a->dtype, a->op, got, want);
    }
}

/* ---- the CPU analogues, directly (no timing, no flush) ---- */

static void analogues_match_reference(void **state)
{
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int dt = 0; dt < 2; dt++) {
            cl_reduce_args a = {.n = sizes[si], .dtype = (cl_reduce_dtype)dt, .seed = 7, .reps = 1};
            cl_reduce_ref ref;
            char err[CL_ERR_LEN];
            assert_int_equal(cl_reduce_reference(a.n, a.dtype, a.seed, &ref, err), 0);
            void *in = malloc(a.n * 4);
            assert_non_null(in);
            assert_int_equal(cpu_reduce_fill(in, a.n, a.dtype, a.seed, 3), 0);
            for (int op = 0; op < 3; op++) {
                a.op = (cl_reduce_op)op;
                int ok = 0;
                assert_matches(&a, &ref, cpu_reduce_chunked(&a, in, 4, &ok), "chunked");
                assert_true(ok);
                for (int v = CL_REDUCE_DIVERGENT; v <= CL_REDUCE_FAST; v++)
                    for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
                        a.block = blocks[bi];
                        cpu_launch_cfg cfg = cpu_reduce_config(v, &a);
                        double *part = malloc(cfg.grid * sizeof *part);
                        assert_non_null(part);
                        double got = cpu_reduce_variant(v, &a, &cfg, in, part, &ok);
                        assert_true(ok);
                        assert_matches(&a, &ref, got, magic_reduce.name);
                        free(part);
                    }
            }
            free(in);
        }
}

/* Grids as the CUDA backend plans them: 2B per block, 16B for multiblock. */
static void launch_configs(void **state)
{
    cl_reduce_args a = {.n = 1000, .block = 256};
    assert_int_equal(cpu_reduce_config(CL_REDUCE_DIVERGENT, &a).grid, 2);
    assert_int_equal(cpu_reduce_config(CL_REDUCE_CONVERGENT, &a).grid, 2);
    assert_int_equal(cpu_reduce_config(CL_REDUCE_MULTIBLOCK, &a).grid, 1);
    a.n = 1u << 20;
    assert_int_equal(cpu_reduce_config(CL_REDUCE_CONVERGENT, &a).grid, 2048);
    assert_int_equal(cpu_reduce_config(CL_REDUCE_MULTIBLOCK, &a).grid, 256);
    assert_true(cpu_reduce_config(CL_REDUCE_FAST, &a).grid <= 128);
    a.n = 3;
    assert_int_equal(cpu_reduce_config(CL_REDUCE_FAST, &a).grid, 1);
}

/* Same seed, same numbers; another seed, another input. */
static void deterministic(void **state)
{
    cl_reduce_ref r1, r2, r3;
    char err[CL_ERR_LEN];
    assert_int_equal(cl_reduce_reference(100003, CL_REDUCE_FLOAT, 1, &r1, err), 0);
    assert_int_equal(cl_reduce_reference(100003, CL_REDUCE_FLOAT, 1, &r2, err), 0);
    assert_int_equal(cl_reduce_reference(100003, CL_REDUCE_FLOAT, 2, &r3, err), 0);
    assert_true(r1.sum == r2.sum && r1.sum_sq == r2.sum_sq);
    assert_true(r1.sum != r3.sum);
    assert_true(r1.max < 1.0 && r1.min >= -1.0 && r1.sum_sq > 0);
    assert_int_equal(cl_reduce_reference(100003, CL_REDUCE_INT, 1, &r1, err), 0);
    assert_true(r1.imax <= CL_REDUCE_INT_HI && r1.imin >= CL_REDUCE_INT_LO);
}

/* ---- the ops table: timing, launch, labels ---- */

/* The CPU analogue reports the GPU variant's shared memory for the same
 * parameters (the accumulator the GPU keeps, not the emulation's doubles):
 * 256 float sums of 4 bytes are 1024 B, int sums add in int64. */
static void analogue_smem_is_the_gpus(void **state)
{
    (void)state;
    const cl_reduce_ops *ops = cl_cpu_backend()->reduce;
    static const struct { int v; cl_reduce_op op; cl_reduce_dtype dtype; size_t smem, final; } cases[] = {
        {CL_REDUCE_DIVERGENT, CL_REDUCE_SUM, CL_REDUCE_FLOAT, 1024, 4096},
        {CL_REDUCE_CONVERGENT, CL_REDUCE_MAX, CL_REDUCE_FLOAT, 1024, 4096},
        {CL_REDUCE_MULTIBLOCK, CL_REDUCE_SUM, CL_REDUCE_INT, 2048, 8192},
        {CL_REDUCE_FAST, CL_REDUCE_SUM, CL_REDUCE_FLOAT, 128, 128},
        {CL_REDUCE_FAST, CL_REDUCE_SUM, CL_REDUCE_INT, 256, 256},
        {CL_REDUCE_CPU, CL_REDUCE_SUM, CL_REDUCE_FLOAT, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cl_reduce_args a = {.n = 1 << 20, .op = cases[i].op, .dtype = cases[i].dtype, .block = 256,
                            .seed = 1, .reps = 1, .warmup = 0};
        cl_reduce_result r;
        char err[CL_ERR_LEN] = "";
        assert_int_equal(ops->run(cases[i].v, &a, &r, err), 0);
        assert_int_equal(r.launch.smem_bytes, cases[i].smem);
        assert_int_equal(r.launch.smem_bytes, cl_reduce_smem_per_block(cases[i].v, 256, cl_reduce_acc_bytes(a.op, a.dtype)));
        if (cases[i].v != CL_REDUCE_CPU)
            assert_int_equal(r.final.smem_bytes, cases[i].final);
    }
}

static void ops_run_every_variant(void **state)
{
    const cl_reduce_ops *ops = cl_cpu_backend()->reduce;
    assert_non_null(ops);
    for (int v = 0; v < CL_REDUCE_NVARIANTS; v++) {
        cl_reduce_args a = {.n = 70001, .op = CL_REDUCE_SUM, .dtype = CL_REDUCE_INT, .block = 128,
                            .seed = 3, .reps = 3, .warmup = 1};
        cl_reduce_result *r = malloc(sizeof *r);
        char err[CL_ERR_LEN] = "";
        assert_int_equal(ops->run(v, &a, r, err), 0);
        cl_reduce_ref ref;
        assert_int_equal(cl_reduce_reference(a.n, a.dtype, a.seed, &ref, err), 0);
        assert_true(r->ivalue == ref.isum);
        assert_int_equal(r->times.reps, 3);
        for (int k = 0; k < 3; k++)
            assert_true(r->times.ms[k] >= 0);
        assert_true(r->launch.kernels >= 1);
        assert_true(strncmp(r->impl, "CPU", 3) == 0);
        if (v == CL_REDUCE_CONVERGENT) {
            assert_int_equal(r->launch.grid[0], (70001 + 255) / 256);
            assert_int_equal(r->launch.block[0], 128);
            assert_int_equal(r->launch.kernels, 2);
            assert_int_equal(r->final.block[0], CL_REDUCE_FINAL_BLOCK);
        }
        if (v == CL_REDUCE_CUB)
            assert_contains(r->impl, "CPU reference");
        assert_int_equal(family_builtin(&reduce_family, cl_reduce_variants[v].name), v);
        free(r);
    }
    char err[CL_ERR_LEN] = "";
    cl_reduce_result r;
    cl_reduce_args a = {.n = 10, .block = 32, .reps = 1};
    assert_int_equal(ops->run(CL_REDUCE_NVARIANTS, &a, &r, err), -1);
    assert_contains(err, "unknown");
}

static void bandwidth_cached(void **state)
{
    double a = 0, b = 0;
    char err[CL_ERR_LEN];
    assert_int_equal(cl_cpu_backend()->copy_bandwidth(&a, err), 0);
    assert_int_equal(cl_cpu_backend()->copy_bandwidth(&b, err), 0);
    assert_true(a > 0.1);
    assert_true(a == b);
}

/* ---- the check ---- */

static void check_tolerance(void **state)
{
    magic_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    rd_env env;
    memset(&env, 0, sizeof env);
    cl_reduce_args a = {.n = 1u << 16, .op = CL_REDUCE_SUM, .dtype = CL_REDUCE_FLOAT, .seed = 5};
    cl_reduce_ref ref;
    char err[CL_ERR_LEN];
    assert_int_equal(cl_reduce_reference(a.n, a.dtype, a.seed, &ref, err), 0);
    cl_reduce_result r;
    memset(&r, 0, sizeof r);
    r.fvalue = ref.sum + 1e-3;                       /* well inside 1.6e-4 * ~148 */
    json_t *c = rd_check(&ctx, &env, &a, &r);
    assert_true(json_is_true(json_object_get(c, "passed")));
    assert_true(fabs(json_real_value(json_object_get(c, "tolerance")) - 1.6e-4) < 1e-12);
    json_decref(c);
    r.fvalue = ref.sum + 0.5;                        /* one element lost */
    c = rd_check(&ctx, &env, &a, &r);
    assert_true(json_is_false(json_object_get(c, "passed")));
    json_decref(c);
    r.fvalue = NAN;
    c = rd_check(&ctx, &env, &a, &r);
    assert_true(json_is_false(json_object_get(c, "passed")));
    json_decref(c);
    a.dtype = CL_REDUCE_INT;
    assert_int_equal(cl_reduce_reference(a.n, a.dtype, a.seed, &ref, err), 0);
    r.ivalue = ref.isum + 1;
    c = rd_check(&ctx, &env, &a, &r);
    assert_true(json_is_false(json_object_get(c, "passed")));
    assert_int_equal(json_integer_value(json_object_get(c, "abs_err")), 1);
    json_decref(c);
    a.op = CL_REDUCE_MAX;
    r.ivalue = ref.imax;
    c = rd_check(&ctx, &env, &a, &r);
    assert_true(json_is_true(json_object_get(c, "passed")));
    json_decref(c);
}


/* ---- the magic, end to end ---- */

static json_t *runs_of(const sink *s)
{
    return json_object_get(s->doc, "runs");
}

static void magic_every_variant(void **state)
{
    sink s;
    magic_ctx ctx;
    int rc = run_cell("%reduce --size 1001 --reps 2 --warmup 0 --dtype float,int --op sum,max",
                      cl_cpu_backend(), &s, &ctx);
    if (rc)
        fail_msg("%s: %s", ctx.error.ename, ctx.error.evalue);
    json_t *runs = runs_of(&s);
    assert_int_equal(json_array_size(runs), 2 * 2 * CL_REDUCE_NVARIANTS);
    size_t i;
    json_t *r;
    json_array_foreach(runs, i, r) {
        assert_true(json_is_true(json_object_get(json_object_get(r, "check"), "passed")));
        assert_string_equal(json_string_value(json_object_get(r, "backend")), "cpu");
        assert_int_equal(json_integer_value(json_object_get(r, "size")), 1001);
        assert_true(json_number_value(json_object_get(r, "gbs")) > 0);
        assert_non_null(json_object_get(r, "value"));
        assert_true(json_is_object(json_object_get(r, "launch")));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "time_ms"), "reps")), 2);
    }
    assert_string_equal(json_string_value(json_object_get(s.doc, "magic")), "reduce");
    sink_free(&s, &ctx);
}

static void magic_block_sweep(void **state)
{
    sink s;
    magic_ctx ctx;
    int rc = run_cell("%reduce -n 5000 --reps 1 --warmup 0 -v cpu,convergent,cub --block 32,64",
                      cl_cpu_backend(), &s, &ctx);
    if (rc)
        fail_msg("%s: %s", ctx.error.ename, ctx.error.evalue);
    json_t *runs = runs_of(&s);
    assert_int_equal(json_array_size(runs), 4);     /* cpu and cub once, convergent twice */
    int convergent = 0;
    size_t i;
    json_t *r;
    json_array_foreach(runs, i, r) {
        const char *v = json_string_value(json_object_get(r, "variant"));
        if (strcmp(v, "convergent") == 0)
            convergent++;
        else
            assert_true(json_is_null(json_object_get(r, "block")));
    }
    assert_int_equal(convergent, 2);
    sink_free(&s, &ctx);
}

static void magic_no_check(void **state)
{
    sink s;
    magic_ctx ctx;
    assert_int_equal(run_cell("%reduce --size 77 --reps 1 -v fast --no-check", cl_cpu_backend(), &s, &ctx), 0);
    json_t *c = json_object_get(json_array_get(runs_of(&s), 0), "check");
    assert_true(json_is_null(json_object_get(c, "passed")));
    assert_contains(json_string_value(json_object_get(c, "method")), "skipped");
    sink_free(&s, &ctx);
}

static void magic_usage_errors(void **state)
{
    sink s;
    magic_ctx ctx;
    assert_int_equal(run_cell("%reduce --size 100 --block 48", cl_cpu_backend(), &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "UsageError");
    assert_contains(ctx.error.evalue, "--block 48");
    assert_contains(ctx.error.evalue, "power of two");
    assert_int_equal(run_cell("%reduce --size 100 --block 64,96", cl_cpu_backend(), &s, &ctx), -1);
    assert_contains(ctx.error.evalue, "--block 96");
    assert_int_equal(run_cell("%reduce --size 100 --block 2048", cl_cpu_backend(), &s, &ctx), 2);
    assert_contains(ctx.error.evalue, "block");
    assert_int_equal(run_cell("%reduce --size 0", cl_cpu_backend(), &s, &ctx), 2);
    assert_int_equal(run_cell("%reduce --variant convergnt", cl_cpu_backend(), &s, &ctx), 2);
    assert_contains(ctx.error.evalue, "convergent");
    assert_int_equal(run_cell("%reduce --op prod", cl_cpu_backend(), &s, &ctx), 2);
    assert_contains(ctx.error.evalue, "sum");
    assert_int_equal(run_cell("%reduce --dtype double", cl_cpu_backend(), &s, &ctx), 2);
    assert_null(s.doc);
}

static void magic_absurd_size(void **state)
{
    sink s;
    magic_ctx ctx;
    assert_int_equal(run_cell("%reduce --size 2^50", cl_cpu_backend(), &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "MemoryError");
    assert_contains(ctx.error.evalue, "--size 2^50 needs 4.1 PiB of host memory");
    assert_contains(ctx.error.evalue, "largest size that fits");
    assert_null(s.doc);
}

/* ---- a fake GPU backend: 1 GiB free, a table that answers what we tell it ---- */

static int fake_mode;               /* 0: right answers, 1: wrong answers, 2: fail */

static int fake_count(int *count, char *err)
{
    *count = 1;
    return 0;
}

static int fake_props(int dev, cl_device_props *p, char *err)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "Fake GPU");
    p->cc_major = 9;
    p->sm_count = 132;
    p->free_mem = 1ull << 30;
    p->total_mem = 2ull << 30;
    return 0;
}

static int fake_versions(int dev, cl_versions *v, char *err)
{
    memset(v, 0, sizeof *v);
    snprintf(v->arch, sizeof v->arch, "sm_90 SASS");
    return 0;
}

static int fake_bandwidth(double *gbs, char *err)
{
    *gbs = 3000;
    return 0;
}

static int fake_run(int v, const cl_reduce_args *a, cl_reduce_result *out, char *err)
{
    if (fake_mode == 2) {
        snprintf(err, CL_ERR_LEN, "cudaMalloc: out of memory");
        return -1;
    }
    memset(out, 0, sizeof *out);
    cl_reduce_ref ref;
    if (cl_reduce_reference(a->n, a->dtype, a->seed, &ref, err))
        return -1;
    out->ivalue = ref.isum + (fake_mode == 1);
    out->fvalue = ref.sum + (fake_mode == 1 ? 100.0 : 0.0);
    out->times.reps = a->reps;
    for (int k = 0; k < a->reps; k++)
        out->times.ms[k] = 0.5f;
    snprintf(out->impl, sizeof out->impl, "fake");
    return 0;
}

static uint64_t fake_overhead(const cl_reduce_args *a)
{
    return 64u << 20;
}

static const cl_reduce_ops fake_ops = {fake_run, fake_overhead, false};
static const cl_backend fake_gpu = {.name = "cuda", .abi = CL_BACKEND_ABI, .device_count = fake_count,
                                    .device_props = fake_props, .versions = fake_versions,
                                    .copy_bandwidth = fake_bandwidth, .reduce = &fake_ops};
static const cl_backend fake_bare = {.name = "cuda", .abi = CL_BACKEND_ABI, .device_count = fake_count,
                                     .device_props = fake_props, .versions = fake_versions};

static void magic_fake_gpu(void **state)
{
    sink s;
    magic_ctx ctx;

    fake_mode = 0;
    int rc = run_cell("%reduce --size 2^20 --reps 2 --warmup 0 -v fast,cpu --dtype int", &fake_gpu, &s, &ctx);
    if (rc)
        fail_msg("%s: %s", ctx.error.ename, ctx.error.evalue);
    json_t *fast = json_array_get(runs_of(&s), 0);      /* a list keeps the order it was given in */
    assert_string_equal(json_string_value(json_object_get(fast, "variant")), "fast");
    assert_string_equal(json_string_value(json_object_get(fast, "backend")), "cuda");
    /* 4 MiB in 0.5 ms = 8.39 GB/s, of 3000 GB/s */
    assert_true(fabs(json_number_value(json_object_get(fast, "gbs")) - 8.388608) < 1e-6);
    assert_true(fabs(json_number_value(json_object_get(fast, "pct_of_bandwidth")) - 0.2796202667) < 1e-6);
    json_t *cpu = json_array_get(runs_of(&s), 1);
    assert_string_equal(json_string_value(json_object_get(cpu, "backend")), "cpu");
    sink_free(&s, &ctx);

    fake_mode = 1;
    assert_int_equal(run_cell("%reduce --size 1000 --reps 1 -v fast --dtype float,int", &fake_gpu, &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "CheckError");
    assert_contains(ctx.error.evalue, "2 of 2 runs");
    assert_non_null(s.doc);                         /* the table is still shown */
    sink_free(&s, &ctx);

    fake_mode = 2;
    assert_int_equal(run_cell("%reduce --size 1000 --reps 1 -v fast", &fake_gpu, &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "CudaError");
    assert_contains(ctx.error.evalue, "cudaMalloc: out of memory");
    sink_free(&s, &ctx);

    assert_int_equal(run_cell("%reduce --size 2^30 -v fast", &fake_gpu, &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "MemoryError");
    assert_contains(ctx.error.evalue, "of device memory; this device has 1.0 GiB free");
    assert_contains(ctx.error.evalue, "largest size that fits: 251658240");
    fake_mode = 0;
}

static void magic_missing_backend(void **state)
{
    sink s;
    magic_ctx ctx;
    assert_int_equal(run_cell("%reduce --size 10", &fake_bare, &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "RuntimeError");
    assert_contains(ctx.error.evalue, "without %reduce");
    assert_int_equal(run_cell("%reduce --size 10", NULL, &s, &ctx), -1);
    assert_contains(ctx.error.evalue, "device worker");
}

static void help_text(void **state)
{
    char *h = magic_help_text(NULL, &magic_reduce);
    assert_contains(h, "divergent");
    assert_contains(h, "__shfl_down_sync");
    assert_contains(h, "second kernel");
    assert_contains(h, "--block");
    free(h);
}

#define REDUCE_MAGIC_TESTS                                                                 \
    cmocka_unit_test(magic_every_variant), cmocka_unit_test(magic_block_sweep),           \
    cmocka_unit_test(magic_no_check), cmocka_unit_test(magic_usage_errors),               \
    cmocka_unit_test(magic_absurd_size), cmocka_unit_test(magic_fake_gpu),                \
    cmocka_unit_test(magic_missing_backend), cmocka_unit_test(help_text),

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(analogues_match_reference),
        cmocka_unit_test(launch_configs),
        cmocka_unit_test(deterministic),
        cmocka_unit_test(ops_run_every_variant),
        cmocka_unit_test(analogue_smem_is_the_gpus),
        cmocka_unit_test(bandwidth_cached),
        cmocka_unit_test(check_tolerance),
        REDUCE_MAGIC_TESTS
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
