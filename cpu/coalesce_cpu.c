/* coalesce_cpu.c — the CPU backend's %coalesce behind cl_cpu_coalesce_ops: the
 * kernel's access pattern run by host threads, timed with the monotonic clock.
 *
 * Host thread k takes a contiguous range of the CUDA thread indices t and
 * copies element (t % m)*s + t/m for each, so consecutive iterations of one
 * host thread jump s elements, as neighbouring CUDA threads do. What slows
 * the strided copy down here is the cache (a 64-byte line used for one
 * float, hardware prefetchers defeated) and the TLB, not DRAM bursts shared
 * by a warp; the trend is the same, the mechanism is not. A buffer twice the
 * last-level cache (16..64 MiB) is written before each rep so that small
 * sizes are not served from cache.
 *
 * A student's copy (a->student) runs on the CPU runner of the CUDA model
 * (cpu/simt/) with the GPU's launch: in and out in an arena, one thread per
 * element of the ceil(n/stride) x stride view in blocks of its block (--grid
 * overrides), in new and out NaN-filled before every launch, every launch but
 * the last (the run's own seed) checked after it, the last's by the magic.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <math.h>

#include "common/cpu_common.h"
#include "cudalab/coalesce.h"
#include "simt/simt_launch.h"

extern const cl_coalesce_ops cl_cpu_coalesce_ops;

static size_t flush_bytes(void)
{
    long llc = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
    llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    size_t lo = (size_t)16 << 20, hi = (size_t)64 << 20, b = llc > 0 ? 2 * (size_t)llc : hi;
    return b < lo ? lo : b > hi ? hi : b;
}

typedef struct cjob {
    const float *in;
    float *out;
    uint64_t n, m, s;
} cjob;

/* Thread indices t in [first, last): t = col*m + row copies element
 * row*s + col. A run of t within one column is a loop over rows with the
 * element index stepping s, cut where it leaves the array (only the last row
 * can), so the loop itself does nothing but the strided copy. */
CL_HOT static void copy_range(uint64_t first, uint64_t last, void *ctx)
{
    const cjob *j = ctx;
    const float *restrict in = j->in;
    float *restrict out = j->out;
    uint64_t n = j->n, m = j->m, s = j->s;
    for (uint64_t t = first; t < last;) {
        uint64_t col = t / m, row = t % m, run = m - row < last - t ? m - row : last - t;
        uint64_t inside = (n + s - 1 - col) / s;    /* rows whose element in this column is below n */
        uint64_t stop = row + run < inside ? row + run : inside;
        for (uint64_t r = row, i = row * s + col; r < stop; r++, i += s)
            out[i] = in[i];
        t += run;
    }
}

static void fill_range(uint64_t first, uint64_t last, void *ctx)
{
    const cjob *j = ctx;
    float *x = (float *)j->in;
    for (uint64_t i = first; i < last; i++)
        x[i] = cl_uniform(j->s, i);         /* s carries the seed here */
}

/* ---- a student's copy, on the CPU runner ---- */

/* Its reps (simt_rep_ops): in of the rep's seed; out against it (cl_coalesce_verify). */
static int student_prepare(simt_arena *ar, void *ctx, uint64_t seed, char *err)
{
    const cl_coalesce_args *a = ctx;
    float *in = ar->host[0];
    (void)err;
    for (uint64_t i = 0; i < a->n; i++)
        in[i] = cl_uniform(seed, i);
    return 0;
}

static int student_check(simt_arena *ar, void *ctx, uint64_t seed, char *what)
{
    cl_coalesce_args at = *(const cl_coalesce_args *)ctx;
    cl_coalesce_result r;
    memset(&r, 0, sizeof r);
    at.seed = seed;
    cl_coalesce_verify(&at, ar->host[1], &r);
    if (!r.mismatches)
        return 0;
    simt_wrong_element(what, r.got, r.want, "out[%llu]", (unsigned long long)r.first_bad);
    return 1;
}

/* As the CUDA side (cuda/coalesce.cu): ceil(threads / B) blocks of the
 * kernel's block for the ceil(n/stride)*stride threads of the view. */
static int cpu_coalesce_student(const cl_coalesce_args *a, cl_coalesce_result *out, char *err)
{
    const cl_student_kernel *k = a->student;
    unsigned block[3];
    simt_student_block(k, block);
    uint64_t per_block = (uint64_t)block[0] * block[1] * block[2];
    uint64_t blocks = (cl_coalesce_threads(a->n, a->stride) + per_block - 1) / per_block;
    if (blocks > 0x7fffffffull) {
        snprintf(err, CL_ERR_LEN, "%llu blocks of %llu threads: more than a grid holds (2^31-1)",
                 (unsigned long long)blocks, (unsigned long long)per_block);
        return -1;
    }
    simt_buffer bufs[2] = {
        { "in", a->n * 4, 4, CL_SIMT_IN, 0, 0 },
        { "out", a->n * 4, 4, CL_SIMT_OUT | CL_SIMT_ONE_WRITER, 0, 0 },
    };
    simt_arena ar;
    if (simt_arena_open(&ar, bufs, 2, err) != 0)
        return -1;
    unsigned rule[3] = { (unsigned)blocks, 1, 1 };
    cl_simt_arg args[4] = {
        { CL_SIMT_ARG_BUFFER, 0, { 0 } }, { CL_SIMT_ARG_BUFFER, 1, { 0 } },
        { CL_SIMT_ARG_U64, 0, { .u64 = a->n } }, { CL_SIMT_ARG_U64, 0, { .u64 = a->stride } },
    };
    static const simt_rep_ops reps = { student_prepare, NULL, student_check, { 1, SIMT_NAN } };
    int rc = simt_run_student(&ar, k, rule, k->dyn_smem, args, 4, a->reps, a->seed, &reps, (void *)a, &out->times,
                              &out->launch, err);
    if (rc == 0 && a->check)
        cl_coalesce_verify(a, ar.host[1], out);
    simt_arena_close(&ar);
    snprintf(out->impl, sizeof out->impl, "your kernel %s on %s", k->name, SIMT_CONFIG);
    return rc;
}

static int cpu_coalesce_run(const cl_coalesce_args *a, cl_coalesce_result *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (a->student && a->n >= 1 && a->stride >= 1)
        return cpu_coalesce_student(a, out, err);
    if (a->n < 1 || a->stride < 1) {
        snprintf(err, CL_ERR_LEN, "bad %%coalesce arguments");
        return -1;
    }
    size_t fb = flush_bytes();
    float *in = malloc(a->n * sizeof(float)), *o = calloc(a->n, sizeof(float));
    unsigned char *flush = malloc(fb);
    int ret = -1;
    if (!in || !o || !flush) {
        snprintf(err, CL_ERR_LEN, "out of host memory for %%coalesce (%.1f MiB)", a->n * 8.0 / 1048576.0);
        goto done;
    }
    int threads = cl_cpu_threads_for(a->n);
    cjob fill = {in, o, a->n, 0, a->seed};
    cl_parallel_ranges(a->n, threads, fill_range, &fill);
    uint64_t m = cl_coalesce_rows(a->n, a->stride);
    cjob j = {in, o, a->n, m, a->stride};
    for (int w = 0; w < a->warmup; w++) {
        memset(flush, w & 0xff, fb);
        cl_parallel_ranges(m * a->stride, threads, copy_range, &j);
    }
    for (cl_times *tm = &out->times; cl_rep_more(a->reps, tm); tm->reps++) {
        memset(flush, tm->reps & 0xff, fb);
        double t0 = cl_now_ms();
        cl_parallel_ranges(m * a->stride, threads, copy_range, &j);
        tm->ms[tm->reps] = (float)(cl_now_ms() - t0);
        cl_rep_done();
    }
    cl_times_trusted(&out->times);
    if (a->check)
        cl_coalesce_verify(a, o, out);
    /* the GPU kernel's launch, not the host threads that emulate it */
    out->launch = cl_launch_2d((cl_coalesce_our_threads(a->n, a->stride) + (uint64_t)a->block - 1) / (uint64_t)a->block, 1,
                               a->block, 1, 0, 1);
    snprintf(out->impl, sizeof out->impl, "CPU analogue: %d host threads walk the thread indices; "
             "consecutive iterations are %llu elements apart (cache lines, not DRAM bursts)", threads,
             (unsigned long long)a->stride);
    ret = 0;
done:
    free(in);
    free(o);
    free(flush);
    return ret;
}

/* runs_student: on the CPU runner of the CUDA model (cpu/simt/) */
const cl_coalesce_ops cl_cpu_coalesce_ops = {cpu_coalesce_run, true};
