/* vecadd.cu — the CUDA backend's %vecadd behind cl_cuda_vecadd_ops: host
 * inputs copied to the device, the kernel, the result copied back, each
 * phase timed with its own pair of CUDA events.
 *
 * The host buffers are page-locked (cudaMallocHost) or ordinary malloc
 * memory, as asked: pageable copies go through the driver's pinned staging
 * buffer, which is why they are slower. The inputs are generated on the host
 * from the seed once, outside the timing; every rep copies them again. Every
 * launch but the last then overwrites them on the device, between the copy's
 * events and the kernel's, with inputs of its own (cl_cuda_reps in common.h:
 * after the timed loop the reps the harness drew are compared, bit for bit,
 * with vecadd_add on their own inputs; the built-in kernels are that
 * reference); an untimed launch keeps the seed's inputs, and the result
 * copied back is that last launch's. The L2 is flushed before each rep's
 * copies and again before its kernel (outside the events), so the kernel
 * cannot read what the copy or the generation just left in L2.
 *
 * A student's kernel (a->student, --op add only) runs in the same reps in
 * place of vecadd_add, under its launch limit. For add, C is filled with a
 * sentinel before every kernel (outside the events) and followed by
 * CL_VECADD_GUARD guard elements that are checked after the run: an element
 * never written, or one written past the end of C, fails the check.
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudalab/vecadd.h"
#include "common.h"
#include "student_cuda.h"

/* show-source: vecadd add */
__global__ void vecadd_add(const float *__restrict__ x, const float *__restrict__ y,
                           float *__restrict__ z, uint64_t n)
{
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        z[i] = x[i] + y[i];
}
/* show-source: end */

/* show-source: vecadd daxpy */
__global__ void vecadd_daxpy(double a, const double *__restrict__ x, double *__restrict__ y, uint64_t n)
{
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = fma(a, x[i], y[i]);     /* explicit: the host reference uses C99 fma() */
}
/* show-source: end */

typedef struct vstate {
    void *hx, *hy, *hout;               /* host */
    void *dx, *dy, *dz;                 /* device (dz unused by daxpy) */
    int pinned;
    dim3 grid, block;                   /* the kernel's launch */
    const void *student_func;           /* a->student's handle, else NULL */
    cudaEvent_t ev[4];                  /* h2d start / kernel start / kernel end / d2h end */
    cl_cuda_timing t;
    cl_cuda_reps reps;                  /* each launch's inputs; the drawn reps' results */
} vstate;

static void host_free(void *p, int pinned)
{
    if (p && pinned)
        cudaFreeHost(p);
    else
        free(p);
}

static int host_alloc(void **p, size_t bytes, int pinned, const char *what, char *err)
{
    *p = NULL;
    if (pinned) {
        cudaError_t rc = cudaMallocHost(p, bytes ? bytes : 16);
        if (rc != cudaSuccess) {
            *p = NULL;
            snprintf(err, CL_ERR_LEN, "cudaMallocHost of %.1f MiB (pinned) for the %s: %s",
                     bytes / 1048576.0, what, cudaGetErrorString(rc));
            (void)cudaGetLastError();
            return -1;
        }
        return 0;
    }
    *p = malloc(bytes ? bytes : 16);
    if (!*p) {
        snprintf(err, CL_ERR_LEN, "malloc of %.1f MiB for the %s failed", bytes / 1048576.0, what);
        return -1;
    }
    return 0;
}

static void vstate_free(vstate *s)
{
    host_free(s->hx, s->pinned);
    host_free(s->hy, s->pinned);
    host_free(s->hout, s->pinned);
    cudaFree(s->dx);
    cudaFree(s->dy);
    cudaFree(s->dz);
    for (int i = 0; i < 4; i++)
        if (s->ev[i])
            cudaEventDestroy(s->ev[i]);
    cl_cuda_timing_free(&s->t);
    cl_cuda_reps_free(&s->reps);
}

/* A launch's own inputs over the copied ones: x and y uniform in [-1, 1) from seed, as the host's
 * are from the run's (the values need not be the host generator's: only the seed's launches are
 * checked against it). */
__global__ void vecadd_own_inputs(void *x, void *y, uint64_t n, bool dbl, uint64_t seed)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        float xi = cl_uniform(seed, 2 * i), yi = cl_uniform(seed, 2 * i + 1);
        if (dbl) {
            ((double *)x)[i] = xi;
            ((double *)y)[i] = yi;
        } else {
            ((float *)x)[i] = xi;
            ((float *)y)[i] = yi;
        }
    }
}

/* The check's reference (cl_cuda_reps): the inputs of seed, then the built-in kernel of the op
 * (blocks of 256) where a launch leaves its result. */
static int reference(const cl_vecadd_args *a, vstate *s, uint64_t seed, char *err)
{
    unsigned blocks;
    if (cl_cuda_blocks(a->n, 256, &blocks, err))
        return -1;
    vecadd_own_inputs<<<1024, 256>>>(s->dx, s->dy, a->n, a->op == CL_VECADD_DAXPY, seed);
    if (a->op == CL_VECADD_DAXPY)
        vecadd_daxpy<<<blocks, 256>>>(a->alpha, (const double *)s->dx, (double *)s->dy, a->n);
    else
        vecadd_add<<<blocks, 256>>>((const float *)s->dx, (const float *)s->dy, (float *)s->dz, a->n);
    cudaError_t rc = cudaGetLastError();
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "the check's reference (vecadd)", rc);
}

static int launch(const cl_vecadd_args *a, vstate *s, char *err)
{
    if (a->student) {
        const float *x = (const float *)s->dx, *y = (const float *)s->dy;
        float *z = (float *)s->dz;
        int n = (int)a->n;
        void *args[] = { &x, &y, &z, &n };
        return cl_cuda_student_launch(a->student, s->student_func, s->grid, s->block, args, err);
    }
    if (a->op == CL_VECADD_DAXPY)
        vecadd_daxpy<<<s->grid, s->block>>>(a->alpha, (const double *)s->dx, (double *)s->dy, a->n);
    else
        vecadd_add<<<s->grid, s->block>>>((const float *)s->dx, (const float *)s->dy, (float *)s->dz, a->n);
    cudaError_t rc = cudaGetLastError();
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "vecadd kernel launch", rc);
}

/* The elements of dz: C and its guards (add only). */
static size_t z_elements(const cl_vecadd_args *a)
{
    return (size_t)a->n + CL_VECADD_GUARD;
}

/* The first guard element that is no longer the sentinel: n + k, or -1. */
static int guard_check(const cl_vecadd_args *a, const vstate *s, int64_t *hit, char *err)
{
    static uint32_t guard[CL_VECADD_GUARD];
    *hit = -1;
    cudaError_t rc = cudaMemcpy(guard, (const float *)s->dz + a->n, sizeof guard, cudaMemcpyDeviceToHost);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "copying C's guard elements back", rc);
    for (int k = 0; k < CL_VECADD_GUARD && *hit < 0; k++)
        if (guard[k] != CL_VECADD_SENTINEL)
            *hit = (int64_t)a->n + k;
    return 0;
}

/* One launch: flush, H2D (x, y), the launch's own inputs unless it runs on the seed's
 * (cl_cuda_reps_seed), sentinel in C, flush, kernel, D2H (the result). rep: a timed rep's index,
 * CL_CUDA_REP_WARMUP or CL_CUDA_REP_FINAL. With out (timed reps), the three phases' times go to
 * out's arrays at index rep. */
static int one_rep(const cl_vecadd_args *a, vstate *s, int rep, cl_vecadd_result *out, char *err)
{
    size_t in = (size_t)(cl_vecadd_in_bytes(a->op) / 2 * a->n), res = (size_t)(cl_vecadd_out_bytes(a->op) * a->n);
    void *dres = a->op == CL_VECADD_DAXPY ? s->dy : s->dz;
    cudaError_t rc;
    if (cl_cuda_flush_l2(&s->t, "L2 flush", err) || cl_cuda_time_start(&s->t, err))
        return -1;
    if ((rc = cudaMemcpyAsync(s->dx, s->hx, in, cudaMemcpyHostToDevice, 0)) != cudaSuccess ||
        (rc = cudaMemcpyAsync(s->dy, s->hy, in, cudaMemcpyHostToDevice, 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaMemcpy host to device", rc);
    if ((rc = cudaEventRecord(s->ev[0], 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventRecord", rc);
    uint64_t seed = cl_cuda_reps_seed(&s->reps, rep);
    if (seed != a->seed) {
        vecadd_own_inputs<<<1024, 256>>>(s->dx, s->dy, a->n, a->op == CL_VECADD_DAXPY, seed);
        if ((rc = cudaGetLastError()) != cudaSuccess)
            return cl_cuda_fail(err, "generating a rep's inputs", rc);
    }
    if (a->op == CL_VECADD_ADD &&
        (rc = cudaMemsetAsync(s->dz, 0xFF, z_elements(a) * sizeof(float), 0)) != cudaSuccess)
        return cl_cuda_fail(err, "filling C with the sentinel", rc);
    if (cl_cuda_flush_l2(&s->t, "L2 flush", err))
        return -1;
    if ((rc = cudaEventRecord(s->ev[1], 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventRecord", rc);
    if (launch(a, s, err))
        return -1;
    if ((rc = cudaEventRecord(s->ev[2], 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventRecord", rc);
    if ((rc = cudaMemcpyAsync(s->hout, dres, res, cudaMemcpyDeviceToHost, 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaMemcpy device to host", rc);
    if ((rc = cudaEventRecord(s->ev[3], 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventRecord", rc);
    if (cl_cuda_synchronize("vecadd (copies and kernel)", err))
        return -1;
    if (!out)
        return 0;
    if ((rc = cudaEventElapsedTime(&out->h2d.ms[rep], s->t.e0, s->ev[0])) != cudaSuccess ||
        (rc = cudaEventElapsedTime(&out->kernel.ms[rep], s->ev[1], s->ev[2])) != cudaSuccess ||
        (rc = cudaEventElapsedTime(&out->d2h.ms[rep], s->ev[2], s->ev[3])) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventElapsedTime", rc);
    out->h2d.reps = out->kernel.reps = out->d2h.reps = rep + 1;
    return cl_cuda_reps_keep(&s->reps, rep, err);
}

/* The launch: the built-in kernel's ⌈n/B⌉ blocks of --block, or a student's
 * block and grid (⌈n/threads per block⌉ unless --grid), checked against what
 * the kernel and the device allow before anything runs. */
static int plan(const cl_vecadd_args *a, vstate *s, cl_vecadd_result *out, char *err)
{
    unsigned blocks;
    if (!a->student) {
        if (cl_cuda_blocks(a->n, a->block, &blocks, err))
            return -1;
        s->grid = dim3(blocks), s->block = dim3((unsigned)a->block);
        return 0;
    }
    if (a->op != CL_VECADD_ADD || a->n > 2147483647u) {
        snprintf(err, CL_ERR_LEN, "%s implements --op add with int n: n <= 2^31 - 1", a->student->name);
        return -1;
    }
    if (cl_cuda_student_func(a->student, &s->student_func, err))
        return -1;
    s->block = cl_cuda_student_block(a->student);
    if (cl_cuda_blocks(a->n, (int)(s->block.x * s->block.y * s->block.z), &blocks, err))
        return -1;
    s->grid = cl_cuda_student_grid(a->student, dim3(blocks));
    return cl_cuda_student_describe(a->student, s->student_func, s->grid, s->block, &out->launch, err);
}

/* Warm-up and timed reps, under the student kernel's launch limit. */
static int reps(const cl_vecadd_args *a, vstate *s, cl_vecadd_result *out, char *err)
{
    if (a->student)
        cl_cuda_set_limit(a->student->limit_ms, a->student->name);
    int rc = 0;
    for (int w = 0; w < a->warmup && rc == 0; w++)
        rc = one_rep(a, s, CL_CUDA_REP_WARMUP, NULL, err);
    if (rc == 0)
        rc = cl_cuda_counted(&s->t, err, [&] { return launch(a, s, err); });   /* the inputs are there */
    /* the kernel's times settle --reps auto: the copies' are steadier */
    while (rc == 0 && cl_rep_more(a->reps, &out->kernel))
        rc = one_rep(a, s, out->kernel.reps, out, err);
    /* the drawn reps against the reference on their own inputs; the result: the seed's inputs, untimed */
    if (rc == 0)
        rc = cl_cuda_reps_verify(&s->reps, &out->kernel, err,
                                 [&](uint64_t seed) { return reference(a, s, seed, err); },
                                 [&] { return one_rep(a, s, CL_CUDA_REP_FINAL, NULL, err); });
    cl_cuda_set_limit(0, NULL);
    return rc;
}

static int cuda_vecadd_run(const cl_vecadd_args *a, cl_vecadd_result *out, char *err)
{
    memset(out, 0, sizeof *out);
    out->guard_hit = -1;
    if (a->op < 0 || a->op >= CL_VECADD_NOPS || a->n < 1 ||
        (!a->student && (a->block < 32 || a->block > 1024))) {
        snprintf(err, CL_ERR_LEN, "bad %%vecadd arguments");
        return -1;
    }
    cudaError_t rc;
    vstate s;
    memset(&s, 0, sizeof s);
    s.pinned = a->pinned;
    size_t in = (size_t)(cl_vecadd_in_bytes(a->op) / 2 * a->n), res = (size_t)(cl_vecadd_out_bytes(a->op) * a->n);
    int ret = -1;
    if (plan(a, &s, out, err))
        return -1;
    if (host_alloc(&s.hx, in, a->pinned, "host x", err) || host_alloc(&s.hy, in, a->pinned, "host y", err) ||
        host_alloc(&s.hout, res, a->pinned, "host result", err) ||
        cl_cuda_alloc(&s.dx, in, "device x", err) || cl_cuda_alloc(&s.dy, in, "device y", err) ||
        (a->op == CL_VECADD_ADD && cl_cuda_alloc(&s.dz, z_elements(a) * sizeof(float), "device z", err)) ||
        cl_cuda_timing_init(&s.t, err))
        goto done;
    {
        cl_cuda_output o = { a->op == CL_VECADD_DAXPY ? s.dy : s.dz, (size_t)a->n,
                             a->op == CL_VECADD_DAXPY ? CL_CUDA_F64 : CL_CUDA_F32, 0,
                             a->op == CL_VECADD_DAXPY ? "y" : "C", 0 };
        /* the built-in kernels are the reference: a student's is checked (cl_vecadd_device_bytes) */
        if (cl_cuda_reps_init(&s.reps, a->seed, &o, !a->student, err))
            goto done;
    }
    s.t.unheld = !a->pinned;    /* a pageable copy waits for the device, so the rep cannot be queued ahead */
    for (int i = 0; i < 4; i++)
        if ((rc = cudaEventCreate(&s.ev[i])) != cudaSuccess) {
            cl_cuda_fail(err, "cudaEventCreate", rc);
            goto done;
        }
    cl_vecadd_fill(a->op, a->n, a->seed, s.hx, s.hy);
    if (reps(a, &s, out, err)) {
        if (cl_cuda_abandoned())
            return -1;              /* the kernel still runs: nothing else may touch the device */
        goto done;
    }
    if (a->op == CL_VECADD_ADD && guard_check(a, &s, &out->guard_hit, err))
        goto done;
    if (a->check)
        cl_vecadd_verify(a, s.hout, out);
    if (a->student) {
        snprintf(out->impl, sizeof out->impl, "CUDA: cudaMemcpyAsync from %s host memory, your kernel %s "
                 "(%u x %u), cudaMemcpyAsync back", a->pinned ? "pinned" : "pageable", a->student->name,
                 s.grid.x * s.grid.y * s.grid.z, s.block.x * s.block.y * s.block.z);
    } else {
        const void *func = a->op == CL_VECADD_DAXPY ? (const void *)vecadd_daxpy : (const void *)vecadd_add;
        if (cl_cuda_describe(func, s.grid, s.block, &out->launch, err))
            goto done;
        snprintf(out->impl, sizeof out->impl, "CUDA: cudaMemcpyAsync from %s host memory, %s (%u x %d), "
                 "cudaMemcpyAsync back", a->pinned ? "pinned" : "pageable",
                 a->op == CL_VECADD_DAXPY ? "vecadd_daxpy" : "vecadd_add", s.grid.x, a->block);
    }
    ret = 0;
done:
    vstate_free(&s);
    return ret;
}

extern "C" {
extern const cl_vecadd_ops cl_cuda_vecadd_ops;
const cl_vecadd_ops cl_cuda_vecadd_ops = {cuda_vecadd_run, true};
}
