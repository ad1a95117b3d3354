/* suggest.c — "did you mean" for magic names: the nearest known magic to
 * what was typed (the edit distance itself is in base/text.c). */
#include <ctype.h>
#include <stddef.h>

#include "base/text.h"
#include "lang/lang.h"
#include "magic/magic.h"

/* Names are lower case, so %MatMul is compared as %matmul. */
const char *magic_nearest(const char *name)
{
    char lower[128];
    size_t i = 0;
    for (; name && name[i] && i < sizeof lower - 1; i++)
        lower[i] = (char)tolower((unsigned char)name[i]);
    lower[i] = '\0';
    suggest s;
    suggest_init(&s, lower);
    size_t count;
    const magic_spec *const *all = magic_all(&count);
    for (size_t k = 0; k < count; k++)
        suggest_add(&s, all[k]->name);
    return s.best;
}
