/* registry.c — the list of magics. Adding a magic = its file in kernel/magics/
 * plus one extern line and one array entry here, kept in alphabetical order so
 * that %help lists them sorted without sorting at run time.
 */
#include <stdlib.h>
#include <string.h>

#include "magic/magic.h"

extern const magic_spec magic_assert;
extern const magic_spec magic_coalesce;
extern const magic_spec magic_device;
extern const magic_spec magic_echo;
extern const magic_spec magic_grid;
extern const magic_spec magic_help;
extern const magic_spec magic_histo;
extern const magic_spec magic_matmul;
extern const magic_spec magic_occupancy;
extern const magic_spec magic_reduce;
extern const magic_spec magic_score;
extern const magic_spec magic_stencil;
extern const magic_spec magic_vecadd;

static const magic_spec *const magics[] = {
    &magic_assert,
    &magic_coalesce,
    &magic_device,
    &magic_echo,
    &magic_grid,
    &magic_help,
    &magic_histo,
    &magic_matmul,
    &magic_occupancy,
    &magic_reduce,
    &magic_score,
    &magic_stencil,
    &magic_vecadd,
};

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
