/* matmul_internal.h — private to kernel/magics/matmul*.c: what %matmul
 * resolves once per command (backend, peaks, variant list, limits) and the
 * helpers that turn a sweep point into sizes and a variant to run.
 */
#ifndef CUDALAB_MAGICS_MATMUL_INTERNAL_H
#define CUDALAB_MAGICS_MATMUL_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "magic/families.h"
#include "magic/magic.h"
#include "cudalab/matmul.h"
#include "magic/sweep.h"

typedef struct mm_env {
    const cl_backend *backend;
    lab_session *lab;               /* the command's session: its students' kernels */
    const cl_matmul_ops *host_ops;  /* the CPU backend's table: runs `cpu` whatever the backend */
    double peak_gflops;             /* FP32 peak of the backend's device 0; 0 if unknown */
    double host_peak_gflops;
    double bandwidth_gbs;           /* --bandwidth: the memory bandwidth the model's bound assumes; 0: none */
    uint64_t seed;
    int reps, warmup;
    bool check;
    int first_tile;                 /* variants without a tile run at this one only */
    bool cpu_optional;              /* `all` brought in the host loop: left out over the host-work limit */
    bool sm90a_here;                /* CL_MATMUL_SM90A variants run here: a compute capability 9.0 GPU,
                                     * or the CPU backend (their analogues) */
    bool sm90a_named;               /* --variant names one: `all` alone leaves them out where they cannot run */
    json_t *student_firsts;         /* built-in variants run at these values of --block and -D only */
} mm_env;

/* Where one variant runs. */
typedef struct mm_target {
    const cl_matmul_ops *ops;
    int id;                         /* enum cl_matmul_variant_id */
    const cl_variant *variant;      /* the contract's row */
    const char *backend_name;       /* "cuda" or "cpu" */
    bool is_host;                   /* runs on the host CPU (peak and limits of the host) */
    bool optional;                  /* from `all`; left out where over the host-work limit */
    const struct student_def *student;  /* a student's kernel (id CL_VARIANT_STUDENT), or NULL */
} mm_target;

extern const family_spec matmul_family;

typedef struct mm_dims {
    long long m, n, k;
} mm_dims;

/* Resolves the backend, expands --variant all (rewriting params' "variant"),
 * and refuses bad tiles and sizes before anything runs. 0, or -1 with the error set. */
int mm_env_init(magic_ctx *ctx, json_t *params, mm_env *env);
void mm_env_free(mm_env *env);
/* 0, or -1 when the variant is in neither table. */
int mm_target_of(const mm_env *env, const char *variant, mm_target *out);
/* m, n, k of a sweep point: --m/--n/--k where given, else --size. */
mm_dims mm_point_dims(const json_t *point);
/* What one point makes the host do (the sweep's host_work hook; user is the mm_env). */
host_work mm_host_work(magic_ctx *ctx, const json_t *point, void *user);

#endif
