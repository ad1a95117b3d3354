/* student_cuda.h — private to cuda/*.cu: a student's kernel (cudalab/student.h)
 * as a family runner launches it. The module is loaded from the cubin once per
 * image hash and kept for the worker's life; the kernel handle stands where a
 * built-in kernel's symbol would (cudaLaunchKernel, cudaFuncGetAttributes).
 */
#ifndef CUDALAB_CUDA_STUDENT_H
#define CUDALAB_CUDA_STUDENT_H

#include <cuda_runtime.h>

#include "cudalab/backend.h"
#include "cudalab/measure.h"
#include "cudalab/student.h"

/* The kernel's handle, loading its image the first time. 0, or -1 with err. */
int cl_cuda_student_func(const cl_student_kernel *k, const void **func, char *err);
/* k's grid where it gives one, else the family's. */
dim3 cl_cuda_student_grid(const cl_student_kernel *k, dim3 family_rule);
dim3 cl_cuda_student_block(const cl_student_kernel *k);
/* Checks the launch against what the kernel and the device allow (threads per
 * block for its registers, shared memory, grid limits), in the student's
 * terms, and describes it into l. 0, or -1 with err. */
int cl_cuda_student_describe(const cl_student_kernel *k, const void *func, dim3 grid, dim3 block,
                             cl_launch *l, char *err);
/* Launches on stream 0 with the family's argument list. 0, or -1 with err. */
int cl_cuda_student_launch(const cl_student_kernel *k, const void *func, dim3 grid, dim3 block, void **args,
                           char *err);

/* ---- an honest harness ----
 * A student's output buffer is allocated with guard bytes on both sides, set
 * to a pattern, and checked after the run: a cheap out-of-bounds detector with
 * no sanitizer (writes past a matrix land there long before they fault).
 * Inputs of its own for every launch, the output poisoned before each, and
 * timed reps drawn at random checked against the harness's reference on their
 * own inputs: cl_cuda_reps (common.h), the same for built-in variants. */
#define CL_GUARD_BYTES (64u << 10)
#define CL_GUARD_BYTE 0xA5

/* *user points at `bytes` usable bytes between two guards; *base is what cudaFree takes. */
int cl_cuda_guarded_alloc(void **base, void **user, size_t bytes, const char *what, char *err);
/* 0 when both guards are intact, else -1 with "NAME wrote outside WHAT: …" in err. */
int cl_cuda_guard_check(const cl_student_kernel *k, void *base, size_t bytes, const char *what, char *err);

#endif
