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

#include "cudalab/backend.h"

/* Returns the backend to use and writes into note why it was chosen: empty or
 * "CUDA device 0: <name>" for CUDA, the reason for falling back otherwise
 * (e.g. "no CUDA device: CUDA driver version is insufficient for CUDA runtime
 * version"). note may be NULL when len is 0.
 *
 * The CPU backend is for machines with no usable GPU (no driver, no device).
 * A GPU that is there but cannot give a context now (out of memory: other
 * kernels hold it) returns NULL, with "the GPU is busy: ..." in note: the
 * caller waits and asks again (worker_exec), and no CPU numbers answer a GPU
 * lecture.
 *
 * A choice is made once per process and cached; later calls return the same
 * backend and note. Environment:
 *   CUDALAB_BACKEND=cpu   use the CPU backend without trying CUDA
 *   CUDALAB_CUDA_LIB      path of libcudalab_cuda.so (default:
 *                         <dir of the executable>/../lib/cudalab/libcudalab_cuda.so)
 * Not thread-safe: call it from the worker's main thread before starting others. */
const cl_backend *backend_select(char *note, size_t len);
/* The same, at a worker's start, before any command: it takes no GPU slot
 * that other kernels already wait for (admission.h), so warming up never
 * costs another kernel its turn. */
const cl_backend *backend_warm(char *note, size_t len);

#endif
