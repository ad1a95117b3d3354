/* memtext.c — text written through stdio into memory (memtext.h). */
#include <stdlib.h>
#include <string.h>

#include "base/memtext.h"

FILE *memtext_open(memtext *m)
{
    m->text = NULL;
    m->size = 0;
    m->f = open_memstream(&m->text, &m->size);
    return m->f;
}

char *memtext_close(memtext *m)
{
    int failed = ferror(m->f);
    if (fclose(m->f) != 0 || failed) {
        free(m->text);
        m->text = NULL;
    } else if (!m->text) {
        m->text = strdup("");       /* nothing written: an empty text, not a failure */
    }
    m->f = NULL;
    return m->text;
}
