/* check.h — the one "check" object every family's run carries, written
 * through these functions so that it reads the same everywhere (a grader's
 * %assert needs no family's spelling):
 *
 *   {"passed": true|false|null, "method": "how it was checked",
 *    "tolerance": 0 (exact) | the bound the method states (a relative tolerance, or
 *                 an absolute one where the method says so) | null (not one number),
 *    "wrong": {"count": N, "first": null | {"at": {<the family's coordinates by name>},
 *                                           "got": x|null, "want": y|null}},
 *    "first_wrong": "C[3][7] = 0, expected 1.5" (only when something is wrong),
 *    "tools": {"racecheck"|"cpu-runner"|…: {"status": "passed"|"failed"|"unavailable",
 *                                           "findings": [lines], "reason": …}},
 *    … what else the family measures (max_rel_err, bins_compared, …)}
 *
 * Coordinates are named as the lecture names them: {"index": i} for a vector,
 * {"row": r, "col": c} for a matrix or an image, {"bin": "a-d", "index": b} for
 * a histogram, {"partial": p} for a reduction's per-block sums; {} for a
 * single value. got/want are null where a value is not a number (an element
 * never written still holds the NaN sentinel). The schema is
 * tests/schemas/check.schema.json; a %assert that reads an old spelling is
 * told the new one (grade/expr_select.c's renames).
 */
#ifndef CUDALAB_MAGIC_CHECK_H
#define CUDALAB_MAGIC_CHECK_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* A new check: passed, how, and its tolerance (< 0: null, a check whose bound
 * is not one number). wrong starts at {count 0, first null}. */
json_t *check_new(bool passed, const char *method, double tolerance);
/* A check that did not run: {"passed": null, "method": why}, why NULL for --no-check's
 * "skipped (--no-check)". */
json_t *check_skipped(const char *why);
/* How many values are wrong, and the first of them: at (stolen; {} for a
 * single value; NULL where the check cannot tell which: first is null), its
 * value and the expected one (NaN or inf: null). Sets passed false when
 * count > 0. */
void check_wrong(json_t *check, uint64_t count, json_t *at, double got, double want);
/* check_wrong for integer values (counts of a histogram, an int reduction). */
void check_wrong_int(json_t *check, uint64_t count, json_t *at, long long got, long long want);
/* The first wrong value in words ("C[3][7] = 0, expected 1.5"): first_wrong. */
void check_first_wrong(json_t *check, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A tool's findings on the run (racecheck, the CPU runner): tools.<tool> =
 * report (stolen: {"status", "findings", "reason"?}). */
void check_tool(json_t *check, const char *tool, json_t *report);

/* The CPU runner's run of a student's kernel (its lesson run, kernel/student/lesson_run.c) merged
 * into a run's check as tools["cpu-runner"]: ename "" or CheckError (it found nothing; a wrong
 * result is the check's own business): passed; KernelError (its findings: a race, uninitialised
 * shared memory, a missing barrier, an access out of bounds): failed, with lines (NULL: evalue)
 * as the findings, and the check failed, on a GPU as on the CPU backend; any other error (the
 * runner could not build or run it, or ran past its limit): unavailable, with evalue as the
 * reason, the check as it was. Returns whether it failed the check. */
bool check_cpu_runner(json_t *check, const char *ename, const char *evalue, const json_t *lines);

/* A field the families' checks had before they were one document (a run's
 * "found", a check's "first_bad", ...): the path that holds it now
 * ("check.wrong.first"), with *more saying where its parts went (or NULL);
 * NULL for a name that was never a check's. %assert names it in its error. */
const char *check_renamed(const char *field, const char **more);

/* x as a JSON real, or null where JSON has no number for it (NaN, inf). */
json_t *json_real_or_null(double x);

#endif
