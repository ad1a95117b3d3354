/* results.h — the results a session has seen, for %assert and %score.
 *
 * Every final result document of the session (a command's plain result, or the
 * final result of a sweep) is kept, newest first, up to RESULTS_KEEP of them,
 * with the execution count of the cell that made it. The kernel process records
 * what comes back from its worker; command-line mode records what it prints.
 * Nothing here touches CUDA: %assert reads documents, never devices.
 */
#ifndef CUDALAB_RESULTS_H
#define CUDALAB_RESULTS_H

#include <jansson.h>
#include <stddef.h>

#define RESULTS_KEEP 64

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

#endif
