/* backend_load.h — picks the compute backend for this process: CUDA when it can
 * run, else the CPU, and says why in one user-facing line.
 *
 * Only the device worker and command-line mode call this: loading the CUDA
 * library initialises nothing, but asking it for devices does, and the kernel
 * process never touches CUDA.
 */
#ifndef CUDALAB_EXEC_BACKEND_H
#define CUDALAB_EXEC_BACKEND_H

#include <stddef.h>

#include <stdbool.h>

#include "cudalab/backend.h"
#include "exec/admission.h"

/* Returns the backend to use and writes into note why it was chosen:
 * "CUDA device D: <name>" for CUDA, the reason for falling back otherwise
 * (e.g. "no NVIDIA driver on this machine: libcuda.so.1 is not installed", or
 * "no CUDA device: " and the CUDA runtime's reason). note may be NULL when len is 0.
 *
 * With CUDA, admission picks the device (admission.h: a slot on the visible
 * GPU with the most free ones, CUDA_VISIBLE_DEVICES respected) before its
 * context exists. The CPU backend is for machines with no usable GPU (no
 * driver, no device). A GPU that is there but cannot give a context now (its
 * slots are held, or out of memory) returns NULL with "the GPU is busy: ..."
 * in note: the caller waits and asks again (worker_exec), and no CPU numbers
 * answer a GPU lecture.
 *
 * A choice is made once per process and cached; later calls return the same
 * backend and note. Environment:
 *   CUDALAB_BACKEND=cpu   use the CPU backend without trying CUDA
 *   CUDALAB_CUDA_LIB      path of libcudalab_cuda.so (default:
 *                         <dir of the executable>/../lib/cudalab/libcudalab_cuda.so)
 * Not thread-safe: call it from the worker's main thread before starting others. */
const cl_backend *backend_select(char *note, size_t len);
/* Whether backend_select has chosen (a context exists, or the CPU). */
bool backend_chosen(void);
/* Whether backend_select's NULL is for an admission directory that cannot be
 * used or trusted (its note says which and why): not worth waiting for. */
bool backend_refused(void);
/* For a command that runs nothing on a device (%grid without --run, %occupancy
 * on flags): the chosen backend, else one that answers device queries without
 * a context or a slot (the CUDA library, or the CPU's), never waiting. */
const cl_backend *backend_query(char *note, size_t len);
/* The GPUs this worker sees as admission keys (none on the CPU), and the
 * index of the one in use (0 until one is). */
const admission_gpu *backend_gpus(int *n);
int backend_device(void);

#endif
