/* student.h — a student's kernel (a %%kernel cell) on both sides of the backend ABI.
 *
 * The device worker compiles the cell with NVRTC to machine code for the
 * device (kernel/student/) and hands the backend a cl_student_kernel: the
 * cubin, the kernel's lowered name and how to launch it. A family's run
 * function receives it as variant CL_VARIANT_STUDENT (its args carry the
 * kernel) and runs it through the same runner as its built-in variants: same
 * inputs, same timing, same copy back for the same check. What the kernel
 * must look like for each family is that family's cl_student_contract, in its
 * header beside its variants (matmul.h, vecadd.h, ...).
 */
#ifndef CUDALAB_STUDENT_H
#define CUDALAB_STUDENT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The variant id a family's run() receives for a student's kernel. */
#define CL_VARIANT_STUDENT (-1)

/* What a family asks of a student's kernel. */
typedef struct cl_student_contract {
    const char *params;     /* the parameter list as the student writes it, the family header's
                               CL_<FAMILY>_STUDENT_PARAMS (its help and broken variants read it too):
                               "const float *A, const float *B, float *C, int M, int N, int K"; the
                               compile-time check derives its types (kernel/student/compile.h) */
    const char *launch;     /* the launch rule in words */
    int block[3];           /* the default block */
    unsigned flags;         /* CL_V_TILE: --tile T sets -D TILE=T and a T×T block; a family's own
                               flags say how its inputs are passed (CL_MATMUL_BT: B as Bᵀ) */
} cl_student_contract;

/* One student kernel, compiled, as a backend launches it. */
typedef struct cl_student_kernel {
    const char *name;       /* as the student wrote it, for messages */
    const char *hash;       /* of the image: the backend keeps one loaded module per hash */
    const void *image;      /* the cubin NVRTC made for this device */
    size_t image_bytes;
    const char *entry;      /* the kernel's lowered (mangled) name in the image */
    unsigned flags;         /* its contract's flags (cl_student_contract.flags): how the backend
                               passes the family's inputs to it */
    int block[3];           /* threads per block */
    int grid[3];            /* blocks; {0, 0, 0}: the family's launch rule */
    size_t dyn_smem;        /* dynamic shared memory per block, bytes */
    int dyn_smem_given;     /* --smem was given; else dyn_smem is 0 and the family may size it
                               (%stencil: the block's tile with its halo) */
    double limit_ms;        /* a launch still running after this long is abandoned: the run
                               fails, the device is marked unusable and the worker leaves */
    /* The CPU backend's: the runner executable (cpu/simt/runtime/) and the object
     * it loads, built from the same source with the CUDA model's prelude
     * (kernel/student/host_build.c), or NULL. */
    const char *host_runner;
    const char *host_object;
    int host_one_process;   /* the source has __device__ variables: every block in one process */
    /* Where a backend explains a failed run at length (the CPU runner's
     * findings, one per line), for the cell's traceback; NULL: nowhere. */
    char *diagnosis;
    size_t diagnosis_len;
    /* Where the CPU backend says which sandbox layers a launch ran under ("a,b,c"); NULL: nowhere. */
    char *sandbox;
    size_t sandbox_len;
} cl_student_kernel;

#ifdef __cplusplus
}
#endif
#endif
