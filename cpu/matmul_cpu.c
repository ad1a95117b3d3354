/* matmul_cpu.c — the CPU backend's %matmul: what runs each variant of the
 * contract (matmul.h), and the run function that generates the inputs, times
 * a variant with the host clock (cpu/common) and hands C back.
 *
 * `cpu` (the lecture's MatrixMulOnHost, CL_V_HOST) is implemented here only:
 * the magic runs it here whichever backend is selected, since it is host code
 * by definition.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu_common.h"
#include "matmul_cpu.h"
#include "cudalab/backend.h"
#include "simt/simt_launch.h"

/* ---- what runs each variant of the contract (matmul.h), by id ---- */

/* One analogue a row, in row (= id) order; NULL where this backend has none. */
#define CPU_MM_IMPL_(id, name, impl, ...) &cpu_mm_##impl,
static const cpu_mm_impl *const cpu_impls[CL_MATMUL_NVARIANTS] = {CL_MATMUL_VARIANTS(CPU_MM_IMPL_)};
#undef CPU_MM_IMPL_

static bool cpu_matmul_has(int v)
{
    return v >= 0 && v < CL_MATMUL_NVARIANTS && cpu_impls[v];
}

/* ---- a student's kernel, on the CPU runner ---- */

/* A %%kernel --bt kernel: B is passed stored transposed (Bᵀ), as naive-bt and tiled-bt get it. */
static bool student_bt(const cl_matmul_args *a)
{
    return (a->student->flags & CL_MATMUL_BT) != 0;
}

/* Its reps (simt_rep_ops): A and B (or Bᵀ) of the rep's seed; C against their product (cl_matmul_verify). */
static int student_prepare(simt_arena *ar, void *ctx, uint64_t seed, char *err)
{
    const cl_matmul_args *a = ctx;
    (void)err;
    cl_matmul_fill(ar->host[0], ar->host[1], a->m, a->n, a->k, seed, student_bt(a));
    return 0;
}

static int student_check(simt_arena *ar, void *ctx, uint64_t seed, char *what)
{
    const cl_matmul_args *a = ctx;
    cl_matmul_check c;
    if (cl_matmul_verify(a->m, a->n, a->k, seed, ar->host[2], CL_MATMUL_FMT_FP32, &c, what) != 0)
        return -1;
    if (c.passed)
        return 0;
    if (c.first_row >= 0)
        simt_wrong_element(what, c.first_value, c.first_expected, "C[%lld][%lld]", c.first_row, c.first_col);
    else
        snprintf(what, CL_ERR_LEN, "C off by %.3g of a dot product's scale (%s, tolerance %.3g)", c.max_rel_err,
                 c.method, c.tol);
    return 1;
}

static int cpu_matmul_student(const cl_matmul_args *a, cl_matmul_result *out, char *err)
{
    const cl_student_kernel *k = a->student;
    size_t na = (size_t)a->m * a->k, nb = (size_t)a->k * a->n, nc = (size_t)a->m * a->n;
    simt_buffer bufs[3] = {
        { "A", na * 4, 4, CL_SIMT_IN, a->m, a->k },
        student_bt(a) ? (simt_buffer){ "Bt", nb * 4, 4, CL_SIMT_IN, a->n, a->k }
                      : (simt_buffer){ "B", nb * 4, 4, CL_SIMT_IN, a->k, a->n },
        { "C", nc * 4, 4, CL_SIMT_OUT | CL_SIMT_ONE_WRITER, a->m, a->n },
    };
    simt_arena ar;
    if (simt_arena_open(&ar, bufs, 3, err) != 0)
        return -1;
    unsigned block[3];
    simt_student_block(k, block);
    unsigned rule[3] = { (unsigned)((a->n + block[0] - 1) / block[0]), (unsigned)((a->m + block[1] - 1) / block[1]), 1 };
    cl_simt_arg args[6] = {
        { CL_SIMT_ARG_BUFFER, 0, { 0 } }, { CL_SIMT_ARG_BUFFER, 1, { 0 } }, { CL_SIMT_ARG_BUFFER, 2, { 0 } },
        { CL_SIMT_ARG_I32, 0, { .i32 = a->m } }, { CL_SIMT_ARG_I32, 0, { .i32 = a->n } },
        { CL_SIMT_ARG_I32, 0, { .i32 = a->k } },
    };
    static const simt_rep_ops reps = { student_prepare, NULL, student_check, { 2, SIMT_NAN } };
    int rc = simt_run_student(&ar, k, rule, k->dyn_smem, args, 6, a->reps, a->seed, &reps, (void *)a, &out->times,
                              &out->launch, err);
    if (rc == 0 && a->c)
        memcpy(a->c, ar.host[2], nc * sizeof(float));
    simt_arena_close(&ar);
    snprintf(out->impl, sizeof out->impl, "your kernel %s on the CPU runner", k->name);
    snprintf(out->config, sizeof out->config, "%s", SIMT_CONFIG);
    snprintf(out->precision, sizeof out->precision, "fp32");
    return rc;
}

/* ---- run ---- */

static int cpu_matmul_run(int id, const cl_matmul_args *a, cl_matmul_result *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (id == CL_VARIANT_STUDENT && a->student)
        return cpu_matmul_student(a, out, err);
    if (!cpu_matmul_has(id)) {
        snprintf(err, CL_ERR_LEN, "the CPU backend has no matmul variant %d", id);
        return -1;
    }
    const cl_variant *v = &cl_matmul_variants[id];
    if (a->m < 1 || a->n < 1 || a->k < 1 || a->reps < 0 || a->reps > CL_MAX_REPS || a->warmup < 0 ||
        ((v->flags & CL_V_TILE) && (a->tile < 1 || a->tile > CL_MATMUL_TILE_MAX))) {
        snprintf(err, CL_ERR_LEN, "invalid matmul arguments (m=%d n=%d k=%d tile=%d reps=%d)",
                 a->m, a->n, a->k, a->tile, a->reps);
        return -1;
    }
    size_t na = (size_t)a->m * a->k, nb = (size_t)a->k * a->n, nc = (size_t)a->m * a->n;
    float *buf = malloc((na + nb + (a->c ? 0 : nc)) * sizeof *buf);
    if (!buf) {
        snprintf(err, CL_ERR_LEN, "out of host memory for A, B and C (%.1f MiB)",
                 (double)(na + nb + nc) * 4.0 / 1048576.0);
        return -1;
    }
    float *c = a->c ? a->c : buf + na + nb;
    cl_matmul_fill(buf, buf + na, a->m, a->n, a->k, a->seed, (v->flags & CL_MATMUL_BT) != 0);
    for (size_t i = 0; i < nc; i++)
        c[i] = NAN;                 /* an element no run writes fails the check */

    const cpu_mm_impl *impl = cpu_impls[id];
    snprintf(out->config, sizeof out->config, "%s", impl->config);
    /* the host loop accumulates in double; the BLAS and the wmma analogues say their own (configure) */
    snprintf(out->precision, sizeof out->precision, "%s", v->flags & CL_V_HOST ? "fp64" : "fp32");
    cpu_mm_problem p = { buf, buf + na, c, a->m, a->n, a->k, a->tile,
                         (v->flags & CL_V_HOST) ? 1 : cl_cpu_threads(), impl->shape };
    impl->configure(&p, out);
    for (int w = 0; w < a->warmup; w++)
        impl->run(&p);
    for (cl_times *tm = &out->times; cl_rep_more(a->reps, tm); tm->reps++) {
        double t0 = cl_now_ms();
        impl->run(&p);
        tm->ms[tm->reps] = (float)(cl_now_ms() - t0);
        cl_rep_done();
    }
    cl_times_trusted(&out->times);
    free(buf);
    return 0;
}

const cl_matmul_ops cl_cpu_matmul_ops = {
    .has = cpu_matmul_has,
    .run = cpu_matmul_run,
    .runs_student = true,           /* on the CPU runner of the CUDA model (cpu/simt/) */
};
