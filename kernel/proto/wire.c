/* wire.c — decode and encode Jupyter multipart messages (see wire.h). */
#include "proto/wire.h"
#include "base/buf.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "base/log.h"
#include "proto/msg.h"

void blobs_free(blob *b, size_t n)
{
    if (!b)
        return;
    for (size_t i = 0; i < n; i++)
        free(b[i].data);
    free(b);
}

static int copy_blobs(const blob *src, size_t n, blob **dst)
{
    *dst = NULL;
    if (n == 0)
        return 0;
    blob *b = calloc(n, sizeof *b);
    if (!b)
        return -1;
    for (size_t i = 0; i < n; i++) {
        b[i].data = malloc(src[i].len ? src[i].len : 1);
        if (!b[i].data) {
            blobs_free(b, i);
            return -1;
        }
        memcpy(b[i].data, src[i].data, src[i].len);
        b[i].len = src[i].len;
    }
    *dst = b;
    return 0;
}

void wire_msg_free(wire_msg *m)
{
    if (!m)
        return;
    blobs_free(m->ids, m->nids);
    blobs_free(m->buffers, m->nbuffers);
    json_decref(m->header);
    json_decref(m->parent);
    json_decref(m->metadata);
    json_decref(m->content);
    memset(m, 0, sizeof *m);
}

static int why_fail(char *why, size_t whylen, const char *text)
{
    snprintf(why, whylen, "%s", text);
    return -1;
}

/* Parses one JSON frame that must hold an object. Rejects invalid UTF-8, NUL
 * bytes and duplicate keys (a duplicate is ambiguous: which one did the signer mean?). */
static json_t *load_object(const blob *f)
{
    if (f->len > WIRE_MAX_JSON)
        return NULL;
    json_error_t e;
    json_t *v = json_loadb(f->data, f->len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &e);
    if (v && !json_is_object(v)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

/* A non-empty string without NUL characters (frames are parsed with NULs
 * allowed, so that a cell holding one gets an answer rather than silence). */
static bool string_field(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_string(v) && json_string_length(v) > 0 &&
           strlen(json_string_value(v)) == json_string_length(v);
}

static int check_header(const json_t *h, char *why, size_t whylen)
{
    if (!string_field(h, "msg_type") || !string_field(h, "msg_id"))
        return why_fail(why, whylen, "header lacks msg_type or msg_id strings");
    const json_t *session = json_object_get(h, "session");
    if (session && (!json_is_string(session) ||
                    strlen(json_string_value(session)) != json_string_length(session)))
        return why_fail(why, whylen, "header session is not a string");
    const json_t *version = json_object_get(h, "version");
    if (version && (!json_is_string(version) || strncmp(json_string_value(version), "5.", 2) != 0))
        return why_fail(why, whylen, "header version is not 5.x");
    return 0;
}

/* Asks the replay cache about a message whose signature checked out. */
static int check_replay(replay_cache *replay, const json_t *h, const blob *sig, char *why, size_t whylen)
{
    const json_t *session = json_object_get(h, "session");
    const char *date = json_string_value(json_object_get(h, "date"));
    enum replay_verdict v = replay_admit(replay, json_string_value(session), json_string_length(session),
                                         date ? msg_date_seconds(date) : NAN, sig->data, sig->len);
    return v == REPLAY_FRESH ? 0 : why_fail(why, whylen, replay_reason(replay, v));
}

static size_t find_delim(const blob *frames, size_t n)
{
    size_t dl = strlen(WIRE_DELIM);
    for (size_t i = 0; i < n; i++)
        if (frames[i].len == dl && memcmp(frames[i].data, WIRE_DELIM, dl) == 0)
            return i;
    return n;
}

int wire_decode(const blob *frames, size_t n, const signer *s, replay_cache *replay, wire_msg *out,
                char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    size_t d = find_delim(frames, n);
    if (d == n)
        return why_fail(why, whylen, "no <IDS|MSG> delimiter");
    if (n - d < 6)
        return why_fail(why, whylen, "fewer than 5 frames after the delimiter");
    const blob *sig = &frames[d + 1];
    const blob *json = &frames[d + 2];
    if (signer_enabled(s)) {
        const void *parts[4] = { json[0].data, json[1].data, json[2].data, json[3].data };
        size_t lens[4] = { json[0].len, json[1].len, json[2].len, json[3].len };
        if (sig->len == 0)
            return why_fail(why, whylen, "missing signature");
        if (!wire_verify(s, sig->data, sig->len, parts, lens, 4))
            return why_fail(why, whylen, sig->len != signer_hex_len(s) ? "signature of wrong length"
                                                                       : "wrong signature");
    }
    out->header = load_object(&json[0]);
    out->parent = load_object(&json[1]);
    out->metadata = load_object(&json[2]);
    out->content = load_object(&json[3]);
    if (!out->header || !out->parent || !out->metadata || !out->content) {
        wire_msg_free(out);
        return why_fail(why, whylen, "a JSON frame is not a valid UTF-8 JSON object");
    }
    if (check_header(out->header, why, whylen) ||
        (signer_enabled(s) && replay && check_replay(replay, out->header, sig, why, whylen))) {
        wire_msg_free(out);
        return -1;
    }
    if (copy_blobs(frames, d, &out->ids) || copy_blobs(frames + d + 6, n - d - 6, &out->buffers)) {
        wire_msg_free(out);
        return why_fail(why, whylen, "out of memory");
    }
    out->nids = d;
    out->nbuffers = n - d - 6;
    out->msg_type = json_string_value(json_object_get(out->header, "msg_type"));
    out->msg_id = json_string_value(json_object_get(out->header, "msg_id"));
    return 0;
}

int wire_recv(void *sock, blob **frames)
{
    blob *b = NULL;
    size_t n = 0, cap = 0;
    bool overflow = false;
    int more = 1;
    *frames = NULL;
    while (more) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, sock, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
            int e = errno;
            zmq_msg_close(&part);
            blobs_free(b, n);
            return e == EAGAIN && n == 0 ? 0 : -1;
        }
        more = zmq_msg_more(&part);
        if (n >= WIRE_MAX_FRAMES)
            overflow = true;        /* keep draining the parts, keep none */
        if (!overflow) {
            if (array_grow(&b, &cap, n + 1, sizeof *b) != 0)
                overflow = true;
        }
        if (!overflow) {
            size_t len = zmq_msg_size(&part);
            b[n].data = malloc(len ? len : 1);
            if (!b[n].data)
                overflow = true;
            else {
                memcpy(b[n].data, zmq_msg_data(&part), len);
                b[n].len = len;
                n++;
            }
        }
        zmq_msg_close(&part);
    }
    if (overflow) {
        blobs_free(b, n);
        return -1;
    }
    *frames = b;
    return (int)n;
}

char *wire_dumps(const json_t *v, size_t *len)
{
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(12)) : strdup("{}");
    if (len)
        *len = s ? strlen(s) : 0;
    return s;
}

int wire_send(void *sock, const signer *s, const blob *ids, size_t nids, const json_t *header,
              const json_t *parent, const json_t *metadata, const json_t *content)
{
    size_t lens[4];
    char *parts[4] = {
        wire_dumps(header, &lens[0]), wire_dumps(parent, &lens[1]),
        wire_dumps(metadata, &lens[2]), wire_dumps(content, &lens[3]),
    };
    char sig[SIG_HEX_MAX + 1] = "";
    int rc = -1;
    if (!parts[0] || !parts[1] || !parts[2] || !parts[3])
        goto done;
    if (signer_enabled(s) &&
        wire_sign(s, (const void *const *)parts, lens, 4, sig))
        goto done;
    rc = 0;
    for (size_t i = 0; i < nids && rc == 0; i++)
        rc = zmq_send(sock, ids[i].data, ids[i].len, ZMQ_SNDMORE) < 0 ? -1 : 0;
    if (rc == 0)
        rc = zmq_send(sock, WIRE_DELIM, strlen(WIRE_DELIM), ZMQ_SNDMORE) < 0 ? -1 : 0;
    if (rc == 0)
        rc = zmq_send(sock, sig, strlen(sig), ZMQ_SNDMORE) < 0 ? -1 : 0;
    for (int i = 0; i < 4 && rc == 0; i++)
        rc = zmq_send(sock, parts[i], lens[i], i < 3 ? ZMQ_SNDMORE : 0) < 0 ? -1 : 0;
    if (rc)
        klog("send failed: %s", zmq_strerror(zmq_errno()));
done:
    for (int i = 0; i < 4; i++)
        free(parts[i]);
    return rc;
}
