/* The exact index fed by engine KV events: chaining the gateway's own hashes
 * from token ids, removal in the middle of a chain, reattachment, tiers,
 * orphans, clears, salts, duplicate hashes, fallback to approximate tracking,
 * a randomized comparison with a naive model of the engine's prefix hits, and
 * readers racing a writer (run under TSan by make test-tsan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "index/index_internal.h"
#include "index/ir_index.h"

#define BS 4

static void check(irx_index *ix) {
    char err[200];
    if (irx_check(ix, err, sizeof err)) fail_msg("%s", err);
}

static ir_hash128 ekey(uint64_t n) { /* an engine's opaque hash: anything but the gateway's */
    return (ir_hash128){n * 0x9e3779b97f4a7c15ull + 1, ~n};
}

/* Block i of prompt `p` has tokens p*1000 + i*BS + j. */
static void toks(uint32_t *out, uint32_t p, uint32_t from, uint32_t n) {
    for (uint32_t i = 0; i < n * BS; i++) out[i] = p * 1000 + from * BS + i;
}

/* BlockStored for blocks [from, from + n) of prompt p, engine keys base + i. */
static void store(irx_index *ix, uint32_t r, uint32_t p, uint32_t from, uint32_t n, uint64_t base,
                  irx_medium m, const char *salt) {
    ir_hash128 keys[64];
    uint32_t t[64 * BS];
    for (uint32_t i = 0; i < n; i++) keys[i] = ekey(base + from + i);
    toks(t, p, from, n);
    irx_ev ev = {.type = IRX_EV_STORED,
                 .nblocks = n,
                 .blocks = keys,
                 .has_parent = from > 0,
                 .parent = ekey(base + from - 1),
                 .ntokens = n * BS,
                 .block_size = BS,
                 .tokens = t,
                 .medium = m,
                 .cache_salt = salt};
    irx_ev_counts c = {0};
    irx_ev_apply(ix, r, &ev, &c);
}

static void removes(irx_index *ix, uint32_t r, uint64_t key, irx_medium m) {
    ir_hash128 k = ekey(key);
    irx_ev ev = {.type = IRX_EV_REMOVED, .nblocks = 1, .blocks = &k, .medium = m};
    irx_ev_counts c = {0};
    irx_ev_apply(ix, r, &ev, &c);
}

/* The gateway's hashes of prompt p's first n blocks. */
static void prompt(ir_hash128 *h, uint32_t p, uint32_t n, const char *salt) {
    uint32_t t[64 * BS];
    toks(t, p, 0, n);
    ir_block_hash_chain(ir_block_hash_root("m", NULL, salt), t, n * BS, BS, h, n);
}

static uint32_t depth(irx_index *ix, uint32_t r, uint32_t p, uint32_t n) {
    ir_hash128 h[64];
    uint32_t out[8];
    prompt(h, p, n, NULL);
    irx_lookup(ix, h, n, out);
    return out[r];
}

static void chain_remove_reattach(void **state) {
    (void)state;
    irx_index *ix = irx_new(8);
    assert_int_equal(irx_ev_track(ix, 1, "m", BS), 0);
    assert_true(irx_ev_tracked(ix, 1));
    assert_false(irx_ev_tracked(ix, 0));
    store(ix, 1, 7, 0, 3, 100, IRX_MEDIUM_GPU, NULL);
    assert_int_equal(depth(ix, 1, 7, 6), 3);
    assert_int_equal(depth(ix, 1, 8, 6), 0); /* another prompt */
    store(ix, 1, 7, 3, 1, 100, IRX_MEDIUM_GPU, NULL);
    assert_int_equal(depth(ix, 1, 7, 6), 4);
    check(ix);
    removes(ix, 1, 101, IRX_MEDIUM_GPU); /* block 1: the engine stops hitting at 1 */
    assert_int_equal(depth(ix, 1, 7, 6), 1);
    check(ix);
    irx_ev_view v;
    irx_ev_view_get(ix, 1, &v);
    assert_int_equal(v.gpu_blocks, 3);
    assert_int_equal(v.nodes, 4);                     /* block 1 kept for its children */
    store(ix, 1, 7, 1, 1, 100, IRX_MEDIUM_GPU, NULL); /* recomputed: 2 and 3 hit again */
    assert_int_equal(depth(ix, 1, 7, 6), 4);
    check(ix);
    /* Leaves first, as an engine evicts: the tree shrinks to nothing. */
    for (int k = 103; k >= 100; k--) removes(ix, 1, (uint64_t)k, IRX_MEDIUM_GPU);
    irx_ev_view_get(ix, 1, &v);
    assert_int_equal(v.nodes, 0);
    assert_int_equal(depth(ix, 1, 7, 6), 0);
    check(ix);
    irx_free(ix);
}

static void tiers_orphans_clear(void **state) {
    (void)state;
    irx_index *ix = irx_new(8);
    assert_int_equal(irx_ev_track(ix, 2, "m", BS), 0);
    store(ix, 2, 1, 0, 2, 0, IRX_MEDIUM_GPU, NULL);
    store(ix, 2, 1, 2, 1, 0, IRX_MEDIUM_CPU, NULL); /* offloaded: not a GPU hit */
    assert_int_equal(depth(ix, 2, 1, 4), 2);
    irx_ev_view v;
    irx_ev_view_get(ix, 2, &v);
    assert_int_equal(v.cpu_blocks, 1);
    store(ix, 2, 1, 2, 1, 0, IRX_MEDIUM_GPU, NULL); /* loaded back to the GPU */
    assert_int_equal(depth(ix, 2, 1, 4), 3);
    removes(ix, 2, 2, IRX_MEDIUM_CPU); /* the CPU copy goes; the GPU one stays */
    assert_int_equal(depth(ix, 2, 1, 4), 3);
    /* An orphan: its parent was never seen. */
    store(ix, 2, 5, 3, 2, 500, IRX_MEDIUM_GPU, NULL);
    irx_ev_view_get(ix, 2, &v);
    assert_true(v.partial);
    assert_int_equal(v.orphans, 2);
    removes(ix, 2, 503, IRX_MEDIUM_GPU);
    removes(ix, 2, 504, IRX_MEDIUM_GPU);
    irx_ev_view_get(ix, 2, &v);
    assert_false(v.partial);
    check(ix);
    /* AllBlocksCleared, and when the view was emptied */
    assert_int_equal(irx_replica_cleared_ns(ix, 2), 0);
    uint64_t before = ir_now_ns();
    irx_ev cl = {.type = IRX_EV_CLEARED};
    irx_ev_counts c = {0};
    irx_ev_apply(ix, 2, &cl, &c);
    assert_int_equal(c.cleared, 1);
    assert_true(irx_replica_cleared_ns(ix, 2) >= before);
    assert_int_equal(irx_replica_cleared_ns(ix, 1), 0);
    assert_int_equal(depth(ix, 2, 1, 4), 0);
    check(ix);
    /* After the clear the same engine keys are new blocks again. */
    store(ix, 2, 1, 0, 2, 0, IRX_MEDIUM_GPU, NULL);
    assert_int_equal(depth(ix, 2, 1, 4), 2);
    /* A block size other than the index's is refused. */
    ir_hash128 k = ekey(9999);
    uint32_t t[8] = {0};
    irx_ev bad = {.type = IRX_EV_STORED,
                  .nblocks = 1,
                  .blocks = &k,
                  .ntokens = 8,
                  .block_size = 8,
                  .tokens = t};
    memset(&c, 0, sizeof c);
    irx_ev_apply(ix, 2, &bad, &c);
    assert_int_equal(c.refused, 1);
    check(ix);
    irx_free(ix);
}

static uint64_t unseen_of(irx_index *ix, uint32_t r, bool *partial) {
    irx_ev_view v;
    irx_ev_view_get(ix, r, &v);
    *partial = v.partial;
    return v.unseen;
}

/* A view that began after its engine did (a late join, events again after a fallback)
 * lacks the blocks stored before it: partial until they can all be gone. */
static void unseen_blocks_keep_the_view_partial(void **state) {
    (void)state;
    irx_index *ix = irx_new(8);
    bool partial;
    irx_ev_unseen(ix, 3); /* not tracked: nothing */
    assert_int_equal(unseen_of(ix, 3, &partial), 0);
    assert_int_equal(irx_set_capacity(ix, 3, 6), 0);
    assert_int_equal(irx_ev_track(ix, 3, "m", BS), 0);
    assert_int_equal(unseen_of(ix, 3, &partial), 0); /* from the engine's first batch: whole */
    assert_false(partial);
    irx_ev_unseen(ix, 3);
    assert_int_equal(unseen_of(ix, 3, &partial), 6);
    assert_true(partial);
    store(ix, 3, 1, 0, 2, 0, IRX_MEDIUM_GPU, NULL); /* 2 of the 6 blocks are known */
    assert_int_equal(unseen_of(ix, 3, &partial), 4);
    removes(ix, 3, 900, IRX_MEDIUM_GPU); /* a block never named goes: 5 left, 4 of room */
    assert_int_equal(unseen_of(ix, 3, &partial), 4);
    removes(ix, 3, 901, IRX_MEDIUM_CPU); /* another tier's copy: not a GPU block */
    removes(ix, 3, 1, IRX_MEDIUM_GPU);   /* a known one: not unseen */
    assert_int_equal(unseen_of(ix, 3, &partial), 5);
    store(ix, 3, 5, 3, 2, 500, IRX_MEDIUM_GPU, NULL); /* orphans, then their removal */
    removes(ix, 3, 503, IRX_MEDIUM_GPU);
    removes(ix, 3, 504, IRX_MEDIUM_GPU);
    assert_int_equal(unseen_of(ix, 3, &partial), 5);
    for (uint64_t k = 910; k < 914; k++) removes(ix, 3, k, IRX_MEDIUM_GPU);
    assert_int_equal(unseen_of(ix, 3, &partial), 1);
    assert_true(partial);
    removes(ix, 3, 914, IRX_MEDIUM_GPU);
    assert_int_equal(unseen_of(ix, 3, &partial), 0);
    assert_false(partial);
    /* Known blocks that fill the capacity leave no room for unseen ones. */
    irx_ev_unseen(ix, 3);
    store(ix, 3, 2, 0, 5, 200, IRX_MEDIUM_GPU, NULL); /* with block 0 of prompt 1: 6 */
    assert_int_equal(unseen_of(ix, 3, &partial), 0);
    assert_false(partial);
    /* A clear (AllBlocksCleared, a restart) ends it. */
    removes(ix, 3, 204, IRX_MEDIUM_GPU);
    irx_ev_unseen(ix, 3);
    assert_true(unseen_of(ix, 3, &partial) > 0);
    irx_ev cl = {.type = IRX_EV_CLEARED};
    irx_ev_counts c = {0};
    irx_ev_apply(ix, 3, &cl, &c);
    assert_int_equal(unseen_of(ix, 3, &partial), 0);
    assert_false(partial);
    irx_ev_unseen(ix, 3);
    irx_ev_clear(ix, 3);
    assert_int_equal(unseen_of(ix, 3, &partial), 0);
    /* Untracked and tracked again: a new view, whole until told. */
    irx_ev_unseen(ix, 3);
    irx_ev_untrack(ix, 3);
    assert_int_equal(irx_ev_track(ix, 3, "m", BS), 0);
    assert_int_equal(unseen_of(ix, 3, &partial), 0);
    check(ix);
    irx_free(ix);
}

static void salts_duplicates_and_fallback(void **state) {
    (void)state;
    irx_index *ix = irx_new(8);
    assert_int_equal(irx_set_capacity(ix, 3, 64), 0);
    ir_hash128 h[8];
    prompt(h, 4, 4, NULL);
    irx_rec rec = irx_record(ix, 3, h, 4); /* an approximate guess, dropped by tracking */
    irx_release(ix, rec, h, 4, 0);
    assert_int_equal(depth(ix, 3, 4, 4), 4);
    assert_int_equal(irx_ev_track(ix, 3, "m", BS), 0);
    assert_int_equal(depth(ix, 3, 4, 4), 0);
    assert_int_equal(irx_record(ix, 3, h, 4).n, 0); /* no guesses on a tracked replica */
    /* A salted chain: visible to the salted prompt only. */
    store(ix, 3, 4, 0, 2, 40, IRX_MEDIUM_GPU, "s1");
    assert_int_equal(depth(ix, 3, 4, 4), 0);
    ir_hash128 hs[4];
    uint32_t out[8];
    prompt(hs, 4, 4, "s1");
    irx_lookup(ix, hs, 4, out);
    assert_int_equal(out[3], 2);
    /* Two engine blocks with one gateway hash (the engine salted something the
     * gateway does not): the bit stays until both are gone. */
    store(ix, 3, 4, 0, 2, 60, IRX_MEDIUM_GPU, NULL);
    store(ix, 3, 4, 0, 2, 80, IRX_MEDIUM_GPU, NULL);
    assert_int_equal(depth(ix, 3, 4, 4), 2);
    removes(ix, 3, 61, IRX_MEDIUM_GPU);
    assert_int_equal(depth(ix, 3, 4, 4), 2);
    removes(ix, 3, 81, IRX_MEDIUM_GPU);
    assert_int_equal(depth(ix, 3, 4, 4), 1);
    check(ix);
    /* A restart (counters back) clears events too, and says when. */
    uint64_t before = ir_now_ns();
    irx_reset_replica(ix, 3);
    assert_true(irx_replica_cleared_ns(ix, 3) >= before);
    assert_int_equal(depth(ix, 3, 4, 4), 0);
    check(ix);
    /* Fallback: approximate again, and records count. */
    store(ix, 3, 4, 0, 2, 60, IRX_MEDIUM_GPU, NULL);
    irx_ev_untrack(ix, 3);
    assert_false(irx_ev_tracked(ix, 3));
    assert_int_equal(depth(ix, 3, 4, 4), 0);
    rec = irx_record(ix, 3, h, 4);
    assert_int_equal(rec.n, 4);
    irx_release(ix, rec, h, 4, 0);
    assert_int_equal(depth(ix, 3, 4, 4), 4);
    check(ix);
    irx_stats st;
    irx_stats_get(ix, &st);
    assert_true(st.bytes > 0);
    irx_free(ix);
}

static uint32_t cpu_depth(irx_index *ix, uint32_t r, uint32_t p, uint32_t n) {
    ir_hash128 h[64];
    uint32_t gpu[8], cpu[8];
    prompt(h, p, n, NULL);
    irx_lookup(ix, h, n, gpu);
    irx_ev_lookup_cpu(ix, h, n, gpu, cpu);
    return cpu[r];
}

static void cpu_tier(void **state) {
    (void)state;
    irx_index *ix = irx_new(8);
    assert_int_equal(irx_ev_track(ix, 4, "m", BS), 0);
    store(ix, 4, 9, 0, 2, 900, IRX_MEDIUM_GPU, NULL);
    store(ix, 4, 9, 2, 3, 900, IRX_MEDIUM_CPU, NULL); /* blocks 2-4 offloaded */
    assert_int_equal(depth(ix, 4, 9, 8), 2);
    assert_int_equal(cpu_depth(ix, 4, 9, 8), 3);
    check(ix);
    /* Block 1 evicted from the GPU: 0 then 2-4 remain; block 1 is a miss, so nothing
     * after the GPU prefix can be loaded. */
    removes(ix, 4, 901, IRX_MEDIUM_GPU);
    assert_int_equal(depth(ix, 4, 9, 8), 1);
    assert_int_equal(cpu_depth(ix, 4, 9, 8), 0);
    /* Block 1 offloaded too: the GPU prefix is 1 block, then 4 loadable ones. */
    store(ix, 4, 9, 1, 1, 900, IRX_MEDIUM_CPU, NULL);
    assert_int_equal(cpu_depth(ix, 4, 9, 8), 4);
    check(ix);
    /* Block 2 loaded back onto the GPU below block 1 (CPU only): still a CPU-priced hit. */
    store(ix, 4, 9, 2, 1, 900, IRX_MEDIUM_GPU, NULL);
    assert_int_equal(depth(ix, 4, 9, 8), 1);
    assert_int_equal(cpu_depth(ix, 4, 9, 8), 4);
    /* Block 1 back on the GPU: 3 GPU blocks, then 3 and 4 on the CPU. */
    store(ix, 4, 9, 1, 1, 900, IRX_MEDIUM_GPU, NULL);
    assert_int_equal(depth(ix, 4, 9, 8), 3);
    assert_int_equal(cpu_depth(ix, 4, 9, 8), 2);
    check(ix);
    irx_ev cl = {.type = IRX_EV_CLEARED};
    irx_ev_counts c = {0};
    irx_ev_apply(ix, 4, &cl, &c);
    assert_int_equal(cpu_depth(ix, 4, 9, 8), 0);
    check(ix);
    irx_free(ix);
}

/* vLLM's OffloadingConnector names the blocks it copies to the CPU and nothing more
 * (no parent, no token ids, block_size the offloaded block's or 0). */
static irx_ev_counts copy_to_cpu(irx_index *ix, uint32_t r, uint64_t first, uint32_t n,
                                 uint32_t block_size) {
    ir_hash128 keys[64];
    uint32_t none = 0;
    for (uint32_t i = 0; i < n; i++) keys[i] = ekey(first + i);
    irx_ev ev = {.type = IRX_EV_STORED,
                 .nblocks = n,
                 .blocks = keys,
                 .ntokens = 0,
                 .block_size = block_size,
                 .tokens = &none,
                 .medium = IRX_MEDIUM_CPU};
    irx_ev_counts c = {0};
    irx_ev_apply(ix, r, &ev, &c);
    return c;
}

static void cpu_copy_without_tokens(void **state) {
    (void)state;
    irx_index *ix = irx_new(8);
    assert_int_equal(irx_ev_track(ix, 1, "m", BS), 0);
    store(ix, 1, 5, 0, 4, 500, IRX_MEDIUM_GPU, NULL);
    /* Blocks 2 and 3 copied to the CPU (block_size given), then evicted from the GPU,
     * tail first: the index keeps them, as CPU hits after the GPU prefix. */
    irx_ev_counts c = copy_to_cpu(ix, 1, 502, 2, BS);
    assert_int_equal(c.stored, 2);
    assert_int_equal(c.refused, 0);
    removes(ix, 1, 503, IRX_MEDIUM_GPU);
    removes(ix, 1, 502, IRX_MEDIUM_GPU);
    assert_int_equal(depth(ix, 1, 5, 4), 2);
    assert_int_equal(cpu_depth(ix, 1, 5, 4), 2);
    check(ix);
    /* Block 1 too, with block_size 0 (newer vLLM). */
    c = copy_to_cpu(ix, 1, 501, 1, 0);
    assert_int_equal(c.stored, 1);
    removes(ix, 1, 501, IRX_MEDIUM_GPU);
    assert_int_equal(depth(ix, 1, 5, 4), 1);
    assert_int_equal(cpu_depth(ix, 1, 5, 4), 3);
    /* The CPU tier evicts block 3: the run of loadable blocks stops at 2. */
    removes(ix, 1, 503, IRX_MEDIUM_CPU);
    assert_int_equal(cpu_depth(ix, 1, 5, 4), 2);
    check(ix);
    /* A copy the index never saw stored cannot be placed: an orphan, until removed. */
    c = copy_to_cpu(ix, 1, 777, 1, BS);
    assert_int_equal(c.orphans, 1);
    irx_ev_view v;
    irx_ev_view_get(ix, 1, &v);
    assert_int_equal(v.orphans, 1);
    removes(ix, 1, 777, IRX_MEDIUM_CPU);
    irx_ev_view_get(ix, 1, &v);
    assert_int_equal(v.orphans, 0);
    /* Offloaded blocks larger than the engine's: refused (their keys name the last
     * engine block of each only). */
    c = copy_to_cpu(ix, 1, 500, 1, 2 * BS);
    assert_int_equal(c.refused, 1);
    assert_int_equal(cpu_depth(ix, 1, 5, 4), 2);
    check(ix);
    irx_free(ix);
}

/* ---- randomized: the index against a naive engine --------------------------------- */
/* Prompts 0..P-1 share a trie: prompt p's block i has tokens of prompt (p % 3) for
 * i < 2 (a common head), else its own. The naive model keeps, per engine key, its
 * tier; the engine's hit for a prompt is the leading run of blocks on the GPU. */
#define P     12
#define DEPTH 10

static uint32_t owner(uint32_t p, uint32_t i) {
    return i < 2 ? p % 3 : p;
}
static uint64_t key_of(uint32_t p, uint32_t i) { /* an engine key per distinct block */
    uint32_t o = owner(p, i);
    return (uint64_t)o * 100 + i + 1;
}

static void block_toks(uint32_t *t, uint32_t p, uint32_t i) {
    for (uint32_t j = 0; j < BS; j++) t[j] = owner(p, i) * 1000 + i * BS + j;
}

static void store_one_in(irx_index *ix, uint32_t r, uint32_t p, uint32_t i, irx_medium m);
static void store_one(irx_index *ix, uint32_t r, uint32_t p, uint32_t i) {
    store_one_in(ix, r, p, i, IRX_MEDIUM_GPU);
}
static void store_one_in(irx_index *ix, uint32_t r, uint32_t p, uint32_t i, irx_medium m) {
    ir_hash128 k = ekey(key_of(p, i));
    uint32_t t[BS];
    block_toks(t, p, i);
    irx_ev ev = {.type = IRX_EV_STORED,
                 .nblocks = 1,
                 .blocks = &k,
                 .has_parent = i > 0,
                 .parent = ekey(i ? key_of(p, i - 1) : 0),
                 .ntokens = BS,
                 .block_size = BS,
                 .tokens = t,
                 .medium = m};
    irx_ev_counts c = {0};
    irx_ev_apply(ix, r, &ev, &c);
}

static void chain_of(ir_hash128 *h, uint32_t p) {
    ir_block_chain c = ir_block_chain_at(ir_block_hash_root("m", NULL, NULL), NULL, 0);
    for (uint32_t i = 0; i < DEPTH; i++) {
        uint32_t t[BS];
        block_toks(t, p, i);
        h[i] = ir_block_hash_next(&c, t, BS);
    }
}

static void randomized_against_naive(void **state) {
    (void)state;
    irx_index *ix = irx_new(4);
    assert_int_equal(irx_ev_track(ix, 0, "m", BS), 0);
    bool gpu[P * 100 + DEPTH + 1] = {false}, cpu[P * 100 + DEPTH + 1] = {false};
    uint64_t seed = 12345;
    for (int step = 0; step < 20000; step++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t p = (uint32_t)(seed >> 33) % P, i = (uint32_t)(seed >> 45) % DEPTH;
        uint32_t op = (uint32_t)(seed >> 20) % 100;
        uint64_t k = key_of(p, i);
        if (op < 45) {
            /* An engine computes a block only after its parent, which is then cached. */
            if (i == 0 || gpu[key_of(p, i - 1)]) {
                store_one(ix, 0, p, i);
                gpu[k] = true;
            }
        } else if (op < 55) { /* offloaded: a copy of a GPU block on the CPU */
            if (gpu[k]) {
                store_one_in(ix, 0, p, i, IRX_MEDIUM_CPU);
                cpu[k] = true;
            }
        } else if (op < 62) {
            removes(ix, 0, k, IRX_MEDIUM_CPU);
            cpu[k] = false;
        } else if (op < 99) { /* any block may go, children or not (LRU ties, offload) */
            removes(ix, 0, k, IRX_MEDIUM_GPU);
            gpu[k] = false;
        } else {
            irx_ev cl = {.type = IRX_EV_CLEARED};
            irx_ev_counts c = {0};
            irx_ev_apply(ix, 0, &cl, &c);
            memset(gpu, 0, sizeof gpu);
            memset(cpu, 0, sizeof cpu);
        }
        if (step % 7 == 0) {
            uint32_t q = (uint32_t)(seed >> 50) % P, want = 0, out[4], cout[4];
            while (want < DEPTH && gpu[key_of(q, want)]) want++;
            uint32_t more = want; /* then what it holds in some tier */
            while (more < DEPTH && (gpu[key_of(q, more)] || cpu[key_of(q, more)])) more++;
            ir_hash128 h[DEPTH];
            chain_of(h, q);
            irx_lookup(ix, h, DEPTH, out);
            irx_ev_lookup_cpu(ix, h, DEPTH, out, cout);
            if (out[0] != want)
                fail_msg("step %d prompt %u: index %u, engine %u", step, q, out[0], want);
            if (cout[0] != more - want)
                fail_msg("step %d prompt %u: CPU tier %u, engine %u", step, q, cout[0],
                         more - want);
        }
        if (step % 997 == 0) check(ix);
    }
    check(ix);
    irx_free(ix);
}

/* ---- batches: irx_ev_apply_batch against one-block events, one by one ------------------- */
/* A random stream of events, kept whole so that both indexes get the same: chains
 * stored in events of 1-4 blocks (parents in earlier events of the same batch or
 * before), removals of 1-3 blocks, offloads, offloaded copies without tokens, clears,
 * refused events, orphans, salted roots, a known key stored again under another chain,
 * and empty events. */
typedef struct evgen {
    irx_ev ev;
    ir_hash128 keys[4];
    uint32_t toks[4 * BS];
} evgen;

static uint64_t rnd(uint64_t *seed) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    return *seed >> 33;
}

static void gen_store(evgen *g, uint64_t *seed) {
    uint32_t p = (uint32_t)(rnd(seed) % P), i = (uint32_t)(rnd(seed) % DEPTH);
    uint32_t n = 1 + (uint32_t)(rnd(seed) % 4), odd = (uint32_t)(rnd(seed) % 40);
    if (i + n > DEPTH) n = DEPTH - i;
    for (uint32_t b = 0; b < n; b++) {
        g->keys[b] = ekey(key_of(p, i + b));
        block_toks(g->toks + b * BS, odd == 0 ? (p + 1) % P : p, i + b); /* 0: another chain */
    }
    g->ev = (irx_ev){.type = IRX_EV_STORED,
                     .nblocks = n,
                     .blocks = g->keys,
                     .has_parent = i > 0,
                     .parent = ekey(i ? key_of(p, i - 1) : 0),
                     .ntokens = n * BS,
                     .block_size = odd == 1 ? BS + 1 : BS, /* refused */
                     .tokens = g->toks,
                     .medium = odd == 2 ? IRX_MEDIUM_CPU : IRX_MEDIUM_GPU,
                     .cache_salt = odd == 3 ? "salt" : NULL};
    if (odd == 4) { /* an orphan, with keys of its own (never a node) */
        g->ev.has_parent = true, g->ev.parent = ekey(99999);
        for (uint32_t b = 0; b < n; b++) g->keys[b] = ekey(100000 + rnd(seed) % 64);
    }
    if (odd == 5) g->ev.nblocks = 0, g->ev.ntokens = 0;
    if (odd == 6) { /* an offloaded copy that names its blocks only */
        g->ev.medium = IRX_MEDIUM_CPU, g->ev.has_parent = false;
        g->ev.ntokens = 0, g->ev.block_size = 0, g->ev.tokens = NULL;
    }
}

static void gen_event(evgen *g, uint64_t *seed) {
    uint32_t op = (uint32_t)(rnd(seed) % 100);
    if (op < 55) {
        gen_store(g, seed);
        return;
    }
    if (op == 99) {
        g->ev = (irx_ev){.type = IRX_EV_CLEARED};
        return;
    }
    uint32_t n = 1 + (uint32_t)(rnd(seed) % 3);
    for (uint32_t b = 0; b < n; b++) {
        uint32_t p = (uint32_t)(rnd(seed) % P), i = (uint32_t)(rnd(seed) % DEPTH);
        g->keys[b] = ekey(key_of(p, i));
    }
    g->ev = (irx_ev){.type = IRX_EV_REMOVED,
                     .nblocks = n,
                     .blocks = g->keys,
                     .medium = op < 62 ? IRX_MEDIUM_CPU : IRX_MEDIUM_GPU};
}

static void same_view(irx_index *a, irx_index *b, int step) {
    for (uint32_t q = 0; q < P; q++) {
        ir_hash128 h[DEPTH];
        uint32_t ga[4], gb[4], ca[4], cb[4];
        chain_of(h, q);
        irx_lookup(a, h, DEPTH, ga);
        irx_lookup(b, h, DEPTH, gb);
        irx_ev_lookup_cpu(a, h, DEPTH, ga, ca);
        irx_ev_lookup_cpu(b, h, DEPTH, gb, cb);
        if (ga[0] != gb[0] || ca[0] != cb[0])
            fail_msg("step %d prompt %u: block by block %u+%u, batched %u+%u", step, q, ga[0],
                     ca[0], gb[0], cb[0]);
    }
    irx_ev_view va, vb;
    irx_ev_view_get(a, 0, &va);
    irx_ev_view_get(b, 0, &vb);
    assert_int_equal(va.gpu_blocks, vb.gpu_blocks);
    assert_int_equal(va.cpu_blocks, vb.cpu_blocks);
    assert_int_equal(va.nodes, vb.nodes);
    assert_int_equal(va.orphans, vb.orphans);
}

/* Applies ev as one-block events, one irx_ev_apply each: the same blocks, and nothing
 * for the batch's lookahead to guess. */
static void apply_split(irx_index *ix, const irx_ev *ev, irx_ev_counts *c) {
    if (ev->type != IRX_EV_STORED || ev->nblocks <= 1 || ev->ntokens == 0) { /* copies whole */
        irx_ev_apply(ix, 0, ev, c);
        return;
    }
    for (uint32_t b = 0; b < ev->nblocks; b++) {
        irx_ev one = *ev;
        one.nblocks = 1, one.blocks = &ev->blocks[b], one.ntokens = ev->ntokens / ev->nblocks;
        one.tokens = ev->tokens + (size_t)b * one.ntokens;
        if (b > 0) one.has_parent = true, one.parent = ev->blocks[b - 1];
        irx_ev_apply(ix, 0, &one, c);
    }
}

static void batches_match_one_by_one(void **state) {
    (void)state;
    irx_index *one = irx_new(4), *bat = irx_new(4);
    assert_int_equal(irx_ev_track(one, 0, "m", BS), 0);
    assert_int_equal(irx_ev_track(bat, 0, "m", BS), 0);
    enum { MAXB = 48 };
    evgen *g = calloc(MAXB, sizeof *g);
    irx_ev evs[MAXB];
    assert_non_null(g);
    uint64_t seed = 99;
    irx_ev_counts c1 = {0}, c2 = {0};
    for (int step = 0; step < 3000; step++) {
        uint32_t n = 1 + (uint32_t)(rnd(&seed) % MAXB);
        for (uint32_t k = 0; k < n; k++) {
            gen_event(&g[k], &seed);
            evs[k] = g[k].ev;
            apply_split(one, &evs[k], &c1);
        }
        irx_ev_apply_batch(bat, 0, evs, n, &c2);
        same_view(one, bat, step);
        if (step % 101 == 0) check(one), check(bat);
    }
    assert_int_equal(c1.stored, c2.stored);
    assert_int_equal(c1.removed, c2.removed);
    assert_int_equal(c1.cleared, c2.cleared);
    assert_int_equal(c1.orphans, c2.orphans);
    assert_true(c1.stored > 0 && c1.removed > 0 && c1.cleared > 0 && c1.orphans > 0 &&
                c1.refused > 0);
    check(one);
    check(bat);
    free(g);
    irx_free(one);
    irx_free(bat);
}

/* ---- a writer thread and lock-free readers -------------------------------------------- */
static atomic_bool stop;
static irx_index *shared;

static void *writer(void *arg) {
    (void)arg;
    uint64_t seed = 7;
    for (int n = 0; n < 40000 && !atomic_load(&stop); n++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t p = (uint32_t)(seed >> 33) % P, i = (uint32_t)(seed >> 45) % DEPTH;
        if ((seed >> 20) % 3)
            store_one(shared, 1, p, i);
        else
            removes(shared, 1, key_of(p, i), IRX_MEDIUM_GPU);
    }
    atomic_store(&stop, true);
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    ir_hash128 h[P][DEPTH];
    for (uint32_t p = 0; p < P; p++) chain_of(h[p], p);
    uint32_t out[4];
    for (uint64_t n = 0; !atomic_load(&stop); n++) {
        irx_lookup(shared, h[n % P], DEPTH, out);
        if (out[1] > DEPTH) abort();
    }
    return NULL;
}

static void readers_race_a_writer(void **state) {
    (void)state;
    shared = irx_new(4);
    assert_int_equal(irx_ev_track(shared, 1, "m", BS), 0);
    pthread_t w, rd[2];
    atomic_store(&stop, false);
    for (int i = 0; i < 2; i++) pthread_create(&rd[i], NULL, reader, NULL);
    pthread_create(&w, NULL, writer, NULL);
    pthread_join(w, NULL);
    for (int i = 0; i < 2; i++) pthread_join(rd[i], NULL);
    check(shared);
    irx_free(shared);
}

/* ---- map slots taken over while readers read them -------------------------------------
 * Keys A and B share a shard and a home slot, and C sits right after them, so a removed
 * A leaves a tombstone (not trimmed: its next slot is C's) that an added B takes over,
 * and the reverse. One writer churns A on replica 1, another B on replica 2; readers of
 * A must never see replica 2's bit (nor the reverse): that would be the new key's bits
 * read under the old key. */
#define KEY_A 0x1000000000000001ull /* shard 1, home from the high bits */
static atomic_int writers_left;
static irx_map churn_map;

static void *churner(void *arg) {
    uint32_t r = (uint32_t)(uintptr_t)arg;
    ir_hash128 k = {KEY_A + (r == 1 ? 0 : 64), 0};
    for (int n = 0; n < 200000; n++) {
        bool was;
        if (irx_map_add_bit(&churn_map, k, r, &was)) abort();
        irx_map_remove(&churn_map, k, r);
    }
    atomic_fetch_sub(&writers_left, 1);
    return NULL;
}

static void *crosscheck(void *arg) {
    (void)arg;
    ir_hash128 a = {KEY_A, 0}, b = {KEY_A + 64, 0};
    uint64_t w[IRX_MAX_REPLICAS / 64];
    while (atomic_load(&writers_left) > 0) {
        irx_read_lock();
        irx_map_bits(&churn_map, a, w);
        if (w[0] & 4) abort(); /* replica 2's bit under A */
        irx_map_bits(&churn_map, b, w);
        if (w[0] & 2) abort();
        irx_read_unlock();
    }
    return NULL;
}

static void takeover_never_shows_another_replicas_bit(void **state) {
    (void)state;
    irx_map_init(&churn_map, 1);
    bool was;
    ir_hash128 a = {KEY_A, 0}, c = {KEY_A + 128, 0};
    assert_int_equal(irx_map_add_bit(&churn_map, a, 1, &was), 0); /* A, then C after it */
    assert_int_equal(irx_map_add_bit(&churn_map, c, 3, &was), 0);
    irx_map_remove(&churn_map, a, 1);
    atomic_store(&writers_left, 2);
    pthread_t w[2], rd[2];
    for (int i = 0; i < 2; i++) pthread_create(&rd[i], NULL, crosscheck, NULL);
    for (int i = 0; i < 2; i++) pthread_create(&w[i], NULL, churner, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < 2; i++) pthread_join(w[i], NULL);
    for (int i = 0; i < 2; i++) pthread_join(rd[i], NULL);
    uint64_t entries, bits;
    irx_map_census(&churn_map, &entries, &bits);
    assert_int_equal(entries, 1); /* C alone */
    assert_int_equal(bits, 1);
    irx_map_destroy(&churn_map);
}

/* An engine that stores and never removes (buggy or hostile) cannot make the index
 * grow without bound: past 16 times the replica's capacity (at least 4,096 blocks),
 * new blocks are refused and counted; a larger capacity lets more in. */
static void blocks_held_are_bounded_by_capacity(void **state) {
    (void)state;
    irx_index *ix = irx_new(8);
    assert_int_equal(irx_set_capacity(ix, 1, 16), 0);
    assert_int_equal(irx_ev_track(ix, 1, "m", BS), 0);
    uint64_t refused = 0;
    for (uint32_t p = 0; p < 100; p++) {
        ir_hash128 keys[50];
        uint32_t t[50 * BS];
        for (uint32_t i = 0; i < 50; i++) keys[i] = ekey(p * 1000 + i);
        toks(t, p, 0, 50);
        irx_ev ev = {.type = IRX_EV_STORED,
                     .nblocks = 50,
                     .blocks = keys,
                     .ntokens = 50 * BS,
                     .block_size = BS,
                     .tokens = t};
        irx_ev_counts c = {0};
        irx_ev_apply(ix, 1, &ev, &c);
        refused += c.refused;
    }
    irx_ev_view v;
    irx_ev_view_get(ix, 1, &v);
    assert_int_equal(v.nodes, IRX_EV_LIMIT_MIN);
    assert_true(refused > 0);
    check(ix);
    assert_int_equal(irx_set_capacity(ix, 1, 1024), 0); /* now 16,384 */
    store(ix, 1, 500, 0, 10, 500000, IRX_MEDIUM_GPU, NULL);
    irx_ev_view_get(ix, 1, &v);
    assert_int_equal(v.nodes, IRX_EV_LIMIT_MIN + 10);
    check(ix);
    irx_free(ix);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chain_remove_reattach),
        cmocka_unit_test(tiers_orphans_clear),
        cmocka_unit_test(unseen_blocks_keep_the_view_partial),
        cmocka_unit_test(salts_duplicates_and_fallback),
        cmocka_unit_test(cpu_tier),
        cmocka_unit_test(cpu_copy_without_tokens),
        cmocka_unit_test(randomized_against_naive),
        cmocka_unit_test(readers_race_a_writer),
        cmocka_unit_test(batches_match_one_by_one),
        cmocka_unit_test(takeover_never_shows_another_replicas_bit),
        cmocka_unit_test(blocks_held_are_bounded_by_capacity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
