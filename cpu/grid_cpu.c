/* grid_cpu.c — the CPU backend's %grid --run: the mapping's CPU analogue behind
 * cl_cpu_grid_ops. Host threads stand in for the GPU's SMs and take blocks
 * round-robin; inside a block a loop walks threadIdx in CUDA's order (x
 * fastest) and applies the same index formulas and bounds check as the
 * kernel in cuda/grid.cu, adding one to each visited element's counter.
 * Each rep is timed with the monotonic clock around the mapping only.
 *
 * A student's picture kernel (a->student) runs on the CPU runner of the CUDA
 * model (cpu/simt/) with the GPU's launch: Pin and Pout (Pout[row][col]) in
 * an arena, the grid the plan computes from its block (--grid overrides),
 * Pin new and Pout NaN-filled before every launch, every launch but the last
 * (the run's own seed) checked after it, the last's Pout copied back for the
 * host's check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "common/cpu_common.h"
#include "cudalab/grid.h"
#include "simt/simt_launch.h"

#define GRID_CPU_MAX_THREADS 16

typedef struct grid_launch {
    const cl_grid_args *a;
    uint32_t *count;
    uint64_t idle;                /* threads that fell outside the data, summed atomically */
} grid_launch;

/* Logical block b: its threads in CUDA's order, x fastest. */
static void grid_block(long long b, void *arg)
{
    grid_launch *l = arg;
    const cl_grid_args *a = l->a;
    int64_t bx = b % a->grid[0], by = (b / a->grid[0]) % a->grid[1], bz = b / (a->grid[0] * a->grid[1]);
    uint64_t idle = 0;
    for (int64_t tz = 0; tz < a->block[2]; tz++)
        for (int64_t ty = 0; ty < a->block[1]; ty++)
            for (int64_t tx = 0; tx < a->block[0]; tx++) {
                int64_t col = bx * a->block[0] + tx;
                int64_t row = by * a->block[1] + ty;
                int64_t plane = bz * a->block[2] + tz;
                if (col < a->data[0] && row < a->data[1] && plane < a->data[2])
                    __atomic_fetch_add(&l->count[(plane * a->data[1] + row) * a->data[0] + col], 1u,
                                       __ATOMIC_RELAXED);
                else
                    idle++;
            }
    if (idle)
        __atomic_fetch_add(&l->idle, idle, __ATOMIC_RELAXED);
}

/* One launch's analogue on zeroed counts; returns the idle threads. */
static uint64_t map_once(const cl_grid_args *a, uint32_t *count, int nthreads)
{
    grid_launch l = {a, count, 0};
    cl_parallel_for(a->grid[0] * a->grid[1] * a->grid[2], nthreads, grid_block, &l);
    return l.idle;
}

/* ---- a student's picture kernel, on the CPU runner ---- */

/* Its reps (simt_rep_ops): Pin of the rep's seed; Pout against 2 * Pin (cl_grid_picture_check). */
static int student_prepare(simt_arena *ar, void *ctx, uint64_t seed, char *err)
{
    const cl_grid_args *a = ctx;
    float *pin = ar->host[0];
    (void)err;
    for (uint64_t i = 0; i < (uint64_t)a->data[0] * (uint64_t)a->data[1]; i++)
        pin[i] = cl_uniform(seed, i);
    return 0;
}

static int student_check(simt_arena *ar, void *ctx, uint64_t seed, char *what)
{
    const cl_grid_args *a = ctx;
    const float *pout = ar->host[1];
    uint64_t width = (uint64_t)a->data[0], wrong, never;
    int64_t first = cl_grid_picture_check(pout, width, (uint64_t)a->data[1], seed, &wrong, &never);
    if (first < 0)
        return 0;
    simt_wrong_element(what, pout[first], 2.0f * cl_uniform(seed, (uint64_t)first), "Pout[%llu][%llu]",
                       (unsigned long long)((uint64_t)first / width), (unsigned long long)((uint64_t)first % width));
    return 1;
}

/* As the CUDA side (cuda/grid.cu): the picture cl_uniform(seed, i), the grid
 * ceil(width/block.x) x ceil(height/block.y) of the kernel's block. */
static int cpu_grid_picture(const cl_grid_args *a, cl_grid_result *out, char *err)
{
    const cl_student_kernel *k = a->student;
    if (a->data[2] > 1 || a->data[0] > INT32_MAX || a->data[1] > INT32_MAX) {
        snprintf(err, CL_ERR_LEN, "%s takes a 2D picture of int width and height", k->name);
        return -1;
    }
    int64_t width = a->data[0], height = a->data[1];
    uint64_t n = (uint64_t)width * (uint64_t)height;
    simt_buffer bufs[2] = {
        { "Pin", n * 4, 4, CL_SIMT_IN, height, width },
        { "Pout", n * 4, 4, CL_SIMT_OUT | CL_SIMT_ONE_WRITER, height, width },
    };
    simt_arena ar;
    if (simt_arena_open(&ar, bufs, 2, err) != 0)
        return -1;
    unsigned block[3];
    simt_student_block(k, block);
    unsigned rule[3] = { (unsigned)(((uint64_t)width + block[0] - 1) / block[0]),
                         (unsigned)(((uint64_t)height + block[1] - 1) / block[1]), 1 };
    cl_simt_arg args[4] = {
        { CL_SIMT_ARG_BUFFER, 0, { 0 } }, { CL_SIMT_ARG_BUFFER, 1, { 0 } },
        { CL_SIMT_ARG_I32, 0, { .i32 = (int32_t)width } }, { CL_SIMT_ARG_I32, 0, { .i32 = (int32_t)height } },
    };
    static const simt_rep_ops reps = { student_prepare, NULL, student_check, { 1, SIMT_NAN } };
    int rc = simt_run_student(&ar, k, rule, k->dyn_smem, args, 4, a->reps, a->seed, &reps, (void *)a, &out->times,
                              &out->launch, err);
    if (rc == 0 && a->pout)
        memcpy(a->pout, ar.host[1], n * sizeof(float));
    simt_arena_close(&ar);
    snprintf(out->impl, sizeof out->impl, "your kernel %s on %s", k->name, SIMT_CONFIG);
    return rc;
}

static int cpu_grid_run(const cl_grid_args *a, cl_grid_result *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (a->student)
        return cpu_grid_picture(a, out, err);
    uint64_t n = (uint64_t)(a->data[0] * a->data[1] * a->data[2]);
    int64_t nblocks = a->grid[0] * a->grid[1] * a->grid[2];
    uint32_t *count = malloc(n * sizeof *count);
    if (!count) {
        snprintf(err, CL_ERR_LEN, "out of host memory for %llu counters", (unsigned long long)n);
        return -1;
    }
    int nthreads = cl_cpu_threads();
    if (nthreads > GRID_CPU_MAX_THREADS)
        nthreads = GRID_CPU_MAX_THREADS;
    if (nthreads > nblocks)
        nthreads = (int)nblocks;
    uint64_t idle = 0;
    for (int w = 0; w < a->warmup; w++) {
        memset(count, 0, n * sizeof *count);
        idle = map_once(a, count, nthreads);
    }
    for (cl_times *tm = &out->times; cl_rep_more(a->reps, tm); tm->reps++) {
        memset(count, 0, n * sizeof *count);
        double t0 = cl_now_ms();
        idle = map_once(a, count, nthreads);
        tm->ms[tm->reps] = (float)(cl_now_ms() - t0);
        cl_rep_done();
    }
    cl_times_trusted(&out->times);
    for (uint64_t i = 0; i < n; i++) {
        out->visited_once += count[i] == 1;
        out->never += count[i] == 0;
        out->multiple += count[i] > 1;
    }
    out->idle_threads = idle;
    free(count);
    for (int d = 0; d < 3; d++) {
        out->launch.grid[d] = (int)a->grid[d];
        out->launch.block[d] = (int)a->block[d];
    }
    out->launch.kernels = 1;
    snprintf(out->impl, sizeof out->impl, "CPU analogue: %d host threads take the %lld blocks "
             "round-robin, each walking threadIdx x-fastest with the kernel's index formulas",
             nthreads, (long long)nblocks);
    return 0;
}

/* runs_student: the picture kernel on the CPU runner of the CUDA model (cpu/simt/) */
const cl_grid_ops cl_cpu_grid_ops = {cpu_grid_run, true};
