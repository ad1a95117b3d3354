/* log.h — the kernel's own log: one line per event on the process's stderr.
 * Never on iopub: a notebook cell must not see the kernel's diagnostics. */
#ifndef CUDALAB_LOG_H
#define CUDALAB_LOG_H

/* A warning or an error (a dropped message, a worker that crashed, a setting ignored): always
 * written. */
void klog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An event of a healthy kernel (the worker's backend, an idle worker leaving, a shutdown request):
 * written only with CUDALAB_DEBUG=1, so that nothing prints over a jupyter console prompt or into
 * an nbconvert or papermill run's output. */
void kinfo(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 0 = warnings and errors only (default), 1 = every event and every message (CUDALAB_DEBUG=1). */
extern int klog_verbose;

#endif
