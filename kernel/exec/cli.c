/* cli.c — command-line mode: run a cell without Jupyter and print the results.
 *
 *   cudalab --run '%device'            text tables, as text/plain in a notebook
 *   cudalab --run '%device' --json     one result document per line (JSON Lines)
 *   cudalab --run-file cell.txt        the cell from a file ("-" = stdin)
 *
 * Commands run in this process (worker magics choose their backend here), so
 * it needs no Python, no ZeroMQ peer and no kernel: the quickest GPU check.
 */
#include "lang/lang.h"
#include "exec/cli.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "render/render.h"
#include "grade/results.h"
#include "magic/lab_session.h"
#include "exec/worker.h"

static void cli_stream(void *impl, const char *name, const char *text)
{
    FILE *f = strcmp(name, "stderr") == 0 ? stderr : stdout;
    fputs(text, f);
    fflush(f);
}

/* What the commands of a cell share: how to print, and the results so far (%assert). */
typedef struct cli_session {
    bool json_mode;
    result_store *results;
} cli_session;

static void cli_result(void *impl, json_t *doc, json_t *view, const char *display_id, enum result_mode mode)
{
    cli_session *session = impl;
    bool json_mode = session->json_mode;
    if (doc && (mode == RESULT_PLAIN || mode == RESULT_FINAL))
        results_record(session->results, doc, 0);
    /* progress displays are for notebooks; a terminal shows only final results,
     * and in --json mode only documents (a chart has none) */
    if ((mode != RESULT_PLAIN && mode != RESULT_FINAL) || (json_mode && !doc)) {
        json_decref(doc);
        json_decref(view);
        return;
    }
    if (json_mode) {
        char *s = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(12));
        if (s)
            printf("%s\n", s);
        free(s);
    } else {
        static bool printed;                /* a blank line between results */
        char *s = render_text(view);
        if (s)
            printf("%s%s", printed ? "\n" : "", s);
        printed = printed || s;
        free(s);
    }
    fflush(stdout);
    json_decref(doc);
    json_decref(view);
}

static const magic_out cli_out = { cli_stream, cli_result };

static void print_error(const char *ename, const char *evalue, int line, const char *source)
{
    fprintf(stderr, "%s: %s\n", ename, evalue);
    if (line > 0)
        fprintf(stderr, "  in cell line %d: %s\n", line, source);
}

static void on_sigint(int sig)
{
    magic_cancel();     /* the first ^C asks the command to stop; the handler resets, so a second one kills */
}

int cli_run_cell(const char *cell, bool json_mode)
{
    struct sigaction sa = { .sa_handler = on_sigint, .sa_flags = SA_RESETHAND | SA_RESTART };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    /* the command line's session: the cell's parameters, its kernel, the compile cache */
    lab_session *lab = lab_session_new();
    if (!lab) {
        print_error("MemoryError", "out of memory", 0, "");
        return 2;
    }
    command *cmds;
    parse_error perr;
    int n = cell_parse(lab, cell, &cmds, &perr);
    if (n < 0) {
        print_error(perr.error.ename, perr.error.evalue, perr.line, perr.source);
        lab_session_free(lab);
        return 2;
    }
    int rc = 0;
    cli_session session = { .json_mode = json_mode, .results = results_new() };
    for (int i = 0; i < n && rc == 0; i++) {
        magic_ctx ctx = { .sink.out = &cli_out, .sink.impl = &session, .lab = lab, .grading.results = session.results };
        if (worker_exec(cmds[i].magic, cmds[i].params, cmds[i].cpu_defaulted, cmds[i].body, &ctx)) {
            print_error(ctx.error.ename, ctx.error.evalue, cmds[i].line, cmds[i].source);
            size_t j;
            json_t *l;
            json_array_foreach(ctx.traceback, j, l)
                fprintf(stderr, "%s\n", json_string_value(l));
            json_decref(ctx.traceback);
            rc = 1;
        }
    }
    commands_free(cmds, n);
    results_free(session.results);
    lab_session_free(lab);
    return rc;
}

char *cli_read_file(const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    strbuf text = STRBUF_INIT;
    size_t r;
    do {
        if (text.len >= CLI_FILE_MAX - 1 || strbuf_reserve(&text, 4096) != 0) {
            text.failed = true;         /* too big to be a cell, or out of memory */
            break;
        }
        r = fread(text.data + text.len, 1, text.cap - text.len - 1, f);
        strbuf_put_end(&text, r);
    } while (r > 0);
    if (f != stdin)
        fclose(f);
    return strbuf_take(&text);
}
