/* histo_cpu.h — what cpu/histo_cpu.c (the runner) and cpu/histo_analogue.c (the
 * variants) share: one logical launch of a histogram on the host.
 *
 * A CPU analogue keeps its GPU variant's partitioning: the logical grid of
 * blocks x threads is the same, host threads take whole blocks in turn (block
 * b on host thread b mod H) and run each logical thread's loop in order, and
 * the "device" histogram is an array of C11 atomics that every host thread
 * adds to, as blocks add to global memory.
 */
#ifndef CUDALAB_CPU_HISTO_CPU_H
#define CUDALAB_CPU_HISTO_CPU_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cudalab/histo.h"

/* One "device" counter per cache line. A GPU's atomics on different bins do
 * not contend; host threads adding to neighbouring bins of one line would
 * (false sharing), so only threads that hit the same bin wait for each other,
 * as on the GPU. */
typedef struct cpu_bin {
    alignas(64) _Atomic uint32_t count;
} cpu_bin;

typedef struct cpu_histo {
    const uint8_t *in;
    uint64_t n;
    int nbins;
    int16_t bin[256];               /* byte -> bin, or -1: not counted */
    int grid, block;                /* the logical launch */
    cpu_bin *global;                /* nbins counters, zeroed before each run */
} cpu_histo;

/* Runs logical block blk of a launch. */
typedef void (*cpu_block_fn)(const cpu_histo *h, int blk);

/* How the CPU backend runs one row of CL_HISTO_VARIANTS (cpu/histo_analogue.c). */
typedef struct cpu_hg_impl {
    const char *config;             /* the analogue in words (the contract's launch is the GPU's) */
    cpu_block_fn analogue;          /* one logical block of it */
    const char *sequential;         /* a loop on 1 host thread (1 block of 1 thread), in words; NULL:
                                       host threads run the blocks of the launch */
} cpu_hg_impl;

/* Each row's analogue, cpu_hg_<impl> (the row's impl, histo.h); weak, so a row without one is NULL
 * here. */
#define CPU_HG_WEAK_(id, name, impl, ...) CL_VARIANT_WEAK_(cpu_hg_impl, cpu_hg_, impl)
CL_HISTO_VARIANTS(CPU_HG_WEAK_)
#undef CPU_HG_WEAK_

#endif
