/* test_cpu_common.c — the CPU backend's shared scaffolding (cpu/common): the
 * parallel-for runs every index exactly once on the thread count it reports,
 * the range split is the fixed contiguous partition the deterministic
 * reductions rely on, the cancellation flag goes up and down (and reaches
 * magic_cancelled, which wraps it), and the clock does not run backwards.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "../cpu/common/cpu_common.h"
#include "magic/magic.h"

static void count_index(long long i, void *arg)
{
    __atomic_fetch_add(&((int *)arg)[i], 1, __ATOMIC_RELAXED);
}

static void parallel_for_runs_each_index_once(void **state)
{
    (void)state;
    int hits[1000] = {0};
    assert_int_equal(cl_parallel_for(1000, 7, count_index, hits), 7);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(hits[i], 1);
    int one[3] = {0};
    assert_int_equal(cl_parallel_for(3, 100, count_index, one), 3);   /* never more threads than work */
    assert_int_equal(one[0] + one[1] + one[2], 3);
    int all[200] = {0};
    int used = cl_parallel_for(200, 0, count_index, all);               /* 0: one per CPU */
    assert_int_equal(used, cl_cpu_threads());
    for (int i = 0; i < 200; i++)
        assert_int_equal(all[i], 1);
    assert_int_equal(cl_parallel_for(500, 1000, count_index, (int[500]){0}), CL_CPU_MAX_THREADS);
    assert_int_equal(cl_parallel_for(0, 4, count_index, NULL), 1);        /* nothing to run */
}

static void cpu_threads_are_bounded(void **state)
{
    (void)state;
    int all = cl_cpu_threads();
    assert_true(all >= 1 && all <= CL_CPU_MAX_THREADS);
    assert_int_equal(cl_cpu_threads_for(0), 1);
    assert_int_equal(cl_cpu_threads_for((1u << 16) - 1), 1);
    assert_int_equal(cl_cpu_threads_for(1u << 16), all < 2 ? all : 2);
    assert_int_equal(cl_cpu_threads_for(1ull << 40), all);
}

/* The ranges a split ran, [first, last), in the order the calls came. */
typedef struct seen_ranges {
    uint64_t first[16], last[16];
    int calls;
} seen_ranges;

static void record_range(uint64_t first, uint64_t last, void *ctx)
{
    seen_ranges *s = ctx;
    int k = __atomic_fetch_add(&s->calls, 1, __ATOMIC_RELAXED);
    s->first[k] = first;
    s->last[k] = last;
}

static void ranges_are_the_fixed_contiguous_partition(void **state)
{
    (void)state;
    seen_ranges s;
    memset(&s, 0, sizeof s);
    assert_int_equal(cl_parallel_ranges(10, 3, record_range, &s), 3);
    assert_int_equal(s.calls, 3);
    /* range t is [10t/3, 10(t+1)/3): [0,3) [3,6) [6,10), whichever thread ran it */
    uint64_t want_last[10] = {0};
    for (int k = 0; k < 3; k++)
        want_last[s.first[k]] = s.last[k];
    assert_int_equal(want_last[0], 3);
    assert_int_equal(want_last[3], 6);
    assert_int_equal(want_last[6], 10);

    memset(&s, 0, sizeof s);
    assert_int_equal(cl_parallel_ranges(2, 8, record_range, &s), 2);    /* at least one item each */
    assert_int_equal(s.calls, 2);
    assert_int_equal(s.last[0] - s.first[0], 1);
    assert_int_equal(s.last[1] - s.first[1], 1);

    memset(&s, 0, sizeof s);
    assert_int_equal(cl_parallel_ranges(0, 4, record_range, &s), 1);
    assert_int_equal(s.calls, 0);                                        /* an empty range is not run */
}

static void cancel_flag_is_shared_with_magic_cancelled(void **state)
{
    (void)state;
    cl_cancel_reset();
    assert_false(cl_cancel_requested());
    assert_false(magic_cancelled());
    magic_cancel();                                  /* what the worker's SIGINT handler calls */
    assert_true(cl_cancel_requested());
    cl_cancel_reset();
    assert_false(magic_cancelled());
    cl_cancel_request();
    assert_true(magic_cancelled());
    magic_cancel_reset();
    assert_false(cl_cancel_requested());
}

static void clock_moves_forward_in_milliseconds(void **state)
{
    (void)state;
    double t0 = cl_now_ms();
    nanosleep(&(struct timespec){ 0, 20 * 1000000 }, NULL);
    double dt = cl_now_ms() - t0;
    assert_true(dt >= 19.0);
    assert_true(dt < 10000.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parallel_for_runs_each_index_once),
        cmocka_unit_test(cpu_threads_are_bounded),
        cmocka_unit_test(ranges_are_the_fixed_contiguous_partition),
        cmocka_unit_test(cancel_flag_is_shared_with_magic_cancelled),
        cmocka_unit_test(clock_moves_forward_in_milliseconds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
