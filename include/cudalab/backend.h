/* backend.h — the one C ABI that both compute backends implement.
 *
 * cuda/ is built by nvcc into libcudalab_cuda.so and loaded with dlopen by the
 * device worker only, so the kernel process never maps or initialises CUDA.
 * cpu/ is linked into the binary and serves as the reference implementation and
 * as the fallback when no GPU, driver or CUDA library can be used.
 *
 * Conventions: every function returns 0 on success; on failure it returns -1
 * and writes a one-line reason into err (for CUDA, cudaGetErrorString text).
 * Strings and structs are owned by the caller; backends keep no pointers.
 */
#ifndef CUDALAB_BACKEND_H
#define CUDALAB_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CL_BACKEND_ABI 12
#define CL_ERR_LEN 256

/* Properties of one device, as the lectures use them. Zero means "unknown". */
typedef struct cl_device_props {
    int index;
    char name[256];
    char pci_bus_id[32];
    int cc_major, cc_minor;           /* compute capability (0.0 for the CPU) */
    int sm_count;                     /* CPU: logical cores */
    int cores_per_sm;                 /* FP32 lanes per SM (CPU: per logical CPU, host.h's cl_cpu_fp32_rate) */
    int clock_khz;                    /* SM clock */
    int mem_clock_khz;                /* memory clock (0 if unknown) */
    int mem_bus_width_bits;
    uint64_t total_mem;               /* bytes */
    uint64_t free_mem;                /* bytes, at query time */
    int l2_bytes;
    uint64_t smem_per_block;          /* default limit */
    uint64_t smem_per_block_optin;    /* with cudaFuncAttributeMaxDynamicSharedMemorySize */
    uint64_t smem_per_sm;
    int regs_per_block, regs_per_sm;
    int max_threads_per_block, max_threads_per_sm, max_blocks_per_sm;
    int warp_size;
    int max_grid[3], max_block[3];
    int async_engines;
    int ecc;
    int integrated;
} cl_device_props;

/* Library and driver versions, encoded as CUDA does (1000*major + 10*minor). */
typedef struct cl_versions {
    int driver;
    int runtime;
    char arch[64];                    /* e.g. "sm_90 SASS" or "compute_90 PTX (JIT)" */
} cl_versions;

/* What the device was like while the current run's reps were timed (from the runner's timing set-up
 * to now): the SM and memory clocks NVML read after each rep, the reasons NVML gave for holding the
 * clocks down, and the time of an empty event pair, subtracted from each rep timed with events. */
typedef struct cl_conditions {
    int samples;                      /* reps the clocks were read after; 0: no reading (unavailable says why) */
    int sm_mhz_min, sm_mhz_max;       /* the SM clock over those reps */
    int sm_mhz_limit;                 /* the highest SM clock the device allows (its boost clock) */
    int mem_mhz;                      /* the memory clock at the last reading */
    unsigned long long reasons;       /* CL_CLOCK_REASON_* bits seen at any reading (NVML's own bits) */
    int corrected_reps;               /* reps that had event_overhead_ms subtracted */
    float event_overhead_ms;
    char unavailable[160];            /* why no clocks were read ("" when samples > 0) */
} cl_conditions;

/* NVML's clock event reasons (nvmlClocksEventReason*), with the names the result document uses. */
#define CL_CLOCK_REASONS(X) \
    X(0x1ull, "gpu_idle") X(0x2ull, "applications_clocks_setting") X(0x4ull, "sw_power_cap") \
    X(0x8ull, "hw_slowdown") X(0x10ull, "sync_boost") X(0x20ull, "sw_thermal_slowdown") \
    X(0x40ull, "hw_thermal_slowdown") X(0x80ull, "hw_power_brake_slowdown") X(0x100ull, "display_clock_setting")

/* --counters: what one more run of a variant did in the memory system and on the SMs, counted by the
 * GPU's performance counters (the CUDA backend, through CUPTI) or by the CPU runner's simulation of
 * a student's kernel. X(field, JSON name): the fields below and the result document's names, in one
 * place; a value is NaN where it was not counted (a metric this GPU or simulation lacks). */
#define CL_COUNTERS(X) \
    X(dram_read_bytes)                  /* bytes read from device memory (DRAM) */ \
    X(dram_write_bytes)                 /* bytes written to it */ \
    X(l2_hit_pct)                       /* L2 sector hit rate, % */ \
    X(l1_hit_pct)                       /* L1/texture sector hit rate, % */ \
    X(achieved_occupancy_pct)           /* active warps per active cycle, % of the SM's maximum */ \
    X(shared_bank_conflicts)            /* extra shared-memory wavefronts caused by bank conflicts */ \
    X(global_load_sectors_per_request)  /* 32-byte sectors per warp-wide global load (4: coalesced floats) */ \
    X(warp_execution_efficiency_pct)    /* active lanes per executed warp instruction, % of 32 */ \
    X(flop)                             /* FP32 operations executed: fadd + fmul + 2 x ffma */

#define CL_COUNTER_FIELD_(name) double name;
typedef struct cl_counters {
    int measured;                     /* 1: counted (the fields); 0: not counted, unavailable says why */
    int passes;                       /* launches it took to read every counter (each one is counted whole) */
    char source[96];                  /* "hardware (CUPTI range profiler)", "simulation (CPU runner)" */
    CL_COUNTERS(CL_COUNTER_FIELD_)
    char unavailable[240];            /* why nothing was counted, when measured is 0 */
} cl_counters;
#undef CL_COUNTER_FIELD_

/* The families, each with an ops table declared in its own header (cudalab/
 * reduce.h, matmul.h, ...): one entry here gives every backend a field for it.
 * A backend defines `cl_<backend>_<family>_ops`; the backend table refers to
 * them through weak symbols (CL_BACKEND_WEAK_OPS), so a family that a backend
 * lacks is simply NULL there. selftest: test-only operations (%selftest,
 * reachable only with CUDALAB_TESTING=1). */
#define CL_FAMILIES(X) \
    X(reduce) X(matmul) X(histo) X(selftest) X(grid) X(occupancy) X(vecadd) X(coalesce) X(stencil) X(launch) \
    X(latency)

#define CL_FAMILY_FIELD_(f) const struct cl_##f##_ops *f;
#define CL_FAMILY_FORWARD_(f) struct cl_##f##_ops;
CL_FAMILIES(CL_FAMILY_FORWARD_)

typedef struct cl_backend {
    const char *name;                 /* "cuda" or "cpu" */
    int abi;                          /* CL_BACKEND_ABI */
    int (*device_count)(int *count, char *err);
    int (*device_props)(int dev, cl_device_props *out, char *err);
    int (*versions)(int dev, cl_versions *out, char *err);
    /* Measured device-memory bandwidth of a large copy, GB/s counting bytes read
     * and written; measured once per process. NULL when not implemented. */
    int (*copy_bandwidth)(double *gbs, char *err);
    /* 0 while the device is usable; -1 with the error after a sticky CUDA error
     * (illegal address, launch failure...) that poisons the context, after which
     * the worker exits so the next command gets a fresh one. NULL = always usable. */
    int (*healthy)(char *err);
    /* Makes dev the device every later call runs on, creating its context
     * (the worker calls it once admission gave it a slot there). Until then
     * device_count, device_props and versions create no context: a device's
     * free memory and code arch are known only once it is in use (0 and ""
     * before). NULL: one device, always in use (the CPU). */
    int (*use_device)(int dev, char *err);
    /* The worker's count of timed reps (cl_rep_done, host.h), called after each one so that a long
     * run can say how far it is. NULL: the backend calls cl_rep_done itself (the CPU). */
    void (*set_rep_hook)(void (*rep_done)(void));
    /* The current run's cl_conditions (above), read right after the run returns. NULL: nothing to
     * say (the CPU, whose reps the host clock times). */
    int (*conditions)(cl_conditions *out);
    /* --counters: whether the runs from now on are also counted (cl_counters, above), each by one
     * more run of the variant (never one of the timed ones) under the profiler. */
    void (*set_counters)(int on);
    /* The current run's cl_counters, read right after the run returns: 0, or -1 when the run was
     * not asked to count. NULL: the backend counts nothing (say so to whoever asked). */
    int (*counters)(cl_counters *out);
    CL_FAMILIES(CL_FAMILY_FIELD_)
    /* --check-reps all: whether the runs from now on check every timed rep's result on its own
     * inputs (1), or CL_GPU_CHECKED_REPS of them drawn at random (0, the default). NULL: the
     * backend checks every rep always (the CPU runner). */
    void (*set_check_reps)(int all);
} cl_backend;

/* In a backend's device file: the weak declarations of its ops tables, and the
 * table's family fields, for `backend` = cpu or cuda. */
#define CL_BACKEND_WEAK_(backend, f) extern const struct cl_##f##_ops cl_##backend##_##f##_ops __attribute__((weak));
#define CL_BACKEND_WEAK_CPU_(f) CL_BACKEND_WEAK_(cpu, f)
#define CL_BACKEND_WEAK_CUDA_(f) CL_BACKEND_WEAK_(cuda, f)
#define CL_BACKEND_OPS_CPU_(f) &cl_cpu_##f##_ops,
#define CL_BACKEND_OPS_CUDA_(f) &cl_cuda_##f##_ops,

/* Test-only: a long kernel to interrupt, a faulting launch to recover from,
 * and a timed rep whose host stalls (its figure in *ms; *lapsed: the
 * worker's reps so far whose timing hold ran out). */
typedef struct cl_selftest_ops {
    int (*spin)(double ms, char *err);          /* one kernel that runs for about ms */
    int (*fault)(char *err);                    /* an out-of-bounds write: a sticky error */
    int (*stalled_rep)(double stall_ms, float *ms, int *lapsed, char *err);
} cl_selftest_ops;

/* The symbol the worker looks up in libcudalab_cuda.so. */
const cl_backend *cl_cuda_backend(void);
/* Linked into the binary. */
const cl_backend *cl_cpu_backend(void);
/* Fills the fields of p that are the CPU device model's (cudalab/cpu_model.h):
 * warp, thread, block, grid, register and shared memory limits. The host's own
 * fields (SMs, FP32 lanes, clock, memory, name) are left as they are. */
void cl_cpu_model_limits(cl_device_props *p);

#ifdef __cplusplus
}
#endif
#endif
