/* test_family.c — the family contract as the framework serves it
 * (kernel/magic/families.c): the contract's rows in enum order, variants added
 * at run time (what a student's %%kernel will be) reaching parsing,
 * completion-facing choices and %help, selection with `all`, and the one
 * memory-fit refusal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cudalab/matmul.h"
#include "lang/lang.h"
#include "magic/families.h"
#include "magic_sink.h"
#include "student/broken.h"

extern const family_spec matmul_family;

/* %matmul's variants broken on purpose: after the contract's rows, before students' kernels. */
static size_t nbroken(void)
{
    size_t n = 0;
    while (broken_matmul[n].v.name)
        n++;
    return n;
}
#define SHIPPED (CL_MATMUL_NVARIANTS + nbroken())

static int teardown(void **state)
{
    (void)state;
    test_lab_reset();
    return 0;
}

static void contract_rows_in_enum_order(void **state)
{
    (void)state;
    assert_int_equal(family_count(test_lab(), &matmul_family), SHIPPED);
    assert_string_equal(family_variant(test_lab(), &matmul_family, CL_MATMUL_V_TILED)->name, "tiled");
    assert_int_equal(family_index(test_lab(), &matmul_family, "cublas-tf32"), CL_MATMUL_V_CUBLAS_TF32);
    assert_int_equal(family_index(test_lab(), &matmul_family, "nope"), -1);
    /* the broken ones: after the contract's rows, run from source, not the backend's */
    const cl_variant *broken = family_variant(test_lab(), &matmul_family, CL_MATMUL_NVARIANTS);
    assert_string_equal(broken->name, "missing_sync");
    assert_true((broken->flags & CL_V_BROKEN) && (broken->flags & CL_V_RUNTIME));
    assert_int_equal(family_builtin(&matmul_family, "missing_sync"), -1);
    assert_ptr_equal(family_broken_find(&matmul_family, "missing_sync"), &broken_matmul[0]);
    assert_null(family_broken_find(&matmul_family, "tiled"));
    assert_null(family_variant(test_lab(), &matmul_family, SHIPPED));
    assert_true(cl_matmul_variants[CL_MATMUL_V_TILED].flags & CL_V_TILE);
    assert_true(cl_matmul_variants[CL_MATMUL_V_CPU].flags & CL_V_HOST);
}

/* The --variant flag of %matmul: its choices are the family's, then "all". */
static const flag_spec *variant_flag(void)
{
    for (const flag_spec *f = magic_find("matmul")->flags; f->name; f++)
        if (f->family)
            return f;
    return NULL;
}

static void runtime_variant_reaches_parser_and_help(void **state)
{
    (void)state;
    const flag_spec *f = variant_flag();
    assert_non_null(f);
    assert_string_equal(flag_choice(test_lab(), f, 0), "cpu");
    assert_string_equal(flag_choice(test_lab(), f, CL_MATMUL_NVARIANTS), "missing_sync");
    assert_string_equal(flag_choice(test_lab(), f, SHIPPED), "all");
    assert_null(flag_choice(test_lab(), f, SHIPPED + 1));

    command *c;
    parse_error e;
    assert_int_equal(cell_parse(test_lab(), "%matmul --variant mytiled", &c, &e), -1);
    assert_non_null(strstr(e.error.evalue, "unknown value 'mytiled'"));

    magic_ctx ctx = { .lab = test_lab() };
    cl_variant mine = {"mytiled", "TILE×TILE threads", "a student's tiled kernel", CL_V_TILE};
    assert_int_equal(family_register(&ctx, &matmul_family, &mine), 0);
    assert_int_equal(family_count(test_lab(), &matmul_family), SHIPPED + 1);
    const cl_variant *v = family_variant(test_lab(), &matmul_family, SHIPPED);
    assert_true(v->flags & CL_V_RUNTIME);
    assert_true(v->name != mine.name);          /* copied */
    assert_string_equal(flag_choice(test_lab(), f, SHIPPED), "mytiled");
    assert_string_equal(flag_choice(test_lab(), f, SHIPPED + 1), "all");

    int n = cell_parse(test_lab(), "%matmul --variant mytiled,tiled", &c, &e);
    assert_int_equal(n, 1);
    commands_free(c, n);
    /* no backend runs it yet (that is the runner of student kernels' job): a clear refusal */
    sink out;
    magic_ctx run;
    assert_int_equal(run_cell("%matmul --size 8 --variant mytiled", cl_cpu_backend(), &out, &run), -1);
    assert_string_equal(run.error.ename, "UsageError");
    assert_non_null(strstr(run.error.evalue, "--variant mytiled is not available on the cpu backend"));
    sink_free(&out, &run);
    /* a backend that runs no students' kernels: family_run refuses the kernel before anything runs */
    cl_backend without = *cl_cpu_backend();
    cl_matmul_ops ops = *without.matmul;
    ops.runs_student = false;
    without.matmul = &ops;
    assert_false(family_runs_student(&matmul_family, &without));
    assert_true(family_runs_student(&matmul_family, cl_cpu_backend()));
    assert_int_equal(run_cell("%matmul --size 8 --variant tiled,mytiled", &without, &out, &run), -1);
    assert_string_equal(run.error.ename, "UsageError");
    assert_non_null(strstr(run.error.evalue, "mytiled is your kernel: it runs on a GPU, and this worker runs on "
                                             "the cpu backend"));
    assert_null(out.doc);                       /* nothing ran */
    sink_free(&out, &run);
    char *help = magic_help_text(test_lab(), magic_find("matmul"));
    assert_non_null(strstr(help, "mytiled"));
    assert_non_null(strstr(help, "a student's tiled kernel [yours]"));
    free(help);

    /* registering again replaces; a built-in name or "all" is refused */
    mine.teaches = "second version";
    assert_int_equal(family_register(&ctx, &matmul_family, &mine), 0);
    assert_int_equal(family_count(test_lab(), &matmul_family), SHIPPED + 1);
    assert_string_equal(family_variant(test_lab(), &matmul_family, SHIPPED)->teaches, "second version");
    cl_variant clash = {"tiled", "", "", 0};
    assert_int_equal(family_register(&ctx, &matmul_family, &clash), -1);
    assert_string_equal(ctx.error.ename, "UsageError");
    clash.name = "all";
    assert_int_equal(family_register(&ctx, &matmul_family, &clash), -1);
    clash.name = "missing_sync";                /* nor the name of one broken on purpose */
    assert_int_equal(family_register(&ctx, &matmul_family, &clash), -1);
}

static void registry_is_bounded(void **state)
{
    (void)state;
    magic_ctx ctx = { .lab = test_lab() };
    char name[32];
    for (int i = 0; i < FAMILY_MAX_RUNTIME; i++) {
        snprintf(name, sizeof name, "k%d", i);
        cl_variant v = {name, "", "", 0};
        assert_int_equal(family_register(&ctx, &matmul_family, &v), 0);
    }
    cl_variant one_more = {"k_extra", "", "", 0};
    assert_int_equal(family_register(&ctx, &matmul_family, &one_more), -1);
    assert_non_null(strstr(ctx.error.evalue, "restart the kernel"));
}

static bool all_but_host(const cl_variant *v, size_t index, void *user)
{
    (void)index, (void)user;
    return !(v->flags & CL_V_HOST);
}

static void select_expands_all_and_refuses(void **state)
{
    (void)state;
    magic_ctx ctx = { .lab = test_lab() };
    json_t *given = json_pack("[s, s, s]", "fast", "all", "fast");
    json_t *got = family_select(&ctx, &matmul_family, given, all_but_host, NULL, "cuda");
    assert_non_null(got);
    /* in the order given, `all` in table order, no duplicates, nothing unavailable */
    assert_int_equal(json_array_size(got), CL_MATMUL_NVARIANTS - 1);
    assert_string_equal(json_string_value(json_array_get(got, 0)), "fast");
    assert_string_equal(json_string_value(json_array_get(got, 1)), "naive");
    json_decref(got);
    json_decref(given);

    /* no predicate: `all` is the contract's own rows (not the broken ones); a run-time variant runs
     * when named */
    cl_variant mine = {"mine", "", "", 0};
    assert_int_equal(family_register(&ctx, &matmul_family, &mine), 0);
    given = json_string("all");
    got = family_select(&ctx, &matmul_family, given, NULL, NULL, "cpu");
    assert_int_equal(json_array_size(got), CL_MATMUL_NVARIANTS);
    json_decref(got);
    json_decref(given);
    given = json_string("mine");
    got = family_select(&ctx, &matmul_family, given, NULL, NULL, "cpu");
    assert_int_equal(json_array_size(got), 1);
    assert_string_equal(json_string_value(json_array_get(got, 0)), "mine");
    json_decref(got);
    json_decref(given);

    given = json_string("cpu");
    assert_null(family_select(&ctx, &matmul_family, given, all_but_host, NULL, "cuda"));
    assert_string_equal(ctx.error.ename, "UsageError");
    assert_non_null(strstr(ctx.error.evalue, "--variant cpu is not available on the cuda backend "
                                             "(it has: naive, naive-bt, tiled, tiled-bt, reg1d"));
    json_decref(given);
}

static void memory_fit_is_one_message(void **state)
{
    (void)state;
    magic_ctx ctx = { .lab = test_lab() };
    mem_need ok = {"--size 8", NULL, "device", 1024, 2048, NULL};
    assert_int_equal(magic_memory_fit(&ctx, &ok), 0);
    mem_need unknown = {"--size 8", NULL, "device", 1e18, 0, NULL};
    assert_int_equal(magic_memory_fit(&ctx, &unknown), 0);     /* free unknown: never refused */
    mem_need big = {"--size 2^40", "A, B and C", "host", 12.0 * 1099511627776.0, 1073741824.0,
                    "largest square size that fits: 9459"};
    assert_int_equal(magic_memory_fit(&ctx, &big), -1);
    assert_string_equal(ctx.error.ename, "MemoryError");
    assert_string_equal(ctx.error.evalue, "--size 2^40 needs 12.0 TiB of host memory (A, B and C); "
                                          "this host has 1.0 GiB free (largest square size that fits: 9459)");
}

static double square_bytes(uint64_t n, const void *arg)
{
    (void)arg;
    return 12.0 * (double)n * (double)n;
}

static void largest_that_fits(void **state)
{
    (void)state;
    assert_int_equal(fit_largest(square_bytes, NULL, 12.0 * 100 * 100, 1u << 20), 100);
    assert_int_equal(fit_largest(square_bytes, NULL, 12.0 * 100 * 100 - 1, 1u << 20), 99);
    assert_int_equal(fit_largest(square_bytes, NULL, 5, 1u << 20), 0);
    assert_int_equal(fit_largest(square_bytes, NULL, 1e300, 77), 77);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(contract_rows_in_enum_order, teardown),
        cmocka_unit_test_teardown(runtime_variant_reaches_parser_and_help, teardown),
        cmocka_unit_test_teardown(registry_is_bounded, teardown),
        cmocka_unit_test_teardown(select_expands_all_and_refuses, teardown),
        cmocka_unit_test_teardown(memory_fit_is_one_message, teardown),
        cmocka_unit_test_teardown(largest_that_fits, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
