/* test_simt_counts.c — --counters on the CPU runner without running a kernel: the arithmetic of
 * one warp-wide request (cpu/simt/runtime/request.c: 32-byte sectors of a global load, extra
 * wavefronts of a shared access's bank conflicts) on the access patterns a lecture draws, and the
 * CPU backend's side (cpu/simt/counters.c): a counted launch's totals under --counters' names,
 * what the simulation does not model left NaN, a truncated count said in the source, and the
 * account of one run (asked, counted once, read once, a failure's reason).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cudalab/backend.h"
#include "../cpu/simt/runtime/request.h"
#include "../cpu/simt/simt_launch.h"

/* A request of the lanes in mask, lane l at base + l * stride, bytes each. */
static warp_request pattern(uint32_t mask, uint32_t base, uint32_t stride, uint16_t bytes)
{
    warp_request r;
    memset(&r, 0, sizeof r);
    r.mask = mask;
    for (uint32_t l = 0; l < WARP_LANES; l++)
        if (mask >> l & 1) {
            r.offset[l] = base + l * stride;
            r.bytes[l] = bytes;
        }
    return r;
}

#define ALL 0xffffffffu

static void sectors_of_a_global_load(void **state)
{
    (void)state;
    warp_request r = pattern(ALL, 4096, 4, 4);
    assert_int_equal(warp_sectors(&r), 4);              /* consecutive floats: coalesced */
    r = pattern(ALL, 4096 + 4, 4, 4);
    assert_int_equal(warp_sectors(&r), 5);              /* the same, one float off the sector's start */
    r = pattern(ALL, 4096, 128, 4);
    assert_int_equal(warp_sectors(&r), 32);             /* a stride of 32 floats: a sector each */
    r = pattern(ALL, 4096, 8, 4);
    assert_int_equal(warp_sectors(&r), 8);              /* a stride of 2: half of each sector unused */
    r = pattern(ALL, 4096, 0, 4);
    assert_int_equal(warp_sectors(&r), 1);              /* one float for every lane */
    r = pattern(ALL, 4096, 16, 16);
    assert_int_equal(warp_sectors(&r), 16);             /* float4: 512 bytes */
    r = pattern(ALL, 4096, 8, 8);
    assert_int_equal(warp_sectors(&r), 8);              /* doubles */
    r = pattern(0x0000ffffu, 4096, 4, 4);
    assert_int_equal(warp_sectors(&r), 2);              /* half a warp active */
    r = pattern(0x1u, 4096 + 28, 0, 8);
    assert_int_equal(warp_sectors(&r), 2);              /* one lane across a sector's edge */
    /* two rows of a 16-wide block: lanes 16..31 read the same row of B as lanes 0..15 */
    r = pattern(0x0000ffffu, 4096, 4, 4);
    for (uint32_t l = 16; l < 32; l++) {
        r.mask |= 1u << l;
        r.offset[l] = 4096 + (l - 16) * 4;
        r.bytes[l] = 4;
    }
    assert_int_equal(warp_sectors(&r), 2);
    /* lanes in reverse order touch the same sectors */
    r = pattern(ALL, 4096, 4, 4);
    for (uint32_t l = 0; l < 32; l++)
        r.offset[l] = 4096 + (31 - l) * 4;
    assert_int_equal(warp_sectors(&r), 4);
}

static void bank_conflicts_of_a_shared_access(void **state)
{
    (void)state;
    warp_request r = pattern(ALL, 0, 4, 4);
    assert_int_equal(warp_bank_conflicts(&r), 0);       /* consecutive floats: one bank each */
    r = pattern(ALL, 0, 8, 4);
    assert_int_equal(warp_bank_conflicts(&r), 1);       /* stride 2: two words in each even bank */
    r = pattern(ALL, 0, 128, 4);
    assert_int_equal(warp_bank_conflicts(&r), 31);      /* stride 32 (a tile's column): one bank */
    r = pattern(ALL, 0, 132, 4);
    assert_int_equal(warp_bank_conflicts(&r), 0);       /* stride 33 (the padded tile) */
    r = pattern(ALL, 256, 0, 4);
    assert_int_equal(warp_bank_conflicts(&r), 0);       /* one word for all: a broadcast */
    r = pattern(0x0000ffffu, 0, 128, 4);
    assert_int_equal(warp_bank_conflicts(&r), 15);      /* only the active lanes count */
    /* half the lanes on word 0, half on word 32: the same bank, two words */
    r = pattern(ALL, 0, 0, 4);
    for (uint32_t l = 16; l < 32; l++)
        r.offset[l] = 128;
    assert_int_equal(warp_bank_conflicts(&r), 1);
    r = pattern(ALL, 0, 8, 8);
    assert_int_equal(warp_bank_conflicts(&r), 0);       /* consecutive doubles: the two wavefronts they need */
    r = pattern(ALL, 0, 16, 8);
    assert_int_equal(warp_bank_conflicts(&r), 2);       /* doubles at a stride of 2: four words a bank, of two */
    r = pattern(ALL, 0, 16, 16);
    assert_int_equal(warp_bank_conflicts(&r), 0);       /* float4: four wavefronts, no more */
    r = pattern(0x1u, 0, 0, 1024);
    assert_int_equal(warp_bank_conflicts(&r), 0);       /* a lane's long copy: its first 16 bytes */
}

static cl_simt_counts counted(void)
{
    cl_simt_counts c = {.requests = 10, .active_lanes = 10 * 32 - 16, .global_loads = 4,
                        .global_load_sectors = 4 * 4 + 32, .shared_requests = 3, .bank_conflicts = 62,
                        .read_sectors = 1024, .written_sectors = 512};
    return c;
}

static void counts_under_the_counters_names(void **state)
{
    (void)state;
    cl_simt_counts c = counted();
    cl_counters out;
    simt_counters_of(&c, &out);
    assert_int_equal(out.measured, 1);
    assert_int_equal(out.passes, 1);
    assert_string_equal(out.source, "simulation (CPU runner)");
    assert_true(out.global_load_sectors_per_request == 12.0);
    assert_true(out.shared_bank_conflicts == 62);
    assert_true(out.warp_execution_efficiency_pct == 95.0);
    assert_true(out.dram_read_bytes == 1024 * 32 && out.dram_write_bytes == 512 * 32);
    assert_true(isnan(out.l1_hit_pct) && isnan(out.l2_hit_pct) && isnan(out.achieved_occupancy_pct) &&
                isnan(out.flop));
    /* no global load, no request: nothing to divide, not 0 */
    cl_simt_counts none = {.read_sectors = 0};
    simt_counters_of(&none, &out);
    assert_true(isnan(out.global_load_sectors_per_request) && isnan(out.warp_execution_efficiency_pct));
    assert_true(out.shared_bank_conflicts == 0 && out.dram_read_bytes == 0);
    /* past the request table's bound: said in the source, which still begins "simulation" */
    c.uncounted = 4194304;
    simt_counters_of(&c, &out);
    assert_string_equal(out.source, "simulation (CPU runner; truncated: 4194304 accesses not counted)");
}

static void one_account_per_run(void **state)
{
    (void)state;
    cl_counters out;
    cl_cpu_set_counters(0);
    assert_false(simt_counters_due());
    assert_int_equal(cl_cpu_counters(&out), -1);        /* not asked */

    cl_cpu_set_counters(1);
    assert_true(simt_counters_due());
    assert_int_equal(cl_cpu_counters(&out), 0);         /* asked, but no kernel of the runner ran */
    assert_int_equal(out.measured, 0);
    assert_non_null(strstr(out.unavailable, "the CPU backend has no hardware counters"));
    assert_non_null(strstr(out.unavailable, "CPU runner"));

    static cl_simt_launch h;
    h.report.counts = counted();
    simt_arena a = { .hdr = &h };
    simt_counters_took(&a);
    assert_false(simt_counters_due());                  /* one counted launch a run */
    assert_int_equal(cl_cpu_counters(&out), 0);
    assert_int_equal(out.measured, 1);
    assert_true(out.global_load_sectors_per_request == 12.0);
    assert_true(simt_counters_due());                   /* read: the next run starts its own account */
    assert_int_equal(cl_cpu_counters(&out), 0);
    assert_int_equal(out.measured, 0);

    simt_counters_failed("launch limit: the kernel ran past 20000 ms");
    assert_false(simt_counters_due());
    assert_int_equal(cl_cpu_counters(&out), 0);
    assert_int_equal(out.measured, 0);
    assert_string_equal(out.unavailable, "the counted launch on the CPU runner failed: launch limit: the kernel "
                                         "ran past 20000 ms");
    cl_cpu_set_counters(0);
    assert_int_equal(cl_cpu_counters(&out), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sectors_of_a_global_load),
        cmocka_unit_test(bank_conflicts_of_a_shared_access),
        cmocka_unit_test(counts_under_the_counters_names),
        cmocka_unit_test(one_account_per_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
