/* source_check.h — what a %%kernel cell may ask of a compiler, checked before
 * any compiler sees it (worker side; pure text, no file is opened).
 *
 * A cell reaches two compilers: NVRTC (in the worker, for a GPU) and the host
 * C++ compiler (for the CPU runner). Both read files a directive names, and
 * their diagnostics quote what they read, so `#include "/etc/shadow"` would
 * return the file in a cell error. The preprocessing directives of a cell are
 * therefore scanned the way a compiler's first translation phases see them
 * (backslash-newlines joined, comments as spaces, literals skipped, %: and ??=
 * for #) and refused unless every #include names one of the headers of
 * source_headers[] as <name>. Directives that reach the file system otherwise
 * (#include_next, #import, #embed, a computed #include, `# 12 "file"`, #line
 * with a file name, #pragma GCC dependency, __has_include) are refused too, and
 * so are the forms the two compilers read differently (a backslash with spaces
 * after it at a line's end; a raw string literal). On the CPU path the
 * preprocessed translation unit is also searched for inline asm
 * (source_check_no_asm, source_asm.c), which only a GPU could run.
 */
#ifndef CUDALAB_STUDENT_SOURCE_CHECK_H
#define CUDALAB_STUDENT_SOURCE_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* One header a kernel may #include: NVRTC finds it in the CUDA toolkit's
 * include directory. on_cpu: the CPU runner's prelude (cpu/simt/runtime/
 * cudalab_simt.h) gives its vocabulary, so there it is an empty stand-in;
 * otherwise the kernel needs a GPU, and cpu_lacks says what is missing. */
typedef struct source_header {
    const char *name;
    bool on_cpu;
    const char *cpu_lacks;          /* NULL when on_cpu */
} source_header;

extern const source_header source_headers[];
extern const size_t source_header_count;

/* The header named name, or NULL when a cell may not include it. */
const source_header *source_header_find(const char *name);

/* "<cuda_runtime.h>, <cuda_fp16.h>, …": the allowed headers for messages. */
const char *source_allowed_headers(void);

/* Why a source was refused: the cell line (first_line-based) and the reason. */
typedef struct source_refusal {
    int line;
    char reason[512];
} source_refusal;

/* The cell's directives and the identifiers that reach files. text starts on
 * cell line first_line. 0 when the cell may be compiled; -1 with *r filled. */
int source_check_cell(const char *text, int first_line, source_refusal *r);

/* Inline asm (asm, __asm, __asm__) in a preprocessed translation unit (the host
 * compiler's -E output, with its line markers), from the first line of the
 * file named cell on: the cell, what its macros expand to, the headers it
 * includes and what follows. 0 when there is none; -1 with *r filled (line:
 * the cell's line where the asm is, or 0 when it is outside the cell). */
int source_check_no_asm(const char *preprocessed, size_t len, const char *cell, source_refusal *r);

#endif
