/* help.c — %help [NAME], also reached as %NAME?, ?NAME and %?.
 *
 * Everything shown comes from the magic specs, so help cannot drift from what
 * the parser accepts. The document lists the same facts as data (flags with
 * type, default, range, choices) for notebooks that want to read them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "magic/families.h"
#include "magic/magic.h"
#include "render/render.h"
#include "lang/parse_internal.h"

static json_t *text_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *flag_bounds(const flag_spec *f, bool max)
{
    bool iset = !(f->imin == 0 && f->imax == 0), fset = !(f->fmin == 0 && f->fmax == 0);
    if (f->type == FLAG_INT && iset)
        return json_integer(max ? f->imax : f->imin);
    if (f->type == FLAG_DIMS)
        return max ? (iset ? json_integer(f->imax) : json_null())
                   : json_integer(iset && f->imin > 1 ? f->imin : 1);
    if (f->type == FLAG_FLOAT && fset)
        return json_real(max ? f->fmax : f->fmin);
    return json_null();
}

static json_t *flag_doc(const lab_session *lab, const flag_spec *f)
{
    char msg[256], shortname[2] = { f->short_name, '\0' };
    json_t *def = f->opts & FLAG_REQUIRED ? json_null() : flag_default_value(f, msg, sizeof msg);
    json_t *choices = json_null();
    const char *c;
    if (f->type == FLAG_CHOICE) {
        choices = json_array();
        for (size_t i = 0; (c = flag_choice(lab, f, i)); i++)
            json_array_append_new(choices, json_string(c));
    }
    return json_pack("{s:s, s:o, s:s, s:o, s:b, s:o, s:o, s:o, s:b, s:o}",
                     "name", f->name, "short", f->short_name ? json_string(shortname) : json_null(),
                     "type", flag_type_name(f), "default", def ? def : json_null(),
                     "required", (f->opts & FLAG_REQUIRED) != 0, "min", flag_bounds(f, false),
                     "max", flag_bounds(f, true), "choices", choices,
                     "list", (f->opts & FLAG_LIST) != 0, "help", text_or_null(f->help));
}

static int help_list(magic_ctx *ctx)
{
    size_t count;
    const magic_spec *const *all = magic_all(&count);
    json_t *list = json_array();
    for (size_t i = 0; i < count; i++)
        json_array_append_new(list, json_pack("{s:s, s:s}", "name", all[i]->name,
                                              "summary", all[i]->summary ? all[i]->summary : ""));
    json_t *doc = json_pack("{s:s, s:n, s:o}", "magic", "help", "topic", "magics", list);
    char *text = magic_list_text();
    json_t *view = view_new(NULL);         /* the text has its own heading */
    view_add_text(view, text);
    free(text);
    return magic_result_built(ctx, doc, view);
}

/* The flags as a view table: the same cells as the text table of helptext.c. */
static void flags_view(json_t *view, const lab_session *lab, const magic_spec *m)
{
    if (magic_flag_count(m) == 0)
        return;
    json_t *table = view_add_table(view, "Flags", json_pack("[s,s,s,s,s]", "flag", "type", "default",
                                                            "allowed", "help"));
    bool lists = false;
    for (size_t i = 0; i < magic_flag_count(m); i++) {
        const flag_spec *f = magic_flag(m, i);
        char label[128], type[32], def[128], allowed[256];
        flag_label(f, label, sizeof label);
        snprintf(type, sizeof type, "%s%s", flag_type_name(f), f->opts & FLAG_LIST ? " list" : "");
        flag_default_text(f, def, sizeof def);
        flag_allowed_text(lab, f, allowed, sizeof allowed);
        view_table_row(table, json_pack("[s,s,s,s,s]", label, type, def, allowed, f->help ? f->help : ""));
        lists |= (f->opts & FLAG_LIST) != 0;
    }
    if (lists)
        view_add_note(view, "A list type takes one value or a comma list such as 8,16,32: one run per value.");
}

static json_t *one_doc(const lab_session *lab, const magic_spec *m)
{
    char usage[512];
    magic_usage(m, usage, sizeof usage);
    json_t *flags = json_array(), *examples = json_array();
    for (size_t i = 0; i < magic_flag_count(m); i++)
        json_array_append_new(flags, flag_doc(lab, magic_flag(m, i)));
    for (int i = 0; m->examples && m->examples[i]; i++)
        json_array_append_new(examples, json_string(m->examples[i]));
    json_t *pos = m->positional ? json_pack("{s:s, s:o}", "name", m->positional, "help",
                                            text_or_null(m->positional_help))
                                : json_null();
    json_t *variants = json_null();
    const family_spec *fam = family_of_magic(m);
    const cl_variant *v;
    if (fam) {
        variants = json_array();
        for (size_t i = 0; (v = family_variant(lab, fam, i)); i++)
            json_array_append_new(variants, json_pack("{s:s, s:s, s:s, s:b, s:b}", "name", v->name, "launch",
                                                      v->launch, "teaches", v->teaches, "yours",
                                                      (v->flags & (CL_V_RUNTIME | CL_V_BROKEN)) == CL_V_RUNTIME,
                                                      "broken", (v->flags & CL_V_BROKEN) != 0));
    }
    return json_pack("{s:s, s:s, s:s, s:o, s:o, s:b, s:b, s:o, s:o, s:o, s:o}",
                     "magic", "help", "topic", m->name, "usage", usage,
                     "summary", text_or_null(m->summary), "description", text_or_null(m->description),
                     "line", (m->mode & MAGIC_LINE) != 0, "cell", (m->mode & MAGIC_CELL) != 0,
                     "positional", pos, "flags", flags, "variants", variants, "examples", examples);
}

static int help_one(magic_ctx *ctx, const magic_spec *m)
{
    char title[96];
    snprintf(title, sizeof title, "%s%s", m->mode & MAGIC_LINE ? "%" : "%%", m->name);
    json_t *doc = one_doc(ctx->lab, m), *view = view_new(title);
    char *head = magic_help_head(ctx->lab, m), *examples = magic_help_examples(m);
    view_add_text(view, head);
    flags_view(view, ctx->lab, m);
    if (examples && examples[0])
        view_add_text(view, examples);
    free(head);
    free(examples);
    return magic_result_built(ctx, doc, view);
}

/* NAME may come as "matmul", "%matmul", "%%matmul" or "matmul?". */
static int help_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    const char *arg = json_string_value(json_object_get(params, "name"));
    if (!arg)
        return help_list(ctx);
    arg += strspn(arg, "%?");
    char name[128];
    size_t len = strcspn(arg, "?");
    snprintf(name, sizeof name, "%.*s", utf8_clip(arg, len < 100 ? len : 100), arg);
    if (!name[0])
        return help_list(ctx);
    const magic_spec *m = magic_find(name);
    if (m)
        return help_one(ctx, m);
    const char *near = magic_nearest(name);
    int q = utf8_clip(name, 60);
    if (near)
        return magic_error(ctx, "UsageError", "unknown magic %%%.*s; did you mean %%%s?", q, name, near);
    return magic_error(ctx, "UsageError", "unknown magic %%%.*s; %%help lists them all", q, name);
}

static const char *const help_examples[] = {
    "%help",
    "%help echo",
    "%echo?",
    NULL,
};

const magic_spec magic_help = {
    MAGIC_LOCAL_LINE(help),
    .summary = "List the magics, or show one magic's usage, flags and examples",
    .description = "With no NAME, lists every magic with a one-line summary. With a NAME, shows how\n"
                   "to call that magic: each flag with its type, default and allowed values.\n"
                   "%NAME? and ?NAME are the same as %help NAME.",
    .flags = magic_no_flags,
    .positional = "NAME",
    .positional_help = "a magic's name, with or without the %",
};
