/* parse_internal.h — the pieces of the magic parser, shared between its files
 * and with the unit tests. Nothing outside kernel/lang/ and tests/ includes it
 * (tests/unit/test_layers.c checks): the rest of the kernel uses lang.h and lex.h.
 *
 *   parse.c         a cell -> commands (cell_parse, cell_completeness)
 *   parse_lines.c   a cell's physical lines -> logical lines, error positions
 *   parse_lex.c     one line -> tokens (quotes, escapes, comments, continuation)
 *   parse_args.c    tokens after the magic name -> the params object
 *   parse_value.c   one flag's text -> a typed JSON value (lists, choices, dims)
 *   parse_number.c  the integer and float grammars
 *   suggest.c       "did you mean" for magic names (base/text.c has the distance)
 *   params.c        the session's parameters and a %param line (params.h)
 *   subst.c         {NAME} and $NAME in a line's arguments
 *   helptext.c      usage lines and help text, also used by %help's view
 */
#ifndef CUDALAB_PARSE_INTERNAL_H
#define CUDALAB_PARSE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/text.h"
#include "lang/lang.h"
#include "lang/lex.h"
#include "magic/families.h"
#include "magic/magic.h"

/* ---- parse.c ---- */

/* cell_parse with another registry lookup (the tests inject fake magics).
 * Unknown magics get no "did you mean" here: only cell_parse knows the list. */
int cell_parse_with(const lab_session *lab, const char *cell, const magic_spec *(*find)(const char *),
                    command **out, parse_error *err);

/* ---- parse_lex.c ---- */

enum lex_end {
    LEX_DONE,       /* the line is whole */
    LEX_QUOTE,      /* a quote is still open at the end */
    LEX_BACKSLASH,  /* the line ends with a continuation backslash */
    LEX_ESCAPE,     /* a bad escape in double quotes: why says which */
};

/* Tokens kept per line: past them the line is only scanned for its quotes, and
 * args_parse refuses the command (a raw magic reads its text, not its tokens). */
#define LEX_MAX_WORDS 65536

/* The blanks that separate a command line's tokens (parse_lex.c, subst.c). */
static inline bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

typedef struct lexed {
    token *tok;             /* n tokens, then one with text == NULL; owned */
    bool *lead_quoted;      /* per token: it starts with a quote (so it is never a flag); owned */
    int n;
    bool clipped;           /* the line has more than LEX_MAX_WORDS tokens */
    enum lex_end end;
    size_t at;              /* LEX_QUOTE: the opening quote; LEX_BACKSLASH: the backslash;
                               LEX_ESCAPE: the escape's backslash */
    char why[160];          /* LEX_ESCAPE: what is wrong with it */
} lexed;

/* Tokenizes s. Returns 0, or -1 when out of memory (lx is then empty). */
int lex_line(const char *s, lexed *lx);
/* How a raw magic's line s ends when its text (an expression) starts at byte
 * from: LEX_BACKSLASH (with *at) when a backslash is its last character but
 * blanks, outside quotes and comment; else LEX_DONE, an open quote being the
 * expression's own error to report. */
enum lex_end lex_raw_end(const char *s, size_t from, size_t *at);
void lexed_free(lexed *lx);

/* (parse.c) Whether the line lx starts with a raw line magic of find's
 * registry (%assert, %score): the rest of its line is that magic's text. */
bool lexed_is_raw(const lexed *lx, const magic_spec *(*find)(const char *));

/* ---- parse_lines.c ---- */

#define READ_INCOMPLETE (-2)        /* the cell stops inside an unfinished line */

typedef struct reader {
    const char *p;                  /* start of the next physical line */
    int line;                       /* its 1-based number */
    const magic_spec *(*find)(const char *name);   /* to tell raw magics' lines; may be NULL */
} reader;

typedef struct logical {
    char *text;                     /* the joined physical lines; owned */
    size_t len, cap;
    int line;                       /* number of the first physical line */
    size_t *seg;                    /* where each physical line starts in text; owned */
    const char **phys;              /* and where it starts in the cell; owned array */
    int nseg;
    lexed lx;                       /* text's tokens (lx.n may be 0: a lone comment) */
    const char *after;              /* the rest of the cell after this logical line */
} logical;

/* The next logical line into l (free with logical_free whatever it returns):
 * 1, 0 at the end of the cell, -1 when out of memory, READ_INCOMPLETE when the
 * cell ends inside a quote or continuation (err says where). */
int reader_next(reader *r, logical *l, parse_error *err);
void logical_free(logical *l);
/* Fills err's line, column (in characters) and source for byte offset at of
 * l->text: the physical line as typed. With at == SIZE_MAX: the first line's
 * number, no column, and the whole (joined) logical line as source. */
void locate(const logical *l, size_t at, parse_error *err);
/* Sets ename and evalue, locates, returns -1. */
int fail_at(parse_error *err, const logical *l, size_t at, const char *ename, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* ---- parse_args.c ---- */

/* Validates the arguments of one command (tokens first..lx->n-1) against m,
 * a --variant against the variants of the session lab.
 * Returns the params object (new reference), or NULL with err->error.ename/evalue
 * set and *at the byte offset of the culprit in the line (SIZE_MAX if none).
 * cpu_defaulted, when not NULL, receives the keys of the flags with a cpu_def
 * that took their default (a new array, or NULL when there are none). */
json_t *args_parse(const lab_session *lab, const magic_spec *m, const lexed *lx, int first,
                   json_t **cpu_defaulted, parse_error *err, size_t *at);

/* The params key of a magic's positional text: "TEXT" -> "text". */
void positional_key(const magic_spec *m, char *buf, size_t len);

/* ---- parse_value.c ---- */

/* Parses text as the value of flag f, exactly as if the user wrote
 * --name text: comma lists, ranges and all (a family's variants: those of
 * the session lab). Returns a new reference, or NULL with a one-line reason
 * in msg. */
json_t *flag_value_parse(const lab_session *lab, const flag_spec *f, const char *text, char *msg, size_t len);

/* The value a flag has when the user does not give it: the parsed default,
 * false for a switch, null otherwise. NULL (msg set) when the spec's default
 * does not parse, which is a bug in that magic's table. */
json_t *flag_default_value(const flag_spec *f, char *msg, size_t len);

/* The params key of a flag: '-' -> '_'. */
void flag_key(const flag_spec *f, char *buf, size_t len);

/* ---- params.c ---- */

/* The arguments of a %param line (tokens first..lx->n-1): NAME VALUE, or none
 * (a listing: *name and *value NULL). 0 with *name and *value borrowed from
 * lx, or -1 with a reason in msg and the culprit's byte offset in *at. */
int param_line(const lexed *lx, int first, const char **name, const char **value, char *msg, size_t len,
               size_t *at);

/* ---- subst.c ---- */

struct param_scope;

enum subst_mode {
    SUBST_ARGS,     /* a magic's arguments: a value goes in as one quoted argument */
    SUBST_EXPR,     /* an %assert/%score expression: numbers as numbers, the rest as strings */
};

#define SUBST_MAX_BYTES (1u << 20)  /* a line with its values put in */

/* One replacement: s[from, to) became text[out_from, out_to). */
typedef struct subst_span {
    size_t from, to, out_from, out_to;
} subst_span;

typedef struct subst_text {
    char *text;                     /* the whole line, expanded; owned */
    size_t len;
    subst_span *span;               /* the replacements in order; owned */
    size_t nspan;
} subst_text;

/* Expands the references in s from byte `from` on (before it, s is copied).
 * 1 with *t filled (free with subst_text_free); 0 when the line has nothing to
 * expand (*t empty: use s as it is); -1 with the error in *e (a NameError for
 * a name that is not a parameter) and its byte offset in s in *at. */
int subst_expand(const char *s, size_t from, enum subst_mode mode, const struct param_scope *scope,
                 subst_text *t, error_info *e, size_t *at);
/* The offset in s of byte `at` of t->text: inside a replacement, the start of
 * its reference. SIZE_MAX stays SIZE_MAX. */
size_t subst_origin(const subst_text *t, size_t at);
void subst_text_free(subst_text *t);

/* ---- helptext.c ---- */

/* "%echo [--stderr] TEXT" (or "%%name ..." for a cell-only magic) into buf. */
void magic_usage(const magic_spec *m, char *buf, size_t len);
/* Cells of a flag's row in help tables. */
void flag_label(const flag_spec *f, char *buf, size_t len);     /* "-n, --size" */
const char *flag_type_name(const flag_spec *f);                  /* "int", "choice", ... */
void flag_default_text(const flag_spec *f, char *buf, size_t len);
void flag_allowed_text(const lab_session *lab, const flag_spec *f, char *buf, size_t len);
/* Usage, summary, description, the variants in the session lab and positional
 * argument; then the examples. The caller frees. (magic_help_text = head +
 * flags table + examples.) */
char *magic_help_head(const lab_session *lab, const magic_spec *m);
char *magic_help_examples(const magic_spec *m);

#endif
