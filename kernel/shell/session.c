/* session.c — a session's life: what it holds (execution count, history,
 * results, the running cell) from the first request to shutdown. */
#include <stdlib.h>

#include "shell/session.h"

shell_session *shell_session_new(const shell_host *host, const shell_limits *lim)
{
    shell_session *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->host = host;
    s->lim = *lim;
    s->history = history_new();
    s->results = results_new();
    if (!s->history || !s->results) {
        shell_session_free(s);
        return NULL;
    }
    return s;
}

void shell_session_free(shell_session *s)
{
    if (!s)
        return;
    cell_discard(s);
    history_free(s->history);
    results_free(s->results);
    free(s);
}

bool shell_cell_running(const shell_session *s)
{
    return s->cell != NULL;
}
