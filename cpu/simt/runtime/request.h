/* request.h — one warp-wide memory request of the CPU runner's counting (count.c): which lanes
 * took part and where each one accessed, and the two numbers --counters reads from it, as a GPU's
 * memory pipeline sees a warp's access: 32-byte sectors for global memory, 4-byte banks for
 * shared memory. Pure arithmetic on the request, so that tests/unit/test_simt_counts.c checks it
 * without running a kernel.
 */
#ifndef CUDALAB_SIMT_REQUEST_H
#define CUDALAB_SIMT_REQUEST_H

#include <stdint.h>

#include "cudalab/simt.h"

/* hidden: nothing of the runner's own is a name the student's object may resolve (internal.h) */
#pragma GCC visibility push(hidden)

#define WARP_LANES 32               /* a lane mask's bits */
#define BANKS 32
#define BANK_BYTES 4
/* The widest access one lane makes in one instruction (a float4): a wider range (a copy the
 * compiler left as a call) is a loop of instructions on a GPU, so the banks see its first 16. */
#define LANE_BANK_BYTES 16
#define LANE_BYTES_MAX UINT16_MAX   /* what a request keeps of one lane's range */

typedef struct warp_request {
    uint32_t mask;                  /* lanes that took part (bit i: lane i) */
    uint32_t offset[WARP_LANES];    /* each one's first byte, from its memory's page-aligned base
                                       (the arena, the block's shared memory): the same sectors and
                                       banks as the addresses' */
    uint16_t bytes[WARP_LANES];     /* and how many bytes (a longer range: its first LANE_BYTES_MAX) */
} warp_request;

/* The distinct 32-byte sectors the lanes' ranges touch together: 4 for 32 lanes loading
 * consecutive floats, 32 for a stride of 32 floats (a sector each), 1 for all loading one. */
uint32_t warp_sectors(const warp_request *r);

/* The extra wavefronts bank conflicts cost a shared-memory request: the most distinct 4-byte words
 * that one of the 32 banks must deliver, less the fewest wavefronts the request's distinct words
 * need (one per 32 words: 1 for 4-byte accesses, 2 for 8-byte ones). Lanes reading one word share
 * it (a broadcast): 0 for consecutive floats or one word for all, 1 for a stride of 2 floats, 31
 * for a stride of 32 (a column of a 32-wide tile). */
uint32_t warp_bank_conflicts(const warp_request *r);

#pragma GCC visibility pop

#endif
