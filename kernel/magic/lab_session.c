/* lab_session.c — a session's slots and their life (lab_session.h). */
#include "magic/lab_session.h"

#include <stdlib.h>

struct lab_session {
    void *part[LAB_NPARTS];
    void (*drop[LAB_NPARTS])(void *part);
};

lab_session *lab_session_new(void)
{
    return calloc(1, sizeof(lab_session));
}

void lab_session_free(lab_session *s)
{
    if (!s)
        return;
    for (int i = 0; i < LAB_NPARTS; i++) {
        if (s->part[i] && s->drop[i])
            s->drop[i](s->part[i]);
        free(s->part[i]);
    }
    free(s);
}

void *lab_part(const lab_session *s, enum lab_part which)
{
    return s ? s->part[which] : NULL;
}

void *lab_part_make(lab_session *s, enum lab_part which, size_t size, void (*drop)(void *part))
{
    if (!s)
        return NULL;
    if (!s->part[which]) {
        s->part[which] = calloc(1, size);
        s->drop[which] = drop;
    }
    return s->part[which];
}
