/* measure.h — what every timed family shares, on both sides of the backend ABI:
 * the seeded input generator, the launch description and the raw timings.
 *
 * Inputs are generated from (seed, index) by a counter-based hash, so the GPU
 * fills its buffers in parallel and the CPU reference regenerates exactly the
 * same values without copying them back. Never zeros.
 */
#ifndef CUDALAB_MEASURE_H
#define CUDALAB_MEASURE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define CL_HD __host__ __device__ __forceinline__
#else
#define CL_HD static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define CL_MAX_REPS 1000

/* splitmix64 of (seed, i): the same 64 random bits on host and device. */
CL_HD uint64_t cl_hash(uint64_t seed, uint64_t i)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform float in [-1, 1), never exactly 0, with 24 random bits. */
CL_HD float cl_uniform(uint64_t seed, uint64_t i)
{
    uint32_t r = (uint32_t)(cl_hash(seed, i) >> 40);          /* 24 bits */
    return ((float)r + 0.5f) * (2.0f / 16777216.0f) - 1.0f;
}

/* Uniform int in [lo, hi]. */
CL_HD int32_t cl_uniform_int(uint64_t seed, uint64_t i, int32_t lo, int32_t hi)
{
    uint64_t span = (uint64_t)((int64_t)hi - lo + 1);
    return (int32_t)(lo + (int64_t)(cl_hash(seed, i) % span));
}

/* How one variant was launched: its main kernel (a family may report a second
 * pass separately, e.g. "launch_final" for a reduction's pass over the partials). */
typedef struct cl_launch {
    int grid[3], block[3];
    size_t smem_bytes;          /* static + dynamic shared memory per block */
    int regs_per_thread;        /* from cudaFuncGetAttributes; 0 on the CPU */
    int kernels;                /* launches per timed run (2 for a two-pass reduction) */
} cl_launch;

/* Raw timings of one run: the caller turns them into statistics. */
typedef struct cl_times {
    int reps;
    float ms[CL_MAX_REPS];      /* device time of each timed rep (CUDA events around the kernels only) */
    double h2d_ms, d2h_ms;      /* transfers, when the command moves data; 0 otherwise */
} cl_times;

#ifdef __cplusplus
}
#endif
#endif
