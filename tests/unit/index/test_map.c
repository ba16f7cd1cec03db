/* The shared map's lock-free reader against writers that run between its steps
 * (irx_map_read_begin, _bits, _end), in one thread, so that each interleaving is
 * exact: a slot that changes hands and comes back to the reader's key, a whole lap of
 * the slot's generations, a tombstone revived by its own key, and keys whose bits
 * above the shard bits are 0. The threaded churn of one slot is in test_ev_index.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <string.h>

#include "index/index_internal.h"
#include "index/ir_index.h"

/* A and B share a shard (1) and a home slot; C has the same home too, so it sits right
 * after the first of them. */
#define KEY_A 0x1000000000000001ull
static const ir_hash128 A = {KEY_A, 0}, B = {KEY_A + 64, 0}, C = {KEY_A + 128, 0};

static void add(irx_map *m, ir_hash128 h, uint32_t r) {
    bool was;
    assert_int_equal(irx_map_add_bit(m, h, r, &was), 0);
    assert_false(was);
}

/* A (replica 1) leaves its slot, B (replica 2) takes it, B leaves, A comes back. */
static void hand_over_and_back(irx_map *m) {
    irx_map_remove(m, A, 1);
    add(m, B, 2);
    irx_map_remove(m, B, 2);
    add(m, A, 1);
}

static uint64_t word_now(const irx_map_read *rd) {
    return atomic_load((_Atomic uint64_t *)rd->slot);
}

/* The interleaving ADR 0014 left open: the reader finds A's slot, then the slot goes
 * to B, the reader loads B's bits, then the slot comes back to A before the reader's
 * check. The check must fail (the bits are B's). with_c: the slot is a tombstone taken
 * over (C after it), else it is emptied and claimed again. */
static void changed_hands_and_back(bool with_c) {
    irx_map m;
    irx_map_init(&m, 1);
    add(&m, A, 1);
    if (with_c) add(&m, C, 3);
    irx_read_lock();
    irx_map_read rd;
    uint64_t w[1];
    assert_true(irx_map_read_begin(&m, A, &rd));
    irx_map_remove(&m, A, 1);
    add(&m, B, 2);
    irx_map_read_bits(&m, &rd, w);
    assert_int_equal(w[0], 4); /* B's bit, loaded from what was A's slot */
    irx_map_remove(&m, B, 2);
    add(&m, A, 1);
    assert_true((word_now(&rd) & ~(uint64_t)(IRX_SHARDS - 1)) ==
                (rd.word & ~(uint64_t)(IRX_SHARDS - 1))); /* A's again, same slot */
    assert_false(irx_map_read_end(&m, A, &rd));
    irx_map_bits(&m, A, w); /* a whole read now: A's own bit */
    assert_int_equal(w[0], 2);
    irx_read_unlock();
    irx_map_destroy(&m);
}

static void taken_over_and_back(void **state) {
    (void)state;
    changed_hands_and_back(true);
}

static void emptied_and_back(void **state) {
    (void)state;
    changed_hands_and_back(false);
}

/* The slot changes hands IRX_SHARDS times, the generation bits' whole lap, and is A's
 * again with the very word the reader noted: the shard's lap count must catch it. */
static void a_whole_lap(void **state) {
    (void)state;
    irx_map m;
    irx_map_init(&m, 1);
    add(&m, A, 1);
    add(&m, C, 3);
    irx_read_lock();
    irx_map_read rd;
    uint64_t w[1];
    assert_true(irx_map_read_begin(&m, A, &rd));
    irx_map_remove(&m, A, 1);
    add(&m, B, 2);
    irx_map_read_bits(&m, &rd, w);
    assert_int_equal(w[0], 4);
    irx_map_remove(&m, B, 2);
    add(&m, A, 1);
    for (uint32_t n = 2; n < IRX_SHARDS; n += 2) hand_over_and_back(&m);
    assert_true(word_now(&rd) == rd.word); /* the word alone cannot tell */
    assert_false(irx_map_read_end(&m, A, &rd));
    irx_read_unlock();
    irx_map_destroy(&m);
}

/* A's own tombstone revived by A is no change of hands: the read stays valid, and so
 * does a read across bits that only change. */
static void revived_by_its_key(void **state) {
    (void)state;
    irx_map m;
    irx_map_init(&m, 1);
    add(&m, A, 1);
    add(&m, C, 3);
    irx_read_lock();
    irx_map_read rd;
    uint64_t w[1];
    assert_true(irx_map_read_begin(&m, A, &rd));
    irx_map_remove(&m, A, 1); /* a tombstone: C is after it */
    add(&m, A, 2);
    irx_map_read_bits(&m, &rd, w);
    assert_int_equal(w[0], 4);
    add(&m, A, 1);
    assert_true(irx_map_read_end(&m, A, &rd));
    irx_read_unlock();
    irx_map_destroy(&m);
}

/* Keys whose bits above the shard bits are 0 (the word's key part would be empty). */
static void keys_with_nothing_above_the_shard(void **state) {
    (void)state;
    irx_map m;
    irx_map_init(&m, 1);
    ir_hash128 z = {0, 0}, five = {5, 7};
    uint64_t w[1];
    add(&m, z, 0);
    add(&m, five, 1);
    irx_read_lock();
    irx_map_bits(&m, z, w);
    assert_int_equal(w[0], 1);
    irx_map_bits(&m, five, w);
    assert_int_equal(w[0], 2);
    irx_read_unlock();
    irx_map_remove(&m, z, 0);
    irx_map_remove(&m, five, 1);
    assert_int_equal(irx_map_entries(&m), 0);
    irx_map_destroy(&m);
}

/* A key alone in its shard sits at the start or the middle of a cache line: probes start
 * at the first slot of a group of two 16-byte slots, so that the line the apply prefetches
 * holds the probe (map.c: GROUP). One key in each shard, the bits above the shard's
 * spread out. */
static void probes_start_at_a_half_line(void **state) {
    (void)state;
    irx_map m;
    irx_map_init(&m, 1);
    irx_read_lock();
    for (uint64_t i = 0; i < IRX_SHARDS; i++) {
        ir_hash128 h = {((i * 0x9e3779b97f4a7c15ull) & ~(uint64_t)(IRX_SHARDS - 1)) | i, i};
        add(&m, h, 0);
        irx_map_read rd;
        assert_true(irx_map_read_begin(&m, h, &rd));
        assert_int_equal((uintptr_t)rd.slot % 32, 0);
    }
    irx_read_unlock();
    irx_map_destroy(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(taken_over_and_back),
        cmocka_unit_test(emptied_and_back),
        cmocka_unit_test(a_whole_lap),
        cmocka_unit_test(revived_by_its_key),
        cmocka_unit_test(keys_with_nothing_above_the_shard),
        cmocka_unit_test(probes_start_at_a_half_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
