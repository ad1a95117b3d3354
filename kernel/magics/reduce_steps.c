/* reduce_steps.c — %reduce --steps: the in-block tree of the lecture's kernels, one row per step,
 * as the slides draw it for B = 256, for the run's --block.
 *
 * Each row is counted thread by thread with the kernel's own condition (block_tree in
 * cuda/reduce_device.h), never from a formula about it: which threads add at that stride, how
 * many warps hold at least one of them (such a warp issues the step for all its 32 lanes), how
 * many of those are full, how many warps are idle as a whole, and the lanes the active warps
 * carry without work (divergence). So the table shows what prose gets wrong easily: the
 * convergent tree retires whole warps, but once the stride is below 32 its one warp left
 * diverges as much as the divergent tree's warps do.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cudalab/cpu_model.h"
#include "render/render.h"
#include "magics/reduce_internal.h"

#define WARP CL_CPU_MODEL_WARP      /* 32 lanes on every NVIDIA GPU */

/* The two trees of block_tree: the condition a thread t adds under at a stride, and the strides in
 * the kernel's order. */
typedef struct rd_tree {
    const char *rule;               /* the kernel's loop and condition, in its own words */
    bool (*active)(unsigned t, unsigned stride);
    bool doubling;                  /* stride 1, 2, 4, ... while < B; else B/2, B/4, ... 1 */
} rd_tree;

/* TREE_DIVERGENT: for (stride = 1; stride < blockDim.x; stride *= 2) if (t % (2 * stride) == 0) ... */
static bool divergent_active(unsigned t, unsigned stride)
{
    return t % (2 * stride) == 0;
}

/* TREE_CONVERGENT: for (stride = blockDim.x / 2; stride > 0; stride >>= 1) if (t < stride) ... */
static bool convergent_active(unsigned t, unsigned stride)
{
    return t < stride;
}

static const rd_tree divergent_tree = {"if (t % (2*stride) == 0), stride 1, 2, 4, ... < B", divergent_active, true};
static const rd_tree convergent_tree = {"if (t < stride), stride B/2, B/4, ... 1", convergent_active, false};

/* The tree variant v's first pass runs: multiblock's is the convergent one after its coarsening
 * (reduce_multiblock_kernel); fast adds with warp shuffles, where every lane runs every step and
 * no branch picks threads, and the others have no block tree. */
static const rd_tree *tree_of(int v)
{
    switch (v) {
    case CL_REDUCE_DIVERGENT:
        return &divergent_tree;
    case CL_REDUCE_CONVERGENT:
    case CL_REDUCE_MULTIBLOCK:
        return &convergent_tree;
    default:
        return NULL;
    }
}

static rd_step count_step(const rd_tree *tr, unsigned block, unsigned stride)
{
    rd_step s = {.stride = stride};
    for (unsigned w = 0; w < block / WARP; w++) {
        unsigned lanes = 0;
        for (unsigned l = 0; l < WARP; l++)
            lanes += tr->active(w * WARP + l, stride);
        s.active_threads += lanes;
        s.active_warps += lanes > 0;
        s.full_warps += lanes == WARP;
        s.wasted_lanes += lanes > 0 ? WARP - lanes : 0;
    }
    s.divergent_warps = s.active_warps - s.full_warps;
    s.idle_warps = block / WARP - s.active_warps;
    return s;
}

int rd_tree_steps(int v, unsigned block, rd_step steps[RD_MAX_STEPS])
{
    const rd_tree *tr = tree_of(v);
    int n = 0;
    if (!tr || block < WARP || block > CL_CPU_MODEL_MAX_THREADS_PER_BLOCK || (block & (block - 1)))
        return 0;
    if (tr->doubling)
        for (unsigned stride = 1; stride < block; stride *= 2)
            steps[n++] = count_step(tr, block, stride);
    else
        for (unsigned stride = block / 2; stride > 0; stride >>= 1)
            steps[n++] = count_step(tr, block, stride);
    return n;
}

/* A step's counts under the document's names and the table's headers, in the table's order. */
static const struct {
    const char *key, *header;
    size_t at;
} step_fields[] = {
    {"stride", "stride", offsetof(rd_step, stride)},
    {"active_threads", "active threads", offsetof(rd_step, active_threads)},
    {"active_warps", "active warps", offsetof(rd_step, active_warps)},
    {"full_warps", "full warps", offsetof(rd_step, full_warps)},
    {"divergent_warps", "divergent warps", offsetof(rd_step, divergent_warps)},
    {"idle_warps", "idle warps", offsetof(rd_step, idle_warps)},
    {"wasted_lanes", "wasted lanes", offsetof(rd_step, wasted_lanes)},
};
#define NFIELDS (sizeof step_fields / sizeof step_fields[0])

json_t *rd_steps_json(int v, unsigned block)
{
    rd_step s[RD_MAX_STEPS];
    int n = rd_tree_steps(v, block, s);
    if (n == 0)
        return NULL;
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        json_t *step = json_pack("{s:i}", "step", i + 1);
        for (size_t f = 0; f < NFIELDS; f++)
            json_object_set_new(step, step_fields[f].key,
                                json_integer(*(const unsigned *)((const char *)&s[i] + step_fields[f].at)));
        json_array_append_new(a, step);
    }
    return a;
}

/* ---- the tables ---- */

static void add_table(json_t *view, const json_t *run)
{
    const char *variant = json_string_value(json_object_get(run, "variant"));
    json_int_t block = json_integer_value(json_object_get(run, "block"));
    char caption[200];
    snprintf(caption, sizeof caption, "%s, block %" JSON_INTEGER_FORMAT " (%" JSON_INTEGER_FORMAT " warp%s), step "
             "by step: %s", variant, block, block / WARP, block > WARP ? "s" : "",
             tree_of(family_builtin(&reduce_family, variant))->rule);
    json_t *headers = json_pack("[s]", "step");
    for (size_t f = 0; f < NFIELDS; f++)
        json_array_append_new(headers, json_string(step_fields[f].header));
    json_t *t = view_add_table(view, caption, headers);
    size_t i;
    const json_t *step;
    json_array_foreach(json_object_get(run, "steps"), i, step) {
        json_t *row = json_pack("[O]", json_object_get(step, "step"));
        for (size_t f = 0; f < NFIELDS; f++)
            json_array_append(row, json_object_get(step, step_fields[f].key));
        view_table_row(t, row);
    }
}

/* Whether an earlier run already showed the table of run's variant and block (the steps do not
 * depend on the size, type or operation). */
static bool shown_before(const json_t *runs, size_t i)
{
    const json_t *run = json_array_get(runs, i);
    for (size_t j = 0; j < i; j++) {
        const json_t *other = json_array_get(runs, j);
        if (json_object_get(other, "steps") &&
            json_equal(json_object_get(other, "variant"), json_object_get(run, "variant")) &&
            json_equal(json_object_get(other, "block"), json_object_get(run, "block")))
            return true;
    }
    return false;
}

void rd_steps_tables(json_t *doc, json_t *view, const json_t *params, const json_t *runs, void *user)
{
    (void)doc;
    (void)user;
    if (!json_is_true(json_object_get(params, "steps")))
        return;
    view_add_note(view, "steps: a warp with at least one active thread issues the step for all its 32 lanes, "
                  "so its idle lanes are wasted work (divergence); a warp with none skips it and waits at the "
                  "barrier. Where there is a second pass (one block of 1024 over the partials), it runs the same tree");
    size_t i;
    const json_t *run;
    char without[200] = "", trees[120] = "";
    size_t wlen = 0, tlen = 0;
    json_array_foreach(runs, i, run) {
        const char *name = json_string_value(json_object_get(run, "variant"));
        if (json_object_get(run, "steps")) {
            if (!shown_before(runs, i))
                add_table(view, run);
        } else if (name && !strstr(without, name) && wlen < sizeof without - 40)
            wlen += (size_t)snprintf(without + wlen, sizeof without - wlen, "%s%s", wlen ? ", " : "", name);
    }
    if (!without[0])
        return;
    for (int v = 0; v < CL_REDUCE_NVARIANTS; v++)
        if (tree_of(v))
            tlen += (size_t)snprintf(trees + tlen, sizeof trees - tlen, "%s%s", tlen ? ", " : "",
                                     cl_reduce_variants[v].name);
    char note[sizeof without + sizeof trees + 160];
    snprintf(note, sizeof note, "no steps for %s: only %s reduce a block with a shared-memory tree (fast adds "
             "with warp shuffles, where every lane runs every step)", without, trees);
    view_add_note(view, note);
}
