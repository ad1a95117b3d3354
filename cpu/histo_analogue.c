/* histo_analogue.c — the CPU analogue of each %histo variant: the same logical
 * grid, the same per-thread access pattern, the same loads (warp and fast
 * read a 16-byte chunk at once, as the GPU's uint4; fast keeps two in flight)
 * and the same kind of histogram (one global array of atomics, a private
 * copy per block, per warp or per lane), run by host threads one logical
 * block at a time (cpu/histo_cpu.h). `cpu` is the loop as taught; cub, which
 * needs a GPU, is stood in for by a tuned one-thread loop.
 *
 * On a CPU the lessons turn around (a contiguous section is what caches like
 * best), which is worth seeing next to the GPU numbers; the counts must agree
 * exactly either way.
 */
#include <string.h>

#include "histo_cpu.h"

#define WARP CL_HISTO_WARP
#define CHUNK 16                    /* bytes per vector load in warp and fast */

static void add_global(const cpu_histo *h, int b, uint32_t v)
{
    atomic_fetch_add_explicit(&h->global[b].count, v, memory_order_relaxed);
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

static void analogue_cpu(const cpu_histo *h, int blk)
{
    if (blk == 0)
        count_all(h);
}

const cpu_hg_impl cpu_hg_cpu = {"CPU analogue: 1 host thread (the same loop)", analogue_cpu,
                                "sequential loop, 1 host thread"};

/* cub's stand-in, the CPU reference loop: one host thread, 8 bytes per load,
 * byte k of a word counted in copy k of the histogram (so that a run of
 * equal bytes does not wait on its own increments) and bytes outside every
 * bin counted in a spare bin (so that no branch depends on the data). */
#define COPIES 8                    /* one per byte of a 64-bit load */

static void count_all_copies(const cpu_histo *h)
{
    uint16_t slot[256];
    for (int c = 0; c < 256; c++)
        slot[c] = h->bin[c] < 0 ? CL_HISTO_MAX_BINS : (uint16_t)h->bin[c];
    uint32_t copies[COPIES][CL_HISTO_MAX_BINS + 1] = {{0}};
    uint64_t i = 0;
    for (; i + COPIES <= h->n; i += COPIES) {
        uint64_t w;
        memcpy(&w, h->in + i, sizeof w);
#pragma GCC unroll 8
        for (int k = 0; k < COPIES; k++, w >>= 8)
            copies[k][slot[(uint8_t)w]]++;
    }
    for (; i < h->n; i++)
        copies[0][slot[h->in[i]]]++;
    for (int b = 0; b < h->nbins; b++)
        for (int k = 1; k < COPIES; k++)
            copies[0][b] += copies[k][b];
    merge(h, copies[0]);
}

static void analogue_cub(const cpu_histo *h, int blk)
{
    if (blk == 0)
        count_all_copies(h);
}

const cpu_hg_impl cpu_hg_cub = {"CPU analogue: the CPU reference (no cub on the CPU)", analogue_cub,
                                "the CPU reference loop, 1 host thread, 8 copies of the histogram (cub needs a GPU)"};

static void analogue_sectioned(const cpu_histo *h, int blk)
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

const cpu_hg_impl cpu_hg_sectioned = {"CPU analogue: host threads run the blocks; global atomics", analogue_sectioned,
                                      NULL};

static void analogue_interleaved(const cpu_histo *h, int blk)
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

const cpu_hg_impl cpu_hg_interleaved = {"CPU analogue: host threads run the blocks; global atomics", analogue_interleaved,
                                        NULL};

static void analogue_privatized(const cpu_histo *h, int blk)
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

const cpu_hg_impl cpu_hg_privatized = {"CPU analogue: host threads run the blocks; one private histogram per block", analogue_privatized,
                                       NULL};

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

/* A 16-byte chunk, loaded at once as the GPU's uint4: two words held in registers. */
typedef struct chunk16 {
    uint64_t w[2];
} chunk16;

static chunk16 load_chunk(const cpu_histo *h, uint64_t c)
{
    chunk16 q;
    memcpy(q.w, h->in + c * CHUNK, CHUNK);
    return q;
}

/* Adds one chunk to a warp's histogram, one add per run of equal bins. */
static void warp_chunk(const cpu_histo *h, uint32_t *mine, chunk16 q)
{
    int cur = h->bin[(uint8_t)q.w[0]];
    uint32_t run = 0;
    for (int i = 0; i < 2; i++) {
        for (uint64_t w = q.w[i], k = 0; k < sizeof w; k++, w >>= 8) {
            int b = h->bin[(uint8_t)w];
            if (b == cur) {
                run++;
                continue;
            }
            if (cur >= 0)
                mine[cur] += run;
            cur = b;
            run = 1;
        }
    }
    if (cur >= 0)
        mine[cur] += run;
}

static void analogue_warp(const cpu_histo *h, int blk)
{
    static _Thread_local uint32_t sub[1024 / WARP][CL_HISTO_MAX_BINS];
    int warps = (h->block + WARP - 1) / WARP;
    memset(sub, 0, sizeof sub[0] * (size_t)warps);
    uint64_t total = threads_total(h), chunks = h->n / CHUNK;
    for (int t = 0; t < h->block; t++) {
        uint32_t *mine = sub[t / WARP];
        uint64_t gt = (uint64_t)blk * (uint64_t)h->block + (uint64_t)t;
        for (uint64_t c = gt; c < chunks; c += total) {
            warp_chunk(h, mine, load_chunk(h, c));
        }
        tail_bytes(h, gt, mine, 1);
    }
    for (int w = 1; w < warps; w++)
        for (int b = 0; b < h->nbins; b++)
            sub[0][b] += sub[w][b];
    merge(h, sub[0]);
}

const cpu_hg_impl cpu_hg_warp = {"CPU analogue: host threads run the blocks; one histogram per warp; runs aggregated", analogue_warp,
                                 NULL};

/* Counts one chunk into a lane's column of copies. */
static void fast_chunk(const cpu_histo *h, uint32_t *col, chunk16 q)
{
    for (int i = 0; i < 2; i++) {
        for (uint64_t w = q.w[i], k = 0; k < sizeof w; k++, w >>= 8) {
            int b = h->bin[(uint8_t)w];
            if (b >= 0)
                col[(size_t)b * WARP]++;
        }
    }
}

static void analogue_fast(const cpu_histo *h, int blk)
{
    static _Thread_local uint32_t lanes[CL_HISTO_MAX_BINS][WARP];
    memset(lanes, 0, sizeof lanes[0] * (size_t)h->nbins);
    uint64_t total = threads_total(h), chunks = h->n / CHUNK;
    for (int t = 0; t < h->block; t++) {
        uint32_t *col = &lanes[0][t % WARP];
        uint64_t gt = (uint64_t)blk * (uint64_t)h->block + (uint64_t)t, c = gt;
        for (; c + total < chunks; c += 2 * total) {
            chunk16 a = load_chunk(h, c), b = load_chunk(h, c + total);
            fast_chunk(h, col, a);
            fast_chunk(h, col, b);
        }
        if (c < chunks)
            fast_chunk(h, col, load_chunk(h, c));
        tail_bytes(h, gt, col, WARP);
    }
    uint32_t sum[CL_HISTO_MAX_BINS] = {0};
    for (int b = 0; b < h->nbins; b++)
        for (int l = 0; l < WARP; l++)
            sum[b] += lanes[b][l];
    merge(h, sum);
}

const cpu_hg_impl cpu_hg_fast = {"CPU analogue: host threads run the blocks; 32 lane copies per block", analogue_fast,
                                 NULL};
