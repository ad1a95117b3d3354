/* magic.h — how a magic command is described, parsed and run.
 *
 * Each magic is described exactly once by a magic_spec: its name, summary,
 * flags with their types, defaults, ranges and help. That one description feeds
 * the parser and validator (parse.c), %help, complete_request and
 * inspect_request. Adding a magic = its file in kernel/magics/ + one line in
 * kernel/magics/registry.c.
 *
 * A magic's run() receives validated parameters as a JSON object (every flag
 * present, defaults filled in, keys with '-' turned into '_', comma lists as
 * arrays) and reports through a magic_ctx: streams, result documents, errors.
 * The same run() works in the kernel process (MAGIC_LOCAL), in the device
 * worker (MAGIC_WORKER) and in command-line mode: only the ctx differs.
 */
#ifndef CUDALAB_MAGIC_H
#define CUDALAB_MAGIC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "cudalab/backend.h"

enum flag_type {
    FLAG_BOOL,    /* --x, --no-x, --x=true|false|1|0|yes|no */
    FLAG_INT,     /* 64-bit; 1024, 2^20, 64K, 16M, 1G (binary), 1e6; checked against [imin, imax] */
    FLAG_FLOAT,   /* double; checked against [fmin, fmax] */
    FLAG_STRING,  /* any text (quoted if it has spaces) */
    FLAG_CHOICE,  /* one of choices[] */
    FLAG_DIMS,    /* 1 to 3 positive ints: 76x62, 16x16x4 -> JSON array; each in [imin, imax] */
};

/* flag_spec.opts */
#define FLAG_LIST     0x1u  /* a comma list is allowed (turned into a sweep by the magic) */
#define FLAG_REQUIRED 0x2u  /* no default: the user must give it */
#define FLAG_REPEAT   0x4u  /* may be given several times: the values, in order, as an array */

typedef struct flag_spec {
    const char *name;               /* long name without dashes, e.g. "bin-width"; NULL ends the table */
    char short_name;                /* 'n' for -n, or 0 */
    enum flag_type type;
    const char *def;                /* default, written as a user would write it; NULL = no value */
    const char *cpu_def;            /* the default where the command runs on the CPU backend (fewer reps, a
                                     * smaller size: a default cell stays quick without a GPU); NULL: def */
    long long imin, imax;           /* FLAG_INT, FLAG_DIMS */
    const char *word;               /* FLAG_INT: a word also accepted ("auto" for --reps), kept as that string */
    double fmin, fmax;              /* FLAG_FLOAT */
    const char *const *choices;     /* FLAG_CHOICE: NULL-terminated; or */
    const struct family_spec *family; /* FLAG_CHOICE: the family's variants and "all" (family.h) */
    unsigned opts;
    const char *help;
} flag_spec;

/* magic_spec.mode */
#define MAGIC_LINE 0x1u             /* %name args */
#define MAGIC_CELL 0x2u             /* %%name args + body */

enum magic_where {
    MAGIC_LOCAL,                    /* runs in the kernel process: must be instant and never touch CUDA */
    MAGIC_WORKER,                   /* runs in the device worker */
};

struct magic_ctx;
struct lab_session;
struct command;

typedef struct magic_spec {
    const char *name;
    const char *summary;            /* one line, shown in %help's list */
    const char *description;        /* paragraphs shown by %help NAME */
    const flag_spec *flags;         /* terminated by {NULL} */
    const char *positional;         /* name of free arguments (e.g. "TEXT"), NULL if none */
    const char *positional_help;
    unsigned mode;
    enum magic_where where;
    int (*run)(struct magic_ctx *ctx, const json_t *params, const char *body);
    const char *const *examples;    /* NULL-terminated example lines for %help */
    /* raw: the rest of the line after the name is the positional text as typed
     * (no flags, quotes kept: an expression); check, if set, validates it when
     * the cell is parsed (in the session lab), so that a typo stops the cell
     * before anything runs: 0, or -1 with a reason in msg and the culprit's
     * byte offset in *at. */
    bool raw;
    int (*check)(const struct lab_session *lab, const char *text, char *msg, size_t len, size_t *at);
    const char *check_ename;        /* what a failed check is: NULL for "SyntaxError" (an expression's typo) */
    /* A worker magic's steps in the kernel process, around the command:
     * attach, before it is sent, may refuse it (-1 with the error in ctx) and
     * may give what the worker needs beside its params in *kernels (the
     * definitions of the student kernels it names: a new reference, or NULL);
     * settled, once the worker has answered, gets the error's ename, NULL on
     * success; when the worker succeeded, its -1 (the error in ctx) fails the
     * command still (what it keeps could not be kept). */
    int (*attach)(struct magic_ctx *ctx, const struct command *cmd, json_t **kernels);
    /* A worker magic that may run nothing on the device says when (false):
     * it then never waits for a GPU, and asks device limits only (%grid
     * without --run). NULL: it always runs on the device. */
    bool (*needs_device)(const json_t *params);
    int (*settled)(struct magic_ctx *ctx, const struct command *cmd, const char *ename);
} magic_spec;

/* What a line magic that runs in the kernel process declares by convention, from its C name N:
 * its name "N", N_run and N_examples (a magic_spec's designated initializers). */
#define MAGIC_LOCAL_LINE(n_) \
    .name = #n_, .mode = MAGIC_LINE, .where = MAGIC_LOCAL, .run = n_##_run, .examples = n_##_examples
/* The flags of a magic that takes none. */
extern const flag_spec magic_no_flags[];

/* The flags every device magic line (a line magic that runs in the worker) takes beside its own
 * table, written once here: the parser, %help, completion and the worker read a magic's flags
 * through magic_flag_count and magic_flag (its own first, then these). --gpu-only: on the CPU
 * backend the command does not run; the kernel shows the command's recorded GPU result instead
 * (recorded.h). */
#define MAGIC_GPU_ONLY_KEY "gpu_only"
extern const flag_spec magic_device_flags[];
size_t magic_flag_count(const magic_spec *m);
/* The i-th flag of m (i < magic_flag_count(m)). */
const flag_spec *magic_flag(const magic_spec *m, size_t i);

/* ---- registry (kernel/magics/registry.c: the list lives where the magics are known, above
 * the framework; the framework and the layers between only look magics up through these) ---- */
const magic_spec *const *magic_all(size_t *count);
const magic_spec *magic_find(const char *name);

/* ---- running context: implemented by the kernel, the worker and the CLI ---- */
/* How a result is shown. A plain result is a new output. Progress is a display
 * that later results replace: SHOW creates it, UPDATE replaces it, END ends it
 * with its last state (doc NULL, view a line saying what ran: a saved notebook
 * keeps it, so never empty), FINAL is the command's final result after it, a
 * new output (a terminal frontend ignores display updates, so it is what a
 * terminal prints). */
enum result_mode { RESULT_PLAIN, RESULT_SHOW, RESULT_UPDATE, RESULT_FINAL, RESULT_END };

typedef struct magic_out {
    void (*stream)(void *impl, const char *name /* "stdout"|"stderr" */, const char *text);
    /* doc and view are stolen; doc may be NULL (a chart has no document of its own).
     * display_id is NULL for RESULT_PLAIN. */
    void (*result)(void *impl, json_t *doc, json_t *view, const char *display_id, enum result_mode mode);
} magic_out;

/* Where a command's output goes: streams, results and progress, implemented by
 * the kernel process, the device worker and the command-line mode. */
typedef struct magic_sink {
    const magic_out *out;
    void *impl;
    /* Where a long command says how far it is (the worker's progress line, run_progress.h): the
     * sweep calls it before each point with that point's parameters. NULL where nothing listens. */
    void (*run_point)(struct magic_ctx *ctx, size_t point, size_t points, const json_t *params);
} magic_sink;

/* The device a worker-side command runs on, and why its backend. */
typedef struct magic_target {
    int index;                      /* the index of the device the backend runs on */
    bool open;                      /* the backend has it open (a context): what only that can tell is known */
    double startup_ms;              /* the worker's start on the device (a context) this command paid; 0: none */
    const char *note;               /* why this backend (e.g. the CUDA error that made us fall back), and the
                                     * CPU's defaults that the command took (magic_cpu_default) */
    char *note_buf;                 /* note's own buffer of note_len bytes where it can grow; NULL */
    size_t note_len;
    bool cpu_defaults;              /* the CPU backend runs for want of a GPU: a default the user left may
                                     * be the CPU's (flag_spec.cpu_def, magic_cpu_default) */
} magic_target;

/* The GPU shared with the host's other kernels (exec/sharing.c); all NULL/false where nobody
 * shares it (the CLI). */
typedef struct magic_sharing {
    /* Fair timing where kernels share the device: turn(ctx, true, &waited)
     * gives this command the device alone for one timed run (other kernels'
     * timed runs wait meanwhile), turn(ctx, false, NULL) gives it back; 0, or
     * -1 with error set (interrupted, waited past CUDALAB_GPU_WAIT, or an
     * admission directory it cannot trust). NULL where nobody shares the device
     * or --shared-timing asked to time alongside. Called through MAGIC_TIMED. */
    int (*turn)(struct magic_ctx *ctx, bool take, double *waited_ms);
    bool shared;                    /* the device is shared: the document says how its runs were timed */
    double wait_ms;                 /* what this command's turns waited, apart from every time */
    error_info error;               /* why a wait for a turn ended without one (ename "" when none) */
    /* How the host's kernels share each GPU now (%device): an array of
     * {device, contexts, held, waiting_for_context, waiting_for_turn,
     * this_kernel}, a new reference; NULL where nothing is shared (no GPU, the CLI). */
    json_t *(*sharing)(void);
    /* Device memory for this command where the device is shared: waits, said
     * live, until what it needs fits beside what the others hold. 0: reserved;
     * 1: more than one command may ever hold (*most: that); 2: nothing to
     * reserve (the check against free memory applies); -1 with the error set
     * (interrupted, or no room within CUDALAB_GPU_WAIT).
     * NULL: no sharing. Called by magic_memory_fit. */
    int (*reserve)(struct magic_ctx *ctx, double bytes, double *most);
} magic_sharing;

/* What %assert and %recorded read of the session, where there is one (the kernel process). */
typedef struct magic_grading {
    const struct result_store *results; /* the session's results (%assert) */
    struct recording *recording;    /* the session's recorded GPU results (grade/recorded.h) */
} magic_grading;

/* A command's context, one part per concern. */
typedef struct magic_ctx {
    magic_sink sink;                /* where its output goes */
    struct lab_session *lab;        /* the session the command runs in: its parameters, student kernels,
                                     * run-time variants and compile cache (lab_session.h) */
    magic_grading grading;
    const cl_backend *backend;      /* worker-side: the backend that runs; NULL in the kernel process */
    magic_target dev;               /* worker-side: its device, and why this backend */
    magic_sharing share;
    int body_line;                  /* the cell line where a cell magic's body starts */
    bool counters;                  /* --counters for the point that runs (sweep_run sets it) */
    /* set by magic_error(); the caller turns it into a Jupyter error */
    error_info error;
    json_t *traceback;              /* extra plain lines, or NULL */
} magic_ctx;

void magic_stream(magic_ctx *ctx, const char *name, const char *text);
/* Says in the backend note that the command took a CPU default, WHAT as "--size 2^22 (2^24 on a GPU)":
 * what params_cpu_defaults did for the flags with a cpu_def, for a default a magic sets itself. */
void magic_cpu_default(magic_ctx *ctx, const char *what);
#define RESULT_ECHO_MAX 1024     /* bytes of a long string parameter that a result repeats */
/* Reports the command's result (doc and view stolen; a long input in
 * doc.params is cut to RESULT_ECHO_MAX bytes, its length and digest). */
void magic_result(magic_ctx *ctx, json_t *doc, json_t *view);
/* magic_result for a doc and view just built: 0, or a MemoryError (-1) when either is NULL (both
 * are stolen either way). */
int magic_result_built(magic_ctx *ctx, json_t *doc, json_t *view);
void magic_progress(magic_ctx *ctx, const char *display_id, json_t *doc, json_t *view, enum result_mode mode);
/* Cancellation: the worker's SIGINT handler (and the CLI's) sets the flag; long
 * loops (sweep points, repetitions, CPU analogues) poll it and stop with
 * magic_error(ctx, "KeyboardInterrupt", ...). A command that ignores it is
 * killed by the kernel after a short grace period, so polling is a courtesy that
 * keeps the worker (and its CUDA context) alive, not a requirement. */
bool magic_cancelled(void);
void magic_cancel(void);          /* async-signal-safe */
void magic_cancel_reset(void);

/* One timed backend call (a variant's warm-up and repetitions) with the
 * device to itself where it is shared: the turn is taken before and given
 * back after, so the host-side check runs outside it. An interrupt while
 * waiting fails the call with err saying so (sweep_run turns it into
 * KeyboardInterrupt). err: CL_ERR_LEN bytes. */
int magic_turn_take(magic_ctx *ctx, char *err);
int magic_turn_give(magic_ctx *ctx, int rc);
#define MAGIC_TIMED(ctx, err, call) (magic_turn_take((ctx), (err)) != 0 ? -1 : magic_turn_give((ctx), (call)))
/* The backend b's measured copy bandwidth (GB/s), measured in a turn of its
 * own like any timed run (the first call of a process copies gigabytes). 0,
 * or -1 with err set (or empty when b does not measure it). */
int magic_copy_bandwidth(magic_ctx *ctx, const cl_backend *b, double *gbs, char *err);

/* The error name of a backend's failure: RuntimeError on the CPU backend, CudaError on a GPU's. */
const char *magic_backend_ename(const cl_backend *b);
/* A device's theoretical peaks from its properties: FP32 GFLOP/s (one FMA, 2 FLOPs, per FP32
 * lane per cycle) and memory GB/s (DDR: two transfers per memory clock, bus width / 8 bytes
 * each); 0 where a factor is unknown. */
double magic_peak_fp32_gflops(const cl_device_props *p);
double magic_peak_bandwidth_gbs(const cl_device_props *p);
/* The properties of the device the command runs on (ctx->device of ctx->backend), zeroed first:
 * 0, or -1 with the backend's error in ctx ("device 0: ..."). */
int magic_device_props(magic_ctx *ctx, cl_device_props *out);

/* Records an error and returns -1, so run() can `return magic_error(...)`. */
int magic_error(magic_ctx *ctx, const char *ename, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
