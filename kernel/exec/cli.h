/* cli.h — command-line mode (see cli.c). */
#ifndef CUDALAB_CLI_H
#define CUDALAB_CLI_H

#include <stdbool.h>

/* Runs a cell, printing results to stdout and errors to stderr.
 * Returns the exit code: 0 ok, 1 a command failed, 2 the cell did not parse. */
int cli_run_cell(const char *cell, bool json_mode);
#define CLI_FILE_MAX (64u << 20)     /* the bytes of a cell read from a file */

/* Reads a whole file ("-" = stdin), less than CLI_FILE_MAX bytes. Caller frees; NULL on error. */
char *cli_read_file(const char *path);

#endif
