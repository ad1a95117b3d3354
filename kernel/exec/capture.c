/* capture.c — the worker's stdout through a pipe and a reader thread (see capture.h). */
#include "exec/capture.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static struct {
    pthread_mutex_t lock;
    char *buf;
    size_t len, dropped;
    int rd;
    bool on;
} cap = { .lock = PTHREAD_MUTEX_INITIALIZER, .rd = -1 };

static void *reader(void *arg)
{
    char chunk[8192];
    for (;;) {
        ssize_t n = read(cap.rd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return NULL;
        pthread_mutex_lock(&cap.lock);
        size_t keep = cap.len < CAPTURE_MAX ? CAPTURE_MAX - cap.len : 0;
        if (keep > (size_t)n)
            keep = (size_t)n;
        if (keep && !cap.buf)
            cap.buf = malloc(CAPTURE_MAX + 1);
        if (keep && cap.buf) {
            memcpy(cap.buf + cap.len, chunk, keep);
            cap.len += keep;
        }
        cap.dropped += (size_t)n - (cap.buf ? keep : 0);
        pthread_mutex_unlock(&cap.lock);
    }
}

int capture_start(void)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    pthread_t t;
    cap.rd = p[0];
    if (dup2(p[1], STDOUT_FILENO) < 0 || pthread_create(&t, NULL, reader, NULL) != 0) {
        close(p[0]);
        close(p[1]);
        cap.rd = -1;
        return -1;
    }
    close(p[1]);
    pthread_detach(t);
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    cap.on = true;
    return 0;
}

char *capture_take(size_t *dropped)
{
    *dropped = 0;
    if (!cap.on)
        return NULL;
    fflush(stdout);
    /* what is in the pipe now was printed by this command: let the reader have it */
    for (int i = 0; i < 200; i++) {
        int pending = 0;
        if (ioctl(cap.rd, FIONREAD, &pending) < 0 || pending == 0)
            break;
        nanosleep(&(struct timespec){ 0, 250 * 1000 }, NULL);
    }
    nanosleep(&(struct timespec){ 0, 200 * 1000 }, NULL);     /* a read() the reader has not appended yet */
    pthread_mutex_lock(&cap.lock);
    char *out = malloc(cap.len + 1);
    if (out) {
        memcpy(out, cap.buf ? cap.buf : "", cap.len);
        out[cap.len] = '\0';
    }
    *dropped = cap.dropped;
    cap.len = cap.dropped = 0;
    pthread_mutex_unlock(&cap.lock);
    return out;
}
