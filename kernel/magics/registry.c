/* registry.c — the list of magics (magic_all, magic_find of magic/magic.h).
 * It lives here, above the framework, where every magic is known: those of this
 * folder and those of lang/ (%help, %interact) and grade/ (%assert, %score,
 * %recorded). Adding a magic = its file in kernel/magics/ plus one entry in
 * MAGICS below, kept in alphabetical order so that %help lists them sorted
 * without sorting at run time.
 */
#include <stdlib.h>
#include <string.h>

#include "magic/magic.h"

#define MAGICS(X)                                                                         \
    X(assert) X(assignment) X(coalesce) X(device) X(echo) X(grid) X(help) X(hiding) X(histo) X(interact) X(kernel) X(kernels) X(latency) \
    X(launch) X(leaderboard) X(matmul) X(occupancy) X(param)                                                         \
    X(recorded) X(reduce) X(score) X(stencil) X(submit) X(vecadd)

#define DECLARE_(name) extern const magic_spec magic_##name;
MAGICS(DECLARE_)
#undef DECLARE_

#define ENTRY_(name) &magic_##name,
static const magic_spec *const magics[] = {MAGICS(ENTRY_)};
#undef ENTRY_

#define MAGIC_COUNT (sizeof magics / sizeof magics[0])

const magic_spec *const *magic_all(size_t *count)
{
    if (count)
        *count = MAGIC_COUNT;
    return magics;
}

/* %selftest misbehaves on purpose: only the test suite may reach it. */
extern const magic_spec magic_selftest;

static int testing(void)
{
    const char *t = getenv("CUDALAB_TESTING");
    return t && strcmp(t, "1") == 0;
}

const magic_spec *magic_find(const char *name)
{
    for (size_t i = 0; name && i < MAGIC_COUNT; i++)
        if (strcmp(magics[i]->name, name) == 0)
            return magics[i];
    if (name && strcmp(name, magic_selftest.name) == 0 && testing())
        return &magic_selftest;
    return NULL;
}
