/* admission_dir.h — the admission directory, trusted only after checks
 * (admission_dir.c): opened once per use without following a link, its owner
 * and mode checked; every file in it reached through that descriptor and
 * checked with fstat. Only kernel/exec/admission*.c include it.
 */
#ifndef CUDALAB_EXEC_ADMISSION_DIR_H
#define CUDALAB_EXEC_ADMISSION_DIR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define PRIVATE_MODE 0700           /* the user's own directory */
#define SHARED_MODE 01777           /* root's directory, shared by several users: each one's files are their own */

typedef struct admission_dir {
    int fd;                         /* O_DIRECTORY|O_NOFOLLOW; every file is reached through it */
    bool shared;                    /* root's SHARED_MODE directory; else the user's own PRIVATE_MODE one */
    uid_t owner;
    char path[PATH_MAX - NAME_MAX - 2];
} admission_dir;

/* Opens the admission directory (making the user's own when missing) and
 * checks whose it is: 0, or -1 with why naming it and what is wrong. */
int admission_dir_open(admission_dir *d, char *why, size_t len);
void admission_dir_close(admission_dir *d);
/* What is wrong with the file st describes for admission's use, or NULL: a
 * regular file with no other name (a hard link could stand for a victim's
 * file), in the user's own directory the user's. */
const char *admission_file_wrong(const admission_dir *d, const struct stat *st);
/* The mode of a file made here: in a shared directory the other users lock it too (read-only is enough). */
mode_t admission_made_mode(const admission_dir *d);
/* Opens name in d for flock, making it when it is missing; -1 with why. */
int admission_lock_open(const admission_dir *d, const char *name, char *why, size_t len);

#endif
