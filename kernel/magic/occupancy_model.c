/* occupancy_model.c — the arithmetic of occupancy, exact and backend-free:
 * how many blocks of a kernel one SM holds, which resource stops it, and how
 * a grid spreads over the SMs. %occupancy shows it for a hypothetical device
 * (the lecture exercises) and next to the CUDA occupancy API for our kernels.
 * See cudalab/occupancy.h for what is modelled.
 */
#include <stdio.h>
#include <string.h>

#include "cudalab/cpu_model.h"
#include "cudalab/occupancy.h"
#include "magic/occupancy_model.h"

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

const char *cl_occ_limiter_name(enum cl_occ_limiter l)
{
    switch (l) {
    case CL_OCC_THREADS: return "threads per SM";
    case CL_OCC_BLOCKS:  return "blocks per SM";
    case CL_OCC_REGS:    return "registers per SM";
    case CL_OCC_SMEM:    return "shared memory per SM";
    }
    return "?";
}

/* The SM of the CPU device model (cudalab/cpu_model.h), with its reference
 * GPU's SM count: no backend said how many SMs there are. */
void cl_occ_device_default(cl_occ_device *d)
{
    memset(d, 0, sizeof *d);
    d->sms = CL_CPU_MODEL_REFERENCE_SMS;
    d->max_threads_sm = CL_CPU_MODEL_MAX_THREADS_PER_SM;
    d->max_blocks_sm = CL_CPU_MODEL_MAX_BLOCKS_PER_SM;
    d->max_threads_block = CL_CPU_MODEL_MAX_THREADS_PER_BLOCK;
    d->regs_sm = CL_CPU_MODEL_REGS_PER_SM;
    d->regs_block = CL_CPU_MODEL_REGS_PER_BLOCK;
    d->max_regs_thread = CL_CPU_MODEL_MAX_REGS_PER_THREAD;
    d->smem_sm = CL_CPU_MODEL_SMEM_PER_SM;
    d->smem_block = CL_CPU_MODEL_SMEM_PER_BLOCK_OPTIN;
    d->smem_reserved = CL_CPU_MODEL_SMEM_RESERVED;
    d->warp = CL_CPU_MODEL_WARP;
    d->reg_unit = CL_CPU_MODEL_REG_UNIT;
    d->reg_partitions = CL_CPU_MODEL_REG_PARTITIONS;
    d->smem_unit = CL_CPU_MODEL_SMEM_UNIT;
    d->reg_per_warp = true;
}

int cl_occ_compute(const cl_occ_device *d, const cl_occ_kernel *k, cl_occ_result *r, char *err,
                   size_t errlen)
{
    memset(r, 0, sizeof *r);
    int64_t w = d->warp > 0 ? d->warp : 32;
    if (k->threads < 1)
        return snprintf(err, errlen, "a block needs at least one thread"), -1;
    if (k->threads > d->max_threads_block)
        return snprintf(err, errlen, "%lld threads per block exceed the limit of %lld threads per "
                        "block (--max-threads-block): this block is not allowed",
                        (long long)k->threads, (long long)d->max_threads_block), -1;
    if (k->threads > d->max_threads_sm)
        return snprintf(err, errlen, "%lld threads per block exceed the %lld threads one SM holds "
                        "(--max-threads-sm)", (long long)k->threads, (long long)d->max_threads_sm), -1;
    if (d->max_regs_thread > 0 && k->regs > d->max_regs_thread)
        return snprintf(err, errlen, "%lld registers per thread exceed the limit of %lld per thread",
                        (long long)k->regs, (long long)d->max_regs_thread), -1;
    r->warps_per_block = ceil_div(k->threads, w);
    r->threads_in_last_warp = k->threads - (r->warps_per_block - 1) * w;
    r->last_warp_idle_pct = 100.0 * (double)(w - r->threads_in_last_warp) / (double)w;
    int64_t unit = d->reg_unit > 0 ? d->reg_unit : 1;
    int64_t regs_warp = ceil_div(k->regs * w, unit) * unit;
    int64_t parts = d->reg_partitions > 0 ? d->reg_partitions : 1;
    r->regs_per_block = d->reg_per_warp ? regs_warp * r->warps_per_block : k->regs * k->threads;
    /* the hardware checks a block as if its warps filled every sub-partition evenly */
    int64_t regs_checked = d->reg_per_warp ? regs_warp * ceil_div(r->warps_per_block, parts) * parts
                                           : r->regs_per_block;
    if (regs_checked > d->regs_block || r->regs_per_block > d->regs_sm)
        return snprintf(err, errlen, "a block needs %lld registers (%lld per thread x %lld threads%s); "
                        "the limit is %lld per %s (--regs-sm)", (long long)r->regs_per_block,
                        (long long)k->regs, (long long)k->threads,
                        d->reg_per_warp ? ", allocated per warp" : "",
                        (long long)min64(d->regs_block, d->regs_sm),
                        d->regs_block < d->regs_sm ? "block" : "SM"), -1;
    int64_t sunit = d->smem_unit > 0 ? d->smem_unit : 1;
    int64_t smem = ceil_div(k->smem + d->smem_reserved, sunit) * sunit;
    if (k->smem > d->smem_block || smem > d->smem_sm)
        return snprintf(err, errlen, "a block needs %lld bytes of shared memory; the limit is %lld "
                        "bytes per block and %lld per SM (--smem-sm)", (long long)smem,
                        (long long)d->smem_block, (long long)d->smem_sm), -1;
    /* threads are resident in whole warps */
    r->by_threads = (d->max_threads_sm / w) / r->warps_per_block;
    r->by_blocks = d->max_blocks_sm;
    r->by_regs = r->regs_per_block <= 0 ? INT64_MAX
                 : d->reg_per_warp ? parts * ((d->regs_sm / parts) / regs_warp) / r->warps_per_block
                                   : d->regs_sm / r->regs_per_block;
    r->by_smem = smem > 0 ? d->smem_sm / smem : INT64_MAX;
    int64_t lim[4] = {r->by_threads, r->by_blocks, r->by_regs, r->by_smem};
    r->blocks_sm = lim[0];
    r->limiter = CL_OCC_THREADS;
    for (int i = 1; i < 4; i++)
        if (lim[i] < r->blocks_sm) {
            r->blocks_sm = lim[i];
            r->limiter = (enum cl_occ_limiter)i;
        }
    r->warps_sm = r->blocks_sm * r->warps_per_block;
    r->threads_sm = r->blocks_sm * k->threads;
    r->occupancy_pct = 100.0 * (double)r->warps_sm / (double)(d->max_threads_sm / w);
    return 0;
}

void cl_occ_spread_of(const cl_occ_device *d, const cl_occ_result *r, int64_t blocks, cl_occ_spread *s)
{
    memset(s, 0, sizeof *s);
    s->blocks = blocks;
    int64_t wave = d->sms * r->blocks_sm;
    if (blocks < 1 || wave < 1)
        return;
    s->waves = ceil_div(blocks, wave);
    s->full_waves = blocks / wave;
    s->last_wave_blocks = blocks - (s->waves - 1) * wave;
    s->less = s->last_wave_blocks / d->sms;
    s->sms_more = s->last_wave_blocks % d->sms;
    s->more = s->less + (s->sms_more > 0);
    s->sms_less = d->sms - s->sms_more;
    if (s->sms_more == 0) {       /* an even spread: every SM runs the same number */
        s->more = s->less;
        s->sms_more = d->sms;
        s->sms_less = 0;
    }
}

const char *cl_occ_device_of(const cl_backend *b, int dev, cl_occ_device *d)
{
    cl_device_props p;
    char err[CL_ERR_LEN];
    cl_occ_device_default(d);
    d->smem_reserved = 0;
    memset(&p, 0, sizeof p);
    if (!b || b->device_props(dev, &p, err) != 0 || p.max_threads_per_sm <= 0)
        return CL_CPU_MODEL_SM ", the CPU device model's";    /* no backend answered */
    d->sms = p.sm_count;
    d->max_threads_sm = p.max_threads_per_sm;
    d->max_blocks_sm = p.max_blocks_per_sm > 0 ? p.max_blocks_per_sm : d->max_blocks_sm;
    d->max_threads_block = p.max_threads_per_block;
    d->regs_sm = p.regs_per_sm;
    d->regs_block = p.regs_per_block;
    d->smem_sm = (int64_t)p.smem_per_sm;
    d->smem_block = (int64_t)(p.smem_per_block_optin ? p.smem_per_block_optin : p.smem_per_block);
    if (strcmp(b->name, "cpu") == 0)
        return CL_CPU_MODEL_SM ", one per logical CPU in the CPU device model";
    return "an SM of this GPU (cudaGetDeviceProperties)";
}

const char *cl_occ_device_launched(const cl_backend *b, int dev, cl_occ_device *d)
{
    const char *source = cl_occ_device_of(b, dev, d);
    cl_device_props p;
    char err[CL_ERR_LEN];
    memset(&p, 0, sizeof p);
    /* cudaDevAttrReservedSharedMemoryPerBlock: 1 KiB on sm_8x and sm_9x, 0 on Volta and Turing; the CPU
     * device model (cc 0.0 here) is an sm_90 */
    bool before_ampere = b && b->device_props(dev, &p, err) == 0 && p.cc_major > 0 && p.cc_major < 8;
    d->smem_reserved = before_ampere ? 0 : CL_CPU_MODEL_SMEM_RESERVED;
    return source;
}
