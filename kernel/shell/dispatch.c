/* dispatch.c — which handler answers which message type on which channel,
 * and what every request gets around its handler: the check of its content's
 * types, status busy before and idle after, an error reply when refused.
 * Adding a request type = one handler in kernel/shell/ + one line here. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "shell/session.h"

typedef shell_handler *handler_fn;

#define SHELL   (1u << PORT_SHELL)
#define CONTROL (1u << PORT_CONTROL)

/* The content fields a request may carry, with their JSON types, so that no
 * handler ever reads a field of the wrong type. */
enum ftype { F_STR, F_BOOL, F_INT, F_OBJ };
typedef struct field {
    const char *name;
    enum ftype type;
    bool required;
} field;

static const field execute_fields[] = {
    { "code", F_STR, true }, { "silent", F_BOOL, false }, { "store_history", F_BOOL, false },
    { "stop_on_error", F_BOOL, false }, { "allow_stdin", F_BOOL, false },
    { "user_expressions", F_OBJ, false }, { NULL, 0, false },
};
static const field cursor_fields[] = {
    { "code", F_STR, true }, { "cursor_pos", F_INT, false }, { "detail_level", F_INT, false },
    { NULL, 0, false },
};
static const field is_complete_fields[] = { { "code", F_STR, true }, { NULL, 0, false } };
static const field history_fields[] = {
    { "hist_access_type", F_STR, false }, { "output", F_BOOL, false }, { "raw", F_BOOL, false },
    { "session", F_INT, false }, { "start", F_INT, false }, { "stop", F_INT, false },
    { "n", F_INT, false }, { "pattern", F_STR, false }, { "unique", F_BOOL, false },
    { NULL, 0, false },
};
static const field comm_fields[] = { { "comm_id", F_STR, true }, { NULL, 0, false } };
static const field shutdown_fields[] = { { "restart", F_BOOL, false }, { NULL, 0, false } };
static const field comm_info_fields[] = { { "target_name", F_STR, false }, { NULL, 0, false } };

static const struct {
    const char *msg_type;
    handler_fn fn;
    unsigned channels;
    const field *fields;
} handlers[] = {
    { "kernel_info_request", handle_kernel_info, SHELL | CONTROL, NULL },
    { "execute_request", handle_execute, SHELL, execute_fields },
    { "complete_request", handle_complete, SHELL, cursor_fields },
    { "inspect_request", handle_inspect, SHELL, cursor_fields },
    { "is_complete_request", handle_is_complete, SHELL, is_complete_fields },
    { "history_request", handle_history, SHELL, history_fields },
    { "comm_info_request", handle_comm_info, SHELL, comm_info_fields },
    { "comm_open", handle_comm_open, SHELL, comm_fields },
    { "comm_msg", handle_comm_msg, SHELL, comm_fields },
    { "comm_close", handle_comm_close, SHELL, comm_fields },
    { "shutdown_request", handle_shutdown, SHELL | CONTROL, shutdown_fields },
    { "interrupt_request", handle_interrupt, CONTROL, NULL },
};

#define NHANDLERS (sizeof handlers / sizeof handlers[0])

static int find(const char *msg_type, enum conn_port channel)
{
    for (size_t i = 0; i < NHANDLERS; i++)
        if ((handlers[i].channels & (1u << channel)) && strcmp(handlers[i].msg_type, msg_type) == 0)
            return (int)i;
    return -1;
}

static bool has_type(const json_t *v, enum ftype t)
{
    switch (t) {
    case F_STR:  return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v);
    case F_BOOL: return json_is_boolean(v);
    case F_INT:  return json_is_integer(v);
    case F_OBJ:  return json_is_object(v);
    }
    return false;
}

static const char *type_name(enum ftype t)
{
    static const char *const names[] = { "a string (without NUL characters)", "a boolean",
                                         "an integer", "an object" };
    return names[t];
}

/* Checks the types of a request's content fields. Returns 0, or -1 with why. */
static int check_content(int i, const char *msg_type, const json_t *content, char *why, size_t len)
{
    for (const field *f = handlers[i].fields; f && f->name; f++) {
        const json_t *v = json_object_get(content, f->name);
        if (!v && !f->required)
            continue;
        if (!v || (!has_type(v, f->type) && !(json_is_null(v) && !f->required))) {
            snprintf(why, len, "%s: \"%s\" must be %s", msg_type, f->name, type_name(f->type));
            return -1;
        }
    }
    return 0;
}

void shell_refuse(shell_session *s, const shell_request *req, const char *ename, const char *why)
{
    const char *type = req->msg.msg_type;
    klog("refused %s: %s", type, why);
    json_t *err = json_pack("{s:s, s:s, s:[s+]}", "ename", ename, "evalue", why, "traceback", ename, ": ", why);
    session_status(s, &req->msg, "busy");
    if (strcmp(type, "execute_request") == 0) {
        session_publish(s, &req->msg, "error", json_deep_copy(err));
        json_object_set_new(err, "execution_count", json_integer(s->exec_count));
    }
    json_object_set_new(err, "status", json_string("error"));
    char reply_type[80];
    snprintf(reply_type, sizeof reply_type, "%.*s_reply", (int)(strlen(type) - strlen("_request")), type);
    session_reply(s, req, reply_type, err);
    session_status(s, &req->msg, "idle");
}

/* Runs the handler of a request whose content was checked. */
static int handle(shell_session *s, int i, shell_request *req)
{
    char why[160];
    const char *type = req->msg.msg_type;
    if (check_content(i, type, req->msg.content, why, sizeof why) != 0) {
        if (!strstr(type, "_request")) {        /* comm messages have no reply to carry an error */
            klog("dropped %s message: %s", conn_port_name(req->channel), why);
            return -1;
        }
        shell_refuse(s, req, "ProtocolError", why);
        return 0;
    }
    session_status(s, &req->msg, "busy");
    if (handlers[i].fn(s, req) == HANDLED_DONE)
        session_status(s, &req->msg, "idle");
    return 0;
}

int shell_dispatch(shell_session *s, shell_request *req)
{
    int i = find(req->msg.msg_type, req->channel);
    int rc = 0;
    if (i < 0)
        klog("ignored unknown %s message type '%.64s'", conn_port_name(req->channel), req->msg.msg_type);
    else
        rc = handle(s, i, req);
    wire_msg_free(&req->msg);       /* what a handler did not take */
    return rc;
}
