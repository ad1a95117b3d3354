/* conn.h — the Jupyter connection file: where to bind and how to sign.
 *
 * {"transport": "tcp"|"ipc", "ip": "127.0.0.1", "shell_port": 5000, ...,
 *  "signature_scheme": "hmac-sha256", "key": "..."}. An empty key means
 * messages are neither signed nor verified.
 */
#ifndef CUDALAB_CONN_H
#define CUDALAB_CONN_H

#include <stdbool.h>
#include <stddef.h>

enum conn_port { PORT_SHELL, PORT_IOPUB, PORT_STDIN, PORT_CONTROL, PORT_HB, PORT_COUNT };

typedef struct conn_info {
    char transport[8];          /* "tcp" or "ipc" */
    char ip[256];               /* tcp: address or "*"; ipc: path prefix */
    int ports[PORT_COUNT];
    char *key;                  /* owned; "" when unsigned */
    size_t key_len;
    char kernel_name[64];
} conn_info;

/* Parses connection-file JSON text. Returns 0, or -1 with a one-line reason in err.
 * On success free the result with conn_free. */
int conn_parse(const char *text, size_t len, conn_info *out, char *err, size_t errlen);
int conn_load(const char *path, conn_info *out, char *err, size_t errlen);
void conn_free(conn_info *c);

/* The ZeroMQ endpoint of one port: tcp://ip:port, tcp://[v6]:port, ipc://ip-port. */
void conn_endpoint(const conn_info *c, enum conn_port p, char *buf, size_t len);
bool conn_is_ipv6(const conn_info *c);
const char *conn_port_name(enum conn_port p);

#endif
