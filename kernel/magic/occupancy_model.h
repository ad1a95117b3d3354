/* occupancy_model.h — the arithmetic model of %occupancy (occupancy_model.c):
 * how many blocks of a kernel are resident on one SM, and which limit decides.
 * Exact on every backend; the kernel's alone (cudalab/occupancy.h has what
 * crosses the backend boundary, and says how the model counts).
 */
#ifndef CUDALAB_MAGIC_OCCUPANCY_MODEL_H
#define CUDALAB_MAGIC_OCCUPANCY_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cudalab/backend.h"

typedef struct cl_occ_device {
    int64_t sms;
    int64_t max_threads_sm, max_blocks_sm, max_threads_block;
    int64_t regs_sm, regs_block, max_regs_thread;
    int64_t smem_sm, smem_block, smem_reserved;     /* bytes */
    int64_t warp;                 /* 32 */
    int64_t reg_unit;             /* 256 */
    int64_t reg_partitions;       /* 4: the register file is split between the SM's 4 schedulers */
    int64_t smem_unit;            /* 128: shared memory is allocated per block in these (sm_8x/9x) */
    bool reg_per_warp;            /* true: per-warp allocation in reg_unit; false: R * threads */
} cl_occ_device;

typedef struct cl_occ_kernel {
    int64_t threads;              /* per block */
    int64_t regs;                 /* per thread, 0 = not counted */
    int64_t smem;                 /* bytes per block (static + dynamic) */
} cl_occ_kernel;

enum cl_occ_limiter { CL_OCC_THREADS, CL_OCC_BLOCKS, CL_OCC_REGS, CL_OCC_SMEM };

typedef struct cl_occ_result {
    int64_t warps_per_block, threads_in_last_warp;
    double last_warp_idle_pct;    /* share of the last warp's 32 lanes without a thread */
    int64_t regs_per_block;       /* as allocated by the model */
    int64_t by_threads, by_blocks, by_regs, by_smem;   /* blocks per SM each limit allows; INT64_MAX = no limit */
    int64_t blocks_sm;            /* the minimum: resident blocks per SM */
    enum cl_occ_limiter limiter;  /* the first limit (in enum order) equal to the minimum */
    int64_t warps_sm, threads_sm; /* resident */
    double occupancy_pct;         /* warps_sm / (max_threads_sm / 32) */
} cl_occ_result;

/* How a grid of `blocks` spreads over the SMs, round-robin as the block
 * scheduler does when every SM has room: waves of sms * blocks_sm blocks, and
 * in the last wave `sms_more` SMs run `more` blocks while the rest run `less`. */
typedef struct cl_occ_spread {
    int64_t blocks, waves, full_waves;
    int64_t last_wave_blocks, more, sms_more, less, sms_less;
} cl_occ_spread;

/* Checks that one block can run at all (threads per block, registers per
 * thread and per block, shared memory per block); err names the limit. Then
 * fills r. 0, or -1 with err. */
int cl_occ_compute(const cl_occ_device *d, const cl_occ_kernel *k, cl_occ_result *r, char *err,
                   size_t errlen);
void cl_occ_spread_of(const cl_occ_device *d, const cl_occ_result *r, int64_t blocks, cl_occ_spread *s);
const char *cl_occ_limiter_name(enum cl_occ_limiter l);

/* The device the model uses when the backend cannot tell (the CPU backend):
 * an sm_90 (H100) SM. */
void cl_occ_device_default(cl_occ_device *d);
/* The model's device for a backend: its device 0 where it is a GPU that
 * answers, else the default; returns where the numbers come from, in words. */
const char *cl_occ_device_of(const cl_backend *b, int dev, cl_occ_device *d);
/* The same for a launch that ran there (a sweep's --launch): with the shared
 * memory the driver keeps per resident block, which the lecture's exercises
 * leave out (smem_reserved 0): 1 KiB from sm_80 on, none on sm_7x. */
const char *cl_occ_device_launched(const cl_backend *b, int dev, cl_occ_device *d);

#endif
