/* spool.c: a bounded queue of lines and the thread that writes them (see ir_core.h).
 * The queue is a ring of malloc'd copies behind a mutex; the writer takes every
 * queued line at once and writes them as one buffer, outside the lock. */
#include "core/ir_core.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct line {
    char *data;
    size_t len;
} line;

struct ir_spool {
    ir_spool_cfg cfg;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    line *ring;
    size_t head, count, bytes; /* under mu */
    bool stop;                 /* under mu */
    _Atomic uint64_t written, dropped;
    uint64_t told; /* the writer's: drops already passed to on_drops */
    bool failed;   /* the writer's: on_fail was called */
    line *batch;   /* what the writer holds while it writes */
    size_t nbatch;
    char *buf;
};

static void count_drop(ir_spool *s, uint64_t n) {
    atomic_fetch_add_explicit(&s->dropped, n, memory_order_relaxed);
}

/* Writes all of b[0..n) (a short write is continued); false on an error. A blocked
 * write is where ir_spool_close may cancel the thread, and nowhere else. */
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

static void free_held(ir_spool *s) {
    free(s->buf);
    s->buf = NULL;
    for (size_t i = 0; i < s->nbatch; i++) free(s->batch[i].data);
    s->nbatch = 0;
}

static void on_cancel(void *arg) {
    ir_spool *s = arg;
    count_drop(s, s->nbatch); /* cancelled in their write */
    free_held(s);
    free(s->batch);
    s->batch = NULL;
}

/* Joins the held lines into one buffer (so they never interleave with another
 * writer's) and writes it; then tells the owner of a first failure, or of drops
 * counted since it last heard, once a write went through. */
static void flush_batch(ir_spool *s) {
    size_t total = 0, n = s->nbatch, at = 0;
    for (size_t i = 0; i < n; i++) total += s->batch[i].len + 1;
    s->buf = malloc(total ? total : 1);
    for (size_t i = 0; s->buf && i < n; i++) {
        memcpy(s->buf + at, s->batch[i].data, s->batch[i].len);
        at += s->batch[i].len;
        if (s->cfg.newline) s->buf[at++] = '\n';
    }
    bool ok = s->buf && write_all(s->cfg.fd, s->buf, at);
    int e = s->buf ? errno : ENOMEM;
    free_held(s);
    if (ok)
        atomic_fetch_add_explicit(&s->written, n, memory_order_relaxed);
    else
        count_drop(s, n);
    if (!ok && !s->failed && s->cfg.on_fail) s->cfg.on_fail(s, s->cfg.arg, e);
    s->failed |= !ok;
    uint64_t dropped = atomic_load_explicit(&s->dropped, memory_order_relaxed);
    if (ok && dropped > s->told && s->cfg.on_drops &&
        s->cfg.on_drops(s, s->cfg.arg, dropped - s->told))
        s->told = dropped;
}

/* Moves every queued line to the writer's batch (mu held). */
static void take_all(ir_spool *s) {
    while (s->count) {
        s->batch[s->nbatch++] = s->ring[s->head];
        s->bytes -= s->ring[s->head].len;
        s->head = (s->head + 1) % s->cfg.max_lines;
        s->count--;
    }
}

static void *writer(void *arg) {
    ir_spool *s = arg;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    pthread_cleanup_push(on_cancel, s);
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (s->count == 0 && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
        take_all(s);
        bool stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (s->nbatch) flush_batch(s);
        if (stop) { /* on_drops may have queued one more line */
            pthread_mutex_lock(&s->mu);
            take_all(s);
            pthread_mutex_unlock(&s->mu);
            if (s->nbatch) flush_batch(s);
            break;
        }
    }
    pthread_cleanup_pop(1);
    return NULL;
}

static void spool_free(ir_spool *s) {
    free(s->ring);
    free(s->batch);
    free(s);
}

ir_spool *ir_spool_open(const ir_spool_cfg *cfg) {
    ir_spool *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->cfg = *cfg;
    if (!s->cfg.max_lines) s->cfg.max_lines = 8192;
    if (!s->cfg.max_bytes) s->cfg.max_bytes = 8u << 20;
    if (!s->cfg.max_line) s->cfg.max_line = 256u << 10;
    s->ring = calloc(s->cfg.max_lines, sizeof *s->ring);
    s->batch = calloc(s->cfg.max_lines, sizeof *s->batch);
    if (!s->ring || !s->batch) {
        spool_free(s);
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->thread, NULL, writer, s)) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        spool_free(s);
        return NULL;
    }
    return s;
}

bool ir_spool_close(ir_spool *s, uint64_t *dropped) {
    if (!s) return true;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += s->cfg.close_wait_s ? s->cfg.close_wait_s : 2;
    bool drained = pthread_timedjoin_np(s->thread, NULL, &until) == 0;
    if (!drained) { /* blocked in a write: cancelled there, the rest dropped */
        pthread_cancel(s->thread);
        pthread_join(s->thread, NULL);
    }
    for (size_t i = 0; i < s->count; i++) free(s->ring[(s->head + i) % s->cfg.max_lines].data);
    count_drop(s, s->count);
    if (dropped) *dropped = atomic_load_explicit(&s->dropped, memory_order_relaxed);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    spool_free(s);
    return drained;
}

int ir_spool_write(ir_spool *s, const char *data, size_t len) {
    char *copy = len <= s->cfg.max_line ? malloc(len ? len : 1) : NULL;
    if (!copy) {
        count_drop(s, 1);
        return -1;
    }
    memcpy(copy, data, len);
    pthread_mutex_lock(&s->mu);
    bool room = s->count < s->cfg.max_lines && s->bytes + len <= s->cfg.max_bytes;
    if (room) {
        s->ring[(s->head + s->count) % s->cfg.max_lines] = (line){copy, len};
        s->count++;
        s->bytes += len;
        pthread_cond_signal(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    if (room) return 0;
    free(copy);
    count_drop(s, 1);
    return -1;
}

void ir_spool_stats(const ir_spool *s, uint64_t *written, uint64_t *dropped) {
    *written = s ? atomic_load_explicit(&s->written, memory_order_relaxed) : 0;
    *dropped = s ? atomic_load_explicit(&s->dropped, memory_order_relaxed) : 0;
}
