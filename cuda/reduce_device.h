/* reduce_device.h — the %reduce kernels, one per variant (device code only;
 * included once, by cuda/reduce_kernels.cu, which plans and launches them).
 *
 * Every kernel is a template over an operation (sum, max, min) and its
 * element and accumulator types, so one kernel teaches one idea for all six
 * (op, dtype) pairs. Integer sums accumulate in int64 (long long); the rest
 * accumulate in the element type. The lecture's shapes are kept on purpose:
 * `t % (2*stride)` in the divergent tree is the slow modulo and the divergent
 * branch that the lecture measures, not something to optimise away.
 */
#ifndef CUDALAB_CUDA_REDUCE_DEVICE_H
#define CUDALAB_CUDA_REDUCE_DEVICE_H

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cudalab/reduce.h"

/* ---- operations ---- */

/* The identities of max and min: the lowest and highest value of A. */
template <typename A> struct bounds;
template <> struct bounds<float> {
    static __device__ __forceinline__ float lowest() { return -INFINITY; }
    static __device__ __forceinline__ float highest() { return INFINITY; }
};
template <> struct bounds<int> {
    static __device__ __forceinline__ int lowest() { return INT32_MIN; }
    static __device__ __forceinline__ int highest() { return INT32_MAX; }
};
template <> struct bounds<long long> {
    static __device__ __forceinline__ long long lowest() { return INT64_MIN; }
    static __device__ __forceinline__ long long highest() { return INT64_MAX; }
};

/* OP is a cl_reduce_op; T the element type, A the accumulator type. */
template <typename T, typename A, int OP>
struct rop {
    typedef T in_t;
    typedef A acc_t;
    static __device__ __forceinline__ A identity()
    {
        if constexpr (OP == CL_REDUCE_SUM)
            return A(0);
        return OP == CL_REDUCE_MAX ? bounds<A>::lowest() : bounds<A>::highest();
    }
    static __device__ __forceinline__ A apply(A a, A b)
    {
        if constexpr (OP == CL_REDUCE_SUM)
            return a + b;
        if constexpr (OP == CL_REDUCE_MAX)
            return a > b ? a : b;
        return a < b ? a : b;
    }
};

/* show-source: reduce fast */
template <typename T> struct vec4;
template <> struct vec4<float> { typedef float4 type; };
template <> struct vec4<int> { typedef int4 type; };
/* show-source: end */

/* show-source: reduce divergent,convergent,multiblock */
/* Dynamic shared memory as an array of the accumulator type. */
template <typename A>
static __device__ __forceinline__ A *shared_acc()
{
    extern __shared__ __align__(16) unsigned char cl_reduce_smem[];
    return reinterpret_cast<A *>(cl_reduce_smem);
}

enum tree { TREE_DIVERGENT, TREE_CONVERGENT };

/* The two in-block trees of the lecture over s[0..blockDim.x); s[0] ends with
 * the block's result. The caller has stored s[t] and not yet synchronised. */
template <class Op, int TREE>
static __device__ __forceinline__ void block_tree(typename Op::acc_t *s)
{
    unsigned t = threadIdx.x;
    __syncthreads();
    if constexpr (TREE == TREE_DIVERGENT) {
        for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
            if (t % (2 * stride) == 0)
                s[t] = Op::apply(s[t], s[t + stride]);
            __syncthreads();
        }
    } else {
        for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
            if (t < stride)
                s[t] = Op::apply(s[t], s[t + stride]);
            __syncthreads();
        }
    }
}
/* show-source: end */

/* show-source: reduce fast */
/* Warp shuffles, then one value per warp through shared memory, then the
 * first warp again. Returns the block's result in thread 0. */
template <class Op>
static __device__ __forceinline__ typename Op::acc_t block_shuffle(typename Op::acc_t v)
{
    typedef typename Op::acc_t A;
    __shared__ A warp_vals[32];
    for (int off = 16; off > 0; off >>= 1)
        v = Op::apply(v, __shfl_down_sync(0xffffffffu, v, off));
    unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    if (lane == 0)
        warp_vals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (blockDim.x >> 5) ? warp_vals[lane] : Op::identity();
        for (int off = 16; off > 0; off >>= 1)
            v = Op::apply(v, __shfl_down_sync(0xffffffffu, v, off));
    }
    return v;
}
/* show-source: end */

/* ---- first passes: one partial per block ---- */

/* show-source: reduce divergent,convergent */
/* divergent / convergent: a block's segment is 2*blockDim elements; the first
 * addition happens on the load, the rest in the tree. */
template <class Op, int TREE>
__global__ void reduce_tree_kernel(const typename Op::in_t *in, uint64_t n, typename Op::acc_t *out)
{
    typedef typename Op::acc_t A;
    A *s = shared_acc<A>();
    unsigned t = threadIdx.x;
    uint64_t i = (uint64_t)blockIdx.x * 2u * blockDim.x + t, j = i + blockDim.x;
    A a = i < n ? A(in[i]) : Op::identity();
    A b = j < n ? A(in[j]) : Op::identity();
    s[t] = Op::apply(a, b);
    block_tree<Op, TREE>(s);
    if (t == 0)
        out[blockIdx.x] = s[0];
}
/* show-source: end */

/* show-source: reduce multiblock */
/* multiblock: thread coarsening. Each thread first adds 2*CL_REDUCE_COARSEN
 * elements, blockDim apart (coalesced, independent loads), then the block
 * runs the convergent tree. */
template <class Op>
__global__ void reduce_multiblock_kernel(const typename Op::in_t *in, uint64_t n,
                                         typename Op::acc_t *out)
{
    typedef typename Op::acc_t A;
    A *s = shared_acc<A>();
    unsigned t = threadIdx.x;
    uint64_t base = (uint64_t)blockIdx.x * 2u * CL_REDUCE_COARSEN * blockDim.x + t;
    A acc = Op::identity();
#pragma unroll
    for (int k = 0; k < 2 * CL_REDUCE_COARSEN; k++) {
        uint64_t i = base + (uint64_t)k * blockDim.x;
        if (i < n)
            acc = Op::apply(acc, A(in[i]));
    }
    s[t] = acc;
    block_tree<Op, TREE_CONVERGENT>(s);
    if (t == 0)
        out[blockIdx.x] = s[0];
}
/* show-source: end */

/* show-source: reduce fast */
#define FAST_UNROLL 4

/* fast: a grid of one wave; every thread walks the input in 16-byte vectors
 * with a grid stride, FAST_UNROLL loads in flight before the first use, then
 * warp shuffles combine the block. The n % 4 trailing elements go to the
 * first threads of the grid. */
template <class Op>
__global__ void reduce_fast_kernel(const typename Op::in_t *in, uint64_t n, typename Op::acc_t *out)
{
    typedef typename Op::in_t T;
    typedef typename Op::acc_t A;
    typedef typename vec4<T>::type V;
    const V *v = reinterpret_cast<const V *>(in);
    uint64_t nvec = n / 4;
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    A acc = Op::identity();
    for (; i + (FAST_UNROLL - 1) * stride < nvec; i += FAST_UNROLL * stride) {
        V x[FAST_UNROLL];
#pragma unroll
        for (int u = 0; u < FAST_UNROLL; u++)
            x[u] = __ldg(&v[i + u * stride]);
#pragma unroll
        for (int u = 0; u < FAST_UNROLL; u++)
            acc = Op::apply(acc, Op::apply(Op::apply(A(x[u].x), A(x[u].y)),
                                           Op::apply(A(x[u].z), A(x[u].w))));
    }
    for (; i < nvec; i += stride) {
        V x = __ldg(&v[i]);
        acc = Op::apply(acc, Op::apply(Op::apply(A(x.x), A(x.y)), Op::apply(A(x.z), A(x.w))));
    }
    uint64_t g = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g < n - nvec * 4)
        acc = Op::apply(acc, A(in[nvec * 4 + g]));
    acc = block_shuffle<Op>(acc);
    if (threadIdx.x == 0)
        out[blockIdx.x] = acc;
}
/* show-source: end */

/* ---- second pass: one block reduces the partials ---- */

enum final_kind { FINAL_DIVERGENT = TREE_DIVERGENT, FINAL_CONVERGENT = TREE_CONVERGENT, FINAL_SHUFFLE };

/* Each thread adds every blockDim-th partial (four independent loads at a
 * time, so one block does not wait on latency), then the variant's own tree. */
template <class Op, int KIND>
__global__ void reduce_final_kernel(const typename Op::acc_t *partials, uint64_t p,
                                    typename Op::acc_t *out)
{
    typedef typename Op::acc_t A;
    unsigned t = threadIdx.x, b = blockDim.x;
    A acc[4] = {Op::identity(), Op::identity(), Op::identity(), Op::identity()};
    uint64_t i = t;
    for (; i + 3u * b < p; i += 4u * b) {
#pragma unroll
        for (int u = 0; u < 4; u++)
            acc[u] = Op::apply(acc[u], partials[i + u * b]);
    }
    for (; i < p; i += b)
        acc[0] = Op::apply(acc[0], partials[i]);
    A v = Op::apply(Op::apply(acc[0], acc[1]), Op::apply(acc[2], acc[3]));
    if constexpr (KIND == FINAL_SHUFFLE) {
        v = block_shuffle<Op>(v);
    } else {
        A *s = shared_acc<A>();
        s[t] = v;
        block_tree<Op, KIND>(s);
        v = s[0];
    }
    if (t == 0)
        *out = v;
}

#endif
