/* reduce_kernels.cu — the %reduce variants of our own kernels (cuda/reduce_device.h), rd_gpu_<impl>
 * (reduce_kernels.h): each plans and launches its kernels for each (op, dtype) pair; and the input's
 * fill.
 *
 * The plan is the variant's launch configuration, fixed before anything is
 * allocated: divergent and convergent give each block 2*B elements, multiblock
 * 2*B*CL_REDUCE_COARSEN, fast one wave of resident blocks (occupancy x SMs)
 * that walks the input with a grid stride. When the first pass has more than
 * one block, a second kernel of one block reduces the partials on the device.
 */
#include <stdio.h>

#include "common.h"
#include "reduce_device.h"
#include "reduce_kernels.h"

typedef rop<float, float, CL_REDUCE_SUM> f_sum;
typedef rop<float, float, CL_REDUCE_MAX> f_max;
typedef rop<float, float, CL_REDUCE_MIN> f_min;
typedef rop<int, long long, CL_REDUCE_SUM> i_sum;
typedef rop<int, int, CL_REDUCE_MAX> i_max;
typedef rop<int, int, CL_REDUCE_MIN> i_min;

/* Calls F<Op>::fn(args...) for the Op of (op, dtype). */
#define REDUCE_DISPATCH(a, F, ...)                                                         \
    ((a)->dtype == CL_REDUCE_FLOAT                                                         \
         ? ((a)->op == CL_REDUCE_SUM   ? F<f_sum>::fn(__VA_ARGS__)                         \
            : (a)->op == CL_REDUCE_MAX ? F<f_max>::fn(__VA_ARGS__)                         \
                                       : F<f_min>::fn(__VA_ARGS__))                        \
         : ((a)->op == CL_REDUCE_SUM   ? F<i_sum>::fn(__VA_ARGS__)                         \
            : (a)->op == CL_REDUCE_MAX ? F<i_max>::fn(__VA_ARGS__)                         \
                                       : F<i_min>::fn(__VA_ARGS__)))

size_t reduce_acc_bytes(cl_reduce_op op, cl_reduce_dtype dtype)
{
    return cl_reduce_acc_bytes(op, dtype);
}

/* ---- our variants: each a template K<Op> over the (op, dtype) pairs ----
 * K<Op>::first() and K<Op>::final() are its two passes, first_name and final_name how the result
 * names them, grid how many blocks its first pass has. */

template <class Op> using rd_first_fn = void (*)(const typename Op::in_t *, uint64_t, typename Op::acc_t *);
template <class Op> using rd_final_fn = void (*)(const typename Op::acc_t *, uint64_t, typename Op::acc_t *);
/* The first pass's blocks for args a (first: its kernel, sms: the device's SMs). 0, or -1 with err. */
typedef int (*rd_grid_fn)(const cl_reduce_args *a, const void *first, int sms, uint64_t *grid, char *err);

/* One block per 2*B*COARSEN elements. */
template <int COARSEN>
static int grid_of_segments(const cl_reduce_args *a, const void *, int, uint64_t *grid, char *)
{
    uint64_t seg = 2 * (uint64_t)a->block * COARSEN;
    *grid = (a->n + seg - 1) / seg;
    return 0;
}

/* One wave of resident blocks (occupancy x SMs), fewer when the input has not one vector per thread. */
static int grid_of_one_wave(const cl_reduce_args *a, const void *first, int sms, uint64_t *grid, char *err)
{
    uint64_t b = (uint64_t)a->block;
    int per_sm = 0;
    cudaError_t rc = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, first, a->block, 0);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", rc);
    uint64_t wave = (uint64_t)(per_sm > 0 ? per_sm : 1) * (uint64_t)sms;
    uint64_t need = (a->n / 4 + b - 1) / b;      /* blocks with one vector per thread */
    *grid = need < 1 ? 1 : need < wave ? need : wave;
    return 0;
}

template <class Op>
struct rd_divergent {
    static rd_first_fn<Op> first() { return reduce_tree_kernel<Op, TREE_DIVERGENT>; }
    static rd_final_fn<Op> final() { return reduce_final_kernel<Op, FINAL_DIVERGENT>; }
    static constexpr const char *first_name = "reduce_tree_kernel<divergent>";
    static constexpr const char *final_name = "reduce_final_kernel<divergent>";
    static constexpr rd_grid_fn grid = grid_of_segments<1>;
};

template <class Op>
struct rd_convergent {
    static rd_first_fn<Op> first() { return reduce_tree_kernel<Op, TREE_CONVERGENT>; }
    static rd_final_fn<Op> final() { return reduce_final_kernel<Op, FINAL_CONVERGENT>; }
    static constexpr const char *first_name = "reduce_tree_kernel<convergent>";
    static constexpr const char *final_name = "reduce_final_kernel<convergent>";
    static constexpr rd_grid_fn grid = grid_of_segments<1>;
};

template <class Op>
struct rd_multiblock {
    static rd_first_fn<Op> first() { return reduce_multiblock_kernel<Op>; }
    static rd_final_fn<Op> final() { return reduce_final_kernel<Op, FINAL_CONVERGENT>; }
    static constexpr const char *first_name = "reduce_multiblock_kernel";
    static constexpr const char *final_name = "reduce_final_kernel<convergent>";
    static constexpr rd_grid_fn grid = grid_of_segments<CL_REDUCE_COARSEN>;
};

template <class Op>
struct rd_fast {
    static rd_first_fn<Op> first() { return reduce_fast_kernel<Op>; }
    static rd_final_fn<Op> final() { return reduce_final_kernel<Op, FINAL_SHUFFLE>; }
    static constexpr const char *first_name = "reduce_fast_kernel";
    static constexpr const char *final_name = "reduce_final_kernel<shuffle>";
    static constexpr rd_grid_fn grid = grid_of_one_wave;
};

/* ---- what every variant of ours shares: its plan, its launch, its description ---- */

static void set_launch(cl_launch *l, unsigned grid, unsigned block, size_t smem, int regs, int kernels)
{
    l->grid[0] = (int)grid, l->grid[1] = l->grid[2] = 1;
    l->block[0] = (int)block, l->block[1] = l->block[2] = 1;
    l->smem_bytes = smem;
    l->regs_per_thread = regs;
    l->kernels = kernels;
}

static void describe_kernels(const reduce_plan *p, const cl_reduce_args *, cl_reduce_result *out)
{
    int kernels = p->final_block ? 2 : 1;
    set_launch(&out->launch, p->grid, p->block, p->smem + p->smem_static, p->regs, kernels);
    if (p->final_block) {
        set_launch(&out->final, 1, p->final_block, p->final_smem + p->final_smem_static,
                   p->final_regs, 1);
        snprintf(out->impl, sizeof out->impl, "CUDA: %s (%u x %u) + %s (1 x %u)", p->kernel,
                 p->grid, p->block, p->final_kernel, p->final_block);
    } else {
        snprintf(out->impl, sizeof out->impl, "CUDA: %s (1 x %u)", p->kernel, p->block);
    }
}

template <template <class> class K>
struct rd_kernels {
    template <class Op>
    struct planner {
        static int fn(int v, const cl_reduce_args *a, int sms, int max_grid, reduce_plan *p, char *err)
        {
            typedef typename Op::acc_t A;
            const void *k1 = (const void *)K<Op>::first();
            const void *k2 = (const void *)K<Op>::final();
            p->kernel = K<Op>::first_name;
            p->final_kernel = K<Op>::final_name;
            p->variant = v;
            p->block = (unsigned)a->block;
            p->smem = cl_reduce_smem_dynamic(v, a->block, sizeof(A));
            uint64_t grid;
            if (K<Op>::grid(a, k1, sms, &grid, err))
                return -1;
            if (grid > (uint64_t)max_grid) {
                snprintf(err, CL_ERR_LEN,
                         "--size %llu with --block %d needs %llu blocks; this device allows %d "
                         "(use a larger --block)",
                         (unsigned long long)a->n, a->block, (unsigned long long)grid, max_grid);
                return -1;
            }
            p->grid = (unsigned)grid;
            p->final_block = grid > 1 ? CL_REDUCE_FINAL_BLOCK : 0;
            p->final_smem = grid > 1 ? cl_reduce_final_smem_dynamic(v, sizeof(A)) : 0;
            cudaFuncAttributes at;
            cudaError_t rc = cudaFuncGetAttributes(&at, k1);
            if (rc != cudaSuccess)
                return cl_cuda_fail(err, "cudaFuncGetAttributes", rc);
            p->regs = at.numRegs;
            p->smem_static = at.sharedSizeBytes;
            rc = cudaFuncGetAttributes(&at, k2);
            if (rc != cudaSuccess)
                return cl_cuda_fail(err, "cudaFuncGetAttributes", rc);
            p->final_regs = at.numRegs;
            p->final_smem_static = at.sharedSizeBytes;
            return 0;
        }
    };

    template <class Op>
    struct launcher {
        static cudaError_t fn(const reduce_plan *p, uint64_t n, const void *in_, void *part_, void *out_,
                              cudaStream_t s)
        {
            typedef typename Op::in_t T;
            typedef typename Op::acc_t A;
            const T *in = static_cast<const T *>(in_);
            A *part = static_cast<A *>(part_), *out = static_cast<A *>(out_);
            A *first_out = p->final_block ? part : out;
            rd_first_fn<Op> first = K<Op>::first();
            first<<<p->grid, p->block, p->smem, s>>>(in, n, first_out);
            cudaError_t rc = cudaGetLastError();
            if (rc != cudaSuccess || !p->final_block)
                return rc;
            unsigned fb = p->final_block;
            size_t fs = p->final_smem;
            rd_final_fn<Op> final = K<Op>::final();
            final<<<1, fb, fs, s>>>(part, p->grid, out);
            return cudaGetLastError();
        }
    };

    static int plan(int v, const cl_reduce_args *a, int sms, int max_grid, reduce_plan *p, char *err)
    {
        *p = reduce_plan();
        return REDUCE_DISPATCH(a, planner, v, a, sms, max_grid, p, err);
    }

    static int launch(const reduce_plan *p, const cl_reduce_args *a, const reduce_bufs *b, cudaStream_t s,
                      char *err)
    {
        cudaError_t rc = REDUCE_DISPATCH(a, launcher, p, a->n, b->in, b->part, b->out, s);
        return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "kernel launch", rc);
    }

    static const void *kernel(int instance)
    {
        return instance ? (const void *)K<f_sum>::final() : (const void *)K<f_sum>::first();
    }
};

template <template <class> class K>
constexpr rd_gpu_impl rd_kernels_impl = {rd_kernels<K>::plan, rd_kernels<K>::launch, describe_kernels,
                                         rd_kernels<K>::kernel};

/* The rows' implementations (reduce_kernels.h). */
const rd_gpu_impl rd_gpu_divergent = rd_kernels_impl<rd_divergent>;
const rd_gpu_impl rd_gpu_convergent = rd_kernels_impl<rd_convergent>;
const rd_gpu_impl rd_gpu_multiblock = rd_kernels_impl<rd_multiblock>;
const rd_gpu_impl rd_gpu_fast = rd_kernels_impl<rd_fast>;

/* ---- input ---- */

__global__ static void reduce_fill_kernel(void *buf, uint64_t n, int dtype, uint64_t seed)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        if (dtype == CL_REDUCE_FLOAT)
            static_cast<float *>(buf)[i] = cl_uniform(seed, i);
        else
            static_cast<int *>(buf)[i] = cl_uniform_int(seed, i, CL_REDUCE_INT_LO, CL_REDUCE_INT_HI);
    }
}

cudaError_t reduce_fill(void *in, uint64_t n, cl_reduce_dtype dtype, uint64_t seed, cudaStream_t s)
{
    uint64_t blocks = (n + 255) / 256;
    unsigned grid = blocks > 65536 ? 65536u : (unsigned)blocks;
    reduce_fill_kernel<<<grid, 256, 0, s>>>(in, n, (int)dtype, seed);
    return cudaGetLastError();
}
