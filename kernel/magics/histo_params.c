/* histo_params.c — %histo's params before anything runs: what depends on the
 * input (text or random: size, dist, bins), --variant all, the sweep order,
 * and the refusals that need the backend (sizes against device or host
 * memory and the int range, blocks that are not whole warps).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudalab/histo.h"
#include "magics/histo_internal.h"

#define DEFAULT_SIZE (1ull << 24)

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
    return magic_error(ctx, "UsageError",
                       "--block %lld: threads per block must be a multiple of the warp size 32 "
                       "(e.g. %lld or %lld)", (long long)block, (long long)(lo ? lo : 32),
                       (long long)(lo + 32));
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

static int block_item(magic_ctx *ctx, const cl_histo_ops *ops, uint64_t block, uint64_t unused)
{
    return check_block(ctx, (int64_t)block);
}

/* ---- the input: random or text, and the resolved params ---- */


/* --variant with `all` expanded and duplicates dropped (family_select); one
 * variant given as a scalar stays a scalar: nothing varies. */
static int select_variants(magic_ctx *ctx, json_t *p)
{
    const json_t *given = json_object_get(p, "variant");
    json_t *list = family_select(ctx, &histo_family, given, NULL, NULL, ctx->backend->name);
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
        if (json_is_null(json_object_get(p, "size")))
            json_object_set_new(p, "size", json_integer((json_int_t)DEFAULT_SIZE));
        if (json_is_null(json_object_get(p, "dist")))
            json_object_set_new(p, "dist", json_string("uniform"));
    }
    if (json_is_null(json_object_get(p, "bins")))
        json_object_set_new(p, "bins", json_string(text ? "letters" : "bytes"));
    if (strcmp(get_str(p, "bins"), "bytes") == 0)
        json_object_set_new(p, "bin_width", json_null());

    return select_variants(ctx, p);
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
    char err[CL_ERR_LEN] = "";
    memset(&props, 0, sizeof props);
    int rc = 0;
    if (ctx->backend->device_props(0, &props, err) != 0)
        rc = magic_error(ctx, "CudaError", "device 0: %s", err);
    if (rc == 0)
        rc = each_item(ctx, json_object_get(p, "size"), ops, props.free_mem, check_size);
    if (rc == 0)
        rc = each_item(ctx, json_object_get(p, "block"), ops, 0, block_item);
    if (rc != 0) {
        json_decref(p);
        return NULL;
    }
    return p;
}
