/* control.c — shutdown and interrupt requests. */
#include <stdbool.h>

#include "base/log.h"
#include "shell/interact.h"
#include "shell/session.h"

enum handled handle_shutdown(shell_session *s, shell_request *req)
{
    bool restart = json_is_true(json_object_get(req->msg.content, "restart"));
    s->host->worker_kill(s->host->server);     /* before replying: the client may kill us next */
    interact_close_all(s, &req->msg, true);     /* the frontends drop the widgets' models */
    session_reply(s, req, "shutdown_reply",
                 json_pack("{s:s, s:b}", "status", "ok", "restart", restart));
    s->quitting = true;
    s->host->quit(s->host->server);
    kinfo("shutdown requested%s", restart ? " (restart)" : "");
    return HANDLED_DONE;
}

enum handled handle_interrupt(shell_session *s, shell_request *req)
{
    shell_interrupt(s, "interrupted by interrupt_request");
    session_reply(s, req, "interrupt_reply", json_pack("{s:s}", "status", "ok"));
    return HANDLED_DONE;
}
