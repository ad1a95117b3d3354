/* nvrtc.h — NVRTC, loaded at run time in the device worker.
 *
 * NVRTC ships with the CUDA toolkit and compiles without a GPU, so a student's
 * kernel compiles (and its errors, registers and shared memory are reported)
 * even where it cannot run. It is dlopen()ed, never linked: a CPU-only build
 * and the kernel process never map it, and a machine without it gets a cell
 * error saying how to install it, not a binary that does not start.
 */
#ifndef CUDALAB_STUDENT_NVRTC_H
#define CUDALAB_STUDENT_NVRTC_H

#include <stdbool.h>
#include <stddef.h>

/* One compilation. */
typedef struct nvrtc_job {
    const char *source;             /* the whole program text */
    const char *file;               /* its name in diagnostics ("cell") */
    const char *const *options;     /* NVRTC options */
    int noptions;
    const char *name_expr;          /* "&mytiled": its lowered name is looked up, or NULL */
} nvrtc_job;

typedef struct nvrtc_output {
    bool compiled;                  /* false: the log says why */
    char *log;                      /* the compiler's log, "" when silent (malloc'd) */
    void *cubin;                    /* the machine code (malloc'd), NULL when not compiled */
    size_t cubin_bytes;
    char *lowered;                  /* name_expr's lowered name (malloc'd), or NULL */
} nvrtc_output;

/* Loads NVRTC once (CUDALAB_NVRTC, then libnvrtc.so.13/.12/.so on the loader's
 * path, then $CUDA_HOME/lib64 and /usr/local/cuda/lib64). 0, or -1 with why
 * (and how to install it) in err. */
int nvrtc_load(char *err, size_t len);
/* "13.0", once loaded. */
const char *nvrtc_version(void);
/* The architectures this NVRTC compiles for, as compute capabilities ×10 (75,
 * 80, ...), ascending, into out (at most max); the count. */
int nvrtc_archs(int *out, int max);
/* Compiles; 0 when NVRTC ran (out->compiled says whether the program
 * compiled), -1 with err when NVRTC itself failed (out of memory, bad option). */
int nvrtc_compile(const nvrtc_job *job, nvrtc_output *out, char *err, size_t len);
void nvrtc_output_free(nvrtc_output *out);
/* A demangled C++ name through the C++ runtime NVRTC brings (malloc'd), or NULL. */
char *nvrtc_demangle(const char *mangled);

#endif
