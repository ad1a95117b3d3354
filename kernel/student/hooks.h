/* hooks.h — the student layer's answers to the framework's hooks
 * (magic/student_hooks.h): the framework sits below kernel/student/ and
 * reaches it only through them. */
#ifndef CUDALAB_STUDENT_HOOKS_H
#define CUDALAB_STUDENT_HOOKS_H

/* Registers them with the framework; more calls change nothing. */
void student_hooks_register(void);

#endif
