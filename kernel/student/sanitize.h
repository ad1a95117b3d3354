/* sanitize.h — a student's kernel under compute-sanitizer (worker side).
 *
 * The kernel runs at its family's quick-check size in a fresh process started
 * under compute-sanitizer: this binary's command-line mode given a %%kernel
 * cell rebuilt from the definition, so the sanitizer sees a clean context and
 * a fault cannot touch the worker. Its report is read back and each finding
 * mapped to the cell's lines (the cubin has -lineinfo and the source its
 * #line). compute-sanitizer ships with the CUDA toolkit; where it is missing
 * or refuses to run the result says "unavailable" and why.
 *
 * racecheck of a kernel that uses __shared__ runs once per source and options
 * (cached beside the cubins) when %%kernel compiles it on a GPU; --sanitize on
 * a family's magic runs memcheck, racecheck, synccheck and initcheck.
 */
#ifndef CUDALAB_STUDENT_SANITIZE_H
#define CUDALAB_STUDENT_SANITIZE_H

#include <jansson.h>

#include "magic/magic.h"
#include "student/store.h"

/* Set in the sanitized process: its %%kernel runs no sanitizer of its own. */
#define SANITIZE_ENV "CUDALAB_SANITIZING"
/* How long one tool may take. */
#define SANITIZE_TIMEOUT_S 120

/* Runs one tool ("memcheck", "racecheck", ...) on d. Returns
 * {"tool", "status": "passed" | "failed" | "unavailable", "findings": [lines], "reason"?, "seconds"}. */
json_t *student_sanitize(const student_def *d, const char *tool);
/* --sanitize on a family's magic: every student kernel that params' --variant
 * names, under memcheck, racecheck, synccheck and initcheck, reported as one
 * result; a finding fails the cell (SanitizerError). 0, or -1 with the error. */
int student_sanitize_command(magic_ctx *ctx, const family_spec *f, const json_t *params);

/* racecheck for %%kernel: cached by key (the build's), NULL when the source uses no __shared__. */
json_t *student_racecheck_cached(const student_def *d, const char *key);

#endif
