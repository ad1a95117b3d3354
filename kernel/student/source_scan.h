/* source_scan.h — what is read from a student's source without compiling it
 * (source_scan.c): a kernel's name, whether it uses TILE, and the parameter
 * types that the compile-time signature check compares. compile.h includes
 * it for its users.
 */
#ifndef CUDALAB_STUDENT_SOURCE_SCAN_H
#define CUDALAB_STUDENT_SOURCE_SCAN_H

#include <stdbool.h>
#include <stddef.h>

/* The types of a contract's parameter list (cl_student_contract.params) as the compile-time checks
 * compare them: every const and every parameter's name dropped ("const float *A, int n" gives
 * "float *, int"). 0, or -1 when they do not fit in len bytes. */
int student_param_types(const char *params, char *out, size_t len);

/* The name of the first __global__ function in a source, or "" (into buf). */
void student_first_kernel(const char *text, char *buf, size_t len);
/* Whether the source uses the identifier TILE (then --tile sets it). */
bool student_uses_tile(const char *text);

#endif
