/* test_lab_session.c — one session's state is its own (kernel/magic/lab_session.c):
 * two sessions in one process define the same parameter and the same kernel
 * name with different values and code, and neither sees the other's; what a
 * cell parses in one is refused in the other; freeing one leaves the other
 * whole; a NULL session reads as an empty one. Built under ASan (make asan),
 * the frees are checked too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lang/lang.h"
#include "lang/params.h"
#include "magic/families.h"
#include "magic/lab_session.h"
#include "student/store.h"

extern const family_spec matmul_family;

static const char mine_a[] = "__global__ void mine(const float *A, const float *B, float *C, int m, int n, int k) {}";
static const char mine_b[] = "__global__ void mine(const float *A, const float *B, float *C, int m, int n, int k)\n"
                             "{ /* another version */ }";

static void set_param(lab_session *lab, const char *name, const char *value)
{
    char why[300];
    if (param_set(lab, name, value, why, sizeof why) != 0)
        fail_msg("param_set %s: %s", name, why);
}

/* Defines kernel `mine` for %matmul in lab from source. */
static void define_mine(lab_session *lab, const char *source)
{
    magic_ctx ctx = { .lab = lab };
    json_t *options = json_pack("{s:s, s:s}", "for", "matmul", "name", "mine");
    if (student_define(&ctx, &matmul_family, "mine", source, options) != 0)
        fail_msg("student_define: %s: %s", ctx.error.ename, ctx.error.evalue);
    json_decref(options);
}

/* Whether cell parses in lab; the error in *e when not. */
static bool parses(const lab_session *lab, const char *cell, parse_error *e)
{
    command *c = NULL;
    int n = cell_parse(lab, cell, &c, e);
    commands_free(c, n > 0 ? n : 0);
    return n > 0;
}

static void parameters_are_the_sessions(void **state)
{
    (void)state;
    lab_session *a = lab_session_new(), *b = lab_session_new();
    assert_non_null(a);
    assert_non_null(b);
    set_param(a, "size", "64");
    set_param(a, "only_a", "1");
    set_param(b, "size", "128");
    assert_string_equal(param_get(a, "size"), "64");
    assert_string_equal(param_get(b, "size"), "128");
    assert_null(param_get(b, "only_a"));
    assert_int_equal(param_count(a), 2);
    assert_int_equal(param_count(b), 1);

    parse_error e;
    assert_true(parses(a, "%echo {only_a}", &e));
    assert_false(parses(b, "%echo {only_a}", &e));
    assert_string_equal(e.error.ename, "NameError");
    lab_session_free(a);
    assert_string_equal(param_get(b, "size"), "128");      /* the other session is whole */
    lab_session_free(b);
}

static void kernels_are_the_sessions(void **state)
{
    (void)state;
    lab_session *a = lab_session_new(), *b = lab_session_new();
    size_t shipped = family_count(NULL, &matmul_family);
    define_mine(a, mine_a);
    parse_error e;
    assert_true(parses(a, "%matmul --variant mine,tiled", &e));
    assert_false(parses(b, "%matmul --variant mine", &e));
    assert_non_null(strstr(e.error.evalue, "unknown value 'mine'"));
    assert_null(student_find(b, "mine"));
    assert_int_equal(family_count(a, &matmul_family), shipped + 1);
    assert_int_equal(family_count(b, &matmul_family), shipped);

    /* the same name, other code: each session runs its own */
    define_mine(b, mine_b);
    assert_string_equal(student_find(a, "mine")->source, mine_a);
    assert_string_equal(student_find(b, "mine")->source, mine_b);
    assert_int_equal(student_count(a), 1);
    assert_int_equal(student_count(b), 1);
    char *help = magic_help_text(b, magic_find("matmul"));
    assert_non_null(strstr(help, "[yours]"));
    free(help);

    /* dropping it in one session leaves the other's */
    student_drop(a, "mine");
    assert_null(student_find(a, "mine"));
    assert_int_equal(family_count(a, &matmul_family), shipped);
    assert_string_equal(student_find(b, "mine")->source, mine_b);
    define_mine(a, mine_a);
    lab_session_free(b);
    assert_string_equal(student_find(a, "mine")->source, mine_a);
    lab_session_free(a);
}

/* A variant broken on purpose has a definition in each session that names it. */
static void broken_ones_in_each_session(void **state)
{
    (void)state;
    lab_session *a = lab_session_new(), *b = lab_session_new();
    const student_def *in_a = student_find(a, "missing_sync"), *in_b = student_find(b, "missing_sync");
    assert_non_null(in_a);
    assert_non_null(in_b);
    assert_ptr_not_equal(in_a, in_b);
    assert_ptr_equal(student_find(a, "missing_sync"), in_a);  /* made once a session */
    assert_int_equal(student_count(a), 0);                    /* never in the student's list */
    lab_session_free(a);
    assert_string_equal(in_b->name, "missing_sync");
    lab_session_free(b);
}

static void no_session_reads_empty(void **state)
{
    (void)state;
    assert_null(param_get(NULL, "size"));
    assert_int_equal(param_count(NULL), 0);
    assert_int_equal(student_count(NULL), 0);
    assert_null(student_find(NULL, "mine"));
    char why[300];
    assert_int_equal(param_set(NULL, "size", "64", why, sizeof why), -1);
    assert_non_null(strstr(why, "no session"));
    parse_error e;
    assert_true(parses(NULL, "%matmul --variant tiled", &e));
    lab_session_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parameters_are_the_sessions),
        cmocka_unit_test(kernels_are_the_sessions),
        cmocka_unit_test(broken_ones_in_each_session),
        cmocka_unit_test(no_session_reads_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
