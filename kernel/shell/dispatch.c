/* dispatch.c — which handler answers which message type on which channel.
 * Adding a request type = one handler in kernel/shell/ + one line here. */
#include <string.h>

#include "kernel.h"

enum handled handle_kernel_info(kernel *k, void *sock, wire_msg *req);
enum handled handle_execute(kernel *k, void *sock, wire_msg *req);
enum handled handle_complete(kernel *k, void *sock, wire_msg *req);
enum handled handle_inspect(kernel *k, void *sock, wire_msg *req);
enum handled handle_is_complete(kernel *k, void *sock, wire_msg *req);
enum handled handle_history(kernel *k, void *sock, wire_msg *req);
enum handled handle_comm_info(kernel *k, void *sock, wire_msg *req);
enum handled handle_comm_open(kernel *k, void *sock, wire_msg *req);
enum handled handle_comm_ignore(kernel *k, void *sock, wire_msg *req);
enum handled handle_shutdown(kernel *k, void *sock, wire_msg *req);
enum handled handle_interrupt(kernel *k, void *sock, wire_msg *req);

#define SHELL   (1u << PORT_SHELL)
#define CONTROL (1u << PORT_CONTROL)

static const struct {
    const char *msg_type;
    handler_fn fn;
    unsigned channels;
} handlers[] = {
    { "kernel_info_request", handle_kernel_info, SHELL | CONTROL },
    { "execute_request", handle_execute, SHELL },
    { "complete_request", handle_complete, SHELL },
    { "inspect_request", handle_inspect, SHELL },
    { "is_complete_request", handle_is_complete, SHELL },
    { "history_request", handle_history, SHELL },
    { "comm_info_request", handle_comm_info, SHELL },
    { "comm_open", handle_comm_open, SHELL },
    { "comm_msg", handle_comm_ignore, SHELL },
    { "comm_close", handle_comm_ignore, SHELL },
    { "shutdown_request", handle_shutdown, SHELL | CONTROL },
    { "interrupt_request", handle_interrupt, CONTROL },
};

handler_fn shell_handler(const char *msg_type, enum conn_port channel)
{
    for (size_t i = 0; i < sizeof handlers / sizeof handlers[0]; i++)
        if ((handlers[i].channels & (1u << channel)) && strcmp(handlers[i].msg_type, msg_type) == 0)
            return handlers[i].fn;
    return NULL;
}
