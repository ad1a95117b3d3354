/* show_source.h — `--show-source VARIANT` and `--as-kernel` on every family
 * magic: the code of a built-in variant as it is compiled (extracted from
 * cuda/, cpu/ and include/cudalab/ at build time between show-source markers,
 * scripts/show_source.awk), and a ready %%kernel cell made from it.
 *
 * A front-end puts SHOW_SOURCE_FLAGS in its flag table and calls
 * show_source_run() first thing in its run(). With --show-source the magic
 * shows the source and does nothing else: no GPU, no backend call; its other
 * flags are ignored.
 */
#ifndef CUDALAB_MAGIC_SHOW_SOURCE_H
#define CUDALAB_MAGIC_SHOW_SOURCE_H

#include <jansson.h>
#include <stddef.h>

#include "magic/families.h"
#include "magic/magic.h"

#define SHOW_SOURCE_FLAGS                                                                         \
    {.name = "show-source", .type = FLAG_STRING,                                                  \
     .help = "show the code of this built-in variant as it runs (its kernel as taught); "        \
             "runs nothing, the other flags are ignored"},                                        \
    {.name = "as-kernel", .type = FLAG_BOOL, .def = "false",                                      \
     .help = "with --show-source: put a %%kernel cell of it, in the student signature, in the "  \
             "next input"}

/* The refusal of --show-source and --as-kernel (in params) for a family an
 * assignment grades in ctx's session (assignment.h): -1 with an
 * AssignmentError in ctx that names the assignment; 0 when they are allowed
 * or not asked for. show_source_run() calls it; the kernel process calls it
 * too, in the family magics' attach step, where the worker (whose session
 * does not see a notebook's %assignment) would otherwise answer. */
int show_source_refusal(magic_ctx *ctx, const json_t *params, const char *family);

/* 1 when params ask for no source (run() goes on as usual); 0 when the
 * source was shown (run() returns 0); -1 with a UsageError in ctx. */
int show_source_run(magic_ctx *ctx, const json_t *params, const family_spec *f);

/* The code of a built-in variant as shown: the regions of its markers in
 * order, a region from another file headed by a comment naming it. New
 * string (the caller frees it), or NULL when none is recorded. *file (may be
 * NULL) gets the file of its last region: where its kernel is. */
char *show_source_text(const char *family, const char *variant, const char **file);

/* The %%kernel cell made from a lecture variant (kernel_cell.c): new string,
 * or NULL with the reason in why. */
char *show_source_kernel_cell(const char *family, const char *variant, char *why, size_t len);

/* ---- the extracted regions (show_source.c, from the generated header) ---- */
typedef struct show_region {
    const char *family, *variant;
    const char *part;               /* "" or a part shown but not in the %%kernel cell ("2D") */
    const char *file;
    int line;                       /* of the region's first line */
    const char *text;
} show_region;

const show_region *show_source_regions(size_t *count);

#endif
