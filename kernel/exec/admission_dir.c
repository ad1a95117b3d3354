/* admission_dir.c — the admission directory and the files in it, trusted
 * only after checks (admission_dir.h): whose the directory is and its mode,
 * and that each file is a regular one with no other name, the user's own in
 * the user's directory. admission.c keeps its slots, queues and turns there.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/text.h"
#include "exec/admission.h"
#include "exec/admission_dir.h"

static int directory_path(char *buf, size_t len)
{
    const char *dir = getenv("CUDALAB_ADMISSION_DIR"), *run = getenv("XDG_RUNTIME_DIR");
    int n;
    if (dir && *dir)
        n = snprintf(buf, len, "%s", dir);
    else if (run && *run)
        n = snprintf(buf, len, "%s/cudalab-admission", run);
    else
        n = snprintf(buf, len, "/tmp/cudalab-admission-%u", (unsigned)geteuid());
    return n <= 0 || (size_t)n >= len ? -1 : 0;
}

int admission_dir_open(admission_dir *d, char *why, size_t len)
{
    d->fd = -1;
    if (directory_path(d->path, sizeof d->path) != 0)
        return fail_into(why, len, "the admission directory's path is too long (" ADMISSION_DIR_ENV ")");
    bool made = mkdir(d->path, PRIVATE_MODE) == 0;
    if (!made && errno != EEXIST)
        return fail_into(why, len, "cannot make the admission directory %s: %s (" ADMISSION_DIR_ENV " names "
                         "another)", d->path, strerror(errno));
    int fd = open(d->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        /* a link is ENOTDIR or ELOOP, as the kernel sees O_DIRECTORY|O_NOFOLLOW */
        int e = errno;
        bool link = e == ELOOP || (e == ENOTDIR && lstat(d->path, &st) == 0 && S_ISLNK(st.st_mode));
        return fail_into(why, len, "the admission directory %s cannot be used: %s", d->path,
                         link ? "it is a symbolic link, and cudalab follows none there"
                         : e == ENOTDIR ? "it is not a directory" : strerror(e));
    }
    if (made)
        (void)fchmod(fd, PRIVATE_MODE);   /* just made, ours: past the umask */
    if (fstat(fd, &st) != 0) {
        close(fd);
        return fail_into(why, len, "the admission directory %s cannot be used: %s", d->path, strerror(errno));
    }
    uid_t me = geteuid();
    mode_t mode = st.st_mode & 07777;
    if (st.st_uid == me && mode == PRIVATE_MODE) {
        d->shared = false;
    } else if (st.st_uid == 0 && mode == SHARED_MODE) {
        d->shared = true;
    } else {
        close(fd);
        return fail_into(why, len, "the admission directory %s belongs to uid %u with mode %04o: cudalab trusts "
                         "only your own (uid %u, mode %04o) or root's shared one (mode %04o)", d->path,
                         (unsigned)st.st_uid, (unsigned)mode, (unsigned)me, PRIVATE_MODE, SHARED_MODE);
    }
    d->fd = fd;
    d->owner = st.st_uid;
    return 0;
}

void admission_dir_close(admission_dir *d)
{
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
}

const char *admission_file_wrong(const admission_dir *d, const struct stat *st)
{
    if (!S_ISREG(st->st_mode))
        return "it is not a regular file";
    if (st->st_nlink != 1)
        return "it has other names (hard links)";
    if (!d->shared && st->st_uid != geteuid())
        return "it belongs to another user";
    return NULL;
}

mode_t admission_made_mode(const admission_dir *d)
{
    return d->shared ? 0644 : 0600;
}

int admission_lock_open(const admission_dir *d, const char *name, char *why, size_t len)
{
    int fd = openat(d->fd, name, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, admission_made_mode(d));
    if (fd >= 0) {
        (void)fchmod(fd, admission_made_mode(d));   /* just made, ours: past the umask */
        return fd;
    }
    if (errno == EEXIST)
        fd = openat(d->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return fail_into(why, len, "cannot use %s/%s: %s", d->path, name,
                         errno == ELOOP ? "it is a symbolic link" : strerror(errno));
    struct stat st;
    const char *wrong = fstat(fd, &st) != 0 ? strerror(errno) : admission_file_wrong(d, &st);
    if (wrong) {
        close(fd);
        return fail_into(why, len, "cannot use %s/%s: %s", d->path, name, wrong);
    }
    return fd;
}
