/* test_coalesce.c — %coalesce on the CPU backend: the permuted index visits
 * every element exactly once at every stride (odd sizes included), the ops
 * table's copies are exact (strides past the size too), the check catches a
 * wrong element (and counts the NaN sentinels a student's kernel never
 * overwrote), the CPU backend takes a student's kernel on the CPU runner (one
 * not built for it is refused), and the magic's paths end to end: both
 * experiments, the model, bad blocks, strides past the size, mixing --stride
 * with --layout, absurd sizes, a missing backend.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cudalab/coalesce.h"
#include "magic/magic.h"
#include "magic_sink.h"

#define assert_contains(hay, needle) do {                                         \
        if (!strstr((hay), (needle)))                                             \
            fail_msg("'%s'\n  does not contain '%s'", (hay), (needle));           \
    } while (0)

static const uint64_t sizes[] = {1, 2, 3, 31, 32, 33, 1000, 4097, 65537};
static const uint64_t strides[] = {1, 2, 3, 4, 7, 8, 16, 32, 33};

static void index_is_a_permutation(void **state)
{
    (void)state;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (size_t k = 0; k < sizeof strides / sizeof strides[0]; k++) {
            uint64_t n = sizes[si], s = strides[k];
            if (s > n)
                continue;
            uint64_t m = cl_coalesce_rows(n, s);
            unsigned char *seen = calloc(n, 1);
            assert_non_null(seen);
            for (uint64_t t = 0; t < m * s; t++) {
                uint64_t i = cl_coalesce_index(t, m, s);
                if (i < n)
                    seen[i]++;
                if (t + 1 < m * s && (t + 1) % m != 0)       /* neighbours in one column are s apart */
                    assert_int_equal(cl_coalesce_index(t + 1, m, s) - i, s);
            }
            for (uint64_t i = 0; i < n; i++)
                if (seen[i] != 1)
                    fail_msg("n=%llu s=%llu: element %llu copied %d times", (unsigned long long)n,
                             (unsigned long long)s, (unsigned long long)i, seen[i]);
            free(seen);
        }
}

static void ops_copy_exactly(void **state)
{
    (void)state;
    const cl_coalesce_ops *ops = cl_cpu_backend()->coalesce;
    assert_non_null(ops);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (size_t k = 0; k < sizeof strides / sizeof strides[0]; k++) {
            cl_coalesce_args a = {.n = sizes[si], .stride = strides[k], .block = 32, .seed = 4, .reps = 2,
                                  .warmup = 1, .check = 1};
            cl_coalesce_result r;
            char err[CL_ERR_LEN] = "";
            if (ops->run(&a, &r, err))
                fail_msg("run: %s", err);
            if (r.mismatches)
                fail_msg("n=%llu s=%llu: %llu mismatches", (unsigned long long)a.n,
                         (unsigned long long)a.stride, (unsigned long long)r.mismatches);
            assert_int_equal(r.times.reps, 2);
        }
}

static void verify_catches_one(void **state)
{
    (void)state;
    cl_coalesce_args a = {.n = 100, .seed = 2};
    float out[100];
    for (int i = 0; i < 100; i++)
        out[i] = cl_uniform(2, (uint64_t)i);
    cl_coalesce_result r = {0};
    cl_coalesce_verify(&a, out, &r);
    assert_int_equal(r.mismatches, 0);
    out[42] = 0;
    cl_coalesce_verify(&a, out, &r);
    assert_int_equal(r.mismatches, 1);
    assert_int_equal(r.first_bad, 42);
    assert_int_equal(r.unwritten, 0);
    uint32_t nan_bits = 0xFFFFFFFFu;            /* the sentinel a student's out holds before every rep */
    for (int i = 50; i < 100; i++)
        memcpy(&out[i], &nan_bits, sizeof out[i]);
    cl_coalesce_verify(&a, out, &r);
    assert_int_equal(r.mismatches, 51);
    assert_int_equal(r.unwritten, 50);
    assert_int_equal(r.first_bad, 42);
}

static void cpu_runs_a_student_kernel_on_the_runner(void **state)
{
    (void)state;
    const cl_coalesce_ops *ops = cl_cpu_backend()->coalesce;
    assert_true(ops->runs_student);
    /* no runner executable (the worker builds one from the cell): refused by name */
    cl_student_kernel k = {.name = "mycopy", .block = {256, 1, 1}};
    cl_coalesce_args a = {.n = 1000, .stride = 1, .block = 256, .student = &k, .seed = 1, .reps = 1};
    cl_coalesce_result r;
    char err[CL_ERR_LEN] = "";
    assert_int_equal(ops->run(&a, &r, err), -1);
    assert_contains(err, "mycopy was not built for the CPU runner");
}

/* ---- the magic, end to end ---- */

static void magic_strides(void **state)
{
    (void)state;
    sink s;
    magic_ctx ctx;
    if (run_cell("%coalesce --size 100003 --reps 2 --warmup 0", cl_cpu_backend(), &s, &ctx))
        fail_msg("%s: %s", ctx.error.ename, ctx.error.evalue);
    json_t *runs = json_object_get(s.doc, "runs"), *r;
    assert_int_equal(json_array_size(runs), 6);
    static const int sectors[] = {4, 8, 16, 32, 32, 32};
    size_t i;
    json_array_foreach(runs, i, r) {
        assert_int_equal(json_integer_value(json_object_get(r, "stride")), 1 << i);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "model"), "sectors_per_warp")),
                         sectors[i]);
        assert_true(json_is_true(json_object_get(json_object_get(r, "check"), "passed")));
        assert_string_equal(json_string_value(json_object_get(r, "variant")), "stride");
    }
    sink_free(&s, &ctx);
    if (run_cell("%coalesce --layout row,col --rows 300 --cols 77 --reps 1 --warmup 0", cl_cpu_backend(), &s, &ctx))
        fail_msg("%s: %s", ctx.error.ename, ctx.error.evalue);
    runs = json_object_get(s.doc, "runs");
    assert_int_equal(json_array_size(runs), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(runs, 0), "stride")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(runs, 1), "stride")), 77);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(runs, 1), "size")), 300 * 77);
    sink_free(&s, &ctx);
}

static void magic_errors(void **state)
{
    (void)state;
    sink s;
    magic_ctx ctx;
    assert_int_equal(run_cell("%coalesce --block 100", cl_cpu_backend(), &s, &ctx), -1);
    assert_contains(ctx.error.evalue, "multiple of the warp size");
    sink_free(&s, &ctx);
    assert_int_equal(run_cell("%coalesce --size 16 --stride 32", cl_cpu_backend(), &s, &ctx), -1);
    assert_contains(ctx.error.evalue, "larger than --size 16");
    sink_free(&s, &ctx);
    assert_int_equal(run_cell("%coalesce --stride 2 --layout row", cl_cpu_backend(), &s, &ctx), -1);
    assert_contains(ctx.error.evalue, "two experiments");
    sink_free(&s, &ctx);
    assert_int_equal(run_cell("%coalesce --size 2^50", cl_cpu_backend(), &s, &ctx), -1);
    assert_string_equal(ctx.error.ename, "MemoryError");
    assert_contains(ctx.error.evalue, "largest size that fits");
    sink_free(&s, &ctx);
    assert_int_equal(run_cell("%coalesce --layout diagonal", cl_cpu_backend(), &s, &ctx), 2);
    sink_free(&s, &ctx);
    cl_backend none = *cl_cpu_backend();
    none.coalesce = NULL;
    assert_int_equal(run_cell("%coalesce", &none, &s, &ctx), -1);
    assert_contains(ctx.error.evalue, "built without %coalesce");
    sink_free(&s, &ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(index_is_a_permutation), cmocka_unit_test(ops_copy_exactly),
        cmocka_unit_test(verify_catches_one),     cmocka_unit_test(cpu_runs_a_student_kernel_on_the_runner),
        cmocka_unit_test(magic_strides),
        cmocka_unit_test(magic_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
