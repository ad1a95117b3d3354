/* cell.h — the running cell, shared by execute.c (its life: commands, stops,
 * the reply) and cell_output.c (what it shows: coalesced streams, results). */
#ifndef CUDALAB_CELL_H
#define CUDALAB_CELL_H

#include <stdbool.h>
#include <stddef.h>

#include "server/kernel.h"

struct cell {
    wire_msg req;               /* the execute_request, owned */
    command *cmds;
    int ncmds, next;
    bool silent, stop_on_error;
    int count;                  /* execution_count of this cell */
    bool waiting;               /* a command is in the worker */
    json_t *error;              /* {ename, evalue, traceback} of the worker's error, or NULL */
    double started_ms;          /* when the cell started (monotonic) */
    double timeout_at_ms;       /* the per-cell limit, 0 = none */
    char stop_ename[32];        /* set when the cell is being stopped: KeyboardInterrupt, TimeoutError */
    char stop_why[192];
    double kill_at_ms;          /* when a stopping worker is killed */
    size_t stream_bytes;        /* output so far, against k->max_output */
    bool stream_capped;
    char *pend;                 /* stream text not yet sent, of stream pend_name */
    size_t pend_len, pend_cap;
    char pend_name[8];
    double flush_at_ms;         /* when pending text must go out, 0 = none pending */
};

#define STREAM_FLUSH_BYTES (64u << 10)
#define STREAM_FLUSH_MS 50

/* Monotonic milliseconds, the clock of every deadline above. */
double cell_now_ms(void);
/* Sends the cell's pending stream text, if any. */
void stream_flush(kernel *k);
/* The sink through which the cell's commands report (kernel side). */
extern const magic_out cell_out;

#endif
