/* test_cpu_common.c — the CPU backend's shared scaffolding (cpu/common): the
 * parallel-for runs every index exactly once on the thread count it reports,
 * the range split is the fixed contiguous partition the deterministic
 * reductions rely on, the cancellation flag goes up and down (and reaches
 * magic_cancelled, which wraps it), the clock does not run backwards, and the host's FP32
 * lanes (the CPU backend's peak) are counted from its SIMD width, FMA and threads per core.
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

static cl_cpu_fp32_rate rate_of(const char *flags, int threads_per_core)
{
    cl_cpu_fp32_rate r;
    cl_cpu_fp32_rate_from(flags, threads_per_core, &r);
    return r;
}

static void fp32_lanes_count_simd_width_fma_and_shared_cores(void **state)
{
    (void)state;
    /* this test host's kind: AVX-512 (with its own FMA), one thread per core: 16 floats × 2 pipes */
    cl_cpu_fp32_rate r = rate_of("fpu sse sse2 fma avx avx2 avx512f avx512vl", 1);
    assert_string_equal(r.isa, "AVX-512");
    assert_true(r.fma);
    assert_int_equal(r.lanes_per_cpu, 32);
    /* a laptop's: AVX2 + FMA, two hyperthreads share a core's pipes */
    r = rate_of("sse2 avx avx2 fma ht", 2);
    assert_string_equal(r.isa, "AVX2");
    assert_int_equal(r.lanes * r.pipes, 16);
    assert_int_equal(r.lanes_per_cpu, 8);
    /* AVX without FMA: an add port and a multiply port, one pipe's 8 lanes */
    r = rate_of("sse sse2 avx", 1);
    assert_false(r.fma);
    assert_int_equal(r.lanes_per_cpu, 8);
    assert_int_equal(rate_of("sse sse2", 1).lanes_per_cpu, 4);
    /* AArch64's Features: NEON's 4 floats with FMLA */
    r = rate_of("fp asimd evtstrm aes", 1);
    assert_string_equal(r.isa, "NEON");
    assert_int_equal(r.lanes_per_cpu, 8);
    /* a word, not a prefix: avx512fp16 alone is not avx512f; nothing known is scalar */
    assert_string_equal(rate_of("avx512fp16", 1).isa, "scalar");
    assert_int_equal(rate_of("", 4).lanes_per_cpu, 1);
    /* the peak the lanes give, as %matmul's % of peak reads it: 2 FLOPs × CPUs × lanes × clock */
    cl_device_props p = { .sm_count = 2, .cores_per_sm = rate_of("avx512f fma", 1).lanes_per_cpu,
                          .clock_khz = 2000000 };
    assert_true(magic_peak_fp32_gflops(&p) > 255.9 && magic_peak_fp32_gflops(&p) < 256.1);
    char text[200];
    r = rate_of("sse2 avx avx2 fma", 2);
    cl_cpu_fp32_rate_text(&r, text, sizeof text);
    assert_string_equal(text, "8 lanes per logical CPU: 8-float AVX2 vectors × 2 FMA pipes ÷ 2 threads per core");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parallel_for_runs_each_index_once),
        cmocka_unit_test(cpu_threads_are_bounded),
        cmocka_unit_test(ranges_are_the_fixed_contiguous_partition),
        cmocka_unit_test(cancel_flag_is_shared_with_magic_cancelled),
        cmocka_unit_test(clock_moves_forward_in_milliseconds),
        cmocka_unit_test(fp32_lanes_count_simd_width_fma_and_shared_cores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
