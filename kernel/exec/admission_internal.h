/* admission_internal.h — what admission.c (slots, queues, turns) shares with
 * admission_memory.c (device-memory reservations, %device's census): the
 * tickets, the scan of a queue, the slots and the wait's helpers. Only
 * kernel/exec/ includes it.
 */
#ifndef CUDALAB_EXEC_ADMISSION_INTERNAL_H
#define CUDALAB_EXEC_ADMISSION_INTERNAL_H

#include <limits.h>
#include <stdbool.h>

#include "base/error.h"
#include "exec/admission.h"
#include "exec/admission_dir.h"

/* One of this worker's tickets: its file, locked while it waits, and its name. */
typedef struct admission_ticket {
    int fd;
    char name[NAME_MAX + 1];
} admission_ticket;

/* A ticket in queue q ('c' context, 't' turn, 'm' memory) on key, bytes
 * named in a memory ticket; 0, or -1 when there is no queue. */
int admission_ticket_make(const char *key, char q, unsigned long long bytes, admission_ticket *t);
void admission_ticket_drop(admission_ticket *t);
/* The live tickets of queue q on key placed before mine (all when mine is
 * NULL), adding the memory they ask for to *bytes (when not NULL); -1 when
 * the directory cannot be read. */
int admission_scan_ahead(const admission_dir *d, const char *key, char q, const char *mine, double *bytes);
/* How many contexts gpu takes (N), and how many of key's n slots are held now. */
int admission_slots(const admission_dir *d, const admission_gpu *gpu);
int admission_slots_held(const admission_dir *d, const char *key, int n);
/* Whether this worker holds a slot on key. */
bool admission_holds(const char *key);
void admission_nap_ms(double ms);
/* The GPUBusyError of a wait for what that ran out after limit_ms with ahead others before it. */
int admission_waited_too_long(error_info *err, const admission_gpu *gpu, double limit_ms, int ahead, const char *what);

#endif
