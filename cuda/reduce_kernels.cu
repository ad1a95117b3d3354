/* reduce_kernels.cu — plans and launches the %reduce kernels of
 * cuda/reduce_device.h for each (op, dtype) pair, and fills the input.
 *
 * The plan is the variant's launch configuration, fixed before anything is
 * allocated: divergent and convergent give each block 2*B elements, multiblock
 * 2*B*CL_REDUCE_COARSEN, fast one wave of resident blocks (occupancy x SMs)
 * that walks the input with a grid stride. When the first pass has more than
 * one block, a second kernel of one block reduces the partials on the device.
 */
#include <stdio.h>

#include "common.h"
#include "cudalab/occupancy.h"
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

/* ---- which kernels a variant uses ---- */

template <class Op>
struct kernels {
    static const void *first(int v, const char **name)
    {
        switch (v) {
        case CL_REDUCE_DIVERGENT:
            *name = "reduce_tree_kernel<divergent>";
            return (const void *)reduce_tree_kernel<Op, TREE_DIVERGENT>;
        case CL_REDUCE_CONVERGENT:
            *name = "reduce_tree_kernel<convergent>";
            return (const void *)reduce_tree_kernel<Op, TREE_CONVERGENT>;
        case CL_REDUCE_MULTIBLOCK:
            *name = "reduce_multiblock_kernel";
            return (const void *)reduce_multiblock_kernel<Op>;
        case CL_REDUCE_FAST:
            *name = "reduce_fast_kernel";
            return (const void *)reduce_fast_kernel<Op>;
        default:
            return NULL;
        }
    }
    static const void *final(int v, const char **name)
    {
        switch (v) {
        case CL_REDUCE_DIVERGENT:
            *name = "reduce_final_kernel<divergent>";
            return (const void *)reduce_final_kernel<Op, FINAL_DIVERGENT>;
        case CL_REDUCE_CONVERGENT:
        case CL_REDUCE_MULTIBLOCK:
            *name = "reduce_final_kernel<convergent>";
            return (const void *)reduce_final_kernel<Op, FINAL_CONVERGENT>;
        case CL_REDUCE_FAST:
            *name = "reduce_final_kernel<shuffle>";
            return (const void *)reduce_final_kernel<Op, FINAL_SHUFFLE>;
        default:
            return NULL;
        }
    }
};

/* For %occupancy --kernel (occupancy.h): the float-sum instance of a variant's first pass, or with
 * instance 1 of its second, and its dynamic shared memory for a block of `threads`. */
extern "C" const void *cl_reduce_kernel_ptr(int variant, int instance, int threads, size_t *dyn)
{
    const char *name;
    *dyn = instance ? cl_reduce_final_smem_dynamic(variant, sizeof(float))
                    : cl_reduce_smem_dynamic(variant, threads, sizeof(float));
    return instance ? kernels<f_sum>::final(variant, &name) : kernels<f_sum>::first(variant, &name);
}

/* ---- plans ---- */

template <class Op>
struct planner {
    static int fn(int v, const cl_reduce_args *a, int sms, int max_grid, reduce_plan *p, char *err)
    {
        typedef typename Op::acc_t A;
        const void *k1 = kernels<Op>::first(v, &p->kernel);
        const void *k2 = kernels<Op>::final(v, &p->final_kernel);
        if (!k1 || !k2) {
            snprintf(err, CL_ERR_LEN, "variant %d has no CUDA kernel", v);
            return -1;
        }
        p->variant = v;
        p->block = (unsigned)a->block;
        p->smem = cl_reduce_smem_dynamic(v, a->block, sizeof(A));
        uint64_t b = (uint64_t)a->block, grid;
        if (v == CL_REDUCE_FAST) {
            int per_sm = 0;
            cudaError_t rc = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k1, a->block, 0);
            if (rc != cudaSuccess)
                return cl_cuda_fail(err, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", rc);
            uint64_t wave = (uint64_t)(per_sm > 0 ? per_sm : 1) * (uint64_t)sms;
            uint64_t need = (a->n / 4 + b - 1) / b;      /* blocks with one vector per thread */
            grid = need < 1 ? 1 : need < wave ? need : wave;
        } else {
            uint64_t seg = 2 * b * (v == CL_REDUCE_MULTIBLOCK ? CL_REDUCE_COARSEN : 1);
            grid = (a->n + seg - 1) / seg;
        }
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

int reduce_plan_make(int v, const cl_reduce_args *a, int sms, int max_grid, reduce_plan *p,
                     char *err)
{
    *p = reduce_plan();
    return REDUCE_DISPATCH(a, planner, v, a, sms, max_grid, p, err);
}

/* ---- launches ---- */

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
        switch (p->variant) {
        case CL_REDUCE_DIVERGENT:
            reduce_tree_kernel<Op, TREE_DIVERGENT><<<p->grid, p->block, p->smem, s>>>(in, n, first_out);
            break;
        case CL_REDUCE_CONVERGENT:
            reduce_tree_kernel<Op, TREE_CONVERGENT><<<p->grid, p->block, p->smem, s>>>(in, n, first_out);
            break;
        case CL_REDUCE_MULTIBLOCK:
            reduce_multiblock_kernel<Op><<<p->grid, p->block, p->smem, s>>>(in, n, first_out);
            break;
        case CL_REDUCE_FAST:
            reduce_fast_kernel<Op><<<p->grid, p->block, p->smem, s>>>(in, n, first_out);
            break;
        default:
            return cudaErrorInvalidValue;
        }
        cudaError_t rc = cudaGetLastError();
        if (rc != cudaSuccess || !p->final_block)
            return rc;
        unsigned fb = p->final_block;
        size_t fs = p->final_smem;
        switch (p->variant) {
        case CL_REDUCE_DIVERGENT:
            reduce_final_kernel<Op, FINAL_DIVERGENT><<<1, fb, fs, s>>>(part, p->grid, out);
            break;
        case CL_REDUCE_FAST:
            reduce_final_kernel<Op, FINAL_SHUFFLE><<<1, fb, fs, s>>>(part, p->grid, out);
            break;
        default:
            reduce_final_kernel<Op, FINAL_CONVERGENT><<<1, fb, fs, s>>>(part, p->grid, out);
            break;
        }
        return cudaGetLastError();
    }
};

cudaError_t reduce_launch(const reduce_plan *p, const cl_reduce_args *a, const void *in,
                          void *partials, void *out, cudaStream_t s)
{
    return REDUCE_DISPATCH(a, launcher, p, a->n, in, partials, out, s);
}

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
