/* histo.cu — the CUDA backend's %histo: buffers, input, the timing loop and
 * the result, behind cl_cuda_histo_ops.
 *
 * One run: the input is generated on the device from (seed, dist), or the
 * user's text is copied host to device (that copy timed with events on its
 * own: h2d_ms). Then warm-up launches and timed ones. Before every launch the
 * L2 is flushed by writing a buffer twice its size, outside the events. The
 * events bracket what computing a histogram takes: zeroing the output and the
 * variant's kernel, or cub's HistogramEven call (which zeroes its own output),
 * with cub's temp storage allocated beforehand. Each launch counts an input
 * of its own, made before the flush (cl_cuda_reps in common.h): generated from
 * a seed of its own, or the text with its letters rotated (a-z and A-Z, by 1
 * to 25: the same counts in other bins, so the same contention); after the
 * timed loop the reps the harness drew are checked, exactly, against cub on
 * their own inputs, then an untimed launch counts the run's input. The
 * histogram is copied back once, from that last launch. The output needs no
 * poison: the timed work zeroes it.
 *
 * A student's kernel (CL_VARIANT_STUDENT) runs through the same loop: same
 * input, same flush and events, all CL_HISTO_MAX_BINS counters zeroed before
 * each launch and all copied back (a count past its bins is a stray write the
 * check names), under its launch limit (cl_cuda_set_limit).
 *
 * The cpu variant is not run here: the magic hands it to the CPU backend.
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cudalab/backend.h"
#include "common.h"
#include "histo_cuda.h"
#include "student_cuda.h"

#define CUB_TEMP_ALLOWANCE (16ull << 20)     /* generous: cub needs kilobytes here, the check's copies of
                                                the histogram (cl_cuda_reps) 2 KiB */

static int sm_count(int *sms, char *err)
{
    int dev = 0;
    cudaError_t rc = cudaGetDevice(&dev);
    if (rc == cudaSuccess)
        rc = cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev);
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "device attributes", rc);
}

static uint64_t cuda_overhead(void)
{
    return cl_cuda_flush_budget() + CUB_TEMP_ALLOWANCE;
}

typedef struct run_state {
    uint8_t *in;
    unsigned *hist;
    void *temp;
    size_t temp_bytes;
    cl_cuda_timing t;
    cl_cuda_reps reps;              /* each launch's input; the drawn reps' histograms */
    int text_turn;                  /* the text's letters are rotated by this much now (0: as given) */
} run_state;

static void run_free(run_state *st)
{
    cudaFree(st->in);
    cudaFree(st->hist);
    cudaFree(st->temp);
    cl_cuda_timing_free(&st->t);
    cl_cuda_reps_free(&st->reps);
}

/* Rotates every letter of p by `by` places, a-z and A-Z each in itself. */
__global__ void histo_rotate_letters(uint8_t *p, unsigned long long n, int by)
{
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        int c = p[i];
        if (c >= 'a' && c <= 'z')
            p[i] = (uint8_t)('a' + (c - 'a' + by) % 26);
        else if (c >= 'A' && c <= 'Z')
            p[i] = (uint8_t)('A' + (c - 'A' + by) % 26);
    }
}

/* The input of seed, before its flush: generated from it, or the text's letters turned to the
 * rotation the seed gives (none for the run's seed). */
static int input_of(const cl_histo_args *a, run_state *st, uint64_t seed, char *err)
{
    cudaError_t rc;
    if (!a->text) {
        if ((rc = histo_generate((uint32_t *)st->in, (a->n + 3) / 4, seed, a->dist, 0)) != cudaSuccess)
            return cl_cuda_fail(err, "input generator", rc);
        return 0;
    }
    int turn = seed == a->seed ? 0 : 1 + (int)(seed % 25);
    int by = (turn - st->text_turn + 26) % 26;
    if (by == 0)
        return 0;
    histo_rotate_letters<<<1024, 256>>>(st->in, (unsigned long long)a->n, by);
    if ((rc = cudaGetLastError()) != cudaSuccess)
        return cl_cuda_fail(err, "rotating the text's letters", rc);
    st->text_turn = turn;
    return 0;
}

/* The input of launch `rep` (cl_cuda_reps_seed). */
static int rep_input(const cl_histo_args *a, run_state *st, int rep, char *err)
{
    return input_of(a, st, cl_cuda_reps_seed(&st->reps, rep), err);
}

/* The check's reference (cl_cuda_reps) on the input of seed: the text copied again first (what
 * a kernel wrote into its input does not count against it), then every counter the run copies
 * back zeroed and cub's histogram in its bins. */
static int reference(const cl_histo_args *a, run_state *st, uint64_t seed, char *err)
{
    cudaError_t rc;
    if (a->text) {
        if ((rc = cudaMemcpy(st->in, a->text, a->n, cudaMemcpyHostToDevice)) != cudaSuccess)
            return cl_cuda_fail(err, "copying the text to the device", rc);
        st->text_turn = 0;
    }
    if (input_of(a, st, seed, err))
        return -1;
    if ((rc = cudaMemsetAsync(st->hist, 0, st->reps.out.count * sizeof(unsigned), 0)) != cudaSuccess ||
        (rc = histo_cub(st->temp, &st->temp_bytes, st->in, a->n, a->mode, a->width, st->hist, 0)) != cudaSuccess)
        return cl_cuda_fail(err, "the check's reference (cub::DeviceHistogram)", rc);
    return 0;
}

/* The input on the device: generated, or the text copied (timed into *h2d_ms). */
static int make_input(const cl_histo_args *a, run_state *st, double *h2d_ms, char *err)
{
    cudaError_t rc;
    if (!a->text) {
        if ((rc = histo_generate((uint32_t *)st->in, (a->n + 3) / 4, a->seed, a->dist, 0)) != cudaSuccess)
            return cl_cuda_fail(err, "input generator", rc);
        return 0;
    }
    float ms = 0;
    if ((rc = cudaEventRecord(st->t.e0, 0)) != cudaSuccess ||
        (rc = cudaMemcpyAsync(st->in, a->text, a->n, cudaMemcpyHostToDevice, 0)) != cudaSuccess ||
        (rc = cudaEventRecord(st->t.e1, 0)) != cudaSuccess ||
        (rc = cudaEventSynchronize(st->t.e1)) != cudaSuccess ||
        (rc = cudaEventElapsedTime(&ms, st->t.e0, st->t.e1)) != cudaSuccess)
        return cl_cuda_fail(err, "copying the text to the device", rc);
    *h2d_ms = ms;
    return 0;
}

/* ---- a student's kernel: its handle and launch ---- */

typedef struct student_plan {
    const void *func;
    dim3 grid, block;
} student_plan;

/* The kernel's launch: its block; its grid where it gives one, else --grid,
 * else SMs x blocks resident per SM (the built-ins' rule). Checked against
 * the device's and the kernel's limits, and described into r->launch. */
static int student_plan_make(const cl_histo_args *a, int sms, student_plan *sp, cl_histo_result *r, char *err)
{
    const cl_student_kernel *k = a->student;
    if (cl_cuda_student_func(k, &sp->func, err))
        return -1;
    sp->block = cl_cuda_student_block(k);
    int resident = 0;
    if (a->grid <= 0 && k->grid[0] <= 0 &&
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, sp->func,
                                                      (int)(sp->block.x * sp->block.y * sp->block.z),
                                                      k->dyn_smem) != cudaSuccess)
        resident = 0;
    (void)cudaGetLastError();           /* a block it cannot run: describe says why, in its terms */
    unsigned rule = a->grid > 0 ? (unsigned)a->grid : (unsigned)sms * (unsigned)(resident > 0 ? resident : 1);
    sp->grid = cl_cuda_student_grid(k, dim3(rule, 1, 1));
    snprintf(r->impl, sizeof r->impl, "your kernel %s (%u x %u), after zeroing the output", k->name,
             sp->grid.x * sp->grid.y * sp->grid.z, sp->block.x * sp->block.y * sp->block.z);
    snprintf(r->config, sizeof r->config, "grid-stride over the input, %s",
             a->grid > 0 || k->grid[0] > 0 ? "the grid given" : "SMs x resident blocks");
    return cl_cuda_student_describe(k, sp->func, sp->grid, sp->block, &r->launch, err);
}

static int student_work(const cl_histo_args *a, const student_plan *sp, run_state *st, char *err)
{
    cudaError_t rc = cudaMemsetAsync(st->hist, 0, CL_HISTO_MAX_BINS * sizeof(unsigned), 0);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "zeroing the histogram", rc);
    const unsigned char *data = st->in;
    long long n = (long long)a->n;
    unsigned int *histo = st->hist;
    void *args[] = { &data, &n, &histo };
    return cl_cuda_student_launch(a->student, sp->func, sp->grid, sp->block, args, err);
}

/* ---- one rep ---- */

/* Whether a built-in variant is a library's call (cub, CL_V_LIBRARY): no kernel of ours, the
 * reference itself. */
static bool library(const cl_histo_args *a)
{
    return a->variant >= 0 && a->variant < CL_HISTO_NVARIANTS && (cl_histo_variants[a->variant].flags & CL_V_LIBRARY);
}

static cudaError_t work(const cl_histo_args *a, const histo_plan *p, run_state *st)
{
    if (library(a))
        return histo_cub(st->temp, &st->temp_bytes, st->in, a->n, a->mode, a->width, st->hist, 0);
    cudaError_t rc = cudaMemsetAsync(st->hist, 0, (size_t)p->nbins * sizeof(unsigned), 0);
    return rc != cudaSuccess ? rc : histo_launch(p, st->in, a->n, st->hist, 0);
}

/* A timed rep's (ms not NULL: timed between the events) or the final launch's (CL_CUDA_REP_FINAL)
 * input of its own, or a warm-up's or counted one's (CL_CUDA_REP_WARMUP) the warm-up's; flush,
 * then one histogram. */
static int one_rep(const cl_histo_args *a, const histo_plan *p, const student_plan *sp, run_state *st, int rep,
                   float *ms, char *err)
{
    cudaError_t rc;
    if ((rep != CL_CUDA_REP_WARMUP && rep_input(a, st, rep, err)) ||
        cl_cuda_flush_l2(&st->t, "L2 flush", err) || (ms && cl_cuda_time_start(&st->t, err)))
        return -1;
    if (a->student) {
        if (student_work(a, sp, st, err))
            return -1;
    } else if ((rc = work(a, p, st)) != cudaSuccess) {
        return cl_cuda_fail(err, library(a) ? "cub::DeviceHistogram" : "kernel launch",
                            rc);
    }
    if (!ms)
        return 0;
    return cl_cuda_time_stop(&st->t, ms, "histogram kernel", err) || cl_cuda_reps_keep(&st->reps, rep, err) ? -1 : 0;
}

/* Warm-up, then the timed reps (a student's kernel under its launch limit). */
static int reps(const cl_histo_args *a, const histo_plan *p, const student_plan *sp, run_state *st,
                cl_histo_result *r, char *err)
{
    if (rep_input(a, st, CL_CUDA_REP_WARMUP, err))
        return -1;
    for (int i = 0; i < a->warmup; i++)
        if (one_rep(a, p, sp, st, CL_CUDA_REP_WARMUP, NULL, err))
            return -1;
    if ((a->warmup > 0 && cl_cuda_synchronize("warm-up runs", err)) ||
        cl_cuda_counted(&st->t, err, [&] { return one_rep(a, p, sp, st, CL_CUDA_REP_WARMUP, NULL, err); }))
        return -1;
    cl_times *tm = &r->times;
    for (; cl_rep_more(a->reps, tm); tm->reps++)
        if (one_rep(a, p, sp, st, tm->reps, &tm->ms[tm->reps], err))
            return -1;
    /* the drawn reps against cub on their own inputs; the histogram: the run's input, untimed */
    return cl_cuda_reps_verify(&st->reps, tm, err, [&](uint64_t seed) { return reference(a, st, seed, err); },
                               [&] { return one_rep(a, p, sp, st, CL_CUDA_REP_FINAL, NULL, err); });
}

static void describe(const cl_histo_args *a, const histo_plan *p, cl_histo_result *r)
{
    cl_launch *l = &r->launch;
    memset(l, 0, sizeof *l);
    snprintf(r->config, sizeof r->config, "%s", cl_histo_variants[a->variant].launch);
    if (library(a)) {
        char ver[32];
        histo_cub_version(ver, sizeof ver);
        snprintf(r->impl, sizeof r->impl, "CUDA: cub::DeviceHistogram::HistogramEven (%s, "
                 "launch chosen by cub)%s", ver,
                 a->mode == CL_HISTO_LETTERS ? " over a byte-to-letter-bin transform iterator" : "");
        l->kernels = 2;
        return;
    }
    l->grid[0] = (int)p->grid, l->grid[1] = l->grid[2] = 1;
    l->block[0] = (int)p->block, l->block[1] = l->block[2] = 1;
    l->smem_bytes = p->smem_dynamic + p->smem_static;
    l->regs_per_thread = p->regs;
    l->kernels = 1;
    snprintf(r->impl, sizeof r->impl, "CUDA: %s (%u x %u), after zeroing the output", p->kernel,
             p->grid, p->block);
}

static int check_args(const cl_histo_args *a, char *err)
{
    bool student = a->variant == CL_VARIANT_STUDENT;
    if (student && !a->student) {
        snprintf(err, CL_ERR_LEN, "a student variant without its kernel");
        return -1;
    }
    if (!student && !library(a) && !hg_gpu_impl_of(a->variant)) {
        snprintf(err, CL_ERR_LEN, "variant %d does not run on the GPU (cpu runs on the host)",
                 a->variant);
        return -1;
    }
    if (a->n < 1 || a->n > CL_HISTO_MAX_SIZE || a->reps < 0 || a->reps > CL_MAX_REPS ||
        a->warmup < 0 || (!student && (a->block < 32 || a->block % 32)) || a->grid < 0) {
        snprintf(err, CL_ERR_LEN, "bad run: %llu bytes, block %d, grid %d, %d reps, %d warm-up",
                 (unsigned long long)a->n, a->block, a->grid, a->reps, a->warmup);
        return -1;
    }
    if (a->mode == CL_HISTO_LETTERS && (a->width < 1 || a->width > 26)) {
        snprintf(err, CL_ERR_LEN, "bin width %d: letter bins are 1 to 26 letters wide", a->width);
        return -1;
    }
    return 0;
}

static int buffers(const cl_histo_args *a, const histo_plan *p, run_state *st, char *err)
{
    cudaError_t rc;
    size_t padded = (a->n + 15) / 16 * 16;       /* whole 16-byte chunks and words */
    if (cl_cuda_alloc((void **)&st->in, padded, "input", err) ||
        cl_cuda_alloc((void **)&st->hist, CL_HISTO_MAX_BINS * sizeof(unsigned), "histogram", err) ||
        cl_cuda_timing_init(&st->t, err))
        return -1;
    /* cub's temp storage: the cub variant's, and the check's reference's for every other */
    if ((rc = histo_cub(NULL, &st->temp_bytes, st->in, a->n, a->mode, a->width, st->hist, 0)) != cudaSuccess)
        return cl_cuda_fail(err, "cub::DeviceHistogram temp storage size", rc);
    return cl_cuda_alloc(&st->temp, st->temp_bytes, "cub temp storage", err);
}

static int cuda_histo_run(const cl_histo_args *a, cl_histo_result *r, char *err)
{
    memset(r, 0, sizeof *r);
    if (check_args(a, err))
        return -1;
    int sms = 0;
    if (sm_count(&sms, err))
        return -1;
    histo_plan p;
    memset(&p, 0, sizeof p);
    p.nbins = cl_histo_nbins(a->mode, a->width);
    student_plan sp;
    memset(&sp, 0, sizeof sp);
    if (a->student ? student_plan_make(a, sms, &sp, r, err)
                   : !library(a) && histo_plan_make(a, sms, &p, err))
        return -1;

    run_state st;
    memset(&st, 0, sizeof st);
    int rc = -1;
    unsigned counts[CL_HISTO_MAX_BINS];
    /* a student's kernel may write past its bins: every counter comes back */
    int copied = a->student ? CL_HISTO_MAX_BINS : p.nbins;
    cudaError_t crc;
    if (buffers(a, &p, &st, err) || make_input(a, &st, &r->times.h2d_ms, err))
        goto done;
    {
        cl_cuda_output o = { st.hist, (size_t)copied, CL_CUDA_U32, 0, "histo", 0 };
        if (cl_cuda_reps_init(&st.reps, a->seed, &o, library(a), err))
            goto done;
    }
    if (a->student)
        cl_cuda_set_limit(a->student->limit_ms, a->student->name);
    rc = reps(a, &p, &sp, &st, r, err);
    cl_cuda_set_limit(0, NULL);
    if (cl_cuda_abandoned())
        return -1;                  /* the kernel still runs: nothing else may touch the device */
    if (rc != 0)
        goto done;
    rc = -1;
    if ((crc = cudaMemcpy(counts, st.hist, (size_t)copied * sizeof(unsigned),
                          cudaMemcpyDeviceToHost)) != cudaSuccess) {
        cl_cuda_fail(err, "copying the histogram back", crc);
        goto done;
    }
    r->nbins = p.nbins;
    for (int b = 0; b < copied; b++)
        r->counts[b] = counts[b];
    if (!a->student)
        describe(a, &p, r);
    rc = 0;
done:
    run_free(&st);
    return rc;
}

extern "C" {
extern const cl_histo_ops cl_cuda_histo_ops;
const cl_histo_ops cl_cuda_histo_ops = {
    cuda_histo_run,
    cuda_overhead,
    true,
};
}
