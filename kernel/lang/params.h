/* params.h — the session's parameters: %param NAME VALUE defines one, and
 * {NAME} or $NAME in a later magic line's arguments stands for its value
 * (papermill's injected cell is a run of %param lines).
 *
 *   params.c   the session's table, the %param line's syntax, a cell's scope
 *   subst.c    {NAME} / $NAME in a line's text, as IPython expands line magics
 *
 * The table is a part of the session (magic/lab_session.h) in the process that
 * parses cells (the kernel process, or the command line's), like the session's
 * student kernels: it lasts the session and is freed with it.
 */
#ifndef CUDALAB_LANG_PARAMS_H
#define CUDALAB_LANG_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

#include "magic/lab_session.h"

/* The magic that defines parameters (kernel/magics/param.c). The parser
 * knows it by this name, as it knows %help for `name?`: a %param line is
 * read at parse time too, so that the lines after it in the same cell see it. */
#define PARAM_MAGIC "param"

#define PARAM_NAME_MAX 64               /* bytes of a name */
#define PARAM_VALUE_MAX (64u << 10)     /* bytes of one value: as long as a command may be */
#define PARAM_COUNT_MAX 256             /* parameters in a session */
#define PARAM_TOTAL_MAX (1u << 20)      /* bytes of all values together */

/* ---- the session's table ---- */

/* The value of a parameter defined in the session lab, or NULL. Borrowed:
 * valid until the parameter is redefined or the session freed. */
const char *param_get(const lab_session *lab, const char *name);
/* Defines or redefines a parameter of the session lab. 0, or -1 with the
 * reason in why (the name's rule, a value too long, the table full, out of
 * memory). */
int param_set(lab_session *lab, const char *name, const char *value, char *why, size_t len);
size_t param_count(const lab_session *lab);
/* The i-th parameter in the order of definition (i < param_count(lab)). */
const char *param_name_at(const lab_session *lab, size_t i);
const char *param_value_at(const lab_session *lab, size_t i);

/* The name rule: letters, digits and _, not starting with a digit, at most
 * PARAM_NAME_MAX bytes. 0, or -1 with why it is not a name. */
int param_name_check(const char *name, size_t n, char *why, size_t len);
/* Whether c may be a name's character (its first, when first). */
bool param_name_char(char c, bool first);
/* A value's length against PARAM_VALUE_MAX: 0, or -1 with why. */
int param_value_check(const char *name, size_t value_len, char *why, size_t len);

/* ---- a cell's scope: the table plus the %param lines parsed so far ---- */

typedef struct param_scope {
    const lab_session *lab;         /* the session whose table the cell extends (NULL: none) */
    char **names, **values;         /* owned: what this cell's earlier %param lines define */
    size_t n;
    size_t fresh;                   /* how many of the names the session's table does not have yet */
} param_scope;

/* The value name (n bytes, not NUL-terminated) has in the scope: this cell's
 * own definitions first, then the session's. NULL when it has none. */
const char *param_scope_get(const param_scope *s, const char *name, size_t n);
/* Whether one more %param line of the cell may define name: with the
 * session's parameters, at most PARAM_COUNT_MAX. 0, or -1 with why (the
 * limit, as param_set says it). */
int param_scope_room(const param_scope *s, const char *name, char *why, size_t len);
/* Records a definition of a %param line parsed earlier in the cell. 0, or -1 (out of memory). */
int param_scope_define(param_scope *s, const char *name, const char *value);
void param_scope_free(param_scope *s);
/* "size, tile, variant" (the scope's names, this cell's first), or
 * "none" when there are none; into buf. */
void param_scope_names(const param_scope *s, char *buf, size_t len);
/* The nearest name of the scope to name (n bytes), or NULL when none is close. */
const char *param_scope_nearest(const param_scope *s, const char *name, size_t n);

#endif
