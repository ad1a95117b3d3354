/* launch.h — a kernel launch that may fail, as the lecture's error handling
 * shows it (%launch): what a launch returns (nothing), what
 * cudaGetLastError() says right after it and once more, what
 * cudaDeviceSynchronize() says, and whether the kernel ran at all.
 *
 * The kernel writes 1 to out[i] for its global thread index i (below
 * CL_LAUNCH_MAX_OUT), so "written" counts the threads that ran. The CUDA
 * backend launches it for real (cuda/launch.cu); the CPU backend makes the
 * checks CUDA makes before a launch against its device model's limits
 * (cpu/launch_cpu.c), and says it is a model.
 */
#ifndef CUDALAB_LAUNCH_H
#define CUDALAB_LAUNCH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[] holds at most this many elements; threads past it write nothing. */
#define CL_LAUNCH_MAX_OUT (1ll << 24)
#define CL_LAUNCH_NAME_LEN 64
#define CL_LAUNCH_TEXT_LEN 160

typedef struct cl_launch_args {
    unsigned block[3];              /* threads per block, x y z, each >= 1 */
    unsigned grid[3];               /* blocks in the grid, x y z, each >= 1 */
    size_t smem;                    /* dynamic shared memory per block, bytes */
} cl_launch_args;

/* One CUDA call's answer: its cudaError_t as a number, name and text. */
typedef struct cl_launch_status {
    int code;                       /* 0: cudaSuccess */
    char name[CL_LAUNCH_NAME_LEN];  /* "cudaErrorInvalidValue" */
    char text[CL_LAUNCH_TEXT_LEN];  /* cudaGetErrorString: "invalid configuration argument" */
} cl_launch_status;

typedef struct cl_launch_result {
    cl_launch_status last_error;    /* cudaGetLastError() right after the launch */
    cl_launch_status again;         /* cudaGetLastError() once more: reading the error cleared it */
    cl_launch_status sync;          /* cudaDeviceSynchronize() after both */
    long long written;              /* elements of out[] the kernel set: 0 when it never ran */
    long long expected;             /* what a launch that ran would set: min(threads, CL_LAUNCH_MAX_OUT) */
    int modelled;                   /* 1: no launch, CUDA's checks of a device model (the CPU backend) */
} cl_launch_result;

typedef struct cl_launch_ops {
    /* 0 with *r filled (whatever the launch said); -1 with err when it could not be tried (no memory). */
    int (*run)(const cl_launch_args *a, cl_launch_result *r, char *err);
} cl_launch_ops;

#ifdef __cplusplus
}
#endif
#endif
