/* comm.c — the comm messages: comm_info_request, and comm_open, comm_msg and
 * comm_close from a frontend.
 *
 * The kernel's comms are the models of its %interact widgets (interact.h),
 * all of target jupyter.widget; a frontend may not open comms of its own
 * (ipywidgets' jupyter.widget.control, or any other target): each is closed at
 * once, as the messaging spec asks of an unknown target, so that the frontend
 * does not wait on it (ipywidgets then asks each model's state by itself).
 * A message the kernel cannot act on (an unknown comm, data that is not what
 * the widget protocol says) is dropped with one log line; nothing else happens.
 */
#include <string.h>

#include "base/log.h"
#include "shell/interact.h"
#include "shell/session.h"
#include "shell/widget.h"

static void list_one(void *comms, const char *id)
{
    json_object_set_new(comms, id, json_pack("{s:s}", "target_name", WIDGET_TARGET));
}

enum handled handle_comm_info(shell_session *s, shell_request *req)
{
    const char *target = json_string_value(json_object_get(req->msg.content, "target_name"));
    json_t *comms = json_object();
    if (!target || strcmp(target, WIDGET_TARGET) == 0)      /* every comm of ours is a widget's */
        interact_models_each(s, list_one, comms);
    session_reply(s, req, "comm_info_reply", json_pack("{s:s, s:o}", "status", "ok", "comms", comms));
    return HANDLED_DONE;
}

enum handled handle_comm_open(shell_session *s, shell_request *req)
{
    const char *id = json_string_value(json_object_get(req->msg.content, "comm_id"));
    const char *target = json_string_value(json_object_get(req->msg.content, "target_name"));
    if (!id) {
        klog("comm_open without a comm_id string: ignored");
        return HANDLED_DONE;
    }
    /* ipywidgets opens jupyter.widget.control on every connection: an event, not a warning */
    kinfo("comm_open of target '%.64s' from a frontend: closed (the kernel opens its widgets itself)",
          target ? target : "(none)");
    session_publish(s, &req->msg, "comm_close", json_pack("{s:s, s:{}}", "comm_id", id, "data"));
    return HANDLED_DONE;
}

enum handled handle_comm_msg(shell_session *s, shell_request *req)
{
    const char *id = json_string_value(json_object_get(req->msg.content, "comm_id"));
    const json_t *data = json_object_get(req->msg.content, "data");
    const char *method = json_string_value(json_object_get(data, "method"));
    interact_model m;
    if (!interact_model_find(s, id, &m)) {
        klog("comm_msg for comm '%.40s', which is not open: ignored", id);
        return HANDLED_DONE;
    }
    if (!method) {
        klog("comm_msg for widget %.40s without data.method: ignored", id);
        return HANDLED_DONE;
    }
    if (strcmp(method, "request_state") == 0) {
        interact_model_send_state(s, &m, &req->msg);
        return HANDLED_DONE;
    }
    if (strcmp(method, "custom") == 0)
        return HANDLED_DONE;        /* none of our models has custom messages */
    if (strcmp(method, "update") != 0) {
        klog("comm_msg for widget %.40s with method '%.40s': ignored", id, method);
        return HANDLED_DONE;
    }
    const json_t *state = json_object_get(data, "state");
    if (!json_is_object(state)) {
        klog("comm_msg update for widget %.40s without a state object: ignored", id);
        return HANDLED_DONE;
    }
    return interact_model_update(s, &m, state, req);
}

enum handled handle_comm_close(shell_session *s, shell_request *req)
{
    const char *id = json_string_value(json_object_get(req->msg.content, "comm_id"));
    interact_model m;
    if (interact_model_find(s, id, &m))
        interact_model_closed(s, &m, &req->msg);
    else
        klog("comm_close for comm '%.40s', which is not open: ignored", id);
    return HANDLED_DONE;
}
