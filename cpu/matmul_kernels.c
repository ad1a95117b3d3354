/* matmul_kernels.c — the CPU analogues of the %matmul kernels.
 *
 * Each GPU variant keeps its structure here, with host threads standing in
 * for blocks (dealt round-robin, as the GPU deals blocks to SMs) and plain
 * loops standing in for the threads of a block:
 *   cpu      the lecture's MatrixMulOnHost, one thread, double accumulation;
 *   naive    16×16 blocks, one dot product per element of C (naive-bt: with
 *            B read from its transposed copy);
 *   tiled    TILE×TILE blocks; each phase copies a tile of A and of B into
 *            local arrays (the shared-memory analogue), then accumulates
 *            (tiled-bt: B's tile copied, transposed, from rows of Bᵀ);
 *   reg1d … async, wmma-*: block tiles with an accumulator array, in
 *            matmul_blocked.c;
 *   cublas   the distribution's BLAS (OpenBLAS) in FP32, loaded at run time;
 *            without one, the reference product (double accumulation);
 *   wgmma-*  128×256 blocks, slices of k whose elements are rounded to
 *            TF32, FP16 or BF16 as they are copied (what the tensor cores
 *            multiply), products and sums in float (matmul_blocked.c).
 * float accumulation everywhere except cpu and the reference, as on the GPU.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu_common.h"
#include "matmul_cpu.h"

#define NAIVE_BLOCK 16
#define MAX_TILE CL_MATMUL_TILE_MAX

/* ---- cpu: MatrixMulOnHost ---- */

static void host_configure(const cpu_mm_problem *p, cl_matmul_result *out)
{
    out->launch = cl_launch_2d(1, 1, 1, 1, 0, 1);
    /* no traffic model: the lecture's counts a GPU thread's loads from global
     * memory, and the host loop has neither (its row and column come through
     * the CPU's caches); a CGMA of 1 would claim a GPU kernel's bound */
    out->global_loads = 0;
    snprintf(out->impl, sizeof out->impl, "host triple loop, 1 thread, double accumulation");
}

/* show-source: matmul cpu */
static void host_run(const cpu_mm_problem *p)
{
    for (int i = 0; i < p->m; i++)
        for (int j = 0; j < p->n; j++) {
            double sum = 0;
            for (int q = 0; q < p->k; q++) {
                double a = p->a[(size_t)i * p->k + q];
                double b = p->b[(size_t)q * p->n + j];
                sum += a * b;
            }
            p->c[(size_t)i * p->n + j] = (float)sum;
        }
}
/* show-source: end */

const cpu_mm_impl cpu_mm_host = { "one host thread, triple loop", host_configure, host_run, NULL };

/* ---- naive: one dot product per element, 16×16 blocks ---- */

/* A block's threads step through k together, one element of C each: the loop
 * over a row's 16 "threads" is innermost, so it runs as vector lanes, and
 * every element still sums its products in the order q = 0, 1, 2, ... */
CL_HOT static void naive_block(long long blk, void *arg)
{
    const cpu_mm_problem *p = arg;
    int gx = cpu_mm_cdiv(p->n, NAIVE_BLOCK);
    int row0 = (int)(blk / gx) * NAIVE_BLOCK, col0 = (int)(blk % gx) * NAIVE_BLOCK;
    int width = p->n - col0 < NAIVE_BLOCK ? p->n - col0 : NAIVE_BLOCK;     /* threads inside C */
    for (int ty = 0; ty < NAIVE_BLOCK && row0 + ty < p->m; ty++) {
        const float *arow = p->a + (size_t)(row0 + ty) * p->k, *b = p->b + col0;
        float s[NAIVE_BLOCK] = { 0 };
        if (width == NAIVE_BLOCK)
            for (int q = 0; q < p->k; q++)
                for (int tx = 0; tx < NAIVE_BLOCK; tx++)
                    s[tx] += arow[q] * b[(size_t)q * p->n + tx];
        else
            for (int q = 0; q < p->k; q++)
                for (int tx = 0; tx < width; tx++)
                    s[tx] += arow[q] * b[(size_t)q * p->n + tx];
        memcpy(p->c + (size_t)(row0 + ty) * p->n + col0, s, (size_t)width * sizeof *s);
    }
}

static void naive_configure(const cpu_mm_problem *p, cl_matmul_result *out)
{
    int gx = cpu_mm_cdiv(p->n, NAIVE_BLOCK), gy = cpu_mm_cdiv(p->m, NAIVE_BLOCK);
    out->launch = cl_launch_2d(gx, gy, NAIVE_BLOCK, NAIVE_BLOCK, 0, 1);
    out->global_loads = cl_matmul_loads_naive(p->m, p->n, p->k);
    snprintf(out->impl, sizeof out->impl, "host: %d threads over %lld blocks of 16×16",
             cpu_mm_threads_for(p, (long long)gx * gy), (long long)gx * gy);
}

static void naive_run(const cpu_mm_problem *p)
{
    long long blocks = (long long)cpu_mm_cdiv(p->n, NAIVE_BLOCK) * cpu_mm_cdiv(p->m, NAIVE_BLOCK);
    cl_parallel_for(blocks, p->threads, naive_block, (void *)p);
}

const cpu_mm_impl cpu_mm_naive = { "16×16 blocks of C dealt to host threads, one dot product per element",
                                    naive_configure, naive_run, NULL };

/* naive-bt: the same blocks, the column of B each "thread" reads now a row of
 * Bᵀ, k floats from its neighbour's: the GPU's uncoalesced walk. Each element
 * still sums its products in the order q = 0, 1, 2, ... */
CL_HOT static void naive_bt_block(long long blk, void *arg)
{
    const cpu_mm_problem *p = arg;
    int gx = cpu_mm_cdiv(p->n, NAIVE_BLOCK);
    int row0 = (int)(blk / gx) * NAIVE_BLOCK, col0 = (int)(blk % gx) * NAIVE_BLOCK;
    int width = p->n - col0 < NAIVE_BLOCK ? p->n - col0 : NAIVE_BLOCK;     /* threads inside C */
    const float *bt = p->b + (size_t)col0 * p->k;
    for (int ty = 0; ty < NAIVE_BLOCK && row0 + ty < p->m; ty++) {
        const float *arow = p->a + (size_t)(row0 + ty) * p->k;
        float s[NAIVE_BLOCK] = { 0 };
        for (int q = 0; q < p->k; q++)
            for (int tx = 0; tx < width; tx++)
                s[tx] += arow[q] * bt[(size_t)tx * p->k + q];
        memcpy(p->c + (size_t)(row0 + ty) * p->n + col0, s, (size_t)width * sizeof *s);
    }
}

static void naive_bt_run(const cpu_mm_problem *p)
{
    long long blocks = (long long)cpu_mm_cdiv(p->n, NAIVE_BLOCK) * cpu_mm_cdiv(p->m, NAIVE_BLOCK);
    cl_parallel_for(blocks, p->threads, naive_bt_block, (void *)p);
}

const cpu_mm_impl cpu_mm_naive_bt = { "16×16 blocks of C dealt to host threads, one dot product per element, B read "
                                       "from Bᵀ", naive_configure, naive_bt_run, NULL };

/* ---- tiled: TILE×TILE tiles of A and B in local arrays ---- */

/* One phase's products: acc[ty][tx] += as[ty][i] · bs[i][tx] for i in order.
 * For the usual tiles a row of acc is held in 8-lane vectors (GCC/Clang vector
 * extensions: AVX registers in the AVX2 clone, pairs of SSE ones otherwise)
 * across the loop over i; each lane is one "thread" (ty, tx) doing its own
 * multiply and add, so the sums are the same bits as the scalar loop's. */
typedef float v8f __attribute__((vector_size(32)));

static inline void tile_rows(int t, float (*acc)[MAX_TILE], float (*as)[MAX_TILE], float (*bs)[MAX_TILE])
{
    for (int ty = 0; ty < t; ty++) {
        v8f row[MAX_TILE / 8];
        memcpy(row, acc[ty], (size_t)t * sizeof(float));
        for (int i = 0; i < t; i++) {
            v8f a = { as[ty][i], as[ty][i], as[ty][i], as[ty][i], as[ty][i], as[ty][i], as[ty][i], as[ty][i] };
            for (int v = 0; v < t / 8; v++) {
                v8f b;
                memcpy(&b, &bs[i][8 * v], sizeof b);
                row[v] += a * b;
            }
        }
        memcpy(acc[ty], row, (size_t)t * sizeof(float));
    }
}

/* Tiles narrower than a vector (2 and 4): the plain loops. */
static void tile_product(int t, float (*acc)[MAX_TILE], float (*as)[MAX_TILE], float (*bs)[MAX_TILE])
{
    for (int ty = 0; ty < t; ty++)
        for (int i = 0; i < t; i++)
            for (int tx = 0; tx < t; tx++)
                acc[ty][tx] += as[ty][i] * bs[i][tx];
}

/* tiled-bt's loads: "thread" (ty, tx) reads element tx of row ty of the Bᵀ
 * tile (consecutive addresses for consecutive tx) and stores it transposed. */
static void tile_of_bt(const cpu_mm_problem *p, int ph, int col0, float (*bs)[MAX_TILE])
{
    const int t = p->tile;
    for (int ty = 0; ty < t; ty++)
        for (int tx = 0; tx < t; tx++) {
            int btrow = col0 + ty, kk = ph * t + tx;
            bs[tx][ty] = btrow < p->n && kk < p->k ? p->b[(size_t)btrow * p->k + kk] : 0.0f;
        }
}

typedef struct tiled_job {
    const cpu_mm_problem *p;
    bool bt;                        /* B's tiles come from Bᵀ (tiled-bt) */
} tiled_job;

CL_HOT static void tiled_block(long long blk, void *arg)
{
    const tiled_job *job = arg;
    const cpu_mm_problem *p = job->p;
    const int t = p->tile;
    int gx = cpu_mm_cdiv(p->n, t);
    int row0 = (int)(blk / gx) * t, col0 = (int)(blk % gx) * t;
    float as[MAX_TILE][MAX_TILE], bs[MAX_TILE][MAX_TILE], acc[MAX_TILE][MAX_TILE];
    for (int ty = 0; ty < t; ty++)
        memset(acc[ty], 0, (size_t)t * sizeof(float));      /* the block's own: small tiles make many blocks */
    for (int ph = 0; ph < cpu_mm_cdiv(p->k, t); ph++) {
        /* "threads" (ty, tx) load one element of each tile, zero outside the matrices (a tile wholly
         * inside both is copied row by row: the same elements) */
        if (row0 + t <= p->m && col0 + t <= p->n && (ph + 1) * t <= p->k) {
            for (int ty = 0; ty < t; ty++) {
                memcpy(as[ty], p->a + (size_t)(row0 + ty) * p->k + (size_t)ph * t, (size_t)t * sizeof(float));
                if (!job->bt)
                    memcpy(bs[ty], p->b + (size_t)(ph * t + ty) * p->n + col0, (size_t)t * sizeof(float));
            }
        } else {
            for (int ty = 0; ty < t; ty++)
                for (int tx = 0; tx < t; tx++) {
                    int row = row0 + ty, col = col0 + tx, ka = ph * t + tx, kb = ph * t + ty;
                    as[ty][tx] = row < p->m && ka < p->k ? p->a[(size_t)row * p->k + ka] : 0.0f;
                    if (!job->bt)
                        bs[ty][tx] = kb < p->k && col < p->n ? p->b[(size_t)kb * p->n + col] : 0.0f;
                }
        }
        if (job->bt)
            tile_of_bt(p, ph, col0, bs);
        /* the first __syncthreads: every tile element is in place */
        if (t == 16)                /* each with t a constant, inlined */
            tile_rows(16, acc, as, bs);
        else if (t == 32)
            tile_rows(32, acc, as, bs);
        else if (t == 8)
            tile_rows(8, acc, as, bs);
        else
            tile_product(t, acc, as, bs);
        /* the second __syncthreads: done with the tiles before the next phase */
    }
    for (int ty = 0; ty < t; ty++)
        for (int tx = 0; tx < t; tx++)
            if (row0 + ty < p->m && col0 + tx < p->n)
                p->c[(size_t)(row0 + ty) * p->n + col0 + tx] = acc[ty][tx];
}

static void tiled_configure(const cpu_mm_problem *p, cl_matmul_result *out)
{
    int t = p->tile, gx = cpu_mm_cdiv(p->n, t), gy = cpu_mm_cdiv(p->m, t);
    out->launch = cl_launch_2d(gx, gy, t, t, 2 * (size_t)t * t * sizeof(float), 1);
    out->global_loads = cl_matmul_loads_blocked(p->m, p->n, p->k, t, t);
    snprintf(out->impl, sizeof out->impl, "host: %d threads over %lld blocks of %d×%d",
             cpu_mm_threads_for(p, (long long)gx * gy), (long long)gx * gy, t, t);
}

static void tiled_run_of(const cpu_mm_problem *p, bool bt)
{
    tiled_job job = { p, bt };
    long long blocks = (long long)cpu_mm_cdiv(p->n, p->tile) * cpu_mm_cdiv(p->m, p->tile);
    cl_parallel_for(blocks, p->threads, tiled_block, &job);
}

static void tiled_run(const cpu_mm_problem *p)
{
    tiled_run_of(p, false);
}

/* tiled-bt: the GPU kernel's B tile has a padding column (TILE×(TILE+1)) */
static void tiled_bt_configure(const cpu_mm_problem *p, cl_matmul_result *out)
{
    tiled_configure(p, out);
    out->launch.smem_bytes = ((size_t)p->tile * p->tile + (size_t)p->tile * (p->tile + 1)) * sizeof(float);
}

static void tiled_bt_run(const cpu_mm_problem *p)
{
    tiled_run_of(p, true);
}

const cpu_mm_impl cpu_mm_tiled = { "TILE×TILE blocks dealt to host threads; tiles of A and B copied to local arrays",
                                    tiled_configure, tiled_run, NULL };
const cpu_mm_impl cpu_mm_tiled_bt = { "TILE×TILE blocks dealt to host threads; tiles of A and of Bᵀ (transposed) "
                                      "copied to local arrays", tiled_bt_configure, tiled_bt_run, NULL };

/* ---- the reference where there is no BLAS: double accumulation, one row of C per task ---- */

static void reference_row(long long i, void *arg)
{
    const cpu_mm_problem *p = arg;
    double small[256];
    double *s = p->n <= 256 ? small : malloc((size_t)p->n * sizeof *s);
    if (!s) {
        for (int j = 0; j < p->n; j++)
            p->c[(size_t)i * p->n + j] = NAN;       /* fails the check rather than passing silently */
        return;
    }
    memset(s, 0, (size_t)p->n * sizeof *s);
    for (int q = 0; q < p->k; q++) {
        double a = p->a[(size_t)i * p->k + q];
        const float *brow = p->b + (size_t)q * p->n;
        for (int j = 0; j < p->n; j++)
            s[j] += a * brow[j];
    }
    for (int j = 0; j < p->n; j++)
        p->c[(size_t)i * p->n + j] = (float)s[j];
    if (s != small)
        free(s);
}

static void reference_configure(const cpu_mm_problem *p, cl_matmul_result *out)
{
    out->launch = cl_launch_2d(1, p->m, 1, 1, 0, 1);
    out->global_loads = 0;
    snprintf(out->impl, sizeof out->impl,
             "CPU reference standing in for cuBLAS: %d threads, double accumulation",
             cpu_mm_threads_for(p, p->m));
}

static void reference_run(const cpu_mm_problem *p)
{
    cl_parallel_for(p->m, p->threads, reference_row, (void *)p);
}

/* ---- cublas: the distribution's BLAS, cblas_sgemm in FP32 ----
 * Loaded at run time, so that the binary needs no BLAS to start: OpenBLAS
 * where it is installed (libopenblas0 on Debian/Ubuntu), else whatever
 * libblas.so.3 the system's alternatives point at. Without either, the
 * reference product below stands in, and the run says so. */

enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111 };      /* cblas.h's values */
typedef void cblas_sgemm_fn(int order, int transa, int transb, int m, int n, int k, float alpha, const float *a,
                            int lda, const float *b, int ldb, float beta, float *c, int ldc);

static struct {
    bool tried;
    cblas_sgemm_fn *sgemm;
    char name[96];                  /* "OpenBLAS 0.3.21 …", or the library's file name */
    const char *looked_for;         /* where, for the run that finds none */
} blas;

/* CUDALAB_BLAS names the library instead (a path or a file name), or "none". */
static bool blas_load(int threads)
{
    if (blas.tried)
        return blas.sgemm != NULL;
    blas.tried = true;
    const char *libs[] = { "libopenblas.so.0", "libblas.so.3", NULL };
    const char *chosen = getenv("CUDALAB_BLAS");
    blas.looked_for = "libopenblas.so.0, libblas.so.3";
    if (chosen && *chosen)
        libs[0] = strcmp(chosen, "none") == 0 ? NULL : chosen, libs[1] = NULL, blas.looked_for = "CUDALAB_BLAS";
    for (int i = 0; libs[i] && !blas.sgemm; i++) {
        void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
        if (!h)
            continue;
        *(void **)&blas.sgemm = dlsym(h, "cblas_sgemm");
        if (!blas.sgemm) {
            dlclose(h);
            continue;
        }
        char *(*config)(void);
        void (*set_threads)(int);
        *(void **)&config = dlsym(h, "openblas_get_config");
        *(void **)&set_threads = dlsym(h, "openblas_set_num_threads");
        if (set_threads)
            set_threads(threads);
        /* OpenBLAS's configuration starts with its name and version ("OpenBLAS 0.3.21 DYNAMIC_ARCH …") */
        const char *what = config ? config() : libs[i];
        int words = 0, len = 0;
        while (what[len] && !(what[len] == ' ' && config && ++words == 2))
            len++;
        snprintf(blas.name, sizeof blas.name, "%.*s", len, what);
    }
    return blas.sgemm != NULL;
}

static void blas_configure(const cpu_mm_problem *p, cl_matmul_result *out)
{
    if (!blas_load(p->threads)) {
        reference_configure(p, out);
        snprintf(out->impl, sizeof out->impl, "no BLAS library (%s): the CPU reference product stands in, "
                 "double accumulation", blas.looked_for);
        snprintf(out->config, sizeof out->config, "no BLAS: the CPU reference product (fp64 accumulation) "
                 "standing in for cuBLAS, rows dealt to host threads");
        snprintf(out->precision, sizeof out->precision, "fp64");
        return;
    }
    out->launch = cl_launch_2d(1, 1, 1, 1, 0, 1);
    out->global_loads = 0;
    snprintf(out->impl, sizeof out->impl, "cblas_sgemm of %s, %d threads, FP32", blas.name, p->threads);
    snprintf(out->precision, sizeof out->precision, "fp32");
}

static void blas_run(const cpu_mm_problem *p)
{
    if (!blas.sgemm) {
        reference_run(p);
        return;
    }
    blas.sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, p->m, p->n, p->k, 1.0f, p->a, p->k, p->b, p->n, 0.0f,
               p->c, p->n);
}

/* cuBLAS's rows, FP32 and TF32 (and FP16, BF16 below): the same BLAS call, which a CPU can only make in FP32 */
const cpu_mm_impl cpu_mm_cublas = { "the system's BLAS (cblas_sgemm, FP32) standing in for cuBLAS", blas_configure,
                                    blas_run, NULL };
const cpu_mm_impl cpu_mm_cublas_tf32 = { "the system's BLAS (cblas_sgemm, FP32) standing in for cuBLAS TF32: a CPU "
                                         "has no TF32", blas_configure, blas_run, NULL };
/* and its FP16 and BF16 GemmEx rows: a CPU's BLAS has no half-precision product worth timing */
const cpu_mm_impl cpu_mm_cublas_fp16 = { "the system's BLAS (cblas_sgemm, FP32) standing in for cuBLAS FP16: a CPU "
                                         "has no FP16 tensor cores", blas_configure, blas_run, NULL };
const cpu_mm_impl cpu_mm_cublas_bf16 = { "the system's BLAS (cblas_sgemm, FP32) standing in for cuBLAS BF16: a CPU "
                                         "has no BF16 tensor cores", blas_configure, blas_run, NULL };
