/* test_occupancy.c — the occupancy model (kernel/magic/occupancy_model.c)
 * on every worked number of the lecture, the register allocation
 * granularity, the limit errors, the spread of a grid over the SMs, and the
 * CPU backend's --kernel refusal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cudalab/occupancy.h"
#include "magic/occupancy_model.h"

extern const cl_occupancy_ops cl_cpu_occupancy_ops;

#define assert_contains(hay, needle) do {                                         \
        if (!strstr((hay), (needle)))                                             \
            fail_msg("'%s'\n  does not contain '%s'", (hay), (needle));           \
    } while (0)

/* The lecture's device: 8 blocks and 1024 threads per SM, 512 threads per block. */
static cl_occ_device lecture_device(void)
{
    cl_occ_device d;
    cl_occ_device_default(&d);
    d.smem_reserved = 0;
    d.max_blocks_sm = 8;
    d.max_threads_sm = 1024;
    d.max_threads_block = 512;
    return d;
}

static void lecture_block_shapes(void **state)
{
    (void)state;
    cl_occ_device d = lecture_device();
    cl_occ_result r;
    char err[400];
    cl_occ_kernel k8 = {.threads = 64};
    assert_int_equal(cl_occ_compute(&d, &k8, &r, err, sizeof err), 0);
    assert_int_equal(r.blocks_sm, 8);
    assert_int_equal(r.threads_sm, 512);
    assert_int_equal(r.limiter, CL_OCC_BLOCKS);
    assert_int_equal(r.by_threads, 16);
    cl_occ_kernel k16 = {.threads = 256};
    assert_int_equal(cl_occ_compute(&d, &k16, &r, err, sizeof err), 0);
    assert_int_equal(r.blocks_sm, 4);
    assert_int_equal(r.threads_sm, 1024);
    assert_int_equal(r.limiter, CL_OCC_THREADS);
    assert_true(r.occupancy_pct == 100.0);
    cl_occ_kernel k32 = {.threads = 1024};
    assert_int_equal(cl_occ_compute(&d, &k32, &r, err, sizeof err), -1);
    assert_contains(err, "1024 threads per block exceed the limit of 512");
}

static void warps_of_three_blocks(void **state)
{
    (void)state;
    cl_occ_device d;
    cl_occ_device_default(&d);
    cl_occ_kernel k = {.threads = 256};
    cl_occ_result r;
    char err[400];
    assert_int_equal(cl_occ_compute(&d, &k, &r, err, sizeof err), 0);
    assert_int_equal(3 * r.warps_per_block, 24);
    cl_occ_spread s;
    cl_occ_spread_of(&d, &r, 3, &s);
    assert_int_equal(s.waves, 1);
    assert_int_equal(s.sms_more, 3);
    assert_int_equal(s.more, 1);
}

/* 48 registers, 100-thread blocks, 16 SMs of 32K registers, a 4x5x3 grid. */
static void registers_exercise(void **state)
{
    (void)state;
    cl_occ_device d;
    cl_occ_device_default(&d);
    d.smem_reserved = 0;
    d.sms = 16;
    d.regs_sm = d.regs_block = 32768;
    cl_occ_kernel k = {.threads = 100, .regs = 48};
    cl_occ_result r;
    char err[400];
    assert_int_equal(cl_occ_compute(&d, &k, &r, err, sizeof err), 0);
    assert_int_equal(r.warps_per_block, 4);
    assert_int_equal(r.threads_in_last_warp, 4);
    assert_true(r.last_warp_idle_pct == 87.5);
    assert_int_equal(r.regs_per_block, 4 * 1536);       /* 48 x 32 = 1536 per warp, a multiple of 256 */
    assert_int_equal(r.by_regs, 5);                     /* 32768 / 1536 = 21 warps -> 5 blocks of 4 */
    assert_int_equal(r.limiter, CL_OCC_REGS);
    cl_occ_spread s;
    cl_occ_spread_of(&d, &r, 4 * 5 * 3, &s);
    assert_int_equal(s.waves, 1);
    assert_int_equal(s.sms_more, 12);
    assert_int_equal(s.more, 4);
    assert_int_equal(s.sms_less, 4);
    assert_int_equal(s.less, 3);
    d.reg_per_warp = false;                             /* the lecture's 48 x 100 = 4800 per block */
    assert_int_equal(cl_occ_compute(&d, &k, &r, err, sizeof err), 0);
    assert_int_equal(r.regs_per_block, 4800);
    assert_int_equal(r.by_regs, 6);
    cl_occ_spread_of(&d, &r, 60, &s);
    assert_int_equal(s.sms_more, 12);
    assert_int_equal(s.less, 3);
}

static void granularity_and_smem(void **state)
{
    (void)state;
    cl_occ_device d;
    cl_occ_device_default(&d);
    cl_occ_result r;
    char err[400];
    cl_occ_kernel k = {.threads = 256, .regs = 33};     /* 33 x 32 = 1056 -> 1280 per warp */
    assert_int_equal(cl_occ_compute(&d, &k, &r, err, sizeof err), 0);
    assert_int_equal(r.regs_per_block, 8 * 1280);
    assert_int_equal(r.by_regs, 4 * ((65536 / 4) / 1280) / 8);
    cl_occ_kernel part = {.threads = 64, .regs = 48};   /* 1536 per warp: 10 warps per quarter, not 42 per SM */
    assert_int_equal(cl_occ_compute(&d, &part, &r, err, sizeof err), 0);
    assert_int_equal(r.by_regs, 20);
    cl_occ_kernel gran = {.threads = 32, .smem = 100};  /* 100 + 1024 reserved -> 1152 */
    assert_int_equal(cl_occ_compute(&d, &gran, &r, err, sizeof err), 0);
    assert_int_equal(r.by_smem, (228 * 1024) / 1152);
    cl_occ_kernel s = {.threads = 128, .smem = 48 * 1024};   /* +1 KiB reserved: 49 KiB per block */
    assert_int_equal(cl_occ_compute(&d, &s, &r, err, sizeof err), 0);
    assert_int_equal(r.by_smem, (228 * 1024) / (49 * 1024));
    assert_int_equal(r.limiter, CL_OCC_SMEM);
    cl_occ_kernel big = {.threads = 128, .smem = 300 * 1024};
    assert_int_equal(cl_occ_compute(&d, &big, &r, err, sizeof err), -1);
    assert_contains(err, "shared memory");
    cl_occ_kernel regs = {.threads = 1024, .regs = 255};
    assert_int_equal(cl_occ_compute(&d, &regs, &r, err, sizeof err), -1);
    assert_contains(err, "registers");
    cl_occ_kernel toomany = {.threads = 64, .regs = 300};
    assert_int_equal(cl_occ_compute(&d, &toomany, &r, err, sizeof err), -1);
    assert_contains(err, "per thread");
}

static void waves(void **state)
{
    (void)state;
    cl_occ_device d;
    cl_occ_device_default(&d);
    d.sms = 4;
    cl_occ_result r = {.blocks_sm = 2};
    cl_occ_spread s;
    cl_occ_spread_of(&d, &r, 19, &s);                   /* waves of 8: 8, 8, 3 */
    assert_int_equal(s.waves, 3);
    assert_int_equal(s.full_waves, 2);
    assert_int_equal(s.last_wave_blocks, 3);
    assert_int_equal(s.sms_more, 3);
    assert_int_equal(s.more, 1);
    assert_int_equal(s.sms_less, 1);
    assert_int_equal(s.less, 0);
    cl_occ_spread_of(&d, &r, 16, &s);
    assert_int_equal(s.waves, 2);
    assert_int_equal(s.sms_more, 4);
    assert_int_equal(s.more, 2);
    assert_int_equal(s.sms_less, 0);
}

static void cpu_kernel_query_refused(void **state)
{
    (void)state;
    cl_occ_query q;
    char err[CL_ERR_LEN];
    assert_int_equal(cl_cpu_occupancy_ops.query(CL_OCC_REDUCE_FAST, 256, &q, err), -1);
    assert_contains(err, "needs the CUDA backend");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lecture_block_shapes),
        cmocka_unit_test(warps_of_three_blocks),
        cmocka_unit_test(registers_exercise),
        cmocka_unit_test(granularity_and_smem),
        cmocka_unit_test(waves),
        cmocka_unit_test(cpu_kernel_query_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
