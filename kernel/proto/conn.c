/* conn.c — parse and validate a Jupyter connection file, resolve its address
 * and write back the ports chosen at bind (see conn.h). */
#include "proto/conn.h"

#include "base/text.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const port_keys[PORT_COUNT] = {
    "shell_port", "iopub_port", "stdin_port", "control_port", "hb_port",
};

const char *conn_port_name(enum conn_port p)
{
    static const char *const names[PORT_COUNT] = { "shell", "iopub", "stdin", "control", "hb" };
    return (unsigned)p < PORT_COUNT ? names[p] : "?";
}

static int copy_string(json_t *root, const char *name, const char *def, char *dst, size_t cap,
                       char *err, size_t errlen)
{
    json_t *v = json_object_get(root, name);
    if (!v) {
        if (!def)
            return fail_into(err, errlen, "connection file: missing \"%s\"", name);
        snprintf(dst, cap, "%s", def);
        return 0;
    }
    if (!json_is_string(v))
        return fail_into(err, errlen, "connection file: \"%s\" must be a string", name);
    if (json_string_length(v) >= cap || strlen(json_string_value(v)) != json_string_length(v))
        return fail_into(err, errlen, "connection file: \"%s\" is too long or holds a NUL", name);
    memcpy(dst, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

static int parse_ports(json_t *root, conn_info *c, char *err, size_t errlen)
{
    for (int p = 0; p < PORT_COUNT; p++) {
        json_t *v = json_object_get(root, port_keys[p]);
        if (!json_is_integer(v))
            return fail_into(err, errlen, "connection file: \"%s\" must be an integer", port_keys[p]);
        json_int_t port = json_integer_value(v);
        /* 0 asks the OS for a free port (tcp only); ipc uses it as a file suffix. */
        if (port < 0 || port > 65535)
            return fail_into(err, errlen, "connection file: \"%s\" must be 0..65535", port_keys[p]);
        c->ports[p] = (int)port;
    }
    return 0;
}

static int parse_key(json_t *root, conn_info *c, char *err, size_t errlen)
{
    json_t *scheme = json_object_get(root, "signature_scheme");
    json_t *key = json_object_get(root, "key");
    if (key && !json_is_string(key))
        return fail_into(err, errlen, "connection file: \"%s\" must be a string", "key");
    const char *k = key ? json_string_value(key) : "";
    size_t klen = key ? json_string_length(key) : 0;
    c->scheme = SIGN_SCHEME_DEFAULT;
    if (klen > 0 && scheme) {
        if (!json_is_string(scheme))
            return fail_into(err, errlen, "connection file: \"%s\" must be a string", "signature_scheme");
        int found = sign_scheme_parse(json_string_value(scheme));
        if (found < 0)
            return fail_into(err, errlen, "connection file: signature_scheme \"%.64s\" is not supported "
                        "(supported: %s)", json_string_value(scheme), sign_scheme_names());
        c->scheme = (enum sign_scheme)found;
    }
    c->key = malloc(klen + 1);
    if (!c->key)
        return fail_into(err, errlen, "connection file: %s", "out of memory");
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
        fail_into(err, errlen, "connection file: %s", "top level must be an object");
        goto done;
    }
    if (copy_string(root, "transport", "tcp", out->transport, sizeof out->transport, err, errlen) ||
        copy_string(root, "ip", "127.0.0.1", out->ip, sizeof out->ip, err, errlen) ||
        copy_string(root, "kernel_name", "", out->kernel_name, sizeof out->kernel_name, err, errlen) ||
        parse_ports(root, out, err, errlen) || parse_key(root, out, err, errlen))
        goto done;
    if (strcmp(out->transport, "tcp") != 0 && strcmp(out->transport, "ipc") != 0) {
        fail_into(err, errlen, "connection file: transport \"%s\" is not tcp or ipc", out->transport);
        goto done;
    }
    if (out->ip[0] == '\0') {
        fail_into(err, errlen, "connection file: %s", "\"ip\" is empty");
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

/* ---- what binding needs: addresses and ports ---- */

int conn_resolve(conn_info *c, char *err, size_t errlen)
{
    struct in_addr v4;
    /* "*", dotted quads and IPv6 literals (with a zone too) go to ZeroMQ as they are */
    if (strcmp(c->transport, "tcp") != 0 || strcmp(c->ip, "*") == 0 || strchr(c->ip, ':') ||
        inet_pton(AF_INET, c->ip, &v4) == 1)
        return 0;
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res;
    int rc = getaddrinfo(c->ip, NULL, &hints, &res);
    if (rc != 0)
        return fail_into(err, errlen, "connection file: ip \"%s\" does not resolve to an address: %s",
                    c->ip, rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
    const struct addrinfo *pick = res;
    for (const struct addrinfo *a = res; a; a = a->ai_next)
        if (a->ai_family == AF_INET) {
            pick = a;
            break;
        }
    const void *addr = pick->ai_family == AF_INET
                           ? (const void *)&((const struct sockaddr_in *)pick->ai_addr)->sin_addr
                           : (const void *)&((const struct sockaddr_in6 *)pick->ai_addr)->sin6_addr;
    char text[INET6_ADDRSTRLEN];
    bool ok = inet_ntop(pick->ai_family, addr, text, sizeof text) != NULL;
    freeaddrinfo(res);
    if (!ok)
        return fail_into(err, errlen, "connection file: ip \"%s\" resolves to no usable address", c->ip);
    snprintf(c->ip, sizeof c->ip, "%s", text);
    return 0;
}

bool conn_has_unset_port(const conn_info *c)
{
    for (int p = 0; p < PORT_COUNT; p++)
        if (c->ports[p] == 0)
            return true;
    return false;
}

static bool ipc_suffix_taken(const conn_info *c, int n)
{
    for (int p = 0; p < PORT_COUNT; p++)
        if (c->ports[p] == n)
            return true;
    char path[sizeof c->ip + 16];
    snprintf(path, sizeof path, "%s-%d", c->ip, n);
    return access(path, F_OK) == 0;
}

void conn_choose_ipc_ports(conn_info *c)
{
    if (strcmp(c->transport, "ipc") != 0)
        return;
    int n = 1;
    for (int p = 0; p < PORT_COUNT; p++) {
        if (c->ports[p] != 0)
            continue;
        while (ipc_suffix_taken(c, n))
            n++;
        c->ports[p] = n;
    }
}

int conn_endpoint_port(const char *endpoint)
{
    const char *colon = strrchr(endpoint, ':');
    char *end;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    return colon && end != colon + 1 && *end == '\0' && port > 0 && port <= 65535 ? (int)port : -1;
}

/* Writes text to a new file beside path, of path's mode, and renames it over path. */
static int replace_file(const char *path, const char *text, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return fail_into(err, errlen, "cannot stat connection file %s: %s", path, strerror(errno));
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);   /* it holds the key */
    if (fd < 0)
        return fail_into(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
    size_t len = strlen(text);
    errno = 0;
    int e = write(fd, text, len) == (ssize_t)len && fchmod(fd, st.st_mode & 07777) == 0 ? 0
            : errno ? errno : EIO;  /* a short write leaves errno alone */
    if (close(fd) != 0 && !e)
        e = errno;
    if (!e && rename(tmp, path) != 0)
        e = errno;
    if (!e)
        return 0;
    unlink(tmp);
    return fail_into(err, errlen, "cannot rewrite connection file %s: %s", path, strerror(e));
}

int conn_save_ports(const char *path, const conn_info *c, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(root)) {
        json_decref(root);
        return fail_into(err, errlen, "connection file %s changed under us: %s", path, jerr.text);
    }
    int rc = 0;
    for (int p = 0; p < PORT_COUNT && rc == 0; p++)
        rc = json_object_set_new(root, port_keys[p], json_integer(c->ports[p]));
    char *text = rc == 0 ? json_dumps(root, JSON_INDENT(2)) : NULL;
    json_decref(root);
    if (!text)
        return fail_into(err, errlen, "connection file: %s", "out of memory");
    rc = replace_file(path, text, err, errlen);
    free(text);
    return rc;
}
