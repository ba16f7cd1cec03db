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
 * marks and the largest message by ZMQ_MAXMSGSIZE.
 *
 * Streams come and go with membership: the configured replicas' streams open at
 * start; a member that joins later (found by DNS discovery, or added by a reload)
 * is asked for by the control thread (gw_kvsub_member), which queues the request
 * under a mutex; the subscriber thread opens and closes streams between two polls,
 * in the order asked. A stream's counters live in a per-slot array that is never
 * freed before exit, so any thread may read them without a lock.
 *
 * An endpoint whose host is a DNS name is looked up by the subscriber itself
 * (kvsub_dns.c: its own c-ares channel, with discovery.nameservers, polled in the
 * same zmq_poll), and its stream opens at the address found: IPv4 when the name has
 * one, else IPv6 (tcp://[addr]:port, with ZMQ_IPV6). The name is looked up again at
 * its answer's TTL (1 s to 30 s) and at once when the publisher's socket
 * disconnects; an address that changes reopens the stream there (its view rebuilt
 * by replay). A failed lookup keeps the address last found; before the first
 * answer the replica is tracked approximately (kvname). */
#include "gateway/gateway.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "gateway/kvsub_dns.h"
#include "gateway/zmq_dl.h" /* after <zmq.h>: libzmq is opened on first use */

/* Batches queued per socket before libzmq drops the newest: vLLM publishes one a step, so
 * this is minutes of backlog, and a drop is a gap that replay fills. */
#define RCV_HWM          10000
#define DRAIN_MAX        4096
#define DRAIN_BYTES      (8u << 20) /* a round's bytes per socket: huge batches take turns */
#define REPLAY_TIMEOUT   (3ull * 1000000000ull)
#define REPLAY_AHEAD_MAX (1ll << 20) /* batches a replay may run ahead of the live stream */
#define POLL_MS          50
#define NAME_TTL_MIN     (1ull * 1000000000ull)  /* a name is looked up again at its TTL, */
#define NAME_TTL_MAX     (30ull * 1000000000ull) /* within these bounds; */
#define NAME_RETRY       (1ull * 1000000000ull)  /* and this long after a failure */

typedef struct kvstream {
    uint32_t slot;
    char id[GW_REPLICA_ID_MAX + 1];
    const char *model;
    void *sub, *dealer, *mon; /* mon: the SUB socket's monitor (connects, disconnects) */
    int64_t next;             /* the sequence the index needs next; -1: any (nothing applied yet) */
    int64_t live_last;        /* the last sequence seen live; -1 none */
    bool replaying, tracked, logged_fallback, retried, ever_connected;
    bool begun;     /* a batch was applied since the view began (open, fallback, restart) */
    bool said_size; /* a stored block of another block size was logged */
    uint64_t replay_deadline;
    uint64_t replay_got; /* batches the running replay brought */
    int32_t group;       /* the KV cache group followed (irx_ev_group_follow) */
    int64_t rank;        /* a data-parallel target's rank, whose batches alone it takes; -1 */
    bool hole;           /* the running replay skipped batches: ask again when it ends */
    gw_kvsub_stats *st;  /* its slot's counters (gw_kvsub.stats) */
} kvstream;

/* A stream to open (add) or close, asked for by the control thread. */
typedef struct kvcmd {
    bool add;
    uint32_t slot;
    char id[GW_REPLICA_ID_MAX + 1];
    const char *model;               /* lives until exit (configs are kept) */
    int64_t rank;                    /* a data-parallel target's rank; -1 */
    char *endpoint, *replay, *topic; /* owned copies; replay may be NULL */
    struct kvcmd *next;
} kvcmd;

/* A stream whose endpoints name their host by a DNS name (see the top). */
typedef struct kvname {
    struct gw_kvsub *k;
    kvcmd *c;                      /* the stream as asked, with its names; owned */
    char host[2][256];             /* the publisher's and the replay's name; "": an address */
    char ip[2][INET6_ADDRSTRLEN];  /* the addresses its stream is open at; "": not open */
    char got[2][INET6_ADDRSTRLEN]; /* the running lookup's answers */
    int pending;                   /* lookups in flight, plus one while they are sent */
    const char *why;               /* the running lookup's first failure; NULL: none */
    int64_t ttl;                   /* the running lookup's smallest TTL; -1: none */
    uint64_t next;                 /* the next lookup (monotonic ns) */
    bool failing;                  /* the last lookup failed (logged once) */
    bool dropped;                  /* its stream was closed while a lookup ran: freed then */
    struct kvname *next_name;
} kvname;

struct gw_kvsub {
    gw_fleet *fleet;
    void *ctx;
    pthread_t thread;
    _Atomic int stop;
    bool thread_started;
    kvstream **s; /* the open streams: the subscriber thread's (before it starts, init's) */
    size_t n, cap;
    zmq_pollitem_t *items; /* 3 per stream, then c-ares's sockets */
    uint64_t mon_seq;      /* names the monitors' inproc endpoints */
    /* per slot: its counters, and whether a stream fills them (readers check first) */
    gw_kvsub_stats *stats;
    _Atomic int *on;
    size_t nslots;
    pthread_mutex_t mu; /* guards the queue of asks */
    kvcmd *head, **tail;
    gw_kvdns *dns; /* NULL: names are left to libzmq (IPv4, the system's resolver) */
    kvname *names; /* the streams whose hosts are names */
    bool closing;  /* kvsub_free runs: answers change nothing */
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
    char why[256];
    if (gw_ep_zone_problem(c->endpoint, why, sizeof why))
        ir_cfg_errors_add(errs, "replicas[%zu].kv_events.endpoint: %s", i, why);
    if (gw_ep_zone_problem(c->replay_endpoint, why, sizeof why))
        ir_cfg_errors_add(errs, "replicas[%zu].kv_events.replay_endpoint: %s", i, why);
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

#define ADD(s, field, v) atomic_fetch_add_explicit(&(s)->st->field, (v), memory_order_relaxed)

/* Once a stream: its engine stores blocks of another size than the index's, so none of
 * them can be placed (SGLang's pages are 1 token unless --page-size says otherwise). */
static void say_block_size(gw_kvsub *k, kvstream *s, const irx_ev *ev, size_t n) {
    for (size_t i = 0; i < n && !s->said_size; i++) {
        if (ev[i].type != IRX_EV_STORED || ev[i].block_size == k->fleet->block_size) continue;
        IR_WARN("kvsub",
                "replica %s: its engine stores blocks of %u tokens, the index %u "
                "(index.block_size): its stored blocks are refused, so its view stays empty "
                "(vLLM --block-size, SGLang --page-size must match)",
                s->id, ev[i].block_size, k->fleet->block_size);
        s->said_size = true;
    }
}

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
    s->begun = false;
    s->next = -1;
    ADD(s, fallbacks, 1);
    atomic_store_explicit(&s->st->source, GW_KV_SOURCE_FALLBACK, memory_order_relaxed);
    if (!s->logged_fallback)
        IR_WARN("kvsub",
                "replica %s: %s; its KV view is cleared and tracked approximately until its "
                "events flow again (logged once; inferrail_kv_events_fallbacks_total counts "
                "them)",
                s->id, why);
    s->logged_fallback = true;
}

static void apply(gw_kvsub *k, kvstream *s, int64_t seq, const void *payload, size_t len) {
    irx_ev_batch b;
    char err[128];
    if (irx_ev_decode(payload, len, &b, err, sizeof err)) {
        ADD(s, decode_errors, 1);
        IR_DEBUG("kvsub", "replica %s: a batch that does not decode: %s", s->id, err);
        return;
    }
    /* Another rank's batch (a replay socket or an endpoint that serves another rank):
     * its blocks are in another cache than this target's. */
    if (s->rank >= 0 && b.dp_rank >= 0 && b.dp_rank != s->rank) {
        ADD(s, other_rank, 1);
        irx_ev_batch_free(&b);
        return;
    }
    if (!s->tracked) {
        if (irx_ev_track(k->fleet->index, s->slot, s->model, k->fleet->block_size)) {
            irx_ev_batch_free(&b);
            return;
        }
        s->tracked = true;
    }
    if (!s->begun) { /* the view's first batch */
        s->begun = true;
        /* Not the engine's first batch (a late join, after a fallback or a restart
         * missed): it may hold blocks that no event applied here named. */
        if (seq != 0) irx_ev_unseen(k->fleet->index, s->slot);
    }
    irx_ev_counts c = {0};
    /* Another KV cache group's blocks (a hybrid model) are left out, in place; the
     * rest is applied as one batch. */
    size_t n = 0;
    for (size_t i = 0; i < b.nev; i++)
        if (irx_ev_group_follow(&s->group, &b.ev[i])) b.ev[n++] = b.ev[i];
    irx_ev_apply_batch(k->fleet->index, s->slot, b.ev, n, &c);
    if (c.refused) say_block_size(k, s, b.ev, n);
    ADD(s, other_group, b.nev - n);
    ADD(s, batches, 1);
    ADD(s, events, b.nev);
    ADD(s, blocks_stored, c.stored);
    ADD(s, blocks_removed, c.removed);
    ADD(s, clears, c.cleared);
    ADD(s, orphans, c.orphans);
    ADD(s, refused, c.refused);
    double lag = wall_s() - b.ts; /* ts is the engine's: any double, NaN included */
    uint64_t lag_us = 0;
    if (lag > 0) lag_us = lag < 1e12 ? (uint64_t)(lag * 1e6) : (uint64_t)1e18;
    atomic_store_explicit(&s->st->lag_us, lag_us, memory_order_relaxed);
    atomic_store_explicit(&s->st->last_batch_ns, now_ns(), memory_order_relaxed);
    irx_ev_view v;
    irx_ev_view_get(k->fleet->index, s->slot, &v);
    atomic_store_explicit(&s->st->source, v.partial ? GW_KV_SOURCE_PARTIAL : GW_KV_SOURCE_EVENTS,
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
            s->begun = false;
            s->next = -1;
            s->replaying = false; /* a replay of the old process means nothing now */
            if (seq > 0) ask_replay(s, 0);
        }
        s->live_last = seq;
        /* A replay (answered before any live batch) numbered its batches far past this
         * live one: not this stream's, and every live batch would look applied. */
        if (s->next >= 0 && seq < s->next && s->next - seq > REPLAY_AHEAD_MAX) {
            ADD(s, gaps, 1);
            fall_back(k, s, "a KV event replay sent batches numbered past the live stream");
        }
        if (s->replaying) return; /* the replay brings it, or the next one will */
    } else {
        ADD(s, replayed, 1);
        /* Newer by far than anything published live: not this stream's (applying it
         * would make every live batch after it look old). The margin leaves room for a
         * replay that overtakes the live socket's backlog. */
        if (s->live_last >= 0 && seq > s->live_last && seq - s->live_last > REPLAY_AHEAD_MAX) {
            ADD(s, gaps, 1);
            fall_back(k, s, "a KV event replay sent a batch numbered past the live stream");
            return;
        }
    }
    if (s->next >= 0 && seq < s->next) return; /* already applied */
    if (s->next >= 0 && seq > s->next && replayed) {
        /* The replay skipped batches (its socket dropped some under load, or the engine
         * no longer buffers them): the rest of it is left, and the replay is asked again
         * from the hole when it ends (on_replay_end decides). */
        if (!s->hole) ADD(s, gaps, 1);
        s->hole = true;
        return;
    }
    if (s->next >= 0 && seq > s->next) {
        ADD(s, gaps, 1);
        if (!s->dealer) {
            fall_back(k, s, "KV event batches were lost and there is no replay socket");
        } else {
            ask_replay(s, s->next);
            if (s->replaying) return;
            fall_back(k, s, "a gap in KV events and the replay request failed");
        }
    }
    if (replayed) s->replay_got++; /* only what moved the stream on counts as brought */
    apply(k, s, seq, p, len);
    /* an engine's seq may be INT64_MAX: no number follows it, the next is unknown */
    s->next = seq < INT64_MAX ? seq + 1 : -1;
}

static void on_replay_end(gw_kvsub *k, kvstream *s) {
    s->replaying = false;
    if (s->hole) { /* it skipped batches: again from the hole, while each replay helps */
        s->hole = false;
        if (s->replay_got == 0)
            fall_back(k, s, "the engine no longer buffers the missing KV event batches");
        else
            ask_replay(s, s->next);
        return;
    }
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

/* Up to DRAIN_MAX messages a round, and none once the gateway is stopping: a backlog of
 * large batches then waits for nobody (its socket is closed with it). */
static void drain_sub(gw_kvsub *k, kvstream *s) {
    zmq_msg_t f[4];
    size_t bytes = 0;
    for (int budget = 0; budget < DRAIN_MAX && bytes < DRAIN_BYTES && !atomic_load(&k->stop);
         budget++) {
        int n = recv_frames(s->sub, f, 4);
        if (n < 0) return;
        if (n >= 3) bytes += zmq_msg_size(&f[2]);
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
    size_t bytes = 0;
    for (int budget = 0; budget < DRAIN_MAX && bytes < DRAIN_BYTES && !atomic_load(&k->stop);
         budget++) {
        int n = recv_frames(s->dealer, f, 4);
        if (n < 0) return;
        if (n >= 3) bytes += zmq_msg_size(&f[2]);
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

static void name_soon(gw_kvsub *k, uint32_t slot);

static void drain_monitor(gw_kvsub *k, kvstream *s) {
    zmq_msg_t f[4];
    for (int budget = 0; budget < 64; budget++) {
        int n = recv_frames(s->mon, f, 4);
        if (n < 0) return;
        if (n >= 1 && zmq_msg_size(&f[0]) >= 2) {
            const unsigned char *b = zmq_msg_data(&f[0]);
            uint16_t ev = (uint16_t)(b[0] | b[1] << 8); /* little-endian, as libzmq writes it */
            if (ev == ZMQ_EVENT_CONNECTED) {
                atomic_store_explicit(&s->st->connected, 1, memory_order_relaxed);
                if (s->ever_connected) reconnected(k, s);
                s->ever_connected = true;
            } else if (ev == ZMQ_EVENT_DISCONNECTED) {
                atomic_store_explicit(&s->st->connected, 0, memory_order_relaxed);
                name_soon(k, s->slot); /* the engine may have moved */
            }
        }
        close_frames(f, n, 4);
    }
}

/* ---- opening and closing streams ------------------------------------------------------ */

static void *new_socket(gw_kvsub *k, int type, const char *topic, const char *ep) {
    void *z = zmq_socket(k->ctx, type);
    if (!z) return NULL;
    int hwm = RCV_HWM, linger = 0, v6 = ep && strchr(ep, '[') ? 1 : 0;
    int64_t maxmsg = IRX_EV_MAX_PAYLOAD;
    zmq_setsockopt(z, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(z, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(z, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (v6) zmq_setsockopt(z, ZMQ_IPV6, &v6, sizeof v6); /* a member's [v6]:port */
    if (type == ZMQ_SUB) zmq_setsockopt(z, ZMQ_SUBSCRIBE, topic, strlen(topic));
    return z;
}

static void *open_socket(gw_kvsub *k, int type, const char *ep, const char *topic) {
    void *z = new_socket(k, type, topic, ep);
    if (z && zmq_connect(z, ep)) {
        zmq_close(z);
        return NULL;
    }
    return z;
}

/* A PAIR socket that receives sub's connect and disconnect events. NULL when the
 * monitor cannot be set up (the view is then never marked stale). */
static void *open_monitor(gw_kvsub *k, void *sub) {
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://inferrail-kvmon-%llu", (unsigned long long)k->mon_seq++);
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

/* A slot's counters start from zero for a new stream (its metric series did too). */
static void stats_reset(gw_kvsub_stats *st) {
    _Atomic uint64_t *u[] = {
        &st->batches,       &st->events,        &st->blocks_stored, &st->blocks_removed,
        &st->clears,        &st->orphans,       &st->refused,       &st->replayed,
        &st->gaps,          &st->fallbacks,     &st->decode_errors, &st->restarts,
        &st->reconnects,    &st->other_group,   &st->other_rank,    &st->lag_us,
        &st->last_batch_ns, &st->parity_checks, &st->parity_agree};
    for (size_t i = 0; i < IR_ARRAY_LEN(u); i++)
        atomic_store_explicit(u[i], 0, memory_order_relaxed);
    atomic_store_explicit(&st->source, GW_KV_SOURCE_EVENTS, memory_order_relaxed);
    atomic_store_explicit(&st->connected, 0, memory_order_relaxed);
    /* A check a worker deferred just after the slot's last stream closed (it looked
     * the slot up before the close) belongs to that stream: settled against this
     * one, it would count (and log under this replica's id) a mismatch of another's. */
    free(atomic_exchange_explicit(&st->parity_pending, NULL, memory_order_acq_rel));
}

static void stream_close(gw_kvsub *k, kvstream *s) {
    atomic_store_explicit(&k->on[s->slot], 0, memory_order_release);
    gw_parity_poll(k->fleet, s->st, true);
    if (s->sub) zmq_close(s->sub);
    if (s->dealer) zmq_close(s->dealer);
    if (s->mon) zmq_close(s->mon);
    free(s);
}

/* Room for one more stream (and its 3 poll items); false when memory runs out. */
static bool room_for_one(gw_kvsub *k) {
    if (k->n < k->cap) return true;
    size_t cap = k->cap * 2 + 8;
    kvstream **s = realloc(k->s, cap * sizeof *s);
    if (s) k->s = s;
    zmq_pollitem_t *items =
        s ? realloc(k->items, (cap * 3 + GW_KVDNS_SOCKS) * sizeof *items) : NULL;
    if (items) k->items = items;
    if (items) k->cap = cap;
    return items != NULL;
}

/* Opens slot c->slot's stream and tracks the slot from its events; NULL with err
 * when a socket cannot connect (or memory runs out). */
static kvstream *stream_open(gw_kvsub *k, const kvcmd *c, char *err, size_t errlen) {
    kvstream *s = room_for_one(k) ? calloc(1, sizeof *s) : NULL;
    if (!s) {
        snprintf(err, errlen, "out of memory (KV event subscriber)");
        return NULL;
    }
    *s = (kvstream){.slot = c->slot,
                    .model = c->model,
                    .next = -1,
                    .live_last = -1,
                    .group = IRX_GROUP_UNKNOWN,
                    .rank = c->rank,
                    .st = &k->stats[c->slot]};
    snprintf(s->id, sizeof s->id, "%s", c->id);
    stats_reset(s->st);
    /* The monitor first, so that it sees the first connection too. */
    s->sub = new_socket(k, ZMQ_SUB, c->topic ? c->topic : "", c->endpoint);
    s->mon = s->sub ? open_monitor(k, s->sub) : NULL;
    if (!s->mon) atomic_store(&s->st->connected, 1); /* never marked stale, then */
    if (s->sub && zmq_connect(s->sub, c->endpoint)) {
        zmq_close(s->sub);
        s->sub = NULL;
    }
    if (c->replay) s->dealer = open_socket(k, ZMQ_DEALER, c->replay, "");
    if (!s->sub || (c->replay && !s->dealer)) {
        snprintf(err, errlen, "cannot connect: %s", zmq_strerror(zmq_errno()));
        stream_close(k, s);
        return NULL;
    }
    if (irx_ev_track(k->fleet->index, s->slot, s->model, k->fleet->block_size)) {
        snprintf(err, errlen, "out of memory (KV index)");
        stream_close(k, s);
        return NULL;
    }
    s->tracked = true;
    k->s[k->n++] = s;
    atomic_store_explicit(&k->on[s->slot], 1, memory_order_release);
    return s;
}

static void cmd_free(kvcmd *c) {
    free(c->endpoint);
    free(c->replay);
    free(c->topic);
    free(c);
}

/* Closes slot's stream, if it has one: its events no longer reach the index. */
static void stream_drop(gw_kvsub *k, uint32_t slot) {
    for (size_t i = 0; i < k->n; i++) {
        if (k->s[i]->slot != slot) continue;
        IR_INFO("kvsub", "replica %s: its KV event stream closed", k->s[i]->id);
        stream_close(k, k->s[i]);
        k->s[i] = k->s[--k->n];
        irx_ev_untrack(k->fleet->index, slot); /* what it applied after the member left */
        return;
    }
}

/* ---- endpoints named by DNS names (kvname) --------------------------------------------- */

static void name_free(kvname *n) {
    cmd_free(n->c);
    free(n);
}

/* c, when one of its endpoints names its host by a DNS name and the subscriber
 * can look names up, becomes a kvname (which takes c); false: open it as it is. */
static bool name_add(gw_kvsub *k, kvcmd *c) {
    char host[2][256] = {"", ""};
    if (!k->dns) return false;
    bool named = gw_ep_dns_host(c->endpoint, host[0], sizeof host[0]);
    named |= c->replay && gw_ep_dns_host(c->replay, host[1], sizeof host[1]);
    kvname *n = named ? calloc(1, sizeof *n) : NULL;
    if (!n) return false; /* out of memory: libzmq resolves it (IPv4) */
    n->k = k;
    n->c = c;
    memcpy(n->host, host, sizeof host);
    n->next_name = k->names;
    k->names = n;
    return true;
}

static kvname **name_at(gw_kvsub *k, uint32_t slot) {
    kvname **pp = &k->names;
    while (*pp && (*pp)->c->slot != slot) pp = &(*pp)->next_name;
    return pp;
}

/* Slot's stream closes: its name is no longer followed. */
static void name_drop(gw_kvsub *k, uint32_t slot) {
    kvname **pp = name_at(k, slot), *n = *pp;
    if (!n) return;
    *pp = n->next_name;
    if (n->pending)
        n->dropped = true; /* its last answer frees it */
    else
        name_free(n);
}

static void name_soon(gw_kvsub *k, uint32_t slot) {
    kvname *n = *name_at(k, slot);
    if (n && !n->failing) n->next = 0;
}

/* n's stream opens (again) at the addresses just found. */
static void name_open(gw_kvsub *k, kvname *n) {
    kvcmd c = *n->c;
    char eps[2][GW_EV_ENDPOINT_MAX + INET6_ADDRSTRLEN], err[256];
    char **dst[2] = {&c.endpoint, &c.replay};
    for (int j = 0; j < 2; j++) {
        if (!*dst[j] || !n->host[j][0]) continue;
        if (gw_ep_at_addr(*dst[j], n->got[j], eps[j], sizeof eps[j])) {
            IR_WARN("kvsub", "replica %s: the address of %s does not fit its endpoint", c.id,
                    n->host[j]);
            return;
        }
        *dst[j] = eps[j];
    }
    stream_drop(k, c.slot);
    memcpy(n->ip, n->got, sizeof n->ip);
    kvstream *s = stream_open(k, &c, err, sizeof err);
    if (!s) {
        IR_WARN("kvsub", "replica %s: its KV events cannot be followed at %s (%s)", c.id,
                c.endpoint, err);
        n->ip[0][0] = n->ip[1][0] = '\0'; /* tried again at the next answer */
        return;
    }
    ask_replay(s, 0);
    IR_INFO("kvsub", "replica %s: following its KV events at %s (%s resolves to %s)", c.id,
            c.endpoint, n->host[0][0] ? n->host[0] : n->host[1],
            n->host[0][0] ? n->got[0] : n->got[1]);
}

/* A lookup of n's names ended: open its stream at the addresses found when they
 * changed; a failure keeps the stream where it is (retried soon, logged once). */
static void name_settle(gw_kvsub *k, kvname *n) {
    uint64_t now = now_ns();
    const char *id = n->c->id, *host = n->host[0][0] ? n->host[0] : n->host[1];
    if (n->why) {
        if (!n->failing)
            IR_WARN("kvsub", "replica %s: looking up %s failed: %s; %s", id, host, n->why,
                    n->ip[0][0] || n->ip[1][0]
                        ? "its KV events are followed at the address last found"
                        : "it is tracked approximately until the name resolves");
        n->failing = true;
        n->next = now + NAME_RETRY;
        return;
    }
    if (n->failing) IR_INFO("kvsub", "replica %s: %s resolves again", id, host);
    n->failing = false;
    uint64_t ttl = n->ttl < 0 ? NAME_TTL_MAX : (uint64_t)n->ttl * 1000000000ull;
    n->next = now + IR_MIN(IR_MAX(ttl, NAME_TTL_MIN), NAME_TTL_MAX);
    if (memcmp(n->ip, n->got, sizeof n->ip) != 0) name_open(k, n);
}

static void name_done(kvname *n) {
    if (--n->pending > 0) return;
    if (n->dropped)
        name_free(n);
    else if (!n->k->closing)
        name_settle(n->k, n);
}

static void name_answer(kvname *n, int j, const gw_kvdns_answer *a) {
    if (a->ok) {
        memcpy(n->got[j], a->ip, sizeof n->got[j]);
        if (a->ttl >= 0 && (n->ttl < 0 || a->ttl < n->ttl)) n->ttl = a->ttl;
    } else if (!n->why) {
        n->why = a->why;
    }
    name_done(n);
}

static void on_pub_name(void *arg, const gw_kvdns_answer *a) {
    name_answer(arg, 0, a);
}

static void on_replay_name(void *arg, const gw_kvdns_answer *a) {
    name_answer(arg, 1, a);
}

/* The names whose time has come are looked up. */
static void name_lookups(gw_kvsub *k, uint64_t now) {
    for (kvname *n = k->names; n; n = n->next_name) {
        if (n->pending || now < n->next) continue;
        n->pending = 1; /* held while sending: an answer may come at once */
        n->why = NULL;
        n->ttl = -1;
        memset(n->got, 0, sizeof n->got);
        gw_kvdns_cb cbs[2] = {on_pub_name, on_replay_name};
        for (int j = 0; j < 2; j++) {
            if (!n->host[j][0]) continue;
            n->pending++;
            gw_kvdns_lookup(k->dns, n->host[j], cbs[j], n);
        }
        name_done(n);
    }
}

/* The subscriber thread: the streams asked for since the last poll, in order. */
static void run_cmds(gw_kvsub *k) {
    pthread_mutex_lock(&k->mu);
    kvcmd *c = k->head;
    k->head = NULL;
    k->tail = &k->head;
    pthread_mutex_unlock(&k->mu);
    while (c) {
        kvcmd *next = c->next;
        name_drop(k, c->slot);
        stream_drop(k, c->slot);
        if (c->add && name_add(k, c)) { /* opened when its name resolves */
            c = next;
            continue;
        }
        char err[256];
        kvstream *s = c->add ? stream_open(k, c, err, sizeof err) : NULL;
        if (c->add && !s)
            IR_WARN("kvsub",
                    "replica %s: its KV events cannot be followed (%s); it is tracked "
                    "approximately",
                    c->id, err);
        if (s) {
            ask_replay(s, 0); /* joining late: everything the engine still buffers */
            IR_INFO("kvsub", "replica %s: following its KV events at %s", c->id, c->endpoint);
        }
        cmd_free(c);
        c = next;
    }
}

static void *run(void *arg) {
    gw_kvsub *k = arg;
    for (size_t i = 0; i < k->n; i++) ask_replay(k->s[i], 0); /* joining late: all buffered */
    while (!atomic_load(&k->stop)) {
        run_cmds(k);
        if (k->dns) name_lookups(k, now_ns());
        size_t n = 0;
        for (size_t i = 0; i < k->n; i++) {
            kvstream *s = k->s[i];
            k->items[n++] = (zmq_pollitem_t){s->sub, 0, ZMQ_POLLIN, 0};
            if (s->dealer) k->items[n++] = (zmq_pollitem_t){s->dealer, 0, ZMQ_POLLIN, 0};
            if (s->mon) k->items[n++] = (zmq_pollitem_t){s->mon, 0, ZMQ_POLLIN, 0};
        }
        size_t nd = k->dns ? gw_kvdns_items(k->dns, k->items + n) : 0;
        if (zmq_poll(n + nd ? k->items : NULL, (int)(n + nd), POLL_MS) < 0 && zmq_errno() != EINTR)
            break;
        if (k->dns) { /* answers may open and close streams (and move k->items) */
            zmq_pollitem_t dns[GW_KVDNS_SOCKS];
            memcpy(dns, k->items + n, nd * sizeof dns[0]);
            gw_kvdns_process(k->dns, dns, nd);
        }
        uint64_t now = now_ns();
        for (size_t i = 0; i < k->n; i++) {
            kvstream *s = k->s[i];
            if (s->mon) drain_monitor(k, s);
            drain_sub(k, s);
            if (s->dealer) drain_dealer(k, s);
            gw_parity_poll(k->fleet, s->st, false);
            if (s->replaying && now > s->replay_deadline) {
                s->replaying = false;
                s->hole = false;
                /* Live batches came while it ran and were left to it: lost now. */
                if (s->live_last >= 0 && (s->next < 0 || s->live_last >= s->next))
                    fall_back(k, s, "a KV event replay timed out");
                else if (s->next < 0 && s->live_last < 0)
                    ask_replay(s, 0); /* the engine may not be up yet: ask again */
            }
        }
    }
    return NULL;
}

/* ---- start and stop ------------------------------------------------------------------ */

static const char *model_of(const gw_fleet *f, const gw_replica *r) {
    const gw_model_list *ml = gw_fleet_models(f);
    for (size_t m = 0; m < ml->n; m++)
        if (gw_replica_serves(r, ml->items[m]->index)) return ml->items[m]->cfg->name;
    return ml->n ? ml->items[0]->cfg->name : "";
}

/* Replica r's stream, as an ask (strings copied); NULL when memory runs out. */
static kvcmd *cmd_for(const gw_fleet *f, const gw_replica *r, bool add) {
    kvcmd *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    const gw_kv_events_cfg *e = &r->cfg->kv_events;
    *c = (kvcmd){.add = add, .slot = r->index, .rank = r->cfg->dp_target ? r->cfg->dp_rank : -1};
    snprintf(c->id, sizeof c->id, "%s", r->cfg->id);
    if (!add) return c;
    c->model = model_of(f, r);
    c->endpoint = strdup(e->endpoint);
    c->replay = e->replay_endpoint ? strdup(e->replay_endpoint) : NULL;
    c->topic = strdup(e->topic ? e->topic : "");
    if (!c->endpoint || !c->topic || (e->replay_endpoint && !c->replay)) {
        cmd_free(c);
        return NULL;
    }
    gw_ep_unescape_zone(c->endpoint);
    gw_ep_unescape_zone(c->replay);
    return c;
}

static void kvsub_free(gw_kvsub *k) {
    k->closing = true;
    gw_kvdns_free(k->dns); /* answers what is in flight: dropped names are freed */
    while (k->names) {
        kvname *n = k->names;
        k->names = n->next_name;
        name_free(n);
    }
    for (size_t i = 0; i < k->n; i++) stream_close(k, k->s[i]);
    for (size_t i = 0; k->stats && i < k->nslots; i++) /* checks left after a stream closed */
        gw_parity_poll(k->fleet, &k->stats[i], true);
    while (k->head) {
        kvcmd *c = k->head;
        k->head = c->next;
        cmd_free(c);
    }
    if (k->ctx) zmq_ctx_term(k->ctx);
    pthread_mutex_destroy(&k->mu);
    free(k->s);
    free(k->items);
    free(k->stats);
    free(k->on);
    free(k);
}

static gw_kvsub *kvsub_new(gw_fleet *f, char *err, size_t errlen) {
    if (gw_zmq_load(err, errlen)) return NULL;
    gw_kvsub *k = calloc(1, sizeof *k);
    if (!k) {
        snprintf(err, errlen, "out of memory (KV event subscriber)");
        return NULL;
    }
    k->fleet = f;
    k->nslots = f->nslots;
    k->tail = &k->head;
    pthread_mutex_init(&k->mu, NULL);
    k->stats = calloc(f->nslots, sizeof *k->stats);
    k->on = calloc(f->nslots, sizeof *k->on);
    k->ctx = zmq_ctx_new();
    k->items = calloc(GW_KVDNS_SOCKS, sizeof *k->items);
    if (!k->stats || !k->on || !k->ctx || !k->items) {
        kvsub_free(k);
        snprintf(err, errlen, "out of memory (KV event subscriber)");
        return NULL;
    }
    char why[256];
    const gw_config *cfg = atomic_load(&f->cfg);
    k->dns = gw_kvdns_new(&cfg->discovery.nameservers, why, sizeof why);
    if (!k->dns)
        IR_WARN("kvsub",
                "KV event endpoints named by host name are left to libzmq (IPv4 only, the "
                "system's resolver): %s",
                why);
    return k;
}

/* Starts k's thread and publishes k as f's subscriber; on failure k is freed. */
static int kvsub_run(gw_fleet *f, gw_kvsub *k, char *err, size_t errlen) {
    if (pthread_create(&k->thread, NULL, run, k)) {
        snprintf(err, errlen, "cannot start the KV event subscriber thread");
        kvsub_free(k);
        return -1;
    }
    k->thread_started = true;
    atomic_store_explicit(&f->kvsub, k, memory_order_release);
    return 0;
}

static bool groups_want_events(const gw_config *c) {
    const gw_dns_group_cfg *g = c->discovery.dns.items;
    for (size_t i = 0; i < c->discovery.dns.n; i++)
        if (gw_dns_wants_events(&g[i].kv_events)) return true;
    return false;
}

int gw_kvsub_start(gw_fleet *f, char *err, size_t errlen) {
    size_t n = 0;
    for (size_t i = 0; i < f->nreplicas; i++) n += f->replicas[i].cfg->kv_events.endpoint != NULL;
    if (n == 0 && !groups_want_events(f->cfg)) return 0;
    gw_kvsub *k = kvsub_new(f, err, errlen);
    if (!k) return -1;
    for (size_t i = 0; i < f->nreplicas; i++) {
        const gw_replica *r = &f->replicas[i];
        if (!r->cfg->kv_events.endpoint) continue;
        kvcmd *c = cmd_for(f, r, true);
        if (c && name_add(k, c)) continue; /* opened when its name resolves */
        char why[256] = "out of memory";
        kvstream *s = c ? stream_open(k, c, why, sizeof why) : NULL;
        if (c) cmd_free(c);
        if (!s) {
            snprintf(err, errlen, "replicas[%zu].kv_events: %s", i, why);
            kvsub_free(k);
            return -1;
        }
    }
    size_t named = 0; /* counted before the thread may change the lists */
    for (const kvname *x = k->names; x; x = x->next_name) named++;
    size_t total = k->n + named;
    if (kvsub_run(f, k, err, errlen)) return -1;
    IR_INFO("kvsub", "following the KV events of %zu replica(s)%s", total,
            named ? ", some once their hosts' names resolve" : "");
    return 0;
}

/* The running subscriber, started now when none runs; NULL (logged) when it cannot. */
static gw_kvsub *kvsub_get(gw_fleet *f, const gw_replica *r) {
    gw_kvsub *k = atomic_load_explicit(&f->kvsub, memory_order_acquire);
    char err[256];
    if (!k && (k = kvsub_new(f, err, sizeof err)) && kvsub_run(f, k, err, sizeof err)) k = NULL;
    if (!k)
        IR_WARN("kvsub",
                "replica %s: its KV events cannot be followed (%s); it is tracked "
                "approximately",
                r->cfg->id, err);
    return k;
}

void gw_kvsub_member(gw_fleet *f, gw_replica *r, bool joined) {
    bool events = r->cfg->kv_events.endpoint != NULL;
    gw_kvsub *k =
        joined && events ? kvsub_get(f, r) : atomic_load_explicit(&f->kvsub, memory_order_acquire);
    if (!k || (joined && !events)) return;
    kvcmd *c = cmd_for(f, r, joined && events);
    if (!c) {
        IR_WARN("kvsub", "replica %s: out of memory; its KV event stream is left as it is",
                r->cfg->id);
        return;
    }
    pthread_mutex_lock(&k->mu);
    *k->tail = c;
    k->tail = &c->next;
    pthread_mutex_unlock(&k->mu);
}

void gw_kvsub_stop(gw_fleet *f) {
    gw_kvsub *k = atomic_load(&f->kvsub);
    if (!k) return;
    atomic_store(&k->stop, 1);
    if (k->thread_started) pthread_join(k->thread, NULL);
    atomic_store(&f->kvsub, NULL);
    kvsub_free(k);
}

gw_kvsub_stats *gw_kvsub_replica(const gw_fleet *f, uint32_t slot) {
    gw_kvsub *k = atomic_load_explicit(&((gw_fleet *)f)->kvsub, memory_order_acquire);
    if (!k || slot >= k->nslots || !atomic_load_explicit(&k->on[slot], memory_order_acquire))
        return NULL;
    return &k->stats[slot];
}
