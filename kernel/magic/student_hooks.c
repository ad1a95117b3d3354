/* student_hooks.c — the registered table of student_hooks.h: the one way the
 * framework reaches kernel/student/, which sits above it. */
#include <stddef.h>

#include "magic/student_hooks.h"

static const magic_student_hooks none;
static const magic_student_hooks *registered = &none;

void magic_student_hooks_set(const magic_student_hooks *hooks)
{
    registered = hooks ? hooks : &none;
}

const magic_student_hooks *magic_student(void)
{
    return registered;
}
