/* log.c — see log.h. Lines are written with one write() so that the kernel
 * and its worker, sharing stderr, never interleave halves of lines. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int klog_verbose = 0;

void klog(const char *fmt, ...)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "[cudalab %d] ", (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}
