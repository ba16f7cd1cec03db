/* decision_log.c: the decision log's bounded queue and its writer thread (see
 * ir_obs.h). The queue is a ring of malloc'd lines behind a mutex; the writer
 * takes every queued line at once and writes them outside the lock. */
#include "obs/ir_obs.h"

#include "core/ir_core.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

typedef struct line {
    char *data;
    size_t len;
} line;

struct iro_dlog {
    iro_dlog_cfg cfg;
    uint64_t threshold; /* ids hashing below this are sampled */
    bool all;           /* sample_rate >= 1 */
    int fd;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    line *ring;
    size_t head, count; /* under mu */
    bool stop;          /* under mu */
    _Atomic uint64_t written, dropped;
    bool warned; /* the writer thread's: a failed write was logged */
    /* What the writer holds while it writes (freed if iro_dlog_close cancels it). */
    line *batch;
    size_t nbatch;
    char *buf;
};

/* How long iro_dlog_close waits for queued lines to be written before it gives up
 * on them (a FIFO nobody reads, a stuck mount): shutdown must end. */
#define CLOSE_WAIT_S 2

static void drop(iro_dlog *d) {
    atomic_fetch_add_explicit(&d->dropped, 1, memory_order_relaxed);
}

/* Writes all of b[0..n) (a short write is continued); false on an error. A blocked
 * write is where iro_dlog_close may cancel the thread, and nowhere else. */
static bool write_all(int fd, const char *b, size_t n) {
    while (n) {
        pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
        ssize_t k = write(fd, b, n);
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        b += k;
        n -= (size_t)k;
    }
    return true;
}

static void free_held(iro_dlog *d) {
    free(d->buf);
    d->buf = NULL;
    for (size_t i = 0; i < d->nbatch; i++) free(d->batch[i].data);
    d->nbatch = 0;
}

static void on_cancel(void *arg) {
    iro_dlog *d = arg;
    free_held(d);
    free(d->batch);
    d->batch = NULL;
}

/* Writes the held batch as a single buffer, so lines never interleave. */
static void flush_batch(iro_dlog *d) {
    size_t total = 0, n = d->nbatch;
    for (size_t i = 0; i < n; i++) total += d->batch[i].len + 1;
    d->buf = malloc(total ? total : 1);
    size_t at = 0;
    for (size_t i = 0; d->buf && i < n; i++) {
        memcpy(d->buf + at, d->batch[i].data, d->batch[i].len);
        at += d->batch[i].len;
        d->buf[at++] = '\n';
    }
    int e = 0;
    bool ok = d->buf && write_all(d->fd, d->buf, at);
    if (!ok) e = d->buf ? errno : ENOMEM;
    atomic_fetch_add_explicit(ok ? &d->written : &d->dropped, n, memory_order_relaxed);
    if (!ok && !d->warned)
        IR_WARN("decision_log", "cannot write %s (%s): its lines are dropped and counted",
                d->cfg.path ? d->cfg.path : "the decision log", e ? strerror(e) : "no progress");
    d->warned |= !ok;
    free_held(d);
}

static void *writer(void *arg) {
    iro_dlog *d = arg;
    size_t cap = d->cfg.queue;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    d->batch = malloc(cap * sizeof *d->batch);
    pthread_cleanup_push(on_cancel, d);
    for (;;) {
        pthread_mutex_lock(&d->mu);
        while (d->count == 0 && !d->stop) pthread_cond_wait(&d->cv, &d->mu);
        while (d->count && d->batch) {
            d->batch[d->nbatch++] = d->ring[d->head];
            d->head = (d->head + 1) % cap;
            d->count--;
        }
        bool stop = d->stop && d->count == 0;
        pthread_mutex_unlock(&d->mu);
        if (d->nbatch) flush_batch(d);
        if (stop || !d->batch) break;
    }
    pthread_cleanup_pop(1);
    return NULL;
}

iro_dlog *iro_dlog_open(const iro_dlog_cfg *cfg, char *err, size_t errlen) {
    iro_dlog *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->cfg = *cfg;
    if (!d->cfg.queue) d->cfg.queue = 8192;
    if (!d->cfg.max_line) d->cfg.max_line = 256 * 1024;
    double rate = cfg->sample_rate;
    d->all = rate >= 1;
    d->threshold = rate <= 0 || d->all ? 0 : (uint64_t)(rate * 18446744073709551616.0); /* < 2^64 */
    d->ring = calloc(d->cfg.queue, sizeof *d->ring);
    /* O_NONBLOCK for the open only: a FIFO without a reader would wait for one (the
     * admin port never came up); it fails with ENXIO instead. Writes block as before. */
    d->fd = cfg->path
                ? open(cfg->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0640)
                : -1;
    int e = errno;
    if (d->fd >= 0) fcntl(d->fd, F_SETFL, fcntl(d->fd, F_GETFL) & ~O_NONBLOCK);
    if (!d->ring || d->fd < 0) {
        snprintf(err, errlen, "cannot open '%s': %s", cfg->path ? cfg->path : "",
                 !d->ring     ? "out of memory"
                 : e == ENXIO ? "a FIFO that nothing reads"
                              : strerror(e));
        if (d->fd >= 0) close(d->fd);
        free(d->ring);
        free(d);
        return NULL;
    }
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    if (pthread_create(&d->thread, NULL, writer, d)) {
        snprintf(err, errlen, "cannot start the decision log's writer thread");
        pthread_mutex_destroy(&d->mu);
        pthread_cond_destroy(&d->cv);
        close(d->fd);
        free(d->ring);
        free(d);
        return NULL;
    }
    return d;
}

void iro_dlog_close(iro_dlog *d) {
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    /* The writer drains the queue, unless a write blocks past the wait (a FIFO nobody
     * reads, a stuck mount): then it is cancelled in that write, and the rest dropped. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += CLOSE_WAIT_S;
    if (pthread_timedjoin_np(d->thread, NULL, &until)) {
        IR_WARN("decision_log",
                "its writes to %s did not finish within %d s: the rest of its "
                "lines are dropped",
                d->cfg.path ? d->cfg.path : "the decision log", CLOSE_WAIT_S);
        pthread_cancel(d->thread);
        pthread_join(d->thread, NULL);
    }
    for (size_t i = 0; i < d->count; i++) free(d->ring[(d->head + i) % d->cfg.queue].data);
    close(d->fd);
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    free(d->ring);
    free(d);
}

bool iro_dlog_sampled(const iro_dlog *d, const char *id, size_t len) {
    if (!d) return false;
    if (d->all) return true;
    if (d->threshold == 0) return false;
    return XXH3_64bits(id, len) < d->threshold;
}

int iro_dlog_write(iro_dlog *d, const char *s, size_t len) {
    if (!d) return -1;
    if (len > d->cfg.max_line) {
        drop(d);
        return -1;
    }
    char *copy = malloc(len ? len : 1);
    if (!copy) {
        drop(d);
        return -1;
    }
    memcpy(copy, s, len);
    pthread_mutex_lock(&d->mu);
    bool room = d->count < d->cfg.queue && !d->stop;
    if (room) {
        d->ring[(d->head + d->count) % d->cfg.queue] = (line){copy, len};
        d->count++;
        pthread_cond_signal(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    if (!room) {
        free(copy);
        drop(d);
        return -1;
    }
    return 0;
}

void iro_dlog_stats_get(const iro_dlog *d, iro_dlog_stats *out) {
    memset(out, 0, sizeof *out);
    if (!d) return;
    out->written = atomic_load_explicit(&d->written, memory_order_relaxed);
    out->dropped = atomic_load_explicit(&d->dropped, memory_order_relaxed);
}
