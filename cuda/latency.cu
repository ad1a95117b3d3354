/* latency.cu — the CUDA backend's %latency and %hiding behind
 * cl_cuda_latency_ops (cudalab/latency.h).
 *
 * chase: one thread of one block follows a random cycle (cl_latency_cycle)
 * through the level's memory, timed inside the kernel with clock64() (SM
 * cycles) and %globaltimer (nanoseconds) around CL_LAT_STEPS dependent loads,
 * after a warm-up lap where the working set fits in L2. The cycle's links are
 * stored as the addresses the load takes, so each step is the load alone: no
 * index arithmetic lengthens the chain. Global levels choose the cache with
 * the load's operator: ld.global.ca (cached in L1) for l1, ld.global.cg (L2
 * only) for l2 and dram.
 *
 * stream: warps_per_sm x 32 threads on every SM, each reading floats
 * grid-stride with ilp independent loads in flight; dynamic shared memory
 * is requested so that no more blocks fit on an SM than asked, hence the
 * grid of blocks_per_sm x SMs places exactly the asked warps everywhere.
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "cudalab/latency.h"


__constant__ uint32_t lat_const[CL_LAT_CONST_MAX / 4];

__device__ __forceinline__ uint64_t lat_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* What every chase writes: its cycles and nanoseconds, and where it ended (so that nothing is dead). */
struct lat_out {
    long long cycles;
    unsigned long long ns;
    unsigned long long end;
};

#define LAT_UNROLL 8

/* The chase's loop, shared by every level: STEP(p) is one dependent load. */
#define LAT_CHASE(STEP, p, warm, steps, out)                                  \
    do {                                                                      \
        for (int i_ = 0; i_ < (warm); i_++)                                   \
            STEP(p);                                                          \
        long long c0_ = clock64();                                            \
        uint64_t t0_ = lat_ns();                                              \
        for (int i_ = 0; i_ < (steps); i_ += LAT_UNROLL) {                    \
            _Pragma("unroll") for (int k_ = 0; k_ < LAT_UNROLL; k_++)         \
                STEP(p);                                                      \
        }                                                                     \
        long long c1_ = clock64();                                            \
        uint64_t t1_ = lat_ns();                                              \
        (out)->cycles = c1_ - c0_;                                            \
        (out)->ns = t1_ - t0_;                                                \
        (out)->end = (unsigned long long)(p);                                 \
    } while (0)

#define LAT_STEP_CA(p) asm volatile("ld.global.ca.u64 %0, [%0];" : "+l"(p) :: "memory")
#define LAT_STEP_CG(p) asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) :: "memory")
#define LAT_STEP_SHARED(p) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p) :: "memory")
#define LAT_STEP_CONST(p) ((p) = *(const uint32_t *)((const char *)lat_const + (p)))
#define LAT_STEP_LOCAL(p) ((p) = *(const uint32_t *)((const char *)local + (p)))
#define LAT_STEP_FMA(x) asm volatile("fma.rn.f32 %0, %0, %0, %0;" : "+f"(x))

__global__ void lat_chase_global(uint64_t start, int cached_l1, int warm, int steps, lat_out *out)
{
    uint64_t p = start;
    if (cached_l1)
        LAT_CHASE(LAT_STEP_CA, p, warm, steps, out);
    else
        LAT_CHASE(LAT_STEP_CG, p, warm, steps, out);
}

/* links: byte offsets within the working set; the shared copy holds shared-window addresses. */
__global__ void lat_chase_shared(const uint32_t *links, uint32_t slots, int warm, int steps, lat_out *out)
{
    extern __shared__ uint32_t s[];
    uint32_t base = (uint32_t)__cvta_generic_to_shared(s);
    for (uint32_t i = 0; i < slots; i++)
        s[i] = base + links[i];
    uint32_t p = base;
    LAT_CHASE(LAT_STEP_SHARED, p, warm, steps, out);
}

__global__ void lat_chase_const(int warm, int steps, lat_out *out)
{
    uint32_t p = 0;
    LAT_CHASE(LAT_STEP_CONST, p, warm, steps, out);
}

__global__ void lat_chase_local(const uint32_t *links, int warm, int steps, lat_out *out)
{
    uint32_t local[CL_LAT_LOCAL_BYTES / 4];        /* indexed at run time: the compiler puts it in local memory */
    for (uint32_t i = 0; i < CL_LAT_LOCAL_BYTES / 4; i++)
        local[i] = links[i];
    uint32_t p = 0;
    LAT_CHASE(LAT_STEP_LOCAL, p, warm, steps, out);
}

__global__ void lat_chain_fma(float seed, int steps, lat_out *out)
{
    float x = seed;
    LAT_CHASE(LAT_STEP_FMA, x, 0, steps, out);
    out->end = __float_as_uint(x);
}

/* Writes the cycle into global memory: slot i's link, at base + i x line, is the address of its successor. */
__global__ void lat_link_global(uint64_t *base, const uint32_t *next, uint64_t slots)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < slots; i += (uint64_t)gridDim.x * blockDim.x)
        base[i * (CL_LAT_LINE / 8)] = (uint64_t)(base + (uint64_t)next[i] * (CL_LAT_LINE / 8));
}

/* The byte-offset links of a 4-byte-slot cycle (shared, constant, local): slot i holds 4 x next[i]. */
static uint32_t *word_links(uint64_t slots, uint64_t seed, char *err)
{
    uint32_t *next = (uint32_t *)malloc(slots * sizeof *next);
    if (!next) {
        snprintf(err, CL_ERR_LEN, "out of host memory for the cycle of %llu slots", (unsigned long long)slots);
        return NULL;
    }
    cl_latency_cycle(next, slots, seed);
    for (uint64_t i = 0; i < slots; i++)
        next[i] *= 4;
    return next;
}

/* The current device's properties: 0, or -1 with err. */
static int current_props(cudaDeviceProp *prop, char *err)
{
    int dev = 0;
    cudaError_t rc = cudaGetDevice(&dev);
    if (rc == cudaSuccess)
        rc = cudaGetDeviceProperties(prop, dev);
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "device properties", rc);
}

static int level_defaults(const cl_latency_args *a, uint64_t *ws, char *err)
{
    *ws = a->working_set ? a->working_set : cl_latency_default_ws(a->level);
    if ((a->level == CL_LAT_LOCAL && *ws != CL_LAT_LOCAL_BYTES) || (a->level == CL_LAT_CONSTANT && *ws > CL_LAT_CONST_MAX))
        return snprintf(err, CL_ERR_LEN, "a working set of %llu bytes is past the %s chase's array",
                        (unsigned long long)*ws, a->level == CL_LAT_LOCAL ? "local" : "constant"), -1;
    return 0;
}

static int chase(const cl_latency_args *a, cl_latency_result *r, char *err)
{
    memset(r, 0, sizeof *r);
    uint64_t ws;
    if (level_defaults(a, &ws, err))
        return -1;
    int level = a->level, global = level == CL_LAT_L1 || level == CL_LAT_L2 || level == CL_LAT_DRAM;
    uint64_t slots = level == CL_LAT_REGISTER ? 0 : ws / (global ? CL_LAT_LINE : 4);
    if (level != CL_LAT_REGISTER && slots < 2)
        return snprintf(err, CL_ERR_LEN, "a working set of %llu bytes holds fewer than 2 slots",
                        (unsigned long long)ws), -1;
    cudaDeviceProp prop;
    if (current_props(&prop, err))
        return -1;
    cudaError_t rc;
    /* a warm-up lap only where the lap can stay cached: it would only churn a working set past L2 */
    int warm = slots && ws <= (uint64_t)prop.l2CacheSize && slots < (1u << 20) ? (int)slots : 0;
    r->working_set = level == CL_LAT_REGISTER ? 0 : ws;
    r->slots = slots;
    r->steps = CL_LAT_STEPS;

    uint32_t *next = NULL, *d_next = NULL;
    uint64_t *d_ws = NULL;
    lat_out *d_out = NULL, out;
    uint64_t from;
    int ret = -1;
    if (level != CL_LAT_REGISTER) {
        if (global) {
            if (!(next = (uint32_t *)malloc(slots * sizeof *next))) {
                snprintf(err, CL_ERR_LEN, "out of host memory for the cycle of %llu slots", (unsigned long long)slots);
                goto done;
            }
            cl_latency_cycle(next, slots, a->seed);
        } else if (!(next = word_links(slots, a->seed, err)))
            goto done;
    }
    if (cl_cuda_alloc((void **)&d_out, sizeof *d_out, "chase's result", err))
        goto done;
    if (next && level != CL_LAT_CONSTANT) {
        if (cl_cuda_alloc((void **)&d_next, slots * sizeof *next, "chase's cycle", err))
            goto done;
        if ((rc = cudaMemcpy(d_next, next, slots * sizeof *next, cudaMemcpyHostToDevice)) != cudaSuccess) {
            cl_cuda_fail(err, "copying the chase's cycle", rc);
            goto done;
        }
    }
    if (global) {
        if (cl_cuda_alloc((void **)&d_ws, slots * CL_LAT_LINE, "chase's working set", err))
            goto done;
        lat_link_global<<<1024, 256>>>(d_ws, d_next, slots);
    } else if (level == CL_LAT_CONSTANT &&
               (rc = cudaMemcpyToSymbol(lat_const, next, slots * sizeof *next)) != cudaSuccess) {
        cl_cuda_fail(err, "copying the chase's cycle to constant memory", rc);
        goto done;
    }
    if (level == CL_LAT_SHARED && ws > prop.sharedMemPerBlock &&
        (rc = cudaFuncSetAttribute(lat_chase_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)ws)) !=
            cudaSuccess) {
        cl_cuda_fail(err, "opting in to the shared working set", rc);
        goto done;
    }
    /* each rep of a global chase goes on from where the last one stopped: a rep that walked the same
     * CL_LAT_STEPS lines again would find them in L2, whatever the working set */
    from = (uint64_t)d_ws;
    for (r->cycles.reps = 0; cl_rep_more(a->reps, &r->cycles); r->cycles.reps++) {
        switch (level) {
        case CL_LAT_REGISTER: lat_chain_fma<<<1, 1>>>(1.0f, CL_LAT_STEPS, d_out); break;
        case CL_LAT_SHARED: lat_chase_shared<<<1, 1, ws>>>(d_next, (uint32_t)slots, warm, CL_LAT_STEPS, d_out); break;
        case CL_LAT_LOCAL: lat_chase_local<<<1, 1>>>(d_next, warm, CL_LAT_STEPS, d_out); break;
        case CL_LAT_CONSTANT: lat_chase_const<<<1, 1>>>(warm, CL_LAT_STEPS, d_out); break;
        default: lat_chase_global<<<1, 1>>>(from, level == CL_LAT_L1, warm, CL_LAT_STEPS, d_out); break;
        }
        if ((rc = cudaGetLastError()) != cudaSuccess ||
            (rc = cudaMemcpy(&out, d_out, sizeof out, cudaMemcpyDeviceToHost)) != cudaSuccess) {
            cl_cuda_fail(err, "the chase", rc);
            goto done;
        }
        from = out.end;
        r->cycles.ms[r->cycles.reps] = (float)((double)out.cycles / CL_LAT_STEPS);
        r->ns.ms[r->cycles.reps] = (float)((double)out.ns / CL_LAT_STEPS);
        r->ns.reps = r->cycles.reps + 1;
    }
    {
        static const char *const served[] = {
            [CL_LAT_REGISTER] = "the register file: a chain of dependent FMAs",
            [CL_LAT_SHARED] = "shared memory",
            [CL_LAT_LOCAL] = "local memory (device memory, cached in L1)",
            [CL_LAT_CONSTANT] = "the constant cache (one address for the whole warp: a uniform load, ULDC)",
            [CL_LAT_L1] = "ld.global.ca: L1 where it fits, else L2, else DRAM",
            [CL_LAT_L2] = "ld.global.cg: L2 (L1 bypassed) where it fits, else DRAM",
            [CL_LAT_DRAM] = "ld.global.cg past the L2: DRAM",
        };
        snprintf(r->measured, sizeof r->measured, "%s", served[level]);
    }
    ret = 0;
done:
    free(next);
    cudaFree(d_next);
    cudaFree(d_ws);
    cudaFree(d_out);
    return ret;
}

/* ---- %hiding's streaming read ---- */

template <int ILP>
__global__ void lat_stream(const float *__restrict__ in, uint64_t n, float *sums)
{
    uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, T = (uint64_t)gridDim.x * blockDim.x;
    float sum = 0;
    uint64_t i = t;
#pragma unroll 1
    for (; i + (ILP - 1) * T < n; i += ILP * T) {
        float v[ILP];
#pragma unroll
        for (int k = 0; k < ILP; k++)
            v[k] = in[i + k * T];       /* ILP loads issued before the first is used */
#pragma unroll
        for (int k = 0; k < ILP; k++)
            sum += v[k];
    }
    for (; i < n; i += T)
        sum += in[i];
    sums[t] = sum;
}

__global__ void lat_stream_fill(float *x, uint64_t n, uint64_t seed)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        x[i] = cl_uniform(seed, i);
}

static const void *stream_kernel(int ilp)
{
    switch (ilp) {
    case 1: return (const void *)lat_stream<1>;
    case 2: return (const void *)lat_stream<2>;
    case 4: return (const void *)lat_stream<4>;
    default: return (const void *)lat_stream<8>;
    }
}

/* The input a sweep's points share (stream_release frees it): filled once per size and seed. */
static struct {
    float *in;
    uint64_t n, seed;
} kept;

static void stream_release(void)
{
    cudaFree(kept.in);
    memset(&kept, 0, sizeof kept);
}

static int stream_input(uint64_t n, uint64_t seed, char *err)
{
    if (kept.in && kept.n == n && kept.seed == seed)
        return 0;
    stream_release();
    if (cl_cuda_alloc((void **)&kept.in, n * sizeof(float), "streaming input", err))
        return -1;
    kept.n = n;
    kept.seed = seed;
    lat_stream_fill<<<1024, 256>>>(kept.in, n, seed);
    return 0;
}

static int stream(const cl_stream_args *a, cl_stream_result *r, char *err)
{
    memset(r, 0, sizeof *r);
    if (a->ilp != 1 && a->ilp != 2 && a->ilp != 4 && a->ilp != 8)
        return snprintf(err, CL_ERR_LEN, "--ilp %d: 1, 2, 4 or 8", a->ilp), -1;
    cudaDeviceProp prop;
    if (current_props(&prop, err))
        return -1;
    cudaError_t rc;
    int warps_sm_max = prop.maxThreadsPerMultiProcessor / 32, warps_block_max = prop.maxThreadsPerBlock / 32;
    if (a->warps_per_sm < 1 || a->warps_per_sm > warps_sm_max)
        return snprintf(err, CL_ERR_LEN, "%d warps per SM: this device holds 1 to %d", a->warps_per_sm,
                        warps_sm_max), -1;
    /* the fewest blocks of equal size that hold the warps */
    int bps = (a->warps_per_sm + warps_block_max - 1) / warps_block_max;
    while (a->warps_per_sm % bps)
        bps++;
    int block = a->warps_per_sm / bps * 32;
    /* shared memory that lets bps blocks on an SM and not bps + 1 (each block also takes the
     * driver's reserved 1 KiB from sm_80 on) */
    size_t per_sm = prop.sharedMemPerMultiprocessor, reserved = prop.reservedSharedMemPerBlock;
    size_t smem = per_sm / (bps + 1) - reserved + 1024;
    if (smem * bps + reserved * bps > per_sm || smem > prop.sharedMemPerBlockOptin)
        return snprintf(err, CL_ERR_LEN, "cannot hold %d blocks per SM apart with shared memory", bps), -1;
    const void *k = stream_kernel(a->ilp);
    if ((rc = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem)) != cudaSuccess)
        return cl_cuda_fail(err, "the streaming read's shared memory", rc);
    dim3 grid((unsigned)(bps * prop.multiProcessorCount)), threads((unsigned)block);
    uint64_t nthreads = (uint64_t)grid.x * block;

    float *in = NULL, *sums = NULL, *h = NULL;
    cl_cuda_timing tm = {0};
    int ret = -1;
    if (stream_input(a->n, a->seed, err) ||
        cl_cuda_alloc((void **)&sums, nthreads * sizeof(float), "per-thread sums", err) ||
        cl_cuda_timing_init(&tm, err))
        goto done;
    in = kept.in;
    if (cl_cuda_describe(k, grid, threads, &r->launch, err))
        goto done;
    r->launch.smem_bytes += smem;
    r->blocks_per_sm = bps;
    r->bytes = (double)a->n * sizeof(float);
    r->warp_load_bytes = 32 * sizeof(float);
    r->sms = prop.multiProcessorCount;
    for (int w = 0; w < a->warmup; w++) {
        void *args[] = {&in, (void *)&a->n, &sums};
        if ((rc = cudaLaunchKernel(k, grid, threads, args, smem, 0)) != cudaSuccess) {
            cl_cuda_fail(err, "the streaming read", rc);
            goto done;
        }
    }
    for (r->times.reps = 0; cl_rep_more(a->reps, &r->times); r->times.reps++) {
        void *args[] = {&in, (void *)&a->n, &sums};
        if (cl_cuda_flush_l2(&tm, "flushing the L2", err) || cl_cuda_time_start(&tm, err))
            goto done;
        if ((rc = cudaLaunchKernel(k, grid, threads, args, smem, 0)) != cudaSuccess) {
            cl_cuda_fail(err, "the streaming read", rc);
            goto done;
        }
        if (cl_cuda_time_stop(&tm, &r->times.ms[r->times.reps], "the streaming read", err))
            goto done;
    }
    cl_times_trusted(&r->times);
    if (a->check) {
        if (!(h = (float *)malloc(nthreads * sizeof *h))) {
            snprintf(err, CL_ERR_LEN, "out of host memory for the sums");
            goto done;
        }
        if ((rc = cudaMemcpy(h, sums, nthreads * sizeof *h, cudaMemcpyDeviceToHost)) != cudaSuccess) {
            cl_cuda_fail(err, "reading the sums", rc);
            goto done;
        }
        for (uint64_t i = 0; i < nthreads; i++)
            r->sum += h[i];
        r->want = cl_latency_stream_sum(a->n, a->seed);
    }
    snprintf(r->impl, sizeof r->impl, "%d block%s of %d threads on each of %d SMs, %zu B of shared memory each "
             "to keep more out; %d load%s in flight per thread", bps, bps > 1 ? "s" : "", block,
             prop.multiProcessorCount, smem, a->ilp, a->ilp > 1 ? "s" : "");
    ret = 0;
done:
    free(h);
    cudaFree(sums);
    cl_cuda_timing_free(&tm);
    return ret;
}

extern "C" const cl_latency_ops cl_cuda_latency_ops = {chase, stream, stream_release};
