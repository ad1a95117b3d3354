/* info.c — kernel_info (the comm messages are comm.c's). */
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
