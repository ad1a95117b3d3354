/* histo_params.c — %histo's params before anything runs: what depends on the
 * input (text or random: size, dist, bins), --variant all, the sweep order,
 * the refusals that need the backend (sizes against device or host memory
 * and the int range, blocks that are not whole warps), --block as
 * dimensions, and what a student's kernel (%%kernel --for histo) can run.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudalab/histo.h"
#include "magics/histo_internal.h"
#include "student/run.h"
#include "student/store.h"

/* --size where the user gives none and no text: smaller on the CPU backend, where the atomics of
 * sectioned and interleaved, contended by two host threads, kept the default cell over 2 s. Not a
 * flag_spec default: with a text, the text's length is the size and a --size given is refused. */
#define DEFAULT_SIZE (1ull << 24)
#define CPU_DEFAULT_SIZE (1ull << 22)
#define DEFAULT_BLOCK 256

static const char *get_str(const json_t *params, const char *key)
{
    return json_string_value(json_object_get(params, key));
}

/* ---- refusals ---- */

/* "2^24" for powers of two, the number otherwise. */
static void size_text(uint64_t n, char *buf, size_t len)
{
    if (n && (n & (n - 1)) == 0)
        snprintf(buf, len, "2^%d", __builtin_ctzll(n));
    else
        snprintf(buf, len, "%" PRIu64, n);
}

static int check_size(magic_ctx *ctx, const cl_histo_ops *ops, uint64_t n, uint64_t free_mem)
{
    char sz[32], what[48], fit[64];
    size_text(n, sz, sizeof sz);
    bool gpu = strcmp(ctx->backend->name, "cpu") != 0;
    uint64_t extra = ops->overhead ? ops->overhead() : 0;
    int lg = 0;                     /* the largest power of two that fits */
    while (lg < 62 && (2ull << lg) + extra <= free_mem)
        lg++;
    snprintf(what, sizeof what, "--size %s", sz);
    snprintf(fit, sizeof fit, "the largest power of two that fits: --size 2^%d", lg);
    mem_need need = {what, "the input plus buffers", gpu ? "device" : "host", (double)n + (double)extra,
                     (double)free_mem, fit};
    if (magic_memory_fit(ctx, &need) != 0)
        return -1;
    if (n > CL_HISTO_MAX_SIZE)
        return magic_error(ctx, "ValueError",
                           "--size %s is beyond the int range: bins count in 32-bit integers and "
                           "cub takes an int sample count, so at most 2^31-1 = %llu bytes",
                           sz, (unsigned long long)CL_HISTO_MAX_SIZE);
    return 0;
}

static int check_block(magic_ctx *ctx, int64_t block)
{
    if (block % 32 == 0)
        return 0;
    int64_t lo = block / 32 * 32;
    if (lo == 0)
        return magic_error(ctx, "UsageError", "--block %lld: threads per block must be a multiple of the "
                           "warp size 32 (e.g. 32)", (long long)block);
    return magic_error(ctx, "UsageError",
                       "--block %lld: threads per block must be a multiple of the warp size 32 "
                       "(e.g. %lld or %lld)", (long long)block, (long long)lo, (long long)(lo + 32));
}

/* Applies check to every item of a scalar-or-list flag. */
static int each_item(magic_ctx *ctx, const json_t *v, const cl_histo_ops *ops, uint64_t free_mem,
                     int (*check)(magic_ctx *, const cl_histo_ops *, uint64_t, uint64_t))
{
    if (!json_is_array(v))
        return check(ctx, ops, (uint64_t)json_integer_value(v), free_mem);
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x)
        if (check(ctx, ops, (uint64_t)json_integer_value(x), free_mem) != 0)
            return -1;
    return 0;
}

/* ---- --block: dimensions ---- */

/* --block as the sweep runs it: given as dimensions ([[256]], [[128], [256]]),
 * each 1D value becomes its threads per block (an integer, as the built-in
 * variants and the result documents have it) and a 2D or 3D one stays
 * [x, y, z], which only students' kernels take. One value stays a scalar
 * (a lone [x, y, z] stays in its list). Not given: 256. */
static int resolve_block(magic_ctx *ctx, json_t *p, bool builtin_named)
{
    const json_t *given = json_object_get(p, "block");
    if (json_is_null(given)) {
        json_object_set_new(p, "block", json_integer(DEFAULT_BLOCK));
        return 0;
    }
    json_t *out = json_array();
    size_t i;
    json_t *d;
    bool dims = false;
    json_array_foreach(given, i, d) {
        long long x = json_integer_value(json_array_get(d, 0));
        long long y = json_array_size(d) > 1 ? json_integer_value(json_array_get(d, 1)) : 1;
        long long z = json_array_size(d) > 2 ? json_integer_value(json_array_get(d, 2)) : 1;
        if (y > 1 || z > 1) {
            dims = true;
            json_array_append_new(out, json_pack("[I, I, I]", x, y, z));
            if (builtin_named) {
                json_decref(out);
                return magic_error(ctx, "UsageError", "--block %lldx%lldx%lld: the built-in variants of "
                                   "%%histo run 1D blocks (threads per block, e.g. --block 256); only your "
                                   "kernels take a 2D or 3D block", x, y, z);
            }
        } else {
            json_array_append_new(out, json_integer(x));
            if (builtin_named && check_block(ctx, x) != 0) {
                json_decref(out);
                return -1;
            }
        }
    }
    if (json_array_size(out) == 1 && !dims)
        json_object_set(p, "block", json_array_get(out, 0));
    else
        json_object_set(p, "block", out);
    json_decref(out);
    return 0;
}

/* ---- students' kernels ---- */

/* Whether --variant (a name or a list) names a student kernel of %histo, and
 * a built-in variant. */
static void named(lab_session *lab, const json_t *variants, bool *student, bool *builtin)
{
    json_t *list = sweep_as_list(variants);
    size_t i;
    json_t *v;
    *student = *builtin = false;
    json_array_foreach(list, i, v) {
        const char *name = json_string_value(v);
        *student |= histo_student(lab, name) != NULL;
        *builtin |= strcmp(name, "all") == 0 || family_builtin(&histo_family, name) >= 0;
    }
    json_decref(list);
}

/* A student's kernel counts the lecture's letter bins (its signature has no
 * mode, cl_histo_student) on a backend that runs it; anything else is refused
 * before it runs. */
static int check_students(magic_ctx *ctx, const json_t *p)
{
    json_t *list = sweep_as_list(json_object_get(p, "variant"));
    const student_def *d = NULL;
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
        if (!d)
            d = histo_student(ctx->lab, json_string_value(v));
    json_decref(list);
    if (!d)
        return 0;
    if (strcmp(get_str(p, "bins"), "letters") != 0)
        return magic_error(ctx, "UsageError", "%s is your kernel: it counts the lecture's letter bins "
                           "(--bins letters --bin-width %d, %d bins), not --bins bytes: its signature "
                           "has no mode (%%help kernel)", d->name, CL_HISTO_STUDENT_WIDTH,
                           CL_HISTO_STUDENT_NBINS);
    long long width = json_integer_value(json_object_get(p, "bin_width"));
    if (width != CL_HISTO_STUDENT_WIDTH)
        return magic_error(ctx, "UsageError", "%s is your kernel: it counts the lecture's letter bins "
                           "of %d letters (a-d, e-h, ..., y-z: --bin-width %d), not --bin-width %lld "
                           "(%%help kernel)", d->name, CL_HISTO_STUDENT_WIDTH, CL_HISTO_STUDENT_WIDTH,
                           width);
    return 0;
}

/* ---- the input: random or text, and the resolved params ---- */


/* Every built-in row (the magic hands cpu to the CPU backend); a student's
 * kernel (or one broken on purpose: the rows past the built-in ones) only
 * where --variant names it: `all` does not bring them in. */
static bool available(const cl_variant *v, size_t index, void *user)
{
    if (index < histo_family.nvariants)
        return true;
    json_t *list = sweep_as_list(user);
    bool found = false;
    size_t i;
    json_t *g;
    json_array_foreach(list, i, g)
        found |= strcmp(json_string_value(g), v->name) == 0;
    json_decref(list);
    return found;
}

/* --variant with `all` expanded and duplicates dropped (family_select); one
 * variant given as a scalar stays a scalar: nothing varies. */
static int select_variants(magic_ctx *ctx, json_t *p)
{
    const json_t *given = json_object_get(p, "variant");
    json_t *list = family_select(ctx, &histo_family, given, available, (void *)given, ctx->backend->name);
    if (!list)
        return -1;
    if (json_array_size(list) == 1 && !json_is_array(given))
        json_decref(list);
    else
        json_object_set_new(p, "variant", list);
    return 0;
}

/* Fills in what depends on the input (size, dist, bins), refuses flags that
 * do not apply, expands --variant all. p is a copy the caller owns. */
static int resolve(magic_ctx *ctx, json_t *p, const char *body)
{
    const char *text = get_str(p, "text");
    if (body && text)
        return magic_error(ctx, "UsageError", "%%%%histo counts its cell body: give the text "
                           "there or with --text, not both");
    if (body)
        text = body;
    if (text) {
        if (!*text)
            return magic_error(ctx, "UsageError", body ? "the cell body is empty: write the text "
                               "to count below %%%%histo" : "--text is empty: nothing to count");
        if (!json_is_null(json_object_get(p, "size")))
            return magic_error(ctx, "UsageError", "--size sets the length of random input; "
                               "with a text the input is the text itself (%zu bytes)", strlen(text));
        if (!json_is_null(json_object_get(p, "dist")))
            return magic_error(ctx, "UsageError", "--dist chooses random input; with a text "
                               "the input is the text itself");
        json_object_set_new(p, "size", json_integer((json_int_t)strlen(text)));
        /* (without a body, text is p's own string: keep it alive) */
        if (body && json_object_set_new(p, "text", json_string(body)) != 0)
            return magic_error(ctx, "UsageError", "the cell body is not valid UTF-8");
        json_object_set_new(p, "dist", json_null());
    } else {
        if (json_is_null(json_object_get(p, "size")) && ctx->dev.cpu_defaults) {
            char what[96], cpu[32], gpu[32];
            size_text(CPU_DEFAULT_SIZE, cpu, sizeof cpu);
            size_text(DEFAULT_SIZE, gpu, sizeof gpu);
            snprintf(what, sizeof what, "--size %s (%s on a GPU)", cpu, gpu);
            magic_cpu_default(ctx, what);
            json_object_set_new(p, "size", json_integer((json_int_t)CPU_DEFAULT_SIZE));
        } else if (json_is_null(json_object_get(p, "size"))) {
            json_object_set_new(p, "size", json_integer((json_int_t)DEFAULT_SIZE));
        }
        if (json_is_null(json_object_get(p, "dist")))
            json_object_set_new(p, "dist", json_string("uniform"));
    }
    bool student, builtin;
    named(ctx->lab, json_object_get(p, "variant"), &student, &builtin);
    if (json_is_null(json_object_get(p, "bins")))
        json_object_set_new(p, "bins", json_string(text || student ? "letters" : "bytes"));
    if (strcmp(get_str(p, "bins"), "bytes") == 0)
        json_object_set_new(p, "bin_width", json_null());

    if (select_variants(ctx, p) != 0 || resolve_block(ctx, p, builtin) != 0)
        return -1;
    return check_students(ctx, p);
}

json_t *histo_params(magic_ctx *ctx, const json_t *params, const char *body)
{
    json_t *copy = json_deep_copy(params);
    if (!copy) {
        magic_error(ctx, "MemoryError", "out of memory");
        return NULL;
    }
    if (resolve(ctx, copy, body) != 0) {
        json_decref(copy);
        return NULL;
    }
    json_t *p = copy;
    const cl_histo_ops *ops = ctx->backend->histo;
    cl_device_props props;
    int rc = magic_device_props(ctx, &props);
    if (rc == 0)
        rc = each_item(ctx, json_object_get(p, "size"), ops, props.free_mem, check_size);
    if (rc != 0) {
        json_decref(p);
        return NULL;
    }
    return p;
}
