/* request.c — the sectors and bank conflicts of one warp-wide request (see request.h).
 *
 * At most 32 lanes take part, so both are small sorts: lanes usually come in address order,
 * which insertion sort passes through in one sweep.
 */
#include "request.h"

#include <stdbool.h>

static void sort_u64(uint64_t *v, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        uint64_t x = v[i];
        uint32_t j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

uint32_t warp_sectors(const warp_request *r)
{
    /* each lane's range as its first and last sector, packed (first << 32 | last) so that one sort
     * orders them by first sector; then the union of the intervals, counted */
    uint64_t span[WARP_LANES];
    uint32_t n = 0;
    for (uint32_t l = 0; l < WARP_LANES; l++)
        if (r->mask >> l & 1) {
            uint64_t lo = r->offset[l], hi = lo + (r->bytes[l] ? r->bytes[l] : 1) - 1;
            span[n++] = (lo / CL_SIMT_SECTOR_BYTES) << 32 | hi / CL_SIMT_SECTOR_BYTES;   /* both below 2^28 */
        }
    sort_u64(span, n);
    uint32_t sectors = 0;
    uint64_t end = 0;               /* one past the last sector counted */
    bool any = false;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t first = span[i] >> 32, last = span[i] & 0xffffffffu;
        if (any && first < end)
            first = end;            /* the part already counted */
        if (last + 1 > first)
            sectors += (uint32_t)(last + 1 - first);
        if (!any || last + 1 > end)
            end = last + 1;
        any = true;
    }
    return sectors;
}

uint32_t warp_bank_conflicts(const warp_request *r)
{
    uint64_t words[WARP_LANES * (LANE_BANK_BYTES / BANK_BYTES + 1)];   /* +1: a range across a word's edge */
    uint32_t n = 0;
    for (uint32_t l = 0; l < WARP_LANES; l++) {
        if (!(r->mask >> l & 1))
            continue;
        uint32_t bytes = r->bytes[l] ? r->bytes[l] : 1;
        if (bytes > LANE_BANK_BYTES)
            bytes = LANE_BANK_BYTES;
        uint64_t first = r->offset[l] / BANK_BYTES, last = ((uint64_t)r->offset[l] + bytes - 1) / BANK_BYTES;
        for (uint64_t w = first; w <= last; w++)
            words[n++] = w;
    }
    sort_u64(words, n);
    uint32_t per_bank[BANKS] = {0}, distinct = 0, most = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0 && words[i] == words[i - 1])
            continue;               /* the same word: one delivery serves every lane that wants it */
        distinct++;
        uint32_t b = (uint32_t)(words[i] % BANKS);
        if (++per_bank[b] > most)
            most = per_bank[b];
    }
    uint32_t fewest = (distinct + BANKS - 1) / BANKS;
    return most > fewest ? most - fewest : 0;
}
