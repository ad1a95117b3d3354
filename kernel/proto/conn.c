/* conn.c — parse and validate a Jupyter connection file (see conn.h). */
#include "proto/conn.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const port_keys[PORT_COUNT] = {
    "shell_port", "iopub_port", "stdin_port", "control_port", "hb_port",
};

const char *conn_port_name(enum conn_port p)
{
    static const char *const names[PORT_COUNT] = { "shell", "iopub", "stdin", "control", "hb" };
    return (unsigned)p < PORT_COUNT ? names[p] : "?";
}

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int copy_string(json_t *root, const char *name, const char *def, char *dst, size_t cap,
                       char *err, size_t errlen)
{
    json_t *v = json_object_get(root, name);
    if (!v) {
        if (!def)
            return fail(err, errlen, "connection file: missing \"%s\"", name);
        snprintf(dst, cap, "%s", def);
        return 0;
    }
    if (!json_is_string(v))
        return fail(err, errlen, "connection file: \"%s\" must be a string", name);
    if (json_string_length(v) >= cap || strlen(json_string_value(v)) != json_string_length(v))
        return fail(err, errlen, "connection file: \"%s\" is too long or holds a NUL", name);
    memcpy(dst, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

static int parse_ports(json_t *root, conn_info *c, char *err, size_t errlen)
{
    for (int p = 0; p < PORT_COUNT; p++) {
        json_t *v = json_object_get(root, port_keys[p]);
        if (!json_is_integer(v))
            return fail(err, errlen, "connection file: \"%s\" must be an integer", port_keys[p]);
        json_int_t port = json_integer_value(v);
        /* 0 asks the OS for a free port (tcp only); ipc uses it as a file suffix. */
        if (port < 0 || port > 65535)
            return fail(err, errlen, "connection file: \"%s\" must be 0..65535", port_keys[p]);
        c->ports[p] = (int)port;
    }
    return 0;
}

static int parse_key(json_t *root, conn_info *c, char *err, size_t errlen)
{
    json_t *scheme = json_object_get(root, "signature_scheme");
    json_t *key = json_object_get(root, "key");
    if (key && !json_is_string(key))
        return fail(err, errlen, "connection file: \"%s\" must be a string", "key");
    const char *k = key ? json_string_value(key) : "";
    size_t klen = key ? json_string_length(key) : 0;
    if (klen > 0) {
        const char *s = json_is_string(scheme) ? json_string_value(scheme) : "hmac-sha256";
        if (scheme && !json_is_string(scheme))
            return fail(err, errlen, "connection file: \"%s\" must be a string", "signature_scheme");
        if (strcmp(s, "hmac-sha256") != 0)
            return fail(err, errlen, "connection file: signature_scheme \"%s\" is not supported "
                        "(only hmac-sha256)", s);
    }
    c->key = malloc(klen + 1);
    if (!c->key)
        return fail(err, errlen, "connection file: %s", "out of memory");
    memcpy(c->key, k, klen + 1);
    c->key_len = klen;
    return 0;
}

int conn_parse(const char *text, size_t len, conn_info *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        snprintf(err, errlen, "connection file: invalid JSON at line %d: %s", jerr.line, jerr.text);
        for (char *p = err; *p; p++)    /* jansson may quote the input: keep the reason one line */
            if ((unsigned char)*p < 0x20)
                *p = ' ';
        return -1;
    }
    int rc = -1;
    if (!json_is_object(root)) {
        fail(err, errlen, "connection file: %s", "top level must be an object");
        goto done;
    }
    if (copy_string(root, "transport", "tcp", out->transport, sizeof out->transport, err, errlen) ||
        copy_string(root, "ip", "127.0.0.1", out->ip, sizeof out->ip, err, errlen) ||
        copy_string(root, "kernel_name", "", out->kernel_name, sizeof out->kernel_name, err, errlen) ||
        parse_ports(root, out, err, errlen) || parse_key(root, out, err, errlen))
        goto done;
    if (strcmp(out->transport, "tcp") != 0 && strcmp(out->transport, "ipc") != 0) {
        fail(err, errlen, "connection file: transport \"%s\" is not tcp or ipc", out->transport);
        goto done;
    }
    if (out->ip[0] == '\0') {
        fail(err, errlen, "connection file: %s", "\"ip\" is empty");
        goto done;
    }
    rc = 0;
done:
    json_decref(root);
    if (rc)
        conn_free(out);
    return rc;
}

int conn_load(const char *path, conn_info *out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open connection file %s: %m", path);
        return -1;
    }
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf, f);
    int too_big = !feof(f);
    fclose(f);
    if (too_big) {
        snprintf(err, errlen, "connection file %s is larger than 64 KiB", path);
        return -1;
    }
    return conn_parse(buf, n, out, err, errlen);
}

void conn_free(conn_info *c)
{
    free(c->key);
    c->key = NULL;
    c->key_len = 0;
}

bool conn_is_ipv6(const conn_info *c)
{
    return strcmp(c->transport, "tcp") == 0 && strchr(c->ip, ':') != NULL;
}

void conn_endpoint(const conn_info *c, enum conn_port p, char *buf, size_t len)
{
    int port = c->ports[p];
    if (strcmp(c->transport, "ipc") == 0)
        snprintf(buf, len, "ipc://%s-%d", c->ip, port);
    else if (port == 0)
        snprintf(buf, len, conn_is_ipv6(c) ? "tcp://[%s]:*" : "tcp://%s:*", c->ip);
    else
        snprintf(buf, len, conn_is_ipv6(c) ? "tcp://[%s]:%d" : "tcp://%s:%d", c->ip, port);
}
