/* test_lab.h — the session a unit test's cells run in (magic/lab_session.h):
 * one for the test program, as a kernel process has one, made on first use.
 * test_lab_reset() gives the next case a fresh one (a setup's clean start);
 * a test of two sessions makes its own with lab_session_new.
 * Header-only: each test program gets its own copy. */
#ifndef CUDALAB_TEST_LAB_H
#define CUDALAB_TEST_LAB_H

#include "magic/lab_session.h"

static inline lab_session **test_lab_slot(void)
{
    static lab_session *lab;
    return &lab;
}

/* The test program's session (NULL only when out of memory). */
static inline lab_session *test_lab(void)
{
    lab_session **lab = test_lab_slot();
    if (!*lab)
        *lab = lab_session_new();
    return *lab;
}

/* Frees the session: the next test_lab() is a fresh one. */
static inline void test_lab_reset(void)
{
    lab_session **lab = test_lab_slot();
    lab_session_free(*lab);
    *lab = NULL;
}

#endif
