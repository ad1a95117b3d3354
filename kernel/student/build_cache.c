/* build_cache.c — students' builds kept by their key (see compile.h): in the
 * session's memory (its part LAB_BUILDS) for the session's life, and on disk
 * in student_cache_dir() so that a new session compiles nothing it compiled before.
 */
#include "student/build_cache.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cache_dir.h"
#include "base/digest.h"
#include "base/log.h"
#include "student/nvrtc.h"

#define CACHE_FORMAT "1"            /* bump when what a cache entry holds changes */
#define MEMORY_CACHE 32

/* The memory cache, the session's part LAB_BUILDS: copies of the machine
 * code, name, warnings and resources of recent builds (student_build's other
 * fields stay empty). */
typedef struct build_cache {
    student_build at[MEMORY_CACHE];
    size_t next;                    /* the slot the next build replaces (modulo MEMORY_CACHE) */
} build_cache;

static void cache_drop(void *part)
{
    build_cache *c = part;
    for (size_t i = 0; i < MEMORY_CACHE; i++)
        student_build_free(&c->at[i]);
}

/* Copies what a cache keeps into b; -1 (with nothing left half-made) when memory runs out. */
static int fill_build(student_build *b, const void *cubin, size_t bytes, const char *lowered,
                      const json_t *warnings, const student_resources *res)
{
    b->cubin = malloc(bytes);
    b->lowered = strdup(lowered);
    b->warnings = json_deep_copy(warnings);
    if (!b->cubin || !b->lowered || !b->warnings) {
        free(b->cubin);
        free(b->lowered);
        json_decref(b->warnings);
        b->cubin = NULL, b->lowered = NULL, b->warnings = NULL;
        return -1;
    }
    memcpy(b->cubin, cubin, bytes);
    b->cubin_bytes = bytes;
    b->res = *res;
    return 0;
}

/* Keeps a copy of b in the session's cache (none when out of memory: the disk has it). */
void build_cache_memory_put(lab_session *lab, const student_build *b)
{
    build_cache *c = lab_part_make(lab, LAB_BUILDS, sizeof *c, cache_drop);
    if (!c)
        return;
    student_build *e = &c->at[c->next++ % MEMORY_CACHE];
    student_build_free(e);
    if (fill_build(e, b->cubin, b->cubin_bytes, b->lowered, b->warnings, &b->res) == 0)
        snprintf(e->key, sizeof e->key, "%s", b->key);
}

int build_cache_memory_get(const lab_session *lab, student_build *b)
{
    const build_cache *c = lab_part(lab, LAB_BUILDS);
    for (size_t i = 0; c && i < MEMORY_CACHE; i++) {
        const student_build *e = &c->at[i];
        if (e->cubin && strcmp(e->key, b->key) == 0)
            return fill_build(b, e->cubin, e->cubin_bytes, e->lowered, e->warnings, &e->res);
    }
    return -1;
}

int student_cache_dir(char *buf, size_t len)
{
    const char *env = getenv("CUDALAB_CACHE_DIR");
    if (env && *env) {
        int n = snprintf(buf, len, "%s", env);
        return n > 0 && (size_t)n < len ? 0 : -1;
    }
    return user_cache_dir("kernels", buf, len);
}

static void *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n > 0 && n < (64L << 20) && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) &&
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = buf ? (size_t)n : 0;
    return buf;
}

/* Writes through a temporary file and a rename: a reader never sees half. */
static int write_all(const char *path, const void *data, size_t len)
{
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return -1;
    bool ok = fwrite(data, 1, len, f) == len;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static json_t *resources_json(const student_resources *r)
{
    return json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:b}", "registers", r->registers, "static_smem",
                     r->static_smem, "stack", r->stack, "spill_stores", r->spill_stores, "spill_loads",
                     r->spill_loads, "barriers", r->barriers, "known", r->known);
}

int build_cache_disk_get(student_build *b)
{
    char dir[900], path[1000];
    if (student_cache_dir(dir, sizeof dir) != 0)
        return -1;
    size_t n = 0, mn = 0;
    snprintf(path, sizeof path, "%s/%s.json", dir, b->key);
    char *meta_text = read_all(path, &mn);
    snprintf(path, sizeof path, "%s/%s.cubin", dir, b->key);
    void *cubin = meta_text ? read_all(path, &n) : NULL;
    json_t *meta = cubin ? json_loadb(meta_text, mn, 0, NULL) : NULL;
    free(meta_text);
    const char *lowered = json_string_value(json_object_get(meta, "lowered"));
    const json_t *r = json_object_get(meta, "resources"), *w = json_object_get(meta, "warnings");
    int rc = -1;
    if (lowered && json_is_object(r) && json_is_array(w)) {
        student_resources res = {
            (int)json_integer_value(json_object_get(r, "registers")),
            (int)json_integer_value(json_object_get(r, "static_smem")),
            (int)json_integer_value(json_object_get(r, "stack")),
            (int)json_integer_value(json_object_get(r, "spill_stores")),
            (int)json_integer_value(json_object_get(r, "spill_loads")),
            (int)json_integer_value(json_object_get(r, "barriers")),
            json_is_true(json_object_get(r, "known")),
        };
        rc = fill_build(b, cubin, n, lowered, w, &res);
    }
    free(cubin);
    json_decref(meta);
    return rc;
}

void build_cache_disk_put(const student_build *b)
{
    char dir[900], path[1000];
    if (student_cache_dir(dir, sizeof dir) != 0 || make_dirs(dir) != 0)
        return;
    json_t *meta = json_pack("{s:s, s:o, s:O}", "lowered", b->lowered, "resources", resources_json(&b->res),
                             "warnings", b->warnings);
    char *text = meta ? json_dumps(meta, JSON_COMPACT) : NULL;
    json_decref(meta);
    snprintf(path, sizeof path, "%s/%s.cubin", dir, b->key);
    /* the machine code first: an entry counts once its description exists */
    if (text && write_all(path, b->cubin, b->cubin_bytes) == 0) {
        snprintf(path, sizeof path, "%s/%s.json", dir, b->key);
        if (write_all(path, text, strlen(text)) != 0)
            klog("kernel cache: cannot write %s", path);
    }
    free(text);
}

/* sha256 of everything the machine code depends on. */
void build_cache_key(const char *program, const json_t *opts, char key[65])
{
    char *o = json_dumps(opts, JSON_COMPACT);
    size_t n = strlen(program) + (o ? strlen(o) : 0) + 64;
    char *all = malloc(n);
    if (all) {
        int len = snprintf(all, n, "%s\n%s\nnvrtc %s\nformat " CACHE_FORMAT "\n", program, o ? o : "",
                           nvrtc_version());
        sha256_hex(all, (size_t)len, key);
    } else {
        snprintf(key, 65, "%s", "");
    }
    free(all);
    free(o);
}
