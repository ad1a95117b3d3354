/* cpu_pool.c — the CPU backend's one way to run work on host threads
 * (cpu_common.h): threads started per call and joined before it returns, the
 * caller working as thread 0. A launch of a CPU analogue lasts milliseconds
 * or more, so starting threads per call costs little and keeps no state
 * between commands (nothing to tear down when the worker forks or exits). */
#include <pthread.h>
#include <unistd.h>

#include "cpu_common.h"

int cl_cpu_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > CL_CPU_MAX_THREADS ? CL_CPU_MAX_THREADS : (int)n;
}

int cl_cpu_threads_for(uint64_t elements)
{
    uint64_t worth = (elements >> 16) + 1;
    int all = cl_cpu_threads();
    return worth < (uint64_t)all ? (int)worth : all;
}

/* Threads for count items: as asked (0 = one per CPU), at most
 * CL_CPU_MAX_THREADS, never more than count, at least one. */
static int threads_for(int threads, uint64_t count)
{
    if (threads <= 0)
        threads = cl_cpu_threads();
    if (threads > CL_CPU_MAX_THREADS)
        threads = CL_CPU_MAX_THREADS;
    if ((uint64_t)threads > count)
        threads = count < 1 ? 1 : (int)count;
    return threads;
}

/* One thread's share of a parallel-for: indices first, first+stride, ... */
typedef struct pool_share {
    long long count;
    int stride, first;
    void (*fn)(long long i, void *arg);
    void *arg;
} pool_share;

static void *share_main(void *arg)
{
    const pool_share *s = arg;
    for (long long i = s->first; i < s->count; i += s->stride)
        s->fn(i, s->arg);
    return NULL;
}

int cl_parallel_for(long long count, int threads, void (*fn)(long long i, void *arg), void *arg)
{
    threads = threads_for(threads, count < 0 ? 0 : (uint64_t)count);
    pthread_t tid[CL_CPU_MAX_THREADS];
    pool_share share[CL_CPU_MAX_THREADS];
    bool started[CL_CPU_MAX_THREADS];
    for (int t = 0; t < threads; t++) {
        share[t] = (pool_share){ count, threads, t, fn, arg };
        started[t] = t > 0 && pthread_create(&tid[t], NULL, share_main, &share[t]) == 0;
    }
    share_main(&share[0]);
    for (int t = 1; t < threads; t++) {
        if (started[t])
            pthread_join(tid[t], NULL);
        else
            share_main(&share[t]);
    }
    return threads;
}

/* ---- contiguous ranges over the pool ---- */

typedef struct range_split {
    uint64_t count;
    int parts;
    cl_range_fn fn;
    void *ctx;
} range_split;

static void range_part(long long t, void *arg)
{
    const range_split *r = arg;
    uint64_t k = (uint64_t)t, parts = (uint64_t)r->parts;
    r->fn(r->count * k / parts, r->count * (k + 1) / parts, r->ctx);
}

int cl_parallel_ranges(uint64_t count, int threads, cl_range_fn fn, void *ctx)
{
    if (count == 0)
        return 1;
    threads = threads_for(threads, count);
    range_split r = { count, threads, fn, ctx };
    return cl_parallel_for(threads, threads, range_part, &r);
}
