/* shared_rewrite.h — a student's kernel source made ready for the CPU runner:
 * every __shared__ declaration rewritten into a call to the runtime
 * (cpu/simt/runtime/cudalab_simt.h declares __cudalab_shared and
 * __cudalab_dyn_shared), so that each array is placed apart, with red zones,
 * once per block, and is known by its name and shape in error messages.
 *
 * Function scope (one id per declarator, in source order, 0..63):
 *     __shared__ float t[TILE][TILE+1];
 *  -> float (&t)[TILE][TILE+1] = *(float (*)[TILE][TILE+1])__cudalab_shared(0, sizeof(float),
 *         alignof(float), "t", __LINE__, 2, (unsigned)(TILE), (unsigned)(TILE+1));
 *     extern __shared__ float dyn[];
 *  -> float *const dyn = (float *)__cudalab_dyn_shared(sizeof(float), alignof(float), "dyn", __LINE__);
 * At file scope an accessor function takes the declaration's place, and a
 * #define NAME line after its line (then a #line directive) sends every use
 * through it.
 *
 * Every line of the source keeps its number, so the compiler's diagnostics
 * and __LINE__ still name the cell's lines. Comments, string and character
 * literals and preprocessor lines are left as they are: a __shared__ there
 * (in a macro) reaches the prelude, whose own __shared__ macro makes it a
 * compile error that names the problem.
 */
#ifndef CUDALAB_STUDENT_SHARED_REWRITE_H
#define CUDALAB_STUDENT_SHARED_REWRITE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct shared_rewrite {
    char *text;              /* the rewritten source (malloc'd; the caller frees) */
    int nshared;             /* declaration sites given ids 0..nshared-1 */
    bool device_globals;     /* the source defines __device__ variables (not functions) at file scope */
} shared_rewrite;

/* Rewrites src (whose first line is line first_line of file `file`, as the
 * #line directive before it says). 0, or -1 with a one-line reason in err
 * (err_len bytes), naming the cell line: an unreadable __shared__
 * declaration, more than 64 of them. */
int shared_rewrite_source(const char *src, int first_line, const char *file, shared_rewrite *out, char *err,
                          size_t err_len);
void shared_rewrite_free(shared_rewrite *r);

#endif
