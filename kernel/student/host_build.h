/* host_build.h — a student's kernel built for the CPU runner (worker side).
 *
 * Where there is no GPU, the source NVRTC accepted is compiled a second time,
 * by the host C++ compiler, against the CUDA model's prelude (cpu/simt/
 * runtime/cudalab_simt.h) with -fsanitize=thread's calls on every access,
 * into an object that the runner (cpu/simt/runtime/) audits once here and
 * loads at each launch: never linked, so nothing of it runs but the kernel.
 * NVRTC is the gate: what runs here also compiles for a GPU. Builds are cached beside NVRTC's, by a hash of
 * the translation unit, the options, the compiler and the runtime.
 */
#ifndef CUDALAB_STUDENT_HOST_BUILD_H
#define CUDALAB_STUDENT_HOST_BUILD_H

#include <limits.h>
#include <stdbool.h>

#include "magic/magic.h"
#include "student/compile.h"

typedef struct host_build {
    char path[PATH_MAX];            /* the audited object, in the cache */
    char runner[PATH_MAX];          /* the runner that loads it (lib/cudalab/simt/cudalab-runner) */
    bool one_process;               /* __device__ variables: the blocks share one process */
    bool cached;
    double ms;
} host_build;

/* Builds (or finds) the runner of src with the options o (its -D and
 * --fast-math; the GPU's register and ptxas options do not apply). 0, or -1
 * with the error in ctx: RuntimeError naming what is missing (the host
 * compiler, the runner's runtime), CompileError with the compiler's lines. */
int host_build_runner(magic_ctx *ctx, const student_source *src, const student_options *o, host_build *out);

#endif
