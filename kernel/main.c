/* main.c — one binary, three modes: Jupyter kernel, device worker, command line. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "cudalab/version.h"
#include "exec/cli.h"
#include "exec/similarity.h"
#include "exec/worker.h"
#include "server/heartbeat.h"
#include "server/kernel.h"
#include "base/log.h"

static void usage(FILE *f)
{
    fputs("usage: cudalab -f CONNECTION_FILE        run as a Jupyter kernel\n"
          "       cudalab --run CELL [--json]       run a cell and print its results\n"
          "       cudalab --run-file FILE [--json]  the same, the cell read from FILE (- = stdin)\n"
          "       cudalab -f CONNECTION_FILE --cell-timeout SECONDS   stop any cell running longer\n"
          "       cudalab --similarity [--threshold T] [--json] NOTEBOOK...   graded kernels' similarity\n"
          "                 to the built-in variants and to each other (CSV; README, \"Assignments\")\n"
          "       cudalab --version\n"
          "Environment: CUDALAB_BACKEND=cpu forces the CPU backend; CUDALAB_DEBUG=1 logs every message;\n"
          "  CUDALAB_CELL_TIMEOUT=S limits every cell; CUDALAB_INTERRUPT_GRACE_MS (500) is how long an\n"
          "  interrupted command may take to stop before its worker is killed; CUDALAB_MAX_OUTPUT\n"
          "  (1048576) caps the stream bytes of one cell; CUDALAB_MAX_MESSAGE (67108864) the bytes of\n"
          "  one request.\n",
          f);
}

/* The port a socket was given when bound to port 0, or -1. */
static int bound_port(const kernel *k, enum conn_port p)
{
    if (p == PORT_HB)
        return conn_endpoint_port(heartbeat_endpoint(k->hb));
    char ep[512];
    size_t len = sizeof ep;
    return zmq_getsockopt(k->sock[p], ZMQ_LAST_ENDPOINT, ep, &len) == 0 ? conn_endpoint_port(ep) : -1;
}

/* After binding ports of 0: reads the ports chosen back from the sockets and
 * writes them to the connection file, where clients look for them. */
static int save_chosen_ports(const kernel *k, conn_info *c, const char *path)
{
    char err[512];
    for (int p = 0; p < PORT_COUNT; p++) {
        if (c->ports[p] == 0 && (c->ports[p] = bound_port(k, (enum conn_port)p)) < 0) {
            klog("cannot tell which port the %s socket was given", conn_port_name((enum conn_port)p));
            return -1;
        }
    }
    if (conn_save_ports(path, c, err, sizeof err)) {
        klog("%s", err);
        return -1;
    }
    return 0;
}

static int run_kernel(const char *path)
{
    conn_info c;
    char err[512];
    if (conn_load(path, &c, err, sizeof err)) {
        klog("%s", err);
        return 2;
    }
    if (conn_resolve(&c, err, sizeof err)) {
        klog("%s", err);
        conn_free(&c);
        return 2;
    }
    bool save_ports = conn_has_unset_port(&c);
    conn_choose_ipc_ports(&c);
    kernel k;
    int rc = kernel_open(&k, &c) || (save_ports && save_chosen_ports(&k, &c, path)) ? 1 : kernel_loop(&k);
    kernel_close(&k);
    conn_free(&c);
    return rc;
}

int main(int argc, char **argv)
{
    const char *conn = NULL, *cell = NULL, *file = NULL;
    bool json_mode = false;
    klog_verbose = getenv("CUDALAB_DEBUG") && strcmp(getenv("CUDALAB_DEBUG"), "0") != 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_next = i + 1 < argc;
        if ((strcmp(a, "-f") == 0 || strcmp(a, "--connection-file") == 0) && has_next)
            conn = argv[++i];
        else if (strcmp(a, "--run") == 0 && has_next)
            cell = argv[++i];
        else if (strcmp(a, "--run-file") == 0 && has_next)
            file = argv[++i];
        else if (strcmp(a, "--cell-timeout") == 0 && has_next)
            setenv("CUDALAB_CELL_TIMEOUT", argv[++i], 1);
        else if (strcmp(a, "--json") == 0)
            json_mode = true;
        else if (strcmp(a, "--similarity") == 0)
            return similarity_main(argc - i - 1, argv + i + 1);
        else if (strcmp(a, "--worker") == 0 && has_next)
            return worker_main(atoi(argv[++i]));
        else if (strcmp(a, "--version") == 0) {
            printf("cudalab %s\n", CUDALAB_VERSION);
            return 0;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "cudalab: unknown or incomplete argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (conn)
        return run_kernel(conn);
    if (file) {
        char *text = cli_read_file(file);
        if (!text) {
            fprintf(stderr, "cudalab: cannot read %s\n", file);
            return 2;
        }
        int rc = cli_run_cell(text, json_mode);
        free(text);
        return rc;
    }
    if (cell)
        return cli_run_cell(cell, json_mode);
    usage(stderr);
    return 2;
}
