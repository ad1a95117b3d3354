/* device_cpu.c — the CPU backend's table and its description of the host (%device).
 *
 * When no GPU can be used, the host stands in for device 0 as the one CPU
 * device model (cudalab/cpu_model.h): logical CPUs play the SMs, the host's
 * clock and memory are its own, and every warp, block, register and shared
 * memory limit is the model's, the ones the CPU analogues and the CPU runner
 * work by. What Linux does not tell us stays 0, which the backend ABI defines
 * as "unknown". The other files in cpu/ add their families' entry points to
 * the table as the ABI grows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/cpu_common.h"
#include "cudalab/backend.h"
#include "cudalab/cpu_model.h"
#include "simt/simt_launch.h"

static int cpu_device_count(int *count, char *err)
{
    *count = 1;
    return 0;
}

/* Copies the value of the first "key<spaces>: value" line of a /proc file
 * into buf, without the trailing newline. Returns 0 when found. */
static int proc_field(const char *path, const char *key, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[512];
    size_t klen = strlen(key);
    int found = -1;
    while (found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0)
            continue;
        const char *p = line + klen;
        p += strspn(p, " \t");
        if (*p != ':')
            continue;               /* a longer key with the same prefix */
        p++;
        p += strspn(p, " \t");
        snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
        found = 0;
    }
    fclose(f);
    return found;
}

static void machine_name(char *buf, size_t len)
{
    struct utsname u;
    const char *m = uname(&u) == 0 ? u.machine : "unknown";
    snprintf(buf, len, "%.*s", (int)(len - 1), m);
}

/* x86 says "model name"; some ARM kernels say "Processor" or nothing useful. */
static void cpu_model(char *buf, size_t len)
{
    if (proc_field("/proc/cpuinfo", "model name", buf, len) == 0 && buf[0])
        return;
    if (proc_field("/proc/cpuinfo", "Processor", buf, len) == 0 && buf[0])
        return;
    char mach[64];
    machine_name(mach, sizeof mach);
    snprintf(buf, len, "%s CPU", mach);
}

/* The maximum frequency when cpufreq exposes it (stable from run to run),
 * else the current "cpu MHz" of the first CPU, else 0. */
static int cpu_clock_khz(void)
{
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "r");
    if (f) {
        long khz = 0;
        int ok = fscanf(f, "%ld", &khz) == 1 && khz > 0 && khz < 100000000L;
        fclose(f);
        if (ok)
            return (int)khz;
    }
    char mhz[64];
    if (proc_field("/proc/cpuinfo", "cpu MHz", mhz, sizeof mhz) == 0) {
        double v = strtod(mhz, NULL);
        if (v > 0 && v < 100000)
            return (int)(v * 1000.0 + 0.5);
    }
    return 0;
}

/* MemAvailable is what a new allocation can get without swapping; MemFree
 * (sysconf's _SC_AVPHYS_PAGES) undercounts it by the page cache. */
static uint64_t mem_available(void)
{
    char val[64];
    if (proc_field("/proc/meminfo", "MemAvailable", val, sizeof val) == 0)
        return strtoull(val, NULL, 10) * 1024u;
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

static uint64_t mem_total(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

/* The host is device 0, the only one. */
static bool bad_ordinal(int dev, char *err)
{
    if (dev == 0)
        return false;
    if (err)
        snprintf(err, CL_ERR_LEN, "invalid device ordinal %d: the CPU backend has device 0 only", dev);
    return true;
}

/* Everything of the device that is the model's, not the host's. */
void cl_cpu_model_limits(cl_device_props *p)
{
    p->warp_size = CL_CPU_MODEL_WARP;
    p->max_threads_per_block = CL_CPU_MODEL_MAX_THREADS_PER_BLOCK;
    p->max_threads_per_sm = CL_CPU_MODEL_MAX_THREADS_PER_SM;
    p->max_blocks_per_sm = CL_CPU_MODEL_MAX_BLOCKS_PER_SM;
    p->regs_per_sm = CL_CPU_MODEL_REGS_PER_SM;
    p->regs_per_block = CL_CPU_MODEL_REGS_PER_BLOCK;
    p->smem_per_block = CL_CPU_MODEL_SMEM_PER_BLOCK;
    p->smem_per_block_optin = CL_CPU_MODEL_SMEM_PER_BLOCK_OPTIN;
    p->smem_per_sm = CL_CPU_MODEL_SMEM_PER_SM;
    const int block[3] = { CL_CPU_MODEL_MAX_BLOCK_X, CL_CPU_MODEL_MAX_BLOCK_Y, CL_CPU_MODEL_MAX_BLOCK_Z };
    const int grid[3] = { CL_CPU_MODEL_MAX_GRID_X, CL_CPU_MODEL_MAX_GRID_Y, CL_CPU_MODEL_MAX_GRID_Z };
    memcpy(p->max_block, block, sizeof block);
    memcpy(p->max_grid, grid, sizeof grid);
}

static int cpu_device_props(int dev, cl_device_props *out, char *err)
{
    if (bad_ordinal(dev, err))
        return -1;
    memset(out, 0, sizeof *out);
    cpu_model(out->name, sizeof out->name);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    out->sm_count = n > 0 ? (int)n : 1;
    out->clock_khz = cpu_clock_khz();
    out->total_mem = mem_total();
    out->free_mem = mem_available();
    out->integrated = 1;
    cl_cpu_model_limits(out);
    cl_cpu_fp32_rate rate;          /* the host's own lanes, not the model's: its peak is the hardware's */
    cl_cpu_fp32_rate_read(&rate);
    out->cores_per_sm = rate.lanes_per_cpu;
    return 0;
}

static int cpu_versions(int dev, cl_versions *out, char *err)
{
    if (bad_ordinal(dev, err))
        return -1;
    memset(out, 0, sizeof *out);
    char mach[48];
    machine_name(mach, sizeof mach);
    snprintf(out->arch, sizeof out->arch, "host CPU (%s)", mach);
    return 0;
}

/* Defined by the family files; weak, so a family not built is NULL rather than a link error. */
CL_FAMILIES(CL_BACKEND_WEAK_CPU_)
int cl_cpu_copy_bandwidth(double *gbs, char *err) __attribute__((weak));

static const cl_backend cpu_backend = {
    "cpu",
    CL_BACKEND_ABI,
    cpu_device_count,
    cpu_device_props,
    cpu_versions,
    cl_cpu_copy_bandwidth,
    NULL,                       /* the host is always usable */
    NULL,                       /* and always in use */
    NULL,                       /* its analogues count their reps themselves */
    NULL,                       /* the host clock times them: no device clocks, no events */
    cl_cpu_set_counters,        /* no hardware counters: a student's kernel's simulated by the CPU runner */
    cl_cpu_counters,
    CL_FAMILIES(CL_BACKEND_OPS_CPU_)
    NULL,                       /* the CPU runner checks every timed rep already: --check-reps all is its way */
};

const cl_backend *cl_cpu_backend(void)
{
    return &cpu_backend;
}
