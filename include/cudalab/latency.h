/* latency.h — memory latency and how warps hide it, on both sides of the
 * backend ABI: %latency (the lecture's memory hierarchy table, each space's
 * latency measured by pointer chasing) and %hiding (the bandwidth a streaming
 * read gets against the warps resident per SM).
 *
 * Pointer chasing: one thread follows p = next[p] through a random cycle over
 * a working set, so each load's address depends on the previous load's value
 * and no two are ever in flight together: the time per step is the latency.
 * The working set picks the level that serves the loads: a few KiB stay in
 * L1, a few MiB in L2, hundreds of MiB go to DRAM. The register row times a
 * chain of dependent FMAs instead (a register is no memory to chase through).
 *
 * Streaming (%hiding): every resident thread reads floats grid-stride with
 * `ilp` independent loads in flight before it needs one; the grid holds the
 * asked warps on every SM and no more (CUDA: shared memory requested so that
 * no more blocks fit), so the bandwidth shows how many loads in flight the
 * memory needs before its latency stops mattering (Little's law).
 */
#ifndef CUDALAB_LATENCY_H
#define CUDALAB_LATENCY_H

#include <stddef.h>
#include <stdint.h>

#include "cudalab/measure.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(id, key, memory, declaration, scope, lifetime, working set bytes): the
 * rows of %latency in the lecture's order, from its table of CUDA variable
 * qualifiers (key: what --level takes). The working set is the chase's
 * default (0: no chase); the CPU backend chases its host's own levels
 * (latency_cpu.c says which stands in for which). */
#define CL_LATENCY_LEVELS(X)                                                                           \
    X(CL_LAT_REGISTER, "register", "register", "int v;  (an automatic scalar)", "thread", "kernel", 0)    \
    X(CL_LAT_SHARED, "shared", "shared", "__shared__ int s[N];", "block", "kernel", 4096)                  \
    X(CL_LAT_LOCAL, "local", "local", "int a[N];  (an automatic array, indexed at run time)", "thread",    \
      "kernel", 512)                                                                                      \
    X(CL_LAT_CONSTANT, "constant", "constant", "__constant__ int c[N];", "grid", "application", 256)       \
    X(CL_LAT_L1, "l1", "global (L1 hit)", "__device__ int g[N];  or cudaMalloc", "grid", "application",   \
      16384)                                                                                              \
    X(CL_LAT_L2, "l2", "global (L2 hit)", "__device__ int g[N];  or cudaMalloc", "grid", "application",   \
      4u << 20)                                                                                           \
    X(CL_LAT_DRAM, "dram", "global (DRAM)", "__device__ int g[N];  or cudaMalloc", "grid", "application", \
      512u << 20)

#define CL_LAT_ID_(id, ...) id,
typedef enum cl_latency_level { CL_LATENCY_LEVELS(CL_LAT_ID_) CL_LAT_NLEVELS } cl_latency_level;
#undef CL_LAT_ID_

/* Bytes between the chase's slots in global memory: one slot per 128-byte line, so that no two
 * steps share a line (and L2's 32-byte sectors, L1's 128-byte lines each serve one step). */
#define CL_LAT_LINE 128
/* Dependent loads (or FMAs) timed per run, after a warm-up lap of the whole cycle (none for DRAM,
 * where a lap would only put part of the working set in L2). */
#define CL_LAT_STEPS 8192
/* The chases whose memory is an array of fixed size: the local array is the kernel's (every thread
 * the device could hold gets that much local memory at the launch, so it stays small), the
 * constant one a module's __constant__ array (64 KiB at most). */
#define CL_LAT_LOCAL_BYTES 512u
#define CL_LAT_CONST_MAX (32u << 10)

/* The level's own working set (CL_LATENCY_LEVELS), bytes. */
static inline uint64_t cl_latency_default_ws(int level)
{
    static const uint64_t ws[CL_LAT_NLEVELS] = {
#define CL_LAT_WS_(id, key, memory, decl, scope, life, bytes) [id] = bytes,
        CL_LATENCY_LEVELS(CL_LAT_WS_)
#undef CL_LAT_WS_
    };
    return level >= 0 && level < CL_LAT_NLEVELS ? ws[level] : 0;
}

typedef struct cl_latency_args {
    int level;                  /* cl_latency_level */
    uint64_t working_set;       /* bytes the cycle spans (0: the level's default) */
    uint64_t seed;              /* of the random cycle */
    int reps;                   /* timed chases, CL_REPS_AUTO for auto */
} cl_latency_args;

typedef struct cl_latency_result {
    cl_times cycles;            /* per rep, clock cycles per step (in cl_times' ms slots) */
    cl_times ns;                /* per rep, nanoseconds per step */
    uint64_t working_set;       /* bytes the cycle spanned */
    uint64_t slots;             /* steps in one lap of the cycle */
    int steps;                  /* steps timed per rep */
    char measured[160];         /* what served the loads: "shared memory", "host L1 cache (...)" */
} cl_latency_result;

/* One point of %hiding's streaming read. */
typedef struct cl_stream_args {
    uint64_t n;                 /* floats to read, >= 1 */
    int warps_per_sm;           /* resident warps on every SM, 1..the SM's limit */
    int ilp;                    /* independent loads each thread has in flight, 1..CL_STREAM_MAX_ILP */
    uint64_t seed;
    int reps, warmup;
    int check;                  /* compare the sum with the host's */
} cl_stream_args;
#define CL_STREAM_MAX_ILP 8

typedef struct cl_stream_result {
    cl_times times;
    double bytes;               /* what one rep read: GB/s = bytes / median time */
    double warp_load_bytes;     /* what one warp's load brings in (32 lanes x 4 B; the CPU: a 64-byte line) */
    int sms;                    /* the SMs the warps were on (the CPU: its one host thread) */
    cl_launch launch;
    int blocks_per_sm;          /* blocks of the grid on each SM */
    double sum, want;           /* the device's sum of the input, and the host's (double) */
    char impl[200];             /* how the point ran, in words (the CPU analogue says what stands in) */
} cl_stream_result;

typedef struct cl_latency_ops {
    /* One level's chase, reps times: 0, or -1 with err. */
    int (*chase)(const cl_latency_args *a, cl_latency_result *r, char *err);
    /* One streaming point: 0, or -1 with err. Its input is kept for the next point of the sweep
     * with the same size and seed, until stream_release frees it. */
    int (*stream)(const cl_stream_args *a, cl_stream_result *r, char *err);
    void (*stream_release)(void);
} cl_latency_ops;

/* The random cycle through `slots` slots that the chase follows, Sattolo's shuffle of (seed): next
 * slot of slot i is order[(k+1) % slots] where order[k] == i. Fills next[0..slots) with each slot's
 * successor; deterministic from seed on every backend. */
static inline void cl_latency_cycle(uint32_t *next, uint64_t slots, uint64_t seed)
{
    for (uint64_t i = 0; i < slots; i++)
        next[i] = (uint32_t)i;
    /* Sattolo: a uniformly random permutation with a single cycle; next[] holds it directly */
    for (uint64_t i = slots - 1; i > 0; i--) {
        uint64_t j = cl_hash(seed, i) % i;
        uint32_t t = next[i];
        next[i] = next[j];
        next[j] = t;
    }
}

/* The lecture's arithmetic (%hiding): warps an SM needs so that one is always ready while the others
 * wait `latency` cycles, when each warp has `independent` instructions between its loads and an
 * instruction takes `issue` cycles per warp to issue: ceil(latency / (independent x issue)). G80:
 * 200 / (4 x 4) -> 13. */
static inline int cl_warps_to_hide(double latency, double independent, double issue)
{
    double w = latency / (independent * issue);
    int n = (int)w;
    return n + (w > n);
}

/* The host's sum, in double, of the n floats of %hiding's input (seed): what the device's sums must
 * add up to. The last answer is kept, as a sweep asks again for the same input at every point. */
static inline double cl_latency_stream_sum(uint64_t n, uint64_t seed)
{
    static uint64_t last_n, last_seed;
    static double last_sum;
    if (n != last_n || seed != last_seed) {
        double sum = 0;
        for (uint64_t i = 0; i < n; i++)
            sum += cl_uniform(seed, i);
        last_n = n, last_seed = seed, last_sum = sum;
    }
    return last_sum;
}

#ifdef __cplusplus
}
#endif
#endif
