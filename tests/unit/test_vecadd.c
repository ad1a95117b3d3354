/* test_vecadd.c — %vecadd on the CPU backend: the ops table's runs against the
 * host's exact values (odd sizes, both ops, both memory kinds), the exact
 * check catching a single wrong bit, and the magic's paths end to end: the
 * run objects and headline, bad blocks, absurd sizes (host and a fake device),
 * a missing backend and a failed check.
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
#include "cudalab/vecadd.h"
#include "magic_sink.h"

#define assert_contains(hay, needle) do {                                         \
        if (!strstr((hay), (needle)))                                             \
            fail_msg("'%s'\n  does not contain '%s'", (hay), (needle));           \
    } while (0)

static const uint64_t sizes[] = {1, 2, 31, 32, 33, 255, 1000, 4097, 100003};

static void ops_exact_every_size(void **state)
{
    (void)state;
    const cl_vecadd_ops *ops = cl_cpu_backend()->vecadd;
    assert_non_null(ops);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int op = 0; op < CL_VECADD_NOPS; op++)
            for (int pinned = 0; pinned < 2; pinned++) {
                cl_vecadd_args a = {.n = sizes[si], .op = (cl_vecadd_op)op, .pinned = pinned, .block = 64,
                                    .alpha = -1.75, .seed = 9, .reps = 2, .warmup = 1, .check = 1};
                cl_vecadd_result r;
                char err[CL_ERR_LEN] = "";
                if (ops->run(&a, &r, err))
                    fail_msg("run: %s", err);
                if (r.mismatches)
                    fail_msg("n=%llu op=%d: %llu mismatches, first %llu: %.17g vs %.17g",
                             (unsigned long long)a.n, op, (unsigned long long)r.mismatches,
                             (unsigned long long)r.first_bad, r.got, r.want);
                assert_int_equal(r.h2d.reps, 2);
                assert_int_equal(r.kernel.reps, 2);
                assert_int_equal(r.d2h.reps, 2);
                assert_contains(r.impl, "memcpy");
            }
}

static void verify_catches_one_ulp(void **state)
{
    (void)state;
    cl_vecadd_args a = {.n = 1000, .op = CL_VECADD_DAXPY, .alpha = 2.5, .seed = 3};
    double *out = malloc(a.n * sizeof *out);
    assert_non_null(out);
    for (uint64_t i = 0; i < a.n; i++)
        out[i] = fma(a.alpha, cl_vecadd_xd(a.seed, i), cl_vecadd_yd(a.seed, i));
    cl_vecadd_result r = {0};
    cl_vecadd_verify(&a, out, &r);
    assert_int_equal(r.mismatches, 0);
    out[777] = nextafter(out[777], 10.0);
    cl_vecadd_verify(&a, out, &r);
    assert_int_equal(r.mismatches, 1);
    assert_int_equal(r.first_bad, 777);
    free(out);
    /* inputs: never zero, in [-1, 1), x and y differ */
    for (uint64_t i = 0; i < 1000; i++) {
        double x = cl_vecadd_xd(5, i), y = cl_vecadd_yd(5, i);
        assert_true(x != 0 && x >= -1 && x < 1 && x != y);
        assert_true(cl_vecadd_xf(5, i) != 0);
    }
}

/* ---- the magic, end to end ---- */

static void magic_runs(void **state)
{
    (void)state;
    sink s;
    magic_ctx ctx;
    int rc = run_cell("%vecadd --size 1001,4096 --op add,daxpy --memory pageable,pinned --block 32,96 "
                      "--reps 2 --warmup 0", cl_cpu_backend(), &s, &ctx);
    if (rc)
        fail_msg("%s: %s", ctx.error.ename, ctx.error.evalue);
    json_t *runs = json_object_get(s.doc, "runs"), *r;
    assert_int_equal(json_array_size(runs), 2 * 2 * 2 * 2);
    size_t i;
    json_array_foreach(runs, i, r) {
        assert_true(json_is_true(json_object_get(json_object_get(r, "check"), "passed")));
        double pct = json_number_value(json_object_get(r, "transfer_pct"));
        assert_true(pct > 0 && pct < 100);
        assert_true(json_number_value(json_object_get(r, "kernel_gbs")) > 0);
        assert_non_null(json_object_get(json_object_get(r, "h2d_ms"), "median"));
    }
    assert_contains(json_string_value(json_object_get(s.view, "title")), "moving data took");
    sink_free(&s, &ctx);
}

static void magic_errors(void **state)
{
    (void)state;
    sink s;
    magic_ctx ctx;
    assert_int_equal(run_cell("%vecadd --size 100 --block 48", cl_cpu_backend(), &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "UsageError");
    assert_contains(ctx.error.evalue, "multiple of the warp size 32");
    sink_free(&s, &ctx);
    assert_int_equal(run_cell("%vecadd --size 100 --op sub", cl_cpu_backend(), &s, &ctx), 2);
    assert_contains(ctx.error.evalue, "--op");
    sink_free(&s, &ctx);
    assert_int_equal(run_cell("%vecadd --size 2^50", cl_cpu_backend(), &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "MemoryError");
    assert_contains(ctx.error.evalue, "--size 2^50 needs");
    assert_contains(ctx.error.evalue, "largest size that fits");
    sink_free(&s, &ctx);
}

/* A "GPU" with 1 GiB free, running the CPU ops: the device limit applies. */
static int small_props(int dev, cl_device_props *p, char *err)
{
    int rc = cl_cpu_backend()->device_props(dev, p, err);
    p->free_mem = 1ull << 30;
    p->l2_bytes = 50 << 20;
    return rc;
}

static void magic_fake_device_and_missing(void **state)
{
    (void)state;
    cl_backend fake = *cl_cpu_backend();
    fake.name = "cuda";
    fake.device_props = small_props;
    sink s;
    magic_ctx ctx;
    assert_int_equal(run_cell("%vecadd --size 2^27 --op daxpy", &fake, &s, &ctx), -1);
    assert_contains(ctx.error.evalue, "of device memory; this device has 1.0 GiB free");
    sink_free(&s, &ctx);
    fake.vecadd = NULL;
    assert_int_equal(run_cell("%vecadd --size 10", &fake, &s, &ctx), -1);
    assert_contains(ctx.error.evalue, "built without %vecadd");
    sink_free(&s, &ctx);
}

/* Ops that return a wrong element: the cell fails with CheckError. */
static int wrong_run(const cl_vecadd_args *a, cl_vecadd_result *out, char *err)
{
    int rc = cl_cpu_backend()->vecadd->run(a, out, err);
    out->mismatches = 1;
    out->first_bad = 3;
    return rc;
}

static void magic_failed_check(void **state)
{
    (void)state;
    cl_vecadd_ops ops = *cl_cpu_backend()->vecadd;
    ops.run = wrong_run;
    cl_backend fake = *cl_cpu_backend();
    fake.vecadd = &ops;
    sink s;
    magic_ctx ctx;
    assert_int_equal(run_cell("%vecadd --size 10 --reps 1 --warmup 0", &fake, &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "CheckError");
    sink_free(&s, &ctx);
    assert_int_equal(run_cell("%vecadd --size 10 --reps 1 --warmup 0 --no-check", &fake, &s, &ctx), 0);
    sink_free(&s, &ctx);
}

static void help_text(void **state)
{
    (void)state;
    char *h = magic_help_text(NULL, magic_find("vecadd"));
    assert_non_null(h);
    assert_contains(h, "pinned");
    assert_contains(h, "daxpy");
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ops_exact_every_size),   cmocka_unit_test(verify_catches_one_ulp),
        cmocka_unit_test(magic_runs),             cmocka_unit_test(magic_errors),
        cmocka_unit_test(magic_fake_device_and_missing), cmocka_unit_test(magic_failed_check),
        cmocka_unit_test(help_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
