/* backend_load.c — chooses CUDA or the CPU for this process, once, and says why.
 *
 * The CUDA backend lives in libcudalab_cuda.so so that a build without nvcc,
 * a machine without a driver and the kernel process itself never map CUDA.
 * The worker dlopen()s it here; any step that fails (library missing, symbol
 * missing, ABI mismatch, no driver, no device, device unusable) falls back to
 * the CPU backend with a one-line reason that %device and every result show.
 *
 * The library is never dlclose()d: the static CUDA runtime registers exit
 * handlers and threads, and unloading it under them is not worth the risk for
 * a few megabytes of mappings in a short-lived worker.
 */
#include "exec/backend_load.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "exec/admission.h"
#include "cudalab/host.h"
#include "base/text.h"

#define CUDA_LIB_NAME "libcudalab_cuda.so"

typedef const cl_backend *(*backend_entry)(void);

static const cl_backend *chosen;
static char chosen_note[CL_ERR_LEN + 128];

/* Notes are one line and may be cut short: a long dlerror() should not be
 * an error of its own. */
static void note_set(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void note_set(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* <dir of /proc/self/exe>/../lib/cudalab/libcudalab_cuda.so: the layout of
 * both the build tree (build/bin, build/lib) and an install (PREFIX/bin, PREFIX/lib). */
static int default_lib_path(char *buf, size_t len)
{
    char dir[PATH_MAX];
    if (exe_dir(dir, sizeof dir) != 0)
        return -1;
    int w = snprintf(buf, len, "%s/../lib/cudalab/" CUDA_LIB_NAME, dir);
    return w > 0 && (size_t)w < len ? 0 : -1;
}

static bool backend_complete(const cl_backend *b)
{
    return b->name && b->device_count && b->device_props && b->versions && b->use_device;
}

/* Loads the CUDA backend table, or returns NULL with the reason in why. */
static const cl_backend *cuda_load(char *why, size_t len)
{
    static const cl_backend *loaded;
    if (loaded)
        return loaded;              /* asked again while waiting for a GPU */
    char path[PATH_MAX + 64];
    const char *env = getenv("CUDALAB_CUDA_LIB");
    if (env && *env) {
        if (strlen(env) >= sizeof path) {
            note_set(why, len, "CUDALAB_CUDA_LIB is longer than a path can be");
            return NULL;
        }
        memcpy(path, env, strlen(env) + 1);
    } else if (default_lib_path(path, sizeof path) != 0) {
        note_set(why, len, "cannot locate " CUDA_LIB_NAME ": /proc/self/exe is unreadable");
        return NULL;
    } else if (access(path, F_OK) != 0 && errno == ENOENT) {
        note_set(why, len, "CUDA backend not built (no nvcc at build time)");
        return NULL;
    }

    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        note_set(why, len, "cannot load " CUDA_LIB_NAME ": %s", e ? e : path);
        return NULL;
    }
    (void)dlerror();
    void *sym = dlsym(lib, "cl_cuda_backend");
    if (!sym) {
        note_set(why, len, "cannot load " CUDA_LIB_NAME ": %s has no cl_cuda_backend", path);
        return NULL;
    }
    /* ISO C has no cast from object to function pointer; POSIX guarantees the
     * representation is the same, so copy the bytes. */
    backend_entry entry;
    memcpy(&entry, &sym, sizeof entry);
    const cl_backend *b = entry();
    if (!b || b->abi != CL_BACKEND_ABI || !backend_complete(b)) {
        note_set(why, len, CUDA_LIB_NAME " has backend ABI %d, this cudalab expects %d (rebuild both)",
                 b ? b->abi : -1, CL_BACKEND_ABI);
        return NULL;
    }
    if (b->set_rep_hook)
        b->set_rep_hook(cl_rep_done);
    return loaded = b;
}

/* Whether a CUDA error says the GPU is there but full or taken now (memory
 * for a context, exclusive mode), rather than that there is none to use. */
static bool busy_error(const char *err)
{
    return strstr(err, "out of memory") || strstr(err, "busy or unavailable") || strstr(err, "busy");
}

/* The devices this process sees (CUDA_VISIBLE_DEVICES applies), as admission
 * knows them: each by its PCI bus id, the same in every container of the
 * host. Asking creates no context. */
static admission_gpu gpus[ADMISSION_MAX_GPUS];
static int ngpus, device_in_use;

/* Whether NVIDIA's driver library is installed. Without it the CUDA runtime says "CUDA driver version
 * is insufficient for CUDA runtime version", which sends a student looking for a driver update on a
 * machine that has no NVIDIA GPU at all. */
static bool nvidia_driver_installed(void)
{
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver)
        dlclose(driver);
    return driver != NULL;
}

static int list_gpus(const cl_backend *b, char *why, size_t len, bool *busy)
{
    char err[CL_ERR_LEN] = "";
    int count = 0;
    if (ngpus > 0)
        return 0;                   /* listed before (asked again while waiting) */
    if (b->device_count(&count, err) != 0) {
        *busy = busy_error(err);
        if (!*busy && !nvidia_driver_installed())
            note_set(why, len, "no NVIDIA driver on this machine: libcuda.so.1 is not installed");
        else
            note_set(why, len, "%s: %s", *busy ? "the GPU is busy" : "no CUDA device", err[0] ? err : "unknown error");
        return -1;
    }
    for (int d = 0; d < count && d < ADMISSION_MAX_GPUS; d++) {
        cl_device_props p;
        if (b->device_props(d, &p, err) != 0) {
            ngpus = 0;
            *busy = busy_error(err);
            note_set(why, len, "%s: %s", *busy ? "the GPU is busy" : "CUDA device unusable", err[0] ? err : "unknown error");
            return -1;
        }
        admission_key(p.pci_bus_id, gpus[d].key, sizeof gpus[d].key);
        gpus[d].total_mem = p.total_mem;
        ngpus++;
    }
    return 0;
}

/* The device admission chose, opened: its context made and asked for its
 * name, which creates the context every later command needs anyway. */
static const cl_backend *cuda_open(const cl_backend *b, int dev, char *why, size_t len, bool *busy)
{
    char err[CL_ERR_LEN] = "";
    cl_device_props props;
    if (b->use_device(dev, err) != 0 || b->device_props(dev, &props, err) != 0) {
        admission_release();        /* no GPU after all: the slot was for nothing */
        *busy = busy_error(err);
        note_set(why, len, "%s: %s", *busy ? "the GPU is busy" : "CUDA device unusable", err[0] ? err : "unknown error");
        return NULL;
    }
    device_in_use = dev;
    if (ngpus > 1)
        note_set(why, len, "CUDA device %d of %d: %s", dev, ngpus, props.name);
    else
        note_set(why, len, "CUDA device %d: %s", dev, props.name);
    admission_set_capacity(&gpus[dev]);
    return b;
}

/* Whether the last try found an admission directory that cannot be used or trusted (backend_refused). */
static bool refused;

/* A slot on one of the GPUs before its context (admission.h): false with
 * *busy and the reason when none is free now, or when the admission
 * directory cannot be used or trusted (refused: no GPU without admission, and
 * no CPU answering for it). */
static bool admitted(int *dev, char *why, size_t len, bool *busy)
{
    char reason[PATH_MAX + 400];
    int rc = admission_take(gpus, ngpus, dev, reason, sizeof reason);
    refused = rc < 0;
    if (rc != 0) {
        note_set(why, len, "%s", reason);
        *busy = true;
    }
    return rc == 0;
}

bool backend_refused(void)
{
    return refused && !chosen;
}

/* CUDALAB_TESTING=1 CUDALAB_TEST_GPU_BUSY_S=S: the first S seconds of the
 * process, a GPU is said to be there and busy (the tests of waiting, which
 * have no GPU). */
static bool simulated_busy(char *why, size_t len)
{
    static double start = -1;
    const char *testing = getenv("CUDALAB_TESTING"), *busy = getenv("CUDALAB_TEST_GPU_BUSY_S");
    if (!testing || strcmp(testing, "1") != 0 || !busy || !*busy)
        return false;
    if (start < 0)
        start = monotonic_ms();
    if (monotonic_ms() - start >= atof(busy) * 1e3)
        return false;
    note_set(why, len, "the GPU is busy: out of memory (simulated by CUDALAB_TEST_GPU_BUSY_S)");
    return true;
}

/* CUDALAB_TESTING=1 CUDALAB_TEST_FAKE_GPU=N: N simulated GPUs, shared through
 * admission as real ones, on which the CPU backend computes (the tests of
 * admission and of several GPUs, which have none); 0 when not simulating. */
static int fake_gpus(void)
{
    const char *testing = getenv("CUDALAB_TESTING"), *fake = getenv("CUDALAB_TEST_FAKE_GPU");
    int n = testing && strcmp(testing, "1") == 0 && fake ? atoi(fake) : 0;
    return n < 0 ? 0 : n > ADMISSION_MAX_GPUS ? ADMISSION_MAX_GPUS : n;
}

/* CUDALAB_BACKEND=cpu: the CPU backend without trying CUDA, saying so. */
static bool forced_cpu(char *why, size_t len)
{
    const char *force = getenv("CUDALAB_BACKEND");
    if (!force || strcmp(force, "cpu") != 0)
        return false;
    note_set(why, len, "CPU backend forced by CUDALAB_BACKEND=cpu");
    return true;
}

static const cl_backend *choose(char *why, size_t len, bool *busy)
{
    if (forced_cpu(why, len))
        return cl_cpu_backend();
    if ((*busy = simulated_busy(why, len)))
        return NULL;
    int dev = 0;
    if ((ngpus = fake_gpus()) > 0) {
        for (int g = 0; g < ngpus; g++) {
            snprintf(gpus[g].key, sizeof gpus[g].key, "fake%d", g);
            gpus[g].total_mem = 0;
        }
        if (!admitted(&dev, why, len, busy))
            return NULL;
        device_in_use = dev;
        note_set(why, len, "simulated GPU %d of %d (CUDALAB_TEST_FAKE_GPU): the CPU computes", dev, ngpus);
        return cl_cpu_backend();
    }
    const cl_backend *b = cuda_load(why, len);
    if (!b || list_gpus(b, why, len, busy) != 0)
        b = NULL;
    else if (admitted(&dev, why, len, busy))
        b = cuda_open(b, dev, why, len, busy);
    else
        b = NULL;
    if (!b && !*busy)
        ngpus = 0;                  /* none to wait for */
    /* a GPU that is there but full is waited for (worker_exec), never replaced by the CPU */
    return b ? b : *busy ? NULL : cl_cpu_backend();
}

const cl_backend *backend_select(char *note, size_t len)
{
    if (!chosen) {
        bool busy = false;
        chosen = choose(chosen_note, sizeof chosen_note, &busy);
    }
    if (note && len)
        snprintf(note, len, "%s", chosen_note);
    return chosen;
}

bool backend_chosen(void)
{
    return chosen != NULL;
}

const admission_gpu *backend_gpus(int *n)
{
    *n = ngpus;
    return gpus;
}

int backend_device(void)
{
    return device_in_use;
}

const cl_backend *backend_query(char *note, size_t len)
{
    if (chosen)
        return backend_select(note, len);
    if (forced_cpu(note, len))
        return cl_cpu_backend();
    if (fake_gpus() > 0) {
        note_set(note, len, "simulated GPUs (CUDALAB_TEST_FAKE_GPU), none in use: the CPU answers");
        return cl_cpu_backend();
    }
    bool busy = false;
    char err[CL_ERR_LEN];
    cl_device_props p;
    const cl_backend *b = cuda_load(note, len);
    if (!b || list_gpus(b, note, len, &busy) != 0)
        return cl_cpu_backend();    /* no GPU here, and the note says why */
    if (b->device_props(0, &p, err) != 0) {
        note_set(note, len, "CUDA device unusable: %s", err);
        return cl_cpu_backend();
    }
    note_set(note, len, "CUDA device 0: %s (not in use by this kernel now: its limits only)", p.name);
    return b;
}
