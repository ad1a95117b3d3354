/* inner_run.h — a family's command run inside another command of the worker: the %%kernel quick
 * check (kernel/magics/kernel.c) and the lesson checks' run on the CPU runner (lesson_run.c). Its
 * final document is captured instead of shown, and its error kept apart from the outer command's.
 */
#ifndef CUDALAB_STUDENT_INNER_RUN_H
#define CUDALAB_STUDENT_INNER_RUN_H

#include <jansson.h>
#include <stdbool.h>

#include "magic/magic.h"

typedef struct inner_run {
    json_t *doc;                    /* the command's final document, or NULL */
    int rc;                         /* what its magic returned */
    error_info error;               /* its error (ename "" when none) */
    json_t *traceback;              /* and the error's lines, or NULL */
} inner_run;

/* Runs line (one magic command) on backend in the session of ctx. streams: a kernel's printf
 * output goes on to ctx's cell (else nowhere). 0 with out filled (out->rc and out->error: the
 * command's own outcome), or -1 with the error in ctx when the line does not parse. */
int inner_run_line(magic_ctx *ctx, const cl_backend *backend, const char *line, bool streams, inner_run *out);
void inner_run_free(inner_run *r);

#endif
