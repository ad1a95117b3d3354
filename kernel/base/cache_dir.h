/* cache_dir.h — the user's cache folder for what cudalab keeps between
 * processes ($XDG_CACHE_HOME/cudalab, else ~/.cache/cudalab): students' builds
 * (kernel/student/build_cache.c) and the host's measured copy bandwidth
 * (cpu/bandwidth.c). No dependency on anything else in the kernel. */
#ifndef CUDALAB_BASE_CACHE_DIR_H
#define CUDALAB_BASE_CACHE_DIR_H

#include <stddef.h>

/* $XDG_CACHE_HOME/cudalab/<sub>, else $HOME/.cache/cudalab/<sub>, into buf:
 * 0, or -1 where neither is set or the path does not fit. Creates nothing. */
int user_cache_dir(const char *sub, char *buf, size_t len);

/* Creates path and the folders above it that are missing (mode 0700): 0 when
 * it exists afterwards, else -1 (errno). */
int make_dirs(const char *path);

#endif
