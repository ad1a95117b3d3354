/* common.h — private to cuda/*.cu: the pieces every family's runner shares.
 *
 * Errors: cl_cuda_fail writes "what: cudaGetErrorString(rc)" and clears the
 * non-sticky error. Timing: a cl_cuda_timing holds the L2 flush buffer (a
 * scratch buffer twice the L2 size, read before a launch so that no
 * rep starts with its inputs cached) and the two events that bracket the
 * timed work. cl_cuda_timing_init makes both; a rep is cl_cuda_flush_l2,
 * cl_cuda_time_start (the hold, then e0), the work, then cl_cuda_time_stop.
 */
#ifndef CUDALAB_CUDA_COMMON_H
#define CUDALAB_CUDA_COMMON_H

#include <cuda_runtime.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cudalab/backend.h"
#include "cudalab/measure.h"

/* "what: cudaGetErrorString(rc)" into err (when not NULL); clears the non-sticky error; returns -1. */
int cl_cuda_fail(char *err, const char *what, cudaError_t rc);

/* cudaMalloc of bytes (16 when 0); on failure *p = NULL and
 * "cudaMalloc of X MiB for the <what>: …" in err, and -1. */
int cl_cuda_alloc(void **p, size_t bytes, const char *what, char *err);

typedef struct cl_cuda_timing {
    void *flush;                    /* L2 flush buffer, flush_bytes long */
    size_t flush_bytes;
    cudaEvent_t e0, e1;             /* around the timed work, on stream 0 */
    bool unheld;                    /* the rep's enqueueing waits for the device (a pageable copy): no hold */
} cl_cuda_timing;

/* The flush buffer's size: twice the current device's L2 cache (8 MiB when the
 * device reports none), so a rep's inputs are evicted; for memory budgets too.
 * 0 with "device attributes: …" in err when the device cannot be asked. */
size_t cl_cuda_flush_bytes(char *err);

/* The same for a memory budget, before anything runs: 128 MiB when the device
 * cannot be asked (errors cleared), so a size check errs on the safe side. */
size_t cl_cuda_flush_budget(void);

/* Makes t ready for reps: the flush buffer (cl_cuda_flush_bytes) and the two
 * events. 0, or -1 with err set; cl_cuda_timing_free frees what was made. */
int cl_cuda_timing_init(cl_cuda_timing *t, char *err);

/* ceil(n / block) blocks into *blocks; -1 with err set when that exceeds the
 * grid's x limit of 2^31 - 1. */
int cl_cuda_blocks(uint64_t n, int block, unsigned *blocks, char *err);

/* The launch of func in a grid of blocks as a cl_launch: the shape, and the
 * static shared memory and registers per thread from cudaFuncGetAttributes
 * (one kernel per timed run). 0, or -1 with err set. */
int cl_cuda_describe(const void *func, dim3 grid, dim3 block, cl_launch *l, char *err);

/* Frees the flush buffer and destroys the events that exist; leaves the errors as they are. */
void cl_cuda_timing_free(cl_cuda_timing *t);

/* Reads the flush buffer through the L2 on stream 0 (common.cu says why a read); on failure "what: …" in err. */
int cl_cuda_flush_l2(const cl_cuda_timing *t, const char *what, char *err);

/* Holds stream 0 (unless t->unheld) and records e0 on it: the rep's work is
 * queued behind the hold, so a host descheduled while it enqueues adds no
 * idle time to the figure (common.cu says how). */
int cl_cuda_time_start(const cl_cuda_timing *t, char *err);

/* Records e1 on stream 0, releases the hold, waits for e1 ("what: …" when the
 * work failed) and writes the milliseconds between e0 and e1 to *ms. */
int cl_cuda_time_stop(const cl_cuda_timing *t, float *ms, const char *what, char *err);
/* cl_backend.set_rep_hook: what cl_cuda_time_stop calls after each rep it timed. */
void cl_cuda_set_rep_hook(void (*rep_done)(void));

/* cl_backend.conditions: the clocks NVML read after each rep since the last cl_cuda_timing_init (a
 * run's start), and the event overhead subtracted from those reps (cuda/clocks.cu, common.cu). */
int cl_cuda_conditions(cl_conditions *out);

/* ---- cuda/clocks.cu: NVML, loaded at run time (its header is not in every toolkit, and a machine
 * without it still times) ---- */
/* Starts a run's window of readings (cl_cuda_timing_init calls it). */
void cl_cuda_clocks_reset(void);
/* One reading of the current device's clocks and reasons into the window (after each timed rep). */
void cl_cuda_clocks_sample(void);
/* The window so far into out's clock fields (samples, sm_mhz_*, mem_mhz, reasons, unavailable). */
void cl_cuda_clocks_read(cl_conditions *out);

/* Reps whose hold ran out before the host released it (they ran unheld). */
int cl_cuda_holds_lapsed(void);

/* Whether the worker has made a device current (the backend's use_device):
 * until then nothing may create a context (admission has given it no slot). */
bool cl_cuda_in_use(void);

/* ---- a limit on how long the device may take (student kernels) ----
 * While a limit is set, every wait of the runners (cl_cuda_time_stop,
 * cl_cuda_synchronize) polls instead of blocking, and gives up past the
 * limit: the work is abandoned (a kernel cannot be stopped from the host),
 * cl_cuda_abandoned() says so from then on, and the worker leaves so that its
 * context, and the kernel in it, end with the process. */
void cl_cuda_set_limit(double ms, const char *who);    /* 0: none; who names the kernel in the error */
bool cl_cuda_abandoned(void);
/* Waits for everything queued on the device, within the limit. */
int cl_cuda_synchronize(const char *what, char *err);

/* ---- the reps' inputs, and the check that each rep computed its own result ----
 * One place for every family's runner, built-in variants and students' kernels alike: a kernel
 * must not be able to fake its time, by keeping an answer across launches (a naive matmul that
 * computed C once into a __device__ array and copied it afterwards measured 70x faster with its
 * check passed) or by being honest only on inputs it recognises (the run's seed is known, and the
 * %%kernel cell's quick check shows its inputs). So every launch but the last runs on inputs of
 * its own, generated on the device from cl_cuda_reps_seed (a seed the kernel cannot foresee and
 * that is never the run's) before the L2 flush, outside the timed window, with the output
 * poisoned before it as the family's check expects: the warm-up and counted launches
 * (CL_CUDA_REP_WARMUP) and every timed rep. After each timed rep's stop event,
 * cl_cuda_reps_keep may copy its output aside (device to device): CL_GPU_CHECKED_REPS reps are
 * kept, drawn with getrandom by reservoir sampling, so that every rep that ran, under --reps auto
 * too, is equally likely to be checked and none can tell (all run alike; the draw is made after
 * the rep). After the timed loop, cl_cuda_reps_verify regenerates each kept rep's inputs from its
 * seed, runs the family's trusted implementation on them (cuBLAS, CUB, a naive kernel: the
 * reference, which leaves its result in the output buffer) and compares; then one untimed launch
 * on the run's own seed (CL_CUDA_REP_FINAL) leaves the run's result, which the family copies back
 * and checks on the host as before. A kept rep that differs fails the run with "rep R of N
 * returned a wrong result on its own inputs (…)" when the run's own result is right (the
 * reference's on the seed); a kernel wrong on the run's inputs too is a plain bug, and the run
 * goes on so that the family's check names it in its own terms (the check fails the run). A
 * kernel that fakes a share f of the reps passes with probability about
 * (1 - f)^CL_GPU_CHECKED_REPS: at most one run in four when it fakes enough reps to move the
 * median. A built-in variant that is the reference itself (trusted) keeps
 * nothing and is not compared with itself; its inputs and poison are the same as everyone's, so
 * that figures compare. */
/* --check-reps all (cl_backend.set_check_reps): every timed rep is kept and checked, not
 * CL_GPU_CHECKED_REPS of them; the copies past those are allocated as the reps run (outside their
 * windows), and a run whose copies do not fit on the device fails saying so. */
void cl_cuda_set_check_reps(int all);
#define CL_CUDA_REPS_KEPT_MAX CL_MAX_REPS
#define CL_CUDA_REP_WARMUP (-1)         /* the warm-up and counted launches */
#define CL_CUDA_REP_FINAL (-2)          /* the untimed launch after the timed reps: the run's result */

/* The type of the values of an output, for the comparison and the message. */
typedef enum cl_cuda_value { CL_CUDA_F32, CL_CUDA_F64, CL_CUDA_I32, CL_CUDA_U32, CL_CUDA_I64 } cl_cuda_value;

/* Where each launch leaves its result, and how the check compares and names its values. */
typedef struct cl_cuda_output {
    void *dev;                          /* device: count values; the reference writes here too */
    size_t count;
    cl_cuda_value type;
    double atol;                        /* floats: how far an honest result may lie from the
                                           reference's (summation order, precision); 0: exact */
    const char *name;                   /* what the message calls it: "C" */
    size_t cols;                        /* 0: name[i] (or name alone for one value); else name[i / cols][i % cols] */
} cl_cuda_output;

typedef struct cl_cuda_reps {
    uint64_t seed;                      /* the run's: the final launch's inputs */
    uint64_t salt;                      /* random, per run: every other launch's seed */
    cl_cuda_output out;
    bool trusted;                       /* the variant measured is the reference: nothing kept */
    int offered;                        /* timed reps offered to the draw so far */
    int kept;                           /* copies filled, in rep order */
    bool all;                           /* --check-reps all: every rep kept, in rep order */
    int rep[CL_CUDA_REPS_KEPT_MAX];     /* the timed rep (0-based) each copy holds */
    void *copy[CL_CUDA_REPS_KEPT_MAX];  /* device, out.count values each: CL_GPU_CHECKED_REPS of them, or
                                         * under --check-reps all as many as were kept */
    unsigned long long *tally;          /* device: [0] values that differ, [1] the first one's index */
} cl_cuda_reps;

/* Bytes of one value of type t. */
size_t cl_cuda_value_bytes(cl_cuda_value t);

/* Readies r for a run on `seed` whose launches leave their result in *out (copied: its name must
 * outlive the run). trusted: the variant measured is the family's reference (see above). Allocates
 * the copies; 0, or -1 with err set (then and after a run, cl_cuda_reps_free). */
int cl_cuda_reps_init(cl_cuda_reps *r, uint64_t seed, const cl_cuda_output *out, bool trusted, char *err);
/* The seed of a launch's inputs: timed rep `rep` (0-based), CL_CUDA_REP_WARMUP or
 * CL_CUDA_REP_FINAL. The run's seed for the final launch only; for every other, a seed that is not
 * the run's and that the kernel cannot foresee. */
uint64_t cl_cuda_reps_seed(const cl_cuda_reps *r, int rep);
/* After timed rep `rep` is timed (outside its window): its output copied aside when the draw
 * keeps it. 0, or -1 with err. */
int cl_cuda_reps_keep(cl_cuda_reps *r, int rep, char *err);
/* cl_cuda_reps_verify's steps. differ: kept copy `slot` compared with what out.dev holds now
 * (queued before), within the launch limit: tally[0] values differ, the first at tally[1]; 0, or
 * -1 with err set. finding: "rep R of N returned a wrong result on its own inputs (…)" into
 * finding (CL_ERR_LEN bytes) for the slot's rep from its tally, N the timed reps run; 0, or -1
 * with err set. hold: out.dev copied into copy `slot` (the slot's rep is done with). */
int cl_cuda_reps_differ(cl_cuda_reps *r, int slot, unsigned long long tally[2], char *err);
int cl_cuda_reps_finding(const cl_cuda_reps *r, int slot, const unsigned long long tally[2], int reps_run,
                         char *finding, char *err);
int cl_cuda_reps_hold(cl_cuda_reps *r, int slot, char *err);
void cl_cuda_reps_free(cl_cuda_reps *r);

/* After the timed loop (tm: the run's timings, tm->reps timed reps run): for each kept rep, in rep
 * order, reference(seed) regenerates that rep's inputs from seed and queues the family's trusted
 * implementation on them, its result in out.dev (0, or -1 with err set), and the two are compared;
 * then last() queues the final launch on the run's seed (CL_CUDA_REP_FINAL; 0, or -1 with err set),
 * whose result the family copies back. When a kept rep differs, the reference's result on the
 * run's seed is held in its copy before last() and compared with the final launch's: right, and
 * the run fails with the rep's finding; wrong too, and it goes on (0) to the family's check.
 * tm->reps_checked: the kept reps found right (all of them for the reference itself). 0, or -1
 * with err set. */
template <class Reference, class Last>
int cl_cuda_reps_verify(cl_cuda_reps *r, cl_times *tm, char *err, Reference reference, Last last)
{
    int reps_run = tm->reps;
    tm->reps_checked = 0;
    if (r->trusted) {
        cl_times_trusted(tm);           /* the reference itself: nothing to check it against */
        return last();
    }
    if (r->kept == 0) {     /* rep 0 is always kept: a loop that timed no rep, or forgot to keep */
        snprintf(err, CL_ERR_LEN, "no timed rep was kept for the check (%d timed reps): an error in cudalab",
                 reps_run);
        return -1;
    }
    unsigned long long tally[2];
    for (int s = 0; s < r->kept; s++) {
        if (reference(cl_cuda_reps_seed(r, r->rep[s])) != 0 || cl_cuda_reps_differ(r, s, tally, err) != 0)
            return -1;
        if (tally[0] == 0) {
            tm->reps_checked++;
            continue;
        }
        char finding[CL_ERR_LEN];
        if (cl_cuda_reps_finding(r, s, tally, reps_run, finding, err) != 0 ||
            reference(cl_cuda_reps_seed(r, CL_CUDA_REP_FINAL)) != 0 || cl_cuda_reps_hold(r, s, err) != 0 ||
            last() != 0 || cl_cuda_reps_differ(r, s, tally, err) != 0)
            return -1;
        if (tally[0] != 0)
            return 0;       /* wrong on the run's own inputs too: the family's check says where */
        snprintf(err, CL_ERR_LEN, "%s", finding);
        return -1;
    }
    return last();
}

/* ---- cuda/counters.cu: --counters, through CUPTI's range profiler (opened at run time) ---- */
/* cl_backend.set_counters and cl_backend.counters. */
void cl_cuda_set_counters(int on);
int cl_cuda_counters(cl_counters *out);
/* Starts a run's account (cl_cuda_timing_init calls it): nothing counted yet. */
void cl_cuda_counters_reset(void);
/* Whether the current run is still to be counted (--counters asked, nothing counted yet). */
bool cl_cuda_counters_due(void);
/* The counted launches (cl_cuda_counted below): begin enables the profiler for the run (false:
 * nothing to count, or it cannot be; the run's counters then say why); each pass brackets one
 * launch, pass_end saying whether another pass is needed; end reads the counts. A profiler that
 * cannot start or read leaves the run's counters "unavailable" with the reason and never fails
 * the run. */
bool cl_cuda_counters_begin(void);
/* Whether a pass is being counted now (between pass_begin and pass_end). */
bool cl_cuda_counters_in_pass(void);
bool cl_cuda_counters_pass_begin(void);
bool cl_cuda_counters_pass_end(bool launched);
void cl_cuda_counters_end(void);

/* The counted launches of a runner: launch() (0, or -1 with err set) again, once per pass the
 * counters need, each from an L2 flushed as a timed rep's is, when the run counts; after the
 * warm-up, which it waits for within the launch limit (a student's kernel proves there that it
 * ends), and before the timed reps, which stay unprofiled. 0 when nothing is counted. */
template <class Launch>
int cl_cuda_counted(const cl_cuda_timing *t, char *err, Launch launch)
{
    if (!cl_cuda_counters_due())
        return 0;
    if (cl_cuda_synchronize("warm-up runs", err) != 0)
        return -1;
    if (!cl_cuda_counters_begin())
        return 0;
    bool more = true;
    int rc = 0;
    while (more && rc == 0) {
        /* the counters are the whole GPU's: the flush must be over before the range starts */
        if ((rc = cl_cuda_flush_l2(t, "flushing L2", err)) != 0 ||
            (rc = cl_cuda_synchronize("flushing L2", err)) != 0 || !cl_cuda_counters_pass_begin())
            break;
        rc = launch();
        more = cl_cuda_counters_pass_end(rc == 0) && rc == 0;
        if (rc == 0 && (rc = cl_cuda_synchronize("a counted run", err)) != 0)
            break;
    }
    if (rc == 0)
        cl_cuda_counters_end();
    return rc;
}

#endif
