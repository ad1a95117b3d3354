/* reduce_cpu.c — the CPU backend's %reduce: every variant's CPU analogue behind
 * cl_cpu_reduce_ops, timed like the GPU runs.
 *
 * Each row runs its analogue, cpu_rd_<impl> (reduce_cpu.h), from a table
 * generated from the rows: `cpu` is the host loop of the lecture (one thread,
 * one accumulator: double for float, int64 for int) on either backend.
 * divergent, convergent, multiblock and fast run their kernels' CPU analogues
 * (cpu/reduce_blocks.c); `cub` has no CPU counterpart and runs the CPU
 * reference (cpu/reduce_ref.c), and its result says so. Each rep is timed with the monotonic clock around
 * the reduction only, after writing a buffer of twice the last-level cache
 * (at most 64 MiB) so that small inputs are not simply served from cache.
 *
 * A student's kernel (CL_VARIANT_STUDENT, a float sum) runs on the CPU runner
 * of the CUDA model (cpu/simt/): input read-only, one partial per block with
 * one writer, the partials NaN before every launch (as the GPU's sentinel),
 * ⌈n/2B⌉ blocks unless --grid, at most CL_SIMT_MAX_REPS launches (each on an
 * input of its own, checked: simt_rep_ops); the
 * partials come back to a->partials and are added in double. A write past the
 * grid's partials is the runner's finding, so there are no guard partials.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reduce_cpu.h"
#include "simt/simt_launch.h"

#define MIB (1024.0 * 1024.0)

/* Twice the last-level cache, within [16 MiB, 64 MiB] (64 MiB when unknown).
 * The cap keeps a notebook cell quick where sysconf reports a whole server's
 * L3 to a small VM; what the CPU analogues time is a stand-in, not a roofline. */
static size_t flush_bytes(void)
{
    long llc = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
    llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0)
        llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    size_t lo = (size_t)16 << 20, hi = (size_t)64 << 20;
    size_t b = llc > 0 ? 2 * (size_t)llc : hi;
    return b < lo ? lo : b > hi ? hi : b;
}

/* The flush buffer lives as long as the process: allocating and faulting in
 * tens of MiB for every run would cost more than the runs. */
static unsigned char *flush_buffer(void)
{
    static unsigned char *buf;
    if (!buf)
        buf = malloc(flush_bytes());
    return buf;
}

/* show-source: reduce cpu */
/* The lecture's host loop: one thread walks the array once. */
static double host_loop(const cl_reduce_args *a, const void *in)
{
    if (a->dtype == CL_REDUCE_FLOAT) {
        const float *x = in;
        double acc = acc_identity(a->op);
        for (uint64_t i = 0; i < a->n; i++)
            acc = a->op == CL_REDUCE_SUM ? acc + x[i]
                : a->op == CL_REDUCE_MAX ? (x[i] > acc ? x[i] : acc)
                                         : (x[i] < acc ? x[i] : acc);
        return acc;
    }
    const int32_t *x = in;
    int64_t acc = a->op == CL_REDUCE_SUM ? 0 : a->op == CL_REDUCE_MAX ? INT64_MIN : INT64_MAX;
    for (uint64_t i = 0; i < a->n; i++)
        acc = a->op == CL_REDUCE_SUM ? acc + x[i]
            : a->op == CL_REDUCE_MAX ? (x[i] > acc ? x[i] : acc)
                                     : (x[i] < acc ? x[i] : acc);
    return (double)acc;
}
/* show-source: end */

static double host_loop_run(const cpu_rd_impl *self, const cl_reduce_args *a, const cpu_launch_cfg *cfg,
                            const void *in, double *partials, int *ok)
{
    (void)self, (void)cfg, (void)partials;
    *ok = 1;
    return host_loop(a, in);
}

static void host_loop_describe(int v, const cl_reduce_args *a, const cpu_launch_cfg *cfg, cl_reduce_result *out)
{
    (void)v, (void)cfg;
    out->launch = cl_launch_2d(1, 1, 1, 1, 0, 1);
    snprintf(out->impl, sizeof out->impl, "CPU: host loop, 1 thread, %s accumulator",
             a->dtype == CL_REDUCE_FLOAT ? "double" : "int64");
}

const cpu_rd_impl cpu_rd_cpu = {NULL, host_loop_run, host_loop_describe, NULL};

/* cub: no CUB without a GPU, the CPU reference stands in. */
static double reference_run(const cpu_rd_impl *self, const cl_reduce_args *a, const cpu_launch_cfg *cfg,
                            const void *in, double *partials, int *ok)
{
    (void)self, (void)partials;
    return cpu_reduce_chunked(a, in, cfg->threads, ok);
}

static void reference_describe(int v, const cl_reduce_args *a, const cpu_launch_cfg *c, cl_reduce_result *out)
{
    (void)v, (void)a;
    out->launch = cl_launch_2d((uint64_t)c->threads, 1, 1, 1, 0, 1);
    snprintf(out->impl, sizeof out->impl,
             "CPU reference (no CUB without a GPU): %d host threads, double/int64 accumulators",
             c->threads);
}

const cpu_rd_impl cpu_rd_cub = {NULL, reference_run, reference_describe, NULL};

/* ---- what runs each variant of the contract (reduce.h), by id ---- */

/* One entry a row, in row (= id) order; NULL where this backend has none. */
#define CPU_RD_IMPL_(id, name, impl, ...) &cpu_rd_##impl,
static const cpu_rd_impl *const cpu_impls[CL_REDUCE_NVARIANTS] = {CL_REDUCE_VARIANTS(CPU_RD_IMPL_)};
#undef CPU_RD_IMPL_

const cpu_rd_impl *cpu_rd_impl_of(int v)
{
    return v >= 0 && v < CL_REDUCE_NVARIANTS ? cpu_impls[v] : NULL;
}

cpu_launch_cfg cpu_reduce_config(int v, const cl_reduce_args *a)
{
    const cpu_rd_impl *impl = cpu_rd_impl_of(v);
    cpu_launch_cfg one = {1, (unsigned)a->block, cl_cpu_threads_for(a->n)};
    return impl->config ? impl->config(impl, a) : one;
}

double cpu_reduce_variant(int v, const cl_reduce_args *a, const cpu_launch_cfg *cfg, const void *in,
                          double *partials, int *ok)
{
    const cpu_rd_impl *impl = cpu_rd_impl_of(v);
    return impl->run(impl, a, cfg, in, partials, ok);
}

/* ---- a student's kernel, on the CPU runner ---- */

/* A student's run: its arguments and the partials its grid writes. */
typedef struct student_run {
    const cl_reduce_args *a;
    uint64_t npart, section;        /* section: each partial's by the launch rule, 0 under --grid */
} student_run;

/* Its reps (simt_rep_ops): the input of the rep's seed; by the launch rule every partial against its
 * section's sum, under --grid (no sections) the partials' total against the input's, as the
 * magic's checks (cl_reduce_partials_check, a total being one partial of one section). */
static int student_prepare(simt_arena *ar, void *ctx, uint64_t seed, char *err)
{
    const student_run *s = ctx;
    (void)err;
    cpu_reduce_fill(ar->host[0], s->a->n, CL_REDUCE_FLOAT, seed, cl_cpu_threads_for(s->a->n));
    return 0;
}

static int student_check(simt_arena *ar, void *ctx, uint64_t seed, char *what)
{
    const student_run *s = ctx;
    const float *partials = ar->host[1];
    cl_reduce_partial_check pc = { -1, 0, 0 };
    if (s->section) {
        cl_reduce_partials_check(s->a->n, seed, s->section, partials, s->npart, &pc);
        if (pc.index >= 0)
            simt_wrong_element(what, pc.got, pc.want, "partial[%lld]", (long long)pc.index);
    } else {
        double sum = 0;
        for (uint64_t b = 0; b < s->npart; b++)
            sum += partials[b];
        float total = (float)sum;
        cl_reduce_partials_check(s->a->n, seed, s->a->n, &total, 1, &pc);
        if (pc.index >= 0)
            simt_wrong_element(what, sum, pc.want, "the sum of the partials");
    }
    return pc.index >= 0;
}

/* The second pass (a->second) on the CPU runner: one block of the kernel's threads over the run's
 * npart partials (a->partials) into one float, poisoned first; the run's value. Untimed. A write
 * past the one float is the runner's finding, as any out-of-bounds access. */
static int cpu_reduce_second(const cl_reduce_args *a, uint64_t npart, cl_reduce_result *out, char *err)
{
    const cl_student_kernel *k = a->second;
    unsigned block[3], one[3] = { 1, 1, 1 };
    simt_student_block(k, block);
    simt_buffer bufs[2] = {
        { "input", npart * 4, 4, CL_SIMT_IN, 0, 0 },
        { "partial", 4, 4, CL_SIMT_OUT | CL_SIMT_ONE_WRITER, 0, 0 },
    };
    simt_arena ar;
    if (simt_arena_open(&ar, bufs, 2, err) != 0)
        return -1;
    memcpy(ar.host[0], a->partials, npart * sizeof(float));
    memset(ar.host[1], SIMT_NAN, sizeof(float));
    cl_simt_arg args[3] = {
        { CL_SIMT_ARG_BUFFER, 0, { 0 } }, { CL_SIMT_ARG_BUFFER, 1, { 0 } },
        { CL_SIMT_ARG_I32, 0, { .i32 = (int32_t)npart } },
    };
    for (int i = 0; i < 3; i++)
        out->final.grid[i] = 1, out->final.block[i] = (int)block[i];
    out->final.smem_bytes = k->dyn_smem;
    out->final.kernels = 1;
    double ms;
    int rc = simt_launch(&ar, k, one, block, k->dyn_smem, args, 3, &ms, err);
    if (rc == 0) {
        float value;
        memcpy(&value, ar.host[1], sizeof value);
        out->fvalue = value;
    }
    simt_arena_close(&ar);
    return rc;
}

static int cpu_reduce_student(const cl_reduce_args *a, cl_reduce_result *out, char *err)
{
    const cl_student_kernel *k = a->student;
    out->guard_hit = out->final_guard_hit = -1;
    if (!k || a->op != CL_REDUCE_SUM || a->dtype != CL_REDUCE_FLOAT || a->n > 2147483647u) {
        snprintf(err, CL_ERR_LEN, "a student's reduction sums floats, n <= 2^31 - 1");
        return -1;
    }
    unsigned block[3], rule[3] = { 1, 1, 1 };
    simt_student_block(k, block);
    uint64_t section = cl_reduce_student_section((int)(block[0] * block[1] * block[2]));
    uint64_t blocks = (a->n + section - 1) / section;
    rule[0] = blocks > 0xffffffffu ? 0xffffffffu : (unsigned)blocks;
    uint64_t npart = 1;             /* the grid simt_run_student launches: --grid, else the rule */
    for (int i = 0; i < 3; i++)
        npart *= k->grid[0] > 0 ? (uint64_t)(k->grid[i] > 0 ? k->grid[i] : 1) : rule[i];
    if (npart > a->npartials || !a->partials) {
        snprintf(err, CL_ERR_LEN, "room for %llu partials, the grid has %llu blocks",
                 (unsigned long long)a->npartials, (unsigned long long)npart);
        return -1;
    }
    simt_buffer bufs[2] = {
        { "input", a->n * 4, 4, CL_SIMT_IN, 0, 0 },
        { "partial", npart * 4, 4, CL_SIMT_OUT | CL_SIMT_ONE_WRITER, 0, 0 },
    };
    simt_arena ar;
    if (simt_arena_open(&ar, bufs, 2, err) != 0)
        return -1;
    cl_simt_arg args[3] = {
        { CL_SIMT_ARG_BUFFER, 0, { 0 } }, { CL_SIMT_ARG_BUFFER, 1, { 0 } },
        { CL_SIMT_ARG_I32, 0, { .i32 = (int32_t)a->n } },
    };
    student_run s = { a, npart, k->grid[0] > 0 ? 0 : section };
    static const simt_rep_ops reps = { student_prepare, NULL, student_check, { 1, SIMT_NAN } };
    int rc = simt_run_student(&ar, k, rule, k->dyn_smem, args, 3, a->reps, a->seed, &reps, &s, &out->times,
                              &out->launch, err);
    if (rc == 0) {
        memcpy(a->partials, ar.host[1], npart * sizeof(float));
        double sum = 0;
        for (uint64_t b = 0; b < npart; b++)
            sum += a->partials[b];
        out->fvalue = sum;
        out->partials = npart;
    }
    simt_arena_close(&ar);
    if (a->second)
        snprintf(out->impl, sizeof out->impl, "your kernels %s, then %s over its partials (one block, untimed), "
                 "on the CPU runner (every access checked, CPU times)", k->name, a->second->name);
    else
        snprintf(out->impl, sizeof out->impl, "your kernel %s on the CPU runner (every access checked, CPU "
                 "times); the partials added on the host in double", k->name);
    return rc == 0 && a->second ? cpu_reduce_second(a, npart, out, err) : rc;
}

static int cpu_reduce_run(int v, const cl_reduce_args *a, cl_reduce_result *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (v == CL_VARIANT_STUDENT)
        return cpu_reduce_student(a, out, err);
    const cpu_rd_impl *impl = cpu_rd_impl_of(v);
    if (!impl) {
        snprintf(err, CL_ERR_LEN, "unknown reduce variant %d", v);
        return -1;
    }
    cpu_launch_cfg cfg = cpu_reduce_config(v, a);
    size_t fb = flush_bytes();
    unsigned char *flush = flush_buffer();
    void *in = malloc(a->n * 4);
    double *partials = malloc(cfg.grid * sizeof(double));
    int rc = -1, ok = 1;
    double value = 0;
    if (!flush || !in || !partials) {
        snprintf(err, CL_ERR_LEN, "out of host memory: --size %llu needs %.1f MiB for the input",
                 (unsigned long long)a->n, (double)a->n * 4 / MIB);
        goto done;
    }
    cpu_reduce_fill(in, a->n, a->dtype, a->seed, cl_cpu_threads_for(a->n));
    for (int w = 0; w < a->warmup && ok; w++) {
        memset(flush, w & 0xff, fb);
        value = impl->run(impl, a, &cfg, in, partials, &ok);
    }
    for (cl_times *tm = &out->times; ok && cl_rep_more(a->reps, tm); tm->reps++) {
        memset(flush, tm->reps & 0xff, fb);
        double t0 = cl_now_ms();
        value = impl->run(impl, a, &cfg, in, partials, &ok);
        tm->ms[tm->reps] = (float)(cl_now_ms() - t0);
        cl_rep_done();
    }
    cl_times_trusted(&out->times);
    if (!ok) {
        snprintf(err, CL_ERR_LEN, "out of host memory during the reduction");
        goto done;
    }
    if (a->dtype == CL_REDUCE_FLOAT)
        out->fvalue = value;
    else
        out->ivalue = (int64_t)value;
    impl->describe(v, a, &cfg, out);
    rc = 0;
done:
    free(in);
    free(partials);
    return rc;
}

/* Partials for the smallest block (one double per 64 elements) and the flush buffer. */
static uint64_t cpu_reduce_overhead(const cl_reduce_args *a)
{
    return (a->n + 63) / 64 * sizeof(double) + flush_bytes();
}

/* runs_student: on the CPU runner of the CUDA model (cpu/simt/) */
const cl_reduce_ops cl_cpu_reduce_ops = {cpu_reduce_run, cpu_reduce_overhead, true};
