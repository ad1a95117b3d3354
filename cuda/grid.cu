/* grid.cu — the CUDA backend's %grid --run: launch the lecture's thread<->data
 * mapping and count how often each element is visited, behind cl_cuda_grid_ops.
 *
 * grid_map_kernel computes col/row/plane from blockIdx, blockDim and
 * threadIdx, applies the bounds check, and adds one to the element's counter;
 * idle threads are counted once per warp (ballot + popc). A second kernel
 * walks the counters and counts elements seen 0, 1 and more than once. Each
 * rep: counters zeroed and the L2 flushed outside the events, then the
 * mapping alone is timed. %occupancy reaches the mapping kernel as grid.map
 * through cl_grid_kernel_ptr.
 *
 * A student's picture kernel (a->student) runs on a picture of the data's
 * shape generated on the device, on the same grid unless its --grid says
 * otherwise: Pout between guard bytes, set to NaN before every launch, under
 * the kernel's launch limit. Each launch gets a picture of its own
 * (cl_cuda_reps in common.h: after the timed loop the reps the harness drew
 * are compared, bit for bit, with cl_grid_picture_reference on their own
 * pictures); an untimed launch on the seed's picture leaves the Pout that is
 * copied back for the host's exact check. The mapping kernel has no input:
 * its counters are zeroed before every rep.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

#include "common.h"
#include "cudalab/grid.h"
#include "cudalab/occupancy.h"
#include "student_cuda.h"

__global__ void cl_grid_map_kernel(unsigned *count, unsigned long long *idle, long long w, long long h,
                                   long long d)
{
    long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long row = (long long)blockIdx.y * blockDim.y + threadIdx.y;
    long long plane = (long long)blockIdx.z * blockDim.z + threadIdx.z;
    bool inside = col < w && row < h && plane < d;
    unsigned active = __activemask();
    unsigned idle_lanes = __ballot_sync(active, !inside);
    unsigned lane = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u;
    if (lane == (unsigned)(__ffs(active) - 1) && idle_lanes)
        atomicAdd(idle, (unsigned long long)__popc(idle_lanes));
    if (inside)
        atomicAdd(&count[(plane * h + row) * w + col], 1u);
}

/* out[0] = elements seen once, out[1] = never, out[2] = more than once. */
__global__ void cl_grid_tally_kernel(const unsigned *count, unsigned long long n, unsigned long long *out)
{
    unsigned long long once = 0, never = 0, many = 0;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned c = count[i];
        once += c == 1;
        never += c == 0;
        many += c > 1;
    }
    if (once)
        atomicAdd(&out[0], once);
    if (never)
        atomicAdd(&out[1], never);
    if (many)
        atomicAdd(&out[2], many);
}

/* For %occupancy --kernel (occupancy.h): the mapping kernel, which needs no dynamic shared memory. */
extern "C" const void *cl_grid_kernel_ptr(int variant, int instance, int threads, size_t *dyn)
{
    *dyn = 0;
    return variant == CL_GRID_MAP ? (const void *)cl_grid_map_kernel : NULL;
}

typedef struct grid_state {
    cl_cuda_timing t;
    unsigned *count;
    unsigned long long *stats;    /* [0] idle, [1..3] tally */
} grid_state;

static void grid_state_free(grid_state *st)
{
    cudaFree(st->count);
    cudaFree(st->stats);
    cl_cuda_timing_free(&st->t);
}

static int grid_rep(grid_state *st, const cl_grid_args *a, size_t n, int r, float *ms, char *err)
{
    cudaError_t rc;
    if ((rc = cudaMemsetAsync(st->count, 0, n * sizeof(unsigned), 0)) != cudaSuccess ||
        (rc = cudaMemsetAsync(st->stats, 0, 4 * sizeof(unsigned long long), 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaMemsetAsync of the counters", rc);
    if (cl_cuda_flush_l2(&st->t, "L2 flush", err) || (ms && cl_cuda_time_start(&st->t, err)))
        return -1;
    dim3 grid((unsigned)a->grid[0], (unsigned)a->grid[1], (unsigned)a->grid[2]);
    dim3 block((unsigned)a->block[0], (unsigned)a->block[1], (unsigned)a->block[2]);
    cl_grid_map_kernel<<<grid, block>>>(st->count, st->stats, a->data[0], a->data[1], a->data[2]);
    if ((rc = cudaGetLastError()) != cudaSuccess)
        return cl_cuda_fail(err, "launch of the mapping kernel", rc);
    if (ms)
        return cl_cuda_time_stop(&st->t, ms, "the mapping kernel", err);
    return 0;
}

static int grid_run_all(grid_state *st, const cl_grid_args *a, cl_grid_result *out, char *err)
{
    size_t n = (size_t)(a->data[0] * a->data[1] * a->data[2]);
    if (cl_cuda_timing_init(&st->t, err) ||
        cl_cuda_alloc((void **)&st->count, n * sizeof(unsigned), "count array", err) ||
        cl_cuda_alloc((void **)&st->stats, 4 * sizeof(unsigned long long), "tallies", err))
        return -1;
    for (int r = 0; r < a->warmup; r++)
        if (grid_rep(st, a, n, r, NULL, err))
            return -1;
    if (cl_cuda_counted(&st->t, err, [&] { return grid_rep(st, a, n, a->warmup, NULL, err); }))
        return -1;
    for (cl_times *tm = &out->times; cl_rep_more(a->reps, tm); tm->reps++)
        if (grid_rep(st, a, n, a->warmup + tm->reps, &tm->ms[tm->reps], err))
            return -1;
    cl_grid_tally_kernel<<<1024, 256>>>(st->count, (unsigned long long)n, st->stats + 1);
    cudaError_t rc;
    if ((rc = cudaGetLastError()) != cudaSuccess)
        return cl_cuda_fail(err, "launch of the tally kernel", rc);
    unsigned long long s[4];
    if ((rc = cudaMemcpy(s, st->stats, sizeof s, cudaMemcpyDeviceToHost)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaMemcpy of the tallies", rc);
    out->idle_threads = s[0];
    out->visited_once = s[1];
    out->never = s[2];
    out->multiple = s[3];
    cudaFuncAttributes at;
    if ((rc = cudaFuncGetAttributes(&at, cl_grid_map_kernel)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaFuncGetAttributes", rc);
    for (int d = 0; d < 3; d++) {
        out->launch.grid[d] = (int)a->grid[d];
        out->launch.block[d] = (int)a->block[d];
    }
    out->launch.smem_bytes = at.sharedSizeBytes;
    out->launch.regs_per_thread = at.numRegs;
    out->launch.kernels = 1;
    snprintf(out->impl, sizeof out->impl, "CUDA kernel cl_grid_map_kernel: one thread per grid "
             "position, bounds check, atomicAdd on the element's counter");
    return 0;
}

__global__ void cl_grid_picture_fill(float *p, unsigned long long n, uint64_t seed)
{
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] = cl_uniform(seed, i);
}

/* The check's reference (cl_cuda_reps): the picture kernel's contract, Pout = 2 * Pin. */
__global__ void cl_grid_picture_reference(const float *pin, float *pout, unsigned long long n)
{
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        pout[i] = 2 * pin[i];
}

typedef struct picture {
    const cl_student_kernel *k;
    const void *func;
    dim3 grid, block;
    float *pin, *pout;
    void *pout_base;
    size_t n;
    int width, height;
    cl_cuda_timing t;
    cl_cuda_reps reps;                  /* each launch's picture; the drawn reps' Pout */
} picture;

static int picture_fill(const picture *p, uint64_t seed, char *err)
{
    cl_grid_picture_fill<<<1024, 256>>>(p->pin, p->n, seed);
    cudaError_t rc = cudaGetLastError();
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "generating the picture", rc);
}

/* One launch: a timed rep's (ms not NULL: timed between the events) or the final one
 * (CL_CUDA_REP_FINAL) on a picture of its own first, a warm-up or counted one (CL_CUDA_REP_WARMUP)
 * on the warm-up's; Pout set to NaN, the L2 flushed, the kernel launched. */
static int picture_rep(picture *p, int rep, float *ms, char *err)
{
    if (rep != CL_CUDA_REP_WARMUP && picture_fill(p, cl_cuda_reps_seed(&p->reps, rep), err))
        return -1;
    cudaError_t rc = cudaMemsetAsync(p->pout, 0xFF, p->n * sizeof(float), 0);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaMemsetAsync of Pout", rc);
    void *args[] = {(void *)&p->pin, (void *)&p->pout, &p->width, &p->height};
    if (cl_cuda_flush_l2(&p->t, "L2 flush", err) || (ms && cl_cuda_time_start(&p->t, err)) ||
        cl_cuda_student_launch(p->k, p->func, p->grid, p->block, args, err))
        return -1;
    if (!ms)
        return 0;
    return cl_cuda_time_stop(&p->t, ms, p->k->name, err) || cl_cuda_reps_keep(&p->reps, rep, err) ? -1 : 0;
}

/* The reference's Pout on the picture of seed. */
static int picture_reference(const picture *p, uint64_t seed, char *err)
{
    if (picture_fill(p, seed, err))
        return -1;
    cl_grid_picture_reference<<<1024, 256>>>(p->pin, p->pout, p->n);
    cudaError_t rc = cudaGetLastError();
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "the check's reference picture", rc);
}

static int picture_run(picture *p, const cl_grid_args *a, cl_grid_result *out, char *err)
{
    if (a->data[2] > 1 || a->data[0] > INT32_MAX || a->data[1] > INT32_MAX) {
        snprintf(err, CL_ERR_LEN, "%s takes a 2D picture of int width and height", p->k->name);
        return -1;
    }
    p->width = (int)a->data[0], p->height = (int)a->data[1];
    p->n = (size_t)a->data[0] * (size_t)a->data[1];
    p->block = cl_cuda_student_block(p->k);
    dim3 rule((unsigned)((p->width + p->block.x - 1) / p->block.x), (unsigned)((p->height + p->block.y - 1) / p->block.y));
    p->grid = cl_cuda_student_grid(p->k, rule);
    if (cl_cuda_student_func(p->k, &p->func, err) ||
        cl_cuda_student_describe(p->k, p->func, p->grid, p->block, &out->launch, err) ||
        cl_cuda_timing_init(&p->t, err) || cl_cuda_alloc((void **)&p->pin, p->n * sizeof(float), "Pin", err) ||
        cl_cuda_guarded_alloc(&p->pout_base, (void **)&p->pout, p->n * sizeof(float), "Pout", err))
        return -1;
    cl_cuda_output o = { p->pout, p->n, CL_CUDA_F32, 0, "Pout", (size_t)p->width };
    if (cl_cuda_reps_init(&p->reps, a->seed, &o, false, err) ||
        picture_fill(p, cl_cuda_reps_seed(&p->reps, CL_CUDA_REP_WARMUP), err))
        return -1;
    cl_cuda_set_limit(p->k->limit_ms, p->k->name);
    int rc = 0;
    for (int w = 0; w < (a->warmup < 1 ? 1 : a->warmup) && rc == 0; w++)
        rc = picture_rep(p, CL_CUDA_REP_WARMUP, NULL, err);
    if (rc == 0)
        rc = cl_cuda_synchronize("warm-up runs", err) ||
             cl_cuda_counted(&p->t, err, [&] { return picture_rep(p, CL_CUDA_REP_WARMUP, NULL, err); });
    cl_times *tm = &out->times;
    for (; rc == 0 && cl_rep_more(a->reps, tm); tm->reps += rc == 0)
        rc = picture_rep(p, tm->reps, &tm->ms[tm->reps], err);
    /* the drawn reps against the reference on their own pictures; Pout: the seed's picture, untimed */
    if (rc == 0)
        rc = cl_cuda_reps_verify(&p->reps, tm, err,
                                 [&](uint64_t seed) { return picture_reference(p, seed, err); },
                                 [&] { return picture_rep(p, CL_CUDA_REP_FINAL, NULL, err); });
    cl_cuda_set_limit(0, NULL);
    if (rc != 0 || cl_cuda_abandoned() || cl_cuda_guard_check(p->k, p->pout_base, p->n * sizeof(float), "Pout", err))
        return -1;
    cudaError_t e = a->pout ? cudaMemcpy(a->pout, p->pout, p->n * sizeof(float), cudaMemcpyDeviceToHost)
                            : cudaSuccess;
    if (e != cudaSuccess)
        return cl_cuda_fail(err, "copying Pout to the host", e);
    snprintf(out->impl, sizeof out->impl, "CUDA: your picture kernel %s (%u x %u blocks of %u x %u)", p->k->name,
             p->grid.x, p->grid.y, p->block.x, p->block.y);
    return 0;
}

static int cuda_grid_run(const cl_grid_args *a, cl_grid_result *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (a->student) {
        picture p;
        memset(&p, 0, sizeof p);
        p.k = a->student;
        int rc = picture_run(&p, a, out, err);
        if (cl_cuda_abandoned())
            return -1;              /* the kernel still runs: nothing else may touch the device */
        cudaFree(p.pin);
        cudaFree(p.pout_base);
        cl_cuda_timing_free(&p.t);
        cl_cuda_reps_free(&p.reps);
        return rc;
    }
    grid_state st;
    memset(&st, 0, sizeof st);
    int rc = grid_run_all(&st, a, out, err);
    grid_state_free(&st);
    return rc;
}

extern "C" {
extern const cl_grid_ops cl_cuda_grid_ops;
}
const cl_grid_ops cl_cuda_grid_ops = {cuda_grid_run, true};
