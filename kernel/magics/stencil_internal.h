/* stencil_internal.h — private to kernel/magics/stencil*.c: what %stencil
 * resolves once per command (backend, weights, bandwidth) and the point
 * function of its sweep.
 */
#ifndef CUDALAB_MAGICS_STENCIL_INTERNAL_H
#define CUDALAB_MAGICS_STENCIL_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "magic/families.h"
#include "magic/magic.h"
#include "cudalab/stencil.h"
#include "magic/sweep.h"

typedef struct st_env {
    const cl_backend *backend;
    const cl_stencil_ops *ops;
    int dim;
    uint64_t seed;
    int reps, warmup;
    bool check;
    bool custom;                    /* --weights given */
    bool normalize;
    float weights[CL_STENCIL_MAX_WEIGHTS];   /* custom weights as used (after --normalize) */
    int nweights;
    double bw_gbs;                  /* measured copy bandwidth; 0 = unknown */
    bool builtin;                   /* --variant names one of ours */
    const char *student;            /* the first student kernel --variant names, or NULL */
    json_t *student_firsts;         /* our variants run at these values of -D only */
} st_env;

/* A named 2D filter: k x k weights, row-major, already divided by its divisor. */
typedef struct st_filter {
    const char *name;
    int k;
    double divisor;
    const int *w;                   /* k*k integers before the division */
    const char *text;               /* as the lecture writes it */
} st_filter;

const st_filter *st_filter_find(const char *name);

/* The family as the framework serves it (stencil.c). */
extern const family_spec stencil_family;

/* Fills w (k or k*k floats) for one point: the custom weights, the 1D box
 * 1/(2R+1), or the named 2D filter. Returns the number of weights. */
int st_point_weights(const st_env *env, int radius, const char *filter, float *w, int *k);

/* A point's --block (NULL: the default, 256 or 16x16; 2D T: TxT) into block[2];
 * false when its shape is not the dimension's (a 2D block in 1D, or 3D). */
bool st_block_of(const st_env *env, const json_t *given, int *block);

int st_point(magic_ctx *ctx, const json_t *pt, json_t *runs, void *user);
/* What one point makes the host do (the sweep's host_work hook; user is the st_env). */
host_work st_host_work(magic_ctx *ctx, const json_t *pt, void *user);

/* A run's FLOPs and bytes for --roofline (the sweep's flops hook). */
int st_flops(const json_t *run, sweep_flops *f);

#endif
