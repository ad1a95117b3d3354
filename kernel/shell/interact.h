/* interact.h — inside the shell: the session's %interact widgets and their runs.
 *
 * A %interact command makes one interact: its plan (lang/interact.h), the
 * values chosen, and the widget models that show it (widget.h): a layout,
 * style models, one control per list, an Output for the result and a VBox
 * holding them. Its first run happens in the cell that made it, as any
 * command of that cell (execute.c); when that run has its answer, the models
 * are opened (comm_open, target jupyter.widget) and the box displayed, with the
 * result in the Output. After that, a control's "update" from the frontend
 * (comm.c) re-runs the command as a cell of its own, parented to that
 * comm_msg (status busy, then idle when its result is in the Output): the same
 * worker path, the same stops and limits, and the result kept for %assert
 * under the count of the cell that made the interact.
 *
 * Changes that arrive while a run is under way are coalesced: the requests
 * queued on shell when a run ends are held (session_take_queued) and served
 * in order (session_resume); comm messages in a row are handled together
 * (each control update only records its value, the newest one's comm_msg
 * becoming the parent of the next run, the others answered idle), and that
 * run starts before the first other request behind them.
 */
#ifndef CUDALAB_SHELL_INTERACT_H
#define CUDALAB_SHELL_INTERACT_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"
#include "shell/session.h"

struct interact;

/* execute.c: cmd (a %interact command) in the running cell makes an interact,
 * closing the oldest live one past INTERACT_MAX_LIVE (saying so on the cell's
 * stdout), and sets the cell's ia and sub (its first run). 0, or -1 with err. */
int interact_begin(shell_session *s, const command *cmd, error_info *err);
/* The running cell's interact run has its answer (c->error, if any): its
 * outputs go to the Output (the first time: the widgets are opened and shown).
 * Clears the cell's ia and sub. */
void interact_settle(shell_session *s);
/* cell_output.c: what the run shows, kept for the Output (text and bundle stolen); the stream's cap
 * and flushing are the cell's. */
void interact_collect_stream(shell_session *s, const char *name, json_t *text);
void interact_collect_bundle(shell_session *s, json_t *bundle);
/* Starts the run of a change waiting for one, if any: true when it did. */
bool interact_run_due(shell_session *s);
/* Frees the interacts closed while one of their runs was going on. */
void interact_reap(shell_session *s);
/* Closes every widget (comm_close parented to parent, when publish) and frees
 * them all: shutdown, and the session's end. */
void interact_close_all(shell_session *s, const wire_msg *parent, bool publish);

/* comm.c's view: the models, found by comm id. */
typedef struct interact_model {
    struct interact *owner;
    int index;                      /* in the owner's models */
} interact_model;

/* The live model with comm id, or false. */
bool interact_model_find(shell_session *s, const char *id, interact_model *out);
/* Calls fn for each live model (comm_info). */
void interact_models_each(shell_session *s, void (*fn)(void *arg, const char *id), void *arg);
/* Publishes the model's whole state as an "update" (request_state). */
void interact_model_send_state(shell_session *s, const interact_model *m, const wire_msg *parent);
/* A frontend's update of the model: a control's new index re-runs the
 * command (now, or once the run under way ends). req is taken when the
 * update is to run (HANDLED_PENDING: idle comes when the run ends). Bad
 * values are logged and answered with the model's current value. */
enum handled interact_model_update(shell_session *s, const interact_model *m, const json_t *state,
                                   shell_request *req);
/* The frontend closed one of the models: the whole interact goes. */
void interact_model_closed(shell_session *s, const interact_model *m, const wire_msg *parent);

#endif
