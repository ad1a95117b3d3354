/* msg.c — message headers (see msg.h). */
#include "proto/msg.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

void msg_uuid(char out[37])
{
    unsigned char b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        /* getrandom on Linux >= 3.17 does not fail for 16 bytes; keep ids unique anyway */
        static uint64_t counter;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ++counter;
        for (int i = 0; i < 16; i++)
            b[i] = (unsigned char)(x >> (8 * (i % 8))) ^ (unsigned char)(i * 37);
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
}

void msg_date(char out[32])
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%06ldZ", ts.tv_nsec / 1000);
}

json_t *msg_header(const char *msg_type, const char *session)
{
    char id[37], date[32];
    msg_uuid(id);
    msg_date(date);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "msg_id", id, "session", session,
                     "username", "cudalab", "date", date, "msg_type", msg_type, "version",
                     PROTOCOL_VERSION);
}

double msg_date_seconds(const char *date)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *p = date ? strptime(date, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!p)
        return -1;
    double frac = 0;
    if (*p == '.') {
        char *end;
        frac = strtod(p, &end);         /* ".123456" */
        p = end;
    }
    double offset = 0;
    if (*p == '+' || *p == '-') {
        int h = 0, m = 0;
        if (sscanf(p + 1, "%2d:%2d", &h, &m) < 1)
            return -1;
        offset = (*p == '-' ? -1 : 1) * (h * 3600.0 + m * 60.0);
    } else if (*p != 'Z' && *p != '\0') {
        return -1;
    }
    return (double)timegm(&tm) + frac - offset;
}
