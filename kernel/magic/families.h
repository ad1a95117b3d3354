/* families.h — the kernel's side of a family's contract (include/cudalab/family.h):
 * the family as the framework sees it, and what the framework does with it so
 * that front-ends stay thin.
 *
 *   - variants: the contract's table, plus variants registered at run time
 *     (a student's %%kernel becomes one more variant of its family);
 *   - --variant: a FLAG_CHOICE whose spec points at the family takes its
 *     choices from here (parsing, completion, %help and errors all call
 *     flag_choice), and family_select() expands `all`, drops duplicates and
 *     refuses a variant the backend cannot run;
 *   - memory: magic_memory_fit() is the one refusal of a point that does not
 *     fit in device or host memory (MemoryError, one message shape).
 */
#ifndef CUDALAB_MAGIC_FAMILY_H
#define CUDALAB_MAGIC_FAMILY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cudalab/family.h"
#include "cudalab/student.h"
#include "magic/lab_session.h"
#include "magic/magic.h"

/* A variant broken on purpose (CL_V_BROKEN): a kernel a student could have
 * written, shipped as source in the family's student signature, that runs as
 * students' kernels do (NVRTC on a GPU, the CPU runner without one). */
typedef struct family_broken {
    cl_variant v;               /* its row: name (a C identifier: the kernel's), launch, the bug in
                                   words; flags CL_V_RUNTIME | CL_V_BROKEN and what it honours */
    const char *source;         /* the kernel, in the family's student signature */
    const char *const *nondeterministic; /* the run's fields that change from run to run where the
                                            bug shows, beside the times; NULL-terminated */
} family_broken;

typedef struct family_spec {
    const char *magic;              /* "matmul": the magic that runs the family */
    const cl_variant *variants;     /* the contract's table: cl_<family>_variants */
    size_t nvariants;
    const cl_student_contract *student; /* what a student's %%kernel for it implements, or NULL */
    const char *quick;              /* the flags of %%kernel's quick check at a small awkward
                                       size ("--m 67 --n 33 --k 129"), with the student's variant */
    /* Where a backend keeps the family's ops (offsetof(cl_backend, matmul)), and where those
     * say whether they run students' kernels: FAMILY_OPS sets both. */
    size_t ops_at, runs_student_at;
    const char *sources;            /* what builds the family's backends, for the error of one without it */
    /* A family whose kernels also come in a second shape (%stencil --dim 2: a
     * 2D convolution): what a %%kernel --dim 2 cell implements, and its quick
     * check; NULL for the others. */
    const cl_student_contract *student_2d;
    const char *quick_2d;
    /* A family whose kernels may take an input stored transposed (%matmul: B as Bᵀ, the lecture's
     * corner turning): what a %%kernel --bt cell implements (its quick check is the family's);
     * NULL for the others. */
    const cl_student_contract *student_bt;
    /* The family's variants broken on purpose (kernel/student/broken.c), ended by a row
     * whose name is NULL; NULL for none. */
    const family_broken *broken;
} family_spec;

/* family_spec's ops_at and runs_student_at: the family's member of cl_backend and its ops' type. */
#define FAMILY_OPS(member, ops_type) \
    .ops_at = offsetof(cl_backend, member), .runs_student_at = offsetof(ops_type, runs_student)

/* The backend b's ops of the family f (NULL where b was built without it). */
const void *family_ops(const family_spec *f, const cl_backend *b);
/* Whether b runs students' kernels of the family f. */
bool family_runs_student(const family_spec *f, const cl_backend *b);
/* The refusal of a student's kernel NAME (or one broken on purpose, which runs as theirs) where
 * the command's backend does not run students' kernels: -1 with the UsageError in ctx. */
int family_refuse_student(magic_ctx *ctx, const char *name);
/* family_refuse_student for the first such kernel that --variant (in params) names; 0 when none. */
int family_students_runnable(magic_ctx *ctx, const family_spec *f, const json_t *params);

/* The family a magic runs (the one its --variant flag names), or NULL. */
const family_spec *family_of_magic(const magic_spec *m);
const family_spec *family_find(const char *magic);
/* The families that take students' kernels, in the registry's order: start
 * with *at = 0; NULL after the last. */
const family_spec *family_next_taking_kernels(size_t *at);

/* The --variant flag of a family's magic, for its flag_spec table: a list of
 * the family's variants (or all), default def. */
#define FAMILY_VARIANT_FLAG(family_, def_)                                                     \
    {.name = "variant", .short_name = 'v', .type = FLAG_CHOICE, .def = (def_), .family = (family_), \
     .opts = FLAG_LIST, .help = "the variants to run (listed above), or all"}

/* Variants registered at run time, across all families: the session's
 * (lab_session.h), so that one session's kernels are not another's. */
#define FAMILY_MAX_RUNTIME 64

/* Every variant of f: the contract's rows (indexes < f->nvariants, equal to the
 * family's enum ids), then its broken ones (f->broken), then those the session
 * lab registered at run time (none where lab is NULL). */
size_t family_count(const lab_session *lab, const family_spec *f);
const cl_variant *family_variant(const lab_session *lab, const family_spec *f, size_t i);
/* The index of a variant by name, or -1. */
int family_index(const lab_session *lab, const family_spec *f, const char *name);
/* The variant broken on purpose of that name, or NULL. */
const family_broken *family_broken_find(const family_spec *f, const char *name);
/* The id of one of the contract's own rows (what the backends implement, by
 * id) by name; -1 for a run-time variant or none. */
int family_builtin(const family_spec *f, const char *name);
/* The same for a sweep point's "variant", or -1 with an error in ctx (a point
 * names a variant family_select let through: only a bug gets here). */
int family_point_variant(magic_ctx *ctx, const family_spec *f, const json_t *point);
/* Adds to ctx's session (ctx->lab) a variant whose code arrives at run time
 * (CL_V_RUNTIME is set on the copy kept); name and texts are copied. Replaces
 * a runtime variant of the same name. 0, or -1 with a UsageError when the name
 * is a built-in or broken variant's or "all", or the registry is full. */
int family_register(magic_ctx *ctx, const family_spec *f, const cl_variant *v);
/* Forgets every runtime variant of the session. */
void family_forget_runtime(lab_session *lab);

/* The i-th allowed value of a FLAG_CHOICE flag: its choices[], or for a flag
 * whose spec names a family, the family's variants in the session lab and
 * then "all". NULL past the end. */
const char *flag_choice(const lab_session *lab, const flag_spec *fl, size_t i);

/* Whether a variant runs on this command's backend: the front-end's answer. */
typedef bool (*variant_available_fn)(const cl_variant *v, size_t index, void *user);

/* --variant as given (a name or a list) -> an array of distinct variant names
 * in the order given, among the variants of ctx's session. `all` stands for every built-in variant that `available`
 * accepts, in table order; never a run-time one: a student's kernel runs when
 * named. available NULL: the contract's rows, which every backend of the
 * family implements, and run-time ones, which the caller has refused
 * beforehand where the backend cannot run them. A named variant that is not
 * available is a UsageError naming the backend and what it has. New
 * reference, or NULL with the error set. */
json_t *family_select(magic_ctx *ctx, const family_spec *f, const json_t *given,
                      variant_available_fn available, void *user, const char *backend);

/* ---- memory a point needs ---- */

/* One point against one memory. The refusal reads:
 *   "<what> needs <bytes> of <where> memory (<holds>); this <where> has <free> free (<largest>)" */
typedef struct mem_need {
    const char *what;               /* the point as the user writes it: "--size 2^40" */
    const char *holds;              /* what the bytes are for ("A, B and C"), or NULL */
    const char *where;              /* "device" or "host" */
    double bytes;                   /* what the point needs there */
    double free;                    /* what there is; <= 0 when unknown: never refused */
    const char *largest;            /* the family's largest point that fits, in its terms
                                       ("largest size that fits: 251658240"), or NULL */
} mem_need;

/* 0 when the point fits, else -1 with a MemoryError in ctx. */
int magic_memory_fit(magic_ctx *ctx, const mem_need *n);

/* The largest n in [0, hi] with bytes(n, arg) <= room, bytes non-decreasing in n. */
uint64_t fit_largest(double (*bytes)(uint64_t n, const void *arg), const void *arg, double room,
                     uint64_t hi);

/* Whether a JSON array of names (a --variant list) holds name. */
bool family_list_has(const json_t *list, const char *name);

#endif
