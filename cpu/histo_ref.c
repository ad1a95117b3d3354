/* histo_ref.c — the histogram's ground truth: the input regenerated on the host
 * from (seed, dist) with the same generator the device uses, and its exact
 * histogram. Every %histo run, GPU or CPU, is checked against it.
 *
 * Both are split over host threads by contiguous chunks of 4-byte words, so
 * that checking a 2^28-byte GPU run costs a fraction of a second on a
 * many-core host rather than seconds.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/cpu_common.h"
#include "cudalab/backend.h"
#include "cudalab/histo.h"

#define REF_MIN_CHUNK (1u << 20)    /* bytes below which another thread is not worth it */

typedef struct ref_job {
    const cl_histo_args *a;
    uint8_t *fill;                  /* fill mode: the buffer; count mode: NULL */
    uint64_t begin, end;            /* byte range */
    uint64_t counts[CL_HISTO_MAX_BINS];
} ref_job;

/* 64 jobs of 2 KiB counts each: too much for a stack, so one set, locked. */
static ref_job jobs[CL_CPU_MAX_THREADS];
static pthread_mutex_t jobs_lock = PTHREAD_MUTEX_INITIALIZER;

static void count_byte(ref_job *j, uint8_t c)
{
    int b = cl_histo_bin(c, j->a->mode, j->a->width);
    if (b >= 0)
        j->counts[b]++;
}

/* Job t of the array at arg: one per host thread, so each counts alone. */
static void ref_worker(long long t, void *arg)
{
    ref_job *j = (ref_job *)arg + t;
    const cl_histo_args *a = j->a;
    uint64_t i = j->begin;
    if (a->text) {
        for (; i < j->end; i++)
            count_byte(j, a->text[i]);
        return;
    }
    /* ranges start on a word boundary; only the last may end inside a word */
    for (; i < j->end; i += 4) {
        uint32_t w = cl_histo_word(a->seed, a->dist, i >> 2);
        int k = j->end - i < 4 ? (int)(j->end - i) : 4;
        for (int b = 0; b < k; b++) {
            uint8_t c = (uint8_t)(w >> (8 * b));
            if (j->fill)
                j->fill[i + b] = c;
            else
                count_byte(j, c);
        }
    }
}

static int ref_threads(uint64_t n)
{
    uint64_t t = n / REF_MIN_CHUNK, cpus = (uint64_t)cl_cpu_threads();
    if (t > cpus)
        t = cpus;
    return t < 1 ? 1 : (int)t;
}

static void split(ref_job *js, int nt, const cl_histo_args *a, uint8_t *fill, uint64_t n)
{
    uint64_t words = (n + 3) / 4, per = (words + (uint64_t)nt - 1) / (uint64_t)nt;
    for (int t = 0; t < nt; t++) {
        memset(&js[t], 0, sizeof js[t]);
        js[t].a = a;
        js[t].fill = fill;
        uint64_t b = (uint64_t)t * per * 4, e = b + per * 4;
        js[t].begin = b < n ? b : n;
        js[t].end = e < n ? e : n;
    }
}

int cl_histo_reference(const cl_histo_args *a, uint64_t counts[CL_HISTO_MAX_BINS], char *err)
{
    memset(counts, 0, CL_HISTO_MAX_BINS * sizeof counts[0]);
    if (a->mode == CL_HISTO_LETTERS && (a->width < 1 || a->width > 26)) {
        snprintf(err, CL_ERR_LEN, "bin width %d: letters bins are 1 to 26 letters wide", a->width);
        return -1;
    }
    int nt = ref_threads(a->n);
    pthread_mutex_lock(&jobs_lock);
    split(jobs, nt, a, NULL, a->n);
    cl_parallel_for(nt, nt, ref_worker, jobs);
    for (int t = 0; t < nt; t++)
        for (int b = 0; b < CL_HISTO_MAX_BINS; b++)
            counts[b] += jobs[t].counts[b];
    pthread_mutex_unlock(&jobs_lock);
    return 0;
}

void cl_histo_fill(uint8_t *buf, uint64_t n, uint64_t seed, int dist)
{
    cl_histo_args a;
    memset(&a, 0, sizeof a);
    a.n = n;
    a.seed = seed;
    a.dist = dist;
    int nt = ref_threads(n);
    pthread_mutex_lock(&jobs_lock);
    split(jobs, nt, &a, buf, n);
    cl_parallel_for(nt, nt, ref_worker, jobs);
    pthread_mutex_unlock(&jobs_lock);
}
