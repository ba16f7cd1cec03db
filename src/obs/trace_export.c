/* trace_export.c: the tracer's bounded queue and its exporter thread (see
 * ir_obs.h). The queue is a ring of spans behind a mutex; the thread takes up
 * to a batch at once, encodes it outside the lock and posts it. After a failed
 * post it waits a second before the next, so an unreachable collector costs a
 * connection attempt a second, and spans that come meanwhile fill the queue and
 * are dropped (counted) rather than waited for. At stop, what is queued is posted
 * unless the collector is failing, and for IRO_STOP_GRACE_NS at most: a collector that
 * hangs does not hold the process's exit (it held it 80 s: 16 batches of 5 s each). */
#include "obs/ir_obs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RETRY_PAUSE_S 1
#define BODY_MAX      (64u << 20)

struct iro_tracer {
    iro_tracer_cfg cfg;
    char *service;
    uint64_t threshold; /* trace ids whose last 8 bytes are below this are kept */
    bool all;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    iro_span *ring;
    size_t head, count; /* under mu */
    bool stop;          /* under mu */
    uint64_t stop_ns;   /* under mu: when stop was asked (ir_now_ns) */
    _Atomic uint64_t exported, dropped, failed;
    _Atomic bool failing;
};

/* One post; logs the first failure of a run and the recovery after it. */
static void post(iro_tracer *t, const iro_span *batch, size_t n, ir_buf *body) {
    char err[256] = "";
    ir_buf_reset(body);
    int rc = iro_otlp_encode(body, t->service, batch, n);
    if (rc == 0)
        rc = t->cfg.post(t->cfg.post_ud, body->data, body->len, err, sizeof err);
    else
        snprintf(err, sizeof err, "a batch of %zu spans passed %u bytes", n, BODY_MAX);
    /* the state first, so a reader that sees the count sees the state too */
    bool was = atomic_exchange(&t->failing, rc != 0);
    if (rc == 0) {
        atomic_fetch_add(&t->exported, n);
        if (was) IR_INFO("trace", "exporting spans again");
        return;
    }
    atomic_fetch_add(&t->failed, n);
    if (!was) IR_WARN("trace", "cannot export spans (dropping them until it works): %s", err);
}

/* Waits up to RETRY_PAUSE_S unless asked to stop; called with mu held. */
static void pause_locked(iro_tracer *t) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += RETRY_PAUSE_S;
    while (!t->stop && pthread_cond_timedwait(&t->cv, &t->mu, &until) == 0) {}
}

/* Stopping, and posting what is left is not worth waiting for: the collector is failing,
 * or the grace is over. The queue's spans are counted failed. Called with mu held. */
static bool give_up_locked(iro_tracer *t) {
    if (!t->stop || (!atomic_load(&t->failing) && ir_now_ns() - t->stop_ns < IRO_STOP_GRACE_NS))
        return false;
    atomic_fetch_add(&t->failed, t->count);
    t->count = 0;
    return true;
}

static void *exporter(void *arg) {
    iro_tracer *t = arg;
    size_t cap = t->cfg.queue, bmax = t->cfg.batch;
    iro_span *batch = malloc(bmax * sizeof *batch);
    ir_buf body;
    ir_buf_init(&body, BODY_MAX);
    for (;;) {
        pthread_mutex_lock(&t->mu);
        if (atomic_load(&t->failing) && !t->stop) pause_locked(t);
        while (t->count == 0 && !t->stop) pthread_cond_wait(&t->cv, &t->mu);
        if (give_up_locked(t)) {
            pthread_mutex_unlock(&t->mu);
            break;
        }
        size_t n = 0;
        while (t->count && batch && n < bmax) {
            batch[n++] = t->ring[t->head];
            t->head = (t->head + 1) % cap;
            t->count--;
        }
        bool stop = t->stop && t->count == 0;
        pthread_mutex_unlock(&t->mu);
        if (n) post(t, batch, n, &body);
        if (stop || !batch) break;
    }
    ir_buf_free(&body);
    free(batch);
    return NULL;
}

iro_tracer *iro_tracer_new(const iro_tracer_cfg *cfg, char *err, size_t errlen) {
    iro_tracer *t = calloc(1, sizeof *t);
    if (!t || !cfg->post) {
        snprintf(err, errlen, t ? "no post function" : "out of memory");
        free(t);
        return NULL;
    }
    t->cfg = *cfg;
    if (!t->cfg.queue) t->cfg.queue = 4096;
    if (!t->cfg.batch) t->cfg.batch = 256;
    double r = cfg->sample_ratio;
    t->all = r >= 1;
    t->threshold = r <= 0 || t->all ? 0 : (uint64_t)(r * 18446744073709551616.0);
    t->service = strdup(cfg->service ? cfg->service : "inferrail");
    t->ring = calloc(t->cfg.queue, sizeof *t->ring);
    if (!t->service || !t->ring) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    if (pthread_create(&t->thread, NULL, exporter, t)) {
        snprintf(err, errlen, "cannot start the trace exporter thread");
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->cv);
        goto fail;
    }
    return t;
fail:
    free(t->ring);
    free(t->service);
    free(t);
    return NULL;
}

void iro_tracer_free(iro_tracer *t) {
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    t->stop_ns = ir_now_ns();
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t->ring);
    free(t->service);
    free(t);
}

bool iro_tracer_sampled(const iro_tracer *t, const uint8_t trace_id[16]) {
    if (!t) return false;
    if (t->all) return true;
    uint64_t v = 0;
    for (int i = 8; i < 16; i++) v = v << 8 | trace_id[i];
    return v < t->threshold;
}

int iro_tracer_submit(iro_tracer *t, const iro_span *s) {
    if (!t) return -1;
    pthread_mutex_lock(&t->mu);
    bool room = t->count < t->cfg.queue && !t->stop;
    if (room) {
        t->ring[(t->head + t->count) % t->cfg.queue] = *s;
        t->count++;
        pthread_cond_signal(&t->cv);
    }
    pthread_mutex_unlock(&t->mu);
    if (!room) atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
    return room ? 0 : -1;
}

void iro_tracer_stats_get(const iro_tracer *t, iro_tracer_stats *out) {
    memset(out, 0, sizeof *out);
    if (!t) return;
    out->exported = atomic_load(&t->exported);
    out->dropped = atomic_load_explicit(&t->dropped, memory_order_relaxed);
    out->failed = atomic_load(&t->failed);
    out->failing = atomic_load(&t->failing);
}
