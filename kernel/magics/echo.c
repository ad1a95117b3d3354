/* echo.c — %echo and %%echo: print text into the cell's output.
 *
 * Lecture notebooks use it to label what the next command shows, and the tests
 * use it as the simplest magic that goes through parse, run and the stream.
 * It runs in the kernel process (nothing to compute) and prints to stderr only
 * when asked, since autograders fail cells that write there.
 */
#include <stdlib.h>
#include <string.h>

#include "magic/magic.h"

/* Sends text and a newline as one stream message. */
static int emit_line(magic_ctx *ctx, const char *stream, const char *text)
{
    size_t n = strlen(text);
    char *line = malloc(n + 2);
    if (!line)
        return magic_error(ctx, "MemoryError", "out of memory");
    memcpy(line, text, n);
    line[n] = '\n';
    line[n + 1] = '\0';
    magic_stream(ctx, stream, line);
    free(line);
    return 0;
}

/* Line form: the text and a newline. Cell form: the header's text, if any,
 * then the body as it is, ending with a newline so the next output starts on
 * a line of its own (Jupyter cells rarely end with one). */
static int echo_run(magic_ctx *ctx, const json_t *params, const char *body)
{
    const char *stream = json_is_true(json_object_get(params, "stderr")) ? "stderr" : "stdout";
    const char *text = json_string_value(json_object_get(params, "text"));
    if (!body)
        return emit_line(ctx, stream, text ? text : "");
    if (text && emit_line(ctx, stream, text) != 0)
        return -1;
    size_t n = strlen(body);
    if (n == 0)
        return 0;
    if (body[n - 1] == '\n') {
        magic_stream(ctx, stream, body);
        return 0;
    }
    return emit_line(ctx, stream, body);
}

static const flag_spec echo_flags[] = {
    {.name = "stderr", .type = FLAG_BOOL,
     .help = "write to the stderr stream instead of stdout"},
    {.name = NULL},
};

static const char *const echo_examples[] = {
    "%echo Tile sizes from 8 to 32:",
    "%echo \"two  spaces, kept\"",
    "%echo --stderr \"goes to the stderr stream\"",
    NULL,
};

const magic_spec magic_echo = {
    .name = "echo",
    .summary = "Print text into the cell's output",
    .description = "As a line magic, prints TEXT and a newline. As a cell magic (%%echo on the\n"
                   "first line), prints the rest of the cell as it is. Words are joined by single\n"
                   "spaces; quote the text to keep its spacing or a leading '-' or '#'.",
    .flags = echo_flags,
    .positional = "TEXT",
    .positional_help = "the text to print",
    .mode = MAGIC_LINE | MAGIC_CELL,
    .where = MAGIC_LOCAL,
    .run = echo_run,
    .examples = echo_examples,
};
