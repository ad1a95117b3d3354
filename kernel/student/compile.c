/* compile.c — a student's kernel to machine code (see compile.h): the
 * program NVRTC sees, its options, the log translated; the cache of builds is
 * build_cache.c. */
#include "student/compile.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/text.h"
#include "base/utf8.h"
#include "student/build_cache.h"
#include "student/nvrtc.h"
#include "student/source_check.h"

#define CELL_FILE "cell"            /* the student's source in diagnostics */
#define OURS_FILE "cudalab"         /* the lines we add after it */
#define SIGNATURE_TAG "cudalab-signature"

/* ---- the program ---- */

/* The source, then a compile-time check that the kernel's parameter types
 * are the contract's (const dropped: an input may be written without it).
 * The check follows the student's code, so every name it uses is a keyword
 * or reserved (__cudalab_…) and #undef-ed first: a `#define F 16` or
 * `#define value 1` in the cell cannot reach it. */
static char *program_text(const student_source *s)
{
    static const char trailer[] =
        "\n#line 1 \"" OURS_FILE "\"\n"
        "#undef __cudalab_same\n#undef __cudalab_in\n#undef __cudalab_sig\n#undef __cudalab_A\n"
        "#undef __cudalab_B\n#undef __cudalab_T\n#undef __cudalab_F\n#undef __cudalab_P\n"
        "#undef __cudalab_value\n#undef __cudalab_type\n#undef __cudalab_ok\n"
        "template <class __cudalab_A, class __cudalab_B> struct __cudalab_same\n"
        "{ static const bool __cudalab_value = false; };\n"
        "template <class __cudalab_A> struct __cudalab_same<__cudalab_A, __cudalab_A>\n"
        "{ static const bool __cudalab_value = true; };\n"
        "template <class __cudalab_T> struct __cudalab_in { typedef __cudalab_T __cudalab_type; };\n"
        "template <class __cudalab_T> struct __cudalab_in<const __cudalab_T *>\n"
        "{ typedef __cudalab_T *__cudalab_type; };\n"
        "template <class __cudalab_F> struct __cudalab_sig { static const bool __cudalab_ok = false; };\n"
        "template <class... __cudalab_P> struct __cudalab_sig<void(__cudalab_P...)> {\n"
        "    static const bool __cudalab_ok = __cudalab_same<void(typename __cudalab_in<__cudalab_P>::__cudalab_type...),\n"
        "                                                    void(%s)>::__cudalab_value; };\n"
        "static_assert(__cudalab_sig<decltype(%s)>::__cudalab_ok, \"" SIGNATURE_TAG "\");\n";
    char types[512];
    if (student_param_types(s->contract->params, types, sizeof types) != 0)
        return NULL;
    size_t n = strlen(s->text) + strlen(trailer) + strlen(types) + strlen(s->name) + 64;
    char *p = malloc(n);
    if (!p)
        return NULL;
    int at = snprintf(p, n, "#line %d \"" CELL_FILE "\"\n%s", s->first_line, s->text);
    snprintf(p + at, n - (size_t)at, trailer, types, s->name);
    return p;
}

/* The CUDA toolkit's include directory: $CUDA_HOME/include or /usr/local/cuda/include. */
static int toolkit_include(char *buf, size_t len)
{
    const char *home = getenv("CUDA_HOME");
    const char *dirs[] = { home && *home ? home : NULL, "/usr/local/cuda" };
    for (size_t i = 0; i < 2; i++) {
        char probe[700];
        if (!dirs[i])
            continue;
        snprintf(probe, sizeof probe, "%s/include/cuda_fp16.h", dirs[i]);
        if (access(probe, R_OK) == 0)
            return snprintf(buf, len, "%s/include", dirs[i]) < (int)len ? 0 : -1;
    }
    return -1;
}

/* NVRTC's options for the student's: -D, --maxrregcount, -Xptxas -O<n>, --use_fast_math. */
static json_t *option_list(const student_options *o, int cc)
{
    /* --no-cache: a build NVRTC serves from its own cache skips ptxas, and with
     * it the -v report of registers and shared memory; ours caches instead */
    json_t *opts = json_pack("[s, s, s, s, s, s]", "-std=c++17", "-lineinfo", "-Xptxas", "-v", "--no-cache", "");
    json_array_set_new(opts, 5, json_sprintf("-arch=sm_%d", cc));
    size_t i;
    json_t *d;
    json_array_foreach(o->defines, i, d)
        json_array_append_new(opts, json_sprintf("-D%s", json_string_value(d)));
    if (o->maxrregcount > 0)
        json_array_append_new(opts, json_sprintf("-maxrregcount=%d", o->maxrregcount));
    if (o->opt_level >= 0) {
        json_array_append_new(opts, json_string("-Xptxas"));
        json_array_append_new(opts, json_sprintf("-O%d", o->opt_level));
    }
    if (o->fast_math)
        json_array_append_new(opts, json_string("-use_fast_math"));
    /* the toolkit's device headers (cuda_fp16.h, cooperative_groups.h), where they are */
    char inc[600];
    if (toolkit_include(inc, sizeof inc) == 0)
        json_array_append_new(opts, json_sprintf("-I%s", inc));
    return opts;
}

/* ---- the log ---- */

/* A name in a ptxas line: the kernel's own by its name, others demangled. */
static void say_name(const char *mangled, const student_source *src, const char *lowered, char *buf, size_t len)
{
    char *d = NULL;
    if (lowered && strcmp(mangled, lowered) == 0)
        snprintf(buf, len, "%s", src->name);
    else if ((d = nvrtc_demangle(mangled)))
        snprintf(buf, len, "%s", d);
    else
        snprintf(buf, len, "%s", mangled);
    free(d);
}

/* Every _Z… word of a line demangled. */
static json_t *demangled_line(const char *line, const student_source *src, const char *lowered)
{
    char out[1024];
    size_t used = 0;
    const char *p = line;
    while (*p && used + 1 < sizeof out) {
        if (p[0] == '_' && p[1] == 'Z' && (p == line || !(isalnum((unsigned char)p[-1]) || p[-1] == '_'))) {
            const char *e = p;
            while (isalnum((unsigned char)*e) || *e == '_')
                e++;
            char word[256], nice[256];
            snprintf(word, sizeof word, "%.*s", (int)(e - p), p);
            say_name(word, src, lowered, nice, sizeof nice);
            used += (size_t)snprintf(out + used, sizeof out - used, "%s", nice);
            p = e;
        } else {
            out[used++] = *p++;
        }
    }
    out[used < sizeof out ? used : sizeof out - 1] = '\0';
    utf8_trim(out);
    return json_string(out);
}

static int number_after(const char *line, const char *word)
{
    const char *at = strstr(line, word);
    if (!at)
        return -1;
    while (at > line && (at[-1] == ' '))
        at--;
    while (at > line && isdigit((unsigned char)at[-1]))
        at--;
    return isdigit((unsigned char)*at) ? atoi(at) : -1;
}

/* ptxas -v: "Compiling entry function '_Z…' for 'sm_90'", "Function properties
 * for _Z…", "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
 * "Used 32 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]". */
static void ptxas_line(const char *line, const char *lowered, char *current, size_t len, student_resources *res)
{
    const char *q;
    if ((q = strstr(line, "Compiling entry function '")) || (q = strstr(line, "Function properties for "))) {
        q = strchr(q, '\'') ? strchr(q, '\'') + 1 : q + strlen("Function properties for ");
        size_t n = strcspn(q, "' \n");
        snprintf(current, len, "%.*s", (int)n, q);
        return;
    }
    if (!lowered || strcmp(current, lowered) != 0)
        return;
    int v;
    if ((v = number_after(line, "bytes stack frame")) >= 0)
        res->stack = v;
    if ((v = number_after(line, "bytes spill stores")) >= 0)
        res->spill_stores = v;
    if ((v = number_after(line, "bytes spill loads")) >= 0)
        res->spill_loads = v;
    if ((v = number_after(line, "registers")) >= 0) {
        res->registers = v;
        res->known = true;
    }
    if ((v = number_after(line, "barriers")) >= 0)
        res->barriers = v;
    if ((v = number_after(line, "bytes smem")) >= 0)
        res->static_smem = v;
}

/* "cell(12): error #20-D: text" -> line 12, "error", "text"; 0 when it is not a diagnostic of file. */
static int diagnostic(const char *line, const char *file, int *lineno, char *kind, size_t klen, const char **text)
{
    size_t fl = strlen(file);
    if (strncmp(line, file, fl) != 0 || line[fl] != '(')
        return 0;
    char *end;
    long n = strtol(line + fl + 1, &end, 10);
    if (end[0] != ')' || end[1] != ':' || end[2] != ' ')
        return 0;
    const char *k = end + 3;
    size_t kl = strcspn(k, " :");
    snprintf(kind, klen, "%.*s", (int)kl, k);
    const char *colon = strstr(k, ": ");
    *text = colon ? colon + 2 : k + kl;
    *lineno = (int)n;
    return 1;
}

/* One diagnostic of our trailer, in the student's terms. */
static json_t *ours(const char *text, const student_source *src)
{
    if (strstr(text, SIGNATURE_TAG))
        return json_sprintf("error: %%%s runs __global__ void %s(%s); the parameters of %s do not match "
                            "(%%help kernel shows every family's)", src->magic, src->name,
                            src->contract->params, src->name);
    if (strstr(text, "is undefined"))
        return json_sprintf("error: the cell defines no kernel named %s (--name says which "
                            "__global__ function to run)", src->name);
    return NULL;
}

int student_translate_log(const char *log, const student_source *src, const char *lowered,
                          json_t *errors, json_t *warnings, student_resources *res)
{
    int nerr = 0;
    bool undefined = false;         /* the kernel does not exist: its signature cannot match either */
    json_t *into = NULL;            /* where the echo lines of the last diagnostic go */
    char current[256] = "";
    const char *p = log ? log : "";
    while (*p) {
        size_t n = strcspn(p, "\n");
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line - 1 ? n : sizeof line - 1), p);
        p += n + (p[n] == '\n');
        int lineno;
        char kind[32];
        const char *text;
        if (diagnostic(line, CELL_FILE, &lineno, kind, sizeof kind, &text)) {
            bool err = strcmp(kind, "error") == 0 || strcmp(kind, "catastrophic") == 0;
            into = err ? errors : warnings;
            nerr += err;
            json_array_append_new(into, json_sprintf("line %d: %s: %s", lineno, err ? "error" : kind, text));
        } else if (diagnostic(line, OURS_FILE, &lineno, kind, sizeof kind, &text)) {
            json_t *said = undefined && strstr(text, SIGNATURE_TAG) ? NULL : ours(text, src);
            undefined |= strstr(text, "is undefined") != NULL;
            into = NULL;            /* our own lines are not the student's to read */
            if (said && strcmp(kind, "error") == 0) {
                nerr++;
                json_array_append_new(errors, said);
            } else {
                json_decref(said);
            }
        } else if (strncmp(line, "__nv_name_map", 13) == 0) {
            into = NULL;
            if (strstr(line, "non-__global__")) {
                nerr++;
                json_array_append_new(errors, json_sprintf("error: %s is not a __global__ function: a kernel "
                                                           "is declared __global__ void %s(...)", src->name,
                                                           src->name));
            }
        } else if (strncmp(line, "ptxas", 5) == 0) {
            into = NULL;
            const char *what = line + 5 + strspn(line + 5, " ");
            if (strncmp(what, "warning", 7) == 0 || strncmp(what, "error", 5) == 0 ||
                strncmp(what, "fatal", 5) == 0) {
                bool err = what[0] != 'w';
                nerr += err;
                json_t *l = demangled_line(line, src, lowered);
                json_array_append_new(err ? errors : warnings, l);
            } else {
                ptxas_line(line, lowered, current, sizeof current, res);
            }
        } else if (line[0] == ' ') {
            if (into)               /* the student's source line and its caret; ours are dropped */
                json_array_append_new(into, json_sprintf("  %s", line));
        } else if (line[0] == '\0' || strstr(line, "detected in the compilation of") ||
                   strcmp(line, "Compilation terminated.") == 0 ||
                   strncmp(line, "Remark: The warnings can be suppressed", 38) == 0) {
            into = line[0] ? NULL : into;
        } else {
            into = NULL;
            json_array_append_new(warnings, demangled_line(line, src, lowered));
        }
    }
    return nerr;
}

/* ---- compiling ---- */

static int compile_fresh(magic_ctx *ctx, const student_source *src, const char *program, student_build *out)
{
    size_t n = json_array_size(out->options);
    const char **argv = calloc(n + 1, sizeof *argv);
    char name_expr[160], err[600] = "";
    snprintf(name_expr, sizeof name_expr, "&%s", src->name);
    for (size_t i = 0; argv && i < n; i++)
        argv[i] = json_string_value(json_array_get(out->options, i));
    nvrtc_job job = { program, CELL_FILE, argv, (int)n, name_expr };
    nvrtc_output o;
    int rc = argv ? nvrtc_compile(&job, &o, err, sizeof err) : fail_into(err, sizeof err, "out of memory");
    free(argv);
    if (rc != 0)
        return magic_error(ctx, "RuntimeError", "%s cannot be compiled here: %s", src->name, err);
    if (getenv("CUDALAB_DEBUG"))
        klog("nvrtc log of %s:\n%s", src->name, o.log);
    json_t *errors = json_array();
    student_resources res = {0};
    int nerr = student_translate_log(o.log, src, o.lowered, errors, out->warnings, &res);
    if (!o.compiled || nerr > 0) {
        if (json_array_size(errors) == 0)   /* NVRTC failed without a line we understood: its own words */
            json_array_append_new(errors, json_string(o.log[0] ? o.log : "the compiler gave no reason"));
        magic_error(ctx, "CompileError", "%s does not compile (%d error%s, %s)", src->name,
                    nerr ? nerr : 1, nerr == 1 || nerr == 0 ? "" : "s", out->arch);
        json_array_extend(errors, out->warnings);
        ctx->traceback = errors;
        nvrtc_output_free(&o);
        return -1;
    }
    json_decref(errors);
    out->cubin = o.cubin;
    out->cubin_bytes = o.cubin_bytes;
    out->lowered = o.lowered;
    out->res = res;
    o.cubin = NULL;
    o.lowered = NULL;
    nvrtc_output_free(&o);
    return 0;
}

int student_compile(magic_ctx *ctx, const student_source *src, const student_options *o, int cc,
                    student_build *out)
{
    memset(out, 0, sizeof *out);
    double t0 = monotonic_ms();
    /* before either compiler sees the cell: NVRTC and the host compiler read the files its directives
     * name, and quote them in their diagnostics */
    source_refusal refusal;
    if (source_check_cell(src->text, src->first_line, &refusal) != 0)
        return magic_error(ctx, "CompileError", "%s is not compiled: line %d: %s", src->name, refusal.line,
                           refusal.reason);
    char err[600];
    if (nvrtc_load(err, sizeof err) != 0)
        return magic_error(ctx, "RuntimeError", "%s cannot be compiled here: %s", src->name, err);
    snprintf(out->arch, sizeof out->arch, "sm_%d", cc);
    int archs[64];
    int n = nvrtc_archs(archs, 64);
    bool known = n == 0;            /* an NVRTC that cannot say is taken at its word later */
    for (int i = 0; i < n; i++)
        known |= archs[i] == cc;
    if (!known)
        return magic_error(ctx, "RuntimeError", "%s cannot be compiled for this GPU: NVRTC %s knows sm_%d to "
                           "sm_%d, not sm_%d (a newer CUDA toolkit has it)", src->name, nvrtc_version(), archs[0],
                           archs[n - 1], cc);
    char *program = program_text(src);
    out->options = option_list(o, cc);
    if (!program || !out->options) {
        free(program);
        student_build_free(out);
        return magic_error(ctx, "MemoryError", "out of memory compiling %s", src->name);
    }
    build_cache_key(program, out->options, out->key);
    int rc = 0;
    bool in_memory = build_cache_memory_get(ctx->lab, out) == 0;
    if (in_memory || build_cache_disk_get(out) == 0) {
        out->cached = true;
    } else {
        out->warnings = json_array();
        rc = compile_fresh(ctx, src, program, out);
        if (rc == 0)
            build_cache_disk_put(out);
    }
    if (rc == 0 && !in_memory)
        build_cache_memory_put(ctx->lab, out);
    free(program);
    out->ms = monotonic_ms() - t0;
    if (rc != 0)
        student_build_free(out);
    return rc;
}

void student_build_free(student_build *b)
{
    free(b->cubin);
    free(b->lowered);
    json_decref(b->warnings);
    json_decref(b->options);
    memset(b, 0, sizeof *b);
}
