/* bench_events.c: the exact index's ingestion of engine KV events.
 *
 *   apply    BlockStored / BlockRemoved events applied per second on one thread
 *            (events of 1 block and of 16 blocks), one irx_ev_apply per event or
 *            batches of 64 events through irx_ev_apply_batch (as the gateway's
 *            subscriber applies a payload), with 0 or more lookup threads running
 *            64-block lookups meanwhile (lookups per second reported);
 *   ingest   msgpack payloads as vLLM publishes them (map or array encoding, 64-bit
 *            or 32-byte hashes), decoded and applied in a steady state: each stores a
 *            64-block chain and evicts another block by block; CPU time of the decode
 *            and apply calls (what the gateway's subscriber does);
 *   decode   msgpack batches of stores only (vLLM's map encoding, 32-byte hashes)
 *            decoded and applied, events per second and MB per second;
 *   memory   bytes per block held by an event-fed replica (the index's own count,
 *            glibc's heap growth and the resident set's), 1M blocks in 16-block chains;
 *   visible  ns from the start of an irx_ev_apply to a lookup on another thread
 *            seeing the block (the lag the index adds after a batch arrives).
 *
 * One JSON object per line. bench/events/run.sh drives it. */
#include <malloc.h>
#include <msgpack.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <urcu-bp.h>

#include "index/ir_index.h"

#define BS 16

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds of the calling thread: on a shared machine the wall clock counts
 * other processes' time too. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The index frees a replaced map table through liburcu's call_rcu thread. The
 * benchmarks run under SCHED_FIFO, where that thread, created at the priority of the
 * thread that first calls call_rcu, never runs while the applying thread and a lookup
 * thread keep both cores busy: no replaced table was ever freed, and every new table
 * faulted in fresh pages (about 14,500 page faults a 1-s ingest run against 3,000
 * alone). A gateway under the default scheduler does not pay that: its reclaimer,
 * asleep until work is queued, runs when it wakes. So the applying thread gets a
 * reclaimer of its own, one FIFO priority above it (as the default scheduler favours
 * a thread that mostly sleeps), and the reclaimer's CPU time is counted as the
 * applying thread's: freeing the tables is part of applying the events. */
static struct call_rcu_data *reclaimer;

static void reclaimer_start(void) {
    int policy;
    struct sched_param was, up;
    pthread_getschedparam(pthread_self(), &policy, &was);
    up = was;
    up.sched_priority += policy == SCHED_FIFO;
    if (policy == SCHED_FIFO) pthread_setschedparam(pthread_self(), SCHED_FIFO, &up);
    reclaimer = urcu_bp_create_call_rcu_data(0, -1); /* inherits the raised priority */
    if (policy == SCHED_FIFO) pthread_setschedparam(pthread_self(), SCHED_FIFO, &was);
    if (!reclaimer) abort();
    urcu_bp_set_thread_call_rcu_data(reclaimer);
}

/* CPU seconds of the reclaimer so far. */
static double reclaimer_cpu_s(void) {
    clockid_t clk;
    struct timespec ts;
    if (pthread_getcpuclockid(urcu_bp_get_call_rcu_thread(reclaimer), &clk) ||
        clock_gettime(clk, &ts))
        abort();
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static ir_hash128 ekey(uint64_t n) {
    return (ir_hash128){n * 0x9e3779b97f4a7c15ull + 7, n ^ 0x5555};
}

/* Chain c, blocks [from, from + n): tokens c * 1e6 + i. */
static void fill_tokens(uint32_t *t, uint64_t c, uint32_t from, uint32_t n) {
    for (uint32_t i = 0; i < n * BS; i++) t[i] = (uint32_t)(c * 7919 + from * BS + i);
}

/* Events gathered into a batch, applied when it holds `max` events: by
 * irx_ev_apply_batch, or (one_by_one) by one irx_ev_apply per event. The applying
 * thread's CPU time inside the apply calls is summed in cpu (the events' making is
 * not counted). */
#define BATCH_MAX 64
typedef struct evbatch {
    irx_index *ix;
    uint32_t max, n;
    bool one_by_one;
    double cpu;
    irx_ev ev[BATCH_MAX];
    ir_hash128 keys[BATCH_MAX][64];
    uint32_t toks[BATCH_MAX][64 * BS];
} evbatch;

static void batch_flush(evbatch *b) {
    irx_ev_counts cnt = {0};
    double c0 = cpu_s();
    if (b->one_by_one)
        for (uint32_t i = 0; i < b->n; i++) irx_ev_apply(b->ix, 0, &b->ev[i], &cnt);
    else if (b->n)
        irx_ev_apply_batch(b->ix, 0, b->ev, b->n, &cnt);
    b->cpu += cpu_s() - c0;
    b->n = 0;
}

static irx_ev *batch_next(evbatch *b) {
    if (b->n == b->max) batch_flush(b);
    return &b->ev[b->n++];
}

/* Stores chain c whole in events of per_event blocks. */
static uint64_t store_chain(evbatch *b, uint64_t c, uint32_t depth, uint32_t per_event) {
    uint64_t events = 0;
    for (uint32_t from = 0; from < depth; from += per_event) {
        uint32_t n = depth - from < per_event ? depth - from : per_event;
        irx_ev *ev = batch_next(b);
        ir_hash128 *keys = b->keys[ev - b->ev];
        uint32_t *toks = b->toks[ev - b->ev];
        for (uint32_t i = 0; i < n; i++) keys[i] = ekey(c * 1024 + from + i);
        fill_tokens(toks, c, from, n);
        *ev = (irx_ev){.type = IRX_EV_STORED,
                       .nblocks = n,
                       .blocks = keys,
                       .has_parent = from > 0,
                       .parent = ekey(c * 1024 + from - 1),
                       .ntokens = n * BS,
                       .block_size = BS,
                       .tokens = toks};
        events++;
    }
    return events;
}

static uint64_t remove_chain(evbatch *b, uint64_t c, uint32_t depth, uint32_t per_event) {
    uint64_t events = 0;
    for (uint32_t to = depth; to > 0;) { /* leaves first, as an engine evicts */
        uint32_t n = to < per_event ? to : per_event;
        irx_ev *ev = batch_next(b);
        ir_hash128 *keys = b->keys[ev - b->ev];
        for (uint32_t i = 0; i < n; i++) keys[i] = ekey(c * 1024 + to - 1 - i);
        *ev = (irx_ev){.type = IRX_EV_REMOVED, .nblocks = n, .blocks = keys};
        to -= n;
        events++;
    }
    return events;
}

/* batch_events 1: one irx_ev_apply per event (gathered 64 at a time, for the timing). */
static evbatch *batch_new(irx_index *ix, uint32_t batch_events) {
    evbatch *b = calloc(1, sizeof *b);
    if (!b) abort();
    b->ix = ix, b->max = batch_events == 1 ? BATCH_MAX : batch_events;
    b->one_by_one = batch_events == 1;
    return b;
}

static atomic_int stop;
static irx_index *shared;
static _Atomic uint64_t lookups, lookup_hits;
/* What the lookup threads ask for: chains the index holds now. The applying thread
 * publishes its next chain in head; chains [head - live, head) are held, and a looker
 * asks for one of the older ones (not the two newest nor the one about to go), with
 * the tokens that chain's events carried (chain_tokens). */
static _Atomic uint64_t head;
static uint64_t live_chains;
static void (*chain_tokens)(uint32_t *t, uint64_t c, uint32_t nblocks);

static void apply_tokens(uint32_t *t, uint64_t c, uint32_t nblocks) {
    fill_tokens(t, c, 0, nblocks);
}

static void *looker(void *arg) {
    (void)arg;
    ir_hash128 h[64];
    uint32_t toks[64 * BS], out[4];
    uint64_t n = 0, hits = 0, x = 88172645463325252ull;
    while (!atomic_load(&stop)) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t c = atomic_load_explicit(&head, memory_order_relaxed) - 3 - x % (live_chains - 4);
        chain_tokens(toks, c, 64);
        ir_block_hash_chain(ir_block_hash_root("m", NULL, NULL), toks, 64 * BS, BS, h, 64);
        for (int k = 0; k < 16; k++, n++) {
            irx_lookup(shared, h, 64, out);
            hits += out[0] > 0;
        }
    }
    atomic_fetch_add(&lookups, n);
    atomic_fetch_add(&lookup_hits, hits);
    return NULL;
}

/* Starts the lookup threads on ix, asking for the live chains below head. */
static void lookers_start(pthread_t *th, int readers, irx_index *ix, uint64_t live,
                          void (*tokens)(uint32_t *, uint64_t, uint32_t)) {
    shared = ix, live_chains = live, chain_tokens = tokens;
    atomic_store(&stop, 0);
    atomic_store(&lookups, 0);
    atomic_store(&lookup_hits, 0);
    for (int i = 0; i < readers; i++) pthread_create(&th[i], NULL, looker, NULL);
}

/* The share of lookups that found the chain's first block held (-1: none ran). */
static double lookers_stop(pthread_t *th, int readers) {
    atomic_store(&stop, 1);
    for (int i = 0; i < readers; i++) pthread_join(th[i], NULL);
    uint64_t n = atomic_load(&lookups);
    return n ? (double)atomic_load(&lookup_hits) / (double)n : -1;
}

/* live chains of 64 blocks held at once (2048: 131,072 blocks; 16384: 1,048,576). */
static void apply_bench(uint32_t per_event, uint32_t batch_events, int readers, uint64_t live,
                        double seconds) {
    irx_index *ix = irx_new(4);
    irx_ev_track(ix, 0, "m", BS);
    evbatch *b = batch_new(ix, batch_events);
    const uint32_t depth = 64;
    uint64_t c = 0;
    for (; c < live; c++) store_chain(b, c, depth, per_event); /* the steady state's start */
    batch_flush(b);
    atomic_store(&head, c);
    pthread_t th[16];
    lookers_start(th, readers, ix, live, apply_tokens);
    uint64_t events = 0, blocks = 0;
    b->cpu = 0;
    double t0 = now_s(), t, c0 = cpu_s(), r0 = reclaimer_cpu_s();
    do {
        for (int k = 0; k < 16; k++, c++) {
            events += store_chain(b, c, depth, per_event);
            events += remove_chain(b, c - live, depth, per_event);
            blocks += 2 * depth;
        }
        batch_flush(b);
        atomic_store_explicit(&head, c, memory_order_relaxed);
        t = now_s();
    } while (t - t0 < seconds);
    double dr = reclaimer_cpu_s() - r0, dc = cpu_s() - c0 + dr;
    b->cpu += dr;
    double hit = lookers_stop(th, readers);
    double dt = t - t0;
    printf("{\"case\":\"apply\",\"blocks_per_event\":%u,\"events_per_batch\":%u,"
           "\"blocks_held\":%llu,\"lookup_threads\":%d,\"block_events\":%llu,"
           "\"events_per_s\":%.0f,\"block_events_per_s\":%.0f,\"block_events_per_cpu_s\":%.0f,"
           "\"block_events_per_cpu_s_making_included\":%.0f,\"lookups_per_s\":%.0f,"
           "\"lookup_hit_share\":%.3f}\n",
           per_event, batch_events, (unsigned long long)(live * depth), readers,
           (unsigned long long)blocks, (double)events / dt, (double)blocks / dt,
           (double)blocks / b->cpu, (double)blocks / dc, (double)atomic_load(&lookups) / dt, hit);
    free(b);
    irx_free(ix);
}

/* A batch of `nev` BlockStored events of 16 blocks, as newer vLLM writes it. */
static void pack_str(msgpack_packer *pk, const char *s) {
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

static void make_batch(msgpack_sbuffer *sb, uint64_t first_chain, int nev) {
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3);
    pack_str(&pk, "ts");
    msgpack_pack_double(&pk, 1.7e9);
    pack_str(&pk, "events");
    msgpack_pack_array(&pk, (size_t)nev);
    for (int e = 0; e < nev; e++) {
        uint64_t c = first_chain + (uint64_t)e;
        msgpack_pack_map(&pk, 8);
        pack_str(&pk, "type");
        pack_str(&pk, "BlockStored");
        pack_str(&pk, "block_hashes");
        msgpack_pack_array(&pk, 16);
        for (int i = 0; i < 16; i++) {
            unsigned char d[32] = {0};
            uint64_t v = c * 1024 + (uint64_t)i;
            memcpy(d, &v, 8);
            msgpack_pack_bin(&pk, 32);
            msgpack_pack_bin_body(&pk, d, 32);
        }
        pack_str(&pk, "parent_block_hash");
        msgpack_pack_nil(&pk);
        pack_str(&pk, "token_ids");
        msgpack_pack_array(&pk, 16 * BS);
        for (uint32_t i = 0; i < 16 * BS; i++) msgpack_pack_uint32(&pk, (uint32_t)(c * 7919 + i));
        pack_str(&pk, "block_size");
        msgpack_pack_uint32(&pk, BS);
        pack_str(&pk, "lora_id");
        msgpack_pack_nil(&pk);
        pack_str(&pk, "medium");
        pack_str(&pk, "GPU");
        pack_str(&pk, "lora_name");
        msgpack_pack_nil(&pk);
    }
    pack_str(&pk, "data_parallel_rank");
    msgpack_pack_uint32(&pk, 0);
}

static void decode_bench(double seconds) {
    enum { NB = 64, NEV = 32 };
    msgpack_sbuffer sb[NB];
    for (int b = 0; b < NB; b++) {
        msgpack_sbuffer_init(&sb[b]);
        make_batch(&sb[b], (uint64_t)b * NEV, NEV);
    }
    irx_index *ix = irx_new(4);
    irx_ev_track(ix, 0, "m", BS);
    uint64_t events = 0, bytes = 0, rounds = 0;
    double t0 = now_s(), t, c0 = cpu_s();
    do {
        for (int b = 0; b < NB; b++) {
            irx_ev_batch batch;
            char err[64];
            if (irx_ev_decode(sb[b].data, sb[b].size, &batch, err, sizeof err)) abort();
            irx_ev_counts c = {0};
            irx_ev_apply_batch(ix, 0, batch.ev, batch.nev, &c);
            irx_ev_batch_free(&batch);
            events += NEV;
            bytes += sb[b].size;
        }
        if (++rounds % 4 == 0) { /* AllBlocksCleared keeps the index from only re-storing */
            irx_ev cl = {.type = IRX_EV_CLEARED};
            irx_ev_counts c = {0};
            irx_ev_apply(ix, 0, &cl, &c);
        }
        t = now_s();
    } while (t - t0 < seconds);
    double dt = t - t0, dc = cpu_s() - c0;
    printf("{\"case\":\"decode_apply\",\"encoding\":\"map\",\"hash\":\"bytes32\","
           "\"events_per_batch\":%d,\"blocks_per_event\":16,\"events_per_s\":%.0f,"
           "\"block_events_per_s\":%.0f,\"block_events_per_cpu_s\":%.0f,\"mb_per_s\":%.1f}\n",
           NEV, (double)events / dt, (double)events * 16 / dt, (double)events * 16 / dc,
           (double)bytes / dt / 1e6);
    for (int b = 0; b < NB; b++) msgpack_sbuffer_destroy(&sb[b]);
    irx_free(ix);
}

/* ---- ingest: msgpack payloads as vLLM publishes them, decoded and applied ---------- */

/* A steady state, as an engine's stream runs once its cache is full: each payload
 * (one engine step's batch) stores a 64-block chain in BlockStored events of
 * `per` blocks (a prefill) and evicts an older chain in BlockRemoved events of one
 * block each, leaves first (vLLM evicts block by block). Engine hashes are 64-bit
 * integers (vLLM's default, VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES) or 32-byte
 * strings (sha256_cbor); the batch and its events are arrays (older vLLM) or maps
 * (newer). Token ids are spread over a 152k vocabulary. */
typedef struct ingest_cfg {
    bool map, bytes;
    uint32_t per;
} ingest_cfg;

static uint64_t mix64(uint64_t x) {
    x ^= x >> 31, x *= 0x7fb5d329728ea185ull, x ^= x >> 27, x *= 0x81dadef4bc2dd44dull;
    return x ^ (x >> 33);
}

static void pack_hash(msgpack_packer *pk, const ingest_cfg *g, uint64_t chain, uint32_t i) {
    uint64_t v = mix64(chain * 1024 + i + 1);
    if (!g->bytes) {
        msgpack_pack_uint64(pk, v);
        return;
    }
    unsigned char d[32];
    for (int k = 0; k < 4; k++) {
        uint64_t w = mix64(v + (uint64_t)k);
        memcpy(d + 8 * k, &w, 8);
    }
    msgpack_pack_bin(pk, 32);
    msgpack_pack_bin_body(pk, d, 32);
}

/* An event's head: the map's size and "type", or the array's size and tag. */
static void pack_head(msgpack_packer *pk, const ingest_cfg *g, const char *tag, size_t n) {
    if (g->map) {
        msgpack_pack_map(pk, n);
        pack_str(pk, "type");
    } else {
        msgpack_pack_array(pk, n);
    }
    pack_str(pk, tag);
}

static void pack_key(msgpack_packer *pk, const ingest_cfg *g, const char *k) {
    if (g->map) pack_str(pk, k);
}

/* Token j of chain c in the ingest payloads (ids below Qwen3's vocabulary size). */
static uint32_t ingest_token(uint64_t c, uint32_t j) {
    return (uint32_t)((c * 7919 + (uint64_t)j * 31) % 151936);
}

static void ingest_tokens(uint32_t *t, uint64_t c, uint32_t nblocks) {
    for (uint32_t j = 0; j < nblocks * BS; j++) t[j] = ingest_token(c, j);
}

static void pack_stored(msgpack_packer *pk, const ingest_cfg *g, uint64_t c, uint32_t from,
                        uint32_t n) {
    pack_head(pk, g, "BlockStored", 7);
    pack_key(pk, g, "block_hashes");
    msgpack_pack_array(pk, n);
    for (uint32_t i = 0; i < n; i++) pack_hash(pk, g, c, from + i);
    pack_key(pk, g, "parent_block_hash");
    if (from)
        pack_hash(pk, g, c, from - 1);
    else
        msgpack_pack_nil(pk);
    pack_key(pk, g, "token_ids");
    msgpack_pack_array(pk, n * BS);
    for (uint32_t i = 0; i < n * BS; i++) msgpack_pack_uint32(pk, ingest_token(c, from * BS + i));
    pack_key(pk, g, "block_size");
    msgpack_pack_uint32(pk, BS);
    pack_key(pk, g, "lora_id");
    msgpack_pack_nil(pk);
    pack_key(pk, g, "medium");
    pack_str(pk, "GPU");
}

static void pack_removed(msgpack_packer *pk, const ingest_cfg *g, uint64_t c, uint32_t i) {
    pack_head(pk, g, "BlockRemoved", 3);
    pack_key(pk, g, "block_hashes");
    msgpack_pack_array(pk, 1);
    pack_hash(pk, g, c, i);
    pack_key(pk, g, "medium");
    pack_str(pk, "GPU");
}

/* One payload: stores chain `store` (64 blocks), then removes chain `evict` (none if
 * evict < 0). */
static void pack_step(msgpack_sbuffer *sb, const ingest_cfg *g, uint64_t store, int64_t evict) {
    const uint32_t depth = 64;
    msgpack_sbuffer_clear(sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    size_t nev = depth / g->per + (evict >= 0 ? depth : 0);
    if (g->map) {
        msgpack_pack_map(&pk, 3);
        pack_str(&pk, "ts");
    } else {
        msgpack_pack_array(&pk, 3);
    }
    msgpack_pack_double(&pk, 1.7e9);
    pack_key(&pk, g, "events");
    msgpack_pack_array(&pk, nev);
    for (uint32_t from = 0; from < depth; from += g->per) pack_stored(&pk, g, store, from, g->per);
    for (uint32_t i = depth; evict >= 0 && i-- > 0;) pack_removed(&pk, g, (uint64_t)evict, i);
    pack_key(&pk, g, "data_parallel_rank");
    msgpack_pack_uint32(&pk, 0);
}

/* What the gateway's subscriber does with a payload (kvsub.c): decode, apply, free.
 * Its own function, so that callgrind can count it alone (--toggle-collect=ingest_one). */
static __attribute__((noinline)) size_t ingest_one(irx_index *ix, const msgpack_sbuffer *sb) {
    irx_ev_batch batch;
    char err[64];
    if (irx_ev_decode(sb->data, sb->size, &batch, err, sizeof err)) {
        fprintf(stderr, "evbench: %s\n", err);
        abort();
    }
    irx_ev_counts c = {0};
    irx_ev_apply_batch(ix, 0, batch.ev, batch.nev, &c);
    irx_ev_batch_free(&batch);
    return (size_t)(c.stored + c.removed);
}

/* steps > 0: exactly that many payloads (for instruction counts), else `seconds`. */
static void ingest_bench(ingest_cfg g, int readers, double seconds, uint64_t steps) {
    const uint64_t live = 2048; /* chains held: 131,072 blocks */
    irx_index *ix = irx_new(4);
    irx_ev_track(ix, 0, "m", BS);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    uint64_t c = 0;
    for (; c < live; c++) {
        pack_step(&sb, &g, c, -1);
        ingest_one(ix, &sb);
    }
    atomic_store(&head, c);
    pthread_t th[16];
    lookers_start(th, readers, ix, live, ingest_tokens);
    uint64_t blocks = 0, bytes = 0, n = 0;
    double cpu = 0, t0 = now_s(), t, r0 = reclaimer_cpu_s();
    do {
        pack_step(&sb, &g, c, (int64_t)(c - live));
        c++;
        double c0 = cpu_s();
        size_t got = ingest_one(ix, &sb);
        cpu += cpu_s() - c0;
        if (got != 128) abort(); /* 64 stored, 64 removed */
        atomic_store_explicit(&head, c, memory_order_relaxed);
        blocks += got, bytes += sb.size;
        t = now_s();
    } while (steps ? ++n < steps : t - t0 < seconds);
    cpu += reclaimer_cpu_s() - r0;
    double hit = lookers_stop(th, readers);
    printf(
        "{\"case\":\"ingest\",\"encoding\":\"%s\",\"hash\":\"%s\",\"blocks_per_stored_event\":%u,"
        "\"lookup_threads\":%d,\"blocks_held\":%llu,\"block_events\":%llu,"
        "\"bytes_per_block_event\":%.1f,\"block_events_per_cpu_s\":%.0f,"
        "\"lookups_per_s\":%.0f,\"lookup_hit_share\":%.3f}\n",
        g.map ? "map" : "array", g.bytes ? "bytes32" : "int", g.per, readers,
        (unsigned long long)(live * 64), (unsigned long long)blocks, (double)bytes / (double)blocks,
        (double)blocks / cpu, (double)atomic_load(&lookups) / (t - t0), hit);
    msgpack_sbuffer_destroy(&sb);
    irx_free(ix);
}

static double rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, rss = 0;
    if (f && fscanf(f, "%lu %lu", &size, &rss) != 2) rss = 0;
    if (f) fclose(f);
    return (double)rss * 4096.0;
}

static void memory_bench(void) {
    struct mallinfo2 m0 = mallinfo2();
    double r0 = rss_bytes();
    irx_index *ix = irx_new(64);
    irx_ev_track(ix, 0, "m", BS);
    evbatch *b = batch_new(ix, BATCH_MAX);
    const uint64_t chains = 65536; /* 1,048,576 blocks */
    for (uint64_t c = 0; c < chains; c++) store_chain(b, c, 16, 16);
    batch_flush(b);
    free(b);
    struct mallinfo2 m1 = mallinfo2();
    double r1 = rss_bytes();
    irx_stats st;
    irx_stats_get(ix, &st);
    irx_ev_view v;
    irx_ev_view_get(ix, 0, &v);
    char err[200];
    int ok = irx_check(ix, err, sizeof err) == 0;
    printf("{\"case\":\"memory\",\"blocks\":%llu,\"bytes_per_block_index\":%.1f,"
           "\"bytes_per_block_heap\":%.1f,\"bytes_per_block_rss\":%.1f,"
           "\"event_tables_per_block\":%.1f,\"check\":%s}\n",
           (unsigned long long)v.gpu_blocks, (double)st.bytes / (double)v.gpu_blocks,
           (double)(m1.uordblks + m1.hblkhd - m0.uordblks - m0.hblkhd) / (double)v.gpu_blocks,
           (r1 - r0) / (double)v.gpu_blocks, (double)v.bytes / (double)v.gpu_blocks,
           ok ? "true" : "false");
    irx_free(ix);
}

/* A writer stores one block; a reader spins on a lookup of it until it sees it. */
static _Atomic int seen;

static void *spinner(void *arg) {
    ir_hash128 *h = arg;
    uint32_t out[4];
    while (!atomic_load(&stop)) {
        irx_lookup(shared, h, 1, out);
        if (out[0] && !atomic_load(&seen)) atomic_store(&seen, 1);
    }
    return NULL;
}

static void visible_bench(void) {
    double total = 0;
    const int rounds = 200;
    double worst = 0;
    for (int r = 0; r < rounds; r++) {
        irx_index *ix = irx_new(4);
        irx_ev_track(ix, 0, "m", BS);
        shared = ix;
        uint32_t toks[BS];
        fill_tokens(toks, (uint64_t)r, 0, 1);
        ir_hash128 h;
        ir_block_hash_chain(ir_block_hash_root("m", NULL, NULL), toks, BS, BS, &h, 1);
        atomic_store(&stop, 0);
        atomic_store(&seen, 0);
        pthread_t th;
        pthread_create(&th, NULL, spinner, &h);
        for (volatile int spin = 0; spin < 100000; spin++) {}
        double t0 = now_s();
        evbatch *b = batch_new(ix, 1);
        store_chain(b, (uint64_t)r, 1, 1);
        batch_flush(b);
        free(b);
        while (!atomic_load(&seen)) {}
        double dt = now_s() - t0;
        atomic_store(&stop, 1);
        pthread_join(th, NULL);
        total += dt;
        if (dt > worst) worst = dt;
        irx_free(ix);
    }
    printf("{\"case\":\"visible\",\"rounds\":%d,\"mean_ns\":%.0f,\"max_ns\":%.0f}\n", rounds,
           total / rounds * 1e9, worst * 1e9);
}

static void clamp_readers(int *readers) {
    if (*readers < 0) *readers = 0;
    if (*readers > 16) *readers = 16;
}

static const char usage[] =
    "usage: inferrail-evbench [all|apply|apply-big|ingest|decode|memory|visible] [SECONDS] "
    "[READERS]\n"
    "       inferrail-evbench one PER_EVENT BATCH READERS CHAINS SECONDS\n"
    "       inferrail-evbench ingest map|array int|bytes PER READERS [SECONDS [STEPS]]\n"
    "The exact index's KV event ingestion; one JSON object per line (bench/events/run.sh).\n";

static bool known_case(const char *w) {
    const char *cases[] = {"all",    "apply",  "apply-big", "ingest",
                           "decode", "memory", "visible",   "one"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (!strcmp(w, cases[i])) return true;
    return false;
}

int main(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(usage, stdout);
        return 0;
    }
    if (argc > 1 && !known_case(argv[1])) {
        fputs(usage, stderr);
        return 2;
    }
    const char *what = argc > 1 ? argv[1] : "all";
    double secs = argc > 2 ? atof(argv[2]) : 2.0;
    bool all = strcmp(what, "all") == 0;
    int readers = argc > 3 ? atoi(argv[3]) : 1;
    if (readers < 1 || readers > 16) readers = 1;
    reclaimer_start();
    if (all || strcmp(what, "apply") == 0) {
        for (uint32_t per = 1; per <= 16; per += 15) {
            apply_bench(per, 1, 0, 2048, secs); /* one irx_ev_apply per event */
            apply_bench(per, BATCH_MAX, 0, 2048, secs);
        }
        apply_bench(16, BATCH_MAX, readers, 2048, secs);
        apply_bench(1, BATCH_MAX, readers, 2048, secs);
    }
    if (strcmp(what, "one") == 0 && argc > 6) { /* one PER_EVENT BATCH READERS CHAINS SECONDS */
        uint32_t per = (uint32_t)atoi(argv[2]), bat = (uint32_t)atoi(argv[3]);
        uint64_t chains = (uint64_t)atoll(argv[5]);
        if (per < 1 || per > 64 || bat < 1 || bat > BATCH_MAX || chains < 1) return 2;
        apply_bench(per, bat, atoi(argv[4]) > 16 ? 16 : atoi(argv[4]), chains, atof(argv[6]));
        return 0;
    }
    if (all || strcmp(what, "apply-big") == 0) { /* 1M blocks held: tables far past the cache */
        apply_bench(1, BATCH_MAX, 0, 16384, secs);
        apply_bench(16, BATCH_MAX, 0, 16384, secs);
    }
    if (strcmp(what, "ingest") == 0 && argc > 5) {
        /* ingest map|array int|bytes PER READERS SECONDS [STEPS] */
        ingest_cfg g = {.map = strcmp(argv[2], "map") == 0,
                        .bytes = strcmp(argv[3], "bytes") == 0,
                        .per = (uint32_t)atoi(argv[4])};
        if (g.per < 1 || 64 % g.per) return 2;
        int rd = argc > 5 ? atoi(argv[5]) : 0;
        clamp_readers(&rd);
        ingest_bench(g, rd, argc > 6 ? atof(argv[6]) : 2.0,
                     argc > 7 ? (uint64_t)atoll(argv[7]) : 0);
        return 0;
    }
    if (all || strcmp(what, "ingest") == 0) {
        for (int m = 0; m < 2; m++)
            for (int b = 0; b < 2; b++)
                ingest_bench((ingest_cfg){.map = m, .bytes = b, .per = 16}, 0, secs, 0);
        ingest_bench((ingest_cfg){.map = true, .bytes = false, .per = 16}, readers, secs, 0);
    }
    if (all || strcmp(what, "decode") == 0) decode_bench(secs);
    if (all || strcmp(what, "memory") == 0) memory_bench();
    if (all || strcmp(what, "visible") == 0) visible_bench();
    return 0;
}
