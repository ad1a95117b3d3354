/* test_lesson.c — the lesson checks' figures (kernel/magic/lesson.c) from a counted launch's lesson,
 * without running a kernel: each family's figure against the lesson's kernel's for the launch, the
 * line and the sentence of a failure, and the median block of divergent steps.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "magic/lesson.h"

static void add_buffer(cl_simt_lesson_taken *t, const char *name, int64_t rows, int64_t cols, uint64_t elems)
{
    cl_simt_buffer *b = &t->buffers[t->nbuffers++];
    snprintf(b->name, sizeof b->name, "%s", name);
    b->rows = rows, b->cols = cols, b->elem_bytes = 4, b->bytes = elems * 4;
}

static void add_site(cl_simt_lesson_taken *t, int at, uint64_t pc, int buffer, bool atomic, uint64_t requests,
                     uint64_t sectors, int line)
{
    t->lesson.sites[at] = (cl_simt_site){ pc, buffer, atomic, requests, sectors };
    t->site_line[at] = line;
}

/* A 64×64×64 product's launch in 16×16 blocks, nothing counted yet. */
static void matmul_64(cl_simt_lesson_taken *t)
{
    memset(t, 0, sizeof *t);
    add_buffer(t, "A", 64, 64, 64 * 64);
    add_buffer(t, "B", 64, 64, 64 * 64);
    add_buffer(t, "C", 64, 64, 64 * 64);
    t->block[0] = t->block[1] = 16, t->block[2] = 1;
    t->grid[0] = t->grid[1] = 4, t->grid[2] = 1;
}

static const json_t *get(const json_t *lesson, const char *name, const char *field)
{
    return json_object_get(json_object_get(lesson, name), field);
}

/* A 64×64×64 product in 16×16 blocks: naive loads 2 per multiply-add, tiled 2/16. */
static void matmul_tiles_against_naive(void **state)
{
    (void)state;
    cl_simt_lesson_taken t;
    matmul_64(&t);
    double fma = 64.0 * 64 * 64;
    t.lesson.loads[0] = t.lesson.loads[1] = (uint64_t)(fma / 16);     /* tiled: each element loaded 4 times */
    add_site(&t, 0, 0x1000, 0, false, 100, 400, 10);
    add_site(&t, 1, 0x1010, 1, false, 100, 3200, 11);                  /* B: 32 sectors a request */
    t.lesson.shared_read_bytes = 2 * 16 * 16 * 4;
    lesson_launch l = { "matmul", 1, &t };
    json_t *o = lesson_figures(&l);
    assert_true(fabs(json_real_value(get(o, "global_loads_per_fma", "value")) - 0.125) < 1e-12);
    assert_true(fabs(json_real_value(get(o, "global_loads_per_fma", "expected")) - 0.125) < 1e-12);
    assert_true(json_is_true(get(o, "global_loads_per_fma", "passed")));
    assert_true(json_is_null(get(o, "global_loads_per_fma", "why")));
    assert_true(json_is_true(get(o, "shared_bytes_used", "passed")));
    assert_true(json_is_false(get(o, "load_sectors_per_request", "passed")));   /* the worst instruction */
    assert_int_equal(json_integer_value(get(o, "load_sectors_per_request", "line")), 11);
    assert_non_null(strstr(json_string_value(get(o, "load_sectors_per_request", "why")), "line 11 reads B 32.0 sectors"));
    assert_false(lesson_passed(o));
    json_decref(o);
    t.lesson.loads[0] = t.lesson.loads[1] = (uint64_t)fma;             /* naive, with a 4-byte decoy */
    t.lesson.shared_read_bytes = 4;
    o = lesson_figures(&l);
    assert_true(json_real_value(get(o, "global_loads_per_fma", "value")) == 2.0);
    assert_true(json_is_false(get(o, "global_loads_per_fma", "passed")));
    assert_int_equal(json_integer_value(get(o, "global_loads_per_fma", "line")), 10);   /* the most requests: A's */
    assert_true(json_is_false(get(o, "shared_bytes_used", "passed")));
    assert_true(json_is_null(get(o, "shared_bytes_used", "line")));
    json_decref(o);
}

/* Divergent steps: the median block's, so that the last block's bounds do not count. */
static void reduce_takes_the_median_block(void **state)
{
    (void)state;
    cl_simt_lesson_taken t;
    memset(&t, 0, sizeof t);
    t.lesson.divergent_blocks[5] = 195;
    t.lesson.divergent_blocks[6] = 1;                  /* the last block: its loads past n too */
    t.lesson.worst_steps = 6, t.lesson.worst_block = 195, t.lesson.worst_line = 11;
    t.worst_line = 10;
    lesson_launch l = { "reduce", 1, &t };
    json_t *o = lesson_figures(&l);
    assert_true(json_real_value(get(o, "divergent_steps", "value")) == 5.0);
    assert_true(json_is_true(get(o, "divergent_steps", "passed")));
    json_decref(o);
    t.lesson.divergent_blocks[5] = 0, t.lesson.divergent_blocks[8] = 195;
    o = lesson_figures(&l);
    assert_true(json_real_value(get(o, "divergent_steps", "value")) == 8.0);
    assert_non_null(strstr(json_string_value(get(o, "divergent_steps", "why")), "line 10 runs in warps with idle lanes"));
    json_decref(o);
}

/* Histogram atomics per byte against bins × blocks ÷ n; lost updates name their line. */
static void histo_against_privatised(void **state)
{
    (void)state;
    cl_simt_lesson_taken t;
    memset(&t, 0, sizeof t);
    add_buffer(&t, "data", 0, 0, 0);
    t.buffers[0].elem_bytes = 1, t.buffers[0].bytes = 100000;
    add_buffer(&t, "histo", 0, 0, 7);
    t.grid[0] = 8, t.grid[1] = t.grid[2] = 1;
    t.lesson.atomics[1] = 7 * 8;
    lesson_launch l = { "histo", 1, &t };
    json_t *o = lesson_figures(&l);
    assert_true(fabs(json_real_value(get(o, "global_atomics_per_byte", "expected")) - 56e-5) < 1e-12);
    assert_true(json_is_true(get(o, "global_atomics_per_byte", "passed")));
    assert_true(json_is_true(get(o, "lost_updates", "passed")));
    json_decref(o);
    t.lesson.atomics[1] = 90000, t.lesson.lost_updates = 12, t.lost_line = 6;
    o = lesson_figures(&l);
    assert_true(json_is_false(get(o, "global_atomics_per_byte", "passed")));
    assert_true(json_is_false(get(o, "lost_updates", "passed")));
    assert_int_equal(json_integer_value(get(o, "lost_updates", "line")), 6);
    json_decref(o);
}

/* A 1D stencil's tiles with their halo, clipped at the array's ends: 1 + 2R/blockDim inside. */
static void stencil_halo_clipped(void **state)
{
    (void)state;
    cl_simt_lesson_taken t;
    memset(&t, 0, sizeof t);
    add_buffer(&t, "in", 1, 1024, 1024);
    add_buffer(&t, "out", 1, 1024, 1024);
    add_buffer(&t, "w", 0, 0, 7);                       /* R = 3 */
    t.block[0] = 256, t.block[1] = t.block[2] = 1;
    t.grid[0] = 4, t.grid[1] = t.grid[2] = 1;
    t.lesson.loads[0] = 1024 + 6 * 3;                   /* four tiles, six halos inside the array */
    lesson_launch l = { "stencil", 1, &t };
    json_t *o = lesson_figures(&l);
    assert_true(fabs(json_real_value(get(o, "global_loads_per_output", "expected")) - (1024.0 + 18) / 1024) < 1e-12);
    assert_true(json_is_true(get(o, "global_loads_per_output", "passed")));
    json_decref(o);
    l.family = "vecadd";
    assert_null(lesson_figures(&l));                    /* no lesson checks */
}

/* A kernel that reads nothing (a stub) passes no check of how it reads: nothing is not the lesson's. */
static void reading_nothing_is_no_lesson(void **state)
{
    (void)state;
    cl_simt_lesson_taken t;
    matmul_64(&t);
    lesson_launch l = { "matmul", 1, &t };
    json_t *o = lesson_figures(&l);
    assert_true(json_is_false(get(o, "global_loads_per_fma", "passed")));
    assert_true(json_is_false(get(o, "load_sectors_per_request", "passed")));
    assert_non_null(strstr(json_string_value(get(o, "global_loads_per_fma", "why")), "reads nothing of A and B"));
    json_decref(o);
    memset(&t, 0, sizeof t);
    add_buffer(&t, "in", 1, 1024, 1024);
    add_buffer(&t, "out", 1, 1024, 1024);
    t.block[0] = 256, t.block[1] = t.block[2] = 1;
    t.grid[0] = 4, t.grid[1] = t.grid[2] = 1;
    l.family = "coalesce";
    o = lesson_figures(&l);
    assert_true(json_is_false(get(o, "load_sectors_per_request", "passed")));
    assert_non_null(strstr(json_string_value(get(o, "load_sectors_per_request", "why")), "reads nothing of in"));
    json_decref(o);
    add_buffer(&t, "w", 0, 0, 7);
    l.family = "stencil";
    o = lesson_figures(&l);
    assert_true(json_is_false(get(o, "global_loads_per_output", "passed")));
    json_decref(o);
}

/* A GPU's hardware counters join the checks that they measure; a simulation's do not (they are the
 * lesson's own counts). */
static void gpu_counters_join_their_checks(void **state)
{
    (void)state;
    json_t *lesson = json_pack("{s:{s:f}, s:{s:f}, s:{s:f}}", "load_sectors_per_request", "value", 16.0,
                               "divergent_steps", "value", 5.0, "shared_bytes_used", "value", 2048.0);
    json_t *sim = json_pack("{s:b, s:s, s:f}", "measured", 1, "source", "simulation (CPU runner)",
                            "global_load_sectors_per_request", 16.0);
    lesson_add_gpu_counters(lesson, sim);
    assert_null(json_object_get(json_object_get(lesson, "load_sectors_per_request"), "gpu"));
    json_t *hw = json_pack("{s:b, s:s, s:f, s:f, s:n}", "measured", 1, "source", "hardware (CUPTI range profiler)",
                           "global_load_sectors_per_request", 9.5, "warp_execution_efficiency_pct", 87.5,
                           "l2_hit_pct");
    lesson_add_gpu_counters(lesson, hw);
    const json_t *gpu = get(lesson, "load_sectors_per_request", "gpu");
    assert_true(json_real_value(json_object_get(gpu, "global_load_sectors_per_request")) == 9.5);
    assert_true(json_real_value(json_object_get(get(lesson, "divergent_steps", "gpu"), "warp_execution_efficiency_pct"))
                == 87.5);
    assert_null(get(lesson, "shared_bytes_used", "gpu"));
    json_decref(hw);
    json_decref(sim);
    json_decref(lesson);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matmul_tiles_against_naive),
        cmocka_unit_test(reduce_takes_the_median_block),
        cmocka_unit_test(histo_against_privatised),
        cmocka_unit_test(stencil_halo_clipped),
        cmocka_unit_test(reading_nothing_is_no_lesson),
        cmocka_unit_test(gpu_counters_join_their_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
