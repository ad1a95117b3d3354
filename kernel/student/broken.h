/* broken.h — the variants broken on purpose, for the debugging lecture: one
 * table per family (family_spec.broken), each row a kernel a student could
 * have written, with the bug in it.
 *
 * They are shipped as source in the family's student signature, so they run
 * as students' kernels do: NVRTC on a GPU, where a race may or may not show
 * and racecheck is asked when it does not; the CPU runner without one, which
 * names the bug by thread and line. `all` leaves them out; a wrong result is
 * their expected answer (kernel/magic/sweep_broken.c says so in the result).
 */
#ifndef CUDALAB_STUDENT_BROKEN_H
#define CUDALAB_STUDENT_BROKEN_H

#include "magic/families.h"

extern const family_broken broken_matmul[];
extern const family_broken broken_histo[];
extern const family_broken broken_vecadd[];

#endif
