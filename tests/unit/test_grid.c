/* test_grid.c — %grid's arithmetic (cl_grid_plan_make) on the lecture's
 * worked example and on 1D, 3D and ragged shapes, its limit errors, and the
 * CPU analogue of --run (cl_cpu_grid_ops) visiting every element once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cudalab/grid.h"
#include "magics/grid_plan.h"

extern const cl_grid_ops cl_cpu_grid_ops;

static const cl_grid_limits cuda_limits = CL_GRID_CUDA_DEFAULTS;

#define assert_contains(hay, needle) do {                                         \
        if (!strstr((hay), (needle)))                                             \
            fail_msg("'%s'\n  does not contain '%s'", (hay), (needle));           \
    } while (0)

static int plan(int64_t dx, int64_t dy, int64_t dz, int nd, int64_t bx, int64_t by, int64_t bz, int nb,
                cl_grid_plan *p, char *err)
{
    int64_t d[3] = {dx, dy, dz}, b[3] = {bx, by, bz};
    return cl_grid_plan_make(d, nd, b, nb, &cuda_limits, p, err, 512);
}

/* The lecture's picture: 76x62 pixels in 16x16 blocks. */
static void picture_example(void **state)
{
    (void)state;
    cl_grid_plan p;
    char err[512];
    assert_int_equal(plan(76, 62, 1, 2, 16, 16, 1, 2, &p, err), 0);
    assert_int_equal(p.dims, 2);
    assert_int_equal(p.grid[0], 5);
    assert_int_equal(p.grid[1], 4);
    assert_int_equal(p.grid[2], 1);
    assert_int_equal(p.blocks, 20);
    assert_int_equal(p.threads, 5120);
    assert_int_equal(p.elements, 4712);
    assert_int_equal(p.idle, 408);
    assert_true(p.idle_pct > 7.96874 && p.idle_pct < 7.96876);
    assert_int_equal(p.warps_per_block, 8);
    assert_int_equal(p.partial_warps_per_block, 0);
    assert_int_equal(p.warps, 160);
    /* right column of blocks: every warp cut at col 76 (4 blocks x 8); bottom
     * row: each block's last warp (rows 62, 63) entirely idle (5 blocks) */
    assert_int_equal(p.warps_with_idle, 36);
    assert_int_equal(p.warps_all_idle, 5);
    assert_int_equal(p.warps_divergent, 31);
}

/* Warps are the limits' warp size: the device's (32 on every GPU and in the
 * CPU device model), never a constant of %grid's own. */
static void warp_size_from_limits(void **state)
{
    (void)state;
    cl_grid_plan p;
    char err[512];
    assert_int_equal(cuda_limits.warp, 32);
    cl_grid_limits wide = cuda_limits;
    wide.warp = 64;
    int64_t d[3] = {100, 1, 1}, b[3] = {96, 1, 1};
    assert_int_equal(cl_grid_plan_make(d, 1, b, 1, &wide, &p, err, sizeof err), 0);
    assert_int_equal(p.warp, 64);
    assert_int_equal(p.warps_per_block, 2);
    assert_int_equal(p.threads_in_last_warp, 32);
    assert_int_equal(p.partial_warps_per_block, 1);
    assert_int_equal(plan(100, 1, 1, 1, 96, 1, 1, 1, &p, err), 0);
    assert_int_equal(p.warp, 32);
    assert_int_equal(p.warps_per_block, 3);
    assert_int_equal(p.partial_warps_per_block, 0);
}

static void one_and_three_dims(void **state)
{
    (void)state;
    cl_grid_plan p;
    char err[512];
    assert_int_equal(plan(1000000, 1, 1, 1, 256, 1, 1, 1, &p, err), 0);
    assert_int_equal(p.dims, 1);
    assert_int_equal(p.grid[0], 3907);
    assert_int_equal(p.idle, 3907 * 256 - 1000000);
    assert_int_equal(p.warps_with_idle, 6);         /* 1000000 % 256 = 64: two full warps, six idle */
    assert_int_equal(p.warps_all_idle, 6);
    assert_int_equal(p.warps_divergent, 0);
    assert_int_equal(plan(1000, 1, 1, 1, 256, 1, 1, 1, &p, err), 0);
    assert_int_equal(p.warps_divergent, 1);         /* 1000 - 768 = 232 = 7 warps + 8 threads */
    assert_int_equal(p.warps_all_idle, 0);
    assert_int_equal(plan(100, 1, 1, 1, 100, 1, 1, 1, &p, err), 0);
    assert_int_equal(p.warps_per_block, 4);
    assert_int_equal(p.threads_in_last_warp, 4);
    assert_int_equal(p.partial_warps_per_block, 1);
    assert_int_equal(p.idle, 0);
    assert_int_equal(plan(512, 512, 64, 3, 8, 8, 8, 3, &p, err), 0);
    assert_int_equal(p.blocks, 64 * 64 * 8);
    assert_int_equal(p.idle, 0);
    assert_int_equal(p.warps_with_idle, 0);
    assert_int_equal(plan(10, 10, 10, 3, 4, 4, 4, 3, &p, err), 0);
    assert_int_equal(p.blocks, 27);
    assert_int_equal(p.threads, 27 * 64);
    assert_int_equal(p.idle, 27 * 64 - 1000);
    /* fewer block dimensions than data dimensions: the rest are 1 */
    assert_int_equal(plan(1000, 3, 1, 2, 256, 1, 1, 1, &p, err), 0);
    assert_int_equal(p.grid[1], 3);
    assert_int_equal(p.dims, 2);
}

static void limit_errors(void **state)
{
    (void)state;
    cl_grid_plan p;
    char err[512];
    assert_int_equal(plan(64, 64, 1, 2, 32, 64, 1, 2, &p, err), -1);
    assert_contains(err, "2048 threads");
    assert_contains(err, "1024 threads per block");
    assert_int_equal(plan(4096, 1, 1, 1, 2048, 1, 1, 1, &p, err), -1);
    assert_contains(err, "blockDim.x = 2048");
    assert_int_equal(plan(8, 8, 128, 3, 1, 1, 128, 3, &p, err), -1);
    assert_contains(err, "blockDim.z = 128");
    assert_contains(err, "limit of 64");
    assert_int_equal(plan(1, 70000, 1, 2, 1, 1, 1, 2, &p, err), -1);
    assert_contains(err, "dimGrid.y");
    assert_contains(err, "65535");
    assert_int_equal(plan(2147483647, 65535, 1, 2, 1, 1, 1, 2, &p, err), 0);     /* the largest grid */
    assert_int_equal(p.idle, 0);
}

static void cpu_run_visits_once(void **state)
{
    (void)state;
    static const int64_t shapes[][6] = {
        {76, 62, 1, 16, 16, 1}, {1, 1, 1, 1, 1, 1}, {1000, 1, 1, 256, 1, 1}, {33, 17, 5, 8, 4, 2},
        {100, 1, 1, 100, 1, 1}, {7, 9, 11, 4, 4, 4},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        cl_grid_plan p;
        char err[CL_ERR_LEN];
        assert_int_equal(cl_grid_plan_make(shapes[s], 3, shapes[s] + 3, 3, &cuda_limits, &p, err, 512), 0);
        cl_grid_args a = {.reps = 2, .warmup = 1};
        memcpy(a.data, p.data, sizeof a.data);
        memcpy(a.block, p.block, sizeof a.block);
        memcpy(a.grid, p.grid, sizeof a.grid);
        cl_grid_result r;
        assert_int_equal(cl_cpu_grid_ops.run(&a, &r, err), 0);
        assert_int_equal(r.visited_once, (uint64_t)p.elements);
        assert_int_equal(r.never, 0);
        assert_int_equal(r.multiple, 0);
        assert_int_equal(r.idle_threads, (uint64_t)p.idle);
        assert_int_equal(r.times.reps, 2);
        assert_int_equal(r.launch.grid[0], (int)p.grid[0]);
        assert_contains(r.impl, "CPU analogue");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(picture_example),
        cmocka_unit_test(one_and_three_dims),
        cmocka_unit_test(warp_size_from_limits),
        cmocka_unit_test(limit_errors),
        cmocka_unit_test(cpu_run_visits_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
