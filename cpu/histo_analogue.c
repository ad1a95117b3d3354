/* histo_analogue.c — the CPU analogue of each %histo variant: the same logical
 * grid, the same per-thread access pattern and the same kind of histogram
 * (one global array of atomics, a private copy per block, per warp or per
 * lane), run by host threads one logical block at a time (cpu/histo_cpu.h).
 *
 * On a CPU the lessons turn around (a contiguous section is what caches like
 * best), which is worth seeing next to the GPU numbers; the counts must agree
 * exactly either way.
 */
#include <string.h>

#include "histo_cpu.h"

#define WARP 32
#define CHUNK 16                    /* bytes per vector load in warp and fast */

static void add_global(const cpu_histo *h, int b, uint32_t v)
{
    atomic_fetch_add_explicit(&h->global[b], v, memory_order_relaxed);
}

static void merge(const cpu_histo *h, const uint32_t *priv)
{
    for (int b = 0; b < h->nbins; b++)
        if (priv[b])
            add_global(h, b, priv[b]);
}

static uint64_t threads_total(const cpu_histo *h)
{
    return (uint64_t)h->grid * (uint64_t)h->block;
}

/* show-source: histo cpu */
/* The whole input in one loop: the taught sequential code. */
static void count_all(const cpu_histo *h)
{
    uint32_t hist[CL_HISTO_MAX_BINS] = {0};
    for (uint64_t i = 0; i < h->n; i++) {
        int b = h->bin[h->in[i]];
        if (b >= 0)
            hist[b]++;
    }
    merge(h, hist);
}
/* show-source: end */

void analogue_cpu(const cpu_histo *h, int blk)
{
    if (blk == 0)
        count_all(h);
}

void analogue_cub(const cpu_histo *h, int blk)
{
    if (blk == 0)
        count_all(h);
}

void analogue_sectioned(const cpu_histo *h, int blk)
{
    uint64_t total = threads_total(h), section = (h->n + total - 1) / total;
    for (int t = 0; t < h->block; t++) {
        uint64_t gt = (uint64_t)blk * (uint64_t)h->block + (uint64_t)t;
        uint64_t start = gt * section, end = start + section < h->n ? start + section : h->n;
        for (uint64_t i = start; i < end; i++) {
            int b = h->bin[h->in[i]];
            if (b >= 0)
                add_global(h, b, 1);
        }
    }
}

void analogue_interleaved(const cpu_histo *h, int blk)
{
    uint64_t total = threads_total(h);
    for (int t = 0; t < h->block; t++) {
        for (uint64_t i = (uint64_t)blk * (uint64_t)h->block + (uint64_t)t; i < h->n; i += total) {
            int b = h->bin[h->in[i]];
            if (b >= 0)
                add_global(h, b, 1);
        }
    }
}

void analogue_privatized(const cpu_histo *h, int blk)
{
    uint32_t priv[CL_HISTO_MAX_BINS] = {0};
    uint64_t total = threads_total(h);
    for (int t = 0; t < h->block; t++) {
        for (uint64_t i = (uint64_t)blk * (uint64_t)h->block + (uint64_t)t; i < h->n; i += total) {
            int b = h->bin[h->in[i]];
            if (b >= 0)
                priv[b]++;
        }
    }
    merge(h, priv);
}

/* Bytes past the last whole 16-byte chunk, grid-stride, one per thread. */
static void tail_bytes(const cpu_histo *h, uint64_t gt, uint32_t *hist, int stride_words)
{
    uint64_t total = threads_total(h);
    for (uint64_t i = h->n / CHUNK * CHUNK + gt; i < h->n; i += total) {
        int b = h->bin[h->in[i]];
        if (b >= 0)
            hist[(size_t)b * (size_t)stride_words]++;
    }
}

void analogue_warp(const cpu_histo *h, int blk)
{
    static _Thread_local uint32_t sub[1024 / WARP][CL_HISTO_MAX_BINS];
    int warps = (h->block + WARP - 1) / WARP;
    memset(sub, 0, sizeof sub[0] * (size_t)warps);
    uint64_t total = threads_total(h), chunks = h->n / CHUNK;
    for (int t = 0; t < h->block; t++) {
        uint32_t *mine = sub[t / WARP];
        uint64_t gt = (uint64_t)blk * (uint64_t)h->block + (uint64_t)t;
        for (uint64_t c = gt; c < chunks; c += total) {
            const uint8_t *p = h->in + c * CHUNK;
            int cur = h->bin[p[0]];
            uint32_t run = 1;
            for (int k = 1; k < CHUNK; k++) {
                int b = h->bin[p[k]];
                if (b == cur) {
                    run++;
                    continue;
                }
                if (cur >= 0)
                    mine[cur] += run;
                cur = b;
                run = 1;
            }
            if (cur >= 0)
                mine[cur] += run;
        }
        tail_bytes(h, gt, mine, 1);
    }
    for (int w = 1; w < warps; w++)
        for (int b = 0; b < h->nbins; b++)
            sub[0][b] += sub[w][b];
    merge(h, sub[0]);
}

void analogue_fast(const cpu_histo *h, int blk)
{
    static _Thread_local uint32_t lanes[CL_HISTO_MAX_BINS][WARP];
    memset(lanes, 0, sizeof lanes[0] * (size_t)h->nbins);
    uint64_t total = threads_total(h), chunks = h->n / CHUNK;
    for (int t = 0; t < h->block; t++) {
        uint32_t *col = &lanes[0][t % WARP];
        uint64_t gt = (uint64_t)blk * (uint64_t)h->block + (uint64_t)t;
        for (uint64_t c = gt; c < chunks; c += total) {
            const uint8_t *p = h->in + c * CHUNK;
            for (int k = 0; k < CHUNK; k++) {
                int b = h->bin[p[k]];
                if (b >= 0)
                    col[(size_t)b * WARP]++;
            }
        }
        tail_bytes(h, gt, col, WARP);
    }
    uint32_t sum[CL_HISTO_MAX_BINS] = {0};
    for (int b = 0; b < h->nbins; b++)
        for (int l = 0; l < WARP; l++)
            sum[b] += lanes[b][l];
    merge(h, sum);
}

size_t analogue_private_bytes(int variant, const cpu_histo *h)
{
    size_t bins = (size_t)h->nbins * sizeof(uint32_t);
    switch (variant) {
    case CL_HISTO_V_privatized: return bins;
    case CL_HISTO_V_warp:       return bins * (size_t)((h->block + WARP - 1) / WARP);
    case CL_HISTO_V_fast:       return bins * WARP;
    default:                    return 0;
    }
}
