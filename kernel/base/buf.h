/* buf.h — growable memory below every layer: a byte buffer that text is
 * appended to (bytes, strings, printf) and a typed array's growth.
 *
 * Ownership, stated as jansson states references: a strbuf owns its data; data is
 * borrowed by whoever reads it, valid until the next call that changes the
 * buffer; strbuf_take hands it over (a new string: the caller frees it) and leaves
 * the buffer empty. An append that runs out of memory (or past SIZE_MAX) sets
 * failed and changes nothing; every later append is dropped, so a writer
 * appends freely and checks once, at strbuf_take or through failed.
 */
#ifndef CUDALAB_BASE_BUF_H
#define CUDALAB_BASE_BUF_H

#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>

typedef struct strbuf {
    char *data;         /* len bytes and a NUL after them; NULL until something is appended; owned */
    size_t len;
    size_t cap;         /* bytes allocated at data */
    bool failed;        /* an append failed: the bytes before it are kept, every later one dropped */
} strbuf;

/* An empty buffer; nothing to free until an append. */
#define STRBUF_INIT ((strbuf){ 0 })

/* Appends n bytes (they may hold NULs); 0, or -1 with failed set. */
int strbuf_append(strbuf *b, const void *bytes, size_t n);
/* Appends the string s. */
int strbuf_puts(strbuf *b, const char *s);
/* Appends the formatted text. */
int strbuf_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int strbuf_vprintf(strbuf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Room for extra more bytes (and the NUL) at data + len, for a read() into it:
 * the caller adds what it wrote to len and writes the NUL (strbuf_put_end). 0, or
 * -1 with failed set. */
int strbuf_reserve(strbuf *b, size_t extra);
/* After a write of its own into the reserved room: len += n, and the NUL. */
void strbuf_put_end(strbuf *b, size_t n);
/* Empties the buffer, keeping its memory, and forgets a failure. */
void strbuf_reset(strbuf *b);
/* The text, handed over: a new string the caller frees ("" when nothing was
 * appended), or NULL when an append failed (what it had is freed). The buffer
 * is left empty (STRBUF_INIT). */
char *strbuf_take(strbuf *b);
/* Frees what the buffer owns; it is left empty (STRBUF_INIT). */
void strbuf_free(strbuf *b);

/* A typed array's growth: room for need items of size bytes in the array at
 * *items_ptr (a T ** passed as void *), whose capacity *cap (in items) doubles,
 * from 8, until it holds them. 0, or -1 (out of memory, or need * size past
 * SIZE_MAX) with the array and *cap unchanged. */
int array_grow(void *items_ptr, size_t *cap, size_t need, size_t size);

#endif
