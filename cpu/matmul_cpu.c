/* matmul.c — the CPU backend's %matmul: its variant table and the run
 * function that generates the inputs, times each variant with the host clock
 * (cpu/common) and hands C back.
 *
 * `cpu` (the lecture's MatrixMulOnHost) is in this table only: the magic runs
 * it here whichever backend is selected, since it is host code by definition.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu_common.h"
#include "matmul_cpu.h"
#include "cudalab/backend.h"

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
                         (v->flags & CL_MATMUL_HOST) ? 1 : cl_cpu_threads() };
    impl->configure(&p, out);
    for (int w = 0; w < a->warmup; w++)
        impl->run(&p);
    for (int r = 0; r < a->reps; r++) {
        double t0 = cl_now_ms();
        impl->run(&p);
        out->times.ms[r] = (float)(cl_now_ms() - t0);
    }
    out->times.reps = a->reps;
    free(buf);
    return 0;
}

const cl_matmul_ops cl_cpu_matmul_ops = {
    .variants = cpu_variants,
    .run = cpu_matmul_run,
};
