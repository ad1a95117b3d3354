/* cpu_simd.c — the host's FP32 rate as the CPU backend's peak counts it: the widest SIMD vector the
 * host runs, its fused multiply-add, and the hardware threads that share a core's pipes.
 *
 * A GPU's peak FP32 is 2 (an FMA is a multiply and an add) × its FP32 lanes × its clock, and "% of
 * peak" is a run's GFLOP/s against it. For the host to mean the same, its lanes are counted as the
 * hardware has them: the vector width in floats (AVX-512 16, AVX/AVX2 8, SSE or NEON 4) times the
 * vector FMA pipes of a core (2 with FMA: Haswell, Zen 2 and later have two; a core with one is
 * counted at twice its peak, never below it, so no run reads over 100%). Without FMA an add and a
 * multiply each have a port: 2 FLOPs per lane per cycle as well, one pipe. Hardware threads of one
 * core share its pipes, so a logical CPU gets its core's lanes divided among them. Read at run time
 * from /proc/cpuinfo (the flags the kernel saw in cpuid) and sysfs' topology.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudalab/host.h"

/* Whether the space-separated word list has word. */
static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; p && (p = strstr(p, word)); p += n)
        if ((p == list || p[-1] == ' ' || p[-1] == '\t') && (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
            return true;
    return false;
}

void cl_cpu_fp32_rate_from(const char *flags, int threads_per_core, cl_cpu_fp32_rate *r)
{
    static const struct { const char *flag, *isa; int lanes; bool fma; } isas[] = {
        { "avx512f", "AVX-512", 16, true },    /* AVX-512 F has its own FMA */
        { "avx2", "AVX2", 8, false },
        { "avx", "AVX", 8, false },
        { "asimd", "NEON", 4, true },          /* AArch64's Advanced SIMD has FMLA */
        { "sse2", "SSE", 4, false },
        { "sse", "SSE", 4, false },
    };
    memset(r, 0, sizeof *r);
    snprintf(r->isa, sizeof r->isa, "scalar");
    r->lanes = 1;
    for (size_t i = 0; flags && i < sizeof isas / sizeof isas[0]; i++)
        if (has_word(flags, isas[i].flag)) {
            snprintf(r->isa, sizeof r->isa, "%s", isas[i].isa);
            r->lanes = isas[i].lanes;
            r->fma = isas[i].fma || has_word(flags, "fma");
            break;
        }
    r->pipes = r->fma ? 2 : 1;
    r->threads_per_core = threads_per_core > 0 ? threads_per_core : 1;
    int lanes = r->lanes * r->pipes / r->threads_per_core;
    r->lanes_per_cpu = lanes > 0 ? lanes : 1;
}

/* Hardware threads per core: cpu0's siblings in sysfs ("0,4" or "0-1"), else 1. */
static int threads_per_core(void)
{
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "r");
    char line[256];
    int n = 0;
    if (f && fgets(line, sizeof line, f)) {
        for (char *p = line; *p && *p != '\n';) {
            char *end;
            long a = strtol(p, &end, 10), b = a;
            if (end == p)
                break;
            if (*end == '-')
                b = strtol(end + 1, &end, 10);
            n += b >= a ? (int)(b - a + 1) : 1;
            p = end + (*end == ',');
        }
    }
    if (f)
        fclose(f);
    return n > 0 ? n : 1;
}

/* The first "flags" (x86) or "Features" (ARM) line of /proc/cpuinfo, into buf. */
static void cpu_flags(char *buf, size_t len)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    buf[0] = '\0';
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0)
        if ((strncmp(line, "flags", 5) == 0 || strncmp(line, "Features", 8) == 0) && strchr(line, ':')) {
            snprintf(buf, len, "%s", strchr(line, ':') + 1);
            break;
        }
    free(line);
    fclose(f);
}

void cl_cpu_fp32_rate_read(cl_cpu_fp32_rate *r)
{
    static char flags[8192];
    cpu_flags(flags, sizeof flags);
    cl_cpu_fp32_rate_from(flags, threads_per_core(), r);
}

void cl_cpu_fp32_rate_text(const cl_cpu_fp32_rate *r, char *buf, size_t len)
{
    char shared[64] = "";
    if (r->threads_per_core > 1)
        snprintf(shared, sizeof shared, " ÷ %d threads per core", r->threads_per_core);
    snprintf(buf, len, "%d lanes per logical CPU: %d-float %s vectors × %d %s%s", r->lanes_per_cpu, r->lanes, r->isa,
             r->pipes, r->fma ? "FMA pipes" : "pipe (an add and a multiply port)", shared);
}
