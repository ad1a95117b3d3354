/* build_cache.h — the cache of students' builds (build_cache.c), by the key
 * of everything their machine code depends on: in the session's memory and
 * on disk (student_cache_dir, compile.h). Only kernel/student/compile.c
 * includes it.
 */
#ifndef CUDALAB_STUDENT_BUILD_CACHE_H
#define CUDALAB_STUDENT_BUILD_CACHE_H

#include <jansson.h>

#include "magic/lab_session.h"
#include "student/compile.h"

/* sha256 (hex) of the program, the NVRTC options, NVRTC's version and the cache's format. */
void build_cache_key(const char *program, const json_t *opts, char key[65]);
/* Fill b (its key set) from the session's memory, or from the disk: 0, or -1 when not there. */
int build_cache_memory_get(const lab_session *lab, student_build *b);
int build_cache_disk_get(student_build *b);
/* Keep a copy of b in the session's memory, or write it to the disk (quietly not when that fails). */
void build_cache_memory_put(lab_session *lab, const student_build *b);
void build_cache_disk_put(const student_build *b);

#endif
