/* conn.h — the Jupyter connection file: where to bind and how to sign.
 *
 * {"transport": "tcp"|"ipc", "ip": "127.0.0.1", "shell_port": 5000, ...,
 *  "signature_scheme": "hmac-sha256", "key": "..."}. An empty key means
 * messages are neither signed nor verified.
 *
 * As ipykernel does: a port of 0 means "any free one" (tcp: the OS picks it
 * at bind; ipc: the first free file suffix from 1 on), and the ports chosen
 * are then written back to the file for clients to read; a host name in "ip"
 * ("localhost") is resolved to the address that is bound.
 */
#ifndef CUDALAB_CONN_H
#define CUDALAB_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/sign.h"

enum conn_port { PORT_SHELL, PORT_IOPUB, PORT_STDIN, PORT_CONTROL, PORT_HB, PORT_COUNT };

typedef struct conn_info {
    char transport[8];          /* "tcp" or "ipc" */
    char ip[256];               /* tcp: address or "*"; ipc: path prefix */
    int ports[PORT_COUNT];
    char *key;                  /* owned; "" when unsigned */
    size_t key_len;
    enum sign_scheme scheme;    /* signature_scheme (checked only with a key) */
    char kernel_name[64];
} conn_info;

/* Parses connection-file JSON text. Returns 0, or -1 with a one-line reason in err.
 * On success free the result with conn_free. */
int conn_parse(const char *text, size_t len, conn_info *out, char *err, size_t errlen);
int conn_load(const char *path, conn_info *out, char *err, size_t errlen);
void conn_free(conn_info *c);

/* tcp with a host name for ip: replaces it by the address it resolves to (IPv4
 * first, which is what clients connecting to the name reach). Returns 0, or -1
 * with a one-line reason when it does not resolve. */
int conn_resolve(conn_info *c, char *err, size_t errlen);
/* Whether any port is 0 (to be chosen when binding, then saved). */
bool conn_has_unset_port(const conn_info *c);
/* ipc: gives each port of 0 the first suffix from 1 on whose file does not exist
 * and that no other port uses. tcp ports of 0 are chosen by the OS at bind. */
void conn_choose_ipc_ports(conn_info *c);
/* The port of a bound tcp endpoint ("tcp://127.0.0.1:40123"), or -1. */
int conn_endpoint_port(const char *endpoint);
/* Rewrites the connection file at path with c's ports, every other field kept,
 * atomically (a new file renamed over it, of the same mode). Returns 0 or -1
 * with a reason. */
int conn_save_ports(const char *path, const conn_info *c, char *err, size_t errlen);

/* The ZeroMQ endpoint of one port: tcp://ip:port, tcp://[v6]:port, ipc://ip-port. */
void conn_endpoint(const conn_info *c, enum conn_port p, char *buf, size_t len);
bool conn_is_ipv6(const conn_info *c);
const char *conn_port_name(enum conn_port p);

#endif
