/* shared_rewrite.h — a student's kernel source made ready for the CPU runner:
 * every __shared__ declaration rewritten into a call to the runtime (through
 * the literal operators the prelude, cpu/simt/runtime/cudalab_simt.h,
 * declares: a literal's suffix is out of the reach of the student's macros),
 * so that each array is placed apart, with red zones, once per block, and is
 * known by its name and shape in error messages.
 *
 * Function scope (one id per declarator, in source order, 0..63):
 *     __shared__ float t[TILE][TILE+1];
 *  -> float (&t)[TILE][TILE+1] = *(float (*)[TILE][TILE+1])"t"_cudalab_shared(0, sizeof(float),
 *         alignof(float), __LINE__, 2, (unsigned)(TILE), (unsigned)(TILE+1));
 *     extern __shared__ float dyn[];
 *  -> float *const dyn = (float *)"dyn"_cudalab_dyn_shared(sizeof(float), alignof(float), __LINE__);
 * At file scope (extern too, which then takes an id) the declaration leaves
 * its line, and after that line (then a #line directive) come its placement
 * function, its slot (a C-linkage reference the runtime holds) and
 * `#define NAME __cudalab_shared_slot_ID`: one identifier for another, so
 * that a parameter or local of that name still declares its own. After the
 * source, __cudalab_place_file_shared(int), which the entry calls before the
 * kernel, binds every slot to the running block's placement.
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
