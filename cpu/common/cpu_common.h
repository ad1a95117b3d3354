/* cpu_common.h — what every file of the CPU backend shares: the host clock,
 * the host thread pool (a parallel-for), the host's caches, the launch an
 * analogue reports, and (through cudalab/host.h, which the kernel reads too)
 * the thread count and the cancellation flag that long CPU loops poll. One of
 * each, so that every analogue times, splits work and stops the same way.
 *
 * Included as "common/cpu_common.h" from cpu/, and by the unit tests.
 */
#ifndef CUDALAB_CPU_COMMON_H
#define CUDALAB_CPU_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "cudalab/host.h"
#include "cudalab/measure.h"

/* ---- the clock (cpu/common/cpu_clock.c) ---- */

/* Milliseconds on the monotonic clock, from an arbitrary origin: only
 * differences mean anything. */
double cl_now_ms(void);

/* ---- host threads (cpu/common/cpu_pool.c) ---- */

/* (CL_CPU_MAX_THREADS and cl_cpu_threads() are in cudalab/host.h.) */

/* Threads worth starting for `elements` of streaming work: starting a thread
 * costs about as much as streaming 2^16 elements, so fewer for small inputs. */
int cl_cpu_threads_for(uint64_t elements);

/* Runs fn(i, arg) for i in [0, count) on up to `threads` host threads (0 =
 * cl_cpu_threads(); at most CL_CPU_MAX_THREADS, never more than count), with
 * indices dealt round-robin (thread t runs t, t+T, t+2T, ...) as a GPU deals
 * blocks to SMs. The calling thread is thread 0; the share of a thread that
 * fails to start runs in the caller (slower, never wrong), so which thread
 * runs an index may vary but the set of indices never does. Returns the
 * number of threads the work was dealt to.
 *
 * Per-thread state (scratch buffers, partial results merged in a fixed
 * order): call it with count == threads and let index t walk its own share. */
int cl_parallel_for(long long count, int threads, void (*fn)(long long i, void *arg), void *arg);

/* Runs fn(first, last, ctx) over [0, count) cut into contiguous ranges, one
 * per thread (`threads` as for cl_parallel_for): range t is
 * [count·t/T, count·(t+1)/T), a fixed partition for a given T, so results
 * combined in range order do not depend on timing. Does nothing when count
 * is 0. Returns the number of ranges (at least 1). */
typedef void (*cl_range_fn)(uint64_t first, uint64_t last, void *ctx);
int cl_parallel_ranges(uint64_t count, int threads, cl_range_fn fn, void *ctx);

/* ---- the host's caches (cpu/common/cpu_caches.c) ---- */

typedef struct cl_host_cache {
    int level;                      /* 1, 2, 3 */
    uint64_t bytes;
} cl_host_cache;

/* The data and unified caches of CPU 0, smallest first, into *c (static storage): how many (0 when
 * sysfs does not say). Read from sysfs once per process. */
int cl_host_caches(const cl_host_cache **c);

/* The largest host cache, bytes (32 MiB when sysfs does not say). */
uint64_t cl_host_cache_max(void);

/* ---- hot loops ----
 * CL_HOT on the function that holds an analogue's inner loops: on x86-64,
 * GCC and Clang build it twice, for AVX2 and for the baseline, and the loader
 * picks one (an ifunc), so that the one portable binary is quick where the
 * CPU allows. The arithmetic stays as written: -std=c11 keeps contraction
 * into FMA off, and vector lanes keep each element's order of operations, so
 * results are the same bits on every machine. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__) && !defined(__SANITIZE_ADDRESS__)
#define CL_HOT __attribute__((target_clones("avx2", "default")))
#else
#define CL_HOT
#endif

/* ---- the launch a CPU analogue reports ---- */

/* A gx × gy grid of bx × by blocks (z = 1), each side of the grid clamped to
 * INT32_MAX (an analogue may emulate more blocks than cl_launch's int holds). */
static inline cl_launch cl_launch_2d(uint64_t gx, uint64_t gy, int bx, int by, size_t smem, int kernels)
{
    cl_launch l = {
        .grid = { gx > INT32_MAX ? INT32_MAX : (int)gx, gy > INT32_MAX ? INT32_MAX : (int)gy, 1 },
        .block = { bx, by, 1 },
        .smem_bytes = smem,
        .kernels = kernels,
    };
    return l;
}

#endif
