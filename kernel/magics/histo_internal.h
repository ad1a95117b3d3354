/* histo_internal.h — the pieces of the %histo magic, shared between its files:
 *   histo.c         flags, the point function, run objects and checks
 *   histo_params.c  params resolved and refused before anything runs
 *   histo_view.c    bin labels, the "bins" JSON and the bins table in the view
 */
#ifndef CUDALAB_MAGICS_HISTO_INTERNAL_H
#define CUDALAB_MAGICS_HISTO_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "magic/families.h"
#include "magic/magic.h"
#include "magic/sweep.h"

/* ---- histo.c ---- */

/* The family as the framework serves it (its --variant flag's choices). */
extern const family_spec histo_family;

struct student_def;
/* The student kernel (%%kernel --for histo) of that name, or NULL: a built-in
 * variant, another family's kernel or none. */
const struct student_def *histo_student(struct lab_session *lab, const char *name);

/* ---- histo_params.c ---- */

/* The params a sweep runs: a copy of params with the input's size, dist and
 * bins filled in, --variant all expanded, keys in flag order (the sweep's
 * order whatever order the flags were typed in). NULL with the error in ctx
 * when a flag does not apply or a size or block cannot run on ctx->backend.
 * New reference. */
json_t *histo_params(magic_ctx *ctx, const json_t *params, const char *body);

/* ---- histo_view.c ---- */

/* "a-d", "z" (letters) or "0x41 'A'", "0x0a" (bytes). */
void histo_bin_label(int mode, int width, int bin, char *buf, size_t len);

/* The run's "bins": an array of 256 counts (bytes) or an object keyed by
 * label in bin order (letters). New reference. */
json_t *histo_bins_json(int mode, int width, const uint64_t *counts, int nbins);

/* sweep_run, with the first run's bins table added to every view it shows
 * (before the runs table). Errors land in ctx as sweep_run leaves them. */
int histo_sweep_run(magic_ctx *ctx, const sweep_spec *s, const json_t *params, void *user);

#endif
