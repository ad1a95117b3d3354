/* params.c — the session's parameters (%param NAME VALUE), the syntax of a
 * %param line, and a cell's scope of them while it is parsed.
 *
 * A parameter is text: the value exactly as the command line's token gave it,
 * quotes removed. It means something only where {NAME} puts it back into a
 * magic's arguments, where the magic's own flag parses it (so `%param size
 * 2^20` is as good as `--size 2^20`). Lookups are linear: a session holds at
 * most PARAM_COUNT_MAX of them, and a lecture a handful.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/params.h"
#include "base/utf8.h"
#include "lang/parse_internal.h"
#include "magic/lab_session.h"

typedef struct param {
    char *name, *value;
} param;

/* The session's part LAB_PARAMS. */
typedef struct param_table {
    param at[PARAM_COUNT_MAX];
    size_t count, total;            /* total: bytes of all values */
} param_table;

static void table_drop(void *part)
{
    param_table *t = part;
    for (size_t i = 0; i < t->count; i++) {
        free(t->at[i].name);
        free(t->at[i].value);
    }
    t->count = t->total = 0;
}

/* The session's table; NULL where it has none yet (no parameter defined). */
static const param_table *table_of(const lab_session *lab)
{
    return lab_part(lab, LAB_PARAMS);
}

bool param_name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
}

int param_value_check(const char *name, size_t value_len, char *why, size_t len)
{
    if (value_len > PARAM_VALUE_MAX)
        return fail_into(why, len, "the value of %s is %zu bytes; a parameter holds at most %u", name, value_len,
                         PARAM_VALUE_MAX);
    return 0;
}

int param_name_check(const char *name, size_t n, char *why, size_t len)
{
    int q = utf8_clip(name, n < 40 ? n : 40);
    if (n == 0)
        return fail_into(why, len, "a parameter needs a name");
    if (n > PARAM_NAME_MAX)
        return fail_into(why, len, "'%.*s...' is not a parameter name: at most %d characters", q, name,
                         PARAM_NAME_MAX);
    for (size_t i = 0; i < n; i++)
        if (!param_name_char(name[i], i == 0))
            return fail_into(why, len, "'%.*s' is not a parameter name: letters, digits and _, not starting "
                             "with a digit (as in size or tile_2)", q, name);
    return 0;
}

/* The limit on the session's parameters, said where a definition meets it. */
static int table_full(char *why, size_t len)
{
    return fail_into(why, len, "a session holds at most %d parameters; redefine one of them instead",
                     PARAM_COUNT_MAX);
}

static param *find(const param_table *t, const char *name, size_t n)
{
    for (size_t i = 0; t && i < t->count; i++)
        if (strlen(t->at[i].name) == n && memcmp(t->at[i].name, name, n) == 0)
            return (param *)&t->at[i];
    return NULL;
}

const char *param_get(const lab_session *lab, const char *name)
{
    const param *p = name ? find(table_of(lab), name, strlen(name)) : NULL;
    return p ? p->value : NULL;
}

int param_set(lab_session *lab, const char *name, const char *value, char *why, size_t len)
{
    size_t vn = strlen(value);
    if (param_name_check(name, strlen(name), why, len) != 0 || param_value_check(name, vn, why, len) != 0)
        return -1;
    param_table *t = lab_part_make(lab, LAB_PARAMS, sizeof *t, table_drop);
    if (!t)
        return fail_into(why, len, lab ? "out of memory" : "no session to hold parameters");
    param *p = find(t, name, strlen(name));
    size_t old = p ? strlen(p->value) : 0;
    if (!p && t->count == PARAM_COUNT_MAX)
        return table_full(why, len);
    if (t->total - old + vn > PARAM_TOTAL_MAX)
        return fail_into(why, len, "the session's parameters hold at most %u KiB of values together",
                         PARAM_TOTAL_MAX >> 10);
    char *v = strdup(value), *n = p ? NULL : strdup(name);
    if (!v || (!p && !n)) {
        free(v);
        free(n);
        return fail_into(why, len, "out of memory");
    }
    if (!p) {
        p = &t->at[t->count++];
        p->name = n;
    } else {
        free(p->value);
    }
    p->value = v;
    t->total = t->total - old + vn;
    return 0;
}

size_t param_count(const lab_session *lab)
{
    const param_table *t = table_of(lab);
    return t ? t->count : 0;
}

const char *param_name_at(const lab_session *lab, size_t i)
{
    return i < param_count(lab) ? table_of(lab)->at[i].name : NULL;
}

const char *param_value_at(const lab_session *lab, size_t i)
{
    return i < param_count(lab) ? table_of(lab)->at[i].value : NULL;
}

/* ---- a %param line ---- */

int param_line(const lexed *lx, int first, const char **name, const char **value, char *msg, size_t len,
               size_t *at)
{
    *name = *value = NULL;
    *at = SIZE_MAX;
    int arg[3], n = 0;              /* the arguments, less the `--` that ends flags (args_parse's rule) */
    bool ended = false;
    for (int i = first; i < lx->n && n < 3; i++) {
        if (!ended && !lx->lead_quoted[i] && strcmp(lx->tok[i].text, "--") == 0)
            ended = true;
        else
            arg[n++] = i;
    }
    if (n == 0)
        return 0;                   /* %param alone lists them */
    const token *t = &lx->tok[arg[0]];
    *at = t->start;
    if (lx->lead_quoted[arg[0]])
        return fail_into(msg, len, "a parameter's name is written as it is, without quotes or a {NAME}, as in "
                         "%%param size 1024");
    if (param_name_check(t->text, strlen(t->text), msg, len) != 0)
        return -1;
    if (n == 1) {
        *at = t->end;
        return fail_into(msg, len, "%%param %s needs a value, as in %%param %s 1024 (%%param alone lists the "
                         "parameters)", t->text, t->text);
    }
    const token *v = &lx->tok[arg[1]];
    if (n > 2) {
        *at = lx->tok[arg[2]].start;
        return fail_into(msg, len, "%%param %s takes one value; quote it to keep its spaces, as in %%param %s "
                         "\"%.*s %.*s\"", t->text, t->text, utf8_clip(v->text, 30), v->text,
                         utf8_clip(lx->tok[arg[2]].text, 30), lx->tok[arg[2]].text);
    }
    if (param_value_check(t->text, strlen(v->text), msg, len) != 0) {
        *at = v->start;
        return -1;
    }
    *at = SIZE_MAX;
    *name = t->text;
    *value = v->text;
    return 0;
}

/* ---- a cell's scope ---- */

const char *param_scope_get(const param_scope *s, const char *name, size_t n)
{
    for (size_t i = s ? s->n : 0; i-- > 0;)
        if (strlen(s->names[i]) == n && memcmp(s->names[i], name, n) == 0)
            return s->values[i];
    const param *p = find(table_of(s ? s->lab : NULL), name, n);
    return p ? p->value : NULL;
}

static bool in_cell(const param_scope *s, const char *name);

int param_scope_room(const param_scope *s, const char *name, char *why, size_t len)
{
    if (in_cell(s, name) || find(table_of(s->lab), name, strlen(name)) ||
        param_count(s->lab) + s->fresh < PARAM_COUNT_MAX)
        return 0;
    return table_full(why, len);
}

int param_scope_define(param_scope *s, const char *name, const char *value)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->names[i], name) == 0) {           /* redefined in the same cell: one name */
            char *v = strdup(value);
            if (!v)
                return -1;
            free(s->values[i]);
            s->values[i] = v;
            return 0;
        }
    if (s->n == PARAM_COUNT_MAX)
        return -1;
    char **names = realloc(s->names, (s->n + 1) * sizeof *names);
    if (names)
        s->names = names;
    char **values = realloc(s->values, (s->n + 1) * sizeof *values);
    if (values)
        s->values = values;
    char *n = names && values ? strdup(name) : NULL, *v = n ? strdup(value) : NULL;
    if (!v) {
        free(n);
        return -1;
    }
    s->names[s->n] = n;
    s->values[s->n++] = v;
    s->fresh += !find(table_of(s->lab), name, strlen(name));
    return 0;
}

void param_scope_free(param_scope *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->names[i]);
        free(s->values[i]);
    }
    free(s->names);
    free(s->values);
    *s = (param_scope){ .lab = s->lab };
}

/* Each name once: a cell's redefinition of a session parameter is one name. */
static bool in_cell(const param_scope *s, const char *name)
{
    for (size_t i = 0; s && i < s->n; i++)
        if (strcmp(s->names[i], name) == 0)
            return true;
    return false;
}

void param_scope_names(const param_scope *s, char *buf, size_t len)
{
    size_t used = 0, shown = 0, sn = s ? s->n : 0, count = param_count(s ? s->lab : NULL);
    buf[0] = '\0';
    for (size_t i = 0; i < sn + count && used < len; i++) {
        const char *name = i < sn ? s->names[i] : param_name_at(s->lab, i - sn);
        if (i >= sn && in_cell(s, name))
            continue;
        int w = snprintf(buf + used, len - used, "%s%s", shown ? ", " : "", name);
        if (w < 0 || (size_t)w >= len - used) {
            snprintf(buf + used, len - used, ", ...");
            break;
        }
        used += (size_t)w;
        shown++;
    }
    if (shown == 0)
        snprintf(buf, len, "none");
}

const char *param_scope_nearest(const param_scope *s, const char *name, size_t n)
{
    char word[PARAM_NAME_MAX + 1];
    snprintf(word, sizeof word, "%.*s", (int)(n < PARAM_NAME_MAX ? n : PARAM_NAME_MAX), name);
    suggest sg;
    suggest_init(&sg, word);
    for (size_t i = 0; s && i < s->n; i++)
        suggest_add(&sg, s->names[i]);
    const lab_session *lab = s ? s->lab : NULL;
    for (size_t i = 0; i < param_count(lab); i++)
        suggest_add(&sg, param_name_at(lab, i));
    return sg.best;
}
