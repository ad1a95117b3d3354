/* clocks.cu — the GPU's clocks beside every timed run, read through NVML.
 *
 * A student comparing two runs needs to know whether the GPU ran both at the same clock: a GPU that
 * hits its power cap or heats up lowers its SM clock, and the same kernel then takes longer. NVML
 * (libnvidia-ml.so.1, installed with the driver) says the current SM and memory clocks and why a
 * clock is held down. Its header is not part of every CUDA toolkit (not of the one CI builds with),
 * so the library is opened at run time with dlopen and the few functions used are declared here,
 * with NVML's documented signatures and constants. Without NVML, or when a call fails, the run says
 * "unavailable: <reason>" and times as before.
 *
 * The window: cl_cuda_clocks_reset at a run's start (cl_cuda_timing_init), one reading after each
 * timed rep (cl_cuda_time_stop: the GPU has just finished the rep, its clocks are still the rep's),
 * cl_cuda_clocks_read when the front-end writes the run. A reading costs a few microseconds of host
 * time between reps, outside the events.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

typedef int nvml_return;                                    /* nvmlReturn_t: 0 = NVML_SUCCESS */
typedef struct nvml_device_st *nvml_device;                 /* nvmlDevice_t: an opaque handle */
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };             /* nvmlClockType_t */

static struct {
    bool tried;
    char why[160];                                          /* "" once NVML answers */
    nvml_device dev;
    int dev_index;                                          /* the CUDA device the handle is for */
    nvml_return (*clock)(nvml_device, int, unsigned *);
    nvml_return (*reasons)(nvml_device, unsigned long long *);
    const char *(*error)(nvml_return);
    unsigned limit_mhz;
} nvml = { false, "", NULL, -1, NULL, NULL, NULL, 0 };

static cl_conditions window;

static bool fail(const char *what, nvml_return rc)
{
    snprintf(nvml.why, sizeof nvml.why, "%s: %s", what, nvml.error ? nvml.error(rc) : "error");
    return false;
}

/* NVML for the current CUDA device, found by its PCI bus id (NVML's device order is not CUDA's). */
static bool nvml_ready(void)
{
    int cur = 0;
    if (cudaGetDevice(&cur) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(nvml.why, sizeof nvml.why, "no current CUDA device");
        return false;
    }
    if (nvml.tried)
        return nvml.why[0] == '\0' && nvml.dev_index == cur;
    nvml.tried = true;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(nvml.why, sizeof nvml.why, "NVML cannot be loaded (%s)", e ? e : "libnvidia-ml.so.1");
        return false;
    }
    nvml_return (*init)(void) = (nvml_return(*)(void))dlsym(lib, "nvmlInit_v2");
    nvml_return (*by_bus)(const char *, nvml_device *) =
        (nvml_return(*)(const char *, nvml_device *))dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    nvml_return (*max_clock)(nvml_device, int, unsigned *) =
        (nvml_return(*)(nvml_device, int, unsigned *))dlsym(lib, "nvmlDeviceGetMaxClockInfo");
    nvml.clock = (nvml_return(*)(nvml_device, int, unsigned *))dlsym(lib, "nvmlDeviceGetClockInfo");
    nvml.error = (const char *(*)(nvml_return))dlsym(lib, "nvmlErrorString");
    /* renamed in NVML 12.2 (clock "events"); the old name stays for older drivers */
    nvml.reasons = (nvml_return(*)(nvml_device, unsigned long long *))dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!nvml.reasons)
        nvml.reasons = (nvml_return(*)(nvml_device, unsigned long long *))dlsym(
            lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (!init || !by_bus || !max_clock || !nvml.clock || !nvml.reasons) {
        snprintf(nvml.why, sizeof nvml.why, "this NVML lacks the clock functions");
        return false;
    }
    char bus[32];
    cudaError_t crc = cudaDeviceGetPCIBusId(bus, sizeof bus, cur);
    if (crc != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(nvml.why, sizeof nvml.why, "cudaDeviceGetPCIBusId: %s", cudaGetErrorString(crc));
        return false;
    }
    nvml_return rc;
    if ((rc = init()) != 0)
        return fail("nvmlInit", rc);
    if ((rc = by_bus(bus, &nvml.dev)) != 0)
        return fail("nvmlDeviceGetHandleByPciBusId", rc);
    if ((rc = max_clock(nvml.dev, NVML_CLOCK_SM, &nvml.limit_mhz)) != 0)
        return fail("nvmlDeviceGetMaxClockInfo", rc);
    nvml.dev_index = cur;
    return true;
}

void cl_cuda_clocks_reset(void)
{
    memset(&window, 0, sizeof window);
}

void cl_cuda_clocks_sample(void)
{
    if (!nvml_ready())
        return;
    unsigned sm = 0, mem = 0;
    unsigned long long why = 0;
    nvml_return rc;
    if ((rc = nvml.clock(nvml.dev, NVML_CLOCK_SM, &sm)) != 0 || (rc = nvml.clock(nvml.dev, NVML_CLOCK_MEM, &mem)) != 0 ||
        (rc = nvml.reasons(nvml.dev, &why)) != 0) {
        snprintf(window.unavailable, sizeof window.unavailable, "an NVML reading failed: %s",
                 nvml.error ? nvml.error(rc) : "error");
        return;
    }
    if (window.samples == 0 || (int)sm < window.sm_mhz_min)
        window.sm_mhz_min = (int)sm;
    if ((int)sm > window.sm_mhz_max)
        window.sm_mhz_max = (int)sm;
    window.mem_mhz = (int)mem;
    window.reasons |= why;
    window.samples++;
}

void cl_cuda_clocks_read(cl_conditions *out)
{
    out->samples = window.samples;
    out->sm_mhz_min = window.sm_mhz_min;
    out->sm_mhz_max = window.sm_mhz_max;
    out->sm_mhz_limit = window.samples ? (int)nvml.limit_mhz : 0;
    out->mem_mhz = window.mem_mhz;
    out->reasons = window.reasons;
    if (window.samples)
        out->unavailable[0] = '\0';
    else
        snprintf(out->unavailable, sizeof out->unavailable, "%s",
                 window.unavailable[0] ? window.unavailable
                 : nvml.why[0]         ? nvml.why
                                       : "no rep was timed with events");
}
