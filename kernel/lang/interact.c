/* interact.c — %interact's spec, and the plan of its controls (interact.h).
 *
 * A raw magic: the rest of its line is another command, which the cell
 * language parses as usual, so the check at parse time is the plan itself and
 * the shell, which owns the widgets, parses the same text again to run it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/interact.h"
#include "base/utf8.h"
#include "lang/parse_internal.h"

#define QUOTE_MAX 60

bool interact_is(const command *cmd)
{
    return cmd && cmd->magic == &magic_interact;
}

/* The label of one choice, as the user would type it. */
static json_t *choice_label(const json_t *v)
{
    if (json_is_string(v))
        return json_incref((json_t *)v);
    if (json_is_integer(v))
        return json_sprintf("%lld", (long long)json_integer_value(v));
    if (json_is_real(v))
        return json_sprintf("%g", json_real_value(v));
    if (json_is_boolean(v))
        return json_string(json_is_true(v) ? "true" : "false");
    if (json_is_array(v)) {             /* dimensions: 16x16 */
        char buf[96] = "";
        size_t i;
        json_t *d;
        json_array_foreach(v, i, d) {
            size_t n = strlen(buf);
            snprintf(buf + n, sizeof buf - n, "%s%lld", i ? "x" : "", (long long)json_integer_value(d));
        }
        return json_string(buf);
    }
    return json_string("?");
}

static int control_from(interact_plan *p, const flag_spec *f, const json_t *list, error_info *err)
{
    if (p->nctl == INTERACT_MAX_CONTROLS)
        return error_set(err, "UsageError", "%%interact makes at most %d controls, one per comma list; "
                         "give the other flags one value", INTERACT_MAX_CONTROLS);
    if (json_array_size(list) > INTERACT_MAX_CHOICES)
        return error_set(err, "UsageError", "--%s lists %zu values; a control of %%interact takes at most %d",
                         f->name, json_array_size(list), INTERACT_MAX_CHOICES);
    interact_control *c = &p->ctl[p->nctl];
    c->flag = f;
    flag_key(f, c->key, sizeof c->key);
    c->choices = json_incref((json_t *)list);
    c->labels = json_array();
    c->numeric = true;
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        json_array_append_new(c->labels, choice_label(v));
        c->numeric = c->numeric && json_is_number(v);
    }
    p->nctl++;
    return 0;
}

int interact_plan_parse(const lab_session *lab, const char *text, interact_plan *p, error_info *err, size_t *at)
{
    memset(p, 0, sizeof *p);
    *at = SIZE_MAX;
    error_clear(err);
    command *cmds = NULL;
    parse_error perr;
    int n = cell_parse(lab, text ? text : "", &cmds, &perr);
    if (n < 0) {
        if (perr.line == 1 && perr.column > 0)
            *at = utf8_offset(text, (size_t)perr.column - 1);  /* column: 1-based, in characters */
        return error_set(err, perr.error.ename, "%s", perr.error.evalue);
    }
    if (n != 1) {                       /* a line: one command at most (newlines are joined before) */
        commands_free(cmds, n);
        return error_set(err, "UsageError", n == 0 ? "give the command to run, as in "
                         "%%interact %%matmul --size 1024 --tile 8,16,32" : "%%interact runs one command");
    }
    p->cmd = cmds[0];
    free(cmds);
    const magic_spec *m = p->cmd.magic;
    int q = (int)strlen(m->name);       /* a registered magic's name: short, ASCII */
    *at = 0;
    if (p->cmd.body)
        return error_set(err, "UsageError", "%%%%%.*s is a cell magic; %%interact runs a line magic such as "
                         "%%matmul", q, m->name);
    if (m == &magic_interact)
        return error_set(err, "UsageError", "%%interact cannot wrap %%interact: give it the command itself, "
                         "as in %%interact %%matmul --tile 8,16,32");
    if (m->where != MAGIC_WORKER)
        return error_set(err, "UsageError", "%%%.*s runs in the kernel and cannot re-run under %%interact; "
                         "wrap a device command such as %%matmul, %%histo or %%reduce", q, m->name);
    for (const flag_spec *f = m->flags; f && f->name; f++) {
        char key[96];
        flag_key(f, key, sizeof key);
        const json_t *v = json_object_get(p->cmd.params, key);
        if ((f->opts & FLAG_LIST) && json_is_array(v) && json_array_size(v) >= 2
            && control_from(p, f, v, err) != 0)
            return -1;
    }
    if (p->nctl == 0)
        return error_set(err, "UsageError", "give %%%.*s at least one comma list: each list becomes a control "
                         "over its values, as in --tile 8,16,32", q, m->name);
    *at = SIZE_MAX;
    return 0;
}

void interact_plan_free(interact_plan *p)
{
    for (int i = 0; i < p->nctl; i++) {
        json_decref(p->ctl[i].choices);
        json_decref(p->ctl[i].labels);
    }
    command_clear(&p->cmd);
    memset(p, 0, sizeof *p);
}

json_t *interact_params(const interact_plan *p, const int *index)
{
    json_t *params = json_copy(p->cmd.params);
    for (int i = 0; params && i < p->nctl; i++)
        json_object_set(params, p->ctl[i].key, json_array_get(p->ctl[i].choices, (size_t)index[i]));
    return params;
}

/* ---- the magic ---- */

static int interact_check(const lab_session *lab, const char *text, char *msg, size_t len, size_t *at)
{
    interact_plan p;
    error_info err;
    int rc = interact_plan_parse(lab, text, &p, &err, at);
    if (rc != 0)
        snprintf(msg, len, "%s", err.evalue);
    interact_plan_free(&p);
    return rc;
}

/* Only a notebook has the controls: the kernel's shell runs %interact itself
 * (kernel/shell/interact.c), so this is what the command line says. */
static int interact_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    return magic_error(ctx, "UsageError", "%%interact needs a notebook frontend with Jupyter widgets "
                       "(JupyterLab, Notebook 7); here, run the command itself");
}

static const flag_spec interact_flags[] = { {.name = NULL} };

static const char *const interact_examples[] = {
    "%interact %matmul --size 2048 --variant tiled --tile 2,4,8,16,32",
    "%interact %matmul --size 1024 --variant naive,tiled,cublas",
    "%interact %histo --size 2^24 --dist uniform,skewed --variant privatized,fast",
    NULL,
};


const magic_spec magic_interact = {
    MAGIC_LOCAL_LINE(interact),
    .summary = "Live controls over a command's comma lists: each change re-runs it in place",
    .description = "Runs COMMAND once with the first value of each comma list and shows its result\n"
                   "under live controls: a slider for a list of numbers (--tile 2,4,8,16,32), a\n"
                   "drop-down for other lists (--variant naive,tiled). Each change re-runs the\n"
                   "command with the chosen values and replaces the result in place; changes made\n"
                   "while it runs are coalesced (the latest wins). Here a comma list means the\n"
                   "control's choices, not a sweep. Every run's result is kept for %assert, as\n"
                   "from the cell. COMMAND is a device command (%matmul, %histo, %reduce, ...),\n"
                   "with at most " STR(INTERACT_MAX_CONTROLS) " lists of at most " STR(INTERACT_MAX_CHOICES)
                   " values. A session keeps the newest " STR(INTERACT_MAX_LIVE) " widgets\n"
                   "live (an older one is closed, which the new cell says); they close with the\n"
                   "kernel. Needs a frontend with Jupyter widgets (JupyterLab); others show the\n"
                   "first result as text.",
    .flags = interact_flags,
    .positional = "COMMAND",
    .positional_help = "a device command whose comma lists become the controls",
    .raw = true,
    .check = interact_check,
    .check_ename = "UsageError",
};
