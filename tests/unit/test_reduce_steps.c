/* test_reduce_steps.c — %reduce --steps (kernel/magics/reduce_steps.c): the
 * block trees of divergent and convergent, step by step, against rows worked
 * out by hand for blocks of 256 (the slides' 8 warps) and 1024 (32 warps);
 * multiblock runs the convergent tree, and the variants without a block tree
 * (cpu, fast, cub) and blocks the kernels never take have no steps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "cudalab/reduce.h"
#include "magics/reduce_internal.h"

/* A block tree worked out by hand: the variant, the block and its steps, each
 * {stride, active threads, active warps, full warps, divergent warps, idle
 * warps, wasted lanes}, as many as the tree has (the rest zero). */
typedef struct tree_case {
    int variant;
    unsigned block;
    rd_step want[RD_MAX_STEPS];
} tree_case;

/* A test per case: the case is the test's state (TREE_CASE below). */
static void tree_steps_as_worked_out(void **state)
{
    const tree_case *c = *state;
    int n = 0;
    while (n < RD_MAX_STEPS && c->want[n].stride)
        n++;
    rd_step got[RD_MAX_STEPS];
    assert_int_equal(rd_tree_steps(c->variant, c->block, got), n);
    for (int i = 0; i < n; i++) {
        const rd_step *w = &c->want[i];
        if (got[i].stride != w->stride || got[i].active_threads != w->active_threads ||
            got[i].active_warps != w->active_warps || got[i].full_warps != w->full_warps ||
            got[i].divergent_warps != w->divergent_warps || got[i].idle_warps != w->idle_warps ||
            got[i].wasted_lanes != w->wasted_lanes)
            fail_msg("variant %d, block %u, step %d: got {%u, %u, %u, %u, %u, %u, %u}, want {%u, %u, %u, %u, %u, "
                     "%u, %u}", c->variant, c->block, i + 1, got[i].stride, got[i].active_threads,
                     got[i].active_warps, got[i].full_warps, got[i].divergent_warps, got[i].idle_warps,
                     got[i].wasted_lanes, w->stride, w->active_threads, w->active_warps, w->full_warps,
                     w->divergent_warps, w->idle_warps, w->wasted_lanes);
    }
}

#define TREE_CASE(c) { #c, tree_steps_as_worked_out, NULL, NULL, (void *)&(c) }

/* t % (2*stride) == 0: every warp keeps one active lane in 2*stride up to stride 16 (all 8 warps
 * issue five steps), then whole warps drop out, each still with a single lane. */
static const tree_case divergent_256 = { CL_REDUCE_DIVERGENT, 256, {
    {1, 128, 8, 0, 8, 0, 128}, {2, 64, 8, 0, 8, 0, 192}, {4, 32, 8, 0, 8, 0, 224}, {8, 16, 8, 0, 8, 0, 240},
    {16, 8, 8, 0, 8, 0, 248},  {32, 4, 4, 0, 4, 4, 124}, {64, 2, 2, 0, 2, 6, 62},  {128, 1, 1, 0, 1, 7, 31},
}};

/* t < stride: whole warps retire while the stride is 32 or more; below it the one warp left diverges. */
static const tree_case convergent_256 = { CL_REDUCE_CONVERGENT, 256, {
    {128, 128, 4, 4, 0, 4, 0}, {64, 64, 2, 2, 0, 6, 0}, {32, 32, 1, 1, 0, 7, 0}, {16, 16, 1, 0, 1, 7, 16},
    {8, 8, 1, 0, 1, 7, 24},    {4, 4, 1, 0, 1, 7, 28},  {2, 2, 1, 0, 1, 7, 30},  {1, 1, 1, 0, 1, 7, 31},
}};

static const tree_case divergent_1024 = { CL_REDUCE_DIVERGENT, 1024, {
    {1, 512, 32, 0, 32, 0, 512},  {2, 256, 32, 0, 32, 0, 768}, {4, 128, 32, 0, 32, 0, 896},
    {8, 64, 32, 0, 32, 0, 960},   {16, 32, 32, 0, 32, 0, 992}, {32, 16, 16, 0, 16, 16, 496},
    {64, 8, 8, 0, 8, 24, 248},    {128, 4, 4, 0, 4, 28, 124},  {256, 2, 2, 0, 2, 30, 62},
    {512, 1, 1, 0, 1, 31, 31},
}};

static const tree_case convergent_1024 = { CL_REDUCE_CONVERGENT, 1024, {
    {512, 512, 16, 16, 0, 16, 0}, {256, 256, 8, 8, 0, 24, 0}, {128, 128, 4, 4, 0, 28, 0},
    {64, 64, 2, 2, 0, 30, 0},     {32, 32, 1, 1, 0, 31, 0},   {16, 16, 1, 0, 1, 31, 16},
    {8, 8, 1, 0, 1, 31, 24},      {4, 4, 1, 0, 1, 31, 28},    {2, 2, 1, 0, 1, 31, 30},
    {1, 1, 1, 0, 1, 31, 31},
}};

/* A block of one warp: the divergent tree never retires it, the convergent one never fills it. */
static const tree_case one_warp_divergent = { CL_REDUCE_DIVERGENT, 32, {
    {1, 16, 1, 0, 1, 0, 16}, {2, 8, 1, 0, 1, 0, 24}, {4, 4, 1, 0, 1, 0, 28}, {8, 2, 1, 0, 1, 0, 30},
    {16, 1, 1, 0, 1, 0, 31},
}};

static const tree_case one_warp_convergent = { CL_REDUCE_CONVERGENT, 32, {
    {16, 16, 1, 0, 1, 0, 16}, {8, 8, 1, 0, 1, 0, 24}, {4, 4, 1, 0, 1, 0, 28}, {2, 2, 1, 0, 1, 0, 30},
    {1, 1, 1, 0, 1, 0, 31},
}};

static void multiblock_is_the_convergent_tree(void **state)
{
    (void)state;
    rd_step conv[RD_MAX_STEPS], multi[RD_MAX_STEPS];
    assert_int_equal(rd_tree_steps(CL_REDUCE_CONVERGENT, 512, conv), 9);
    assert_int_equal(rd_tree_steps(CL_REDUCE_MULTIBLOCK, 512, multi), 9);
    assert_memory_equal(conv, multi, 9 * sizeof conv[0]);
}

static void no_tree_no_steps(void **state)
{
    (void)state;
    rd_step s[RD_MAX_STEPS];
    static const int others[] = {CL_REDUCE_CPU, CL_REDUCE_FAST, CL_REDUCE_CUB, CL_VARIANT_STUDENT};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        assert_int_equal(rd_tree_steps(others[i], 256, s), 0);
        assert_null(rd_steps_json(others[i], 256));
    }
    static const unsigned bad_blocks[] = {0, 16, 96, 2048};
    for (size_t i = 0; i < sizeof bad_blocks / sizeof bad_blocks[0]; i++)
        assert_int_equal(rd_tree_steps(CL_REDUCE_CONVERGENT, bad_blocks[i], s), 0);
}

/* The run's "steps": the rows above under the document's names, step numbered from 1. */
static void steps_json(void **state)
{
    (void)state;
    json_t *a = rd_steps_json(CL_REDUCE_CONVERGENT, 256);
    assert_non_null(a);
    assert_int_equal(json_array_size(a), 8);
    json_t *want = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i}", "step", 4, "stride", 16, "active_threads",
                             16, "active_warps", 1, "full_warps", 0, "divergent_warps", 1, "idle_warps", 7,
                             "wasted_lanes", 16);
    assert_true(json_equal(json_array_get(a, 3), want));
    json_decref(want);
    json_decref(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TREE_CASE(divergent_256),
        TREE_CASE(convergent_256),
        TREE_CASE(divergent_1024),
        TREE_CASE(convergent_1024),
        TREE_CASE(one_warp_divergent),
        TREE_CASE(one_warp_convergent),
        cmocka_unit_test(multiblock_is_the_convergent_tree),
        cmocka_unit_test(no_tree_no_steps),
        cmocka_unit_test(steps_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
