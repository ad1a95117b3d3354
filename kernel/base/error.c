/* error.c — filling the error carrier (error.h). */
#include <stdio.h>

#include "base/error.h"
#include "base/utf8.h"

int error_setv(error_info *e, const char *ename, const char *fmt, va_list ap)
{
    snprintf(e->ename, sizeof e->ename, "%s", ename);
    vsnprintf(e->evalue, sizeof e->evalue, fmt, ap);
    utf8_trim(e->evalue);
    return -1;
}

int error_set(error_info *e, const char *ename, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_setv(e, ename, fmt, ap);
    va_end(ap);
    return -1;
}

void error_clear(error_info *e)
{
    e->ename[0] = '\0';
    e->evalue[0] = '\0';
}

bool error_is_set(const error_info *e)
{
    return e->ename[0] != '\0';
}
