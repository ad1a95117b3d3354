/* buf.c — the growable byte buffer and typed-array growth of buf.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

/* The capacity that holds need items, doubling from cap (or from 8); 0 when it
 * would pass limit. */
static size_t doubled(size_t cap, size_t need, size_t limit)
{
    size_t c = cap ? cap : 8;
    while (c < need) {
        if (c > limit / 2)
            return need <= limit ? need : 0;
        c *= 2;
    }
    return c <= limit ? c : 0;
}

int strbuf_reserve(strbuf *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (extra > SIZE_MAX - 1 - b->len) {
        b->failed = true;
        return -1;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = doubled(b->cap, need, SIZE_MAX);
    char *p = cap ? realloc(b->data, cap) : NULL;
    if (!p) {
        b->failed = true;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

void strbuf_put_end(strbuf *b, size_t n)
{
    b->len += n;
    b->data[b->len] = '\0';
}

int strbuf_append(strbuf *b, const void *bytes, size_t n)
{
    if (strbuf_reserve(b, n) != 0)
        return -1;
    if (n)
        memcpy(b->data + b->len, bytes, n);
    strbuf_put_end(b, n);
    return 0;
}

int strbuf_puts(strbuf *b, const char *s)
{
    return strbuf_append(b, s, strlen(s));
}

int strbuf_vprintf(strbuf *b, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    int rc = -1;
    if (n < 0)
        b->failed = true;
    else if (strbuf_reserve(b, (size_t)n) == 0) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
        rc = 0;
    }
    va_end(again);
    return rc;
}

int strbuf_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = strbuf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

void strbuf_reset(strbuf *b)
{
    b->len = 0;
    b->failed = false;
    if (b->data)
        b->data[0] = '\0';
}

char *strbuf_take(strbuf *b)
{
    char *s = b->failed ? NULL : b->data ? b->data : strdup("");
    if (b->failed)
        free(b->data);
    *b = STRBUF_INIT;
    return s;
}

void strbuf_free(strbuf *b)
{
    free(b->data);
    *b = STRBUF_INIT;
}

int array_grow(void *items_ptr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = size ? doubled(*cap, need, SIZE_MAX / size) : 0;
    void *items;
    memcpy(&items, items_ptr, sizeof items);
    void *grown = c ? realloc(items, c * size) : NULL;
    if (!grown)
        return -1;
    memcpy(items_ptr, &grown, sizeof grown);
    *cap = c;
    return 0;
}
