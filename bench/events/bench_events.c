/* bench_events.c: the exact index's ingestion of engine KV events.
 *
 *   apply    BlockStored / BlockRemoved events applied per second on one thread
 *            (events of 1 block and of 16 blocks), with 0 or 1 lookup threads
 *            running 64-block lookups meanwhile (lookups per second reported);
 *   decode   msgpack batches (vLLM's map encoding, 32-byte hashes) decoded and
 *            applied, events per second and MB per second;
 *   memory   bytes per block held by an event-fed replica (the index's own count
 *            and glibc's heap growth), 1M blocks in 16-block chains;
 *   visible  ns from the start of an irx_ev_apply to a lookup on another thread
 *            seeing the block (the lag the index adds after a batch arrives).
 *
 * One JSON object per line. bench/events/run.sh drives it. */
#include <malloc.h>
#include <msgpack.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static ir_hash128 ekey(uint64_t n) {
    return (ir_hash128){n * 0x9e3779b97f4a7c15ull + 7, n ^ 0x5555};
}

/* Chain c, blocks [from, from + n): tokens c * 1e6 + i. */
static void fill_tokens(uint32_t *t, uint64_t c, uint32_t from, uint32_t n) {
    for (uint32_t i = 0; i < n * BS; i++) t[i] = (uint32_t)(c * 7919 + from * BS + i);
}

/* Stores chain c whole in events of per_event blocks. */
static uint64_t store_chain(irx_index *ix, uint64_t c, uint32_t depth, uint32_t per_event) {
    ir_hash128 keys[64];
    uint32_t toks[64 * BS];
    uint64_t events = 0;
    for (uint32_t from = 0; from < depth; from += per_event) {
        uint32_t n = depth - from < per_event ? depth - from : per_event;
        for (uint32_t i = 0; i < n; i++) keys[i] = ekey(c * 1024 + from + i);
        fill_tokens(toks, c, from, n);
        irx_ev ev = {.type = IRX_EV_STORED,
                     .nblocks = n,
                     .blocks = keys,
                     .has_parent = from > 0,
                     .parent = ekey(c * 1024 + from - 1),
                     .ntokens = n * BS,
                     .block_size = BS,
                     .tokens = toks};
        irx_ev_counts cnt = {0};
        irx_ev_apply(ix, 0, &ev, &cnt);
        events++;
    }
    return events;
}

static uint64_t remove_chain(irx_index *ix, uint64_t c, uint32_t depth, uint32_t per_event) {
    ir_hash128 keys[64];
    uint64_t events = 0;
    for (uint32_t to = depth; to > 0;) { /* leaves first, as an engine evicts */
        uint32_t n = to < per_event ? to : per_event;
        for (uint32_t i = 0; i < n; i++) keys[i] = ekey(c * 1024 + to - 1 - i);
        irx_ev ev = {.type = IRX_EV_REMOVED, .nblocks = n, .blocks = keys};
        irx_ev_counts cnt = {0};
        irx_ev_apply(ix, 0, &ev, &cnt);
        to -= n;
        events++;
    }
    return events;
}

static atomic_int stop;
static irx_index *shared;
static _Atomic uint64_t lookups;

static void *looker(void *arg) {
    (void)arg;
    ir_hash128 h[64];
    uint32_t toks[64 * BS], out[4];
    uint64_t n = 0, c = 0;
    while (!atomic_load(&stop)) {
        fill_tokens(toks, c++ % 4096, 0, 64);
        ir_block_hash_chain(ir_block_hash_root("m", NULL, NULL), toks, 64 * BS, BS, h, 64);
        for (int k = 0; k < 16; k++, n++) irx_lookup(shared, h, 64, out);
    }
    atomic_fetch_add(&lookups, n);
    return NULL;
}

static void apply_bench(uint32_t per_event, int readers, double seconds) {
    irx_index *ix = irx_new(4);
    irx_ev_track(ix, 0, "m", BS);
    shared = ix;
    atomic_store(&stop, 0);
    atomic_store(&lookups, 0);
    pthread_t th[4];
    for (int i = 0; i < readers; i++) pthread_create(&th[i], NULL, looker, NULL);
    const uint32_t depth = 64;
    const uint64_t live = 2048; /* chains held at once: 131,072 blocks */
    uint64_t events = 0, blocks = 0, c = 0;
    double t0 = now_s(), t, c0 = cpu_s();
    do {
        for (int k = 0; k < 16; k++, c++) {
            events += store_chain(ix, c, depth, per_event);
            if (c >= live) events += remove_chain(ix, c - live, depth, per_event);
            blocks += c >= live ? 2 * depth : depth;
        }
        t = now_s();
    } while (t - t0 < seconds);
    double dc = cpu_s() - c0;
    atomic_store(&stop, 1);
    for (int i = 0; i < readers; i++) pthread_join(th[i], NULL);
    double dt = t - t0;
    printf("{\"case\":\"apply\",\"blocks_per_event\":%u,\"lookup_threads\":%d,"
           "\"events_per_s\":%.0f,\"block_events_per_s\":%.0f,\"block_events_per_cpu_s\":%.0f,"
           "\"lookups_per_s\":%.0f}\n",
           per_event, readers, (double)events / dt, (double)blocks / dt, (double)blocks / dc,
           (double)atomic_load(&lookups) / dt);
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
            for (size_t i = 0; i < batch.nev; i++) irx_ev_apply(ix, 0, &batch.ev[i], &c);
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

static void memory_bench(void) {
    struct mallinfo2 m0 = mallinfo2();
    irx_index *ix = irx_new(64);
    irx_ev_track(ix, 0, "m", BS);
    const uint64_t chains = 65536; /* 1,048,576 blocks */
    for (uint64_t c = 0; c < chains; c++) store_chain(ix, c, 16, 16);
    struct mallinfo2 m1 = mallinfo2();
    irx_stats st;
    irx_stats_get(ix, &st);
    irx_ev_view v;
    irx_ev_view_get(ix, 0, &v);
    char err[200];
    int ok = irx_check(ix, err, sizeof err) == 0;
    printf("{\"case\":\"memory\",\"blocks\":%llu,\"bytes_per_block_index\":%.1f,"
           "\"bytes_per_block_heap\":%.1f,\"event_tables_per_block\":%.1f,\"check\":%s}\n",
           (unsigned long long)v.gpu_blocks, (double)st.bytes / (double)v.gpu_blocks,
           (double)(m1.uordblks + m1.hblkhd - m0.uordblks - m0.hblkhd) / (double)v.gpu_blocks,
           (double)v.bytes / (double)v.gpu_blocks, ok ? "true" : "false");
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
        store_chain(ix, (uint64_t)r, 1, 1);
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

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "all";
    double secs = argc > 2 ? atof(argv[2]) : 2.0;
    bool all = strcmp(what, "all") == 0;
    if (all || strcmp(what, "apply") == 0) {
        apply_bench(1, 0, secs);
        apply_bench(16, 0, secs);
        apply_bench(16, 1, secs);
    }
    if (all || strcmp(what, "decode") == 0) decode_bench(secs);
    if (all || strcmp(what, "memory") == 0) memory_bench();
    if (all || strcmp(what, "visible") == 0) visible_bench();
    return 0;
}
