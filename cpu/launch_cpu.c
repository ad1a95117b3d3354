/* launch_cpu.c — %launch on the CPU backend (cudalab/launch.h): no launch,
 * the checks CUDA makes before one, against the device model's limits
 * (cudalab/cpu_model.h), with CUDA's own error names and texts. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cudalab/backend.h"
#include "cudalab/launch.h"

static void status(cl_launch_status *s, int code, const char *name, const char *text)
{
    s->code = code;
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->text, sizeof s->text, "%s", text);
}

/* cudaError_t's numbers. CUDA 13's runtime (the toolkit cudalab builds with) reports every launch
 * past a limit, block, grid or shared memory, as cudaErrorInvalidValue: an H100 said so for --block
 * 2048 and --grid 1x70000, where older runtimes said cudaErrorInvalidConfiguration. */
enum { CUDA_SUCCESS = 0, CUDA_INVALID_VALUE = 1 };

static int launch_run(const cl_launch_args *a, cl_launch_result *r, char *err)
{
    (void)err;
    memset(r, 0, sizeof *r);
    cl_device_props p = {0};
    cl_cpu_model_limits(&p);
    long long threads = 1, per_block = 1;
    bool dims_ok = true;
    for (int d = 0; d < 3; d++) {
        threads *= (long long)a->block[d] * a->grid[d];
        per_block *= a->block[d];
        dims_ok &= a->block[d] <= (unsigned)p.max_block[d] && a->grid[d] <= (unsigned)p.max_grid[d];
    }
    r->expected = threads < CL_LAUNCH_MAX_OUT ? threads : CL_LAUNCH_MAX_OUT;
    r->modelled = 1;
    if (!dims_ok || per_block > p.max_threads_per_block || a->smem > p.smem_per_block)
        status(&r->last_error, CUDA_INVALID_VALUE, "cudaErrorInvalidValue", "invalid argument");
    else
        status(&r->last_error, CUDA_SUCCESS, "cudaSuccess", "no error");
    status(&r->again, CUDA_SUCCESS, "cudaSuccess", "no error");
    status(&r->sync, CUDA_SUCCESS, "cudaSuccess", "no error");
    r->written = r->last_error.code == CUDA_SUCCESS ? r->expected : 0;
    return 0;
}

const cl_launch_ops cl_cpu_launch_ops = { launch_run };
