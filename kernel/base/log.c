/* log.c — see log.h. Lines are written with one write() so that the kernel
 * and its worker, sharing stderr, never interleave halves of lines. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int klog_verbose = 0;

static void log_line(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

static void log_line(const char *fmt, va_list ap)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "[cudalab %d] ", (int)getpid());
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void klog(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line(fmt, ap);
    va_end(ap);
}

void kinfo(const char *fmt, ...)
{
    if (!klog_verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_line(fmt, ap);
    va_end(ap);
}
