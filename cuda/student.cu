/* student.cu — loading and launching a student's kernel (see student_cuda.h). */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "student_cuda.h"

#define LOADED_MAX 64

struct loaded_kernel {
    char hash[65];
    char entry[256];
    cudaLibrary_t lib;
    cudaKernel_t kernel;
};

static loaded_kernel loaded[LOADED_MAX];
static int nloaded;

int cl_cuda_student_func(const cl_student_kernel *k, const void **func, char *err)
{
    for (int i = 0; i < nloaded; i++)
        if (strcmp(loaded[i].hash, k->hash) == 0 && strcmp(loaded[i].entry, k->entry) == 0) {
            *func = (const void *)loaded[i].kernel;
            return 0;
        }
    if (nloaded == LOADED_MAX) {        /* a long session: unload the oldest */
        cudaLibraryUnload(loaded[0].lib);
        memmove(loaded, loaded + 1, sizeof loaded[0] * (LOADED_MAX - 1));
        nloaded--;
    }
    loaded_kernel *l = &loaded[nloaded];
    cudaError_t rc = cudaLibraryLoadData(&l->lib, k->image, NULL, NULL, 0, NULL, NULL, 0);
    if (rc != cudaSuccess) {
        char what[160];
        snprintf(what, sizeof what, "loading %s's machine code", k->name);
        return cl_cuda_fail(err, what, rc);
    }
    rc = cudaLibraryGetKernel(&l->kernel, l->lib, k->entry);
    if (rc != cudaSuccess) {
        cudaLibraryUnload(l->lib);
        char what[160];
        snprintf(what, sizeof what, "finding %s in its machine code", k->name);
        return cl_cuda_fail(err, what, rc);
    }
    snprintf(l->hash, sizeof l->hash, "%s", k->hash);
    snprintf(l->entry, sizeof l->entry, "%s", k->entry);
    nloaded++;
    *func = (const void *)l->kernel;
    return 0;
}

dim3 cl_cuda_student_grid(const cl_student_kernel *k, dim3 family_rule)
{
    if (k->grid[0] > 0)
        return dim3((unsigned)k->grid[0], (unsigned)(k->grid[1] > 0 ? k->grid[1] : 1),
                    (unsigned)(k->grid[2] > 0 ? k->grid[2] : 1));
    return family_rule;
}

dim3 cl_cuda_student_block(const cl_student_kernel *k)
{
    return dim3((unsigned)(k->block[0] > 0 ? k->block[0] : 1), (unsigned)(k->block[1] > 0 ? k->block[1] : 1),
                (unsigned)(k->block[2] > 0 ? k->block[2] : 1));
}

int cl_cuda_student_describe(const cl_student_kernel *k, const void *func, dim3 grid, dim3 block,
                             cl_launch *l, char *err)
{
    int dev = 0;
    cudaFuncAttributes a;
    cudaDeviceProp p;
    cudaError_t rc = cudaGetDevice(&dev);
    if (rc == cudaSuccess)
        rc = cudaFuncGetAttributes(&a, func);
    if (rc == cudaSuccess)
        rc = cudaGetDeviceProperties(&p, dev);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "kernel attributes", rc);
    unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (block.x > (unsigned)p.maxThreadsDim[0] || block.y > (unsigned)p.maxThreadsDim[1] ||
        block.z > (unsigned)p.maxThreadsDim[2] || threads > (unsigned long long)a.maxThreadsPerBlock) {
        snprintf(err, CL_ERR_LEN, "a block of %u×%u×%u = %llu threads is more than %s can run: at most %d "
                 "threads per block (%s; block dimensions at most %d×%d×%d)", block.x, block.y, block.z,
                 threads, k->name, a.maxThreadsPerBlock,
                 a.maxThreadsPerBlock < p.maxThreadsPerBlock ? "its registers per thread allow no more"
                                                             : "the device's limit",
                 p.maxThreadsDim[0], p.maxThreadsDim[1], p.maxThreadsDim[2]);
        return -1;
    }
    if (grid.x > (unsigned)p.maxGridSize[0] || grid.y > (unsigned)p.maxGridSize[1] ||
        grid.z > (unsigned)p.maxGridSize[2] || grid.x == 0 || grid.y == 0 || grid.z == 0) {
        snprintf(err, CL_ERR_LEN, "a grid of %u×%u×%u blocks is outside this device's limits (%d×%d×%d)",
                 grid.x, grid.y, grid.z, p.maxGridSize[0], p.maxGridSize[1], p.maxGridSize[2]);
        return -1;
    }
    size_t smem = a.sharedSizeBytes + k->dyn_smem;
    if (smem > p.sharedMemPerBlockOptin) {
        snprintf(err, CL_ERR_LEN, "%s needs %zu bytes of shared memory per block (%zu static + %zu dynamic); "
                 "this device allows %zu", k->name, smem, (size_t)a.sharedSizeBytes, k->dyn_smem,
                 (size_t)p.sharedMemPerBlockOptin);
        return -1;
    }
    if (k->dyn_smem > p.sharedMemPerBlock &&
        (rc = cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)k->dyn_smem)) !=
            cudaSuccess)
        return cl_cuda_fail(err, "allowing the dynamic shared memory (--smem)", rc);
    l->grid[0] = (int)grid.x, l->grid[1] = (int)grid.y, l->grid[2] = (int)grid.z;
    l->block[0] = (int)block.x, l->block[1] = (int)block.y, l->block[2] = (int)block.z;
    l->smem_bytes = smem;
    l->regs_per_thread = a.numRegs;
    l->kernels = 1;
    return 0;
}

int cl_cuda_guarded_alloc(void **base, void **user, size_t bytes, const char *what, char *err)
{
    *user = NULL;
    if (cl_cuda_alloc(base, bytes + 2 * (size_t)CL_GUARD_BYTES, what, err))
        return -1;
    *user = (char *)*base + CL_GUARD_BYTES;
    cudaError_t rc = cudaMemset(*base, CL_GUARD_BYTE, CL_GUARD_BYTES);
    if (rc == cudaSuccess)
        rc = cudaMemset((char *)*user + bytes, CL_GUARD_BYTE, CL_GUARD_BYTES);
    return rc == cudaSuccess ? 0 : cl_cuda_fail(err, "setting guard bytes", rc);
}

/* How many bytes of a guard differ from the pattern, and the farthest from the buffer. */
static size_t changed(const unsigned char *g, bool before, size_t *reach)
{
    size_t n = 0;
    *reach = 0;
    for (size_t i = 0; i < CL_GUARD_BYTES; i++)
        if (g[i] != CL_GUARD_BYTE) {
            n++;
            size_t d = before ? CL_GUARD_BYTES - i : i + 1;
            if (d > *reach)
                *reach = d;
        }
    return n;
}

int cl_cuda_guard_check(const cl_student_kernel *k, void *base, size_t bytes, const char *what, char *err)
{
    static unsigned char g[2][CL_GUARD_BYTES];
    cudaError_t rc = cudaMemcpy(g[0], base, CL_GUARD_BYTES, cudaMemcpyDeviceToHost);
    if (rc == cudaSuccess)
        rc = cudaMemcpy(g[1], (char *)base + CL_GUARD_BYTES + bytes, CL_GUARD_BYTES, cudaMemcpyDeviceToHost);
    if (rc != cudaSuccess)
        return cl_cuda_fail(err, "reading guard bytes", rc);
    size_t reach_before, reach_after;
    size_t before = changed(g[0], true, &reach_before), after = changed(g[1], false, &reach_after);
    if (!before && !after)
        return 0;
    snprintf(err, CL_ERR_LEN, "%s wrote outside %s: %zu guard bytes before its start and %zu after its end were "
             "changed (up to %zu floats away): threads whose index is past the end stored anyway; compare each "
             "index with its bound before the store", k->name, what, before, after,
             ((reach_after > reach_before ? reach_after : reach_before) + 3) / 4);
    return -1;
}

int cl_cuda_student_launch(const cl_student_kernel *k, const void *func, dim3 grid, dim3 block, void **args,
                           char *err)
{
    cudaError_t rc = cudaLaunchKernel(func, grid, block, args, k->dyn_smem, 0);
    if (rc == cudaSuccess)
        rc = cudaGetLastError();
    if (rc == cudaSuccess)
        return 0;
    char what[160];
    snprintf(what, sizeof what, "launching %s", k->name);
    return cl_cuda_fail(err, what, rc);
}
