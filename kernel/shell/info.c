/* info.c — kernel_info: what frontends know of the language (the comm messages are comm.c's). */
#include "cudalab/version.h"
#include "proto/msg.h"
#include "shell/session.h"

/* language_info, as frontends read it:
 *  - pygments_lexer: python/cudalab/lexer.py (the package's pygments.lexers
 *    entry point), which nbconvert and the qtconsole use for the cell sources;
 *    its name, mimetype and file extension are these (tests/frontends/test_lexer.py checks they agree).
 *  - codemirror_mode: JupyterLab and Notebook have no mode of ours, and
 *    "shell" is the nearest of theirs: magic lines are command lines, and it
 *    shows # comments, quoted strings, numbers and $NAME parameters as ours
 *    do; a %%kernel body is the one part it does not know (C++). */
static json_t *language_info(void)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "name", "cudalab", "version", CUDALAB_VERSION,
                     "mimetype", "text/x-cudalab", "file_extension", ".cudalab", "pygments_lexer", "cudalab",
                     "codemirror_mode", "shell");
}

/* The frontends' Help menu. cudalab's own help has no page: it is %help in a
 * cell (the banner says so); these are the references its magics teach from. */
static json_t *help_links(void)
{
    static const char *const links[][2] = {
        {"CUDA C++ Programming Guide", "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html"},
        {"CUDA C++ Best Practices Guide", "https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/index.html"},
        {"CUDA Runtime API", "https://docs.nvidia.com/cuda/cuda-runtime-api/index.html"},
        {"NVRTC (the %%kernel compiler)", "https://docs.nvidia.com/cuda/nvrtc/index.html"},
        {"Compute Sanitizer (%%kernel checks)", "https://docs.nvidia.com/compute-sanitizer/ComputeSanitizer/index.html"},
    };
    json_t *a = json_array();
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
        json_array_append_new(a, json_pack("{s:s, s:s}", "text", links[i][0], "url", links[i][1]));
    return a;
}

enum handled handle_kernel_info(shell_session *s, shell_request *req)
{
    json_t *content = json_pack(
        "{s:s, s:s, s:s, s:s, s:o, s:s, s:o}", "status", "ok", "protocol_version",
        PROTOCOL_VERSION, "implementation", "cudalab", "implementation_version", CUDALAB_VERSION,
        "language_info", language_info(), "banner",
        "cudalab " CUDALAB_VERSION " - CUDA lecture experiments as magic commands. Type %help.",
        "help_links", help_links());
    session_reply(s, req, "kernel_info_reply", content);
    return HANDLED_DONE;
}
