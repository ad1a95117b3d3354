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
    return b->name && b->device_count && b->device_props && b->versions;
}

/* Loads the CUDA backend table, or returns NULL with the reason in why. */
static const cl_backend *cuda_load(char *why, size_t len)
{
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
    return b;
}

/* Whether a CUDA error says the GPU is there but full or taken now (memory
 * for a context, exclusive mode), rather than that there is none to use. */
static bool busy_error(const char *err)
{
    return strstr(err, "out of memory") || strstr(err, "busy or unavailable") || strstr(err, "busy");
}

/* A loaded CUDA backend is only worth choosing when device 0 answers: asking
 * for its properties creates the context every later command needs anyway.
 * *busy: the device is there and cannot give a context now. */
static const cl_backend *cuda_usable(const cl_backend *b, char *why, size_t len, bool *busy)
{
    char err[CL_ERR_LEN] = "";
    int count = 0;
    if (b->device_count(&count, err) != 0) {
        admission_release();        /* no GPU after all: the slot was for nothing */
        *busy = busy_error(err);
        note_set(why, len, "%s: %s", *busy ? "the GPU is busy" : "no CUDA device", err[0] ? err : "unknown error");
        return NULL;
    }
    cl_device_props props;
    if (b->device_props(0, &props, err) != 0) {
        *busy = count > 0 && busy_error(err);
        admission_release();
        note_set(why, len, "%s: %s", *busy ? "the GPU is busy" : "CUDA device 0 unusable", err[0] ? err : "unknown error");
        return NULL;
    }
    note_set(why, len, "CUDA device 0: %s", props.name);
    admission_set_capacity(0, props.total_mem);
    return b;
}

/* A slot of GPU 0 before its context (admission.h); polite: not if others
 * wait already (a worker warming up at its kernel's start). false with
 * *busy and the reason when none is free; a directory that cannot be used
 * is logged and does not stop anything. */
static bool admitted(bool polite, char *why, size_t len, bool *busy)
{
    char reason[300];
    int rc = admission_take(0, polite, reason, sizeof reason);
    if (rc < 0)
        klog("admission: %s: going on without it", reason);
    if (rc == 1) {
        note_set(why, len, "%s", reason);
        *busy = true;
    }
    return rc != 1;
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

/* CUDALAB_TESTING=1 CUDALAB_TEST_FAKE_GPU=1: admission as for a GPU, then the
 * CPU backend computes (the tests of admission, which have no GPU). */
static bool fake_gpu(void)
{
    const char *testing = getenv("CUDALAB_TESTING"), *fake = getenv("CUDALAB_TEST_FAKE_GPU");
    return testing && strcmp(testing, "1") == 0 && fake && strcmp(fake, "1") == 0;
}

static const cl_backend *choose(char *why, size_t len, bool polite, bool *busy)
{
    const char *force = getenv("CUDALAB_BACKEND");
    if (force && strcmp(force, "cpu") == 0) {
        note_set(why, len, "CPU backend forced by CUDALAB_BACKEND=cpu");
        return cl_cpu_backend();
    }
    if ((*busy = simulated_busy(why, len)))
        return NULL;
    if (fake_gpu()) {
        if (!admitted(polite, why, len, busy))
            return NULL;
        note_set(why, len, "a simulated GPU's slot (CUDALAB_TEST_FAKE_GPU): the CPU computes");
        return cl_cpu_backend();
    }
    const cl_backend *b = cuda_load(why, len);
    if (b && admitted(polite, why, len, busy))
        b = cuda_usable(b, why, len, busy);
    else
        b = NULL;
    /* a GPU that is there but full is waited for (worker_exec), never replaced by the CPU */
    return b ? b : *busy ? NULL : cl_cpu_backend();
}

static const cl_backend *select_backend(char *note, size_t len, bool polite)
{
    if (!chosen) {
        bool busy = false;
        chosen = choose(chosen_note, sizeof chosen_note, polite, &busy);
    }
    if (note && len)
        snprintf(note, len, "%s", chosen_note);
    return chosen;
}

const cl_backend *backend_select(char *note, size_t len)
{
    return select_backend(note, len, false);
}

const cl_backend *backend_warm(char *note, size_t len)
{
    return select_backend(note, len, true);
}

