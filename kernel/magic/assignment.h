/* assignment.h — the session's assignment mode: the families whose kernels a
 * problem set grades, for which --show-source and --as-kernel are refused
 * (show_source.c), so that the built-in kernel a student is asked to write
 * cannot be pasted in as theirs.
 *
 * Two ways in, and no way out but a restart: %assignment NAME --graded
 * FAMILY,... (kernel/magics/assignment.c; the notebook's locked cell), and the
 * environment variable ASSIGNMENT_ENV, read when the session first asks
 * (a deployment's kernelspec sets it for every session, so deleting the cell
 * does not lift it): "NAME:FAMILY,FAMILY[;NAME:FAMILY,...]". Declarations
 * only add: a family, once graded, stays graded by the assignment that named
 * it first. A malformed ASSIGNMENT_ENV grades every family that takes
 * students' kernels (refusing too much beats showing the answer), and says so
 * in the kernel log.
 *
 * The state is the session's part LAB_ASSIGNMENT (lab_session.h): the kernel
 * process refuses in the family magics' attach step, before the worker sees
 * the command; the worker and the command-line mode, which have sessions of
 * their own, see the environment's declaration and refuse as well.
 */
#ifndef CUDALAB_MAGIC_ASSIGNMENT_H
#define CUDALAB_MAGIC_ASSIGNMENT_H

#include <stddef.h>

#include "magic/lab_session.h"

#define ASSIGNMENT_ENV "CUDALAB_ASSIGNMENT"
#define ASSIGNMENT_NAME_MAX 48          /* bytes of an assignment's name */

/* Whether name is an assignment's name: 1 to ASSIGNMENT_NAME_MAX - 1 letters,
 * digits, '_', '-' or '.'. 0, or -1 with the reason in why. */
int assignment_name_check(const char *name, char *why, size_t len);

/* Declares that the assignment NAME grades FAMILY (a family that takes
 * students' kernels) in lab. A family graded already keeps its first
 * assignment. 0, or -1 with the reason in why (a bad name, an unknown family,
 * out of memory). */
int assignment_declare(lab_session *lab, const char *name, const char *family, char *why, size_t len);

/* The name of the assignment that grades family in lab (the environment's
 * declaration included), or NULL when none does. */
const char *assignment_grading(lab_session *lab, const char *family);

/* The graded families in the order declared: the i-th, with its assignment's
 * name in *name; NULL past the end. */
const char *assignment_graded_at(lab_session *lab, size_t i, const char **name);

/* "matmul, histo, ...": the families that take students' kernels, for an error. */
void assignment_gradable(char *buf, size_t len);

#endif
