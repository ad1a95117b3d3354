/* info.c — kernel_info, comm_info and the comm messages we tolerate. */
#include "base/log.h"
#include "cudalab/version.h"
#include "proto/msg.h"
#include "shell/session.h"

enum handled handle_kernel_info(shell_session *s, shell_request *req)
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
    session_reply(s, req, "kernel_info_reply", content);
    return HANDLED_DONE;
}

enum handled handle_comm_info(shell_session *s, shell_request *req)
{
    session_reply(s, req, "comm_info_reply", json_pack("{s:s, s:{}}", "status", "ok", "comms"));
    return HANDLED_DONE;
}

/* We register no comm targets: close the comm at once, as the spec asks, so
 * the frontend does not wait on it. */
enum handled handle_comm_open(shell_session *s, shell_request *req)
{
    json_t *id = json_object_get(req->msg.content, "comm_id");
    if (json_is_string(id))
        session_publish(s, &req->msg, "comm_close", json_pack("{s:O, s:{}}", "comm_id", id, "data"));
    else
        klog("comm_open without a comm_id string: ignored");
    return HANDLED_DONE;
}

enum handled handle_comm_ignore(shell_session *s, shell_request *req)
{
    return HANDLED_DONE;
}
