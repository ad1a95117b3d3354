/* host_build.c — a student's kernel built into an object the CPU runner loads (see host_build.h).
 *
 * The translation unit: the prelude, the cell's source under `#line N "cell"`
 * with its __shared__ declarations rewritten (shared_rewrite.c), then an entry
 * that calls the kernel with the launch's arguments, derived from the family
 * contract's parameter types. The host compiler runs in a child process with
 * its diagnostics on a pipe; its errors come back with the cell's lines. The
 * object is never linked: the runner audits it (`cudalab-runner --check`,
 * the same code that loads it at each launch) before it enters the cache, and
 * what it refuses (a constructor, a call of a host function …) is the cell's
 * CompileError.
 */
#include "student/host_build.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cache_dir.h"
#include "base/clock.h"
#include "base/digest.h"
#include "base/text.h"
#include "student/host_tool.h"
#include "student/shared_rewrite.h"

#define CELL_FILE "cell"
#define ENTRY_FILE "cudalab-entry"
#define BUILD_FORMAT "5"            /* bump when what a build is changes */
#define COMPILE_LIMIT_S 120
#define RUNNER_FILE "cudalab-runner"

/* The host compiler's options: every access instrumented (-fsanitize=thread,
 * whose calls our runtime answers; libtsan is never linked), DWARF 4 (whose
 * line table names the #line file, "cell", for addr2line), fixed addresses,
 * and no jump threading: it copies the code after a branch into each path, so
 * that an access the lanes of a warp make together after an if would be two
 * instructions, which --counters' requests (cpu/simt/runtime/count.c) keep apart. */
static const char *const host_flags[] = {
    "-std=c++17", "-O2", "-gdwarf-4", "-w", "-fsanitize=thread", "--param", "tsan-instrument-func-entry-exit=0",
    "-fno-thread-jumps", "-fno-exceptions", "-fno-rtti", "-no-pie", "-fno-pie",
    /* what the runner's loader binds nothing for: distributions' hardening defaults (a stack
     * protector's guard, fortified libc calls, CET notes), unwind tables, guarded statics, commons */
    "-fno-stack-protector", "-U_FORTIFY_SOURCE", "-fcf-protection=none", "-fno-asynchronous-unwind-tables",
    "-fno-unwind-tables", "-fno-threadsafe-statics", "-fno-common",
    /* a memcpy of a bounded length (a row of 16 floats) would be inlined after the instrumentation, as
     * loads nothing checks or counts: a call, bound to the runner's checked copy (object.c) */
    "-fno-builtin-memcpy", "-fno-builtin-memmove", "-fno-builtin-memset",
};

/* ---- where things are ---- */

/* <dir of the executable>/../lib/cudalab/simt: the runner and its prelude. */
static int runtime_dir(char *buf, size_t len)
{
    char dir[PATH_MAX - 64];
    if (exe_dir(dir, sizeof dir) != 0 || snprintf(buf, len, "%s/../lib/cudalab/simt", dir) >= (int)len)
        return -1;
    char probe[PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s/" RUNNER_FILE, buf);
    return access(probe, R_OK) == 0 ? 0 : -1;
}

/* name as a path, or found on PATH, into buf. 0, or -1. */
static int find_program(const char *name, char *buf, size_t len)
{
    if (strchr(name, '/'))
        return snprintf(buf, len, "%s", name) < (int)len && access(buf, X_OK) == 0 ? 0 : -1;
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        if (n && snprintf(buf, len, "%.*s/%s", (int)n, p, name) < (int)len && access(buf, X_OK) == 0)
            return 0;
        p += n + (p[n] == ':');
    }
    return -1;
}

/* $CUDALAB_HOST_CXX, else g++ or c++. */
static int host_compiler(char *buf, size_t len)
{
    const char *env = getenv("CUDALAB_HOST_CXX");
    if (env && *env)
        return find_program(env, buf, len);
    return find_program("g++", buf, len) == 0 || find_program("c++", buf, len) == 0 ? 0 : -1;
}

/* ---- running a program ---- */

/* Runs the host compiler (argv) confined, with stdout and stderr into *log (the caller frees), a
 * compile checked for inline asm before it is compiled (student/host_tool.h). Returns the exit status
 * (1 with a note when asm was found), or -1 when it could not run or did not finish within
 * COMPILE_LIMIT_S ($CUDALAB_COMPILE_TIMEOUT), a note in the log saying why. */
static int run_tool(char *const argv[], char **log)
{
    return host_tool_run(argv, log, COMPILE_LIMIT_S, CELL_FILE);
}

/* The compiler's version line, once per process (part of the cache key). */
static const char *compiler_version(const char *cxx)
{
    static char version[256];
    static char of[PATH_MAX];
    if (strcmp(of, cxx) != 0) {
        char *log = NULL;
        char *argv[] = { (char *)cxx, "--version", NULL };
        run_tool(argv, &log);
        snprintf(version, sizeof version, "%.*s", log ? (int)strcspn(log, "\n") : 0, log ? log : "");
        snprintf(of, sizeof of, "%s", cxx);
        free(log);
    }
    return version;
}

/* ---- the translation unit ---- */

/* "float *, float *, int" → the entry the runner calls in each thread:
 *     __cudalab_entry(void *const *__cudalab_args) { __cudalab_place_file_shared(0);
 *         NAME(*(float * *)__cudalab_args[0], *(float * *)__cudalab_args[1], *(int *)__cudalab_args[2]); }
 * It follows the student's code: its names are keywords or reserved, and
 * #undef-ed first, so that no #define of the cell's reaches it. */
static char *entry_text(const char *name, const char *types)
{
    size_t cap = strlen(types) * 3 + strlen(name) + 512;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    int n = snprintf(s, cap, "\n#line 1 \"" ENTRY_FILE "\"\n#undef __cudalab_entry\n#undef __cudalab_args\n"
                     "#undef __cudalab_place_file_shared\nextern \"C\" __attribute__((__no_sanitize_thread__)) "
                     "void __cudalab_entry(void *const *__cudalab_args) { __cudalab_place_file_shared(0); %s(",
                     name);
    const char *p = types;
    for (int i = 0; *p; i++) {
        size_t len = strcspn(p, ",");
        const char *t = p;
        while (len && (*t == ' '))
            t++, len--;
        while (len && t[len - 1] == ' ')
            len--;
        n += snprintf(s + n, cap - (size_t)n, "%s*(%.*s *)__cudalab_args[%d]", i ? ", " : "", (int)len, t, i);
        p = t + len;
        while (*p == ' ' || *p == ',')
            p++;
    }
    snprintf(s + n, cap - (size_t)n, "); }\n");
    return s;
}

static char *unit_text(const student_source *src, const char *rewritten)
{
    char types[512];
    char *entry = student_param_types(src->contract->params, types, sizeof types) == 0
                      ? entry_text(src->name, types) : NULL;
    if (!entry)
        return NULL;
    size_t cap = strlen(rewritten) + strlen(entry) + 128;
    char *s = malloc(cap);
    if (s)
        snprintf(s, cap, "#include \"cudalab_simt.h\"\n#line %d \"" CELL_FILE "\"\n%s%s", src->first_line,
                 rewritten, entry);
    free(entry);
    return s;
}

/* ---- the compiler's words ---- */

/* The compiler's errors about the cell, as "line N: message" lines (each once, the first
 * cell_errors_max of them), and our notes (HOST_TOOL_NOTE). Nothing else is quoted: a line about
 * another file could hold what the compiler read there. */
static json_t *cell_errors(const char *log)
{
    enum { cell_errors_max = 30 };
    json_t *lines = json_array();
    bool elsewhere = false;         /* errors that are not about the cell's lines */
    int more = 0;
    for (const char *p = log; p && *p;) {
        size_t n = strcspn(p, "\n");
        const char *at = strstr(p, CELL_FILE ":");
        int line = 0, col = 0, used = 0;
        char kind[16] = "";
        json_t *said = NULL;
        if (strncmp(p, HOST_TOOL_NOTE, strlen(HOST_TOOL_NOTE)) == 0) {
            const char *text = p + strlen(HOST_TOOL_NOTE);
            json_array_append_new(lines, json_sprintf("%.*s", (int)(p + n - text), text));
        } else if (at && at < p + n && (at == p || at[-1] == '/') &&
                   sscanf(at, CELL_FILE ":%d:%d: %15[a-z ]:%n", &line, &col, kind, &used) >= 3 && used > 0) {
            const char *msg = at + used + (at[used] == ' ');
            if (strncmp(kind, "note", 4) != 0)
                said = json_sprintf("line %d: %.*s", line, (int)(p + n - msg), msg);
        } else if (at && at < p + n && at > p && at[-1] == ' ' && sscanf(at, CELL_FILE ":%d: %n", &line, &used) >= 1 &&
                   used > 0 && strncmp(at + used, "undefined reference to ", 23) == 0) {
            /* the linker, through the object's line table: a name the cell uses and nothing defines */
            const char *msg = at + used;
            said = json_sprintf("line %d: %.*s", line, (int)(p + n - msg), msg);
        } else {
            elsewhere |= n > 0;
        }
        bool seen = false;
        for (size_t i = 0; said && !seen && i < json_array_size(lines); i++)
            seen = json_equal(said, json_array_get(lines, (size_t)i));
        if (said && !seen && json_array_size(lines) < cell_errors_max)
            json_array_append(lines, said);
        else
            more += said && !seen;
        json_decref(said);
        p += n + (p[n] == '\n');
    }
    if (more)
        json_array_append_new(lines, json_sprintf("(and %d more)", more));
    if (json_array_size(lines) == 0 && log && *log)
        json_array_append_new(lines, json_string(elsewhere ? "the host compiler's errors are not about your "
                                                             "cell's lines (they are not shown)"
                                                           : "the host compiler gave no message about your cell"));
    return lines;
}

/* ---- the build ---- */

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void hash_file(const char *path, char out[SHA256_HEX_LEN + 1])
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0;
    if (f) {
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        buf = len > 0 ? malloc((size_t)len) : NULL;
        n = buf ? fread(buf, 1, (size_t)len, f) : 0;
        fclose(f);
    }
    sha256_hex(buf ? buf : "", n, out);
    free(buf);
}

/* The directory runners are kept in: the student cache's, else one under /tmp. */
static int cache_dir(char *buf, size_t len)
{
    if (student_cache_dir(buf, len) != 0)
        snprintf(buf, len, "/tmp/cudalab-runners-%u", (unsigned)getuid());
    return make_dirs(buf);
}

int host_build_runner(magic_ctx *ctx, const student_source *src, const student_options *o, host_build *out)
{
    memset(out, 0, sizeof *out);
    double t0 = monotonic_ms();
    char rt[PATH_MAX - 64], cxx[PATH_MAX], dir[PATH_MAX - 128];
    if (runtime_dir(rt, sizeof rt) != 0)
        return magic_error(ctx, "RuntimeError", "%s cannot run without a GPU: the CPU runner "
                           "(lib/cudalab/simt beside the cudalab binary) is missing: rebuild with make", src->name);
    if (host_compiler(cxx, sizeof cxx) != 0)
        return magic_error(ctx, "RuntimeError", "%s cannot run without a GPU: the CPU runner compiles your kernel "
                           "with a C++ compiler, and %s was not found (install g++: apt-get install g++, or set "
                           "CUDALAB_HOST_CXX to one)", src->name,
                           getenv("CUDALAB_HOST_CXX") && *getenv("CUDALAB_HOST_CXX") ? getenv("CUDALAB_HOST_CXX")
                                                                                      : "g++ (or c++)");
    shared_rewrite rw;
    char err[300];
    if (shared_rewrite_source(src->text, src->first_line, CELL_FILE, &rw, err, sizeof err) != 0)
        return magic_error(ctx, "CompileError", "%s: the CPU runner cannot read it: %s", src->name, err);
    out->one_process = rw.device_globals;
    char *unit = unit_text(src, rw.text);
    shared_rewrite_free(&rw);
    if (!unit)
        return magic_error(ctx, "MemoryError", "out of memory building %s for the CPU runner", src->name);

    /* the key: the unit, the options that reach it, the compiler, the runner (which audits and loads) */
    char prelude_hash[SHA256_HEX_LEN + 1], lib_hash[SHA256_HEX_LEN + 1], key[SHA256_HEX_LEN + 1];
    snprintf(out->runner, sizeof out->runner, "%s/" RUNNER_FILE, rt);
    char prelude[PATH_MAX];
    snprintf(prelude, sizeof prelude, "%s/cudalab_simt.h", rt);
    hash_file(out->runner, lib_hash);
    hash_file(prelude, prelude_hash);
    char *defines = json_dumps(o->defines ? o->defines : json_array(), JSON_COMPACT);
    size_t klen = strlen(unit) + 1024 + (defines ? strlen(defines) : 0);
    char *k = malloc(klen);
    if (k) {
        int n = snprintf(k, klen, "%s|%s|%d|%s|%s|%s|", BUILD_FORMAT, defines ? defines : "", o->fast_math,
                         compiler_version(cxx), lib_hash, prelude_hash);
        for (size_t i = 0; i < sizeof host_flags / sizeof host_flags[0]; i++)
            n += snprintf(k + n, klen - (size_t)n, "%s ", host_flags[i]);
        snprintf(k + n, klen - (size_t)n, "|%s", unit);
    }
    sha256_hex(k ? k : unit, k ? strlen(k) : strlen(unit), key);
    free(k);
    if (cache_dir(dir, sizeof dir) != 0) {
        free(defines);
        free(unit);
        return magic_error(ctx, "RuntimeError", "cannot make a directory for CPU runners (%s)", dir);
    }
    snprintf(out->path, sizeof out->path, "%s/cpu-%.40s.o", dir, key);
    if (file_exists(out->path)) {
        free(defines);
        free(unit);
        out->cached = true;
        out->ms = monotonic_ms() - t0;
        return 0;
    }

    /* compile: the unit as a file (its #line directives name the cell), then the runner's audit */
    char source[PATH_MAX + 32];
    snprintf(source, sizeof source, "%s.%d.cpp", out->path, (int)getpid());
    FILE *f = fopen(source, "w");
    if (!f || fputs(unit, f) < 0 || fclose(f) != 0) {
        free(defines);
        free(unit);
        return magic_error(ctx, "RuntimeError", "cannot write %s: %s", source, strerror(errno));
    }
    free(unit);
    char *argv[64 + 32];
    char inc[PATH_MAX + 4];
    snprintf(inc, sizeof inc, "-I%s", rt);
    int a = 0;
    argv[a++] = cxx;
    for (size_t i = 0; i < sizeof host_flags / sizeof host_flags[0]; i++)
        argv[a++] = (char *)host_flags[i];
    argv[a++] = inc;
    char defs[32][320];
    size_t i;
    json_t *d;
    json_array_foreach(o->defines, i, d) {
        if (i >= 32)
            break;
        snprintf(defs[i], sizeof defs[i], "-D%s", json_string_value(d));
        argv[a++] = defs[i];
    }
    free(defines);
    if (o->fast_math)
        argv[a++] = "-ffast-math";
    char object[PATH_MAX + 32];
    snprintf(object, sizeof object, "%s.%d.o", out->path, (int)getpid());
    argv[a++] = "-c";
    argv[a++] = "-x";
    argv[a++] = "c++";
    argv[a++] = source;
    argv[a++] = "-o";
    argv[a++] = object;
    argv[a] = NULL;
    char *log = NULL;
    int rc = run_tool(argv, &log);
    unlink(source);
    if (rc != 0) {
        unlink(object);
        json_t *lines = cell_errors(log);
        /* the tool's own word (inline asm, a limit met) says it best; else the compiler's, below */
        const char *note = log ? strstr(log, HOST_TOOL_NOTE) : NULL;
        while (note && note != log && note[-1] != '\n')
            note = strstr(note + 1, HOST_TOOL_NOTE);
        if (note) {
            note += strlen(HOST_TOOL_NOTE);
            magic_error(ctx, "CompileError", "%s cannot run on the CPU runner: %.*s", src->name,
                        (int)strcspn(note, "\n"), note);
        } else {
            magic_error(ctx, "CompileError", "%s compiles with NVRTC but not for the CPU runner (%s)", src->name,
                        rc < 0 ? "the compiler did not finish" : "the host compiler's words below");
        }
        json_decref(ctx->traceback);
        ctx->traceback = lines;
        free(log);
        return -1;
    }
    free(log);
    /* the runner's audit: what it would refuse to load, refused now, in the student's words */
    char *check[] = { out->runner, "--check", object, NULL };
    char *why = NULL;
    if (run_tool(check, &why) != 0) {
        unlink(object);
        const char *text = why && *why ? why : "what the runner cannot load";
        magic_error(ctx, "CompileError", "%s cannot run on the CPU runner: its compiled code has %.*s (nothing of a "
                    "kernel may run but the kernel, launched)", src->name, (int)strcspn(text, "\n"), text);
        free(why);
        return -1;
    }
    free(why);
    if (rename(object, out->path) != 0) {
        unlink(object);
        return magic_error(ctx, "RuntimeError", "cannot keep the CPU runner's build of %s: %s", src->name,
                           strerror(errno));
    }
    out->ms = monotonic_ms() - t0;
    return 0;
}
