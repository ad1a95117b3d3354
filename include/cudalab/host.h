/* host.h — what the CPU backend (linked into the binary) offers the rest of
 * the process: how many host threads its pool uses, and the cancellation flag
 * its long loops poll. Implemented in cpu/common/; the kernel's framework
 * reads the first for its host-work estimates and sets the second from the
 * worker's SIGINT handler (magic_cancel).
 */
#ifndef CUDALAB_HOST_H
#define CUDALAB_HOST_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- host threads (cpu/common/cpu_pool.c) ---- */

/* The most host threads one parallel-for starts. */
#define CL_CPU_MAX_THREADS 64

/* Host threads a launch uses: online CPUs, 1 to CL_CPU_MAX_THREADS. */
int cl_cpu_threads(void);

/* ---- cancellation (cpu/common/cpu_cancel.c) ---- */

/* One process-wide flag: the worker's SIGINT handler (through magic_cancel)
 * sets it, a long loop polls it and stops early, the worker clears it before
 * each command. Polling is safe from any host thread. */
bool cl_cancel_requested(void);
void cl_cancel_request(void);       /* async-signal-safe */
void cl_cancel_reset(void);

/* ---- reps done (cpu/common/cpu_progress.c) ---- */

/* A backend calls cl_rep_done() after each timed rep it finishes (the CPU analogues directly, the
 * CUDA backend through the hook the worker gives it: cl_backend.set_rep_hook), so that while one
 * long run goes on the worker can say how far it is and about how long is left. cl_reps_done():
 * the reps finished since the process started. Both are safe from any thread. */
void cl_rep_done(void);
unsigned long cl_reps_done(void);

/* ---- the host's FP32 rate (cpu/common/cpu_simd.c) ---- */

/* How the CPU backend counts the host's FP32 lanes, for its peak (cl_device_props.cores_per_sm of
 * its device: peak = 2 × logical CPUs × lanes_per_cpu × clock, as a GPU's is 2 × its FP32 lanes
 * × clock), and %device says how. */
typedef struct cl_cpu_fp32_rate {
    char isa[16];                   /* the widest vector extension: "AVX-512", "AVX2", ..., "scalar" */
    int lanes;                      /* its width in floats (1: scalar) */
    bool fma;                       /* fused multiply-add */
    int pipes;                      /* vector pipes of a core counted: 2 with FMA, else 1 (add and multiply ports) */
    int threads_per_core;           /* hardware threads sharing them */
    int lanes_per_cpu;              /* lanes × pipes ÷ threads per core, at least 1 */
} cl_cpu_fp32_rate;
/* From flags (the words of /proc/cpuinfo's flags or Features line) and the threads per core. */
void cl_cpu_fp32_rate_from(const char *flags, int threads_per_core, cl_cpu_fp32_rate *r);
/* This host's, read at run time. */
void cl_cpu_fp32_rate_read(cl_cpu_fp32_rate *r);
/* r in words, for %device: "32 lanes per logical CPU: 16-float AVX-512 vectors × 2 FMA pipes". */
void cl_cpu_fp32_rate_text(const cl_cpu_fp32_rate *r, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif