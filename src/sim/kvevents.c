/* kvevents.c: the simulator's KV event publisher, in vLLM's wire format
 * (vllm/distributed/kv_events.py, ZmqEventPublisher; see
 * docs/internals/kv-events.md).
 *
 * The engine reports each block it hashes (stored) and each hash it drops
 * (removed; a reset that empties everything is AllBlocksCleared). Events
 * collect in a pending batch; a timer on the loop flushes it every FLUSH_MS as
 * one batch (topic, 8-byte big-endian sequence, msgpack payload) on the PUB
 * socket, keeps the last buffer_steps payloads, and answers replay requests on
 * the ROUTER socket. Block hashes on the wire are the engine's own: a keyed
 * digest of the simulator's chained hash, as a signed 64-bit integer or 32
 * bytes, never the value the gateway computes. */
#include "sim/sim.h"

#include <jansson.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#define FLUSH_MS    2
#define MAX_PENDING 65536 /* events in one batch before it is flushed early */
#define MAX_BUFFER  100000

typedef struct pev {
    int type; /* 1 stored, 2 removed, 3 cleared */
    ir_hash128 parent;
    bool has_parent;
    bool cpu;          /* medium "CPU": the CPU tier's, no parent and no token ids when stored */
    uint32_t first, n; /* hashes[first..first+n), tokens[first*bs..) for stored */
    uint32_t salt_at,
        salt_len; /* stored, no parent: the chain's cache_salt in salts (len 0: none) */
} pev;

typedef struct slot {
    int64_t seq;
    char *data;
    size_t len;
} slot;

struct sim_kvpub {
    uv_timer_t timer;
    void *ctx, *pub, *router;
    char *topic;
    bool map, bytes;
    uint32_t block_size;
    pev *ev;
    size_t nev, evcap;
    ir_hash128 *hashes;
    uint32_t *tokens;
    size_t nhash, hashcap;
    ir_buf salts; /* the pending events' cache salts, one after another */
    int64_t seq;
    slot *buf;
    size_t nbuf, bufcap, bufhead;
    uint64_t drop; /* batches still to leave off the PUB socket (a fault) */
    uint32_t rank; /* data_parallel_rank */
};

/* ---- the config (vLLM's --kv-events-config JSON) ------------------------------------ */

int sim_kvpub_parse(const char *json, sim_kvpub_cfg *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->buffer_steps = 10000;
    json_error_t je;
    json_t *o = json_loads(json, 0, &je);
    const char *why = NULL;
    if (!json_is_object(o)) why = "not a JSON object";
    json_t *en = o ? json_object_get(o, "enable_kv_cache_events") : NULL;
    json_t *pub = o ? json_object_get(o, "publisher") : NULL;
    json_t *ep = o ? json_object_get(o, "endpoint") : NULL;
    json_t *rep = o ? json_object_get(o, "replay_endpoint") : NULL;
    json_t *bs = o ? json_object_get(o, "buffer_steps") : NULL;
    json_t *tp = o ? json_object_get(o, "topic") : NULL;
    if (!why && en && !json_is_boolean(en)) why = "enable_kv_cache_events: not a boolean";
    if (!why && pub &&
        !(json_is_string(pub) && (strcmp(json_string_value(pub), "zmq") == 0 ||
                                  strcmp(json_string_value(pub), "null") == 0)))
        why = "publisher: only \"zmq\" (or \"null\")";
    if (!why && ep && !json_is_string(ep)) why = "endpoint: not a string";
    if (!why && rep && !json_is_null(rep) && !json_is_string(rep))
        why = "replay_endpoint: not a string";
    if (!why && bs &&
        !(json_is_integer(bs) && json_integer_value(bs) > 0 &&
          json_integer_value(bs) <= MAX_BUFFER))
        why = "buffer_steps: not an integer in 1..100000";
    if (!why && tp && !json_is_string(tp)) why = "topic: not a string";
    if (why) {
        snprintf(err, errlen, "--kv-events-config: %s", why);
        json_decref(o);
        return -1;
    }
    out->enabled = en && json_is_true(en) && !(pub && strcmp(json_string_value(pub), "null") == 0);
    snprintf(out->endpoint, sizeof out->endpoint, "%s",
             ep ? json_string_value(ep) : "tcp://*:5557");
    if (rep && json_is_string(rep))
        snprintf(out->replay_endpoint, sizeof out->replay_endpoint, "%s", json_string_value(rep));
    if (tp) snprintf(out->topic, sizeof out->topic, "%s", json_string_value(tp));
    if (bs) out->buffer_steps = (uint32_t)json_integer_value(bs);
    json_decref(o);
    return 0;
}

/* ---- engine keys ------------------------------------------------------------------------ */

/* ep's tcp port plus rank, in place (vLLM's offset_endpoint_port). */
static int offset_port(char *ep, size_t cap, uint32_t rank, char *err, size_t errlen) {
    const char *colon = strncmp(ep, "tcp://", 6) == 0 ? strrchr(ep + 6, ':') : NULL;
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || !colon[1] || *end || port <= 0 || port + (long)rank > 65535) {
        snprintf(err, errlen,
                 "--kv-events-config: endpoint '%s': --data-parallel-size needs tcp://host:port "
                 "with room for a port per rank",
                 ep);
        return -1;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%.*s:%ld", (int)(colon - ep), ep, port + (long)rank);
    if (strlen(buf) >= cap) return -1;
    strcpy(ep, buf);
    return 0;
}

int sim_kvpub_cfg_rank(sim_kvpub_cfg *c, uint32_t rank, char *err, size_t errlen) {
    c->rank = rank;
    if (rank == 0) return 0;
    if (offset_port(c->endpoint, sizeof c->endpoint, rank, err, errlen)) return -1;
    if (c->replay_endpoint[0] &&
        offset_port(c->replay_endpoint, sizeof c->replay_endpoint, rank, err, errlen))
        return -1;
    return 0;
}

static void pack_key(msgpack_packer *pk, const sim_kvpub *p, ir_hash128 h) {
    if (!p->bytes) {
        msgpack_pack_int64(pk, (int64_t)XXH3_64bits_withSeed(&h, sizeof h, 0x6b76657674ull));
        return;
    }
    XXH128_hash_t a = XXH3_128bits_withSeed(&h, sizeof h, 1),
                  b = XXH3_128bits_withSeed(&h, sizeof h, 2);
    unsigned char d[32];
    memcpy(d, &a, 16);
    memcpy(d + 16, &b, 16);
    msgpack_pack_bin(pk, 32);
    msgpack_pack_bin_body(pk, d, 32);
}

static void pack_str(msgpack_packer *pk, const char *s) {
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

/* One event, as msgspec encodes it: an array with the tag first, or a map with
 * "type" first; fields holding their defaults (extra_keys and later) left out. */
static void pack_event(msgpack_packer *pk, const sim_kvpub *p, const pev *e) {
    static const char *tags[] = {"", "BlockStored", "BlockRemoved", "AllBlocksCleared"};
    bool salted = e->type == 1 && e->salt_len;
    uint32_t nf = e->type == 1 ? 8 + salted : e->type == 2 ? 3 : 1;
    if (p->map)
        msgpack_pack_map(pk, nf);
    else
        msgpack_pack_array(pk, nf);
    if (p->map) pack_str(pk, "type");
    pack_str(pk, tags[e->type]);
    if (e->type == 3) return;
    if (p->map) pack_str(pk, "block_hashes");
    msgpack_pack_array(pk, e->n);
    for (uint32_t i = 0; i < e->n; i++) pack_key(pk, p, p->hashes[e->first + i]);
    if (e->type == 1) {
        if (p->map) pack_str(pk, "parent_block_hash");
        if (e->has_parent)
            pack_key(pk, p, e->parent);
        else
            msgpack_pack_nil(pk);
        if (p->map) pack_str(pk, "token_ids");
        size_t nt = e->cpu ? 0 : (size_t)e->n * p->block_size;
        msgpack_pack_array(pk, nt);
        for (size_t i = 0; i < nt; i++)
            msgpack_pack_uint32(pk, p->tokens[(size_t)e->first * p->block_size + i]);
        if (p->map) pack_str(pk, "block_size");
        msgpack_pack_uint32(pk, p->block_size);
        if (p->map) pack_str(pk, "lora_id");
        msgpack_pack_nil(pk);
    }
    if (p->map) pack_str(pk, "medium");
    pack_str(pk, e->cpu ? "CPU" : "GPU");
    if (e->type == 1) {
        if (p->map) pack_str(pk, "lora_name");
        msgpack_pack_nil(pk);
    }
    if (salted) { /* extra_keys: a tuple for each block, the first's holding the salt */
        if (p->map) pack_str(pk, "extra_keys");
        msgpack_pack_array(pk, e->n);
        msgpack_pack_array(pk, 1);
        msgpack_pack_str(pk, e->salt_len);
        msgpack_pack_str_body(pk, p->salts.data + e->salt_at, e->salt_len);
        for (uint32_t i = 1; i < e->n; i++) msgpack_pack_nil(pk);
    }
}

static void pack_batch(msgpack_packer *pk, const sim_kvpub *p) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double now = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    if (p->map) {
        msgpack_pack_map(pk, 3);
        pack_str(pk, "ts");
    } else {
        msgpack_pack_array(pk, 3);
    }
    msgpack_pack_double(pk, now);
    if (p->map) pack_str(pk, "events");
    msgpack_pack_array(pk, p->nev);
    for (size_t i = 0; i < p->nev; i++) pack_event(pk, p, &p->ev[i]);
    if (p->map) pack_str(pk, "data_parallel_rank");
    msgpack_pack_uint32(pk, p->rank);
}

/* ---- the replay buffer and the sockets ----------------------------------------------- */

static void keep(sim_kvpub *p, int64_t seq, char *data, size_t len) {
    slot *s;
    if (p->nbuf < p->bufcap) {
        s = &p->buf[(p->bufhead + p->nbuf++) % p->bufcap];
    } else {
        s = &p->buf[p->bufhead];
        free(s->data);
        p->bufhead = (p->bufhead + 1) % p->bufcap;
    }
    *s = (slot){seq, data, len};
}

static void send_seq(void *sock, int64_t seq, int more) {
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)seq >> (56 - 8 * i));
    zmq_send(sock, b, 8, more | ZMQ_DONTWAIT);
}

static void flush(sim_kvpub *p) {
    if (p->nev == 0) return;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    pack_batch(&pk, p);
    int64_t seq = p->seq++;
    if (p->drop > 0) {
        p->drop--;
    } else {
        zmq_send(p->pub, p->topic, strlen(p->topic), ZMQ_SNDMORE | ZMQ_DONTWAIT);
        send_seq(p->pub, seq, ZMQ_SNDMORE);
        zmq_send(p->pub, sb.data, sb.size, ZMQ_DONTWAIT);
    }
    keep(p, seq, sb.data, sb.size); /* the buffer takes the bytes */
    p->nev = p->nhash = 0;
    ir_buf_reset(&p->salts);
}

/* Replay: (identity, empty, start) in; (identity, empty, seq, payload) per kept
 * batch from start on; then (identity, empty, -1, empty). */
static void serve_replay(sim_kvpub *p) {
    for (int budget = 0; p->router && budget < 64; budget++) {
        zmq_msg_t f[3];
        int n = 0, more = 1;
        while (more) {
            zmq_msg_t tmp, *m = n < 3 ? &f[n] : &tmp;
            zmq_msg_init(m);
            if (zmq_msg_recv(m, p->router, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(m);
                for (int i = 0; i < n && i < 3; i++) zmq_msg_close(&f[i]);
                return;
            }
            more = zmq_msg_more(m);
            if (m == &tmp) zmq_msg_close(m);
            n++;
        }
        if (n == 3 && zmq_msg_size(&f[2]) == 8) {
            const unsigned char *b = zmq_msg_data(&f[2]);
            uint64_t start = 0;
            for (int i = 0; i < 8; i++) start = start << 8 | b[i];
            for (size_t i = 0; i < p->nbuf; i++) {
                const slot *s = &p->buf[(p->bufhead + i) % p->bufcap];
                if ((uint64_t)s->seq < start) continue;
                zmq_send(p->router, zmq_msg_data(&f[0]), zmq_msg_size(&f[0]),
                         ZMQ_SNDMORE | ZMQ_DONTWAIT);
                zmq_send(p->router, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
                send_seq(p->router, s->seq, ZMQ_SNDMORE);
                zmq_send(p->router, s->data, s->len, ZMQ_DONTWAIT);
            }
            zmq_send(p->router, zmq_msg_data(&f[0]), zmq_msg_size(&f[0]),
                     ZMQ_SNDMORE | ZMQ_DONTWAIT);
            zmq_send(p->router, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
            send_seq(p->router, -1, ZMQ_SNDMORE);
            zmq_send(p->router, "", 0, ZMQ_DONTWAIT);
        }
        for (int i = 0; i < n && i < 3; i++) zmq_msg_close(&f[i]);
    }
}

static void on_timer(uv_timer_t *t) {
    sim_kvpub *p = t->data;
    flush(p);
    serve_replay(p);
}

/* ---- what the engine reports ---------------------------------------------------------------- */

static pev *new_event(sim_kvpub *p, int type) {
    if (p->nev >= MAX_PENDING) flush(p);
    if (p->nev == p->evcap) {
        size_t nc = p->evcap ? p->evcap * 2 : 64;
        pev *ne = realloc(p->ev, nc * sizeof *ne);
        if (!ne) return NULL;
        p->ev = ne, p->evcap = nc;
    }
    pev *e = &p->ev[p->nev++];
    *e = (pev){type, {0, 0}, false, false, (uint32_t)p->nhash, 0, 0, 0};
    return e;
}

static int add_hash(sim_kvpub *p, ir_hash128 h, const uint32_t *tokens) {
    if (p->nhash == p->hashcap) {
        size_t nc = p->hashcap ? p->hashcap * 2 : 256;
        ir_hash128 *nh = realloc(p->hashes, nc * sizeof *nh);
        if (!nh) return -1;
        p->hashes = nh;
        uint32_t *nt = realloc(p->tokens, nc * p->block_size * sizeof *nt);
        if (!nt) return -1;
        p->tokens = nt, p->hashcap = nc;
    }
    p->hashes[p->nhash] = h;
    if (tokens)
        memcpy(p->tokens + p->nhash * p->block_size, tokens, p->block_size * sizeof *tokens);
    p->nhash++;
    return 0;
}

void sim_kvpub_stored(sim_kvpub *p, const ir_hash128 *parent, ir_hash128 h, const uint32_t *tokens,
                      const char *salt) {
    if (!p) return;
    pev *last = p->nev ? &p->ev[p->nev - 1] : NULL;
    /* The next block of the chain the last event stored: one event, as vLLM's. */
    bool chained = last && last->type == 1 && !last->cpu && parent &&
                   last->first + last->n == p->nhash &&
                   ir_hash128_eq(p->hashes[p->nhash - 1], *parent);
    pev *e = chained ? last : new_event(p, 1);
    if (!e) return;
    if (!chained && parent) e->parent = *parent, e->has_parent = true;
    if (!chained && !parent && salt && *salt) {
        e->salt_at = (uint32_t)p->salts.len;
        if (ir_buf_append_str(&p->salts, salt) == 0) e->salt_len = (uint32_t)strlen(salt);
    }
    if (add_hash(p, h, tokens)) return;
    e->n++;
}

/* Appends h to the last event when it is of this type and medium, else to a new one. */
static void add_plain(sim_kvpub *p, int type, bool cpu, ir_hash128 h) {
    if (!p) return;
    pev *last = p->nev ? &p->ev[p->nev - 1] : NULL;
    bool same = last && last->type == type && last->cpu == cpu && last->first + last->n == p->nhash;
    pev *e = same ? last : new_event(p, type);
    if (!e) return;
    e->cpu = cpu;
    if (add_hash(p, h, NULL)) return;
    e->n++;
}

void sim_kvpub_removed(sim_kvpub *p, ir_hash128 h) {
    add_plain(p, 2, false, h);
}

/* As vLLM's OffloadingConnector (offloading_connector.py, take_events): one
 * BlockStored per completed store, parent_block_hash None, token_ids [],
 * block_size the offloaded block's, medium "CPU"; evictions a BlockRemoved. */
void sim_kvpub_cpu_stored(sim_kvpub *p, ir_hash128 h) {
    add_plain(p, 1, true, h);
}

void sim_kvpub_cpu_removed(sim_kvpub *p, ir_hash128 h) {
    add_plain(p, 2, true, h);
}

void sim_kvpub_cleared(sim_kvpub *p) {
    if (p) new_event(p, 3);
}

void sim_kvpub_drop(sim_kvpub *p, uint64_t batches) {
    if (p) p->drop += batches;
}

/* ---- life cycle ------------------------------------------------------------------------------ */

/* libzmq binds (and resolves) IPv4 only unless the socket has ZMQ_IPV6: an
 * endpoint such as tcp://[::1]:5557 fails with ENODEV without it. */
static void allow_ipv6(void *z, const char *ep) {
    int v6 = 1;
    if (z && strchr(ep, '[')) zmq_setsockopt(z, ZMQ_IPV6, &v6, sizeof v6);
}

static void *bind_socket(sim_kvpub *p, int type, const char *ep, char *err, size_t errlen) {
    void *z = zmq_socket(p->ctx, type);
    int linger = 0, hwm = 100000;
    if (z) {
        zmq_setsockopt(z, ZMQ_LINGER, &linger, sizeof linger);
        zmq_setsockopt(z, ZMQ_SNDHWM, &hwm, sizeof hwm);
    }
    allow_ipv6(z, ep);
    /* vLLM binds an endpoint with a wildcard and connects to one without (to a
     * proxy); the simulator always binds, so that tests can keep to loopback
     * (tcp://127.0.0.1:5557). */
    if (!z || zmq_bind(z, ep)) {
        snprintf(err, errlen, "--kv-events-config: cannot bind %s: %s", ep,
                 zmq_strerror(zmq_errno()));
        if (z) zmq_close(z);
        return NULL;
    }
    return z;
}

sim_kvpub *sim_kvpub_new(uv_loop_t *loop, const sim_kvpub_cfg *c, uint32_t block_size, bool map,
                         bool bytes, char *err, size_t errlen) {
    sim_kvpub *p = calloc(1, sizeof *p);
    if (p) ir_buf_init(&p->salts, 1u << 24);
    if (!p || !(p->ctx = zmq_ctx_new()) || !(p->topic = strdup(c->topic)) ||
        !(p->buf = calloc(c->buffer_steps, sizeof *p->buf))) {
        snprintf(err, errlen, "out of memory");
        if (p) {
            if (p->ctx) zmq_ctx_term(p->ctx);
            free(p->topic);
        }
        free(p);
        return NULL;
    }
    p->bufcap = c->buffer_steps;
    p->rank = c->rank;
    p->block_size = block_size;
    p->map = map;
    p->bytes = bytes;
    p->pub = bind_socket(p, ZMQ_PUB, c->endpoint, err, errlen);
    /* vLLM's ROUTER always binds. */
    if (p->pub && c->replay_endpoint[0]) {
        p->router = zmq_socket(p->ctx, ZMQ_ROUTER);
        int linger = 0;
        if (p->router) zmq_setsockopt(p->router, ZMQ_LINGER, &linger, sizeof linger);
        allow_ipv6(p->router, c->replay_endpoint);
        if (!p->router || zmq_bind(p->router, c->replay_endpoint)) {
            snprintf(err, errlen, "--kv-events-config: cannot bind %s: %s", c->replay_endpoint,
                     zmq_strerror(zmq_errno()));
            if (p->router) zmq_close(p->router);
            p->router = NULL;
            zmq_close(p->pub);
            p->pub = NULL;
        }
    }
    if (!p->pub) {
        zmq_ctx_term(p->ctx);
        free(p->topic);
        free(p->buf);
        free(p);
        return NULL;
    }
    uv_timer_init(loop, &p->timer);
    p->timer.data = p;
    uv_timer_start(&p->timer, on_timer, FLUSH_MS, FLUSH_MS);
    return p;
}

static void on_closed(uv_handle_t *h) {
    sim_kvpub *p = h->data;
    for (size_t i = 0; i < p->nbuf; i++) free(p->buf[(p->bufhead + i) % p->bufcap].data);
    free(p->buf);
    free(p->ev);
    free(p->hashes);
    free(p->tokens);
    free(p->topic);
    ir_buf_free(&p->salts);
    free(p);
}

void sim_kvpub_free(sim_kvpub *p) {
    if (!p) return;
    flush(p);
    if (p->router) zmq_close(p->router);
    zmq_close(p->pub);
    zmq_ctx_term(p->ctx);
    uv_close((uv_handle_t *)&p->timer, on_closed);
}
