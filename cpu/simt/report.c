/* report.c — the CPU runner's findings in a student's words: which thread of
 * which block, at which line of the cell, touched which element (decoded as
 * the family names its arrays: C[4][7], bins[3], As[0][15]), and what to try.
 *
 * The runner reports code addresses and where it loaded the student's object's
 * code sections; addr2line (binutils, which the host compiler brings) turns
 * an address in one of them, as an offset in that section of the object, into
 * a cell line. An
 * address inside the runtime (a check, a barrier) is not the student's line:
 * the runner's record of the thread's last access stands in for it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "simt_launch.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cudalab/backend.h"

#define MAX_PCS (2 * CL_SIMT_NKINDS > CL_SIMT_MAX_SITES + 2 ? 2 * CL_SIMT_NKINDS : CL_SIMT_MAX_SITES + 2)
#define CELL_FILE "cell"        /* the file name the student's source carries (#line) */

/* ---- addresses to lines ---- */

typedef struct line_map {
    uint64_t pc[MAX_PCS];
    int line[MAX_PCS];
    int n;
} line_map;

static void want_pc(line_map *m, uint64_t pc)
{
    if (!pc || m->n >= MAX_PCS)
        return;
    for (int i = 0; i < m->n; i++)
        if (m->pc[i] == pc)
            return;
    m->pc[m->n] = pc;
    m->line[m->n++] = 0;
}

/* The lines of the addresses in one code section of the object: one addr2line, each address as
 * an offset in that section (-j); lines of files other than the cell stay 0. */
static void resolve_section(line_map *m, const simt_code *code, int sec)
{
    uint64_t lo = code->sections[sec].addr, hi = lo + code->sections[sec].size;
    int idx[MAX_PCS], n = 0;
    for (int i = 0; i < m->n; i++)
        if (m->pc[i] - 1 >= lo && m->pc[i] - 1 < hi)
            idx[n++] = i;
    if (!n)
        return;
    int out[2];
    if (pipe(out) != 0)
        return;
    pid_t p = fork();
    if (p == 0) {
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        char *argv[MAX_PCS + 10];
        char addrs[MAX_PCS][24];
        int a = 0;
        argv[a++] = "addr2line";
        argv[a++] = "-a";           /* each address first, then its frames: */
        argv[a++] = "-i";           /* an atomic inlined from the prelude still has the cell's line */
        argv[a++] = "-j";
        argv[a++] = (char *)code->sections[sec].name;
        argv[a++] = "-e";
        argv[a++] = (char *)code->object;
        for (int i = 0; i < n; i++) {
            /* the call's own line: the address just before the return address */
            snprintf(addrs[i], sizeof addrs[i], "%#" PRIx64, m->pc[idx[i]] - 1 - lo);
            argv[a++] = addrs[i];
        }
        argv[a] = NULL;
        execvp("addr2line", argv);
        _exit(127);
    }
    close(out[1]);
    FILE *f = p > 0 ? fdopen(out[0], "r") : NULL;
    char buf[1024];
    int i = -1;
    while (f && fgets(buf, sizeof buf, f)) {
        if (buf[0] == '0' && buf[1] == 'x') {
            i++;                    /* the next address */
            continue;
        }
        /* "DIR/cell:17 (discriminator 3)": the innermost frame in the cell wins */
        char *colon = strrchr(buf, ':');
        if (i < 0 || i >= n || m->line[idx[i]] || !colon)
            continue;
        *colon = '\0';
        const char *base = strrchr(buf, '/') ? strrchr(buf, '/') + 1 : buf;
        if (strcmp(base, CELL_FILE) == 0)
            m->line[idx[i]] = atoi(colon + 1);
    }
    if (f)
        fclose(f);
    else
        close(out[0]);
    if (p > 0)
        waitpid(p, NULL, 0);
}

static void resolve(line_map *m, const simt_code *code)
{
    for (int s = 0; code && code->object && s < code->nsections; s++)
        resolve_section(m, code, s);
}

static int line_of(const line_map *m, uint64_t pc)
{
    for (int i = 0; i < m->n; i++)
        if (m->pc[i] == pc)
            return m->line[i];
    return 0;
}

void simt_lines(const simt_code *code, const uint64_t *pcs, int n, int *lines)
{
    line_map m = { .n = 0 };
    for (int i = 0; i < n; i++)
        want_pc(&m, pcs[i]);
    resolve(&m, code);
    for (int i = 0; i < n; i++)
        lines[i] = pcs[i] ? line_of(&m, pcs[i]) : 0;
}

/* ---- words ---- */

typedef struct out {
    char *buf;
    size_t len, used;
} out;

static void say(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(out *o, const char *fmt, ...)
{
    if (o->used + 1 >= o->len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->used = o->used + (size_t)n < o->len ? o->used + (size_t)n : o->len - 1;
}

/* (3,0) or 3, as many dimensions as the launch has. */
static void dims(out *o, const uint32_t v[3], const uint32_t shape[3])
{
    if (shape[2] > 1)
        say(o, "(%u,%u,%u)", v[0], v[1], v[2]);
    else if (shape[1] > 1)
        say(o, "(%u,%u)", v[0], v[1]);
    else
        say(o, "%u", v[0]);
}

static void thread_at(out *o, const cl_simt_launch *l, const cl_simt_where *w)
{
    say(o, "thread ");
    dims(o, w->thread, l->block);
    say(o, " of block ");
    dims(o, w->block, l->grid);
}

static bool several(const cl_simt_where *w)
{
    return w->block[0] == UINT32_MAX;
}

/* Whether a comes before b in the grid (blocks, then threads, z most significant). */
static bool earlier(const cl_simt_where *a, const cl_simt_where *b)
{
    for (int i = 2; i >= 0; i--)
        if (a->block[i] != b->block[i])
            return a->block[i] < b->block[i];
    for (int i = 2; i >= 0; i--)
        if (a->thread[i] != b->thread[i])
            return a->thread[i] < b->thread[i];
    return false;
}

static void at_line(out *o, int line)
{
    if (line > 0)
        say(o, " at line %d", line);
}

static const char *verb(uint32_t access)
{
    return access & CL_SIMT_ATOMIC ? "updated atomically" : access & CL_SIMT_WRITE ? "wrote" : "read";
}

/* An element of a buffer as the family names it: C[4][7], out[17]. */
static void element(out *o, const cl_simt_buffer *b, int64_t e)
{
    if (b->rows > 0 && b->cols > 0) {
        int64_t r = e >= 0 ? e / b->cols : -((-e + b->cols - 1) / b->cols), c = e - r * b->cols;
        say(o, "%s[%" PRId64 "][%" PRId64 "]", b->name, r, c);
    } else {
        say(o, "%s[%" PRId64 "]", b->name, e);
    }
}

/* Where an element outside its buffer lies: ", past the end of C (67×33)". */
static void outside(out *o, const cl_simt_buffer *b, int64_t e)
{
    int64_t n = b->elem_bytes ? (int64_t)(b->bytes / b->elem_bytes) : 0;
    if (e >= 0 && e < n)
        return;
    say(o, ", %s of %s", e < 0 ? "before the start" : "past the end", b->name);
    if (b->rows > 0 && b->cols > 0)
        say(o, " (%" PRId64 "×%" PRId64 ")", b->rows, b->cols);
    else
        say(o, " (%" PRId64 " elements)", n);
}

/* "As[0][3]|raw": a shared finding's element and its second part. */
static void split(const char *what, char *first, size_t flen, const char **second)
{
    const char *bar = strchr(what, '|');
    size_t n = bar ? (size_t)(bar - what) : strlen(what);
    snprintf(first, flen, "%.*s", (int)(n < flen ? n : flen - 1), what);
    *second = bar ? bar + 1 : "";
}

static void explain_one(out *o, const cl_simt_launch *l, int kind, const cl_simt_finding *f, const line_map *m)
{
    int line = f->at.line ? (int)f->at.line : line_of(m, f->at.pc);
    int other_line = f->other.line ? (int)f->other.line : line_of(m, f->other.pc);
    const cl_simt_buffer *b = f->buffer >= 0 && f->buffer < (int)l->nbuffers ? &l->buffers[f->buffer] : NULL;
    char el[96];
    const char *rest;
    switch (kind) {
    case CL_SIMT_OOB_GLOBAL:
        say(o, "out-of-bounds access: ");
        thread_at(o, l, &f->at);
        say(o, " %s ", verb(f->at.access));
        if (b)
            element(o, b, f->elem);
        at_line(o, line);
        if (b)
            outside(o, b, f->elem);
        say(o, " (the thread was stopped there, as a GPU would fault): compare every index with its bound before "
               "using it");
        break;
    case CL_SIMT_WILD:
        say(o, "invalid address: ");
        thread_at(o, l, &f->at);
        say(o, " %s address %#" PRIx64, verb(f->at.access), (uint64_t)f->elem);
        at_line(o, line);
        say(o, ", outside every array of the launch%s", f->elem < 4096 ? " (a null pointer)" : "");
        break;
    case CL_SIMT_WRITE_INPUT:
        say(o, "write to an input: ");
        thread_at(o, l, &f->at);
        say(o, " wrote ");
        if (b)
            element(o, b, f->elem);
        at_line(o, line);
        say(o, ", but %s is an input of the kernel (const)", b ? b->name : "it");
        break;
    case CL_SIMT_OOB_SHARED:
        split(f->what, el, sizeof el, &rest);
        say(o, "out-of-bounds shared memory: ");
        thread_at(o, l, &f->at);
        say(o, " %s %s", verb(f->at.access), el);
        at_line(o, line);
        say(o, ", outside __shared__ %s", rest);
        break;
    case CL_SIMT_RACE_SHARED:
    case CL_SIMT_RACE_GLOBAL: {
        bool shared = kind == CL_SIMT_RACE_SHARED;
        if (shared)
            split(f->what, el, sizeof el, &rest);
        else
            el[0] = '\0', rest = "";
        say(o, "data race on %s memory: ", shared ? "shared" : "global");
        thread_at(o, l, &f->at);
        say(o, " %s ", verb(f->at.access));
        if (shared)
            say(o, "%s", el);
        else if (b)
            element(o, b, f->elem);
        at_line(o, line);
        if (several(&f->other) && f->other.access == CL_SIMT_ATOMIC)
            say(o, " while other threads update it atomically");
        else if (several(&f->other)) {
            say(o, " while other threads had read it");
            at_line(o, other_line);
        }
        else {
            say(o, " while ");
            thread_at(o, l, &f->other);
            say(o, strcmp(rest, "war") == 0 ? " had read it" : " had written it");
            at_line(o, other_line);
        }
        if (shared && line > 0 && line == other_line && !several(&f->other))
            /* one line both wrote and read it: a non-atomic ++ of a shared counter, or a tree step
             * whose threads are out of step; which, only the line itself says */
            say(o, ", with no __syncthreads() between them and no atomic: if that line adds to a shared "
                   "counter (++, +=), updates are lost (use atomicAdd); if one thread writes what another "
                   "reads there, a barrier is missing");
        else if (shared)
            say(o, ", with no __syncthreads() between them: a barrier is missing");
        else
            say(o, ", with no atomic operation: on a GPU one of the updates is lost (use atomicAdd)");
        break;
    }
    case CL_SIMT_DOUBLE_WRITE: {
        /* which of the two wrote first depends on how blocks met in the processes: name them in grid order */
        bool swap = earlier(&f->other, &f->at);
        say(o, "two writers: ");
        thread_at(o, l, swap ? &f->other : &f->at);
        say(o, " and ");
        thread_at(o, l, swap ? &f->at : &f->other);
        say(o, " both wrote ");
        if (b)
            element(o, b, f->elem);
        at_line(o, line);
        if (b && b->rows > 0 && b->cols > 0)
            say(o, ": each element has one thread; a thread past the last column writes into the next row (check "
                   "the column against its bound too)");
        else
            say(o, ": each element has one writing thread (check the index each thread writes)");
        break;
    }
    case CL_SIMT_UNINIT_SHARED:
        say(o, "uninitialised shared memory: ");
        thread_at(o, l, &f->at);
        say(o, " %s %s", verb(f->at.access), f->what);
        at_line(o, line);
        say(o, " before any thread of the block wrote it (shared memory starts with whatever the last block "
               "left: write every element the block reads, with a zero or a ghost value where the data ends)");
        break;
    case CL_SIMT_DIVERGENT_BARRIER:
        say(o, "divergent barrier in block ");
        dims(o, f->at.block, l->grid);
        say(o, ": %s; every thread of a block must reach the same __syncthreads() (no barrier inside an if "
               "that not all threads take, no return before it)", f->what);
        break;
    case CL_SIMT_DEADLOCK:
        say(o, "deadlock in block ");
        dims(o, f->at.block, l->grid);
        say(o, ": %s", f->what);
        break;
    case CL_SIMT_TRAP:
        thread_at(o, l, &f->at);
        say(o, " %s", f->what);
        at_line(o, line);
        break;
    case CL_SIMT_ASSERT:
        say(o, "assertion `%s` failed in ", f->what);
        thread_at(o, l, &f->at);
        at_line(o, line);
        break;
    case CL_SIMT_TIMEOUT:
        say(o, "launch limit: the kernel ran past %s ms on the CPU runner; ", f->what);
        thread_at(o, l, &f->at);
        say(o, " was");
        line = line ? line : other_line;
        if (line)
            say(o, " at line %d", line);
        else
            say(o, " running");
        say(o, " (an endless loop, a thread waiting for another that never comes, or more work than the CPU "
               "runner does in that time: a smaller size?)");
        break;
    case CL_SIMT_SYSCALL:
        say(o, "the kernel made a system call the CPU runner forbids (number %s): device code has no files, "
               "processes or network", f->what);
        break;
    default:
        say(o, "%s in ", f->what);
        thread_at(o, l, &f->at);
        line = line ? line : other_line;
        at_line(o, line);
        break;
    }
    if (f->count > 1)
        say(o, " (%" PRIu64 " in all)", f->count);
}

void simt_explain(const cl_simt_launch *l, const simt_code *code, char *buf, size_t len, char *err)
{
    line_map m = { .n = 0 };
    for (int k = 0; k < CL_SIMT_NKINDS; k++)
        if (l->report.findings[k].count) {
            want_pc(&m, l->report.findings[k].at.pc);
            want_pc(&m, l->report.findings[k].other.pc);
        }
    resolve(&m, code);
    out o = { buf, len, 0 };
    if (len)
        buf[0] = '\0';
    bool first = true;
    for (int k = 0; k < CL_SIMT_NKINDS; k++) {
        const cl_simt_finding *f = &l->report.findings[k];
        if (!f->count)
            continue;
        size_t start = o.used;
        explain_one(&o, l, k, f, &m);
        if (first) {
            char head[CL_ERR_LEN];
            out h = { head, sizeof head, 0 };
            explain_one(&h, l, k, f, &m);
            snprintf(err, CL_ERR_LEN, "%s", head);
            first = false;
        }
        if (o.used > start)
            say(&o, "\n");
    }
}
