/* similarity.h — cudalab --similarity NOTEBOOK...: the instructor's report of
 * graded kernels' similarity to the built-in variants and to each other
 * (similarity.c says its columns). */
#ifndef CUDALAB_EXEC_SIMILARITY_H
#define CUDALAB_EXEC_SIMILARITY_H

/* Runs the report on the arguments after --similarity; the process's exit status. */
int similarity_main(int argc, char **argv);

#endif
