/* wire.h — Jupyter wire format: multipart ZeroMQ messages.
 *
 *   [routing ids...] "<IDS|MSG>" signature header parent_header metadata content [buffers...]
 *
 * wire_decode checks everything a peer could get wrong (framing, signature,
 * replay, JSON types, sizes) and says why it dropped a message; it never
 * trusts a field it has not checked. wire_send frames and signs outgoing
 * messages.
 */
#ifndef CUDALAB_WIRE_H
#define CUDALAB_WIRE_H

#include <jansson.h>
#include <stddef.h>

#include "proto/replay.h"
#include "proto/sign.h"

#define WIRE_DELIM "<IDS|MSG>"
#define WIRE_MAX_FRAMES 4096             /* ids + buffers in one message */
#define WIRE_MAX_JSON (64u << 20)        /* one JSON frame */

typedef struct blob {
    void *data;
    size_t len;
} blob;

typedef struct wire_msg {
    blob *ids;                  /* routing identities, owned */
    size_t nids;
    json_t *header, *parent, *metadata, *content;   /* owned, all objects */
    blob *buffers;              /* owned */
    size_t nbuffers;
    const char *msg_type;       /* borrowed from header */
    const char *msg_id;         /* borrowed from header */
} wire_msg;

/* Decodes frames (borrowed). Returns 0 and fills out, or -1 with why filled
 * (a short reason for the log). With signing on, a message is then judged by
 * the replay cache (see replay.h), which may be NULL (no replay check). */
int wire_decode(const blob *frames, size_t n, const signer *s, replay_cache *replay, wire_msg *out,
                char *why, size_t whylen);
void wire_msg_free(wire_msg *m);

/* Receives every part of one multipart message (non-blocking: call when the
 * socket is readable). Returns the number of frames, 0 when none was ready,
 * -1 on error or when the message has too many parts (it is consumed). Free
 * the frames with blobs_free. */
int wire_recv(void *sock, blob **frames);
void blobs_free(blob *b, size_t n);

/* Signs and sends one message. ids may be NULL (iopub uses a topic as its one id).
 * metadata NULL means {}. Returns 0 or -1 (logged). */
int wire_send(void *sock, const signer *s, const blob *ids, size_t nids, const json_t *header,
              const json_t *parent, const json_t *metadata, const json_t *content);

/* Serialises a JSON value compactly; caller frees. */
char *wire_dumps(const json_t *v, size_t *len);

#endif
