/* parse_args.c — validates the arguments of one command against its magic's
 * spec and builds the params object that run() receives.
 *
 *   --flag value   --flag=value   -f value   --switch   --no-switch   --switch=no
 *   --             ends flags; the rest is positional text
 *   "--text"       a token that starts with a quote is never a flag
 *
 * Everything is checked before any work starts: unknown flags (with a
 * suggestion), repeated flags, missing values, values (parse_value.c), missing
 * required flags and stray positional text. params then holds every flag of
 * the spec: the user's value, else the default.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "lang/parse_internal.h"

#define QUOTE_MAX 60

typedef struct args {
    const lab_session *lab;         /* whose variants a --variant may name */
    const magic_spec *m;
    const lexed *lx;
    int first;                      /* index of the first argument token */
    parse_error *err;
    size_t *at;
    json_t *params;
    bool *seen;                     /* per flag of m */
    json_t *cpu_defaulted;          /* keys of the flags with a cpu_def left to their default */
    char *text;                     /* positional words joined by spaces, or NULL */
    size_t text_len, text_cap;      /* grown by doubling: a line of many words stays linear */
} args;

__attribute__((format(printf, 3, 4)))
static int usage_error(args *a, size_t at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_setv(&a->err->error, "UsageError", fmt, ap);
    va_end(ap);
    *a->at = at;
    return -1;
}

/* A magic's flags: its own, then those every device magic line takes (magic.h). */
static size_t flag_count(const magic_spec *m)
{
    return magic_flag_count(m);
}

/* The index of the flag named name[0..len) in m's flags, or SIZE_MAX. */
static size_t find_long(const magic_spec *m, const char *name, size_t len)
{
    for (size_t i = 0; i < flag_count(m); i++)
        if (strlen(magic_flag(m, i)->name) == len && strncmp(magic_flag(m, i)->name, name, len) == 0)
            return i;
    return SIZE_MAX;
}

static size_t find_short(const magic_spec *m, char c)
{
    for (size_t i = 0; i < flag_count(m); i++)
        if (magic_flag(m, i)->short_name && magic_flag(m, i)->short_name == c)
            return i;
    return SIZE_MAX;
}

static const flag_spec *flag_at(const magic_spec *m, size_t i)
{
    return i == SIZE_MAX ? NULL : magic_flag(m, i);
}

/* "--a, --b, --c" for messages. */
static void flag_names(const magic_spec *m, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < flag_count(m); i++) {
        int n = snprintf(buf + used, len - used, "%s--%s", i ? ", " : "", magic_flag(m, i)->name);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
}

/* shown: what the user typed ("--tiel"); word: the part to match ("tiel"). */
static int unknown_flag(args *a, const token *t, const char *word, const char *shown)
{
    const magic_spec *m = a->m;
    bool no = strncmp(word, "no-", 3) == 0;
    suggest s;
    suggest_init(&s, no ? word + 3 : word);
    for (size_t i = 0; i < flag_count(m); i++)
        if (!no || magic_flag(m, i)->type == FLAG_BOOL)
            suggest_add(&s, magic_flag(m, i)->name);
    int q = utf8_clip(shown, QUOTE_MAX);
    if (s.best)
        return usage_error(a, t->start, "unknown flag %.*s for %%%s; did you mean --%s%s?",
                           q, shown, m->name, no ? "no-" : "", s.best);
    if (flag_count(m) == 0)
        return usage_error(a, t->start, "%%%s takes no flags (got %.*s)", m->name, q, shown);
    char names[300];
    flag_names(m, names, sizeof names);
    return usage_error(a, t->start, "unknown flag %.*s for %%%s; its flags are %s", q, shown, m->name, names);
}

/* Sets the i-th flag of the magic. */
static int set_flag(args *a, size_t i, const char *value, size_t flag_at, size_t value_at)
{
    const flag_spec *f = magic_flag(a->m, i);
    if (a->seen[i] && !(f->opts & FLAG_REPEAT))
        return usage_error(a, flag_at, "--%s is given twice%s", f->name,
                           f->opts & FLAG_LIST ? "; for several values give one comma list (a,b,c)" : "");
    char msg[400], key[96];
    json_t *v = flag_value_parse(a->lab, f, value, msg, sizeof msg);
    if (!v)
        return usage_error(a, value_at, "%s", msg);
    flag_key(f, key, sizeof key);
    if (f->opts & FLAG_REPEAT) {
        json_t *all = json_object_get(a->params, key);
        if (!a->seen[i] || !json_is_array(all))     /* the first replaces the default */
            json_object_set_new(a->params, key, all = json_array());
        v = json_array_append_new(all, v) == 0 ? json_incref(all) : NULL;
        json_decref(v);
        if (!v)
            return usage_error(a, flag_at, "out of memory");
    } else if (json_object_set_new(a->params, key, v) != 0) {
        return usage_error(a, flag_at, "out of memory");
    }
    a->seen[i] = true;
    return 0;
}

static bool looks_like_flag(const lexed *lx, int i)
{
    const char *s = lx->tok[i].text;
    return !lx->lead_quoted[i] && s[0] == '-' && (s[1] == '-' || isalpha((unsigned char)s[1]));
}

/* The value of a non-switch flag written as a separate token: consumes it. */
static int next_value(args *a, int *i, size_t fi)
{
    const flag_spec *f = magic_flag(a->m, fi);
    const token *t = &a->lx->tok[*i];
    if (*i + 1 >= a->lx->n || looks_like_flag(a->lx, *i + 1)) {
        if (f->def)
            return usage_error(a, t->start, "--%s needs a value, e.g. --%s %s", f->name, f->name, f->def);
        return usage_error(a, t->start, "--%s needs a value", f->name);
    }
    (*i)++;
    const token *v = &a->lx->tok[*i];
    return set_flag(a, fi, v->text, t->start, v->start);
}

static int long_flag(args *a, int *i)
{
    const token *t = &a->lx->tok[*i];
    const char *name = t->text + 2, *eq = strchr(name, '=');
    size_t n = eq ? (size_t)(eq - name) : strlen(name);
    size_t fi = find_long(a->m, name, n);
    bool neg = false;
    if (fi == SIZE_MAX && n > 3 && strncmp(name, "no-", 3) == 0)
        fi = find_long(a->m, name + 3, n - 3), neg = true;
    const flag_spec *f = flag_at(a->m, fi);
    if (neg) {
        if (f && f->type != FLAG_BOOL)
            return usage_error(a, t->start, "--%s is not an on/off flag, so --no-%s means nothing",
                               f->name, f->name);
        neg = f != NULL;
    }
    if (!f) {
        char word[80], shown[84];
        snprintf(word, sizeof word, "%.*s", (int)(n < 79 ? n : 79), name);
        snprintf(shown, sizeof shown, "--%s", word);
        utf8_trim(shown);
        return unknown_flag(a, t, word, shown);
    }
    if (f->type == FLAG_BOOL) {
        if (neg && eq)
            return usage_error(a, t->start, "--no-%s takes no value (write --%s=false or --no-%s)",
                               f->name, f->name, f->name);
        return set_flag(a, fi, eq ? eq + 1 : neg ? "false" : "true", t->start, t->start);
    }
    if (!eq)
        return next_value(a, i, fi);
    if (!eq[1] && f->type != FLAG_STRING)
        return usage_error(a, t->start, "--%s needs a value after '='", f->name);
    return set_flag(a, fi, eq + 1, t->start, t->start);
}

static int short_flag(args *a, int *i)
{
    const token *t = &a->lx->tok[*i];
    const char *s = t->text;
    size_t fi = find_short(a->m, s[1]);
    const flag_spec *f = flag_at(a->m, fi);
    int q = utf8_clip(s, QUOTE_MAX);
    if (s[2]) {
        const flag_spec *g = flag_at(a->m, find_long(a->m, s + 1, strcspn(s + 1, "=")));
        if (g)
            return usage_error(a, t->start, "write --%s with two dashes (got %.*s)", g->name, q, s);
        if (f && f->type != FLAG_BOOL)
            return usage_error(a, t->start, "write -%c VALUE with a space (got %.*s)", s[1], q, s);
        return unknown_flag(a, t, s + 1, s);
    }
    if (!f)
        return unknown_flag(a, t, s + 1, s);
    if (f->type == FLAG_BOOL)
        return set_flag(a, fi, "true", t->start, t->start);
    return next_value(a, i, fi);
}

/* "--check false": the user meant a value for a switch. */
static bool after_switch(const args *a, int i)
{
    if (i <= a->first || a->lx->lead_quoted[i - 1])
        return false;
    const char *p = a->lx->tok[i - 1].text;
    const flag_spec *f = NULL;
    if (p[0] == '-' && p[1] == '-' && !strchr(p, '='))
        f = flag_at(a->m, find_long(a->m, p + 2, strlen(p + 2)));
    else if (p[0] == '-' && p[1] && !p[2])
        f = flag_at(a->m, find_short(a->m, p[1]));
    return f && f->type == FLAG_BOOL;
}

static int positional(args *a, int i)
{
    const token *t = &a->lx->tok[i];
    int q = utf8_clip(t->text, QUOTE_MAX);
    if (!a->m->positional) {
        char usage[300];
        magic_usage(a->m, usage, sizeof usage);
        if (after_switch(a, i))
            return usage_error(a, t->start, "unexpected argument '%.*s' for %%%s: on/off flags take "
                               "--flag=false or --no-flag; usage: %s", q, t->text, a->m->name, usage);
        return usage_error(a, t->start, "unexpected argument '%.*s' for %%%s; usage: %s",
                           q, t->text, a->m->name, usage);
    }
    size_t add = strlen(t->text), need = a->text_len + add + 2;
    if (array_grow(&a->text, &a->text_cap, need, 1) != 0)
        return usage_error(a, t->start, "out of memory");
    if (a->text_len)
        a->text[a->text_len++] = ' ';
    memcpy(a->text + a->text_len, t->text, add + 1);
    a->text_len += add;
    return 0;
}

void positional_key(const magic_spec *m, char *buf, size_t len)
{
    snprintf(buf, len, "%s", m->positional ? m->positional : "text");
    for (char *p = buf; *p; p++)
        *p = *p == '-' ? '_' : (char)tolower((unsigned char)*p);
}

/* Required flags, defaults and the positional text, once all tokens are in. */
static int finish(args *a)
{
    const magic_spec *m = a->m;
    for (size_t i = 0; i < flag_count(m); i++) {
        const flag_spec *f = magic_flag(m, i);
        if (a->seen[i])
            continue;
        char msg[400], key[96];
        if (f->opts & FLAG_REQUIRED) {
            char usage[300];
            magic_usage(m, usage, sizeof usage);
            return usage_error(a, SIZE_MAX, "missing required flag --%s for %%%s; usage: %s",
                               f->name, m->name, usage);
        }
        json_t *v = flag_default_value(f, msg, sizeof msg);
        if (!v)
            return usage_error(a, SIZE_MAX, "internal error in %%%s: %s", m->name, msg);
        flag_key(f, key, sizeof key);
        json_object_set_new(a->params, key, v);
        if (f->cpu_def && (a->cpu_defaulted || (a->cpu_defaulted = json_array())))
            json_array_append_new(a->cpu_defaulted, json_string(key));
    }
    /* the spec's flag order, whatever order they were typed in: sweeps loop in
     * that order and every document reads the same */
    json_t *ordered = json_object();
    if (!ordered)
        return usage_error(a, SIZE_MAX, "out of memory");
    for (size_t i = 0; i < flag_count(m); i++) {
        char key[96];
        flag_key(magic_flag(m, i), key, sizeof key);
        json_object_set(ordered, key, json_object_get(a->params, key));
    }
    json_decref(a->params);
    a->params = ordered;
    if (!m->positional)
        return 0;
    char key[96];
    positional_key(m, key, sizeof key);
    json_t *v = a->text ? json_string(a->text) : json_null();
    if (!v)
        return usage_error(a, SIZE_MAX, "the text of %%%s is not valid UTF-8", m->name);
    json_object_set_new(a->params, key, v);
    return 0;
}

json_t *args_parse(const lab_session *lab, const magic_spec *m, const lexed *lx, int first,
                   json_t **cpu_defaulted, parse_error *err, size_t *at)
{
    args a = { .lab = lab, .m = m, .lx = lx, .first = first, .err = err, .at = at };
    *at = SIZE_MAX;
    a.params = json_object();
    a.seen = calloc(flag_count(m) + 1, sizeof *a.seen);
    int rc = a.params && a.seen ? 0 : usage_error(&a, SIZE_MAX, "out of memory");
    if (rc == 0 && lx->clipped)
        rc = usage_error(&a, SIZE_MAX, "%%%s takes at most %d words (flags, values and text); put long "
                         "text in one quoted argument%s", m->name, LEX_MAX_WORDS,
                         m->mode & MAGIC_CELL ? " or in the cell's body" : "");
    bool ended = false;
    for (int i = first; rc == 0 && i < lx->n; i++) {
        const char *s = lx->tok[i].text;
        bool dash = !ended && !lx->lead_quoted[i] && s[0] == '-';
        if (dash && strcmp(s, "--") == 0)
            ended = true;
        else if (dash && s[1] == '-')
            rc = long_flag(&a, &i);
        else if (dash && isalpha((unsigned char)s[1]))
            rc = short_flag(&a, &i);
        else
            rc = positional(&a, i);
    }
    if (rc == 0)
        rc = finish(&a);
    free(a.seen);
    free(a.text);
    if (rc != 0 || !cpu_defaulted)
        json_decref(a.cpu_defaulted);
    else
        *cpu_defaulted = a.cpu_defaulted;
    if (rc != 0) {
        json_decref(a.params);
        return NULL;
    }
    return a.params;
}

json_t *params_cpu_defaults(const magic_spec *m, const json_t *params, const json_t *cpu_defaulted, char *changed,
                            size_t len)
{
    size_t used = 0;
    changed[0] = '\0';
    if (json_array_size(cpu_defaulted) == 0)
        return json_incref((json_t *)params);
    json_t *out = json_copy((json_t *)params);      /* shallow: the values are replaced, never changed */
    for (size_t i = 0; out && i < flag_count(m); i++) {
        const flag_spec *f = magic_flag(m, i);
        char key[96], why[400];
        flag_key(f, key, sizeof key);
        bool wanted = false;
        for (size_t j = 0; f->cpu_def && j < json_array_size(cpu_defaulted) && !wanted; j++)
            wanted = json_is_string(json_array_get(cpu_defaulted, j)) &&
                     strcmp(json_string_value(json_array_get(cpu_defaulted, j)), key) == 0;
        json_t *v = wanted ? flag_value_parse(NULL, f, f->cpu_def, why, sizeof why) : NULL;
        if (!v)
            continue;               /* a cpu_def that does not parse is caught by the unit tests */
        json_object_set_new(out, key, v);
        int w = snprintf(changed + used, len - used, "%s--%s %s (%s on a GPU)", used ? ", " : "", f->name,
                         f->cpu_def, f->def ? f->def : "none");
        if (w > 0 && (size_t)w < len - used)
            used += (size_t)w;
    }
    return out ? out : json_incref((json_t *)params);
}
