/* lab_session.h — one session of the lab: what a notebook's cells define that
 * later cells see. Its parts are the %param values (lang/params.c), the
 * variants registered at run time (magic/families.c), the student kernels
 * (student/store.c), the compile cache of the worker (student/compile.c), the
 * families an assignment grades (magic/assignment.c) and the lesson checks'
 * runs (student/lesson_run.c).
 *
 * The kernel process's shell session creates one and keeps it for its life;
 * the device worker and the command-line mode each have one of their own. A
 * running command reaches it through magic_ctx.lab; what runs outside a
 * command (the parser, completion, %help's text) is given it explicitly. No
 * module keeps any of it in a file static: two sessions in one process never
 * see each other's definitions (tests/unit/test_lab_session.c).
 *
 * Why here, and why opaque: the parts belong to modules on three layers
 * (magic, lang above it, student above both), and every one of them must reach
 * the session. The framework's layer is the lowest they all include, so the
 * session is declared here; but it cannot know the types of the layers above
 * it, so it holds each part as an untyped slot that the owning module creates
 * on first use, with the function that frees it. Each module keeps its part's
 * type to itself and is the only reader of its slot. A session without a part
 * yet reads as an empty one (no parameters, no kernels); a NULL session does
 * too, for the parser's unit tests and the fuzzers.
 */
#ifndef CUDALAB_MAGIC_LAB_SESSION_H
#define CUDALAB_MAGIC_LAB_SESSION_H

#include <stddef.h>

typedef struct lab_session lab_session;

/* The parts, one slot each, named by the module that owns the slot. */
enum lab_part {
    LAB_PARAMS,                     /* lang/params.c: the %param table */
    LAB_VARIANTS,                   /* magic/families.c: the variants registered at run time */
    LAB_KERNELS,                    /* student/store.c: the student kernels' definitions */
    LAB_BUILDS,                     /* student/compile.c: the in-memory compile cache */
    LAB_ASSIGNMENT,                 /* magic/assignment.c: the families an assignment grades */
    LAB_LESSONS,                    /* student/lesson_run.c: the lesson checks' runs, cached */
    LAB_NPARTS
};

/* A new, empty session, or NULL when out of memory. */
lab_session *lab_session_new(void);
/* Frees every part (with the function its owner gave) and the session; NULL is a no-op. */
void lab_session_free(lab_session *s);

/* The part, or NULL where it has not been made yet (or s is NULL). */
void *lab_part(const lab_session *s, enum lab_part which);
/* The part, made on first use: size zeroed bytes, freed by drop (which frees
 * what the part owns, then lab_session_free frees the bytes). NULL when out
 * of memory or s is NULL. */
void *lab_part_make(lab_session *s, enum lab_part which, size_t size, void (*drop)(void *part));

#endif
