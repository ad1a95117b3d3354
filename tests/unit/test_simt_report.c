/* test_simt_report.c — the CPU runner's report in words (cpu/simt/report.c),
 * without running anything: findings written into a launch's header as the
 * runner writes them become the lines a student reads, elements named as the
 * family names them (C[67][0], out[-1]), threads and blocks in as many
 * dimensions as the launch has, the two writers in grid order whichever
 * process found them, and the headline the first finding; and the arena's
 * limits (cpu/simt/launch.c) refuse what the runner cannot hold, by name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cudalab/backend.h"
#include "../cpu/simt/simt_launch.h"

#define assert_contains(hay, needle) do {                                         \
        if (!strstr((hay), (needle)))                                             \
            fail_msg("'%s'\n  does not contain '%s'", (hay), (needle));           \
    } while (0)

static void matmul_launch(cl_simt_launch *l)
{
    memset(l, 0, sizeof *l);
    l->grid[0] = 3, l->grid[1] = 5, l->grid[2] = 1;
    l->block[0] = 16, l->block[1] = 16, l->block[2] = 1;
    l->nbuffers = 3;
    const char *names[] = {"A", "B", "C"};
    int64_t rows[] = {67, 129, 67}, cols[] = {129, 33, 33};
    for (int i = 0; i < 3; i++) {
        snprintf(l->buffers[i].name, sizeof l->buffers[i].name, "%s", names[i]);
        l->buffers[i].elem_bytes = 4;
        l->buffers[i].rows = rows[i];
        l->buffers[i].cols = cols[i];
        l->buffers[i].bytes = (uint64_t)(rows[i] * cols[i] * 4);
    }
}

/* A launch of blocks×1×1 blocks of threads×1×1, nothing else set. */
static void one_dim_launch(cl_simt_launch *l, unsigned blocks, unsigned threads)
{
    memset(l, 0, sizeof *l);
    l->grid[0] = blocks, l->grid[1] = l->grid[2] = 1;
    l->block[0] = threads, l->block[1] = l->block[2] = 1;
}

static cl_simt_where at(unsigned bx, unsigned by, unsigned tx, unsigned ty, unsigned line, unsigned access)
{
    cl_simt_where w = {.block = {bx, by, 0}, .thread = {tx, ty, 0}, .access = access, .line = line};
    return w;
}

static void out_of_bounds_names_the_element_past_the_end(void **state)
{
    (void)state;
    cl_simt_launch l;
    matmul_launch(&l);
    l.report.findings[CL_SIMT_OOB_GLOBAL] =
        (cl_simt_finding){.count = 639, .at = at(0, 4, 0, 3, 19, CL_SIMT_WRITE), .buffer = 2, .elem = 67 * 33};
    char text[2048], err[CL_ERR_LEN];
    simt_explain(&l, NULL, text, sizeof text, err);
    assert_contains(err, "out-of-bounds access: thread (0,3) of block (0,4) wrote C[67][0] at line 19, past the end "
                         "of C (67×33)");
    assert_contains(err, "(639 in all)");
}

static void a_vector_before_its_start(void **state)
{
    (void)state;
    cl_simt_launch l;
    one_dim_launch(&l, 4, 256);
    l.nbuffers = 1;
    snprintf(l.buffers[0].name, sizeof l.buffers[0].name, "in");
    l.buffers[0].elem_bytes = 4;
    l.buffers[0].bytes = 1000 * 4;
    l.report.findings[CL_SIMT_OOB_GLOBAL] =
        (cl_simt_finding){.count = 1, .at = at(0, 0, 0, 0, 5, CL_SIMT_READ), .buffer = 0, .elem = -1};
    char text[1024], err[CL_ERR_LEN];
    simt_explain(&l, NULL, text, sizeof text, err);
    assert_contains(err, "thread 0 of block 0 read in[-1] at line 5, before the start of in (1000 elements)");
    assert_null(strstr(err, "in all"));     /* one finding: no count */
}

static void two_writers_in_grid_order_and_every_kind_listed(void **state)
{
    (void)state;
    cl_simt_launch l;
    matmul_launch(&l);
    /* found by block (0,0)'s thread: it wrote second in this run */
    l.report.findings[CL_SIMT_DOUBLE_WRITE] = (cl_simt_finding){
        .count = 990, .at = at(0, 0, 0, 1, 19, CL_SIMT_WRITE), .other = at(2, 0, 1, 0, 0, CL_SIMT_WRITE),
        .buffer = 2, .elem = 33,
    };
    l.report.findings[CL_SIMT_RACE_SHARED] = (cl_simt_finding){
        .count = 5, .at = at(0, 0, 1, 0, 16, CL_SIMT_READ), .other = at(0, 0, 0, 0, 12, CL_SIMT_WRITE),
        .buffer = -1, .what = "As[0][0]|raw",
    };
    char text[4096], err[CL_ERR_LEN];
    simt_explain(&l, NULL, text, sizeof text, err);
    /* the kinds in the report's order: the race first, so it is the headline */
    assert_contains(err, "data race on shared memory: thread (1,0) of block (0,0) read As[0][0] at line 16 while "
                         "thread (0,0) of block (0,0) had written it at line 12, with no __syncthreads() between them");
    assert_contains(text, "two writers: thread (0,1) of block (0,0) and thread (1,0) of block (2,0) both wrote "
                          "C[1][0] at line 19");
    const char *nl = strchr(text, '\n');
    assert_non_null(nl);
    assert_non_null(strchr(nl + 1, '\n'));  /* one line per kind */
}

static void barriers_deadlocks_and_faults(void **state)
{
    (void)state;
    cl_simt_launch l;
    one_dim_launch(&l, 10, 256);
    l.limit_ms = 1000;
    l.report.findings[CL_SIMT_DIVERGENT_BARRIER] = (cl_simt_finding){
        .count = 1, .at = {.block = {9, 0, 0}},
        .what = "__syncthreads() at line 12 was reached by 200 of the block's 256 threads",
    };
    l.report.findings[CL_SIMT_TIMEOUT] =
        (cl_simt_finding){.count = 1, .at = {.block = {3, 0, 0}, .thread = {7, 0, 0}}, .what = "1000"};
    l.report.findings[CL_SIMT_ASSERT] =
        (cl_simt_finding){.count = 1, .at = {.block = {1, 0, 0}, .thread = {2, 0, 0}, .line = 8}, .what = "i < n"};
    char text[4096], err[CL_ERR_LEN];
    simt_explain(&l, NULL, text, sizeof text, err);
    assert_contains(err, "assertion `i < n` failed in thread 2 of block 1 at line 8");
    assert_contains(text, "launch limit: the kernel ran past 1000 ms on the CPU runner; thread 7 of block 3 was "
                          "running");
    assert_contains(text, "divergent barrier in block 9: __syncthreads() at line 12 was reached by 200 of the "
                          "block's 256 threads");
}

static void arena_refuses_past_its_limit(void **state)
{
    (void)state;
    simt_arena a;
    char err[CL_ERR_LEN];
    simt_buffer huge[2] = {{"A", CL_SIMT_MAX_ARENA, 4, CL_SIMT_IN, 0, 0}, {"B", 4096, 4, CL_SIMT_OUT, 0, 0}};
    assert_int_equal(simt_arena_open(&a, huge, 2, err), -1);
    assert_contains(err, "the CPU runner takes at most 1024 MiB of buffers");
    simt_buffer small[2] = {{"x", 100, 4, CL_SIMT_IN, 0, 0}, {"y", 4096, 4, CL_SIMT_OUT, 0, 0}};
    assert_int_equal(simt_arena_open(&a, small, 2, err), 0);
    assert_true((unsigned char *)a.host[0] > a.base && (unsigned char *)a.host[1] > (unsigned char *)a.host[0]);
    assert_int_equal(((uintptr_t)a.host[1] - (uintptr_t)a.host[0]) % 4096, 0);
    memset(a.host[1], 0x7f, 4096);          /* writable, shared */
    assert_int_equal(a.hdr->buffers[1].bytes, 4096);
    assert_string_equal(a.hdr->buffers[0].name, "x");
    simt_arena_close(&a);
}

static void launch_refuses_what_a_gpu_would(void **state)
{
    (void)state;
    simt_arena a;
    char err[CL_ERR_LEN], diag[256];
    simt_buffer one = {"out", 4096, 4, CL_SIMT_OUT, 0, 0};
    assert_int_equal(simt_arena_open(&a, &one, 1, err), 0);
    cl_student_kernel k = {.name = "mine", .host_runner = "/nonexistent", .host_object = "/dev/null", .diagnosis = diag,
                           .diagnosis_len = sizeof diag};
    double ms = 0;
    unsigned grid[3] = {1, 1, 1}, big[3] = {64, 32, 1}, ok[3] = {32, 1, 1}, many[3] = {1 << 20, 64, 1};
    assert_int_equal(simt_launch(&a, &k, grid, big, 0, NULL, 0, &ms, err), -1);
    assert_contains(err, "invalid configuration argument: a block of 64x32x1 threads");
    assert_int_equal(simt_launch(&a, &k, many, ok, 0, NULL, 0, &ms, err), -1);
    assert_contains(err, "the CPU runner runs at most 16777216 threads");
    assert_int_equal(simt_launch(&a, &k, grid, ok, 1u << 20, NULL, 0, &ms, err), -1);
    assert_contains(err, "too much shared memory");
    assert_int_equal(simt_launch(&a, &k, grid, ok, 0, NULL, 0, &ms, err), -1);
    assert_contains(err, "cannot run the CPU runner /nonexistent");
    k.host_runner = NULL;
    assert_int_equal(simt_launch(&a, &k, grid, ok, 0, NULL, 0, &ms, err), -1);
    assert_contains(err, "mine was not built for the CPU runner");
    simt_arena_close(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(out_of_bounds_names_the_element_past_the_end),
        cmocka_unit_test(a_vector_before_its_start),
        cmocka_unit_test(two_writers_in_grid_order_and_every_kind_listed),
        cmocka_unit_test(barriers_deadlocks_and_faults),
        cmocka_unit_test(arena_refuses_past_its_limit),
        cmocka_unit_test(launch_refuses_what_a_gpu_would),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
