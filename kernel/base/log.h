/* log.h — the kernel's own log: one line per event on the process's stderr.
 * Never on iopub: a notebook cell must not see the kernel's diagnostics. */
#ifndef CUDALAB_LOG_H
#define CUDALAB_LOG_H

void klog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 0 = errors and dropped messages only (default), 1 = every message (CUDALAB_DEBUG=1). */
extern int klog_verbose;

#endif
