/* counters.cu — --counters: what one run of a variant did in the memory system and on the SMs,
 * read from the GPU's performance counters through CUPTI's range profiler.
 *
 * The lecture's models count global loads and FLOPs; the hardware answers with DRAM bytes, cache
 * hit rates, occupancy, bank conflicts, sectors per request and active lanes. A student who sees
 * the naive matmul beat its own CGMA bound can read here that the L1 and L2 served most of the loads
 * the model sends to DRAM.
 *
 * How a run is counted: the runner launches the variant again, after its warm-up and before its
 * timed reps, once per pass the counters need (cl_cuda_counted in common.h): each pass flushes the
 * L2 as a timed rep does, then launches inside one user range, so the counts are those of one
 * launch from a cold cache, whatever kernels it is made of. (CUPTI's kernel replay would restore
 * memory between its passes through the L2 and leave the inputs there: a 1024³ matmul then reads
 * almost nothing from DRAM.) A pass is one more untimed launch, like a warm-up: every runner's
 * launch is complete in itself. The timed reps are never profiled.
 *
 * libcupti ships with the toolkit, not with the driver, and the pip install of cudalab[cuda13]
 * does not bring it: it is opened at run time with dlopen (beside the CUDA runtime this library was
 * loaded with, else by name), and the few functions used are taken from it by name, typed from
 * CUPTI's own headers. Without it, or where the driver keeps the counters to administrators, a run
 * says "unavailable: <reason and what to do>" and times as before. What is set up once per process
 * (the chip's configuration for the metrics below) is kept; the profiler is enabled only around
 * the counted launches.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include "common.h"

/* ---- the metrics: X(slot, CUPTI metric name) ---- */
#define COUNTER_METRICS(X)                                                  \
    X(DRAM_READ, "dram__bytes_read.sum")                                    \
    X(DRAM_WRITE, "dram__bytes_write.sum")                                  \
    X(L2_HIT_PCT, "lts__t_sector_hit_rate.pct")                             \
    X(L1_HIT_PCT, "l1tex__t_sector_hit_rate.pct")                           \
    X(OCCUPANCY_PCT, "sm__warps_active.avg.pct_of_peak_sustained_active")   \
    X(BANK_LD, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")  \
    X(BANK_ST, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")  \
    X(GLD_SECTORS, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")        \
    X(GLD_REQUESTS, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")      \
    X(WARP_INST, "smsp__inst_executed.sum")                                 \
    X(THREAD_INST, "smsp__thread_inst_executed.sum")                        \
    X(FADD, "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum")          \
    X(FMUL, "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum")          \
    X(FFMA, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum")

#define METRIC_SLOT_(slot, name) M_##slot,
enum { COUNTER_METRICS(METRIC_SLOT_) M_COUNT };
#define METRIC_NAME_(slot, name) name,
static const char *metric_names[M_COUNT] = { COUNTER_METRICS(METRIC_NAME_) };

/* One range: the whole launch, its kernels added up by CUPTI. */
#define MAX_RANGES 1
/* Passes a configuration may ask for before the run gives up counting (4 on an H100). */
#define MAX_PASSES 64

/* ---- libcupti, opened at run time ---- */
#define CUPTI_FUNCTIONS(X)                                                                          \
    X(cuptiGetResultString) X(cuptiProfilerInitialize) X(cuptiDeviceGetChipName)                   \
    X(cuptiProfilerGetCounterAvailability) X(cuptiProfilerHostInitialize)                          \
    X(cuptiProfilerHostDeinitialize) X(cuptiProfilerHostConfigAddMetrics)                          \
    X(cuptiProfilerHostGetConfigImageSize) X(cuptiProfilerHostGetConfigImage)                      \
    X(cuptiProfilerHostEvaluateToGpuValues)                     \
    X(cuptiRangeProfilerEnable) X(cuptiRangeProfilerDisable) X(cuptiRangeProfilerGetCounterDataSize) \
    X(cuptiRangeProfilerCounterDataImageInitialize) X(cuptiRangeProfilerSetConfig)                 \
    X(cuptiRangeProfilerStart) X(cuptiRangeProfilerStop) X(cuptiRangeProfilerPushRange)            \
    X(cuptiRangeProfilerPopRange) X(cuptiRangeProfilerDecodeData) X(cuptiRangeProfilerGetCounterDataInfo)

#define CUPTI_POINTER_(f) decltype(&::f) f;
static struct {
    CUPTI_FUNCTIONS(CUPTI_POINTER_)
} cupti;

typedef CUresult (*ctx_get_current_fn)(CUcontext *);

static struct {
    bool wanted;                    /* --counters, for the runs from now on */
    bool tried;                     /* the one-time set-up below was attempted */
    char why[200];                  /* why nothing can be counted in this process ("" when ready) */
    ctx_get_current_fn ctx_current;
    int device;                     /* the CUDA device the configuration is for */
    CUpti_Profiler_Host_Object *host;
    uint8_t *config;
    size_t config_size;
    const char *metrics[M_COUNT];   /* the metrics this chip has, in slot order */
    int index[M_COUNT];             /* a slot's place in metrics, or -1 */
    int nmetrics;
    CUpti_RangeProfiler_Object *profiler;   /* enabled between begin and end */
    int pass;                       /* passes done of the launch being counted */
    bool in_pass;                   /* between a pass's begin and end */
    uint8_t *data;                  /* the counter data image of the launch being counted */
    size_t data_size;
} cp = { false, false, "", NULL, -1, NULL, NULL, 0, {}, {}, 0, NULL, 0, false, NULL, 0 };

static cl_counters current;         /* the current run's (cl_cuda_counters_reset starts a run) */

/* What a CUPTI error means to a student, with what to do where something can be done. */
static void say_cupti(char *out, size_t len, const char *what, CUptiResult rc)
{
    if (rc == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) {
        snprintf(out, len, "this driver lets only administrators read GPU performance counters: run as "
                 "root, or set NVreg_RestrictProfilingToAdminUsers=0 for the nvidia module "
                 "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)");
        return;
    }
    if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        snprintf(out, len, "another profiler (compute-sanitizer, Nsight) holds the counters of this process");
        return;
    }
    const char *s = NULL;
    if (cupti.cuptiGetResultString)
        cupti.cuptiGetResultString(rc, &s);
    snprintf(out, len, "%s: %s", what, s ? s : "CUPTI error");
}

#define CUPTI_TRY(what, call)                                    \
    do {                                                         \
        CUptiResult rc_ = (call);                                \
        if (rc_ != CUPTI_SUCCESS) {                              \
            say_cupti(cp.why, sizeof cp.why, (what), rc_);       \
            return false;                                        \
        }                                                        \
    } while (0)

/* libcupti.so.13: beside the CUDA runtime this library uses (a toolkit's lib64, or the pip wheels'
 * nvidia/cu13/lib), in the toolkit's extras, else wherever the loader finds it. */
static void *open_cupti(void)
{
    static const char *const names[] = { "libcupti.so.13", "libcupti.so" };
    Dl_info info;
    char path[4096];
    if (dladdr((void *)&cudaGetDeviceCount, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        int dir = slash ? (int)(slash - info.dli_fname) : 0;
        static const char *const near[] = { "", "/../extras/CUPTI/lib64" };
        for (const char *n : names)
            for (const char *sub : near) {
                snprintf(path, sizeof path, "%.*s%s/%s", dir, info.dli_fname, sub, n);
                if (void *lib = dir ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL)
                    return lib;
            }
    }
    for (const char *n : names)
        if (void *lib = dlopen(n, RTLD_NOW | RTLD_LOCAL))
            return lib;
    return NULL;
}

static bool load_cupti(void)
{
    void *lib = open_cupti();
    if (!lib) {
        snprintf(cp.why, sizeof cp.why, "CUPTI cannot be loaded (libcupti.so.13 is part of the CUDA "
                 "toolkit: install it, or put its lib64 on LD_LIBRARY_PATH)");
        return false;
    }
#define CUPTI_LOOKUP_(f)                                                                        \
    if (!(*(void **)&cupti.f = dlsym(lib, #f))) {                                               \
        snprintf(cp.why, sizeof cp.why, "this CUPTI lacks the range profiler (%s): CUDA 12.6 or " \
                 "later is needed", #f);                                                        \
        return false;                                                                           \
    }
    CUPTI_FUNCTIONS(CUPTI_LOOKUP_)
#undef CUPTI_LOOKUP_
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", (void **)&cp.ctx_current, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess || q != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();
        snprintf(cp.why, sizeof cp.why, "the driver has no cuCtxGetCurrent");
        return false;
    }
    CUpti_Profiler_Initialize_Params init = { CUpti_Profiler_Initialize_Params_STRUCT_SIZE, NULL };
    CUPTI_TRY("cuptiProfilerInitialize", cupti.cuptiProfilerInitialize(&init));
    return true;
}

/* A fresh host object for the chip (the one before, if any, released). */
static bool new_host(const char *chip, const uint8_t *avail)
{
    if (cp.host) {
        CUpti_Profiler_Host_Deinitialize_Params d = { CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE };
        d.pHostObject = cp.host;
        cupti.cuptiProfilerHostDeinitialize(&d);
        cp.host = NULL;
    }
    CUpti_Profiler_Host_Initialize_Params hi = { CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE };
    hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    hi.pChipName = chip;
    hi.pCounterAvailabilityImage = avail;
    CUPTI_TRY("cuptiProfilerHostInitialize", cupti.cuptiProfilerHostInitialize(&hi));
    cp.host = hi.pHostObject;
    return true;
}

static bool config_add(const char **names, int count)
{
    CUpti_Profiler_Host_ConfigAddMetrics_Params add = { CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE };
    add.pHostObject = cp.host;
    add.ppMetricNames = names;
    add.numMetrics = (size_t)count;
    return cupti.cuptiProfilerHostConfigAddMetrics(&add) == CUPTI_SUCCESS;
}

/* The metrics into the host object: all at once, else (one is unknown to this chip) one by one on a
 * fresh object, keeping those it has: a metric a newer or older chip lacks leaves its fields NaN,
 * not the whole run uncounted. */
static bool add_metrics(const char *chip, const uint8_t *avail)
{
    if (!new_host(chip, avail))
        return false;
    bool all = config_add(metric_names, M_COUNT);
    if (!all && !new_host(chip, avail))
        return false;
    cp.nmetrics = 0;
    for (int m = 0; m < M_COUNT; m++) {
        bool ok = all || config_add(&metric_names[m], 1);
        cp.index[m] = ok ? cp.nmetrics : -1;
        if (ok)
            cp.metrics[cp.nmetrics++] = metric_names[m];
    }
    if (cp.nmetrics > 0)
        return true;
    snprintf(cp.why, sizeof cp.why, "this GPU's counters have none of the metrics --counters reads");
    return false;
}

/* Once per process: libcupti, and the configuration image of the metrics for this device's chip. */
static bool set_up(int dev)
{
    CUcontext ctx = NULL;
    if (!load_cupti())
        return false;
    if (cp.ctx_current(&ctx) != CUDA_SUCCESS || !ctx) {
        snprintf(cp.why, sizeof cp.why, "no current CUDA context");
        return false;
    }
    CUpti_Device_GetChipName_Params chip = { CUpti_Device_GetChipName_Params_STRUCT_SIZE };
    chip.deviceIndex = (size_t)dev;
    CUPTI_TRY("cuptiDeviceGetChipName", cupti.cuptiDeviceGetChipName(&chip));
    CUpti_Profiler_GetCounterAvailability_Params av = { CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE };
    av.ctx = ctx;
    CUPTI_TRY("cuptiProfilerGetCounterAvailability", cupti.cuptiProfilerGetCounterAvailability(&av));
    uint8_t *avail = (uint8_t *)malloc(av.counterAvailabilityImageSize ? av.counterAvailabilityImageSize : 1);
    if (!avail) {
        snprintf(cp.why, sizeof cp.why, "out of host memory");
        return false;
    }
    av.pCounterAvailabilityImage = avail;
    CUptiResult rc = cupti.cuptiProfilerGetCounterAvailability(&av);
    bool ok = rc == CUPTI_SUCCESS;
    if (!ok)
        say_cupti(cp.why, sizeof cp.why, "cuptiProfilerGetCounterAvailability", rc);
    ok = ok && add_metrics(chip.pChipName, avail);
    free(avail);
    if (!ok)
        return false;
    CUpti_Profiler_Host_GetConfigImageSize_Params sz = { CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE };
    sz.pHostObject = cp.host;
    CUPTI_TRY("cuptiProfilerHostGetConfigImageSize", cupti.cuptiProfilerHostGetConfigImageSize(&sz));
    if (!(cp.config = (uint8_t *)malloc(sz.configImageSize))) {
        snprintf(cp.why, sizeof cp.why, "out of host memory");
        return false;
    }
    CUpti_Profiler_Host_GetConfigImage_Params img = { CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE };
    img.pHostObject = cp.host;
    img.configImageSize = cp.config_size = sz.configImageSize;
    img.pConfigImage = cp.config;
    CUPTI_TRY("cuptiProfilerHostGetConfigImage", cupti.cuptiProfilerHostGetConfigImage(&img));
    cp.device = dev;
    return true;
}

/* ---- one counted launch ---- */

static void disable(void)
{
    if (cp.profiler) {
        CUpti_RangeProfiler_Disable_Params d = { CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE };
        d.pRangeProfilerObject = cp.profiler;
        cupti.cuptiRangeProfilerDisable(&d);
        cp.profiler = NULL;
    }
    free(cp.data);
    cp.data = NULL;
}

/* Enables the profiler on ctx with an empty counter data image, one user range, user replay. */
static bool enable(CUcontext ctx)
{
    CUpti_RangeProfiler_Enable_Params en = { CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE };
    en.ctx = ctx;
    CUPTI_TRY("cuptiRangeProfilerEnable", cupti.cuptiRangeProfilerEnable(&en));
    cp.profiler = en.pRangeProfilerObject;
    CUpti_RangeProfiler_GetCounterDataSize_Params sz = { CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE };
    sz.pRangeProfilerObject = cp.profiler;
    sz.pMetricNames = cp.metrics;
    sz.numMetrics = (size_t)cp.nmetrics;
    sz.maxNumOfRanges = MAX_RANGES;
    sz.maxNumRangeTreeNodes = MAX_RANGES;
    CUPTI_TRY("cuptiRangeProfilerGetCounterDataSize", cupti.cuptiRangeProfilerGetCounterDataSize(&sz));
    if (!(cp.data = (uint8_t *)calloc(1, sz.counterDataSize))) {
        snprintf(cp.why, sizeof cp.why, "out of host memory");
        return false;
    }
    cp.data_size = sz.counterDataSize;
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params init = {
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE };
    init.pRangeProfilerObject = cp.profiler;
    init.counterDataSize = cp.data_size;
    init.pCounterData = cp.data;
    CUPTI_TRY("cuptiRangeProfilerCounterDataImageInitialize", cupti.cuptiRangeProfilerCounterDataImageInitialize(&init));
    CUpti_RangeProfiler_SetConfig_Params cfg = { CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE };
    cfg.pRangeProfilerObject = cp.profiler;
    cfg.configSize = cp.config_size;
    cfg.pConfig = cp.config;
    cfg.counterDataImageSize = cp.data_size;
    cfg.pCounterDataImage = cp.data;
    cfg.range = CUPTI_UserRange;
    cfg.replayMode = CUPTI_UserReplay;
    cfg.maxRangesPerPass = MAX_RANGES;
    cfg.numNestingLevels = 1;
    cfg.minNestingLevel = 1;
    cfg.passIndex = 0;
    cfg.targetNestingLevel = 1;
    CUPTI_TRY("cuptiRangeProfilerSetConfig", cupti.cuptiRangeProfilerSetConfig(&cfg));
    cp.pass = 0;
    return true;
}

static double metric(const double *v, int slot)
{
    return cp.index[slot] >= 0 ? v[cp.index[slot]] : NAN;
}

static double ratio(double num, double den)
{
    return den > 0 ? num / den : NAN;
}

/* Reads the range (the launch) into current. */
static bool evaluate(void)
{
    CUpti_RangeProfiler_DecodeData_Params dd = { CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE };
    dd.pRangeProfilerObject = cp.profiler;
    CUPTI_TRY("cuptiRangeProfilerDecodeData", cupti.cuptiRangeProfilerDecodeData(&dd));
    CUpti_RangeProfiler_GetCounterDataInfo_Params info = { CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE };
    info.pCounterDataImage = cp.data;
    info.counterDataImageSize = cp.data_size;
    CUPTI_TRY("cuptiRangeProfilerGetCounterDataInfo", cupti.cuptiRangeProfilerGetCounterDataInfo(&info));
    if (info.numTotalRanges != 1 || dd.numOfRangeDropped > 0) {
        snprintf(cp.why, sizeof cp.why, "the profiler returned %zu ranges for one launch", info.numTotalRanges);
        return false;
    }
    double v[M_COUNT];
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = { CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE };
    ev.pHostObject = cp.host;
    ev.pCounterDataImage = cp.data;
    ev.counterDataImageSize = cp.data_size;
    ev.rangeIndex = 0;
    ev.ppMetricNames = cp.metrics;
    ev.numMetrics = (size_t)cp.nmetrics;
    ev.pMetricValues = v;
    CUPTI_TRY("cuptiProfilerHostEvaluateToGpuValues", cupti.cuptiProfilerHostEvaluateToGpuValues(&ev));
    current.measured = 1;
    current.passes = cp.pass;
    snprintf(current.source, sizeof current.source, "hardware (CUPTI range profiler)");
    current.dram_read_bytes = metric(v, M_DRAM_READ);
    current.dram_write_bytes = metric(v, M_DRAM_WRITE);
    current.l2_hit_pct = metric(v, M_L2_HIT_PCT);
    current.l1_hit_pct = metric(v, M_L1_HIT_PCT);
    current.achieved_occupancy_pct = metric(v, M_OCCUPANCY_PCT);
    current.shared_bank_conflicts = metric(v, M_BANK_LD) + metric(v, M_BANK_ST);
    current.global_load_sectors_per_request = ratio(metric(v, M_GLD_SECTORS), metric(v, M_GLD_REQUESTS));
    current.warp_execution_efficiency_pct = 100 * ratio(metric(v, M_THREAD_INST), 32 * metric(v, M_WARP_INST));
    current.flop = metric(v, M_FADD) + metric(v, M_FMUL) + 2 * metric(v, M_FFMA);
    return true;
}

/* ---- the backend's side ---- */

void cl_cuda_set_counters(int on)
{
    cp.wanted = on != 0;
}

void cl_cuda_counters_reset(void)
{
    memset(&current, 0, sizeof current);
    snprintf(current.unavailable, sizeof current.unavailable, "this run has no counted launch");
}

/* A failure of this launch's profiling into the run's account (the next run tries again). */
static void unavailable_now(const char *fallback)
{
    snprintf(current.unavailable, sizeof current.unavailable, "%s", cp.why[0] ? cp.why : fallback);
    cp.why[0] = '\0';
    disable();
}

bool cl_cuda_counters_due(void)
{
    return cp.wanted && !current.measured;
}

bool cl_cuda_counters_begin(void)
{
    if (!cl_cuda_counters_due())
        return false;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(current.unavailable, sizeof current.unavailable, "no usable CUDA device");
        return false;
    }
    if (!cp.tried) {
        cp.tried = true;
        if (set_up(dev))
            cp.why[0] = '\0';
    }
    if (cp.why[0] || cp.device != dev) {
        snprintf(current.unavailable, sizeof current.unavailable, "%s",
                 cp.why[0] ? cp.why : "the counters were set up for another device of this worker");
        return false;
    }
    CUcontext ctx = NULL;
    if (cp.ctx_current(&ctx) != CUDA_SUCCESS || !ctx) {
        snprintf(current.unavailable, sizeof current.unavailable, "no current CUDA context");
        return false;
    }
    if (!enable(ctx)) {
        unavailable_now("the profiler could not be enabled");
        return false;
    }
    return true;
}

bool cl_cuda_counters_in_pass(void)
{
    return cp.in_pass;
}

bool cl_cuda_counters_pass_begin(void)
{
    CUpti_RangeProfiler_Start_Params st = { CUpti_RangeProfiler_Start_Params_STRUCT_SIZE };
    st.pRangeProfilerObject = cp.profiler;
    CUpti_RangeProfiler_PushRange_Params push = { CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE };
    push.pRangeProfilerObject = cp.profiler;
    push.pRangeName = "launch";
    CUptiResult rc = cupti.cuptiRangeProfilerStart(&st);
    if (rc == CUPTI_SUCCESS && (rc = cupti.cuptiRangeProfilerPushRange(&push)) == CUPTI_SUCCESS)
        return cp.in_pass = true;
    say_cupti(cp.why, sizeof cp.why, "starting a pass", rc);
    unavailable_now("a pass did not start");
    return false;
}

bool cl_cuda_counters_pass_end(bool launched)
{
    cp.in_pass = false;
    if (!cp.profiler)
        return false;
    CUpti_RangeProfiler_PopRange_Params pop = { CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE };
    pop.pRangeProfilerObject = cp.profiler;
    CUpti_RangeProfiler_Stop_Params sp = { CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE };
    sp.pRangeProfilerObject = cp.profiler;
    CUptiResult rc = cupti.cuptiRangeProfilerPopRange(&pop);
    if (rc == CUPTI_SUCCESS)
        rc = cupti.cuptiRangeProfilerStop(&sp);
    if (!launched || rc != CUPTI_SUCCESS) {
        if (rc != CUPTI_SUCCESS)
            say_cupti(cp.why, sizeof cp.why, "ending a pass", rc);
        unavailable_now("the counted launch failed");
        return false;
    }
    if (++cp.pass >= MAX_PASSES && !sp.isAllPassSubmitted) {
        snprintf(cp.why, sizeof cp.why, "the counters needed more than %d passes", MAX_PASSES);
        unavailable_now("");
        return false;
    }
    return !sp.isAllPassSubmitted;
}

void cl_cuda_counters_end(void)
{
    if (!cp.profiler)
        return;                     /* a pass failed: the run says why */
    if (evaluate())
        disable();
    else
        unavailable_now("the counts could not be read");
}

int cl_cuda_counters(cl_counters *out)
{
    if (!cp.wanted)
        return -1;
    *out = current;
    return 0;
}
