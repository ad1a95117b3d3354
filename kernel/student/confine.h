/* confine.h — a tool (the host compiler) run on a student's source, confined
 * (worker side).
 *
 * What a student writes can make a compiler work without end (a macro or
 * template that expands exponentially), fill memory or a disk, or read what it
 * should not; and a compiler left running outlives the cell that started it.
 * confine_run() starts the tool under a supervisor process:
 *
 *   worker ──socketpair──▶ supervisor (subreaper) ──▶ tool: its own session
 *                                                     and process group
 *
 * The tool gets limits on CPU time, address space, file size and open files,
 * no core files, no new privileges, /dev/null as stdin, an environment with
 * only PATH, LC_ALL=C and TMPDIR, and a fresh empty directory as its working
 * directory (its temporary files in another, both removed after). The
 * supervisor kills the tool's whole process group (cc1plus, as and ld with
 * g++) when it outlives the wall-clock limit, when the worker asks (an
 * interrupt: cancelled() says so), and when the worker dies in any way, SIGKILL
 * included: its end of the socketpair closes. The tool dies with the
 * supervisor (PR_SET_PDEATHSIG), and descendants orphaned inside the group are
 * the supervisor's to reap and kill.
 */
#ifndef CUDALAB_STUDENT_CONFINE_H
#define CUDALAB_STUDENT_CONFINE_H

#include <stdbool.h>
#include <stddef.h>

#define CONFINE_WALL_ENV "CUDALAB_COMPILE_TIMEOUT"  /* seconds; the host compiler's wall-clock limit */

typedef struct confine_limits {
    double wall_s;                  /* the whole group killed past this */
    unsigned long cpu_s;            /* RLIMIT_CPU of each process */
    unsigned long long address_space;   /* RLIMIT_AS of each process, bytes */
    unsigned long long file_size;   /* RLIMIT_FSIZE, bytes */
    unsigned long open_files;       /* RLIMIT_NOFILE */
    size_t out_max;                 /* stdout kept apart up to this, the group killed past it;
                                     * 0: stdout goes to the log with stderr */
    size_t log_max;                 /* stderr kept up to this, the rest read and dropped */
    bool (*cancelled)(void);        /* polled while the tool runs; NULL: never */
} confine_limits;

/* The host compiler's limits, the wall-clock one from $CUDALAB_COMPILE_TIMEOUT
 * when set (seconds, > 0), else default_wall_s. */
void confine_compiler_limits(confine_limits *lim, double default_wall_s);

enum confine_end {
    CONFINE_EXITED,                 /* status: its exit status */
    CONFINE_SIGNALED,               /* status: the signal that ended it (SIGXCPU: its CPU limit) */
    CONFINE_TIMED_OUT,              /* past wall_s */
    CONFINE_CANCELLED,              /* cancelled() said so */
    CONFINE_OUT_TOO_BIG,            /* stdout past out_max */
    CONFINE_NOT_RUN,                /* it could not be started: log says why */
};

typedef struct confine_result {
    enum confine_end end;
    int status;
    char *out;                      /* stdout (out_max > 0), NUL-terminated; the caller frees */
    size_t out_len;
    char *log;                      /* stderr (and stdout when out_max is 0), NUL-terminated */
    size_t log_len;
    double ms;
} confine_result;

/* A fresh private directory for one tool's runs: root (0700, under $TMPDIR or
 * /tmp), holding work/ (the working directory, kept empty) and tmp/ (the
 * tool's TMPDIR). The caller may keep its own files in root. */
typedef struct confine_dir {
    char root[256], work[272], tmp[272];
} confine_dir;

int confine_dir_make(confine_dir *d);
void confine_dir_remove(confine_dir *d);     /* root and everything in it */

/* Runs argv (argv[0] a path or a name on PATH) confined, in d. 0 with *out
 * filled whatever the tool did (out->end says), -1 with out->log saying why
 * when it could not be started. confine_result_free() either way. */
int confine_run(char *const argv[], const confine_dir *d, const confine_limits *lim, confine_result *out);
void confine_result_free(confine_result *r);

/* Why a run did not finish, in words, for a student ("it ran past its limit of
 * 120 s (CUDALAB_COMPILE_TIMEOUT)"); "" when it exited. */
const char *confine_why(const confine_result *r, const confine_limits *lim, char *buf, size_t len);

#endif
