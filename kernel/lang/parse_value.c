/* parse_value.c — turns the text of one flag value into a typed JSON value,
 * checked against the flag's spec: type, range, choices, list or not.
 *
 * Every refusal is one line that names the flag, says what is allowed and
 * quotes what the user wrote (clipped, UTF-8 safe), because the student reads
 * it in a notebook with no other context. Defaults go through the same code,
 * so a default is exactly what the user would get by typing it.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/utf8.h"
#include "lang/parse_internal.h"

#define QUOTE_MAX 60                /* bytes of user text quoted in a message */

__attribute__((format(printf, 3, 4)))
static json_t *fail(char *msg, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
    utf8_trim(msg);
    return NULL;
}

void flag_key(const flag_spec *f, char *buf, size_t len)
{
    snprintf(buf, len, "%s", f->name);
    for (char *p = buf; *p; p++)
        if (*p == '-')
            *p = '_';
}

/* [imin, imax], where 0..0 means "not set": any int64 (DIMS: any positive). */
static void int_range(const flag_spec *f, long long *lo, long long *hi)
{
    bool unset = f->imin == 0 && f->imax == 0;
    *lo = unset ? INT64_MIN : f->imin;
    *hi = unset ? INT64_MAX : f->imax;
    if (f->type == FLAG_DIMS && *lo < 1)
        *lo = 1;
}

/* "0", or "64K = 65536" when the user wrote it another way. */
static void got_int(const char *text, long long v, char *buf, size_t len)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", v);
    if (strcmp(num, text) == 0)
        snprintf(buf, len, "%s", num);
    else
        snprintf(buf, len, "%.*s = %s", utf8_clip(text, QUOTE_MAX), text, num);
}

static json_t *dims_shape_error(const flag_spec *f, const char *whole, char *msg, size_t len)
{
    return fail(msg, len, "--%s expects 1 to 3 sizes joined by x, such as 256, 16x16 or 8x8x4 "
                "(got '%.*s')", f->name, utf8_clip(whole, QUOTE_MAX), whole);
}

/* One integer of an INT flag, or one size of a DIMS flag (whole = all of it). */
static json_t *int_item(const flag_spec *f, const char *text, const char *whole, char *msg, size_t len)
{
    long long v, lo, hi;
    int_range(f, &lo, &hi);
    const char *what = whole ? " sizes" : "";
    int q = utf8_clip(text, QUOTE_MAX);
    if (f->word && !whole && strcmp(text, f->word) == 0)
        return json_string(f->word);
    switch (number_int(text, &v)) {
    case NUM_OK:
        break;
    case NUM_OVERFLOW:
        return fail(msg, len, "--%s: '%.*s' is beyond the 64-bit integer range; --%s%s must be "
                    "between %lld and %lld", f->name, q, text, f->name, what, lo, hi);
    case NUM_FRACTION:
        return fail(msg, len, "--%s%s must be whole numbers (got '%.*s')", f->name, what, q, text);
    default:
        if (whole)
            return dims_shape_error(f, whole, msg, len);
        if (f->word)
            return fail(msg, len, "--%s expects %s or an integer such as 20, 100 or 1e3 (got '%.*s')",
                        f->name, f->word, q, text);
        return fail(msg, len, "--%s expects an integer such as 1024, 2^20, 64K or 1e6 (got '%.*s')",
                    f->name, q, text);
    }
    if (v < lo || v > hi) {
        char got[128];
        got_int(text, v, got, sizeof got);
        return fail(msg, len, "--%s%s must be between %lld and %lld (got %s)", f->name, what, lo, hi, got);
    }
    return json_integer(v);
}

/* The pieces of text between the separators seps, each parsed by item (which
 * gets the piece, the whole text and how many came before it, and the session
 * whose variants a choice may name) into an array; NULL once one fails (msg
 * says why). */
typedef json_t *piece_parser(const lab_session *lab, const flag_spec *f, const char *piece, const char *whole,
                             size_t index, char *msg, size_t len);

static json_t *split_value(const lab_session *lab, const flag_spec *f, const char *text, const char *seps,
                           piece_parser *item, char *msg, size_t len)
{
    char *copy = strdup(text);
    json_t *array = json_array();
    if (!copy || !array) {
        free(copy);
        json_decref(array);
        return fail(msg, len, "out of memory");
    }
    char *piece = copy;
    for (;;) {
        char *sep = strpbrk(piece, seps);
        if (sep)
            *sep = '\0';
        json_t *v = item(lab, f, piece, text, json_array_size(array), msg, len);
        if (!v || json_array_append_new(array, v) != 0) {
            json_decref(array);
            array = NULL;
            break;
        }
        if (!sep)
            break;
        piece = sep + 1;
    }
    free(copy);
    return array;
}

static json_t *dims_item(const lab_session *lab, const flag_spec *f, const char *piece, const char *whole,
                         size_t index, char *msg, size_t len)
{
    return *piece && index < 3 ? int_item(f, piece, whole, msg, len) : dims_shape_error(f, whole, msg, len);
}

/* 76x62 or 16x16x4: 1 to 3 positive integers. */
static json_t *dims_value(const flag_spec *f, const char *text, char *msg, size_t len)
{
    return split_value(NULL, f, text, "xX", dims_item, msg, len);
}

static json_t *float_value(const flag_spec *f, const char *text, char *msg, size_t len)
{
    double v;
    int q = utf8_clip(text, QUOTE_MAX);
    switch (number_float(text, &v)) {
    case NUM_OK:
        break;
    case NUM_NONFINITE:
        return fail(msg, len, "--%s must be a finite number (got '%.*s')", f->name, q, text);
    case NUM_OVERFLOW:
        return fail(msg, len, "--%s: '%.*s' is too large for a double", f->name, q, text);
    default:
        return fail(msg, len, "--%s expects a number such as 0.5, 2 or 1e-3 (got '%.*s')", f->name, q, text);
    }
    bool bounded = !(f->fmin == 0 && f->fmax == 0);
    if (bounded && (v < f->fmin || v > f->fmax))
        return fail(msg, len, "--%s must be between %g and %g (got %.*s)", f->name, f->fmin, f->fmax, q, text);
    return json_real(v);
}

static json_t *bool_value(const flag_spec *f, const char *text, char *msg, size_t len)
{
    static const char *const yes[] = { "true", "yes", "on", "1", NULL };
    static const char *const no[] = { "false", "no", "off", "0", NULL };
    for (int i = 0; yes[i]; i++) {
        if (strcasecmp(text, yes[i]) == 0)
            return json_true();
        if (strcasecmp(text, no[i]) == 0)
            return json_false();
    }
    return fail(msg, len, "--%s expects true or false (or yes/no, on/off, 1/0; got '%.*s')",
                f->name, utf8_clip(text, QUOTE_MAX), text);
}

static json_t *choice_value(const lab_session *lab, const flag_spec *f, const char *text, char *msg, size_t len)
{
    if (!flag_choice(lab, f, 0))
        return fail(msg, len, "--%s has no choices in its spec", f->name);
    suggest s;
    suggest_init(&s, text);
    char allowed[320] = "";
    size_t used = 0;
    const char *c;
    for (size_t i = 0; (c = flag_choice(lab, f, i)); i++) {
        if (strcmp(text, c) == 0)
            return json_string(c);
        suggest_add(&s, c);
        int n = snprintf(allowed + used, sizeof allowed - used, "%s%s", i ? ", " : "", c);
        if (n > 0 && (size_t)n < sizeof allowed - used)
            used += (size_t)n;
    }
    int q = utf8_clip(text, QUOTE_MAX);
    if (s.best)
        return fail(msg, len, "unknown value '%.*s' for --%s; did you mean '%s'? allowed: %s",
                    q, text, f->name, s.best, allowed);
    return fail(msg, len, "unknown value '%.*s' for --%s; allowed: %s", q, text, f->name, allowed);
}

static json_t *one_value(const lab_session *lab, const flag_spec *f, const char *text, char *msg, size_t len)
{
    switch (f->type) {
    case FLAG_BOOL:   return bool_value(f, text, msg, len);
    case FLAG_INT:    return int_item(f, text, NULL, msg, len);
    case FLAG_FLOAT:  return float_value(f, text, msg, len);
    case FLAG_CHOICE: return choice_value(lab, f, text, msg, len);
    case FLAG_DIMS:   return dims_value(f, text, msg, len);
    case FLAG_STRING: break;
    }
    json_t *v = json_string(text);
    return v ? v : fail(msg, len, "--%s: the text is not valid UTF-8", f->name);
}

static json_t *list_item(const lab_session *lab, const flag_spec *f, const char *piece, const char *whole,
                         size_t index, char *msg, size_t len)
{
    return *piece ? one_value(lab, f, piece, msg, len)
                  : fail(msg, len, "--%s: empty item in the list '%.*s'", f->name, utf8_clip(whole, QUOTE_MAX), whole);
}

/* A comma list: every item parsed alone; an empty item is a typo. In a text list of NAME=VALUE
 * items (-D), an item without '=' is one more value of the NAME before it: UNROLL=1,2,4 is
 * UNROLL=1, UNROLL=2 and UNROLL=4, as the help writes it. */
static json_t *list_value(const lab_session *lab, const flag_spec *f, const char *text, char *msg, size_t len)
{
    json_t *list = split_value(lab, f, text, ",", list_item, msg, len), *v;
    const char *name = NULL;
    size_t i, name_len = 0;
    json_array_foreach(f->type == FLAG_STRING ? list : NULL, i, v) {
        const char *item = json_string_value(v), *eq = strchr(item, '=');
        if (eq) {
            name = item;
            name_len = (size_t)(eq - item);
        } else if (name) {
            json_array_set_new(list, i, json_sprintf("%.*s=%s", (int)name_len, name, item));
        }
    }
    return list;
}

json_t *flag_value_parse(const lab_session *lab, const flag_spec *f, const char *text, char *msg, size_t len)
{
    bool comma = strchr(text, ',') != NULL;
    if (f->opts & FLAG_LIST && f->type == FLAG_DIMS && !comma) {
        /* dimensions are an array already: a list of them is always an array
         * of arrays, so that one value is one point of a sweep, not several */
        json_t *one = one_value(lab, f, text, msg, len);
        return one ? json_pack("[o]", one) : NULL;
    }
    if (f->opts & FLAG_LIST)
        return comma ? list_value(lab, f, text, msg, len) : one_value(lab, f, text, msg, len);
    if (comma && f->type != FLAG_STRING)
        return fail(msg, len, "--%s takes one value, not a list (got '%.*s')", f->name,
                    utf8_clip(text, QUOTE_MAX), text);
    return one_value(lab, f, text, msg, len);
}

json_t *flag_default_value(const flag_spec *f, char *msg, size_t len)
{
    if (!f->def)
        return f->type == FLAG_BOOL ? json_false() : json_null();
    char why[400];
    json_t *v = flag_value_parse(NULL, f, f->def, why, sizeof why);     /* a default names a built-in */
    if (!v)
        fail(msg, len, "the default of --%s does not parse: %s", f->name, why);
    return v;
}
