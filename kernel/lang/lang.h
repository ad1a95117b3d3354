/* lang.h — the cell language, as the rest of the kernel uses it: a cell
 * parsed and validated into commands against the magics' specs, tokens for
 * completion and inspection, completeness for is_complete_request, "did you
 * mean" for magic names, and the help text derived from the specs.
 * The parser's own pieces are in parse_internal.h.
 */
#ifndef CUDALAB_LANG_H
#define CUDALAB_LANG_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"
#include "magic/lab_session.h"
#include "magic/magic.h"

/* ---- parsing (parse.c) ---- */

/* One command of a cell, validated. */
typedef struct command {
    const magic_spec *magic;
    json_t *params;                 /* owned */
    json_t *cpu_defaulted;          /* owned, or NULL: the keys of params whose flag's CPU default applies
                                     * when the command runs on the CPU backend (flag_spec.cpu_def) */
    char *body;                     /* cell magic body, or NULL; owned */
    int line;                       /* 1-based line of the cell where it starts */
    int body_line;                  /* the line where the body starts (cell magics) */
    char *source;                   /* the command's own line, for error messages; owned */
    char *key;                      /* the command as recorded GPU results name it (command_key), or NULL
                                     * (%help, raw magics); owned */
} command;

typedef struct parse_error {
    error_info error;               /* "UsageError" or "SyntaxError", and what is wrong */
    int line;                       /* 1-based line, 0 if none */
    int column;                     /* 1-based, 0 if none */
    char source[512];               /* the offending line */
} parse_error;

/* Parses and validates a whole cell in the session lab (its parameters, its
 * student kernels as variants; NULL: a session with none). Returns the number
 * of commands (>= 0) and sets *out to a malloc'd array, or -1 with *err
 * filled. Free with commands_free. */
int cell_parse(const lab_session *lab, const char *cell, command **out, parse_error *err);
void commands_free(command *cmds, int n);
/* Releases what one command owns (commands_free does it for each), leaving it zeroed. */
void command_clear(command *cmd);

/* A command's params for the CPU backend: those of cpu_defaulted (may be NULL)
 * take their flag's cpu_def. New reference (params itself when nothing
 * changes); what changed in changed, as "--reps 5 (20 on a GPU), ...". */
json_t *params_cpu_defaults(const magic_spec *m, const json_t *params, const json_t *cpu_defaulted, char *changed,
                            size_t len);

/* Tokens of one line as the parser sees them (for completion and inspection). */
typedef struct token {
    char *text;                     /* unquoted text; owned */
    size_t start, end;              /* byte offsets in the line, end exclusive */
} token;
/* Splits a line into tokens; returns the count or -1 when a quote is unterminated
 * (tokens up to that point are still returned). Free with tokens_free. */
int line_tokens(const char *line, token **out);
void tokens_free(token *t, int n);
/* text as one double-quoted token of a magic line (\\, \" and control characters escaped), so
 * that a command built from a user's values reads them back as given and as nothing more (a value
 * with spaces or flags in it stays one value). Into out (len bytes, truncated); its length. */
size_t quote_token(const char *text, char *out, size_t len);

/* "complete" | "incomplete" | "invalid", for is_complete_request (parsed in the session lab). */
const char *cell_completeness(const lab_session *lab, const char *cell);

/* Help text (plain) for one magic (its variants in the session lab, which
 * may be NULL), and the list of all magics. Caller frees. */
char *magic_help_text(const lab_session *lab, const magic_spec *m);
char *magic_list_text(void);

/* Nearest known magic name by edit distance, or NULL when nothing is close. */
const char *magic_nearest(const char *name);

#endif
