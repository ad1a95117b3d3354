/* recorded.h — results recorded on a GPU, shown beside the CPU backend's runs.
 *
 * A lecture notebook's prose speaks of GPU numbers. Where no GPU is available
 * (a laptop, CI), the notebook still shows them: `make record` ran it once on
 * a GPU and kept each command's results (the document and its view) in
 * notebooks/recorded/GPU/NAME.json (one folder per GPU it was recorded on, named
 * after the device: h100-80gb-hbm3, h200), labelled with the device, the date and
 * the cudalab version. The notebook's first cell says which file is its own:
 *
 *   %recorded 03-matrix-multiplication     loads recorded/GPU/03-matrix-multiplication.json
 *
 * GPU is --gpu's folder (or the one its name starts), else CUDALAB_RECORDED_GPU's, else
 * the newest recording of the notebook ("recorded_at"); a file DIR/NAME.json with no GPU
 * folder (a test's fixture) is one more candidate.
 *
 * (the kernel's working directory is the notebook's folder, as Jupyter starts
 * it: a kernel is told no notebook path reliably, so the notebook names itself).
 * From then on every device command whose live result comes from the CPU
 * backend gets the recorded results of the same command attached: its view
 * shows one comparison, the recorded table of runs joined into its own
 * (recorded_join: rows matched by variant and parameters, each measured
 * column once per device), then whatever else was recorded (charts, notes)
 * under a label; its document gains a
 * "recorded" object ({file, device, date, cudalab_version, results}), and the
 * recorded documents go to a store of their own, in the order they were shown,
 * which %assert's gpu. and recorded. names read (expr.h).
 *
 * A command is the same command when its key is (lang.h: command.key: the
 * line after {NAME} substitution, tokens one space apart, a cell magic's body).
 *
 * Record mode: with CUDALAB_RECORD=DIR in the kernel's environment (set by
 * scripts/record.py, DIR being its --out/GPU), %recorded NAME starts DIR/NAME.json
 * afresh instead, and
 * every device command's results are written to it as they come (the whole
 * file, replaced atomically after each command's result).
 *
 * The file (tests/schemas/recorded.schema.json is its schema; `make test`
 * validates every committed one, each document against its magic's schema too):
 *
 *   {"format": "cudalab-recorded", "version": 1, "notebook": "NAME",
 *    "device": {"name": ..., "backend": "cuda", ...}, "date": "YYYY-MM-DD",
 *    "recorded_at": "YYYY-MM-DDTHH:MM:SSZ", "cudalab_version": "0.1.0",
 *    "commands": [{"key": "%matmul --size 512", "results": [{"doc": {...} | null, "view": {...}}]}]}
 */
#ifndef CUDALAB_RECORDED_H
#define CUDALAB_RECORDED_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"
#include "grade/results.h"
#include "lang/lang.h"

#define RECORDED_FORMAT "cudalab-recorded"
#define RECORDED_VERSION 1
#define RECORDED_DIR "recorded"             /* beside the notebooks: where %recorded looks by default */
#define RECORDED_MAX_BYTES (32u << 20)      /* a file larger than this is refused unread */
#define RECORDED_ENV "CUDALAB_RECORD"       /* record mode: the directory the files are written to */
#define RECORDED_GPU_ENV "CUDALAB_RECORDED_GPU" /* the GPU folder %recorded shows when --gpu is not given */

typedef struct recording recording;

/* NULL when out of memory. */
recording *recording_new(void);
void recording_free(recording *r);

/* %recorded: name (a notebook's name: letters, digits, '.', '_', '-') in dir
 * (NULL: RECORDED_DIR), recorded on gpu (NULL: RECORDED_GPU_ENV's, else the
 * newest). Loads the file, or in record mode starts it; a
 * notebook with no recording yet is no error (*view says so). On success 0
 * and *view a new view saying what was loaded; -1 with err filled (the
 * previous recording, if any, is kept). */
int recording_open(recording *r, const char *name, const char *dir, const char *gpu, json_t **view, error_info *err);

/* The recorded documents shown so far in this session, newest first, for
 * gpu. and recorded. names; NULL when no recording is loaded (nothing can be
 * checked against a GPU here). */
const result_store *recording_results(const recording *r);
/* The key of a marker among those results: the newest command of its magic ran here without a
 * recorded result ({"magic": NAME, RECORDED_MISSING_KEY: true}); a check of it is not checked. */
#define RECORDED_MISSING_KEY "not_recorded"

/* A device command's result on its way to the notebook (doc may be NULL: a
 * chart). final: a plain or final result (not a progress display). run tells
 * one run of a command from the next (the same command may run twice). In
 * record mode it is written to the file; otherwise, when doc came from the
 * CPU backend, the first such result of the run gets the command's recorded
 * results attached to doc and view (both changed in place), and they join
 * recording_results with the cell's number. */
void recording_result(recording *r, const command *cmd, unsigned long run, int cell, json_t *doc, json_t *view,
                      bool final);

/* A view's table of runs: its first table with a variant column, else its first table; or NULL. */
const json_t *recorded_runs_table(const json_t *view);
/* Joins table (a recorded run's, or NULL) into the table of runs of view (this machine's run), in place
 * (recorded_join.c): one table, rows matched by variant and parameters, each measured column twice,
 * headed "NAME (here_name)" and "NAME (there_name)", with note placed before it. False (view
 * unchanged) when the tables share no identifying column or no run. */
bool recorded_join(json_t *view, const json_t *table, const char *here_name, const char *there_name,
                   const char *note);

/* Whether doc is the stand-in of a --gpu-only command that did not run on the CPU backend
 * (worker.c: {"magic", "backend": "cpu", "gpu_only": true, "params"}). */
bool recording_is_stand_in(const json_t *doc);

/* A stand-in's way to the notebook: with the command's recorded results, they are attached to doc and
 * view as to a CPU run's (recording_result; gpu.NAME reads them) and true comes back: show them. Else
 * (nothing loaded, the command not recorded, record mode: a stand-in is never recorded) false, and
 * text (len bytes) says why nothing is shown. */
bool recording_stand_in(recording *r, const command *cmd, unsigned long run, int cell, json_t *doc, json_t *view,
                        char *text, size_t len);

#endif
