/* kvsub.c: the KV event subscriber. One thread owns every ZMQ socket: per
 * replica with kv_events, a SUB socket on its engine's PUB endpoint and a
 * DEALER on its replay ROUTER. It decodes each batch (irx_ev_decode) and
 * applies it to the shared index (irx_ev_apply_batch), which locks only that
 * replica: request threads never wait on it, and lookups never lock at all.
 *
 * The wire (vllm/distributed/kv_events.py, ZmqEventPublisher): three frames
 * (topic, 8-byte big-endian sequence, msgpack payload), the sequence counting
 * from 0 in each engine process. Replay: send (empty, 8-byte start sequence);
 * the ROUTER answers (empty, seq, payload) per buffered batch from there on,
 * then (empty, -1 as 8 bytes of 0xFF, empty).
 *
 * Per stream: `next` is the sequence the index needs next. A jump is a gap:
 * ask for a replay from `next` and drop live batches until it ends (the ones it
 * does not cover are asked for again). A replay that starts past `next` (the
 * engine no longer buffers the gap), a replay that times out, or a gap without
 * a replay socket is a fallback: the replica's view is cleared, logged once
 * and counted, and it is tracked approximately until its next batch, from
 * which its events are followed again (a partial view: blocks whose parents
 * came before are orphans). A live sequence that goes back is a restart: the
 * view is cleared and replayed from 0. Queues are bounded by ZMQ's high-water
 * marks and the largest message by ZMQ_MAXMSGSIZE. */
#include "gateway/gateway.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "gateway/zmq_dl.h" /* after <zmq.h>: libzmq is opened on first use */

#define RCV_HWM        100000
#define REPLAY_TIMEOUT (3ull * 1000000000ull)
#define POLL_MS        50

typedef struct kvstream {
    uint32_t slot;
    const char *id;
    const gw_kv_events_cfg *cfg;
    const char *model;
    void *sub, *dealer, *mon; /* mon: the SUB socket's monitor (connects, disconnects) */
    int64_t next;             /* the sequence the index needs next; -1: any (nothing applied yet) */
    int64_t live_last;        /* the last sequence seen live; -1 none */
    bool replaying, tracked, logged_fallback, retried, ever_connected;
    uint64_t replay_deadline;
    uint64_t replay_got; /* batches the running replay brought */
    int32_t group;       /* the KV cache group followed (irx_ev_group_follow) */
    gw_kvsub_stats st;
} kvstream;

struct gw_kvsub {
    gw_fleet *fleet;
    void *ctx;
    pthread_t thread;
    _Atomic int stop;
    bool thread_started;
    kvstream *s;
    size_t n;
};

/* ---- config ------------------------------------------------------------------------- */

static bool endpoint_ok(const char *e) {
    if (strncmp(e, "ipc://", 6) == 0) return e[6] != '\0';
    if (strncmp(e, "tcp://", 6) != 0 || strchr(e, '*')) return false;
    const char *colon = strrchr(e + 6, ':');
    if (!colon || colon == e + 6) return false;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    return *end == '\0' && colon[1] != '\0' && port > 0 && port < 65536;
}

void gw_check_kv_events(const gw_kv_events_cfg *c, size_t i, ir_cfg_errors *errs) {
    if (c->endpoint && !endpoint_ok(c->endpoint))
        ir_cfg_errors_add(errs,
                          "replicas[%zu].kv_events.endpoint: '%s' is not tcp://host:port or "
                          "ipc://path (a wildcard such as tcp://*:5557 is the engine's side: "
                          "name the host the gateway connects to)",
                          i, c->endpoint);
    if (c->replay_endpoint && !endpoint_ok(c->replay_endpoint))
        ir_cfg_errors_add(errs,
                          "replicas[%zu].kv_events.replay_endpoint: '%s' is not tcp://host:port "
                          "or ipc://path",
                          i, c->replay_endpoint);
    if (c->replay_endpoint && !c->endpoint)
        ir_cfg_errors_add(errs, "replicas[%zu].kv_events.replay_endpoint: needs kv_events.endpoint",
                          i);
}

/* ---- clocks and counters -------------------------------------------------------------- */

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define ADD(s, field, v) atomic_fetch_add_explicit(&(s)->st.field, (v), memory_order_relaxed)

/* ---- the stream's state machine ----------------------------------------------------- */

static void ask_replay(kvstream *s, int64_t from) {
    if (!s->dealer || s->replaying) return;
    unsigned char seq[8];
    for (int i = 0; i < 8; i++) seq[i] = (unsigned char)((uint64_t)from >> (56 - 8 * i));
    if (zmq_send(s->dealer, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(s->dealer, seq, 8, ZMQ_DONTWAIT) < 0)
        return; /* the replay socket is not up yet: the next gap asks again */
    s->replaying = true;
    s->replay_got = 0;
    s->replay_deadline = now_ns() + REPLAY_TIMEOUT;
}

static void fall_back(gw_kvsub *k, kvstream *s, const char *why) {
    irx_ev_untrack(k->fleet->index, s->slot);
    s->tracked = false;
    s->next = -1;
    ADD(s, fallbacks, 1);
    atomic_store_explicit(&s->st.source, GW_KV_SOURCE_FALLBACK, memory_order_relaxed);
    if (!s->logged_fallback)
        IR_WARN("kvsub",
                "replica %s: %s; its KV view is cleared and tracked approximately until its "
                "events flow again (logged once; inferrail_kv_events_fallbacks_total counts "
                "them)",
                s->id, why);
    s->logged_fallback = true;
}

static void apply(gw_kvsub *k, kvstream *s, const void *payload, size_t len) {
    irx_ev_batch b;
    char err[128];
    if (irx_ev_decode(payload, len, &b, err, sizeof err)) {
        ADD(s, decode_errors, 1);
        IR_DEBUG("kvsub", "replica %s: a batch that does not decode: %s", s->id, err);
        return;
    }
    if (!s->tracked) {
        if (irx_ev_track(k->fleet->index, s->slot, s->model, k->fleet->block_size)) {
            irx_ev_batch_free(&b);
            return;
        }
        s->tracked = true;
    }
    irx_ev_counts c = {0};
    /* Another KV cache group's blocks (a hybrid model) are left out, in place; the
     * rest is applied as one batch. */
    size_t n = 0;
    for (size_t i = 0; i < b.nev; i++)
        if (irx_ev_group_follow(&s->group, &b.ev[i])) b.ev[n++] = b.ev[i];
    irx_ev_apply_batch(k->fleet->index, s->slot, b.ev, n, &c);
    ADD(s, other_group, b.nev - n);
    ADD(s, batches, 1);
    ADD(s, events, b.nev);
    ADD(s, blocks_stored, c.stored);
    ADD(s, blocks_removed, c.removed);
    ADD(s, clears, c.cleared);
    ADD(s, orphans, c.orphans);
    ADD(s, refused, c.refused);
    double lag = wall_s() - b.ts;
    atomic_store_explicit(&s->st.lag_us, lag > 0 ? (uint64_t)(lag * 1e6) : 0, memory_order_relaxed);
    atomic_store_explicit(&s->st.last_batch_ns, now_ns(), memory_order_relaxed);
    irx_ev_view v;
    irx_ev_view_get(k->fleet->index, s->slot, &v);
    atomic_store_explicit(&s->st.source, v.partial ? GW_KV_SOURCE_PARTIAL : GW_KV_SOURCE_EVENTS,
                          memory_order_relaxed);
    irx_ev_batch_free(&b);
}

/* One batch, live or replayed, in sequence order or not. */
static void on_batch(gw_kvsub *k, kvstream *s, int64_t seq, const void *p, size_t len,
                     bool replayed) {
    if (!replayed) {
        if (s->live_last >= 0 && seq <= s->live_last) { /* the engine started over */
            ADD(s, restarts, 1);
            irx_ev_clear(k->fleet->index, s->slot);
            s->next = -1;
            s->replaying = false; /* a replay of the old process means nothing now */
            if (seq > 0) ask_replay(s, 0);
        }
        s->live_last = seq;
        if (s->replaying) return; /* the replay brings it, or the next one will */
    } else {
        s->replay_got++;
        ADD(s, replayed, 1);
    }
    if (s->next >= 0 && seq < s->next) return; /* already applied */
    if (s->next >= 0 && seq > s->next) {
        ADD(s, gaps, 1);
        if (replayed || !s->dealer) {
            fall_back(k, s,
                      replayed ? "the engine no longer buffers the missing KV event "
                                 "batches"
                               : "KV event batches were lost and there is no replay socket");
        } else {
            ask_replay(s, s->next);
            if (s->replaying) return;
            fall_back(k, s, "a gap in KV events and the replay request failed");
        }
    }
    apply(k, s, p, len);
    s->next = seq + 1;
}

static void on_replay_end(gw_kvsub *k, kvstream *s) {
    s->replaying = false;
    if (s->live_last < 0 || (s->next >= 0 && s->live_last < s->next)) return;
    if (s->next < 0) {
        /* Nothing was buffered when the engine answered, but live batches came:
         * ask once more for them, then take the live stream as it comes. */
        if (!s->retried) {
            s->retried = true;
            ask_replay(s, 0);
        }
        return;
    }
    /* Live batches came meanwhile that the replay did not bring. */
    if (s->replay_got == 0) {
        fall_back(k, s, "a KV event replay brought nothing");
        return;
    }
    ask_replay(s, s->next);
}

static int64_t seq_of(const zmq_msg_t *m) {
    if (zmq_msg_size(m) != 8) return INT64_MIN;
    const unsigned char *b = zmq_msg_data((zmq_msg_t *)m);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | b[i];
    return (int64_t)v;
}

/* Reads one whole message (up to 4 frames; the rest are drained). */
static int recv_frames(void *sock, zmq_msg_t *f, int max) {
    int n = 0, more = 1;
    while (more) {
        zmq_msg_t tmp, *m = n < max ? &f[n] : &tmp;
        zmq_msg_init(m);
        if (zmq_msg_recv(m, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(m);
            for (int i = 0; i < n && i < max; i++) zmq_msg_close(&f[i]);
            return -1;
        }
        more = zmq_msg_more(m);
        if (m == &tmp) zmq_msg_close(m);
        n++;
    }
    return n;
}

static void close_frames(zmq_msg_t *f, int n, int max) {
    for (int i = 0; i < n && i < max; i++) zmq_msg_close(&f[i]);
}

static void drain_sub(gw_kvsub *k, kvstream *s) {
    zmq_msg_t f[4];
    for (int budget = 0; budget < 4096; budget++) {
        int n = recv_frames(s->sub, f, 4);
        if (n < 0) return;
        int64_t seq = n >= 3 ? seq_of(&f[1]) : INT64_MIN;
        if (n != 3 || seq < 0)
            ADD(s, decode_errors, 1);
        else
            on_batch(k, s, seq, zmq_msg_data(&f[2]), zmq_msg_size(&f[2]), false);
        close_frames(f, n, 4);
    }
}

static void drain_dealer(gw_kvsub *k, kvstream *s) {
    zmq_msg_t f[4];
    for (int budget = 0; budget < 4096; budget++) {
        int n = recv_frames(s->dealer, f, 4);
        if (n < 0) return;
        int64_t seq = n == 3 ? seq_of(&f[1]) : INT64_MIN;
        if (n != 3 || zmq_msg_size(&f[0]) != 0 || seq == INT64_MIN)
            ADD(s, decode_errors, 1);
        else if (seq == -1) {
            if (s->replaying) on_replay_end(k, s); /* else the end of a replay given up */
        } else if (s->replaying)
            on_batch(k, s, seq, zmq_msg_data(&f[2]), zmq_msg_size(&f[2]), true);
        close_frames(f, n, 4);
    }
}

/* The SUB socket's monitor: while it is disconnected the view may be going stale
 * (gw_index_source says events-stale); on reconnecting, ask for what was missed. */
/* Connected again after a disconnection: the engine may have restarted (and its
 * sequence may not even have gone back by the time its first batch arrives), so
 * its view is cleared and rebuilt from everything it still buffers. */
static void reconnected(gw_kvsub *k, kvstream *s) {
    ADD(s, reconnects, 1);
    irx_ev_clear(k->fleet->index, s->slot);
    s->next = -1;
    s->live_last = -1;
    s->replaying = false;
    ask_replay(s, 0);
}

static void drain_monitor(gw_kvsub *k, kvstream *s) {
    zmq_msg_t f[4];
    for (int budget = 0; budget < 64; budget++) {
        int n = recv_frames(s->mon, f, 4);
        if (n < 0) return;
        if (n >= 1 && zmq_msg_size(&f[0]) >= 2) {
            const unsigned char *b = zmq_msg_data(&f[0]);
            uint16_t ev = (uint16_t)(b[0] | b[1] << 8); /* little-endian, as libzmq writes it */
            if (ev == ZMQ_EVENT_CONNECTED) {
                atomic_store_explicit(&s->st.connected, 1, memory_order_relaxed);
                if (s->ever_connected) reconnected(k, s);
                s->ever_connected = true;
            } else if (ev == ZMQ_EVENT_DISCONNECTED) {
                atomic_store_explicit(&s->st.connected, 0, memory_order_relaxed);
            }
        }
        close_frames(f, n, 4);
    }
}

static void *run(void *arg) {
    gw_kvsub *k = arg;
    zmq_pollitem_t *items = calloc(3 * k->n, sizeof *items);
    if (!items) return NULL;
    for (size_t i = 0; i < k->n; i++) ask_replay(&k->s[i], 0); /* joining late: all buffered */
    while (!atomic_load(&k->stop)) {
        size_t n = 0;
        for (size_t i = 0; i < k->n; i++) {
            items[n++] = (zmq_pollitem_t){k->s[i].sub, 0, ZMQ_POLLIN, 0};
            if (k->s[i].dealer) items[n++] = (zmq_pollitem_t){k->s[i].dealer, 0, ZMQ_POLLIN, 0};
            if (k->s[i].mon) items[n++] = (zmq_pollitem_t){k->s[i].mon, 0, ZMQ_POLLIN, 0};
        }
        if (zmq_poll(items, (int)n, POLL_MS) < 0 && zmq_errno() != EINTR) break;
        uint64_t now = now_ns();
        for (size_t i = 0; i < k->n; i++) {
            kvstream *s = &k->s[i];
            if (s->mon) drain_monitor(k, s);
            drain_sub(k, s);
            if (s->dealer) drain_dealer(k, s);
            gw_parity_poll(k->fleet, &s->st, false);
            if (s->replaying && now > s->replay_deadline) {
                s->replaying = false;
                if (s->next >= 0 && s->live_last >= s->next)
                    fall_back(k, s, "a KV event replay timed out");
                else if (s->next < 0 && s->live_last < 0)
                    ask_replay(s, 0); /* the engine may not be up yet: ask again */
            }
        }
    }
    free(items);
    return NULL;
}

/* ---- start and stop ------------------------------------------------------------------ */

static void *new_socket(gw_kvsub *k, int type, const char *topic) {
    void *z = zmq_socket(k->ctx, type);
    if (!z) return NULL;
    int hwm = RCV_HWM, linger = 0;
    int64_t maxmsg = IRX_EV_MAX_PAYLOAD;
    zmq_setsockopt(z, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(z, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(z, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (type == ZMQ_SUB) zmq_setsockopt(z, ZMQ_SUBSCRIBE, topic, strlen(topic));
    return z;
}

static void *open_socket(gw_kvsub *k, int type, const char *ep, const char *topic) {
    void *z = new_socket(k, type, topic);
    if (z && zmq_connect(z, ep)) {
        zmq_close(z);
        return NULL;
    }
    return z;
}

/* A PAIR socket that receives sub's connect and disconnect events. NULL when the
 * monitor cannot be set up (the view is then never marked stale). */
static void *open_monitor(gw_kvsub *k, void *sub, size_t i) {
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://inferrail-kvmon-%zu", i);
    if (zmq_socket_monitor(sub, ep, ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED)) return NULL;
    void *m = zmq_socket(k->ctx, ZMQ_PAIR);
    int linger = 0;
    if (m) zmq_setsockopt(m, ZMQ_LINGER, &linger, sizeof linger);
    if (m && zmq_connect(m, ep)) {
        zmq_close(m);
        m = NULL;
    }
    return m;
}

static const char *model_of(const gw_fleet *f, const gw_replica *r) {
    const gw_model_list *ml = gw_fleet_models(f);
    for (size_t m = 0; m < ml->n; m++)
        if (gw_replica_serves(r, ml->items[m]->index)) return ml->items[m]->cfg->name;
    return ml->n ? ml->items[0]->cfg->name : "";
}

int gw_kvsub_start(gw_fleet *f, char *err, size_t errlen) {
    size_t n = 0;
    for (size_t i = 0; i < f->nreplicas; i++) n += f->replicas[i].cfg->kv_events.endpoint != NULL;
    if (n == 0) return 0;
    if (gw_zmq_load(err, errlen)) return -1;
    gw_kvsub *k = calloc(1, sizeof *k);
    if (!k || !(k->s = calloc(n, sizeof *k->s)) || !(k->ctx = zmq_ctx_new())) {
        if (k) free(k->s);
        free(k);
        snprintf(err, errlen, "out of memory (KV event subscriber)");
        return -1;
    }
    k->fleet = f;
    f->kvsub = k;
    for (size_t i = 0; i < f->nreplicas; i++) {
        const gw_replica *r = &f->replicas[i];
        const gw_kv_events_cfg *c = &r->cfg->kv_events;
        if (!c->endpoint) continue;
        kvstream *s = &k->s[k->n++];
        *s = (kvstream){.slot = r->index,
                        .id = r->cfg->id,
                        .cfg = c,
                        .model = model_of(f, r),
                        .next = -1,
                        .live_last = -1,
                        .group = IRX_GROUP_UNKNOWN};
        /* The monitor first, so that it sees the first connection too. */
        s->sub = new_socket(k, ZMQ_SUB, c->topic ? c->topic : "");
        s->mon = s->sub ? open_monitor(k, s->sub, k->n - 1) : NULL;
        if (!s->mon) atomic_store(&s->st.connected, 1); /* never marked stale, then */
        if (s->sub && zmq_connect(s->sub, c->endpoint)) {
            zmq_close(s->sub);
            s->sub = NULL;
        }
        if (c->replay_endpoint) s->dealer = open_socket(k, ZMQ_DEALER, c->replay_endpoint, "");
        if (!s->sub || (c->replay_endpoint && !s->dealer)) {
            snprintf(err, errlen, "replicas[%zu].kv_events: cannot connect: %s", i,
                     zmq_strerror(zmq_errno()));
            gw_kvsub_stop(f);
            return -1;
        }
        if (irx_ev_track(f->index, s->slot, s->model, f->block_size)) {
            snprintf(err, errlen, "out of memory (KV index)");
            gw_kvsub_stop(f);
            return -1;
        }
        s->tracked = true;
        atomic_store(&s->st.source, GW_KV_SOURCE_EVENTS);
    }
    if (pthread_create(&k->thread, NULL, run, k)) {
        snprintf(err, errlen, "cannot start the KV event subscriber thread");
        gw_kvsub_stop(f);
        return -1;
    }
    k->thread_started = true;
    IR_INFO("kvsub", "following the KV events of %zu replica(s)", k->n);
    return 0;
}

void gw_kvsub_stop(gw_fleet *f) {
    gw_kvsub *k = f->kvsub;
    if (!k) return;
    atomic_store(&k->stop, 1);
    if (k->thread_started) pthread_join(k->thread, NULL);
    for (size_t i = 0; i < k->n; i++) {
        gw_parity_poll(f, &k->s[i].st, true);
        if (k->s[i].sub) zmq_close(k->s[i].sub);
        if (k->s[i].dealer) zmq_close(k->s[i].dealer);
        if (k->s[i].mon) zmq_close(k->s[i].mon);
    }
    zmq_ctx_term(k->ctx);
    free(k->s);
    free(k);
    f->kvsub = NULL;
}

gw_kvsub_stats *gw_kvsub_replica(const gw_fleet *f, uint32_t slot) {
    gw_kvsub *k = f->kvsub;
    for (size_t i = 0; k && i < k->n; i++)
        if (k->s[i].slot == slot) return &k->s[i].st;
    return NULL;
}
