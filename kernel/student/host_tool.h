/* host_tool.h — the host compiler's runs for the CPU runner's build (worker
 * side; host_build.c's run_tool).
 *
 * Every run is confined (student/confine.h). A compile (argv with -c, -x c++
 * SOURCE and -o OBJECT) is done in two steps so that nothing the cell asks for
 * reaches the assembler unseen: the translation unit is preprocessed (-E, its
 * size bounded: a macro bomb stops there), searched for inline asm from the
 * cell's first line on (source_check_no_asm: the cell, what its macros and the
 * headers' macros expand to), and only then is the preprocessed text compiled.
 * In the preprocessing, the CUDA headers the prelude stands for
 * (source_headers[] with on_cpu) are empty files of a private directory.
 *
 * Whatever the tool says that is not a compiler's diagnostic comes back as log
 * lines that start with HOST_TOOL_NOTE: why it did not finish, which limit it
 * met, why the CPU runner refuses the kernel.
 */
#ifndef CUDALAB_STUDENT_HOST_TOOL_H
#define CUDALAB_STUDENT_HOST_TOOL_H

#define HOST_TOOL_NOTE "cudalab: "

/* Runs argv (the host compiler) as above, default_wall_s its wall-clock limit
 * unless $CUDALAB_COMPILE_TIMEOUT says otherwise; cell is the #line file name
 * of the cell. *log: stdout and stderr, then the notes (the caller frees).
 * Returns the exit status: 0 when it compiled; 1 when inline asm was found (a
 * note says where); -1 when it did not finish (a note says why). */
int host_tool_run(char *const argv[], char **log, double default_wall_s, const char *cell);

#endif
