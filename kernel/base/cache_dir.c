/* cache_dir.c — the user's cache folder and creating it (see cache_dir.h). */
#include "base/cache_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int user_cache_dir(const char *sub, char *buf, size_t len)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && *xdg)
        n = snprintf(buf, len, "%s/cudalab/%s", xdg, sub);
    else if (home && *home)
        n = snprintf(buf, len, "%s/.cache/cudalab/%s", home, sub);
    else
        return -1;
    return n > 0 && (size_t)n < len ? 0 : -1;
}

int make_dirs(const char *path)
{
    char p[4096];
    if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *c = p + 1; *c; c++) {
        if (*c != '/')
            continue;
        *c = '\0';
        int rc = mkdir(p, 0700);
        *c = '/';
        if (rc != 0 && errno != EEXIST)
            return -1;
    }
    return mkdir(p, 0700) == 0 || errno == EEXIST ? 0 : -1;
}
