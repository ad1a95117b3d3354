/* interact.h — %interact's language side: a command line whose comma lists
 * are the choices of live controls, not a sweep.
 *
 *   %interact %matmul --size 2048 --tile 2,4,8,16,32 --variant naive,tiled
 *
 * The rest of the line is parsed as a command of its own (the same parser,
 * the same validation, so a typo there is the usual error); each flag given as
 * a list of two or more values becomes one control over those values, in the
 * order of the flags (the magic's table), and a run is that command with each
 * list replaced by its chosen value. Only device commands can re-run this way
 * (they are what changes with a tile size); %interact itself, the kernel's own
 * magics (%assert, %help, ...) and cell magics are refused when the cell is
 * parsed. The session's widgets and runs are kernel/shell/interact.c's.
 */
#ifndef CUDALAB_LANG_INTERACT_H
#define CUDALAB_LANG_INTERACT_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"
#include "lang/lang.h"

#define INTERACT_MAX_CONTROLS 6     /* controls of one %interact: more do not fit a lecture's slide */
#define INTERACT_MAX_CHOICES 64     /* values of one control: a slider step still visible at 1000 px */
#define INTERACT_MAX_LIVE 8         /* live %interact widgets per session: past it the oldest closes */

extern const magic_spec magic_interact;

typedef struct interact_control {
    const flag_spec *flag;          /* the wrapped magic's flag */
    char key[64];                   /* its params key ("tile", "bin_width") */
    json_t *choices;                /* the listed values as parsed, in order; owned */
    json_t *labels;                 /* the same as the strings a control shows ("16", "16x16"); owned */
    bool numeric;                   /* every value a number: a slider, else a drop-down */
} interact_control;

typedef struct interact_plan {
    command cmd;                    /* the wrapped command as parsed, lists and all; owned */
    interact_control ctl[INTERACT_MAX_CONTROLS];
    int nctl;
} interact_plan;

/* Parses the text after %interact into a plan, in the session lab. 0, or -1
 * with err set (UsageError, or the wrapped command's own parse error) and *at
 * the byte offset of the culprit in text (SIZE_MAX when none). Free with
 * interact_plan_free. */
int interact_plan_parse(const lab_session *lab, const char *text, interact_plan *p, error_info *err, size_t *at);
void interact_plan_free(interact_plan *p);

/* The params of one run: the plan's with control k's list replaced by
 * choices[index[k]] (each index in range). A new reference. */
json_t *interact_params(const interact_plan *p, const int *index);

/* Is cmd a %interact command (the shell runs it, not run())? */
bool interact_is(const command *cmd);

#endif
