/* capture.h — the device worker's stdout, captured.
 *
 * Device printf writes into the CUDA runtime's buffer, which the runtime
 * prints to the process's stdout at the next synchronisation. The worker's
 * stdout is a pipe read by a thread into a bounded buffer, so that a kernel
 * that prints a lot never blocks on a full pipe; after each command the text
 * goes to the cell as its stdout stream (commands that run student kernels)
 * or to the kernel's log (anything a library printed), never lost and never
 * on the cell's stderr.
 */
#ifndef CUDALAB_EXEC_CAPTURE_H
#define CUDALAB_EXEC_CAPTURE_H

#include <stddef.h>

/* The most bytes kept per command; the rest is counted and dropped. */
#define CAPTURE_MAX (1u << 20)

/* Makes fd 1 the capture pipe and starts the reader. 0, or -1 (stdout then
 * stays where it was). */
int capture_start(void);
/* What was printed since the last take (malloc'd, NUL-terminated, "" when
 * nothing), waiting briefly for the reader to drain the pipe; *dropped gets
 * the bytes past CAPTURE_MAX. NULL when capture is off or memory ran out. */
char *capture_take(size_t *dropped);

#endif
