/* The eviction lookahead of event-fed replicas (src/index/doom.c and its use in
 * index.c): a record that needs room dooms the mirror's oldest free blocks, and
 * lookups stop a prefix before them until the events say they are gone or the
 * doom expires; an eviction the events report drops the mirror's older blocks;
 * off, nothing changes; readers race a writer (run under TSan by make test-tsan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "index/index_internal.h"
#include "index/ir_index.h"

#define BS  4
#define REP 1

static void check(irx_index *ix) {
    char err[200];
    if (irx_check(ix, err, sizeof err)) fail_msg("%s", err);
}

static ir_hash128 ekey(uint64_t n) { /* an engine's opaque hash */
    return (ir_hash128){n * 0x9e3779b97f4a7c15ull + 1, ~n};
}

/* Block i of prompt p has tokens p*1000 + i*BS + j; its engine key is p*100 + i. */
static void store(irx_index *ix, uint32_t p, uint32_t n) {
    ir_hash128 keys[64];
    uint32_t t[64 * BS];
    for (uint32_t i = 0; i < n; i++) keys[i] = ekey(p * 100 + i);
    for (uint32_t i = 0; i < n * BS; i++) t[i] = p * 1000 + i;
    irx_ev ev = {.type = IRX_EV_STORED,
                 .nblocks = n,
                 .blocks = keys,
                 .ntokens = n * BS,
                 .block_size = BS,
                 .tokens = t};
    irx_ev_counts c = {0};
    irx_ev_apply(ix, REP, &ev, &c);
}

static void removes(irx_index *ix, uint32_t p, uint32_t i) {
    ir_hash128 k = ekey(p * 100 + i);
    irx_ev ev = {.type = IRX_EV_REMOVED, .nblocks = 1, .blocks = &k};
    irx_ev_counts c = {0};
    irx_ev_apply(ix, REP, &ev, &c);
}

static void prompt(ir_hash128 *h, uint32_t p, uint32_t n) {
    uint32_t t[64 * BS];
    for (uint32_t i = 0; i < n * BS; i++) t[i] = p * 1000 + i;
    ir_block_hash_chain(ir_block_hash_root("m", NULL, NULL), t, n * BS, BS, h, n);
}

static uint32_t depth(irx_index *ix, uint32_t p, uint32_t n) {
    ir_hash128 h[64];
    uint32_t out[8];
    prompt(h, p, n);
    irx_lookup(ix, h, n, out);
    return out[REP];
}

/* What the gateway does around one request to REP whose engine stores all its
 * blocks: record (the mirror), the engine's events, the release. */
static void serve(irx_index *ix, uint32_t p, uint32_t n) {
    ir_hash128 h[64];
    prompt(h, p, n);
    irx_rec rec = irx_record_reserve(ix, REP, h, n, 0);
    store(ix, p, n);
    irx_release(ix, rec, h, n, 0);
}

static irx_index *fleet(bool lookahead, uint32_t cap) {
    irx_index *ix = irx_new(8);
    irx_ev_set_lookahead(ix, lookahead);
    assert_int_equal(irx_set_capacity(ix, REP, cap), 0);
    assert_int_equal(irx_ev_track(ix, REP, "m", BS), 0);
    return ix;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A doom lasts three of the replica's publication intervals, measured between the
 * batches applied while its mirror holds blocks (1 to 250 ms). Batches applied back to
 * back would make it 1 ms, which a slow run (ASan, a busy machine) can outlast between
 * a record and the next line: the tests' engine publishes a step (200 ms) apart. */
static void step(void) {
    sleep_ms(200);
}

/* The engine reports an eviction (of a block of prompt 99), a step after its last
 * batch: its never used blocks are spent, and from now on each block it allocates takes
 * its free queue's head. */
static void wrap(irx_index *ix) {
    store(ix, 99, 1);
    step();
    removes(ix, 99, 0);
}

/* The scene most tests start from, on a replica of 8 blocks: prompt 7 served and freed
 * (the mirror lists its blocks, block 3 the oldest), the engine wrapped, then a record
 * of prompt 8's 2 new blocks (h, *rec) dooms 7's blocks 3 and 2, before any event. */
static irx_index *doomed_scene(ir_hash128 *h, irx_rec *rec) {
    irx_index *ix = fleet(true, 8);
    serve(ix, 7, 4);
    assert_int_equal(depth(ix, 7, 4), 4);
    wrap(ix);
    prompt(h, 8, 2);
    *rec = irx_record_reserve(ix, REP, h, 2, 0);
    assert_int_equal(rec->n, 2);
    assert_int_equal(depth(ix, 7, 4), 2);
    return ix;
}

static void record_dooms_the_oldest_tail(void **state) {
    (void)state;
    ir_hash128 h[8];
    irx_rec rec;
    irx_index *ix = doomed_scene(h, &rec);
    assert_int_equal(depth(ix, 7, 1), 1); /* a shorter prompt is untouched */
    check(ix);
    /* The events confirm it: the same answer, now from the map. */
    removes(ix, 7, 3);
    removes(ix, 7, 2);
    store(ix, 8, 2);
    assert_int_equal(depth(ix, 7, 4), 2);
    assert_int_equal(depth(ix, 8, 2), 2);
    irx_release(ix, rec, h, 2, 0);
    check(ix);
    /* A prefix the engine stores again is whole again. */
    store(ix, 7, 4);
    assert_int_equal(depth(ix, 7, 4), 4);
    irx_free(ix);
}

static void doom_expires_when_no_event_comes(void **state) {
    (void)state;
    ir_hash128 h[8];
    irx_rec rec;
    irx_index *ix = doomed_scene(h, &rec);
    sleep_ms(300); /* past the longest window (250 ms): the engine did not evict them */
    assert_int_equal(depth(ix, 7, 4), 4);
    irx_undo(ix, rec, h, 2);
    check(ix);
    irx_free(ix);
}

/* A record that ends (the engine answered, or refused it) has long been admitted, and
 * what its admission evicted has been reported: its dooms still standing were wrong. */
static void an_ended_record_takes_its_dooms(void **state) {
    (void)state;
    ir_hash128 h[8];
    irx_rec rec;
    irx_index *ix = doomed_scene(h, &rec);
    store(ix, 8, 2);
    irx_release(ix, rec, h, 2, 0); /* no removal was reported for it */
    assert_int_equal(depth(ix, 7, 4), 4);
    /* The same for a record the engine refused. */
    rec = irx_record_reserve(ix, REP, h, 2, 0);
    /* Its one reserved block takes the mirror's oldest: 7's block 1 (3 and 2 left it). */
    irx_rec rec2 = irx_record_hit(ix, REP, h, 2, 1, 2);
    assert_int_equal(depth(ix, 7, 2), 1);
    irx_undo(ix, rec2, h, 2);
    assert_int_equal(depth(ix, 7, 2), 2);
    irx_undo(ix, rec, h, 2);
    check(ix);
    irx_free(ix);
}

static void off_changes_nothing(void **state) {
    (void)state;
    irx_index *ix = fleet(false, 8);
    serve(ix, 7, 4);
    wrap(ix);
    ir_hash128 h[8];
    prompt(h, 8, 6);
    irx_rec rec = irx_record_reserve(ix, REP, h, 6, 0);
    assert_int_equal(rec.n, 0); /* an event-fed replica is not guessed at */
    assert_int_equal(depth(ix, 7, 4), 4);
    assert_int_equal(irx_replica_blocks(ix, REP), 0);
    check(ix);
    irx_free(ix);
}

static void reported_eviction_drops_older_mirror_blocks(void **state) {
    (void)state;
    irx_index *ix = fleet(true, 16);
    serve(ix, 5, 4); /* oldest */
    serve(ix, 6, 4);
    /* The mirror has room and the engine has reported no eviction yet: its never used
     * blocks serve a new request, and nothing is doomed. */
    ir_hash128 h[8];
    prompt(h, 9, 2);
    irx_rec rec = irx_record_reserve(ix, REP, h, 2, 0);
    assert_int_equal(depth(ix, 5, 4), 4);
    assert_int_equal(depth(ix, 6, 4), 4);
    irx_undo(ix, rec, h, 2);
    /* The engine evicts 6's tail first (the mirror had 5 older): its queue was not the
     * mirror's, and the mirror drops 5's blocks too, without dooming them. */
    step();
    removes(ix, 6, 3);
    assert_int_equal(depth(ix, 5, 4), 4);
    assert_int_equal(depth(ix, 6, 4), 3);
    /* From now on each block the engine allocates evicts its queue's head, room or
     * not: a record of 2 new blocks dooms 6's last two, deepest first. */
    rec = irx_record_reserve(ix, REP, h, 2, 0);
    assert_int_equal(rec.n, 2);
    assert_int_equal(depth(ix, 6, 4), 1);
    assert_int_equal(depth(ix, 5, 4), 4); /* dropped from the mirror, never doomed */
    irx_undo(ix, rec, h, 2);
    check(ix);
    irx_free(ix);
}

/* The mirror can lose blocks the engine still holds (a reported eviction drops what
 * the mirror listed before it): the prediction the route was chosen on says they are
 * hits, so recording them takes nothing from the engine's queue. */
static void record_hit_spares_what_the_events_hold(void **state) {
    (void)state;
    irx_index *ix = fleet(true, 16);
    serve(ix, 7, 4);
    serve(ix, 5, 4); /* newer than 7 */
    step();
    removes(ix, 5, 3); /* the mirror drops 7's blocks with 5's tail; the events keep 7 */
    assert_int_equal(depth(ix, 7, 4), 4);
    assert_int_equal(depth(ix, 5, 4), 3);
    ir_hash128 h[4];
    prompt(h, 7, 4);
    irx_rec rec = irx_record_hit(ix, REP, h, 4, 0, 4);
    assert_int_equal(rec.n, 4);
    assert_int_equal(depth(ix, 5, 4), 3); /* nothing allocated, nothing doomed */
    irx_undo(ix, rec, h, 4);
    /* Without the prediction the mirror takes its own word: four allocations, which
     * doom the three blocks it still lists. */
    rec = irx_record_reserve(ix, REP, h, 4, 0);
    assert_int_equal(depth(ix, 5, 4), 0);
    irx_undo(ix, rec, h, 4);
    check(ix);
    irx_free(ix);
}

static void clear_drops_mirror_and_dooms(void **state) {
    (void)state;
    ir_hash128 h[8];
    irx_rec rec;
    irx_index *ix = doomed_scene(h, &rec);
    irx_ev cl = {.type = IRX_EV_CLEARED};
    irx_ev_counts c = {0};
    irx_ev_apply(ix, REP, &cl, &c);
    store(ix, 7, 4);                      /* recomputed after the clear */
    assert_int_equal(depth(ix, 7, 4), 4); /* the doom went with the clear */
    irx_release(ix, rec, h, 2, 0);        /* voided by the clear: releases nothing */
    check(ix);
    /* Back to approximate tracking: the mirror is gone, the shadow starts empty. */
    irx_ev_untrack(ix, REP);
    assert_int_equal(irx_replica_blocks(ix, REP), 0);
    check(ix);
    irx_free(ix);
}

static atomic_bool stop;
static atomic_int bad;

static void *looker(void *arg) {
    irx_index *ix = arg;
    ir_hash128 h[4];
    prompt(h, 7, 4);
    uint32_t out[8];
    while (!atomic_load(&stop)) {
        irx_lookup(ix, h, 4, out);
        if (out[REP] > 4) atomic_fetch_add(&bad, 1);
    }
    return NULL;
}

static void readers_race_the_lookahead(void **state) {
    (void)state;
    irx_index *ix = fleet(true, 8);
    wrap(ix);
    atomic_store(&stop, false);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, looker, ix);
    ir_hash128 h[8];
    prompt(h, 8, 6);
    for (int round = 0; round < 2000; round++) {
        serve(ix, 7, 4);
        irx_rec rec = irx_record_reserve(ix, REP, h, 6, 0);
        removes(ix, 7, 3);
        removes(ix, 7, 2);
        store(ix, 8, 6);
        irx_release(ix, rec, h, 6, 0);
        for (uint32_t i = 0; i < 6; i++) removes(ix, 8, 5 - i);
        for (uint32_t i = 0; i < 2; i++) removes(ix, 7, 1 - i);
    }
    atomic_store(&stop, true);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&bad), 0);
    check(ix);
    irx_free(ix);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(record_dooms_the_oldest_tail),
        cmocka_unit_test(doom_expires_when_no_event_comes),
        cmocka_unit_test(an_ended_record_takes_its_dooms),
        cmocka_unit_test(off_changes_nothing),
        cmocka_unit_test(reported_eviction_drops_older_mirror_blocks),
        cmocka_unit_test(record_hit_spares_what_the_events_hold),
        cmocka_unit_test(clear_drops_mirror_and_dooms),
        cmocka_unit_test(readers_race_the_lookahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
