/* cpu_caches.c — the host's data caches, as sysfs names them: what %latency's
 * rows are served by, and how large a buffer must be to measure memory rather
 * than a cache (%latency's dram row, the copy bandwidth the analogues of
 * memory-bound magics compare to). Read once per process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_common.h"

#define MAX_CACHES 8

/* The first word of sysfs file index<i>/<name> of CPU 0's caches into buf: 0, or -1. */
static int cache_field(int i, const char *name, char *buf, size_t len)
{
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/%s", i, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    buf[strcspn(buf, " \n")] = '\0';
    return ok ? 0 : -1;
}

int cl_host_caches(const cl_host_cache **c)
{
    static cl_host_cache caches[MAX_CACHES];
    static int n = -1;
    *c = caches;
    if (n >= 0)
        return n;
    n = 0;
    for (int i = 0; i < MAX_CACHES && n < MAX_CACHES; i++) {
        char type[32], level[8], size[32];
        if (cache_field(i, "type", type, sizeof type) || cache_field(i, "level", level, sizeof level) ||
            cache_field(i, "size", size, sizeof size))
            break;
        if (strcmp(type, "Instruction") == 0)
            continue;
        char *end;
        uint64_t b = strtoull(size, &end, 10);
        b <<= *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
        caches[n++] = (cl_host_cache){atoi(level), b};
    }
    return n;
}

uint64_t cl_host_cache_max(void)
{
    const cl_host_cache *c;
    int n = cl_host_caches(&c);
    return n ? c[n - 1].bytes : 32u << 20;
}
