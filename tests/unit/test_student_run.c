/* test_student_run.c — how a student's failed run on a GPU is named
 * (student_run_failed in kernel/student/run.c, the branch without a CPU
 * runner): the harness's findings about the result are CheckErrors — a timed
 * rep whose result its reference on the same inputs did not confirm ("rep R
 * of N returned a wrong result …", cuda/common.h) and a write outside the
 * output; a launch past its limit is a TimeoutError; anything else the device
 * said is a CudaError. The errors are the runners' own words.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "student/run.h"
#include "student/store.h"

/* The ename and message student_run_failed gives err, for a kernel named "mine". */
static void named(const char *err, const char *want_ename)
{
    student_def def;
    memset(&def, 0, sizeof def);
    def.name = (char *)"mine";
    student_launch l;
    memset(&l, 0, sizeof l);
    l.def = &def;
    magic_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    assert_int_equal(student_run_failed(&ctx, &l, "%matmul --size 512", err), -1);
    if (strcmp(ctx.error.ename, want_ename) != 0)
        fail_msg("%s\n  named %s, want %s", err, ctx.error.ename, want_ename);
    assert_non_null(strstr(ctx.error.evalue, "your kernel mine failed (%matmul --size 512): "));
    assert_non_null(strstr(ctx.error.evalue, err));
    json_decref(ctx.traceback);
}

static void a_wrong_rep_is_a_check_error(void **state)
{
    (void)state;
    named("rep 7 of 10 returned a wrong result on its own inputs (123 of 1048576 values differ; first C[3][5] = 1, "
          "want 2.5 ± 0.00512), the last launch a right one: work kept or skipped across launches, or a race?",
          "CheckError");
    named("rep 1 of 1 returned a wrong result on its own inputs (the sum = 0, want 12.5 ± 0.3), the last launch a "
          "right one: work kept or skipped across launches, or a race?", "CheckError");
    named("mine wrote outside C: 4 bytes after its end", "CheckError");
}

static void other_failures_keep_their_names(void **state)
{
    (void)state;
    named("mine ran longer than its launch limit of 10 s (CUDALAB_KERNEL_TIMEOUT) and was abandoned", "TimeoutError");
    named("timed run: an illegal memory access was encountered", "CudaError");
    /* "rep" not as the harness's finding starts it */
    named("represented: an illegal memory access was encountered", "CudaError");
    named("rep 7 of: unspecified launch failure", "CudaError");
    named("rep 7 of 10", "CudaError");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_wrong_rep_is_a_check_error),
        cmocka_unit_test(other_failures_keep_their_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
