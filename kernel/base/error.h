/* error.h — the one error carrier of the kernel, in the spirit of jansson's
 * json_error_t: what a Jupyter error needs (ename, evalue), filled by the layer
 * that fails and read by the layer that answers. Parse errors add a position,
 * %assert reports add "where" lines, a running magic adds a traceback: each
 * embeds an error_info rather than keeping its own name and message fields.
 */
#ifndef CUDALAB_BASE_ERROR_H
#define CUDALAB_BASE_ERROR_H

#include <stdarg.h>
#include <stdbool.h>

typedef struct error_info {
    char ename[32];         /* "UsageError", "MemoryError", "CudaError", ...; "" when none */
    char evalue[1024];      /* one message, valid UTF-8 (cut at a character boundary) */
} error_info;

/* Records ename and the formatted message; returns -1, so that a failing
 * function can `return error_set(...)`. */
int error_set(error_info *e, const char *ename, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int error_setv(error_info *e, const char *ename, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
void error_clear(error_info *e);
bool error_is_set(const error_info *e);

#endif
