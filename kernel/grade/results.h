/* results.h — the results a session has seen, for %assert and %score.
 *
 * Every final result document of the session (a command's plain result, or the
 * final result of a sweep) is kept, newest first, with the execution count of
 * the cell that made it: a grade must not fail because an earlier answer was
 * forgotten. Memory is still bounded (a session of thousands of cells, or a
 * hostile one): past RESULTS_KEEP documents or RESULTS_MAX_BYTES of them the
 * oldest go, and results_evicted says so, for the error that needs it.
 * Documents are small: a result echoes at most a bounded part of its input. The kernel process records
 * what comes back from its worker; command-line mode records what it prints.
 * Nothing here touches CUDA: %assert reads documents, never devices.
 */
#ifndef CUDALAB_RESULTS_H
#define CUDALAB_RESULTS_H

#include <jansson.h>
#include <stddef.h>

#define RESULTS_KEEP 20000
#define RESULTS_MAX_BYTES (16u << 20)      /* of the documents as compact JSON; in memory about 4x */

typedef struct result_store result_store;

/* NULL when out of memory. */
result_store *results_new(void);
void results_free(result_store *rs);
/* Keeps doc (a new reference is taken) if it is an object naming its "magic";
 * cell is the execution count of the cell it came from (0 = none). */
void results_record(result_store *rs, const json_t *doc, int cell);
size_t results_count(const result_store *rs);
/* The i-th newest document (0 = the newest), borrowed; *cell its cell. NULL past the end. */
const json_t *results_get(const result_store *rs, size_t i, int *cell);
/* How many documents were dropped to keep the bounds (0 = none), and the cell
 * of the newest of them. */
size_t results_evicted(const result_store *rs, int *last_cell);

#endif
