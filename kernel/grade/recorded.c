/* recorded.c — a session's recorded GPU results (recorded.h): the file's
 * checks, its commands by key, what a CPU run is shown beside, and record
 * mode's writer. Runs in the kernel process; reads and writes small files
 * (RECORDED_MAX_BYTES at most; only regular ones are read), never a device.
 */
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/text.h"
#include "cudalab/version.h"
#include "grade/recorded.h"
#include "render/render.h"

struct recording {
    json_t *file;               /* the loaded or recording document, or NULL */
    json_t *by_key;             /* key -> its results array (borrowed from file) */
    bool writing;               /* record mode: file is being written to path */
    char path[PATH_MAX];        /* the file as opened (relative to the working directory) */
    result_store *shown;        /* the recorded documents shown so far; NULL until one is loaded */
    unsigned long run;          /* the run the last result belonged to */
    bool run_done;              /* that run's recorded results were attached (or written afresh) */
};

recording *recording_new(void)
{
    return calloc(1, sizeof(recording));
}

static void recording_clear(recording *r)
{
    json_decref(r->file);
    json_decref(r->by_key);
    results_free(r->shown);
    *r = (recording){ 0 };
}

void recording_free(recording *r)
{
    if (!r)
        return;
    recording_clear(r);
    free(r);
}

const result_store *recording_results(const recording *r)
{
    return r ? r->shown : NULL;
}

/* ---- the file's checks: a broken file is an error naming what is wrong, never a crash later ---- */

static int bad(error_info *err, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int bad(error_info *err, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *what = json_vsprintf(fmt, ap);
    va_end(ap);
    error_set(err, "ValueError", "%s does not hold recorded results of the current format: %s "
              "(make record writes it anew)", path, what ? json_string_value(what) : "?");
    json_decref(what);
    return -1;
}

static int need_string(const json_t *obj, const char *key, const char *path, error_info *err)
{
    if (!json_is_string(json_object_get(obj, key)))
        return bad(err, path, "'%s' is missing or not text", key);
    return 0;
}

/* One command's entry: {key: text, results: [{doc: object naming its magic | null, view: object}]}. */
static int check_command(const json_t *c, size_t i, const char *path, error_info *err)
{
    char where[64];
    snprintf(where, sizeof where, "commands[%zu]", i);
    if (!json_is_object(c) || !json_is_string(json_object_get(c, "key")))
        return bad(err, path, "%s is not an object with a 'key' text", where);
    const json_t *results = json_object_get(c, "results"), *res;
    if (!json_is_array(results))
        return bad(err, path, "%s has no 'results' list", where);
    size_t j;
    json_array_foreach(results, j, res) {
        const json_t *doc = json_object_get(res, "doc");
        snprintf(where, sizeof where, "commands[%zu].results[%zu]", i, j);
        if (!json_is_object(res) || !json_is_object(json_object_get(res, "view")))
            return bad(err, path, "%s has no 'view' object", where);
        if (!json_is_null(doc) && !(json_is_object(doc) && json_is_string(json_object_get(doc, "magic"))))
            return bad(err, path, "%s's 'doc' is neither null nor a result naming its magic", where);
    }
    return 0;
}

static int check_file(const json_t *f, const char *path, error_info *err)
{
    if (!json_is_object(f))
        return bad(err, path, "%s", "the top level is not an object");
    const json_t *format = json_object_get(f, "format"), *version = json_object_get(f, "version");
    if (!json_is_string(format) || strcmp(json_string_value(format), RECORDED_FORMAT) != 0)
        return bad(err, path, "'format' is not '%s'", RECORDED_FORMAT);
    if (!json_is_integer(version) || json_integer_value(version) != RECORDED_VERSION)
        return error_set(err, "ValueError", "%s is recorded results of format version %s, and this cudalab "
                         "(%s) reads version %d: make record writes it anew", path,
                         json_is_integer(version) ? "other than 1" : "(none)", CUDALAB_VERSION, RECORDED_VERSION);
    if (need_string(f, "notebook", path, err) || need_string(f, "date", path, err)
        || need_string(f, "cudalab_version", path, err))
        return -1;
    if (!json_is_string(json_object_get(json_object_get(f, "device"), "name")))
        return bad(err, path, "%s", "'device' has no 'name'");
    const json_t *commands = json_object_get(f, "commands"), *c;
    if (!json_is_array(commands))
        return bad(err, path, "%s", "'commands' is not a list");
    size_t i;
    json_array_foreach(commands, i, c)
        if (check_command(c, i, path, err) != 0)
            return -1;
    return 0;
}

/* key -> results of the file's commands (a later entry of the same key wins). */
static json_t *index_commands(const json_t *f)
{
    json_t *by_key = json_object(), *c;
    size_t i;
    json_array_foreach(json_object_get(f, "commands"), i, c)
        json_object_set(by_key, json_string_value(json_object_get(c, "key")), json_object_get(c, "results"));
    return by_key;
}

/* What a file that is not a regular one is, for the message that refuses it. */
static const char *file_kind(mode_t mode)
{
    return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO" : S_ISCHR(mode) ? "a character device"
         : S_ISBLK(mode) ? "a block device" : S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

/* The file's bytes (*n of them; a new buffer), read from a regular file of at
 * most RECORDED_MAX_BYTES: opened without following a link or waiting (a FIFO,
 * a device), checked with fstat before a byte is read, and read no further
 * than the size it had then. NULL with err set. */
static char *read_bounded(const char *path, size_t *n, error_info *err)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return error_set(err, errno == ENOENT ? "FileNotFoundError" : "ValueError", "%s: %s", path,
                         errno == ELOOP ? "a symbolic link; recorded results are read from a regular file only"
                                        : strerror(errno)), NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) != 0)
        error_set(err, "ValueError", "%s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        error_set(err, "ValueError", "%s is %s; recorded results are read from a regular file only", path,
                  file_kind(st.st_mode));
    else if (st.st_size > (off_t)RECORDED_MAX_BYTES)
        error_set(err, "ValueError", "%s is %lld bytes, more than recorded results may be (%u MiB)", path,
                  (long long)st.st_size, RECORDED_MAX_BYTES >> 20);
    else if (!(buf = malloc((size_t)st.st_size + 1)))
        error_set(err, "MemoryError", "out of memory");
    size_t room = buf ? (size_t)st.st_size + 1 : 0;    /* one byte more tells a file that grew */
    *n = 0;
    while (buf && *n < room) {
        ssize_t r = read(fd, buf + *n, room - *n);
        if (r == 0)
            break;
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || *n + (size_t)r == room) {
            if (r < 0)
                error_set(err, "ValueError", "%s: %s", path, strerror(errno));
            else
                error_set(err, "ValueError", "%s grew while it was read: run %%recorded again", path);
            free(buf);
            buf = NULL;
            break;
        }
        *n += (size_t)r;
    }
    close(fd);
    return buf;
}

static json_t *load_file(const char *path, error_info *err)
{
    size_t n;
    char *bytes = read_bounded(path, &n, err);
    if (!bytes)
        return NULL;
    json_error_t je;
    json_t *f = json_loadb(bytes, n, JSON_REJECT_DUPLICATES, &je);
    free(bytes);
    if (!f)
        return error_set(err, "ValueError", "%s is not valid JSON: line %d, column %d: %s", path, je.line,
                         je.column, je.text), NULL;
    if (check_file(f, path, err) != 0) {
        json_decref(f);
        return NULL;
    }
    return f;
}

/* ---- %recorded ---- */

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static bool name_ok(const char *name)
{
    if (!*name || *name == '.' || strlen(name) > 200)
        return false;
    for (const char *c = name; *c; c++)
        if (!(*c == '-' || *c == '_' || *c == '.' || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z')
              || (*c >= 'A' && *c <= 'Z')))
            return false;
    return true;
}

/* The working directory's notebooks (NAME.ipynb) and the nearest to name, into buf. The names are
 * copied out of the directory stream before suggest compares them: it keeps a pointer to the best. */
static void nearest_notebook(const char *name, char *buf, size_t len)
{
    char have[600] = "";
    size_t at = 0, i;
    json_t *names = json_array(), *n;
    DIR *d = opendir(".");
    struct dirent *e;
    while (d && names && (e = readdir(d)) != NULL) {
        size_t k = strlen(e->d_name);
        if (k > 6 && strcmp(e->d_name + k - 6, ".ipynb") == 0)
            json_array_append_new(names, json_stringn(e->d_name, k - 6));   /* NULL (skipped): not UTF-8 */
    }
    if (d)
        closedir(d);
    suggest s;
    suggest_init(&s, name);
    json_array_foreach(names, i, n) {
        const char *nb = json_string_value(n);
        suggest_add(&s, nb);
        if (at + strlen(nb) + 3 < sizeof have)
            at += (size_t)snprintf(have + at, sizeof have - at, "%s%s", at ? ", " : "", nb);
    }
    snprintf(buf, len, "; this folder's notebooks: %s%s%s%s", at ? have : "none",
             s.best ? " (did you mean " : "", s.best ? s.best : "", s.best ? "?)" : "");
    json_decref(names);
}

static const char *device_name(const json_t *f)
{
    return json_string_value(json_object_get(json_object_get(f, "device"), "name"));
}

/* "NVIDIA H100 80GB HBM3, 2026-11-25, cudalab 0.1.0" */
static void label(const json_t *f, char *buf, size_t len)
{
    const char *backend = json_string_value(json_object_get(json_object_get(f, "device"), "backend"));
    bool gpu = backend && strcmp(backend, "cuda") == 0;    /* else a test fixture, recorded with --allow-cpu */
    snprintf(buf, len, "%s%s, %s, cudalab %s", device_name(f), gpu ? "" : " (the CPU backend, not a GPU)",
             json_string_value(json_object_get(f, "date")), json_string_value(json_object_get(f, "cudalab_version")));
}

static int start_recording(recording *r, const char *name, const char *dir, json_t **view, error_info *err)
{
    time_t now = time(NULL);
    struct tm tm;
    char date[16], at[32];
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%d", &tm);
    strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
    recording_clear(r);
    snprintf(r->path, sizeof r->path, "%s/%s.json", dir, name);
    r->file = json_pack("{s:s, s:i, s:s, s:{s:s, s:n}, s:s, s:s, s:s, s:[]}", "format", RECORDED_FORMAT,
                        "version", RECORDED_VERSION, "notebook", name, "device", "name", "(not yet known)",
                        "backend", "date", date, "recorded_at", at, "cudalab_version", CUDALAB_VERSION,
                        "commands");
    r->by_key = json_object();
    r->writing = true;
    if (!r->file || !r->by_key)
        return error_set(err, "MemoryError", "out of memory");
    char text[PATH_MAX + 160];
    snprintf(text, sizeof text, "Recording this notebook's results into %s (" RECORDED_ENV " is set).", r->path);
    *view = view_new(NULL);
    view_add_note(*view, text);
    return 0;
}

/* ---- which GPU's recording: DIR/GPU/NAME.json, one folder per GPU that make record ran on ---- */

#define RECORDED_GPUS_MAX 16        /* GPU folders a notebook's recordings are chosen from */

typedef struct recorded_gpus {
    char gpu[RECORDED_GPUS_MAX][NAME_MAX + 1];  /* the folders holding NAME.json ("" for DIR/NAME.json itself) */
    char recorded_at[RECORDED_GPUS_MAX][32];
    int n;
} recorded_gpus;

/* The "recorded_at" of a recording, into buf ("" when the file cannot be read): a few hundred KB at most. */
static void recorded_at_of(const char *path, char *buf, size_t len)
{
    error_info ignored = { 0 };
    json_t *f = load_file(path, &ignored);
    snprintf(buf, len, "%s", f ? json_string_value(json_object_get(f, "recorded_at")) : "");
    json_decref(f);
}

/* Every recording of notebook name under dir: dir/name.json and dir/GPU/name.json, in name order. */
static void find_gpus(const char *dir, const char *name, recorded_gpus *g)
{
    char path[PATH_MAX];
    g->n = 0;
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    if (exists(path)) {
        g->gpu[0][0] = '\0';
        recorded_at_of(path, g->recorded_at[0], sizeof g->recorded_at[0]);
        g->n = 1;
    }
    struct dirent **list = NULL;
    int n = scandir(dir, &list, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        const char *d = list[i]->d_name;
        snprintf(path, sizeof path, "%s/%s/%s.json", dir, d, name);
        if (g->n < RECORDED_GPUS_MAX && name_ok(d) && exists(path)) {
            snprintf(g->gpu[g->n], sizeof g->gpu[g->n], "%s", d);
            recorded_at_of(path, g->recorded_at[g->n], sizeof g->recorded_at[g->n]);
            g->n++;
        }
        free(list[i]);
    }
    free(list);
}

/* The recording asked for: the folder named gpu (or the one whose name starts with it), else the
 * newest recording (a course shows its latest GPU unless told otherwise); -1 when gpu names none. */
static int pick_gpu(const recorded_gpus *g, const char *gpu)
{
    int best = -1;
    for (int i = 0; i < g->n; i++) {
        if (gpu && *gpu) {
            if (strcmp(g->gpu[i], gpu) == 0)
                return i;
            if (strncmp(g->gpu[i], gpu, strlen(gpu)) == 0)
                best = best == -1 ? i : -2;             /* -2: more than one starts so */
        } else if (best < 0 || strcmp(g->recorded_at[i], g->recorded_at[best]) > 0) {
            best = i;
        }
    }
    return best;
}

/* "h100-80gb-hbm3, h200" into buf: the GPUs a notebook has recordings of. */
static void list_gpus(const recorded_gpus *g, int except, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < g->n && at < len; i++)
        if (i != except && g->gpu[i][0])
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "", g->gpu[i]);
}

int recording_open(recording *r, const char *name, const char *dir, const char *gpu, json_t **view, error_info *err)
{
    *view = NULL;
    if (!name_ok(name))
        return error_set(err, "UsageError", "'%s' is not a notebook's name: give the name of the notebook "
                         "without .ipynb (letters, digits, '.', '_', '-'), as in %%recorded 03-matrix-multiplication",
                         name);
    const char *rec_dir = getenv(RECORDED_ENV), *gpu_env = getenv(RECORDED_GPU_ENV);
    bool gpu_given = gpu && *gpu;
    if (!gpu_given && gpu_env && *gpu_env)
        gpu = gpu_env;
    dir = dir ? dir : RECORDED_DIR;
    recorded_gpus g;
    find_gpus(dir, name, &g);
    char path[PATH_MAX], notebook[PATH_MAX], others[600];
    snprintf(notebook, sizeof notebook, "%s.ipynb", name);
    if (!exists(notebook) && g.n == 0 && !(rec_dir && *rec_dir)) {
        char hint[700];
        nearest_notebook(name, hint, sizeof hint);
        return error_set(err, "LookupError", "unknown notebook '%s': neither %s nor a recording of it in %s/GPU/ is "
                         "in the kernel's working directory (the notebook's folder)%s", name, notebook, dir, hint);
    }
    if (rec_dir && *rec_dir)
        return start_recording(r, name, rec_dir, view, err);
    int at = pick_gpu(&g, gpu);
    if (at < 0 && gpu_given) {
        list_gpus(&g, -1, others, sizeof others);
        return error_set(err, "LookupError", "--gpu %s: %s has %s recording of %s; recorded: %s", gpu, dir,
                         at == -2 ? "more than one GPU folder starting so, no single" : "no", name,
                         *others ? others : "none yet");
    }
    char text[PATH_MAX + 1400];
    if (at < 0 && g.n > 0)          /* RECORDED_GPU_ENV names a GPU this notebook was not recorded on */
        at = pick_gpu(&g, NULL);
    if (at < 0) {
        recording_clear(r);
        snprintf(text, sizeof text, "No recorded GPU results for this notebook yet (%s/GPU/%s.json): on a GPU "
                 "machine, make record writes them. Checks of GPU results (gpu.NAME in %%assert) are skipped here.",
                 dir, name);
        *view = view_new(NULL);
        view_add_note(*view, text);
        return 0;
    }
    if (g.gpu[at][0])
        snprintf(path, sizeof path, "%s/%s/%s.json", dir, g.gpu[at], name);
    else
        snprintf(path, sizeof path, "%s/%s.json", dir, name);
    json_t *f = load_file(path, err);
    if (!f)
        return -1;
    recording_clear(r);
    r->file = f;
    r->by_key = index_commands(f);
    r->shown = results_new();
    snprintf(r->path, sizeof r->path, "%s", path);
    if (!r->by_key || !r->shown) {
        recording_clear(r);
        return error_set(err, "MemoryError", "out of memory");
    }
    char lab[400], also[700] = "";
    label(f, lab, sizeof lab);
    list_gpus(&g, at, others, sizeof others);
    if (*others)
        snprintf(also, sizeof also, " Also recorded on: %s (%%recorded %s --gpu NAME shows one of them).", others,
                 name);
    snprintf(text, sizeof text, "Recorded GPU results: %s (%s, %zu commands). Each command run here on the "
             "CPU backend shows them beside its own; gpu.NAME in %%assert reads them (on a GPU, the live results).%s",
             lab, path, json_array_size(json_object_get(f, "commands")), also);
    *view = view_new(NULL);
    view_add_note(*view, text);
    return 0;
}

/* ---- a result on its way ---- */

static bool from_cpu(const json_t *doc)
{
    const char *b = json_string_value(json_object_get(doc, "backend"));
    return b && strcmp(b, "cpu") == 0;
}

/* Whether view already shows block (a deterministic table, such as a histogram's bins, or a note
 * reads the same on both devices: shown once). */
static bool shows(const json_t *view, const json_t *block)
{
    json_t *b;
    size_t i;
    json_array_foreach(json_object_get(view, "blocks"), i, b)
        if (json_equal(b, (json_t *)block))
            return true;
    return false;
}

/* Appends the recorded view's title and blocks to view, but skip (the table joined into view's, or
 * NULL) and, once joined, the blocks view already shows. */
static void add_view(json_t *view, const json_t *recorded, const json_t *skip)
{
    const char *title = json_string_value(json_object_get(recorded, "title"));
    if (title && !skip)
        view_add_text(view, title);
    json_t *blocks = json_object_get(view, "blocks"), *b;
    size_t i;
    json_array_foreach(json_object_get(recorded, "blocks"), i, b)
        if (b != skip && !(skip && shows(view, b)))
            json_array_append_new(blocks, json_deep_copy(b));
}

/* The recorded device's name as a column's header says it: "H200", not "NVIDIA H200". */
static void short_name(const char *name, char *buf, size_t len)
{
    name = name ? name : "GPU";
    snprintf(buf, len, "%s", strncmp(name, "NVIDIA ", 7) == 0 ? name + 7 : name);
}

/* Whether the recorded results hold more to show than view does (joined: the table joined into it). */
static bool more_than(const json_t *view, const json_t *results, const json_t *joined)
{
    json_t *b;
    size_t i;
    if (json_array_size(results) > 1)
        return true;
    json_array_foreach(json_object_get(json_object_get(json_array_get(results, 0), "view"), "blocks"), i, b)
        if (b != joined && !(joined && shows(view, b)))
            return true;
    return false;
}

/* Marks, among the recorded documents shown, that the newest %magic (of cell) had no recorded result:
 * gpu.magic then reads nothing, rather than an earlier command's figures (expr_select.c). */
static void not_recorded(recording *r, const char *magic, int cell)
{
    json_t *marker = json_pack("{s:s?, s:b}", "magic", magic, RECORDED_MISSING_KEY, 1);
    results_record(r->shown, marker, cell);
    json_decref(marker);
}

static void attach(recording *r, const command *cmd, int cell, json_t *doc, json_t *view)
{
    const json_t *results = cmd->key ? json_object_get(r->by_key, cmd->key) : NULL, *res;
    char lab[400], text[PATH_MAX + 1000];
    label(r->file, lab, sizeof lab);
    json_t *docs = json_array();
    if (!results) {
        snprintf(text, sizeof text, "No recorded GPU result for this command in %s (%s): make record on a GPU "
                 "machine records it.", r->path, lab);
        view_add_note(view, text);
        not_recorded(r, json_string_value(json_object_get(doc, "magic")), cell);
    } else {
        /* one comparison: the recorded table joined into this machine's, then what else was recorded */
        char there[128], joined_note[PATH_MAX + 1000];
        const json_t *table = recorded_runs_table(json_object_get(json_array_get(results, 0), "view"));
        short_name(device_name(r->file), there, sizeof there);
        snprintf(joined_note, sizeof joined_note, "Recorded on %s (%s), in one table with this CPU's runs: rows "
                 "matched by variant and parameters, each measured column once for the CPU and once for the %s.",
                 lab, r->path, there);
        if (!recorded_join(view, table, "CPU", there, joined_note))
            table = NULL;
        snprintf(text, sizeof text, table ? "Also recorded on %s:" : "Recorded on %s (%s):", lab, r->path);
        if (more_than(view, results, table))
            view_add_note(view, text);
        size_t i;
        json_array_foreach(results, i, res) {
            const json_t *d = json_object_get(res, "doc");
            add_view(view, json_object_get(res, "view"), i == 0 ? table : NULL);
            if (json_is_object(d)) {
                json_array_append(docs, (json_t *)d);
                results_record(r->shown, d, cell);
            }
        }
    }
    json_object_set_new(doc, "recorded", json_pack("{s:s, s:O, s:O, s:O, s:o}", "file", r->path,
                        "device", json_object_get(r->file, "device"), "date", json_object_get(r->file, "date"),
                        "cudalab_version", json_object_get(r->file, "cudalab_version"), "results", docs));
}

/* ---- record mode ---- */

/* The device a result ran on: its "device", or the first of its "devices". */
static const json_t *doc_device(const json_t *doc)
{
    const json_t *d = json_object_get(doc, "device");
    if (!json_is_string(json_object_get(d, "name")))
        d = json_array_get(json_object_get(doc, "devices"), 0);
    return json_is_string(json_object_get(d, "name")) ? d : NULL;
}

/* The whole file, replaced at once: a reader never sees half of it. */
static void write_file(const recording *r)
{
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", r->path);
    if (json_dump_file(r->file, tmp, JSON_INDENT(1) | JSON_REAL_PRECISION(17)) != 0 || rename(tmp, r->path) != 0)
        klog("record mode: cannot write %s: %s", r->path, strerror(errno));
}

static void record(recording *r, const command *cmd, json_t *doc, json_t *view)
{
    json_t *results = json_object_get(r->by_key, cmd->key);
    if (!results || !r->run_done) {         /* a new run of the command: its results start afresh */
        json_t *fresh = json_array();
        json_object_set_new(r->by_key, cmd->key, fresh);
        json_t *commands = json_object_get(r->file, "commands"), *same = NULL, *c;
        size_t i;
        json_array_foreach(commands, i, c)
            if (!same && strcmp(json_string_value(json_object_get(c, "key")), cmd->key) == 0)
                same = c;
        if (same)
            json_object_set(same, "results", fresh);
        else
            json_array_append_new(commands, json_pack("{s:s, s:O}", "key", cmd->key, "results", fresh));
        results = fresh;
        r->run_done = true;
    }
    json_array_append_new(results, json_pack("{s:O?, s:O}", "doc", doc, "view", view));
    const json_t *device = doc ? doc_device(doc) : NULL;
    if (device && json_is_string(json_object_get(doc, "backend"))) {
        json_t *d = json_deep_copy(device);
        json_object_set(d, "backend", json_object_get(doc, "backend"));
        json_object_set_new(r->file, "device", d);
    }
    write_file(r);
}

void recording_result(recording *r, const command *cmd, unsigned long run, int cell, json_t *doc, json_t *view,
                      bool final)
{
    if (!r || !r->file || !cmd || !cmd->key || !final || !view)
        return;
    if (run != r->run) {
        r->run = run;
        r->run_done = false;
    }
    if (r->writing) {
        record(r, cmd, doc, view);
    } else if (doc && !r->run_done && from_cpu(doc)) {
        r->run_done = true;
        attach(r, cmd, cell, doc, view);
    }
}

bool recording_is_stand_in(const json_t *doc)
{
    return from_cpu(doc) && json_is_true(json_object_get(doc, MAGIC_GPU_ONLY_KEY));
}

bool recording_stand_in(recording *r, const command *cmd, unsigned long run, int cell, json_t *doc, json_t *view,
                        char *text, size_t len)
{
    const char *name = cmd && cmd->magic ? cmd->magic->name : "?";
    if (!r || !r->file || r->writing) {
        snprintf(text, len, "%%%s --gpu-only runs only on a GPU: not run here (the CPU backend), and %s.\n", name,
                 r && r->writing ? "record mode records GPU results only" : "no recorded GPU results are loaded "
                 "(%recorded NAME loads them)");
        return false;
    }
    if (!cmd->key || !json_object_get(r->by_key, cmd->key)) {
        not_recorded(r, name, cell);
        snprintf(text, len, "%%%s --gpu-only runs only on a GPU: not run here (the CPU backend), and %s has no "
                 "recorded GPU result of this command (make record on a GPU machine records it).\n", name, r->path);
        return false;
    }
    r->run = run;               /* a stand-in is its run's one result */
    r->run_done = true;
    attach(r, cmd, cell, doc, view);
    return true;
}
