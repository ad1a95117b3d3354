/* nvrtc.c — NVRTC through dlopen (see nvrtc.h). The few entry points used are
 * declared here with NVRTC's C ABI (an int result, an opaque program), so the
 * build needs no CUDA header. */
#include "student/nvrtc.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "base/utf8.h"

typedef struct nvrtc_program_ *nvrtc_program;

#define NVRTC_FUNCS(X)                                                                      \
    X(int, nvrtcVersion, (int *, int *))                                                    \
    X(const char *, nvrtcGetErrorString, (int))                                             \
    X(int, nvrtcCreateProgram, (nvrtc_program *, const char *, const char *, int,          \
                                const char *const *, const char *const *))                   \
    X(int, nvrtcDestroyProgram, (nvrtc_program *))                                          \
    X(int, nvrtcAddNameExpression, (nvrtc_program, const char *))                           \
    X(int, nvrtcCompileProgram, (nvrtc_program, int, const char *const *))                  \
    X(int, nvrtcGetProgramLogSize, (nvrtc_program, size_t *))                               \
    X(int, nvrtcGetProgramLog, (nvrtc_program, char *))                                     \
    X(int, nvrtcGetCUBINSize, (nvrtc_program, size_t *))                                    \
    X(int, nvrtcGetCUBIN, (nvrtc_program, char *))                                          \
    X(int, nvrtcGetLoweredName, (nvrtc_program, const char *, const char **))               \
    X(int, nvrtcGetNumSupportedArchs, (int *))                                              \
    X(int, nvrtcGetSupportedArchs, (int *))

#define FIELD_(ret, name, args) ret(*name) args;
static struct {
    NVRTC_FUNCS(FIELD_)
    char *(*demangle)(const char *, char *, size_t *, int *);
    char version[16];
    bool loaded;
} api;
#undef FIELD_

#define NVRTC_COMPILATION_ERROR 6   /* NVRTC_ERROR_COMPILATION: the program did not compile */
#define INSTALL_HINT "install the CUDA toolkit's NVRTC (Debian/Ubuntu: the cuda-nvrtc-<version> " \
                     "package, or `pip install nvidia-cuda-nvrtc`) or set CUDALAB_NVRTC to libnvrtc.so"

static void *open_first(char *tried, size_t len)
{
    const char *env = getenv("CUDALAB_NVRTC");
    const char *home = getenv("CUDA_HOME");
    char home_lib[512] = "";
    if (home && *home)
        snprintf(home_lib, sizeof home_lib, "%s/lib64/libnvrtc.so", home);
    const char *names[] = { env && *env ? env : NULL, "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                            home_lib[0] ? home_lib : NULL, "/usr/local/cuda/lib64/libnvrtc.so" };
    size_t used = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!names[i])
            continue;
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
        if (used < len)
            used += (size_t)snprintf(tried + used, len - used, "%s%s", used ? ", " : "", names[i]);
    }
    return NULL;
}

int nvrtc_load(char *err, size_t len)
{
    if (api.loaded)
        return 0;
    char tried[400] = "";
    void *h = open_first(tried, sizeof tried);
    if (!h)
        return fail_into(err, len, "NVRTC (the CUDA runtime compiler) is not installed here (tried %s): %s",
                         tried, INSTALL_HINT);
#define LOOK_(ret, name, args)                                                                  \
    if (!(*(void **)&api.name = dlsym(h, #name)))                                                \
        return fail_into(err, len, "this NVRTC lacks %s (too old: CUDA 11.1 or newer is needed)", #name);
    NVRTC_FUNCS(LOOK_)
#undef LOOK_
    /* NVRTC brings the C++ runtime with it: its demangler names student functions */
    *(void **)&api.demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!api.demangle)
        *(void **)&api.demangle = dlsym(h, "__cxa_demangle");
    int major = 0, minor = 0;
    api.nvrtcVersion(&major, &minor);
    snprintf(api.version, sizeof api.version, "%d.%d", major, minor);
    api.loaded = true;
    return 0;
}

const char *nvrtc_version(void)
{
    return api.loaded ? api.version : "";
}

int nvrtc_archs(int *out, int max)
{
    int n = 0;
    if (!api.loaded || api.nvrtcGetNumSupportedArchs(&n) != 0 || n <= 0)
        return 0;
    int *all = calloc((size_t)n, sizeof *all);
    if (!all || api.nvrtcGetSupportedArchs(all) != 0) {
        free(all);
        return 0;
    }
    int k = n < max ? n : max;
    memcpy(out, all, (size_t)k * sizeof *out);
    free(all);
    return k;
}

static char *program_log(nvrtc_program p)
{
    size_t n = 0;
    char *log = NULL;
    if (api.nvrtcGetProgramLogSize(p, &n) == 0 && n > 0 && (log = malloc(n + 1))) {
        if (api.nvrtcGetProgramLog(p, log) != 0)
            log[0] = '\0';
        log[n] = '\0';
    }
    return log ? log : strdup("");
}

int nvrtc_compile(const nvrtc_job *job, nvrtc_output *out, char *err, size_t len)
{
    memset(out, 0, sizeof *out);
    if (nvrtc_load(err, len) != 0)
        return -1;
    nvrtc_program p = NULL;
    int rc = api.nvrtcCreateProgram(&p, job->source, job->file, 0, NULL, NULL);
    if (rc == 0 && job->name_expr)
        rc = api.nvrtcAddNameExpression(p, job->name_expr);
    if (rc != 0) {
        if (p)
            api.nvrtcDestroyProgram(&p);
        return fail_into(err, len, "NVRTC: %s", api.nvrtcGetErrorString(rc));
    }
    rc = api.nvrtcCompileProgram(p, job->noptions, job->options);
    out->log = program_log(p);
    if (rc != 0 && rc != NVRTC_COMPILATION_ERROR) {
        /* an option NVRTC refuses, or NVRTC out of memory: not the student's code */
        fail_into(err, len, "NVRTC: %s%s%.*s", api.nvrtcGetErrorString(rc), out->log[0] ? ": " : "",
                  utf8_clip(out->log, 200), out->log);
        api.nvrtcDestroyProgram(&p);
        return -1;
    }
    out->compiled = rc == 0;
    size_t n = 0;
    if (out->compiled && api.nvrtcGetCUBINSize(p, &n) == 0 && n > 0 && (out->cubin = malloc(n))) {
        if (api.nvrtcGetCUBIN(p, out->cubin) == 0) {
            out->cubin_bytes = n;
        } else {
            free(out->cubin);
            out->cubin = NULL;
        }
    }
    const char *lowered = NULL;
    if (out->compiled && job->name_expr && api.nvrtcGetLoweredName(p, job->name_expr, &lowered) == 0 && lowered)
        out->lowered = strdup(lowered);
    api.nvrtcDestroyProgram(&p);        /* frees what nvrtcGetLoweredName returned: copied above */
    if (out->compiled && (!out->cubin || (job->name_expr && !out->lowered))) {
        nvrtc_output_free(out);
        return fail_into(err, len, "NVRTC compiled the program but gave no machine code%s",
                         n == 0 ? " (an architecture it only knows as PTX?)" : "");
    }
    return 0;
}

void nvrtc_output_free(nvrtc_output *out)
{
    free(out->log);
    free(out->cubin);
    free(out->lowered);
    memset(out, 0, sizeof *out);
}

char *nvrtc_demangle(const char *mangled)
{
    int status = 0;
    return api.demangle ? api.demangle(mangled, NULL, NULL, &status) : NULL;
}
