/* matmul_check.c — the host side of every %matmul check: regenerating A and B
 * from the seed, and comparing a C from any backend against the product.
 *
 * Up to CL_MATMUL_FULL_CHECK_MAX multiply-adds the whole product is computed
 * in double. Beyond that, Freivalds' test: for three random vectors r, C·r is
 * compared with A·(B·r), both in double, in O(mn + kn + mk) instead of O(mnk).
 * Errors are measured against the scale of each dot product,
 * sum_k |a_ik·b_kj|, not against |c_ij|, which can be close to zero by
 * cancellation: float32 accumulation gives errors of about 1e-7 of that scale,
 * while a wrong tile or a missing phase gives 1/k or more.
 *
 * A check is part of every cell's wall time: the three vectors go through A,
 * B and C in one pass each, and the last A and B regenerated are kept for the
 * next check of the same problem (a student reruns one size, a sweep checks
 * every variant of it) up to CHECK_KEEP_BYTES.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu_common.h"
#include "cudalab/backend.h"
#include "cudalab/matmul.h"

#define FREIVALDS_VECTORS 3
/* A and B regenerated are kept between checks up to this size (both: 2048² at FP32): the worker
 * holds no more than that for a faster next cell. */
#define CHECK_KEEP_BYTES ((size_t)32 << 20)
/* Freivalds' vectors come from their own part of the seeded stream. */
#define FREIVALDS_STREAM (3ull << 62)

/* ---- inputs ---- */

typedef struct fill_job {
    float *a, *b;
    long long m, n, k;
    uint64_t seed;
    bool transposed;                /* b is Bᵀ */
} fill_job;

/* One row of A and one row of B (or of Bᵀ) per index, so both fill in one pass. */
static void fill_row(long long i, void *arg)
{
    const fill_job *f = arg;
    if (i < f->m)
        for (long long p = 0; p < f->k; p++)
            f->a[i * f->k + p] = cl_matmul_a(f->seed, (uint64_t)(i * f->k + p));
    if (!f->transposed && i < f->k)
        for (long long j = 0; j < f->n; j++)
            f->b[i * f->n + j] = cl_matmul_b(f->seed, (uint64_t)(i * f->n + j));
    if (f->transposed && i < f->n)
        for (long long p = 0; p < f->k; p++)
            f->b[i * f->k + p] = cl_matmul_b(f->seed, (uint64_t)(p * f->n + i));
}

void cl_matmul_fill(float *a, float *b, int m, int n, int k, uint64_t seed, bool transposed)
{
    fill_job f = { a, b, m, n, k, seed, transposed };
    int rows = m > k ? m : k;
    cl_parallel_for(transposed && n > rows ? n : rows, 0, fill_row, &f);
}

/* ---- formats and tolerances ---- */

#define FORMAT_NAME_(id, name, bits) name,
#define FORMAT_BITS_(id, name, bits) bits,
static const char *const format_names[CL_MATMUL_NFORMATS] = { CL_MATMUL_FORMATS(FORMAT_NAME_) };
static const int format_bits[CL_MATMUL_NFORMATS] = { CL_MATMUL_FORMATS(FORMAT_BITS_) };

cl_matmul_format cl_matmul_format_of(const char *precision)
{
    for (int f = 0; f < CL_MATMUL_NFORMATS; f++)
        if (precision && strcmp(precision, format_names[f]) == 0)
            return (cl_matmul_format)f;
    return CL_MATMUL_FMT_FP32;
}

/* Rounding an input to a format with a p-bit significand changes it by at most
 * u = 2^-p of itself (2u where it is truncated, as TF32 tensor cores do with
 * FP32 operands), so each product a·b moves by at most about 4u·|a·b|, and the
 * dot product by at most 4u·Σ|a·b|: measured against that scale, the error of
 * the rounded inputs does not grow with k (random signs make it shrink, as
 * u/√k). What grows with k is the FP32 accumulation, about √k·2^-24 (k·2^-24
 * at worst, 2.4e-4 at k = 4096; tensor cores add with truncation), small
 * against u for these formats. So the tolerance is about 10u, the same at any
 * k: 5e-3 for TF32 and FP16 (p = 11), as cuBLAS TF32 has always been checked,
 * and 4e-2 for BF16 (p = 8). (The CPU analogues measure u/6 to u/3 for k = 64 … 256.) */
double cl_matmul_tolerance(cl_matmul_format f, bool full)
{
    if ((int)f <= CL_MATMUL_FMT_FP32 || (int)f >= CL_MATMUL_NFORMATS)
        return full ? CL_MATMUL_TOL_FP32 : CL_MATMUL_TOL_FP32_FREI;
    return ldexp(CL_MATMUL_TOL_TF32, 11 - format_bits[f]);
}

/* ---- comparing ---- */

typedef struct verify_job {
    const float *a, *b, *c;
    long long m, n, k;
    double *row_rel, *row_abs;      /* per row of C: worst relative and absolute error */
    long long *row_col;             /* and the column where the relative one was seen */
    /* Freivalds, FREIVALDS_VECTORS vectors at once, each array vector-major */
    const double *r;                /* the random vectors (n each) */
    double *br, *babs;              /* B·r and |B|·|r| (k each) */
} verify_job;

/* Records err/scale for one element; a NaN or infinity in C wins over any number. */
static void track(double got, double want, double scale, long long col, double *rel, double *abs_err,
                  long long *where)
{
    double e = fabs(got - want);
    double r = e / scale;
    if (!isfinite(got) || isnan(r)) {
        *rel = NAN;
        *abs_err = NAN;
        *where = col;
        return;
    }
    if (isnan(*rel))
        return;
    if (r > *rel) {
        *rel = r;
        *where = col;
    }
    if (e > *abs_err)
        *abs_err = e;
}

/* Full product, one row of C per call: accumulates row i of A·B into s and
 * row i of |A|·|B| into t, walking rows of B so that memory is read in order. */
static void full_row(long long i, void *arg)
{
    const verify_job *v = arg;
    double small[512];
    double *s = 2 * v->n <= 512 ? small : malloc(2 * (size_t)v->n * sizeof *s);
    if (!s) {
        v->row_rel[i] = NAN;        /* reported as a failed check, never as a pass */
        v->row_abs[i] = NAN;
        v->row_col[i] = -1;
        return;
    }
    double *t = s + v->n;
    memset(s, 0, 2 * (size_t)v->n * sizeof *s);
    for (long long p = 0; p < v->k; p++) {
        double aip = v->a[i * v->k + p];
        const float *brow = v->b + p * v->n;
        for (long long j = 0; j < v->n; j++) {
            s[j] += aip * brow[j];
            t[j] += fabs(aip * brow[j]);
        }
    }
    double rel = 0, abs_err = 0;
    long long where = -1;
    for (long long j = 0; j < v->n; j++)
        track(v->c[i * v->n + j], s[j], t[j], j, &rel, &abs_err, &where);
    v->row_rel[i] = rel;
    v->row_abs[i] = abs_err;
    v->row_col[i] = where;
    if (s != small)
        free(s);
}

/* (B·r)_p and (|B|·|r|)_p for one row p of B, for every vector. */
static void freivalds_br(long long p, void *arg)
{
    const verify_job *v = arg;
    double s[FREIVALDS_VECTORS] = {0}, t[FREIVALDS_VECTORS] = {0};
    const float *brow = v->b + p * v->n;
    for (long long j = 0; j < v->n; j++)
        for (int q = 0; q < FREIVALDS_VECTORS; q++) {
            double x = brow[j] * v->r[q * v->n + j];
            s[q] += x;
            t[q] += fabs(x);
        }
    for (int q = 0; q < FREIVALDS_VECTORS; q++) {
        v->br[q * v->k + p] = s[q];
        v->babs[q * v->k + p] = t[q];
    }
}

/* Row i: (C·r)_i against (A·(B·r))_i, scaled by (|A|·|B|·|r|)_i, the worst over the vectors. */
static void freivalds_row(long long i, void *arg)
{
    const verify_job *v = arg;
    double cr[FREIVALDS_VECTORS] = {0}, abr[FREIVALDS_VECTORS] = {0}, scale[FREIVALDS_VECTORS] = {0};
    for (long long j = 0; j < v->n; j++)
        for (int q = 0; q < FREIVALDS_VECTORS; q++)
            cr[q] += v->c[i * v->n + j] * v->r[q * v->n + j];
    for (long long p = 0; p < v->k; p++)
        for (int q = 0; q < FREIVALDS_VECTORS; q++) {
            abr[q] += v->a[i * v->k + p] * v->br[q * v->k + p];
            scale[q] += fabs(v->a[i * v->k + p]) * v->babs[q * v->k + p];
        }
    double rel = 0, abs_err = 0;
    long long where = -1;
    for (int q = 0; q < FREIVALDS_VECTORS; q++)
        track(cr[q], abr[q], scale[q], -1, &rel, &abs_err, &where);
    v->row_rel[i] = rel;
    v->row_abs[i] = abs_err;
    v->row_col[i] = where;
}

/* A NaN anywhere (C not finite, or a row that could not be checked) makes the
 * whole check NaN, which never passes; the first such row is the one reported. */
static void reduce_rows(const verify_job *v, double tol, cl_matmul_check *out)
{
    bool nan_seen = false;
    out->max_rel_err = 0;
    out->max_abs_err = 0;
    out->worst_row = 0;
    out->worst_col = v->row_col[0];
    for (long long i = 0; i < v->m && !nan_seen; i++) {
        double r = v->row_rel[i];
        if (isnan(r) || r > out->max_rel_err) {
            nan_seen = isnan(r);
            out->max_rel_err = r;
            out->worst_row = i;
            out->worst_col = v->row_col[i];
        }
        if (v->row_abs[i] > out->max_abs_err)
            out->max_abs_err = v->row_abs[i];
    }
    out->wrong_rows = 0;
    for (long long i = 0; i < v->m; i++)
        out->wrong_rows += !(v->row_rel[i] <= tol);
    if (nan_seen)
        out->max_abs_err = NAN;
}

/* The first element of C (row-major) outside the tolerance: what a student
 * reads first ("C[3][64] = 12.0, expected 11.5"), and how many are. Rows are
 * recomputed one by one, serially: only after a full check failed, so the
 * product is small. */
static void first_wrong(const verify_job *v, double tol, cl_matmul_check *out)
{
    out->first_row = out->first_col = -1;
    double *s = malloc(2 * (size_t)v->n * sizeof *s);
    if (!s)
        return;
    double *t = s + v->n;
    out->wrong = 0;
    for (long long i = 0; i < v->m; i++) {
        memset(s, 0, 2 * (size_t)v->n * sizeof *s);
        for (long long p = 0; p < v->k; p++)
            for (long long j = 0; j < v->n; j++) {
                double x = (double)v->a[i * v->k + p] * v->b[p * v->n + j];
                s[j] += x;
                t[j] += fabs(x);
            }
        for (long long j = 0; j < v->n; j++) {
            double got = v->c[i * v->n + j];
            if ((!isfinite(got) || !(fabs(got - s[j]) / t[j] <= tol)) && out->wrong++ == 0) {
                out->first_row = i, out->first_col = j;
                out->first_value = got, out->first_expected = s[j];
            }
        }
    }
    free(s);
}

static int freivalds(verify_job *v, uint64_t seed, char *err)
{
    size_t q = FREIVALDS_VECTORS;
    double *vec = malloc(q * ((size_t)v->n + 2 * (size_t)v->k) * sizeof *vec);
    if (!vec) {
        snprintf(err, CL_ERR_LEN, "out of host memory for Freivalds' vectors");
        return -1;
    }
    v->r = vec;
    v->br = vec + q * v->n;
    v->babs = v->br + q * v->k;
    for (uint64_t j = 0; j < q * (uint64_t)v->n; j++)     /* vector t's j: draw t·n + j, as one at a time */
        vec[j] = cl_uniform(seed, FREIVALDS_STREAM + j);
    cl_parallel_for(v->k, 0, freivalds_br, v);
    cl_parallel_for(v->m, 0, freivalds_row, v);
    free(vec);
    return 0;
}

/* The last A and B regenerated (B after A) and their problem, while they fit CHECK_KEEP_BYTES. */
static struct {
    float *a;
    int m, n, k;
    uint64_t seed;
} kept;

/* A and B of the problem (row-major, B after A), regenerated from the seed or kept from the last
 * check of the same problem; NULL when out of memory. Release with inputs_done. */
static float *inputs(int m, int n, int k, uint64_t seed)
{
    if (kept.a && kept.m == m && kept.n == n && kept.k == k && kept.seed == seed)
        return kept.a;
    free(kept.a);
    kept.a = NULL;
    float *a = malloc(((size_t)m * k + (size_t)k * n) * sizeof *a);
    if (a)
        cl_matmul_fill(a, a + (size_t)m * k, m, n, k, seed, false);
    return a;
}

static void inputs_done(float *a, int m, int n, int k, uint64_t seed)
{
    if (a == kept.a)
        return;
    if (((size_t)m * k + (size_t)k * n) * sizeof *a > CHECK_KEEP_BYTES) {
        free(a);
        return;
    }
    kept.a = a;
    kept.m = m, kept.n = n, kept.k = k, kept.seed = seed;
}

int cl_matmul_verify(int m, int n, int k, uint64_t seed, const float *c, cl_matmul_format fmt,
                     cl_matmul_check *out, char *err)
{
    memset(out, 0, sizeof *out);
    bool full = (double)m * n * k <= CL_MATMUL_FULL_CHECK_MAX;
    float *a = inputs(m, n, k, seed);
    double *rows = malloc((size_t)m * 2 * sizeof *rows);
    long long *cols = malloc((size_t)m * sizeof *cols);
    if (!a || !rows || !cols) {
        if (a)
            inputs_done(a, m, n, k, seed);
        free(rows);
        free(cols);
        snprintf(err, CL_ERR_LEN, "out of host memory regenerating A and B for the check "
                 "(%.1f MiB)", ((double)m * k + (double)k * n) * 4.0 / 1048576.0);
        return -1;
    }
    float *b = a + (size_t)m * k;
    verify_job v = { .a = a, .b = b, .c = c, .m = m, .n = n, .k = k,
                     .row_rel = rows, .row_abs = rows + m, .row_col = cols };
    int rc = 0;
    if (full)
        cl_parallel_for(m, 0, full_row, &v);
    else
        rc = freivalds(&v, seed, err);
    if (rc == 0) {
        out->tol = cl_matmul_tolerance(fmt, full);
        reduce_rows(&v, out->tol, out);
        out->method = full ? "full fp64 product" : "freivalds x3";
        out->wrong = out->wrong_rows;
        out->passed = out->max_rel_err <= out->tol;     /* false for NaN */
        out->first_row = out->first_col = -1;
        if (full && !out->passed)
            first_wrong(&v, out->tol, out);
    }
    inputs_done(a, m, n, k, seed);
    free(rows);
    free(cols);
    return rc;
}
