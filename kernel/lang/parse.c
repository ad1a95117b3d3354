/* parse.c — a cell's text into validated commands.
 *
 * A cell is lines. Blank lines and '#' comments are skipped. A line ending in
 * a backslash, or inside an open quote, continues on the next one; the joined
 * text is a "logical line" and one logical line is one command:
 *
 *   %name args          a line magic; several run in order
 *   %%name args         only as the first command: a cell magic, whose body is
 *                       the rest of the cell, verbatim
 *   %name? ?name %?     help, turned into the %help command
 *
 * The session's parameters ({NAME}, $NAME) are put into each command's
 * arguments before they are read (subst.c); a %param line counts for the
 * lines below it at once, since the whole cell is read before any of it runs.
 *
 * The first error stops parsing, so nothing runs from a cell with a typo in
 * its last line. Error positions are mapped back to physical lines and
 * columns (in characters) so the message can point at the culprit.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "lang/params.h"
#include "lang/parse_internal.h"

#define QUOTE_MAX 60

typedef struct magic_registry {
    const magic_spec *(*find)(const char *name);
    const char *(*nearest)(const char *name);   /* NULL: no suggestions */
} magic_registry;

/* ---- one logical line -> one command ---- */

typedef struct head {               /* what the first token says */
    bool cell;                      /* %%name */
    bool help;                      /* %name?, ?name, %? ... */
    const char *name;               /* not NUL-terminated: len bytes */
    size_t len;
} head;

static bool parse_head(const lexed *lx, head *h)
{
    const char *t = lx->tok[0].text;
    size_t ask = strspn(t, "?"), pct = strspn(t + ask, "%");
    if (lx->lead_quoted[0] || (ask == 0 && pct == 0))
        return false;
    pct = pct > 2 ? 2 : pct;
    h->name = t + ask + pct;
    h->len = strcspn(h->name, "?");
    size_t trail = strspn(h->name + h->len, "?");
    if (h->name[h->len + trail]) {  /* a '?' inside the name: just a bad name */
        h->len = strlen(h->name);
        trail = 0;
    }
    h->cell = pct == 2;
    h->help = ask > 0 || trail > 0;
    return true;
}

bool lexed_is_raw(const lexed *lx, const magic_spec *(*find)(const char *))
{
    head h;
    if (!find || lx->n == 0 || !parse_head(lx, &h) || h.help || h.cell)
        return false;
    char name[64];
    if (h.len >= sizeof name)
        return false;
    memcpy(name, h.name, h.len);
    name[h.len] = '\0';
    const magic_spec *m = find(name);
    return m && m->raw && (m->mode & MAGIC_LINE);
}

static int not_magic(const logical *l, const magic_registry *reg, parse_error *err)
{
    const char *word = l->lx.tok[0].text;
    if (!l->lx.lead_quoted[0] && reg->find(word))
        return fail_at(err, l, l->lx.tok[0].start, "SyntaxError", "cudalab cells hold magic commands: "
                       "start the line with %%, as in %%%s; try %%help", word);
    size_t start = l->lx.tok[0].start;
    return fail_at(err, l, start, "SyntaxError", "cudalab cells hold magic commands: '%.*s' is not one; "
                   "start the line with %%; try %%help", utf8_clip(l->text + start, 40), l->text + start);
}

static int unknown_magic(const logical *l, const magic_registry *reg, const head *h,
                         const char *name, parse_error *err)
{
    const char *near = reg->nearest ? reg->nearest(name) : NULL;
    const char *pct = h->cell ? "%%" : "%";
    int q = utf8_clip(name, QUOTE_MAX);
    if (near)
        return fail_at(err, l, l->lx.tok[0].start, "UsageError", "unknown magic %s%.*s; did you mean %s%s?",
                       pct, q, name, pct, near);
    return fail_at(err, l, l->lx.tok[0].start, "UsageError", "unknown magic %s%.*s; %%help lists them all",
                   pct, q, name);
}

/* %name? and friends: the %help command with the name as its text. */
static json_t *help_params(const logical *l, const magic_registry *reg, const head *h,
                           const magic_spec **m, parse_error *err)
{
    if (l->lx.n > 1) {
        fail_at(err, l, l->lx.tok[1].start, "UsageError", "%.*s asks for help and takes no arguments",
                utf8_clip(l->lx.tok[0].text, QUOTE_MAX), l->lx.tok[0].text);
        return NULL;
    }
    *m = reg->find("help");
    if (!*m) {
        fail_at(err, l, 0, "UsageError", "unknown magic %%help");
        return NULL;
    }
    token tok[2] = { { .text = strndup(h->name, h->len), .start = l->lx.tok[0].start,
                       .end = l->lx.tok[0].end }, { 0 } };
    if (!tok[0].text) {
        fail_at(err, l, SIZE_MAX, "MemoryError", "out of memory");
        return NULL;
    }
    bool quoted[2] = { true, false };
    lexed one = { .tok = tok, .lead_quoted = quoted, .n = h->len ? 1 : 0 };
    size_t at;
    json_t *params = args_parse(NULL, *m, &one, 0, NULL, err, &at);   /* %help's flags name no variant */
    if (!params)
        locate(l, at, err);
    free(tok[0].text);
    return params;
}

/* A raw magic's params: {"<positional>": the rest of the line as typed, with
 * the parameters put in as an expression's values (subst.c)}. */
static json_t *raw_params(const logical *l, const magic_spec *m, const param_scope *scope, parse_error *err)
{
    size_t from = l->lx.tok[0].end;
    from += strspn(l->text + from, " \t");
    subst_text x;
    size_t at = 0;
    int expanded = subst_expand(l->text, from, SUBST_EXPR, scope, &x, &err->error, &at);
    if (expanded < 0) {
        locate(l, at, err);
        return NULL;
    }
    const char *text = (expanded ? x.text : l->text) + from;
    char msg[400];
    json_t *params = NULL;
    if (m->check && m->check(scope->lab, text, msg, sizeof msg, &at) != 0) {
        at = at == SIZE_MAX ? SIZE_MAX : from + at;
        fail_at(err, l, expanded ? subst_origin(&x, at) : at, m->check_ename ? m->check_ename : "SyntaxError",
                "%%%s: %s", m->name, msg);
    } else {
        char key[96];
        positional_key(m, key, sizeof key);
        params = json_pack("{s:s%}", key, text, strlen(text));
        if (!params)
            fail_at(err, l, from, "UsageError", "the text of %%%s is not valid UTF-8", m->name);
    }
    subst_text_free(&x);
    return params;
}

/* %param NAME VALUE: params {"name", "value"} ({} for the listing), and the
 * name defined in the cell's scope at once, so that the lines below it in the
 * same cell see it. */
static json_t *param_params(const logical *l, const lexed *lx, param_scope *scope, parse_error *err)
{
    const char *name, *value;
    char msg[400];
    size_t at;
    if (param_line(lx, 1, &name, &value, msg, sizeof msg, &at) != 0) {
        fail_at(err, l, at, "UsageError", "%s", msg);
        return NULL;
    }
    if (!name)
        return json_object();
    json_t *params = json_pack("{s:s, s:s}", "name", name, "value", value);
    if (!params)
        fail_at(err, l, SIZE_MAX, "UsageError", "the value of %s is not valid UTF-8", name);
    else if (param_scope_room(scope, name, msg, sizeof msg) != 0)
        fail_at(err, l, SIZE_MAX, "UsageError", "%%param %s: %s", name, msg);
    else if (param_scope_define(scope, name, value) != 0)
        fail_at(err, l, SIZE_MAX, "MemoryError", "out of memory");
    else
        return params;
    json_decref(params);
    return NULL;
}

/* The command's key (lang.h: command.key): its tokens after the parameters
 * were put in, one space apart, each as typed when it is plain and as a JSON
 * string otherwise (so `--text "a b"` and `--text a b` stay two keys); comments,
 * spacing and quotes that change nothing ("32", a {NAME} put in) are not part of it. A new string, NULL when out of memory. */
static char *line_key(const lexed *lx)
{
    json_t *words = json_array();
    for (int i = 0; words && i < lx->n; i++) {
        const char *t = lx->tok[i].text;
        bool plain = *t != '\0' && !(lx->lead_quoted[i] && *t == '-');   /* "-x" quoted is no flag */
        for (const char *c = t; plain && *c; c++)
            plain = !is_space(*c) && *c != '\\' && *c != '#' && *c != '"' && *c != '\'';
        json_t *w = json_string(t);
        char *q = plain || !w ? NULL : json_dumps(w, JSON_ENCODE_ANY);
        json_array_append_new(words, q ? json_string(q) : w ? json_incref(w) : json_string("?"));
        json_decref(w);
        free(q);
    }
    size_t len = 1, i;
    json_t *w;
    json_array_foreach(words, i, w)
        len += json_string_length(w) + 1;
    char *key = words ? malloc(len) : NULL;
    if (key) {
        size_t at = 0;
        key[0] = '\0';
        json_array_foreach(words, i, w)
            at += (size_t)snprintf(key + at, len - at, "%s%s", i ? " " : "", json_string_value(w));
    }
    json_decref(words);
    return key;
}

/* A magic's params from its arguments, with the parameters put in (subst.c):
 * the expanded line is tokenized again, its tokens placed at the offsets of
 * the line as typed, so that an error points at what the user wrote. *key:
 * the command's key (line_key), a new string, on success. */
static json_t *args_params(const logical *l, const magic_spec *m, param_scope *scope, json_t **cpu_defaulted,
                           char **key, parse_error *err)
{
    subst_text x;
    size_t at;
    int expanded = subst_expand(l->text, l->lx.tok[0].end, SUBST_ARGS, scope, &x, &err->error, &at);
    if (expanded < 0) {
        locate(l, at, err);
        return NULL;
    }
    lexed mine = { 0 };
    const lexed *lx = &l->lx;
    if (expanded) {
        if (lex_line(x.text, &mine) != 0) {
            subst_text_free(&x);
            fail_at(err, l, SIZE_MAX, "MemoryError", "out of memory");
            return NULL;
        }
        for (int i = 0; i < mine.n; i++) {
            mine.tok[i].start = subst_origin(&x, mine.tok[i].start);
            mine.tok[i].end = subst_origin(&x, mine.tok[i].end);
        }
        lx = &mine;
    }
    json_t *params = args_parse(scope->lab, m, lx, 1, cpu_defaulted, err, &at);
    if (!params) {
        locate(l, at, err);
    } else if (strcmp(m->name, PARAM_MAGIC) == 0) {
        json_decref(params);
        params = param_params(l, lx, scope, err);
    }
    if (params && !(*key = line_key(lx))) {
        json_decref(params);
        params = NULL;
        fail_at(err, l, SIZE_MAX, "MemoryError", "out of memory");
    }
    lexed_free(&mine);
    subst_text_free(&x);
    return params;
}

static json_t *magic_params(const logical *l, const magic_registry *reg, const head *h, param_scope *scope,
                            const magic_spec **m, json_t **cpu_defaulted, char **key, parse_error *err)
{
    char *name = strndup(h->name, h->len);
    if (!name) {
        fail_at(err, l, SIZE_MAX, "MemoryError", "out of memory");
        return NULL;
    }
    json_t *params = NULL;
    size_t at0 = l->lx.tok[0].start;
    int q = utf8_clip(name, QUOTE_MAX);
    *m = reg->find(name);
    if (!*m)
        unknown_magic(l, reg, h, name, err);
    else if (h->cell && !((*m)->mode & MAGIC_CELL))
        fail_at(err, l, at0, "UsageError", "%%%%%.*s is not a cell magic; write %%%.*s as a line of its own",
                q, name, q, name);
    else if (!h->cell && !((*m)->mode & MAGIC_LINE))
        fail_at(err, l, at0, "UsageError", "%%%.*s is a cell magic: write %%%%%.*s as the cell's first "
                "line and its input below it", q, name, q, name);
    else if ((*m)->raw)
        params = raw_params(l, *m, scope, err);
    else
        params = args_params(l, *m, scope, cpu_defaulted, key, err);
    free(name);
    return params;
}

/* A cell magic's key: its line's, a newline, and its body less the blanks at
 * its end. A new string (key is freed), NULL when out of memory. */
static char *body_key(char *key, const char *body)
{
    size_t n = strlen(body);
    while (n > 0 && is_space(body[n - 1]))
        n--;
    size_t len = strlen(key) + 1 + n + 1;
    char *k = malloc(len);
    if (k)
        snprintf(k, len, "%s\n%.*s", key, (int)n, body);
    free(key);
    return k;
}

/* Builds cmd from l. *is_cell: l was a cell magic, so the rest is its body. */
static int command_from(const logical *l, const magic_registry *reg, param_scope *scope, bool first,
                        command *cmd, bool *is_cell, parse_error *err)
{
    head h;
    if (!parse_head(&l->lx, &h))
        return not_magic(l, reg, err);
    if (h.len == 0 && !h.help)
        return fail_at(err, l, l->lx.tok[0].start, "SyntaxError",
                       "%s must be followed by a magic name, as in %%help", h.cell ? "%%" : "%");
    if (h.cell && !first && !h.help)
        return fail_at(err, l, l->lx.tok[0].start, "SyntaxError", "cell magics must come first: "
                       "%%%%%.*s has to be the first command of the cell, with its body below it",
                       utf8_clip(h.name, h.len < QUOTE_MAX ? h.len : QUOTE_MAX), h.name);
    const magic_spec *m = NULL;
    json_t *cpu_defaulted = NULL;
    char *key = NULL;
    json_t *params = h.help ? help_params(l, reg, &h, &m, err)
                            : magic_params(l, reg, &h, scope, &m, &cpu_defaulted, &key, err);
    if (!params) {
        free(key);
        return -1;
    }
    *is_cell = h.cell && first;
    *cmd = (command){ .magic = m, .params = params, .cpu_defaulted = cpu_defaulted, .line = l->line,
                      .source = strdup(l->text), .key = key };
    if (*is_cell && !h.help) {
        cmd->body = strdup(l->after);
        cmd->body_line = l->line + l->nseg;
        if (key)
            cmd->key = cmd->body ? body_key(key, cmd->body) : (free(key), NULL);
    }
    if (!cmd->source || (*is_cell && !h.help && (!cmd->body || (key && !cmd->key)))) {
        json_decref(cmd->params);
        json_decref(cmd->cpu_defaulted);
        free(cmd->source);
        free(cmd->body);
        free(cmd->key);
        return fail_at(err, l, SIZE_MAX, "MemoryError", "out of memory");
    }
    return 0;
}

/* ---- the cell ---- */

static int cell_parse_in(const lab_session *lab, const char *cell, const magic_registry *reg, command **out,
                         parse_error *err)
{
    memset(err, 0, sizeof *err);
    *out = NULL;
    reader r = { .p = cell ? cell : "", .line = 1, .find = reg->find };
    command *cmds = NULL;
    int n = 0, rc;
    logical l;
    param_scope scope = { .lab = lab };
    while ((rc = reader_next(&r, &l, err)) > 0) {
        bool is_cell = false;
        rc = 0;
        if (l.lx.n > 0) {           /* 0: only a comment after a '\' */
            command *grown = realloc(cmds, (size_t)(n + 1) * sizeof *cmds);
            if (!grown) {
                rc = fail_at(err, &l, SIZE_MAX, "MemoryError", "out of memory");
            } else {
                cmds = grown;
                rc = command_from(&l, reg, &scope, n == 0, &cmds[n], &is_cell, err);
                n += rc == 0;
            }
        }
        logical_free(&l);
        if (rc != 0 || is_cell)
            break;
    }
    logical_free(&l);
    param_scope_free(&scope);
    if (rc < 0) {
        commands_free(cmds, n);
        return -1;
    }
    *out = cmds;
    return n;
}

int cell_parse_with(const lab_session *lab, const char *cell, const magic_spec *(*find)(const char *),
                    command **out, parse_error *err)
{
    magic_registry reg = { .find = find, .nearest = NULL };
    return cell_parse_in(lab, cell, &reg, out, err);
}

int cell_parse(const lab_session *lab, const char *cell, command **out, parse_error *err)
{
    magic_registry reg = { .find = magic_find, .nearest = magic_nearest };
    return cell_parse_in(lab, cell, &reg, out, err);
}

void command_clear(command *cmd)
{
    json_decref(cmd->params);
    json_decref(cmd->cpu_defaulted);
    free(cmd->body);
    free(cmd->source);
    free(cmd->key);
    memset(cmd, 0, sizeof *cmd);
}

void commands_free(command *cmds, int n)
{
    for (int i = 0; cmds && i < n; i++)
        command_clear(&cmds[i]);
    free(cmds);
}

static bool blank(const char *s)
{
    return s[strspn(s, " \t\r\n\v\f")] == '\0';
}

/* Incomplete: the cell stops inside a quote or continuation, or is only a
 * valid cell magic's first line. Otherwise whatever a real parse says. */
const char *cell_completeness(const lab_session *lab, const char *cell)
{
    reader r = { .p = cell ? cell : "", .line = 1, .find = magic_find };
    parse_error err;
    logical l;
    int rc;
    bool first = true, header_only = false;
    while ((rc = reader_next(&r, &l, &err)) > 0) {
        head h;
        bool has = l.lx.n > 0;
        bool cell_magic = has && first && parse_head(&l.lx, &h) && h.cell && !h.help;
        header_only = cell_magic && blank(l.after);
        logical_free(&l);
        if (cell_magic)
            break;                  /* the body is not lexed: quotes there are text */
        first = first && !has;
    }
    logical_free(&l);
    if (rc == READ_INCOMPLETE)
        return "incomplete";
    command *cmds;
    int n = cell_parse(lab, cell, &cmds, &err);
    if (n < 0)
        return "invalid";
    commands_free(cmds, n);
    return header_only ? "incomplete" : "complete";
}
