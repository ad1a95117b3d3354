/* memtext.h — text written through stdio into memory: what the renderers and
 * help texts build with fprintf, whole or not at all.
 *
 *     memtext m;
 *     FILE *f = memtext_open(&m);      // NULL: out of memory
 *     fprintf(f, ...);
 *     char *text = memtext_close(&m);  // the text (the caller frees it), or NULL
 *
 * memtext_close returns NULL, and frees what was written, when any write
 * failed or the stream could not be flushed: a cut text is never returned
 * (nothing written is "", not NULL).
 */
#ifndef CUDALAB_BASE_MEMTEXT_H
#define CUDALAB_BASE_MEMTEXT_H

#include <stdio.h>

typedef struct memtext {
    FILE *f;
    char *text;
    size_t size;
} memtext;

FILE *memtext_open(memtext *m);
char *memtext_close(memtext *m);

#endif
