/* complete.c — complete_request, inspect_request and is_complete_request.
 *
 * All three read the same magic descriptions as the parser: magic names after
 * '%', a magic's flags after '-', a choice flag's values after the flag; in
 * %assert and %score, result names and their fields from the session's results;
 * after %interact, the command it wraps as if it began the line; the session's
 * parameters after '{' or '$' and as %param's first argument.
 * Cursor positions are in Unicode code points (protocol 5.2+).
 */
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "grade/expr.h"
#include "lang/interact.h"
#include "lang/params.h"
#include "magic/families.h"
#include "magic/magic.h"
#include "shell/session.h"

/* Byte offset of a frontend's cursor_pos (in characters; a negative one is 0). */
static size_t cursor_byte(const char *code, json_int_t cp)
{
    return utf8_offset(code, cp > 0 ? (size_t)cp : 0);
}

/* The line around byte offset pos: [*start, *end). */
static void line_at(const char *code, size_t pos, size_t *start, size_t *end)
{
    size_t s = pos, e = pos;
    while (s > 0 && code[s - 1] != '\n')
        s--;
    while (code[e] && code[e] != '\n')
        e++;
    *start = s;
    *end = e;
}

/* The magic a line invokes (its first token without % / %% / trailing ?). */
static const magic_spec *line_magic(const token *t, int n)
{
    if (n < 1 || t[0].text[0] != '%')
        return NULL;
    char name[64];
    const char *p = t[0].text + (t[0].text[1] == '%' ? 2 : 1);
    size_t len = strcspn(p, "?");
    if (len >= sizeof name)
        return NULL;
    memcpy(name, p, len);
    name[len] = '\0';
    return magic_find(name);
}

static void add_prefixed(json_t *out, const char *prefix, const char *word, const char *typed)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s%s", prefix, word);
    if (strncmp(buf, typed, strlen(typed)) == 0)
        json_array_append_new(out, json_string(buf));
}

static void complete_magics(json_t *out, const char *typed)
{
    size_t n;
    const magic_spec *const *all = magic_all(&n);
    int cell = strncmp(typed, "%%", 2) == 0;
    for (size_t i = 0; i < n; i++)
        if (cell ? (all[i]->mode & MAGIC_CELL) != 0 : (all[i]->mode & MAGIC_LINE) != 0)
            add_prefixed(out, cell ? "%%" : "%", all[i]->name, typed);
}

static void complete_flags(json_t *out, const magic_spec *m, const char *typed)
{
    for (size_t i = 0; i < magic_flag_count(m); i++) {
        const flag_spec *f = magic_flag(m, i);
        add_prefixed(out, "--", f->name, typed);
        if (f->type == FLAG_BOOL && strncmp(typed, "--n", 3) == 0)
            add_prefixed(out, "--no-", f->name, typed);
    }
}

static const flag_spec *find_flag(const magic_spec *m, const char *arg)
{
    if (!m || strncmp(arg, "--", 2) != 0)
        return NULL;
    size_t len = strcspn(arg + 2, "=");
    for (size_t i = 0; i < magic_flag_count(m); i++)
        if (strlen(magic_flag(m, i)->name) == len && strncmp(magic_flag(m, i)->name, arg + 2, len) == 0)
            return magic_flag(m, i);
    return NULL;
}

static void complete_choices(json_t *out, const lab_session *lab, const flag_spec *f, const char *prefix,
                             const char *typed)
{
    const char *c;
    for (size_t i = 0; (c = flag_choice(lab, f, i)); i++)
        add_prefixed(out, prefix, c, typed);
}

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* %assert/%score: the name being typed, from the session's results. After a
 * '.', the fields of what comes before it (back over names, dots and whole
 * [...] groups: histo[variant=fast].bins); else the names with a result and
 * the functions. */
static void complete_expr(const char *line, size_t cur, const result_store *rs, json_t *out, size_t *from)
{
    size_t w = cur;
    while (w > 0 && name_char(line[w - 1]))
        w--;
    *from = w;
    char *src = NULL;
    if (w > 0 && line[w - 1] == '.') {
        size_t p = w - 1;
        for (;;) {
            if (p > 0 && (name_char(line[p - 1]) || line[p - 1] == '.')) {
                p--;
            } else if (p > 0 && line[p - 1] == ']') {
                int depth = 0;
                size_t q = p;
                while (q > 0) {
                    char c = line[--q];
                    depth += c == ']' ? 1 : c == '[' ? -1 : 0;
                    if (depth == 0)
                        break;
                }
                if (depth != 0)
                    break;
                p = q;
            } else {
                break;
            }
        }
        src = strndup(line + p, w - 1 - p);
        if (!src || !*src) {
            free(src);
            return;
        }
    }
    json_t *names = expr_names(src, rs);
    size_t i;
    json_t *name;
    json_array_foreach(names, i, name)
        add_prefixed(out, "", json_string_value(name), line + w);
    json_decref(names);
    free(src);
}

/* Where the command wrapped by %interact starts in line (tokens t, n of them), or 0. */
static size_t wrapped_at(const char *line, const token *t, int n, const magic_spec *m)
{
    if (m != &magic_interact || n < 1)
        return 0;
    return t[0].end + strspn(line + t[0].end, " \t");
}

/* A parameter's reference being typed ({si, $si): true with the matches, from
 * the '{' or '$'. An odd run of them opens one ($$ and {{ are literals). */
static bool complete_param_ref(const lab_session *lab, const char *line, size_t cur, json_t *out, size_t *from)
{
    size_t w = cur, run = 0;
    while (w > 0 && name_char(line[w - 1]))
        w--;
    if (w == 0 || (line[w - 1] != '{' && line[w - 1] != '$'))
        return false;
    while (run < w && line[w - 1 - run] == line[w - 1])
        run++;
    if (run % 2 == 0 || (w < cur && line[w] >= '0' && line[w] <= '9'))
        return false;
    char typed[PARAM_NAME_MAX + 2];
    snprintf(typed, sizeof typed, "%c%.*s", line[w - 1], (int)(cur - w), line + w);
    for (size_t i = 0; i < param_count(lab); i++) {
        char ref[PARAM_NAME_MAX + 3];
        snprintf(ref, sizeof ref, line[w - 1] == '{' ? "{%s}" : "$%s", param_name_at(lab, i));
        if (strncmp(ref, typed, strlen(typed)) == 0)
            json_array_append_new(out, json_string(ref));
    }
    *from = w - 1;
    return true;
}

/* Fills matches for the word ending at byte `cur` of line, in the session
 * lab; *from = where it starts. in_body: the line is a cell magic's body (C++,
 * text), not arguments. */
static void complete_line(const lab_session *lab, const char *line, size_t cur, bool in_body,
                          const result_store *rs, json_t *out, size_t *from)
{
    char *head = strndup(line, cur);
    if (!head)
        return;
    token *t = NULL;
    int n = line_tokens(head, &t);
    if (n < 0)
        n = 0;
    int at_end = n > 0 && t[n - 1].end == cur;       /* the cursor is inside the last token */
    const char *typed = at_end ? t[n - 1].text : "";
    *from = at_end ? t[n - 1].start : cur;
    const magic_spec *m = line_magic(t, n);
    size_t wrapped = in_body || (n == 1 && at_end) ? 0 : wrapped_at(head, t, n, m);
    if (in_body) {
        ;                                               /* C++ or text: nothing of ours */
    } else if (wrapped > 0) {
        complete_line(lab, line + wrapped, cur - wrapped, false, rs, out, from);
        *from += wrapped;
    } else if (n > 1 && complete_param_ref(lab, head, cur, out, from)) {
        ;
    } else if (n == 0 || (n == 1 && at_end)) {
        if (typed[0] == '%' || typed[0] == '\0')
            complete_magics(out, typed[0] ? typed : "%");
    } else if (m && m->raw) {
        complete_expr(head, cur, rs, out, from);
    } else if (m && strcmp(m->name, PARAM_MAGIC) == 0 && n - at_end == 1) {  /* %param NAME */
        for (size_t i = 0; i < param_count(lab); i++)
            add_prefixed(out, "", param_name_at(lab, i), typed);
    } else if (typed[0] == '-' && !strchr(typed, '=') && m) {
        complete_flags(out, m, typed);
    } else if (m) {
        const flag_spec *f = find_flag(m, typed);
        if (f && f->type == FLAG_CHOICE) {              /* --variant=na */
            size_t eq = strcspn(typed, "=") + 1;
            char prefix[96];
            snprintf(prefix, sizeof prefix, "%.*s", (int)eq, typed);
            complete_choices(out, lab, f, prefix, typed);
        } else {
            int prev = at_end ? n - 2 : n - 1;
            f = prev >= 1 ? find_flag(m, t[prev].text) : NULL;
            if (f && f->type == FLAG_CHOICE && !strchr(t[prev].text, '='))
                complete_choices(out, lab, f, "", typed);
        }
    }
    tokens_free(t, n);
    free(head);
}

/* Whether the line starting at byte ls is in the body of a cell magic: below
 * a first command line that starts with %%. */
static bool in_cell_body(const char *code, size_t ls)
{
    size_t i = 0;
    for (;;) {
        size_t e = i + strcspn(code + i, "\n");
        size_t j = i + strspn(code + i, " \t\r");
        if (j < e && code[j] != '#')        /* the first command's line */
            return strncmp(code + j, "%%", 2) == 0 && ls > e;
        if (!code[e] || e >= ls)
            return false;
        i = e + 1;
    }
}

enum handled handle_complete(shell_session *s, shell_request *req)
{
    const char *code = json_string_value(json_object_get(req->msg.content, "code"));
    const json_t *cp = json_object_get(req->msg.content, "cursor_pos");
    if (!code)
        code = "";
    size_t pos = json_is_integer(cp) ? cursor_byte(code, json_integer_value(cp)) : strlen(code);
    size_t ls, le, from = pos;
    line_at(code, pos, &ls, &le);
    json_t *matches = json_array();
    char *line = strndup(code + ls, le - ls);
    if (line) {
        complete_line(s->lab, line, pos - ls, in_cell_body(code, ls), s->results, matches, &from);
        from += ls;
    }
    free(line);
    session_reply(s, req, "complete_reply",
                 json_pack("{s:s, s:o, s:I, s:I, s:{}}", "status", "ok", "matches", matches,
                           "cursor_start", (json_int_t)utf8_chars_n(code, from), "cursor_end",
                           (json_int_t)utf8_chars_n(code, pos), "metadata"));
    return HANDLED_DONE;
}

enum handled handle_inspect(shell_session *s, shell_request *req)
{
    const char *code = json_string_value(json_object_get(req->msg.content, "code"));
    const json_t *cp = json_object_get(req->msg.content, "cursor_pos");
    if (!code)
        code = "";
    size_t pos = json_is_integer(cp) ? cursor_byte(code, json_integer_value(cp)) : 0;
    size_t ls, le;
    line_at(code, pos, &ls, &le);
    char *line = strndup(code + ls, le - ls);
    token *t = NULL;
    int n = line ? line_tokens(line, &t) : 0;
    const magic_spec *m = line_magic(t, n < 0 ? 0 : n);
    /* in %interact %matmul ..., the help of the magic under the cursor */
    if (m == &magic_interact && n >= 2 && pos - ls >= t[1].start)
        m = line_magic(t + 1, n - 1) ? line_magic(t + 1, n - 1) : m;
    tokens_free(t, n < 0 ? 0 : n);
    free(line);
    json_t *data = json_object();
    if (m) {
        char *help = magic_help_text(s->lab, m);
        json_object_set_new(data, "text/plain", json_string(help ? help : m->summary));
        free(help);
    }
    session_reply(s, req, "inspect_reply",
                 json_pack("{s:s, s:b, s:o, s:{}}", "status", "ok", "found", m != NULL, "data", data,
                           "metadata"));
    return HANDLED_DONE;
}

enum handled handle_is_complete(shell_session *s, shell_request *req)
{
    const char *code = json_string_value(json_object_get(req->msg.content, "code"));
    const char *status = code ? cell_completeness(s->lab, code) : "invalid";
    json_t *content = json_pack("{s:s}", "status", status);
    if (strcmp(status, "incomplete") == 0)
        json_object_set_new(content, "indent", json_string(""));
    session_reply(s, req, "is_complete_reply", content);
    return HANDLED_DONE;
}
