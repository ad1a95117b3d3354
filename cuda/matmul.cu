/* matmul.cu — the CUDA backend's %matmul: the variant table and the runner
 * that every variant shares.
 *
 * The variants are the contract's rows (matmul.h); each names its
 * implementation (mm_gpu_<impl>, matmul_cuda.h), and cuda_impls is generated
 * from them. The runner refuses a CL_MATMUL_SM80 variant on an older device and
 * describes the launch first (so a grid too large for the device is refused
 * before any allocation), allocates A, B, C, an L2-flush buffer and the scratch
 * memory a variant asks for, generates A and B on the device from the seed (Bᵀ
 * in B's place for a CL_MATMUL_BT variant, from the same generator: the same
 * product), fills C with NaN so
 * that an element no thread writes fails the check, runs the warm-up
 * launches, then times each rep with CUDA events around the kernel only,
 * after reading a buffer twice the size of L2 so that no rep starts with
 * the inputs already cached. Each launch gets inputs of its own and C set to
 * NaN again before the flush (cl_cuda_reps in common.h); after the timed
 * loop the reps the harness drew are checked against cuBLAS on their own
 * inputs (mm_reference), then an untimed launch on the run's seed leaves the
 * C that is copied back and checked on the host. Every CUDA call is checked
 * and every allocation released on every path.
 */
#include <stdio.h>
#include <string.h>

#include "matmul_cuda.h"

/* ---- what runs each variant of the contract (matmul.h), by id ---- */

/* One entry a row, in row (= id) order; NULL where this backend has none (the host loop, CL_V_HOST,
 * runs on the CPU backend). */
#define MM_GPU_IMPL_(id, name, impl, ...) &mm_gpu_##impl,
static const mm_gpu_impl *const cuda_impls[CL_MATMUL_NVARIANTS] = {CL_MATMUL_VARIANTS(MM_GPU_IMPL_)};
#undef MM_GPU_IMPL_

static const mm_gpu_impl *cuda_impl(int v)
{
    if (v == CL_VARIANT_STUDENT)
        return &mm_gpu_student;
    return v >= 0 && v < CL_MATMUL_NVARIANTS ? cuda_impls[v] : NULL;
}

static bool cuda_matmul_has(int v)
{
    return v >= 0 && cuda_impl(v) != NULL;
}

/* ---- helpers shared with the kernel files ---- */

int mm_launched(const char *what, char *err)
{
    cudaError_t rc = cudaGetLastError();
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, what, rc);
}

int mm_describe(const void *func, dim3 grid, dim3 block, cl_launch *l, char *err)
{
    int dev = 0, max_x = 0, max_y = 0;
    cudaError_t rc = cudaGetDevice(&dev);
    if (rc == cudaSuccess)
        rc = cudaDeviceGetAttribute(&max_x, cudaDevAttrMaxGridDimX, dev);
    if (rc == cudaSuccess)
        rc = cudaDeviceGetAttribute(&max_y, cudaDevAttrMaxGridDimY, dev);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "grid limits", rc);
    if (grid.x > (unsigned)max_x || grid.y > (unsigned)max_y) {
        snprintf(err, CL_ERR_LEN, "a grid of %u×%u blocks exceeds this device's %d×%d (columns × rows "
                 "of blocks): lower --m or use larger blocks", grid.x, grid.y, max_x, max_y);
        return -1;
    }
    return cl_cuda_describe(func, grid, block, l, err);
}

int mm_dynamic_smem(const void *func, int bytes, char *err)
{
    cudaError_t rc = cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (rc == cudaSuccess)
        rc = cudaFuncSetAttribute(func, cudaFuncAttributePreferredSharedMemoryCarveout,
                                  (int)cudaSharedmemCarveoutMaxShared);
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "shared memory per block", rc);
}

/* CL_MATMUL_SM80 variants on an older device: refused before anything is allocated. */
static int needs_sm80(const cl_variant *v, char *err)
{
    int dev = 0, major = 0, minor = 0;
    cudaError_t rc = cudaGetDevice(&dev);
    if (rc == cudaSuccess)
        rc = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    if (rc == cudaSuccess)
        rc = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "compute capability", rc);
    if (major >= 8)
        return 0;
    snprintf(err, CL_ERR_LEN, "%s needs compute capability 8.0 or later (cp.async, TF32 and BF16 tensor cores); "
             "this device is %d.%d", v->name, major, minor);
    return -1;
}

/* ---- a student's kernel: one thread per element of C ---- */

static dim3 student_grid(const mm_problem *p)
{
    dim3 block = cl_cuda_student_block(p->student);
    return cl_cuda_student_grid(p->student, mm_grid(p, (int)block.y, (int)block.x));
}

static int student_prepare(const mm_problem *p, cl_matmul_result *out, char *err)
{
    snprintf(out->impl, sizeof out->impl, "your kernel %s", p->student->name);
    return cl_cuda_student_describe(p->student, p->student_func, student_grid(p),
                                    cl_cuda_student_block(p->student), &out->launch, err);
}

static int student_launch(const mm_problem *p, char *err)
{
    const float *a = p->a, *b = p->b;
    float *c = p->c;
    int m = p->m, n = p->n, k = p->k;
    void *args[] = { &a, &b, &c, &m, &n, &k };
    return cl_cuda_student_launch(p->student, p->student_func, student_grid(p),
                                  cl_cuda_student_block(p->student), args, err);
}

const mm_gpu_impl mm_gpu_student = { student_prepare, student_launch };

/* ---- inputs ---- */

enum mm_input { MM_A, MM_B, MM_BT };

/* A, B, or Bᵀ (n×k: element i is B[i mod k][i / k]), from the generators of matmul.h. */
__global__ void mm_fill_kernel(float *p, long long count, uint64_t seed, int which, int n, int k)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        p[i] = which == MM_A ? cl_matmul_a(seed, (uint64_t)i)
             : which == MM_B ? cl_matmul_b(seed, (uint64_t)i)
                             : cl_matmul_b(seed, (uint64_t)(i % k) * (uint64_t)n + (uint64_t)(i / k));
}

static int fill(float *p, long long count, uint64_t seed, int which, const cl_matmul_args *a, char *err)
{
    long long blocks = (count + 255) / 256;
    mm_fill_kernel<<<(unsigned)(blocks < 65536 ? blocks : 65536), 256>>>(p, count, seed, which, a->n, a->k);
    return mm_launched("generating inputs", err);
}

/* ---- the runner ---- */

struct mm_buffers {
    float *a, *b, *c;
    void *c_base;                   /* a student's C: between guard bytes (c points inside) */
    void *scratch;                  /* the variant's own (mm_gpu_impl.scratch), or NULL */
    cl_cuda_timing t;
    cl_cuda_reps reps;              /* each launch's inputs; the drawn reps' C */
};

static void release(mm_buffers *d)
{
    /* after a sticky error these fail too; nothing more can be done here */
    cudaFree(d->a);
    cudaFree(d->b);
    cudaFree(d->c_base ? d->c_base : d->c);
    cudaFree(d->scratch);
    cl_cuda_timing_free(&d->t);
    cl_cuda_reps_free(&d->reps);
    (void)cudaGetLastError();
}

/* Every element of C set to NaN: an element no thread writes fails the check. */
static int sentinel(const cl_matmul_args *a, float *c, char *err)
{
    cudaError_t rc = cudaMemset(c, 0xFF, (size_t)a->m * a->n * sizeof(float));
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "cudaMemset C", rc);
}

/* A and B of one launch from its seed (cl_cuda_reps_seed), then C set to NaN: outside the timed
 * window, before the flush. bt: B is made as Bᵀ (n×k), in B's buffer, for a CL_MATMUL_BT variant. */
static int inputs(const cl_matmul_args *a, bool bt, mm_buffers *d, uint64_t seed, char *err)
{
    long long na = (long long)a->m * a->k, nb = (long long)a->k * a->n;
    if (fill(d->a, na, seed, MM_A, a, err) || fill(d->b, nb, seed, bt ? MM_BT : MM_B, a, err))
        return -1;
    return sentinel(a, d->c, err);
}

/* How far an element of C may lie from cuBLAS's FP32 product on the same inputs: the host
 * check's tolerance for the variant's precision (cl_matmul_tolerance: TF32's for FP16, 2^3 times
 * it for BF16's 8 bits) times the largest scale of a dot product, Σ|a·b| <= k (|A|, |B| < 1). Both
 * results within that tolerance of the exact product differ by less: the scale is about k/4. */
static double ref_atol(const cl_matmul_args *a, unsigned flags)
{
    double tol = flags & CL_MATMUL_BF16 ? 8 * CL_MATMUL_TOL_TF32
               : flags & (CL_MATMUL_TF32 | CL_MATMUL_FP16) ? CL_MATMUL_TOL_TF32 : CL_MATMUL_TOL_FP32;
    return tol * a->k;
}

/* bt: as for inputs(); scratch: the bytes of the variant's own buffer (mm_gpu_impl.scratch), 0 for
 * none; trusted: the variant is the reference (cuBLAS FP32), not checked against itself. */
static int setup(const cl_matmul_args *a, size_t scratch, bool bt, unsigned flags, bool trusted, mm_buffers *d,
                 char *err)
{
    size_t na = (size_t)a->m * a->k, nb = (size_t)a->k * a->n, nc = (size_t)a->m * a->n;
    if (cl_cuda_alloc((void **)&d->a, na * sizeof(float), "matrix A", err) ||
        cl_cuda_alloc((void **)&d->b, nb * sizeof(float), "matrix B", err) ||
        (a->student ? cl_cuda_guarded_alloc(&d->c_base, (void **)&d->c, nc * sizeof(float), "matrix C", err)
                    : cl_cuda_alloc((void **)&d->c, nc * sizeof(float), "matrix C", err)) ||
        (scratch && cl_cuda_alloc(&d->scratch, scratch, "variant's scratch buffer", err)) ||
        cl_cuda_timing_init(&d->t, err))
        return -1;
    cl_cuda_output c = { d->c, nc, CL_CUDA_F32, ref_atol(a, flags), "C", (size_t)a->n };
    if (cl_cuda_reps_init(&d->reps, a->seed, &c, trusted, err))
        return -1;
    /* the warm-up's and counted launches' */
    return inputs(a, bt, d, cl_cuda_reps_seed(&d->reps, CL_CUDA_REP_WARMUP), err);
}

static int timed(const mm_gpu_impl *impl, const mm_problem *p, const cl_matmul_args *a, bool bt,
                 mm_buffers *d, cl_matmul_result *out, char *err)
{
    bool student = a->student != NULL;
    /* a student's kernel always warms up once, on the inputs setup() made for the warm-up */
    for (int w = 0; w < (student && a->warmup < 1 ? 1 : a->warmup); w++)
        if (impl->launch(p, err))
            return -1;
    if (cl_cuda_synchronize("warm-up runs", err) != 0 ||
        cl_cuda_counted(&d->t, err, [&] { return impl->launch(p, err); }))
        return -1;
    cl_times *t = &out->times;
    for (t->reps = 0; cl_rep_more(a->reps, t); t->reps++) {
        /* each rep computes all of C again, from inputs of its own */
        if (inputs(a, bt, d, cl_cuda_reps_seed(&d->reps, t->reps), err) ||
            cl_cuda_flush_l2(&d->t, "flushing L2", err) || cl_cuda_time_start(&d->t, err) ||
            impl->launch(p, err) || cl_cuda_time_stop(&d->t, &t->ms[t->reps], "timed run", err) ||
            cl_cuda_reps_keep(&d->reps, t->reps, err))
            return -1;
    }
    /* the drawn reps against cuBLAS on their own inputs (B as B, not Bᵀ); the run's result: its own
     * inputs, one untimed launch */
    return cl_cuda_reps_verify(
        &d->reps, t, err, [&](uint64_t seed) { return inputs(a, false, d, seed, err) || mm_reference(p, err); },
        [&] { return inputs(a, bt, d, cl_cuda_reps_seed(&d->reps, CL_CUDA_REP_FINAL), err) || impl->launch(p, err); });
}

static int cuda_matmul_run(int v, const cl_matmul_args *a, cl_matmul_result *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (!cuda_impl(v)) {
        snprintf(err, CL_ERR_LEN, "the CUDA backend has no matmul variant %d", v);
        return -1;
    }
    if (a->m < 1 || a->n < 1 || a->k < 1 || a->reps < 0 || a->reps > CL_MAX_REPS || a->warmup < 0) {
        snprintf(err, CL_ERR_LEN, "invalid matmul arguments (m=%d n=%d k=%d reps=%d)", a->m, a->n,
                 a->k, a->reps);
        return -1;
    }
    const mm_gpu_impl *impl = cuda_impl(v);
    bool student = v == CL_VARIANT_STUDENT;
    if (student && !a->student) {
        snprintf(err, CL_ERR_LEN, "a student variant without its kernel");
        return -1;
    }
    /* a student's kernel: its contract's flags (CL_MATMUL_BT: %%kernel --bt, B passed as Bᵀ) */
    unsigned flags = student ? a->student->flags & CL_MATMUL_BT : cl_matmul_variants[v].flags;
    snprintf(out->config, sizeof out->config, "%s", student ? cl_matmul_student.launch : cl_matmul_variants[v].launch);
    snprintf(out->precision, sizeof out->precision, "%s", cl_matmul_flags_precision(flags));
    mm_problem p = { a->m, a->n, a->k, a->tile, NULL, NULL, NULL, a->student, NULL };
    if (((flags & CL_MATMUL_SM80) && needs_sm80(&cl_matmul_variants[v], err)) ||
        (student && cl_cuda_student_func(a->student, &p.student_func, err)) || impl->prepare(&p, out, err))
        return -1;

    mm_buffers d;
    memset(&d, 0, sizeof d);
    bool bt = (flags & CL_MATMUL_BT) != 0;
    int rc = setup(a, impl->scratch ? impl->scratch(&p) : 0, bt, flags, v == CL_MATMUL_V_CUBLAS, &d, err);
    if (rc == 0) {
        p.a = d.a, p.b = d.b, p.c = d.c, p.scratch = d.scratch;
        if (student)
            cl_cuda_set_limit(a->student->limit_ms, a->student->name);
        rc = timed(impl, &p, a, bt, &d, out, err);
        cl_cuda_set_limit(0, NULL);
    }
    if (cl_cuda_abandoned())
        return -1;                  /* the kernel still runs: nothing else may touch the device */
    if (rc == 0 && student)
        rc = cl_cuda_guard_check(a->student, d.c_base, (size_t)a->m * a->n * sizeof(float), "C", err);
    cudaError_t e;
    if (rc == 0 && a->c &&
        (e = cudaMemcpy(a->c, d.c, (size_t)a->m * a->n * sizeof(float), cudaMemcpyDeviceToHost)) != cudaSuccess)
        rc = cl_cuda_fail(err, "copying C to the host", e);
    release(&d);
    return rc;
}

extern "C" {
extern const cl_matmul_ops cl_cuda_matmul_ops;
const cl_matmul_ops cl_cuda_matmul_ops = { cuda_matmul_has, cuda_matmul_run, true };
}
