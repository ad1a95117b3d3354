/* occupancy_cpu.c — the CPU backend's %occupancy --kernel: there is no compiled
 * GPU kernel to ask, so the query fails with a clear reason and the magic
 * says what to do instead (the model with --regs/--smem given by hand).
 */
#include <stdio.h>
#include <string.h>

#include "cudalab/occupancy.h"

static int cpu_occ_query(int k, int threads, cl_occ_query *out, char *err)
{
    (void)k;
    (void)threads;
    memset(out, 0, sizeof *out);
    snprintf(err, CL_ERR_LEN, "--kernel needs the CUDA backend: a kernel's registers and shared "
             "memory come from cudaFuncGetAttributes and its resident blocks from "
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor; on the CPU backend give --regs and "
             "--smem by hand to use the model");
    return -1;
}

const cl_occupancy_ops cl_cpu_occupancy_ops = {cpu_occ_query};
