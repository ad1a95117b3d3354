/* vecadd.cu — the CUDA backend's %vecadd behind cl_cuda_vecadd_ops: host
 * inputs copied to the device, the kernel, the result copied back, each
 * phase timed with its own pair of CUDA events.
 *
 * The host buffers are page-locked (cudaMallocHost) or ordinary malloc
 * memory, as asked: pageable copies go through the driver's pinned staging
 * buffer, which is why they are slower. The inputs are generated on the host
 * from the seed once, outside the timing; every rep copies them again. The L2
 * is flushed before each rep's copies and again before its kernel (outside
 * the events), so the kernel cannot read what the copy just left in L2.
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudalab/vecadd.h"
#include "common.h"

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
    cudaEvent_t ev[4];                  /* h2d start / kernel start / kernel end / d2h end */
    cl_cuda_timing t;
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
}

static cudaError_t launch(const cl_vecadd_args *a, vstate *s, unsigned grid)
{
    if (a->op == CL_VECADD_DAXPY)
        vecadd_daxpy<<<grid, a->block>>>(a->alpha, (const double *)s->dx, (double *)s->dy, a->n);
    else
        vecadd_add<<<grid, a->block>>>((const float *)s->dx, (const float *)s->dy, (float *)s->dz, a->n);
    return cudaGetLastError();
}

/* One rep: flush, H2D (x, y), flush, kernel, D2H (the result). With ms, the
 * three phases' times go to out's arrays at index r. */
static int one_rep(const cl_vecadd_args *a, vstate *s, unsigned grid, int r, cl_vecadd_result *out, char *err)
{
    size_t in = (size_t)(cl_vecadd_in_bytes(a->op) / 2 * a->n), res = (size_t)(cl_vecadd_out_bytes(a->op) * a->n);
    void *dres = a->op == CL_VECADD_DAXPY ? s->dy : s->dz;
    cudaError_t rc;
    if (cl_cuda_flush_l2(&s->t, r, "L2 flush", err) || cl_cuda_time_start(&s->t, err))
        return -1;
    if ((rc = cudaMemcpyAsync(s->dx, s->hx, in, cudaMemcpyHostToDevice, 0)) != cudaSuccess ||
        (rc = cudaMemcpyAsync(s->dy, s->hy, in, cudaMemcpyHostToDevice, 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaMemcpy host to device", rc);
    if ((rc = cudaEventRecord(s->ev[0], 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventRecord", rc);
    if (cl_cuda_flush_l2(&s->t, r + 1, "L2 flush", err))
        return -1;
    if ((rc = cudaEventRecord(s->ev[1], 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventRecord", rc);
    if ((rc = launch(a, s, grid)) != cudaSuccess)
        return cl_cuda_fail(err, "vecadd kernel launch", rc);
    if ((rc = cudaEventRecord(s->ev[2], 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventRecord", rc);
    if ((rc = cudaMemcpyAsync(s->hout, dres, res, cudaMemcpyDeviceToHost, 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaMemcpy device to host", rc);
    if ((rc = cudaEventRecord(s->ev[3], 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventRecord", rc);
    if ((rc = cudaEventSynchronize(s->ev[3])) != cudaSuccess)
        return cl_cuda_fail(err, "vecadd (copies and kernel)", rc);
    if (!out)
        return 0;
    if ((rc = cudaEventElapsedTime(&out->h2d.ms[r], s->t.e0, s->ev[0])) != cudaSuccess ||
        (rc = cudaEventElapsedTime(&out->kernel.ms[r], s->ev[1], s->ev[2])) != cudaSuccess ||
        (rc = cudaEventElapsedTime(&out->d2h.ms[r], s->ev[2], s->ev[3])) != cudaSuccess)
        return cl_cuda_fail(err, "cudaEventElapsedTime", rc);
    out->h2d.reps = out->kernel.reps = out->d2h.reps = r + 1;
    return 0;
}

static int cuda_vecadd_run(const cl_vecadd_args *a, cl_vecadd_result *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (a->op < 0 || a->op >= CL_VECADD_NOPS || a->n < 1 || a->block < 32 || a->block > 1024) {
        snprintf(err, CL_ERR_LEN, "bad %%vecadd arguments");
        return -1;
    }
    unsigned blocks;
    if (cl_cuda_blocks(a->n, a->block, &blocks, err))
        return -1;
    cudaError_t rc;
    vstate s;
    memset(&s, 0, sizeof s);
    s.pinned = a->pinned;
    size_t in = (size_t)(cl_vecadd_in_bytes(a->op) / 2 * a->n), res = (size_t)(cl_vecadd_out_bytes(a->op) * a->n);
    int ret = -1;
    if (host_alloc(&s.hx, in, a->pinned, "host x", err) || host_alloc(&s.hy, in, a->pinned, "host y", err) ||
        host_alloc(&s.hout, res, a->pinned, "host result", err) ||
        cl_cuda_alloc(&s.dx, in, "device x", err) || cl_cuda_alloc(&s.dy, in, "device y", err) ||
        (a->op == CL_VECADD_ADD && cl_cuda_alloc(&s.dz, res, "device z", err)) || cl_cuda_timing_init(&s.t, err))
        goto done;
    for (int i = 0; i < 4; i++)
        if ((rc = cudaEventCreate(&s.ev[i])) != cudaSuccess) {
            cl_cuda_fail(err, "cudaEventCreate", rc);
            goto done;
        }
    cl_vecadd_fill(a->op, a->n, a->seed, s.hx, s.hy);
    for (int w = 0; w < a->warmup; w++)
        if (one_rep(a, &s, blocks, w, NULL, err))
            goto done;
    for (int r = 0; r < a->reps && r < CL_MAX_REPS; r++)
        if (one_rep(a, &s, blocks, r, out, err))
            goto done;
    if (a->check)
        cl_vecadd_verify(a, s.hout, out);
    {
        const void *func = a->op == CL_VECADD_DAXPY ? (const void *)vecadd_daxpy : (const void *)vecadd_add;
        if (cl_cuda_describe(func, dim3(blocks), dim3(a->block), &out->launch, err))
            goto done;
    }
    snprintf(out->impl, sizeof out->impl, "CUDA: cudaMemcpyAsync from %s host memory, %s (%llu x %d), "
             "cudaMemcpyAsync back", a->pinned ? "pinned" : "pageable",
             a->op == CL_VECADD_DAXPY ? "vecadd_daxpy" : "vecadd_add", (unsigned long long)blocks, a->block);
    ret = 0;
done:
    vstate_free(&s);
    return ret;
}

extern "C" {
extern const cl_vecadd_ops cl_cuda_vecadd_ops;
const cl_vecadd_ops cl_cuda_vecadd_ops = {cuda_vecadd_run};
}
