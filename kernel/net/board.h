/* board.h — the kernel's side of the class leaderboard's service (the board): where it is, who
 * the student is, and its HTTP API (api/submissions, api/boards/PROBLEM, api/quickchecks) as
 * JSON calls with the errors a student can act on.
 *
 * The service is a JupyterHub service; the course's image sets CUDALAB_BOARD_URL to its http://
 * address (ending in '/'), and the hub gives every single-user server, and so its kernels, a
 * token in JUPYTERHUB_API_TOKEN (CUDALAB_BOARD_TOKEN overrides it). CUDALAB_CLASS_VIEW=1 (the
 * course opts in) has each %%kernel quick check post its summary for the instructor's view.
 */
#ifndef CUDALAB_NET_BOARD_H
#define CUDALAB_NET_BOARD_H

#include <jansson.h>
#include <stdbool.h>

#include "net/http.h"

#define BOARD_URL_ENV "CUDALAB_BOARD_URL"
#define BOARD_TOKEN_ENV "CUDALAB_BOARD_TOKEN"
#define BOARD_HUB_TOKEN_ENV "JUPYTERHUB_API_TOKEN"
#define BOARD_TIMEOUT_ENV "CUDALAB_BOARD_TIMEOUT"     /* seconds a call may take (default below) */
#define BOARD_CLASS_VIEW_ENV "CUDALAB_CLASS_VIEW"
#define BOARD_TIMEOUT_S 15
#define BOARD_CONNECT_S 3
#define BOARD_ERROR_TEXT_MAX 300                       /* bytes of the service's error text a message quotes */

/* What went wrong with a call, for the magic's error: ename ("BoardError": no board configured,
 * unreachable, timed out, a response that is not the API's; "BoardRefused": a 4xx with the
 * service's error text; "BoardRateLimit": 429) and the sentence. */
typedef struct board_error {
    const char *ename;
    char text[HTTP_ERR_LEN + BOARD_ERROR_TEXT_MAX + 128];
    int status;                 /* the HTTP status, 0 when none came */
    double retry_after_s;       /* 429: when to try again, else -1 */
} board_error;

/* method path (relative to the service's URL; "api/boards/ps2.matmul") with body (NULL: none):
 * 0 and *reply (a new reference: the JSON body of a 2xx, NULL for 204), or -1 with *e filled. */
int board_call(const char *method, const char *path, const json_t *body, json_t **reply, board_error *e);

/* Text from the service as a message or a table may show it: at most max bytes (cut on a UTF-8
 * boundary, marked " [...]"), control characters as spaces (a hostile or broken service must not
 * write escapes into the student's output); into out (len). */
void board_quote(const char *text, size_t max, char *out, size_t len);

/* A path's last part escaped for a URL (a problem's or an exercise's name): into out (len), or
 * false when it does not fit. */
bool board_path_escape(const char *part, char *out, size_t len);

/* Whether the course opted in to the class view (CUDALAB_CLASS_VIEW=1) and a board is set. */
bool board_class_view_on(void);
/* The api/quickchecks body from a %%kernel result document (borrowed), exercise its family: new
 * reference, or NULL when doc is not one. */
json_t *board_quickcheck_summary(const json_t *doc, const char *exercise);
/* Posts summary (stolen) on a thread of its own: the cell never waits for it, and a failure is
 * one line in the kernel's own log (never the cell's output). At most BOARD_POSTS_IN_FLIGHT at
 * once; a post beyond that is dropped, and logged. */
#define BOARD_POSTS_IN_FLIGHT 4
void board_post_quickcheck(json_t *summary);

#endif
