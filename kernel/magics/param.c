/* param.c — %param NAME VALUE: a session parameter, which {NAME} and $NAME
 * put back into later magic lines (kernel/lang/subst.c).
 *
 * It is how a notebook takes parameters: papermill's injected cell is a run
 * of %param lines (python/cudalab/papermill.py writes them) that replace the
 * defaults of the cell tagged "parameters". The line's syntax is checked
 * when the cell is parsed (param_line, kernel/lang/params.c), where the
 * definition also counts at once for the lines below it; here it is kept for
 * the session. Defining prints nothing, as an assignment does; %param alone
 * lists the parameters as %param lines, which read back as they are.
 */
#include <stdlib.h>
#include <string.h>

#include "lang/params.h"
#include "magic/magic.h"

/* How a value is written to read back as one token, itself: as it is; in single quotes (as typed,
 * nothing expanded); or in double quotes, with the cell language's escapes and $$ {{ }} for $ { }
 * (which double quotes expand, subst.c), when it holds a single quote or a control character. */
enum quoting { AS_IS, SINGLE, DOUBLE };

static enum quoting quoting_of(const char *v)
{
    if (strpbrk(v, "'\n\t\r\v\f"))
        return DOUBLE;
    if (!v[0] || v[0] == '#' || v[0] == '-' || strpbrk(v, " \"\\${}"))
        return SINGLE;
    return AS_IS;
}

static int list(magic_ctx *ctx)
{
    size_t n = param_count(ctx->lab), cap = 64;
    if (n == 0) {
        magic_stream(ctx, "stdout", "no parameters: %param NAME VALUE defines one, {NAME} uses it\n");
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        /* escapes double at most */
        cap += strlen(param_name_at(ctx->lab, i)) + 2 * strlen(param_value_at(ctx->lab, i)) + 16;
    char *text = malloc(cap), *w = text;
    if (!text)
        return magic_error(ctx, "MemoryError", "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *v = param_value_at(ctx->lab, i);
        enum quoting q = quoting_of(v);
        w += strlen(strcpy(w, "%param "));
        w += strlen(strcpy(w, param_name_at(ctx->lab, i)));
        *w++ = ' ';
        if (q != AS_IS)
            *w++ = q == SINGLE ? '\'' : '"';
        for (; *v; v++) {
            static const char from[] = "\\\"\n\t\r\v\f", to[] = "\\\"ntrvf";
            const char *esc = q == DOUBLE ? strchr(from, *v) : NULL;
            if (esc && *esc) {
                *w++ = '\\';
                *w++ = to[esc - from];
            } else {
                if (q == DOUBLE && strchr("${}", *v))
                    *w++ = *v;                          /* $$ {{ }}: the character itself */
                *w++ = *v;
            }
        }
        if (q != AS_IS)
            *w++ = q == SINGLE ? '\'' : '"';
        *w++ = '\n';
    }
    *w = '\0';
    magic_stream(ctx, "stdout", text);
    free(text);
    return 0;
}

static int param_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    const char *value = json_string_value(json_object_get(params, "value"));
    if (!name || !value)
        return list(ctx);
    char why[300];
    if (param_set(ctx->lab, name, value, why, sizeof why) != 0)
        return magic_error(ctx, "UsageError", "%%param %s: %s", name, why);
    return 0;
}

static const char *const param_examples[] = {
    "%param size 1024",
    "%matmul --size {size} --variant naive,tiled",
    "%param variants naive,tiled,cublas",
    "%param title \"tiles of 16\"",
    "%param",
    NULL,
};

const magic_spec magic_param = {
    MAGIC_LOCAL_LINE(param),
    .summary = "Define a parameter: {NAME} in later magic lines stands for VALUE",
    .description = "Defines the session parameter NAME (letters, digits and _) as VALUE, one\n"
                   "argument as on a command line (quote it to keep spaces); a new value replaces\n"
                   "the old. In the arguments of the magic lines after it, in this cell or a later\n"
                   "one, {NAME} and $NAME stand for the value, as one argument, read by the flag\n"
                   "as if typed there ($$, {{ and }} are a literal $, { and }). They are put in\n"
                   "outside quotes and inside double quotes, never inside single quotes, comments\n"
                   "or a cell magic's body; in %assert and %score a number is put in as a number,\n"
                   "other text as a string. A name that is not defined is an error.\n"
                   "%param alone lists the parameters. papermill's -p NAME VALUE writes %param\n"
                   "lines after the cell tagged \"parameters\".",
    .flags = magic_no_flags,
    .positional = "NAME VALUE",
    .positional_help = "the parameter's name and its value; none: list the parameters",
};
