/* interact.c — the session's %interact widgets: their models, their runs, and
 * the coalescing of changes (see interact.h).
 *
 * The result is shown in an Output model whose "outputs" the kernel sets (as
 * ipywidgets' Output.append_display_data does), rather than in an HTML
 * widget: the frontend then renders each output as it renders a cell's, with
 * its own renderers (the HTML table, a chart, an error with its traceback,
 * stdout), so a run looks exactly as the cell would, and an update replaces
 * the whole output at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/utf8.h"
#include "lang/interact.h"
#include "proto/msg.h"
#include "shell/interact.h"
#include "shell/widget.h"

/* layout, two styles, the controls, the output, the box */
#define MODELS_MAX (INTERACT_MAX_CONTROLS + 5)

typedef struct model {
    char id[37];                    /* the comm id, which is the model id */
    json_t *state;                  /* the whole state, as last sent */
    int control;                    /* the plan's control it is, or -1 */
} model;

struct interact {
    struct interact *next;
    interact_plan plan;
    int index[INTERACT_MAX_CONTROLS];   /* the values chosen */
    int count;                      /* the execution count of the cell that made it */
    int line;                       /* that cell's line, and the line as typed, for tracebacks */
    char *source;
    model models[MODELS_MAX];
    int nmodels, output, box;
    bool opened;                    /* the models are open in the frontends */
    bool closed;                    /* closed while its run went on: freed once that run ends */
    json_t *collect;                /* the outputs of the run under way, or NULL */
    bool has_due;                   /* a change waits to run, with this comm_msg as its parent */
    shell_request due;
};

/* ---- models ---- */

static int add_model(struct interact *ia, json_t *state, int control)
{
    model *m = &ia->models[ia->nmodels];
    msg_uuid(m->id);
    m->state = state;
    m->control = control;
    return ia->nmodels++;
}

/* The models of ia's plan, in the order they are opened: a model's references first. */
static void build_models(struct interact *ia)
{
    const interact_plan *p = &ia->plan;
    int layout = add_model(ia, widget_layout(), -1), slider_style = -1, drop_style = -1;
    const char *children[INTERACT_MAX_CONTROLS + 1];
    for (int k = 0; k < p->nctl; k++) {
        const interact_control *c = &p->ctl[k];
        int *style = c->numeric ? &slider_style : &drop_style;
        if (*style < 0)
            *style = add_model(ia, c->numeric ? widget_slider_style() : widget_description_style(), -1);
        const char *lid = ia->models[layout].id, *sid = ia->models[*style].id;
        json_t *st = c->numeric ? widget_selection_slider(c->flag->name, c->labels, 0, lid, sid)
                                : widget_dropdown(c->flag->name, c->labels, 0, lid, sid);
        children[k] = ia->models[add_model(ia, st, k)].id;
    }
    ia->output = add_model(ia, widget_output(ia->models[layout].id), -1);
    children[p->nctl] = ia->models[ia->output].id;
    ia->box = add_model(ia, widget_vbox(children, p->nctl + 1, ia->models[layout].id), -1);
}

/* Sends data on model m's comm. */
static void comm_send(shell_session *s, const wire_msg *parent, const model *m, json_t *data)
{
    session_publish(s, parent, "comm_msg", json_pack("{s:s, s:o}", "comm_id", m->id, "data", data));
}

/* An "update" (or "echo_update") of model m with state (stolen). */
static void send_update(shell_session *s, const wire_msg *parent, const model *m, const char *method,
                        json_t *state)
{
    comm_send(s, parent, m, json_pack("{s:s, s:o, s:[]}", "method", method, "state", state, "buffer_paths"));
}

static void interact_free(struct interact *ia)
{
    for (int i = 0; i < ia->nmodels; i++)
        json_decref(ia->models[i].state);
    if (ia->has_due)
        wire_msg_free(&ia->due.msg);
    json_decref(ia->collect);
    interact_plan_free(&ia->plan);
    free(ia->source);
    free(ia);
}

/* Closes ia's comms in the frontends (when they were opened and publish) and
 * answers a waiting change; the caller unlinks and frees it. */
static void close_comms(shell_session *s, struct interact *ia, const wire_msg *parent, bool publish)
{
    if (ia->opened && publish)
        for (int i = ia->nmodels; i-- > 0;)
            session_publish(s, parent, "comm_close", json_pack("{s:s, s:{}}", "comm_id", ia->models[i].id,
                                                               "data"));
    if (ia->has_due) {                  /* its run will not happen: its comm_msg is answered */
        if (publish)
            session_status(s, &ia->due.msg, "idle");
        wire_msg_free(&ia->due.msg);
        ia->has_due = false;
    }
    ia->opened = false;
    ia->closed = true;
}

static bool in_use(const shell_session *s, const struct interact *ia)
{
    return s->cell && s->cell->ia == ia;
}

void interact_reap(shell_session *s)
{
    for (struct interact **pp = &s->interacts; *pp;) {
        struct interact *ia = *pp;
        if (ia->closed && !in_use(s, ia)) {
            *pp = ia->next;
            interact_free(ia);
        } else {
            pp = &ia->next;
        }
    }
}

void interact_close_all(shell_session *s, const wire_msg *parent, bool publish)
{
    for (struct interact *ia = s->interacts; ia; ia = ia->next)
        if (!ia->closed)
            close_comms(s, ia, parent, publish);
    interact_reap(s);               /* all but the one a running cell feeds, freed when it ends */
}

/* ---- the first run ---- */

/* Past INTERACT_MAX_LIVE live widgets the oldest closes, and the cell says so. */
static void evict_oldest(shell_session *s, const wire_msg *parent)
{
    int live = 0;
    struct interact *oldest = NULL;
    for (struct interact *ia = s->interacts; ia; ia = ia->next)
        if (!ia->closed) {
            live++;
            oldest = oldest ? oldest : ia;
        }
    if (live < INTERACT_MAX_LIVE || !oldest)
        return;
    close_comms(s, oldest, parent, true);
    char note[256];
    snprintf(note, sizeof note, "[cudalab: closed the %%interact widget of cell [%d]: a session keeps the "
             "newest %d live]\n", oldest->count, INTERACT_MAX_LIVE);
    cell_out.stream(s, "stdout", note);
    stream_flush(s);                    /* the cell's own output, before its run's goes to the widget */
    interact_reap(s);
}

/* The command of a run with the values chosen now. NULL when out of memory. */
static command *run_command(const struct interact *ia)
{
    command *cmd = calloc(1, sizeof *cmd);
    if (!cmd)
        return NULL;
    *cmd = (command){ .magic = ia->plan.cmd.magic, .params = interact_params(&ia->plan, ia->index),
                      .cpu_defaulted = json_incref(ia->plan.cmd.cpu_defaulted), .line = ia->line,
                      .source = strdup(ia->source) };
    if (!cmd->params || !cmd->source) {
        commands_free(cmd, 1);
        return NULL;
    }
    return cmd;
}

int interact_begin(shell_session *s, const command *cmd, error_info *err)
{
    struct cell *c = s->cell;
    if (c->silent)
        return error_set(err, "UsageError", "%%interact shows live controls: a silent request cannot show them");
    const char *text = json_string_value(json_object_get(cmd->params, "command"));
    struct interact *ia = calloc(1, sizeof *ia);
    if (!ia)
        return error_set(err, "MemoryError", "out of memory");
    size_t at;
    if (interact_plan_parse(s->lab, text, &ia->plan, err, &at) != 0) {      /* checked at parse time already */
        interact_free(ia);
        return -1;
    }
    ia->count = c->count;
    ia->line = cmd->line;
    ia->source = strdup(cmd->source);
    ia->collect = json_array();
    build_models(ia);
    c->sub = ia->source ? run_command(ia) : NULL;
    if (!c->sub) {
        interact_free(ia);
        return error_set(err, "MemoryError", "out of memory");
    }
    evict_oldest(s, &c->req.msg);
    struct interact **pp = &s->interacts;
    while (*pp)
        pp = &(*pp)->next;
    *pp = ia;
    c->ia = ia;
    return 0;
}

/* ---- what a run shows ---- */

void interact_collect_stream(shell_session *s, const char *name, json_t *text)
{
    struct interact *ia = s->cell->ia;
    json_t *out = json_array_get(ia->collect, json_array_size(ia->collect) - 1);
    const char *last = json_string_value(json_object_get(out, "name"));
    if (last && strcmp(last, name) == 0) {     /* one output per stretch of a stream, as a cell has */
        json_t *joined = json_sprintf("%s%s", json_string_value(json_object_get(out, "text")), json_string_value(text));
        json_decref(text);
        json_object_set_new(out, "text", joined);
        return;
    }
    json_array_append_new(ia->collect, json_pack("{s:s, s:s, s:o}", "output_type", "stream", "name", name,
                                                 "text", text));
}

void interact_collect_bundle(shell_session *s, json_t *bundle)
{
    json_array_append_new(s->cell->ia->collect, json_pack("{s:s, s:o, s:{}}", "output_type", "display_data",
                                                          "data", bundle, "metadata"));
}

/* The text/plain of the outputs, for frontends without widgets. */
static json_t *fallback_text(const struct interact *ia, const json_t *outputs)
{
    char head[512], choices[400] = "";
    for (int k = 0; k < ia->plan.nctl; k++) {
        const interact_control *c = &ia->plan.ctl[k];
        size_t n = strlen(choices);
        snprintf(choices + n, sizeof choices - n, "%s--%s: ", k ? "; " : "", c->flag->name);
        size_t i;
        json_t *l;
        json_array_foreach(c->labels, i, l) {
            n = strlen(choices);
            snprintf(choices + n, sizeof choices - n, "%s%s", i ? ", " : "", json_string_value(l));
        }
    }
    utf8_trim(choices);
    snprintf(head, sizeof head, "[%%interact: live controls over %s; they need a frontend with Jupyter widgets. "
             "The first run:]\n", choices);
    utf8_trim(head);                    /* a label cut in the middle of a character */
    json_t *text = json_string(head);
    if (!text)
        text = json_string("");
    size_t i;
    json_t *o;
    json_array_foreach(outputs, i, o) {
        const char *type = json_string_value(json_object_get(o, "output_type"));
        const char *part = strcmp(type, "display_data") == 0
                           ? json_string_value(json_object_get(json_object_get(o, "data"), "text/plain"))
                           : json_string_value(json_object_get(o, strcmp(type, "stream") == 0 ? "text" : "evalue"));
        json_t *joined = json_sprintf("%s%s%s%s", json_string_value(text), strcmp(type, "error") == 0 ? "Error: " : "",
                                      part ? part : "", strcmp(type, "stream") == 0 ? "" : "\n");
        if (joined) {
            json_decref(text);
            text = joined;
        }
    }
    return text;
}

/* Opens the models (the first run has its answer) and shows the box in the cell. */
static void open_and_show(shell_session *s, struct interact *ia, const wire_msg *parent, const json_t *outputs)
{
    for (int i = 0; i < ia->nmodels; i++)
        session_publish_meta(s, parent, "comm_open", json_pack("{s:s}", "version", WIDGET_PROTOCOL_VERSION),
                             json_pack("{s:s, s:s, s:{s:O, s:[]}}", "comm_id", ia->models[i].id, "target_name",
                                       WIDGET_TARGET, "data", "state", ia->models[i].state, "buffer_paths"));
    ia->opened = true;
    json_t *data = json_pack("{s:{s:s, s:i, s:i}, s:o}", WIDGET_VIEW_MIME, "model_id", ia->models[ia->box].id,
                             "version_major", WIDGET_VIEW_MAJOR, "version_minor", WIDGET_VIEW_MINOR,
                             "text/plain", fallback_text(ia, outputs));
    session_publish(s, parent, "display_data", json_pack("{s:o, s:{}, s:{}}", "data", data, "metadata", "transient"));
}

void interact_settle(shell_session *s)
{
    struct cell *c = s->cell;
    struct interact *ia = c->ia;
    json_t *outputs = ia->collect;
    ia->collect = NULL;
    if (c->error)
        json_array_append_new(outputs, json_pack("{s:s, s:O, s:O, s:O}", "output_type", "error", "ename",
                                                 json_object_get(c->error, "ename"), "evalue",
                                                 json_object_get(c->error, "evalue"), "traceback",
                                                 json_object_get(c->error, "traceback")));
    model *out = &ia->models[ia->output];
    json_object_set(out->state, "outputs", outputs);
    if (ia->closed) {
        ;                               /* closed while it ran: nobody to show it to */
    } else if (!ia->opened) {
        open_and_show(s, ia, &c->req.msg, outputs);
    } else {
        send_update(s, &c->req.msg, out, "update", json_pack("{s:O}", "outputs", outputs));
    }
    json_decref(outputs);
    commands_free(c->sub, c->sub ? 1 : 0);
    c->sub = NULL;
    c->ia = NULL;
}

/* ---- re-runs ---- */

/* Runs ia with its values now, as a cell parented to req (taken). */
static void rerun_start(shell_session *s, struct interact *ia, shell_request *req)
{
    struct cell *c = calloc(1, sizeof *c);
    command *cmd = c ? run_command(ia) : NULL;
    if (!cmd) {
        klog("out of memory starting a %%interact run");
        session_status(s, &req->msg, "idle");
        wire_msg_free(&req->msg);
        free(c);
        return;
    }
    c->req = *req;
    memset(&req->msg, 0, sizeof req->msg);
    c->kind = CELL_INTERACT;
    c->cmds = cmd;
    c->ncmds = 1;
    c->ia = ia;
    c->count = ia->count;
    c->started_ms = session_now_ms(s);
    c->timeout_at_ms = s->lim.cell_timeout_ms > 0 ? c->started_ms + s->lim.cell_timeout_ms : 0;
    ia->collect = json_array();
    cell_start(s, c);
}

bool interact_run_due(shell_session *s)
{
    for (struct interact *ia = s->interacts; ia; ia = ia->next)
        if (ia->has_due && !ia->closed) {
            shell_request req = ia->due;
            ia->has_due = false;
            memset(&ia->due, 0, sizeof ia->due);
            rerun_start(s, ia, &req);
            return true;
        }
    return false;
}

/* ---- comm.c's view ---- */

bool interact_model_find(shell_session *s, const char *id, interact_model *out)
{
    for (struct interact *ia = s->interacts; ia && id; ia = ia->next)
        for (int i = 0; ia->opened && i < ia->nmodels; i++)
            if (strcmp(ia->models[i].id, id) == 0) {
                *out = (interact_model){ ia, i };
                return true;
            }
    return false;
}

void interact_models_each(shell_session *s, void (*fn)(void *arg, const char *id), void *arg)
{
    for (struct interact *ia = s->interacts; ia; ia = ia->next)
        for (int i = 0; ia->opened && i < ia->nmodels; i++)
            fn(arg, ia->models[i].id);
}

void interact_model_send_state(shell_session *s, const interact_model *m, const wire_msg *parent)
{
    const model *md = &m->owner->models[m->index];
    send_update(s, parent, md, "update", json_deep_copy(md->state));
}

enum handled interact_model_update(shell_session *s, const interact_model *m, const json_t *state,
                                   shell_request *req)
{
    struct interact *ia = m->owner;
    model *md = &ia->models[m->index];
    const json_t *index = json_object_get(state, "index");
    if (md->control < 0 || !index) {
        klog("comm_msg: an update of widget %.40s with nothing the kernel acts on: ignored", md->id);
        return HANDLED_DONE;
    }
    const interact_control *ctl = &ia->plan.ctl[md->control];
    size_t n = json_array_size(ctl->choices);
    if (!json_is_integer(index) || json_integer_value(index) < 0 || (size_t)json_integer_value(index) >= n) {
        char *got = json_dumps(index, JSON_ENCODE_ANY | JSON_COMPACT);
        klog("comm_msg: --%s's control sent index %.40s, not an integer from 0 to %zu: ignored (its value is "
             "sent back)", ctl->flag->name, got ? got : "?", n - 1);
        free(got);
        send_update(s, &req->msg, md, "update", json_pack("{s:O}", "index", json_object_get(md->state, "index")));
        return HANDLED_DONE;
    }
    ia->index[md->control] = (int)json_integer_value(index);
    json_object_set(md->state, "index", (json_t *)index);
    /* protocol 2.1: every frontend hears of the change, the one that made it too */
    send_update(s, &req->msg, md, "echo_update", json_pack("{s:O}", "index", index));
    if (s->cell || s->draining) {       /* the latest change runs once the run under way ends */
        if (ia->has_due) {
            session_status(s, &ia->due.msg, "idle");
            wire_msg_free(&ia->due.msg);
        }
        ia->due = *req;
        memset(&req->msg, 0, sizeof req->msg);
        ia->has_due = true;
        return HANDLED_PENDING;
    }
    rerun_start(s, ia, req);
    return HANDLED_PENDING;
}

void interact_model_closed(shell_session *s, const interact_model *m, const wire_msg *parent)
{
    klog("comm_close of widget %.40s: its %%interact (cell [%d]) is closed", m->owner->models[m->index].id,
         m->owner->count);
    close_comms(s, m->owner, parent, true);
    if (!s->cell)
        interact_reap(s);
}
