/* matmul.c — the %matmul magic: C = A·B in float32 on the GPU (or its CPU
 * analogue), from the lecture's naive kernel through shared-memory tiling,
 * register blocking and tensor cores to cuBLAS, each run timed, modelled and
 * checked (with the tolerance of the format its inputs were rounded to).
 *
 * run() validates everything a sweep will need before any point runs (variant
 * names, TILE_WIDTHs, sizes against device memory, host memory and int range),
 * then hands the sweep to sweep_run() (which holds it to the host-work limit,
 * mm_host_work() saying what a point costs); matmul_point()
 * runs one (variant, m, n, k, tile) and appends its run object. The checks
 * themselves live in cpu/matmul_check.c; the limits in matmul_env.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "magic/family_run.h"
#include "magic/check.h"
#include "cudalab/matmul.h"
#include "magic/show_source.h"
#include "magic/sweep.h"
#include "magics/matmul_internal.h"
#include "student/broken.h"
#include "student/run.h"
#include "student/sanitize.h"

const family_spec matmul_family = {
    .magic = "matmul",
    .variants = cl_matmul_variants,
    .nvariants = CL_MATMUL_NVARIANTS,
    .student = &cl_matmul_student,
    .student_bt = &cl_matmul_student_bt,
    .quick = "--m 67 --n 33 --k 129",
    FAMILY_OPS(matmul, cl_matmul_ops),
    .sources = "cuda/matmul*.cu and cpu/matmul*.c",
    .broken = broken_matmul,
};

#define TILE_TEXT_(t) " " #t

static const flag_spec matmul_flags[] = {
    {.name = "size", .type = FLAG_INT, .def = "1024", .imin = 1, .imax = INT64_MAX, .opts = FLAG_LIST,
     .help = "square matrices: m = n = k = N"},
    {.name = "m", .type = FLAG_INT, .imin = 1, .imax = INT64_MAX, .opts = FLAG_LIST,
     .help = "rows of A and C (overrides --size)"},
    {.name = "n", .type = FLAG_INT, .imin = 1, .imax = INT64_MAX, .opts = FLAG_LIST,
     .help = "columns of B and C (overrides --size)"},
    {.name = "k", .type = FLAG_INT, .imin = 1, .imax = INT64_MAX, .opts = FLAG_LIST,
     .help = "columns of A, rows of B (overrides --size)"},
    FAMILY_VARIANT_FLAG(&matmul_family, "tiled"),
    {.name = "tile", .type = FLAG_INT, .def = "16", .imin = CL_MATMUL_TILE_MIN,
     .imax = CL_MATMUL_TILE_MAX, .opts = FLAG_LIST,
     .help = "TILE_WIDTH of the variants that honour it, one of" CL_MATMUL_TILE_LIST(TILE_TEXT_)
             " (your kernels: any, as -D TILE=T with a T×T block)"},
    {.name = "block", .type = FLAG_DIMS, .imin = 1, .imax = 1024, .opts = FLAG_LIST,
     .help = "your kernels only: threads per block (16x16 by default; a list sweeps)"},
    STUDENT_RUN_FLAGS,
    STUDENT_GRID_FLAG,
    {.name = "bandwidth", .type = FLAG_FLOAT, .fmin = 1e-3, .fmax = 1e9,
     .help = "GB/s: the lecture's bound at this memory bandwidth beside each run, bandwidth ÷ 4 bytes × CGMA "
             "GFLOP/s (150 reproduces the G80's: CGMA 1 gives 37.5 GFLOP/s); with --counters also with "
             "the CGMA the DRAM saw"},
    SWEEP_MEASURE_FLAGS("seed of the generated inputs A and B",
                        "timed runs per point",
                        "check C against a double-precision product",
                        "sort the table by GFLOP/s"),
    SHOW_SOURCE_FLAGS,
    {.name = NULL},
};

static const sweep_column matmul_columns[] = {
    {.path = "variant", .header = "variant"},
    {.path = "m", .header = "m"},
    {.path = "n", .header = "n"},
    {.path = "k", .header = "k"},
    {.path = "tile", .header = "tile"},
    {.path = "precision", .header = "precision"},
    {.path = "time_ms.median", .header = "median ms"},
    {.path = "gflops", .header = "GFLOP/s"},
    {.path = "pct_of_peak", .header = "% of peak"},
    {.path = "model.cgma", .header = "CGMA"},
    /* under --counters, the model beside what the DRAM saw: the lecture's global loads (floats, shown
     * as MB) and CGMA, against the bytes read and the FLOPs per float read */
    {.path = "model.global_loads", .header = "model MB", .scale = 1e6 / 4, .only_with = "counters.dram_read_bytes"},
    {.path = "counters.cgma_dram", .header = "CGMA (DRAM)", .only_with = "counters.cgma_dram"},
    /* --bandwidth: the lecture's bound at that bandwidth, from the model's CGMA and the DRAM's */
    {.path = "model.bound_gflops", .header = "bound GFLOP/s", .only_with = "model.bound_gflops"},
    {.path = "counters.bound_gflops", .header = "bound (DRAM)", .only_with = "counters.bound_gflops"},
    {.path = "check.passed", .header = "check"},
    {.path = NULL},
};

/* ---- one point ---- */

/* The lecture's bound: a kernel that does cgma FLOPs per 4-byte load cannot beat bandwidth / 4 × cgma. */
static double bound_gflops(double bandwidth_gbs, double cgma)
{
    return bandwidth_gbs / 4 * cgma;
}

static json_t *model_json(const mm_env *env, const cl_matmul_args *a, const cl_matmul_result *r)
{
    double flops = 2.0 * a->m * a->n * a->k;
    json_t *m = json_pack("{s:o, s:o, s:I}", "global_loads",
                          r->global_loads > 0 ? json_real(r->global_loads) : json_null(), "cgma",
                          r->global_loads > 0 ? json_real(flops / r->global_loads) : json_null(),
                          "smem_per_block", (json_int_t)r->launch.smem_bytes);
    if (env->bandwidth_gbs > 0) {
        json_object_set_new(m, "bandwidth_gbs", json_real(env->bandwidth_gbs));
        json_object_set_new(m, "bound_gflops", r->global_loads > 0
                            ? json_real(bound_gflops(env->bandwidth_gbs, flops / r->global_loads)) : json_null());
    }
    return m;
}

/* The check: the worst relative error against the tolerance; where the full product was checked, every
 * element outside it is counted and the first is named; Freivalds' test counts the rows that fail. */
static json_t *check_json(const cl_matmul_check *c)
{
    json_t *j = check_new(c->passed, c->method, c->tol);
    json_object_set_new(j, "max_rel_err", json_real_or_null(c->max_rel_err));
    json_object_set_new(j, "max_abs_err", json_real_or_null(c->max_abs_err));
    json_object_set_new(j, "nonfinite", json_boolean(isnan(c->max_rel_err)));
    if (c->first_row >= 0) {
        check_wrong(j, (uint64_t)c->wrong, json_pack("{s:I, s:I}", "row", (json_int_t)c->first_row, "col",
                                                     (json_int_t)c->first_col), c->first_value, c->first_expected);
        check_first_wrong(j, "C[%lld][%lld] = %.9g%s, expected %.9g", c->first_row, c->first_col,
                          isnan(c->first_value) ? fabs(c->first_value) : c->first_value,
                          isnan(c->first_value) ? " (never written?)" : "", c->first_expected);
    } else if (!c->passed) {
        check_wrong(j, (uint64_t)(c->wrong > 0 ? c->wrong : 1), json_pack("{s:I}", "row", (json_int_t)c->worst_row),
                    NAN, NAN);
    }
    json_object_set_new(j, "worst", c->worst_col >= 0
                                        ? json_pack("[I,I]", (json_int_t)c->worst_row, (json_int_t)c->worst_col)
                                        : json_pack("[I]", (json_int_t)c->worst_row));
    return j;
}

static json_t *run_json(const mm_env *env, const mm_target *t, const cl_variant *v,
                        const cl_matmul_args *a, const cl_matmul_result *r)
{
    double median = stats_median(&r->times);
    double gflops = median > 0 ? 2.0 * a->m * a->n * a->k / (median * 1e6) : 0;
    double peak = t->is_host ? env->host_peak_gflops : env->peak_gflops;
    json_t *launch = launch_json(&r->launch);
    json_object_set_new(launch, "config", json_string(r->config));
    json_t *run = json_pack("{s:s, s:i, s:i, s:i, s:o, s:s, s:s, s:s}", "variant", v->name, "m", a->m,
                            "n", a->n, "k", a->k, "tile",
                            (v->flags & CL_V_TILE) ? json_integer(a->tile) : json_null(),
                            "backend", t->backend_name, "precision", r->precision, "impl", r->impl);
    json_object_set_new(run, "time_ms", stats_json(&r->times));
    json_object_set_new(run, "gflops", json_real(gflops));
    json_object_set_new(run, "pct_of_peak", peak > 0 ? json_real(100.0 * gflops / peak) : json_null());
    json_object_set_new(run, "launch", launch);
    json_object_set_new(run, "model", model_json(env, a, r));
    return run;
}

/* The CGMA the DRAM saw (--counters): 2·m·n·k FLOPs per float read from device memory, beside the
 * model's per float loaded from global memory; caches make the first the larger. With --bandwidth,
 * the bound that CGMA gives too. */
static void add_cgma_dram(const mm_env *env, json_t *run, const cl_matmul_args *a)
{
    json_t *c = json_object_get(run, "counters");
    const json_t *read = json_object_get(c, "dram_read_bytes");
    if (!json_is_number(read))
        return;
    double cgma = json_number_value(read) > 0 ? 2.0 * a->m * a->n * a->k / (json_number_value(read) / 4) : NAN;
    json_object_set_new(c, "cgma_dram", isfinite(cgma) ? json_real(cgma) : json_null());
    if (env->bandwidth_gbs > 0)
        json_object_set_new(c, "bound_gflops", isfinite(cgma) ? json_real(bound_gflops(env->bandwidth_gbs, cgma))
                                                              : json_null());
}

static int matmul_point(magic_ctx *ctx, const json_t *pt, json_t *runs, void *user)
{
    const mm_env *env = user;
    const char *name = json_string_value(json_object_get(pt, "variant"));
    mm_target t;
    if (mm_target_of(env, name, &t) != 0)
        return magic_error(ctx, "RuntimeError", "variant %s is not in the %s backend", name,
                           env->backend->name);
    int tile = (int)json_integer_value(json_object_get(pt, "tile"));
    /* a variant without a tile runs once per size, not once per TILE_WIDTH;
     * a built-in one once per value of the flags only student kernels honour */
    if ((!(t.variant->flags & CL_V_TILE) && tile != env->first_tile) ||
        (!t.student && !student_at_first(env->student_firsts, pt)))
        return 0;
    mm_dims d = mm_point_dims(pt);

    cl_matmul_args a = { .m = (int)d.m, .n = (int)d.n, .k = (int)d.k, .tile = tile, .seed = env->seed,
                         .reps = env->reps, .warmup = env->warmup };
    student_launch sl;
    if (t.student && student_prepare(ctx, t.student, pt, tile, &sl) != 0)
        return -1;
    a.student = t.student ? &sl.kernel : NULL;
    if (env->check && !(a.c = malloc((size_t)a.m * a.n * sizeof *a.c))) {
        if (t.student)
            student_launch_free(&sl);
        return magic_error(ctx, "MemoryError", "out of host memory for C (%.1f MiB)",
                           (double)a.m * a.n * 4.0 / 1048576.0);
    }
    cl_matmul_result *r = malloc(sizeof *r);
    char err[CL_ERR_LEN] = "";
    if (!r || MAGIC_TIMED(ctx, err, t.ops->run(t.id, &a, r, err)) != 0) {
        free(a.c);
        if (t.student) {
            char point[128];
            snprintf(point, sizeof point, "%%matmul --m %d --n %d --k %d", a.m, a.n, a.k);
            int rc = r ? student_run_failed(ctx, &sl, point, err) : magic_error(ctx, "MemoryError", "out of host memory");
            free(r);
            student_launch_free(&sl);
            return rc;
        }
        if (!r)
            return magic_error(ctx, "MemoryError", "out of host memory");
        free(r);
        return magic_error(ctx, t.is_host ? "RuntimeError" : magic_backend_ename(ctx->backend),
                           "%%matmul --variant %s (m=%d, n=%d, k=%d): %s", name, a.m, a.n, a.k, err);
    }
    json_t *run = run_json(env, &t, t.variant, &a, r);
    sweep_add_conditions(ctx, run);
    add_cgma_dram(env, run, &a);
    cl_matmul_format fmt = cl_matmul_format_of(r->precision);
    free(r);
    if (t.student) {
        student_run_json(&sl, run);
        student_launch_free(&sl);
    }
    if (env->check) {
        cl_matmul_check c;
        int rc = cl_matmul_verify(a.m, a.n, a.k, a.seed, a.c, fmt, &c, err);
        free(a.c);
        if (rc != 0) {
            json_decref(run);
            return magic_error(ctx, "MemoryError", "checking %s: %s", name, err);
        }
        json_object_set_new(run, "check", check_json(&c));
    } else {
        json_object_set_new(run, "check", check_skipped(NULL));
    }
    json_array_append_new(runs, run);
    return 0;
}

/* --roofline: 2·m·n·k FLOPs over the lecture's global loads, 4 bytes each, so that the model's
 * intensity is CGMA / 4 and the memory roof at --bandwidth's GB/s is the lecture's bound (C's
 * stores, one per 2k FLOPs, are left out as the CGMA leaves them). A library's kernels have no
 * model: only --counters places them. */
static int matmul_flops(const json_t *run, sweep_flops *f)
{
    const char *precision = json_string_value(json_object_get(run, "precision"));
    const json_t *loads = json_object_get(json_object_get(run, "model"), "global_loads");
    if (precision && strcmp(precision, "fp64") == 0)
        f->why = "arithmetic in double: the roof is the FP32 peak";
    else if (!precision || strcmp(precision, "fp32") != 0)
        f->why = "tensor cores, on inputs rounded to a narrower format: the FP32 peak does not bound them";
    if (f->why)
        return -1;
    f->flop = 2.0 * (double)json_integer_value(json_object_get(run, "m")) *
              (double)json_integer_value(json_object_get(run, "n")) * (double)json_integer_value(json_object_get(run, "k"));
    f->bytes = json_is_number(loads) ? 4 * json_number_value(loads) : 0;
    f->gflops = json_number_value(json_object_get(run, "gflops"));
    return 0;
}

/* ---- the command ---- */

static const sweep_spec matmul_sweep = {
    .magic = "matmul",
    .title = "Matrix multiplication C = A·B (float32)",
    .metric = "gflops",
    .metric_label = "GFLOP/s", .rate_of = "flops",
    .columns = matmul_columns,
    .run_point = matmul_point,
    .host_work = mm_host_work,
    .size_flag = "size",
    .flops = matmul_flops,
};

/* Built-in variants run at the first --block and -D only: their launch shape is theirs. */
static const char *const mm_student_only[] = {"block", "define", NULL};

static int mm_prepare(magic_ctx *ctx, const json_t *given, json_t *p, void *env)
{
    (void)given;
    return mm_env_init(ctx, p, env);
}

static void mm_release(void *env)
{
    mm_env_free(env);
}

static const family_command matmul_command = {
    .family = &matmul_family, .sweep = &matmul_sweep, FAMILY_ENV(mm_env), .student_only = mm_student_only,
    .prepare = mm_prepare, .release = mm_release,
};

static int matmul_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    return family_run(ctx, &matmul_command, params, body);
}

static const char *const matmul_examples[] = {
    "%matmul --size 1024 --variant naive,tiled --tile 16",
    "%matmul --size 2048 --variant tiled --tile 2,4,8,16,32",
    "%matmul --size 4096 --variant all --sort",
    "%matmul --size 512,1024,2048,4096 --variant fast,cublas",
    "%matmul --size 4096 --variant reg1d,reg2d,vec4,warptile,fast,swizzle,async,cublas",
    "%matmul --size 2048 --variant wmma-tf32,wmma-fp16,wmma-bf16,cublas-tf32",
    "%matmul --size 2048 --variant naive,naive-bt,tiled,tiled-bt --tile 16",
    "%matmul --m 1000 --n 300 --k 77 --variant all",
    NULL,
};

const magic_spec magic_matmul = {
    .name = "matmul",
    .summary = "Time C = A·B (float32) from the naive kernel to tiling, register blocking, tensor cores and cuBLAS",
    .description =
        "Multiplies A (m×k) by B (k×n), row-major float32, generated on the device from --seed, "
        "and times each variant with CUDA events (median of --reps after --warmup). Sizes need "
        "not be multiples of any tile: every kernel checks its bounds.\n\n"
        "The variants form a ladder (table below): the host loop as the baseline, one thread "
        "per element (CGMA 1.0: bound by memory), shared-memory tiling (each element read once "
        "per block and reused TILE times: CGMA = TILE; sweep --tile to watch the traffic fall "
        "and occupancy change), then one step a row as in siboehm/SGEMM_CUDA: register blocking "
        "in 1D and 2D, float4 loads, warptiling, double buffering (fast), an XOR-swizzled tile, and "
        "cp.async pipelines; cuBLAS FP32 is the reference. naive-bt and tiled-bt read B stored "
        "transposed: uncoalesced, then coalesced again by corner turning. The wmma variants and "
        "cublas-tf32 run on tensor cores with A and B rounded to TF32, FP16 or BF16 (faster than "
        "the FP32 peak, less exact, so checked with their format's looser tolerance); on a Hopper "
        "GPU (sm_90a), wgmma-tf32, wgmma-fp16 and wgmma-bf16 do by hand what cuBLAS's kernels do "
        "there: warpgroup MMA fed by TMA, their time including the transposed (and for FP16 and "
        "BF16 converted) copy of B they need; cublas-fp16 and cublas-bf16 (cublasGemmEx, FP32 "
        "accumulation, A and B converted inside their time too) are their references. --variant all "
        "runs every one (the host loop only where it is within the host-work limit, the wgmma ones "
        "only on a compute capability 9.0 GPU or the CPU).\n\n"
        "Each run reports GFLOP/s = 2·m·n·k / median time, the percentage of the FP32 peak "
        "(2 × SMs × cores per SM × clock), the launch (grid, block, shared memory, registers per "
        "thread) and the traffic model: global loads and CGMA = flops per global load.\n\n"
        "Every run is checked unless --no-check: up to 512³ multiply-adds against the full "
        "double-precision product, beyond that by Freivalds' test (C·r against A·(B·r) for 3 random "
        "vectors). The error is measured against the scale of each dot product, Σ|a·b|; "
        "tolerances: 1e-5 (full) and 1e-6 (Freivalds) for FP32; for inputs rounded to a p-bit "
        "significand about ten unit roundoffs, 5e-3·2^(11-p): 5e-3 for TF32 and FP16, 4e-2 for BF16. "
        "A wrong result fails the cell.",
    .flags = matmul_flags,
    .mode = MAGIC_LINE,
    .where = MAGIC_WORKER,
    .run = matmul_run,
    .examples = matmul_examples,
    .attach = student_attach,
};
