/* histo_kernels.cu — the %histo kernels, one per variant, in lecture order,
 * the input generator, and the launch plan of each.
 *
 *   sectioned    thread t counts bytes [t*s, (t+1)*s): uncoalesced, global atomics
 *   interleaved  grid-stride: coalesced, global atomics
 *   privatized   a histogram per block in shared memory, merged at the end
 *   warp         a histogram per warp, 16-byte loads, runs of equal bins aggregated
 *   fast         32 lane copies per block, laid out bin-major so that lane l
 *                always uses bank l: conflict-free shared atomics on any data
 *
 * All add into a zeroed global histogram of nbins unsigned counters. Byte
 * bins are the byte itself; letter bins come from cl_histo_bin (textbook
 * kernels) or a 256-entry table in shared memory (warp, fast).
 */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "cudalab/occupancy.h"
#include "histo_cuda.h"

#define WARP 32

/* ---- input ---- */

__global__ static void histo_generate_kernel(uint32_t *out, uint64_t words, uint64_t seed, int dist)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t w = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; w < words; w += stride)
        out[w] = cl_histo_word(seed, dist, w);
}

cudaError_t histo_generate(uint32_t *out, uint64_t words, uint64_t seed, int dist, cudaStream_t s)
{
    uint64_t blocks = (words + 255) / 256;
    unsigned grid = blocks > 65536 ? 65536u : (unsigned)(blocks ? blocks : 1);
    histo_generate_kernel<<<grid, 256, 0, s>>>(out, words, seed, dist);
    return cudaGetLastError();
}

/* ---- the textbook kernels ---- */

/* show-source: histo sectioned */
__global__ static void histo_sectioned(const uint8_t *in, uint64_t n, unsigned *hist, int mode, int width)
{
    uint64_t threads = (uint64_t)gridDim.x * blockDim.x;
    uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t section = (n + threads - 1) / threads;
    uint64_t end = (t + 1) * section < n ? (t + 1) * section : n;
    for (uint64_t i = t * section; i < end; i++) {
        int b = cl_histo_bin(in[i], mode, width);
        if (b >= 0)
            atomicAdd(&hist[b], 1u);
    }
}
/* show-source: end */

/* show-source: histo interleaved */
__global__ static void histo_interleaved(const uint8_t *in, uint64_t n, unsigned *hist, int mode, int width)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int b = cl_histo_bin(in[i], mode, width);
        if (b >= 0)
            atomicAdd(&hist[b], 1u);
    }
}
/* show-source: end */

/* show-source: histo privatized */
__global__ static void histo_privatized(const uint8_t *in, uint64_t n, unsigned *hist, int mode,
                                        int width, int nbins)
{
    extern __shared__ unsigned priv[];
    for (int b = threadIdx.x; b < nbins; b += blockDim.x)
        priv[b] = 0;
    __syncthreads();
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int b = cl_histo_bin(in[i], mode, width);
        if (b >= 0)
            atomicAdd(&priv[b], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < nbins; b += blockDim.x)
        if (priv[b])
            atomicAdd(&hist[b], priv[b]);
}
/* show-source: end */

/* ---- shared pieces of warp and fast ---- */

/* show-source: histo warp,fast */
/* byte -> bin (-1: not counted), for letter bins. */
__device__ static void fill_lut(signed char *lut, int mode, int width)
{
    for (int c = threadIdx.x; c < 256; c += blockDim.x)
        lut[c] = (signed char)cl_histo_bin((uint8_t)c, mode, width);
}

template <bool BYTES>
__device__ __forceinline__ int bin_at(const signed char *lut, uint32_t w, int k)
{
    uint32_t c = (w >> (8 * k)) & 0xFFu;
    return BYTES ? (int)c : lut[c];
}
/* show-source: end */

/* show-source: histo warp */
/* ---- warp: per-warp histograms, aggregation of runs ---- */

/* Adds one chunk of 16 bytes, one atomic per run of equal bins. */
template <bool BYTES>
__device__ __forceinline__ void warp_chunk(unsigned *mine, const signed char *lut, uint4 q)
{
    const uint32_t w[4] = {q.x, q.y, q.z, q.w};
    int cur = bin_at<BYTES>(lut, w[0], 0);
    unsigned run = 1;
#pragma unroll
    for (int k = 1; k < 16; k++) {
        int b = bin_at<BYTES>(lut, w[k >> 2], k & 3);
        if (b == cur) {
            run++;
        } else {
            if (cur >= 0)
                atomicAdd(&mine[cur], run);
            cur = b;
            run = 1;
        }
    }
    if (cur >= 0)
        atomicAdd(&mine[cur], run);
}

template <bool BYTES>
__global__ static void histo_warp(const uint8_t *in, uint64_t n, unsigned *hist, int mode, int width,
                                  int nbins)
{
    extern __shared__ unsigned sub[];           /* [warps][nbins] */
    __shared__ signed char lut[256];
    int warps = blockDim.x / WARP;
    for (int i = threadIdx.x; i < warps * nbins; i += blockDim.x)
        sub[i] = 0;
    if (!BYTES)
        fill_lut(lut, mode, width);
    __syncthreads();

    unsigned *mine = sub + (threadIdx.x / WARP) * nbins;
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint4 *v = reinterpret_cast<const uint4 *>(in);
    for (uint64_t c = t; c < n / 16; c += stride)
        warp_chunk<BYTES>(mine, lut, __ldcs(v + c));
    for (uint64_t i = n / 16 * 16 + t; i < n; i += stride) {
        int b = bin_at<BYTES>(lut, in[i], 0);
        if (b >= 0)
            atomicAdd(&mine[b], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) {
        unsigned s = 0;
        for (int w = 0; w < warps; w++)
            s += sub[w * nbins + b];
        if (s)
            atomicAdd(&hist[b], s);
    }
}
/* show-source: end */

/* show-source: histo fast */
/* ---- fast: one histogram copy per lane, bank l for lane l ---- */

/* col = copies + lane: bin b of this lane is col[b * 32], always bank `lane`. */
template <bool BYTES>
__device__ __forceinline__ void fast_word(unsigned *col, const signed char *lut, uint32_t w)
{
    if (BYTES) {
        atomicAdd(col + ((w << 5) & 0x1FE0u), 1u);
        atomicAdd(col + ((w >> 3) & 0x1FE0u), 1u);
        atomicAdd(col + ((w >> 11) & 0x1FE0u), 1u);
        atomicAdd(col + ((w >> 19) & 0x1FE0u), 1u);
    } else {
#pragma unroll
        for (int k = 0; k < 4; k++) {
            int b = lut[(w >> (8 * k)) & 0xFFu];
            if (b >= 0)
                atomicAdd(col + b * WARP, 1u);
        }
    }
}

template <bool BYTES>
__device__ __forceinline__ void fast_chunk(unsigned *col, const signed char *lut, uint4 q)
{
    fast_word<BYTES>(col, lut, q.x);
    fast_word<BYTES>(col, lut, q.y);
    fast_word<BYTES>(col, lut, q.z);
    fast_word<BYTES>(col, lut, q.w);
}

template <bool BYTES>
__global__ static void __launch_bounds__(1024) histo_fast(const uint8_t *in, uint64_t n, unsigned *hist,
                                                          int mode, int width, int nbins)
{
    extern __shared__ unsigned copies[];        /* [nbins][32] */
    __shared__ signed char lut[256];
    for (int i = threadIdx.x; i < nbins * WARP; i += blockDim.x)
        copies[i] = 0;
    if (!BYTES)
        fill_lut(lut, mode, width);
    __syncthreads();

    unsigned *col = copies + (threadIdx.x & (WARP - 1));
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    uint64_t c = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, chunks = n / 16;
    const uint4 *v = reinterpret_cast<const uint4 *>(in);
    /* two independent 16-byte loads in flight before the first atomic */
    for (; c + stride < chunks; c += 2 * stride) {
        uint4 a = __ldcs(v + c), b = __ldcs(v + c + stride);
        fast_chunk<BYTES>(col, lut, a);
        fast_chunk<BYTES>(col, lut, b);
    }
    if (c < chunks)
        fast_chunk<BYTES>(col, lut, __ldcs(v + c));
    for (uint64_t i = chunks * 16 + (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int b = bin_at<BYTES>(lut, in[i], 0);
        if (b >= 0)
            atomicAdd(col + b * WARP, 1u);
    }
    __syncthreads();
    /* thread b sums bin b's 32 copies starting at a different bank per thread */
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) {
        unsigned s = 0;
#pragma unroll 8
        for (int k = 0; k < WARP; k++)
            s += copies[b * WARP + ((k + b) & (WARP - 1))];
        if (s)
            atomicAdd(&hist[b], s);
    }
}
/* show-source: end */

/* ---- each row's kernel: hg_gpu_<impl> (histo_cuda.h) ---- */

/* The kernels of sectioned and interleaved, and those that count nbins bins in dynamic shared memory. */
typedef void (*hg_global_fn)(const uint8_t *, uint64_t, unsigned *, int, int);
typedef void (*hg_shared_fn)(const uint8_t *, uint64_t, unsigned *, int, int, int);

template <hg_global_fn K>
static cudaError_t launch_global(const histo_plan *p, const uint8_t *in, uint64_t n, unsigned *hist, cudaStream_t s)
{
    K<<<p->grid, p->block, 0, s>>>(in, n, hist, p->mode, p->width);
    return cudaGetLastError();
}

/* K_BYTES counts byte bins, K_LETTERS letter bins. */
template <hg_shared_fn K_BYTES, hg_shared_fn K_LETTERS>
static cudaError_t launch_shared(const histo_plan *p, const uint8_t *in, uint64_t n, unsigned *hist, cudaStream_t s)
{
    if (p->mode == CL_HISTO_BYTES)
        K_BYTES<<<p->grid, p->block, p->smem_dynamic, s>>>(in, n, hist, p->mode, p->width, p->nbins);
    else
        K_LETTERS<<<p->grid, p->block, p->smem_dynamic, s>>>(in, n, hist, p->mode, p->width, p->nbins);
    return cudaGetLastError();
}

const hg_gpu_impl hg_gpu_sectioned = {{(const void *)histo_sectioned, (const void *)histo_sectioned},
                                      {"histo_sectioned", "histo_sectioned"}, launch_global<histo_sectioned>};
const hg_gpu_impl hg_gpu_interleaved = {{(const void *)histo_interleaved, (const void *)histo_interleaved},
                                        {"histo_interleaved", "histo_interleaved"},
                                        launch_global<histo_interleaved>};
const hg_gpu_impl hg_gpu_privatized = {{(const void *)histo_privatized, (const void *)histo_privatized},
                                       {"histo_privatized", "histo_privatized"},
                                       launch_shared<histo_privatized, histo_privatized>};
const hg_gpu_impl hg_gpu_warp = {{(const void *)histo_warp<true>, (const void *)histo_warp<false>},
                                 {"histo_warp<bytes>", "histo_warp<letters>"},
                                 launch_shared<histo_warp<true>, histo_warp<false>>};
const hg_gpu_impl hg_gpu_fast = {{(const void *)histo_fast<true>, (const void *)histo_fast<false>},
                                 {"histo_fast<bytes>", "histo_fast<letters>"},
                                 launch_shared<histo_fast<true>, histo_fast<false>>};

/* ---- plans ---- */

/* One entry a row, in row (= id) order; NULL where this file has none (the host loop; cub, a
 * library call that histo.cu makes). */
#define HG_GPU_IMPL_(id, name, impl, ...) &hg_gpu_##impl,
static const hg_gpu_impl *const cuda_impls[CL_HISTO_NVARIANTS] = {CL_HISTO_VARIANTS(HG_GPU_IMPL_)};
#undef HG_GPU_IMPL_

const hg_gpu_impl *hg_gpu_impl_of(int variant)
{
    return variant >= 0 && variant < CL_HISTO_NVARIANTS ? cuda_impls[variant] : NULL;
}

typedef struct kernel_info {
    const void *fn;
    const char *name;
    size_t smem;                    /* dynamic shared memory */
} kernel_info;

static kernel_info kernel_for(int variant, int mode, int nbins, int block)
{
    const hg_gpu_impl *impl = hg_gpu_impl_of(variant);
    int letters = mode != CL_HISTO_BYTES;
    if (!impl)
        return {NULL, NULL, 0};
    return {impl->kernel[letters], impl->name[letters], cl_histo_smem_dynamic(variant, nbins, block)};
}

/* For %occupancy --kernel (occupancy.h): a variant's kernel on byte bins, and its dynamic
 * shared memory for a block of `block` threads. */
extern "C" const void *cl_histo_kernel_ptr(int variant, int instance, int block, size_t *dyn)
{
    kernel_info k = kernel_for(variant, CL_HISTO_BYTES, CL_HISTO_MAX_BINS, block);
    *dyn = k.smem;
    return k.fn;
}

int histo_plan_make(const cl_histo_args *a, int sms, histo_plan *p, char *err)
{
    memset(p, 0, sizeof *p);
    p->variant = a->variant;
    p->mode = a->mode;
    p->width = a->width;
    p->nbins = cl_histo_nbins(a->mode, a->width);
    kernel_info k = kernel_for(a->variant, a->mode, p->nbins, a->block);
    if (!k.fn) {
        snprintf(err, CL_ERR_LEN, "variant %d has no kernel", a->variant);
        return -1;
    }
    p->kernel = k.name;
    p->smem_dynamic = k.smem;
    cudaError_t rc = cudaFuncSetAttribute(k.fn, cudaFuncAttributePreferredSharedMemoryCarveout,
                                          (int)cudaSharedmemCarveoutMaxShared);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaFuncSetAttribute", rc);
    cudaFuncAttributes fa;
    if ((rc = cudaFuncGetAttributes(&fa, k.fn)) != cudaSuccess)
        return cl_cuda_fail(err, "cudaFuncGetAttributes", rc);
    p->regs = fa.numRegs;
    p->smem_static = fa.sharedSizeBytes;
    if (a->block > fa.maxThreadsPerBlock) {
        snprintf(err, CL_ERR_LEN, "--block %d: %s takes at most %d threads per block (%d registers "
                 "per thread)", a->block, k.name, fa.maxThreadsPerBlock, fa.numRegs);
        return -1;
    }
    p->block = (unsigned)a->block;
    if (a->grid > 0) {
        p->grid = (unsigned)a->grid;
        return 0;
    }
    int resident = 0;
    rc = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, k.fn, a->block, k.smem);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", rc);
    if (resident < 1) {
        snprintf(err, CL_ERR_LEN, "%s cannot run %d threads per block with %zu bytes of shared "
                 "memory on this device", k.name, a->block, k.smem + fa.sharedSizeBytes);
        return -1;
    }
    p->grid = (unsigned)(sms * resident);
    return 0;
}

cudaError_t histo_launch(const histo_plan *p, const uint8_t *in, uint64_t n, unsigned *hist,
                         cudaStream_t s)
{
    const hg_gpu_impl *impl = hg_gpu_impl_of(p->variant);
    return impl ? impl->launch(p, in, n, hist, s) : cudaErrorInvalidValue;
}
