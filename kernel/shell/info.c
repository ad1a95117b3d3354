/* info.c — kernel_info, comm_info and the comm messages we tolerate. */
#include "cudalab/version.h"
#include "server/kernel.h"
#include "base/log.h"
#include "proto/msg.h"

enum handled handle_kernel_info(kernel *k, void *sock, wire_msg *req);
enum handled handle_comm_info(kernel *k, void *sock, wire_msg *req);
enum handled handle_comm_open(kernel *k, void *sock, wire_msg *req);
enum handled handle_comm_ignore(kernel *k, void *sock, wire_msg *req);

enum handled handle_kernel_info(kernel *k, void *sock, wire_msg *req)
{
    json_t *lang = json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", "cudalab", "version",
                             CUDALAB_VERSION, "mimetype", "text/x-cudalab", "file_extension",
                             ".cudalab", "pygments_lexer", "text");
    json_t *content = json_pack(
        "{s:s, s:s, s:s, s:s, s:o, s:s, s:[]}", "status", "ok", "protocol_version",
        PROTOCOL_VERSION, "implementation", "cudalab", "implementation_version", CUDALAB_VERSION,
        "language_info", lang, "banner",
        "cudalab " CUDALAB_VERSION " - CUDA lecture experiments as magic commands. Type %help.",
        "help_links");
    kernel_reply(k, sock, req, "kernel_info_reply", content);
    return HANDLED_DONE;
}

enum handled handle_comm_info(kernel *k, void *sock, wire_msg *req)
{
    kernel_reply(k, sock, req, "comm_info_reply", json_pack("{s:s, s:{}}", "status", "ok", "comms"));
    return HANDLED_DONE;
}

/* We register no comm targets: close the comm at once, as the spec asks, so
 * the frontend does not wait on it. */
enum handled handle_comm_open(kernel *k, void *sock, wire_msg *req)
{
    json_t *id = json_object_get(req->content, "comm_id");
    if (json_is_string(id))
        kernel_publish(k, req, "comm_close", json_pack("{s:O, s:{}}", "comm_id", id, "data"));
    else
        klog("comm_open without a comm_id string: ignored");
    return HANDLED_DONE;
}

enum handled handle_comm_ignore(kernel *k, void *sock, wire_msg *req)
{
    return HANDLED_DONE;
}
