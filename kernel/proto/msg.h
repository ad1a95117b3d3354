/* msg.h — message headers: ids, dates and the protocol version we claim. */
#ifndef CUDALAB_MSG_H
#define CUDALAB_MSG_H

#include <jansson.h>

#define PROTOCOL_VERSION "5.3"

/* 36-character random (version 4) UUID plus NUL. */
void msg_uuid(char out[37]);
/* ISO 8601 UTC with microseconds: 2026-11-21T23:26:44.123456Z (28 chars + NUL). */
void msg_date(char out[32]);
/* A new header object: msg_id, session, username, date, msg_type, version. */
json_t *msg_header(const char *msg_type, const char *session);
/* Seconds since the epoch of a header date (ISO 8601; UTC unless it carries an
 * offset), or -1 when it is not one. */
double msg_date_seconds(const char *date);

#endif
