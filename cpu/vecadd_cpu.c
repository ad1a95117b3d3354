/* vecadd_cpu.c — the CPU backend's %vecadd behind cl_cpu_vecadd_ops: the GPU
 * run's three phases with host stand-ins, timed with the monotonic clock.
 *
 * There is no separate device memory here, so memcpy into a second set of
 * host buffers stands in for the host-to-device and device-to-host copies
 * (pinned and pageable are the same malloc memory: the choice only changes
 * the label), and host threads stand in for the kernel's blocks, each taking
 * a contiguous range of elements. daxpy uses C99 fma(), as the kernel does.
 *
 * A student's kernel (--op add) runs on the CPU runner of the CUDA model
 * (cpu/simt/): A, B and C live in its arena, A and B read-only, each element
 * of C with one writer; each rep copies the inputs in (H2D), fills C with the
 * sentinel, launches ⌈n/threads per block⌉ blocks and copies C back (D2H), at
 * most CL_SIMT_MAX_REPS times, each rep on inputs of its own (simt_rep_ops). A write past the end of C is the runner's finding,
 * so there are no guard elements here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu_common.h"
#include "cudalab/vecadd.h"
#include "simt/simt_launch.h"

/* Defined here, referenced weakly by cpu/device_cpu.c. */
extern const cl_vecadd_ops cl_cpu_vecadd_ops;

typedef struct kjob {
    const cl_vecadd_args *a;
    const void *x;
    void *y, *z;
} kjob;

static void kernel_range(uint64_t first, uint64_t last, void *ctx)
{
    const kjob *j = ctx;
    if (j->a->op == CL_VECADD_DAXPY) {
        const double *x = j->x;
        double *y = j->y, a = j->a->alpha;
        for (uint64_t i = first; i < last; i++)
            y[i] = fma(a, x[i], y[i]);
    } else {
        const float *x = j->x, *y = j->y;
        float *z = j->z;
        for (uint64_t i = first; i < last; i++)
            z[i] = x[i] + y[i];
    }
}

/* ---- a student's kernel, on the CPU runner ---- */

/* A student's run: the host's inputs and output, and the copies' times rep by rep. */
typedef struct student_run {
    const cl_vecadd_args *a;
    cl_vecadd_result *out;
    float *hx, *hy, *hout;
    size_t bytes;
} student_run;

/* Its reps (simt_rep_ops): the rep's inputs made on the host, then copied in (H2D, timed);
 * C copied back (D2H, timed); C against A + B of the rep's seed (cl_vecadd_verify). */
static int student_prepare(simt_arena *ar, void *ctx, uint64_t seed, char *err)
{
    student_run *s = ctx;
    (void)err;
    cl_vecadd_fill(CL_VECADD_ADD, s->a->n, seed, s->hx, s->hy);
    double t0 = cl_now_ms();
    memcpy(ar->host[0], s->hx, s->bytes);
    memcpy(ar->host[1], s->hy, s->bytes);
    s->out->h2d.ms[s->out->h2d.reps++] = (float)(cl_now_ms() - t0);
    return 0;
}

static void student_landed(simt_arena *ar, void *ctx)
{
    student_run *s = ctx;
    double t0 = cl_now_ms();
    memcpy(s->hout, ar->host[2], s->bytes);
    s->out->d2h.ms[s->out->d2h.reps++] = (float)(cl_now_ms() - t0);
}

static int student_check(simt_arena *ar, void *ctx, uint64_t seed, char *what)
{
    const student_run *s = ctx;
    cl_vecadd_args at = *s->a;
    cl_vecadd_result r;
    memset(&r, 0, sizeof r);
    at.seed = seed;
    cl_vecadd_verify(&at, ar->host[2], &r);
    if (!r.mismatches)
        return 0;
    simt_wrong_element(what, r.got, r.want, "C[%llu]", (unsigned long long)r.first_bad);
    return 1;
}

static int cpu_vecadd_student(const cl_vecadd_args *a, cl_vecadd_result *out, char *err)
{
    const cl_student_kernel *k = a->student;
    if (a->op != CL_VECADD_ADD || a->n > 2147483647u) {
        snprintf(err, CL_ERR_LEN, "%s implements --op add with int n: n <= 2^31 - 1", k->name);
        return -1;
    }
    size_t bytes = (size_t)a->n * sizeof(float);
    simt_buffer bufs[3] = {
        { "A", bytes, 4, CL_SIMT_IN, 0, 0 },
        { "B", bytes, 4, CL_SIMT_IN, 0, 0 },
        { "C", bytes, 4, CL_SIMT_OUT | CL_SIMT_ONE_WRITER, 0, 0 },
    };
    student_run s = { a, out, malloc(bytes), malloc(bytes), malloc(bytes), bytes };
    simt_arena ar;
    int rc = -1;
    if (!s.hx || !s.hy || !s.hout) {
        snprintf(err, CL_ERR_LEN, "out of host memory for %%vecadd (%.1f MiB)", 3.0 * (double)bytes / 1048576.0);
        goto done;
    }
    if (simt_arena_open(&ar, bufs, 3, err) != 0)
        goto done;
    unsigned block[3];
    simt_student_block(k, block);
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    uint64_t blocks = (a->n + threads - 1) / threads;
    unsigned rule[3] = { blocks > 0xffffffffu ? 0xffffffffu : (unsigned)blocks, 1, 1 };
    cl_simt_arg args[4] = {
        { CL_SIMT_ARG_BUFFER, 0, { 0 } }, { CL_SIMT_ARG_BUFFER, 1, { 0 } }, { CL_SIMT_ARG_BUFFER, 2, { 0 } },
        { CL_SIMT_ARG_I32, 0, { .i32 = (int32_t)a->n } },
    };
    static const simt_rep_ops reps = { student_prepare, student_landed, student_check, { 2, SIMT_NAN } };
    rc = simt_run_student(&ar, k, rule, k->dyn_smem, args, 4, a->reps, a->seed, &reps, &s, &out->kernel,
                          &out->launch, err);
    if (rc == 0)
        memcpy(s.hout, ar.host[2], bytes);  /* the last launch's: the counted one under --counters */
    simt_arena_close(&ar);
    if (rc == 0 && a->check)
        cl_vecadd_verify(a, s.hout, out);
    snprintf(out->impl, sizeof out->impl, "your kernel %s on the CPU runner (every access checked, CPU times); "
             "memcpy stands in for the host<->device copies", k->name);
done:
    free(s.hx);
    free(s.hy);
    free(s.hout);
    return rc;
}

static int cpu_vecadd_run(const cl_vecadd_args *a, cl_vecadd_result *out, char *err)
{
    memset(out, 0, sizeof *out);
    out->guard_hit = -1;
    if (a->student && a->n >= 1)
        return cpu_vecadd_student(a, out, err);
    if (a->op < 0 || a->op >= CL_VECADD_NOPS || a->n < 1 || a->student) {
        snprintf(err, CL_ERR_LEN, "bad %%vecadd arguments");
        return -1;
    }
    size_t in = (size_t)(cl_vecadd_in_bytes(a->op) / 2 * a->n), res = (size_t)(cl_vecadd_out_bytes(a->op) * a->n);
    void *hx = malloc(in), *hy = malloc(in), *hout = malloc(res);
    void *dx = malloc(in), *dy = malloc(in), *dz = a->op == CL_VECADD_ADD ? malloc(res) : NULL;
    int ret = -1;
    if (!hx || !hy || !hout || !dx || !dy || (a->op == CL_VECADD_ADD && !dz)) {
        snprintf(err, CL_ERR_LEN, "out of host memory for %%vecadd (%.1f MiB)",
                 (2.0 * (in * 2 + res)) / 1048576.0);
        goto done;
    }
    cl_vecadd_fill(a->op, a->n, a->seed, hx, hy);
    int threads = cl_cpu_threads_for(a->n);
    kjob j = {a, dx, dy, dz};
    void *dres = a->op == CL_VECADD_DAXPY ? dy : dz;
    /* the kernel's times settle --reps auto, as on the GPU */
    for (int r = -a->warmup; r < 0 || cl_rep_more(a->reps, &out->kernel); r++) {
        double t0 = cl_now_ms();
        memcpy(dx, hx, in);
        memcpy(dy, hy, in);
        double t1 = cl_now_ms();
        cl_parallel_ranges(a->n, threads, kernel_range, &j);
        double t2 = cl_now_ms();
        memcpy(hout, dres, res);
        double t3 = cl_now_ms();
        if (r < 0)
            continue;
        out->h2d.ms[r] = (float)(t1 - t0);
        out->kernel.ms[r] = (float)(t2 - t1);
        out->d2h.ms[r] = (float)(t3 - t2);
        out->h2d.reps = out->kernel.reps = out->d2h.reps = r + 1;
        cl_rep_done();
    }
    cl_times_trusted(&out->kernel);
    if (a->check)
        cl_vecadd_verify(a, hout, out);
    /* the GPU kernel's launch, not the host threads that emulate it */
    out->launch = cl_launch_2d((a->n + (uint64_t)a->block - 1) / (uint64_t)a->block, 1, a->block, 1, 0, 1);
    snprintf(out->impl, sizeof out->impl, "CPU analogue: memcpy stands in for the host<->device copies "
             "(%s is only a label here), %d host threads for the kernel", a->pinned ? "pinned" : "pageable",
             threads);
    ret = 0;
done:
    free(hx);
    free(hy);
    free(hout);
    free(dx);
    free(dy);
    free(dz);
    return ret;
}

/* runs_student: on the CPU runner of the CUDA model (cpu/simt/) */
const cl_vecadd_ops cl_cpu_vecadd_ops = {cpu_vecadd_run, true};
