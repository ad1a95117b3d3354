/* recorded_magic.c — %recorded NAME: the notebook names its recorded GPU
 * results (recorded.h), so that a run on the CPU backend shows them beside its
 * own and %assert's gpu. names can check the prose against them.
 *
 * A kernel is not told reliably which notebook it runs (JupyterLab sets
 * JPY_SESSION_NAME, nbclient, papermill and nbgrader do not), so the notebook
 * says it in its first cell; the file is found relative to the kernel's
 * working directory, which Jupyter sets to the notebook's folder.
 */
#include "grade/recorded.h"
#include "magic/magic.h"

static int recorded_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    (void)body;
    if (!ctx->grading.recording)
        return magic_error(ctx, "UsageError", "%%recorded needs a kernel session (Jupyter): the command-line "
                           "mode runs live only");
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *view = NULL;
    if (recording_open(ctx->grading.recording, name ? name : "", json_string_value(json_object_get(params, "dir")),
                       json_string_value(json_object_get(params, "gpu")), &view, &ctx->error) != 0)
        return -1;
    magic_result(ctx, NULL, view);
    return 0;
}

static const flag_spec recorded_flags[] = {
    {.name = "dir", .type = FLAG_STRING, .def = RECORDED_DIR,
     .help = "the folder of the recorded files, relative to the notebook's folder: one folder in it per GPU"},
    {.name = "gpu", .type = FLAG_STRING,
     .help = "the GPU whose recording to show: its folder in DIR, or the start of its name (h100, h200); "
             "default: $" RECORDED_GPU_ENV ", else the newest recording"},
    {.name = NULL},
};

static const char *const recorded_examples[] = {
    "%recorded 03-matrix-multiplication",
    "%recorded 04-reduction --gpu h100",
    NULL,
};

const magic_spec magic_recorded = {
    MAGIC_LOCAL_LINE(recorded),
    .summary = "Show results recorded on a GPU beside this notebook's CPU runs",
    .description = "Loads DIR/GPU/NAME.json (recorded/ beside the notebook, one folder per GPU:\n"
                   "make record writes it on a GPU machine, into the folder named after the\n"
                   "device; --gpu or $" RECORDED_GPU_ENV " picks one, else the newest). Then every device command run on the CPU backend shows the\n"
                   "results the same command gave on that GPU under a label (device, date,\n"
                   "cudalab version), in its table and in its document (\"recorded\"), and\n"
                   "%assert can check them: gpu.NAME reads the live results where they came\n"
                   "from a GPU and the recorded ones otherwise, recorded.NAME always the\n"
                   "recorded ones. A notebook not recorded yet is no error: checks of gpu.NAME\n"
                   "are then skipped, and say so. With " RECORDED_ENV "=DIR in the kernel's\n"
                   "environment, it records into DIR/NAME.json instead (make record).",
    .flags = recorded_flags,
    .positional = "NAME",
    .positional_help = "the notebook's name, without .ipynb",
};
