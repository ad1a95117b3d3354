/* matmul.c — the CPU backend's %matmul: its variant table, the host thread
 * pool every analogue uses, and the run function that generates the inputs,
 * times each variant with the host clock and hands C back.
 *
 * `cpu` (the lecture's MatrixMulOnHost) is in this table only: the magic runs
 * it here whichever backend is selected, since it is host code by definition.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "matmul_cpu.h"
#include "cudalab/backend.h"

#define MAX_THREADS 64

/* ---- host threads ---- */

typedef struct par_slot {
    long long count;
    int stride, first;
    void (*fn)(long long i, void *arg);
    void *arg;
} par_slot;

static void *par_main(void *arg)
{
    const par_slot *s = arg;
    for (long long i = s->first; i < s->count; i += s->stride)
        s->fn(i, s->arg);
    return NULL;
}

int cl_matmul_parallel(long long count, int threads, void (*fn)(long long i, void *arg), void *arg)
{
    if (threads <= 0)
        threads = cpu_mm_threads();
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (count < threads)
        threads = count < 1 ? 1 : (int)count;
    pthread_t tid[MAX_THREADS];
    par_slot slot[MAX_THREADS];
    bool started[MAX_THREADS];
    for (int t = 0; t < threads; t++) {
        slot[t] = (par_slot){ count, threads, t, fn, arg };
        started[t] = t > 0 && pthread_create(&tid[t], NULL, par_main, &slot[t]) == 0;
    }
    par_main(&slot[0]);
    /* a thread that could not start has its share run here: slower, never wrong */
    for (int t = 1; t < threads; t++) {
        if (started[t])
            pthread_join(tid[t], NULL);
        else
            par_main(&slot[t]);
    }
    return threads;
}

/* ---- the variant table ---- */

static const cl_matmul_variant cpu_variants[] = {
    {"cpu", "one host thread, triple loop",
     "the lecture's MatrixMulOnHost: a row of A times a column of B for each element, "
     "accumulated in double", CL_MATMUL_HOST | CL_MATMUL_FP64, &cpu_mm_host},
    {"naive", "16×16 blocks of C dealt to host threads, one dot product per element",
     "one thread per element of C, each reading a row of A and a column of B from memory",
     0, &cpu_mm_naive},
    {"tiled", "TILE×TILE blocks dealt to host threads; tiles of A and B copied to local arrays",
     "the shared-memory tiling of the lecture: each tile of A and B is read once per block "
     "and reused TILE times", CL_MATMUL_USES_TILE, &cpu_mm_tiled},
    {"fast", "128×128 blocks dealt to host threads, k in slices of 8, a local accumulator array",
     "register blocking: large block tiles and many outputs per thread cut memory traffic "
     "far below the tiled kernel's", 0, &cpu_mm_fast},
    {"fast64", "64×64 blocks dealt to host threads, k in slices of 8, a local accumulator array",
     "the fast kernel with smaller block tiles, for more blocks on small matrices",
     0, &cpu_mm_fast64},
    {"cublas", "CPU reference product (double accumulation) standing in for cuBLAS",
     "the library reference; on the CPU backend the reference product stands in",
     CL_MATMUL_LIBRARY | CL_MATMUL_FP64, &cpu_mm_reference},
    {"cublas-tf32", "CPU reference product (double accumulation) standing in for cuBLAS TF32",
     "the library with TF32 tensor cores; on the CPU backend the reference product stands in",
     CL_MATMUL_LIBRARY | CL_MATMUL_FP64, &cpu_mm_reference},
    {NULL, NULL, NULL, 0, NULL},
};

/* ---- run ---- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cpu_matmul_run(const char *name, const cl_matmul_args *a, cl_matmul_result *out, char *err)
{
    memset(out, 0, sizeof *out);
    const cl_matmul_variant *v = cl_matmul_find(cpu_variants, name);
    if (!v) {
        snprintf(err, CL_ERR_LEN, "the CPU backend has no matmul variant '%s'", name);
        return -1;
    }
    if (a->m < 1 || a->n < 1 || a->k < 1 || a->reps < 1 || a->reps > CL_MAX_REPS || a->warmup < 0 ||
        ((v->flags & CL_MATMUL_USES_TILE) && (a->tile < 1 || a->tile > 32))) {
        snprintf(err, CL_ERR_LEN, "invalid matmul arguments (m=%d n=%d k=%d tile=%d reps=%d)",
                 a->m, a->n, a->k, a->tile, a->reps);
        return -1;
    }
    size_t na = (size_t)a->m * a->k, nb = (size_t)a->k * a->n, nc = (size_t)a->m * a->n;
    float *buf = malloc((na + nb + (a->c ? 0 : nc)) * sizeof *buf);
    if (!buf) {
        snprintf(err, CL_ERR_LEN, "out of host memory for A, B and C (%.1f MiB)",
                 (double)(na + nb + nc) * 4.0 / 1048576.0);
        return -1;
    }
    float *c = a->c ? a->c : buf + na + nb;
    cl_matmul_fill(buf, buf + na, a->m, a->n, a->k, a->seed);
    for (size_t i = 0; i < nc; i++)
        c[i] = NAN;                 /* an element no run writes fails the check */

    const cpu_mm_impl *impl = v->impl;
    cpu_mm_problem p = { buf, buf + na, c, a->m, a->n, a->k, a->tile,
                         (v->flags & CL_MATMUL_HOST) ? 1 : cpu_mm_threads() };
    impl->configure(&p, out);
    for (int w = 0; w < a->warmup; w++)
        impl->run(&p);
    for (int r = 0; r < a->reps; r++) {
        double t0 = now_ms();
        impl->run(&p);
        out->times.ms[r] = (float)(now_ms() - t0);
    }
    out->times.reps = a->reps;
    free(buf);
    return 0;
}

const cl_matmul_ops cl_cpu_matmul_ops = {
    .variants = cpu_variants,
    .run = cpu_matmul_run,
};
