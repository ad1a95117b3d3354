/* control.c — shutdown and interrupt requests. */
#include <stdbool.h>

#include "server/kernel.h"
#include "base/log.h"

enum handled handle_shutdown(kernel *k, void *sock, wire_msg *req);
enum handled handle_interrupt(kernel *k, void *sock, wire_msg *req);

enum handled handle_shutdown(kernel *k, void *sock, wire_msg *req)
{
    bool restart = json_is_true(json_object_get(req->content, "restart"));
    if (k->worker.pid)
        worker_kill(&k->worker, NULL);  /* before replying: the client may kill us next */
    kernel_reply(k, sock, req, "shutdown_reply",
                 json_pack("{s:s, s:b}", "status", "ok", "restart", restart));
    k->quit = true;
    klog("shutdown requested%s", restart ? " (restart)" : "");
    return HANDLED_DONE;
}

enum handled handle_interrupt(kernel *k, void *sock, wire_msg *req)
{
    cell_interrupt(k, "interrupted by interrupt_request");
    kernel_reply(k, sock, req, "interrupt_reply", json_pack("{s:s}", "status", "ok"));
    return HANDLED_DONE;
}
