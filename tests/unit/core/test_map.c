/* The core hash map: against a reference model, deletes in long probe runs,
 * long keys and pool compaction, the cap, iteration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ir_core.h"

/* Key k as bytes: short keys for small k, long ones (pooled) for others. */
static size_t key_of(unsigned k, char *out) {
    if (k % 3 == 0) return (size_t)snprintf(out, 64, "k%u", k);
    return (size_t)snprintf(out, 64, "a-key-longer-than-sixteen-bytes-%u", k);
}

/* Random puts, overwrites and deletes, checked after each step against an array. */
static void matches_a_reference_model(void **state) {
    enum { KEYS = 700 };
    static uint64_t ref[KEYS];
    static bool present[KEYS];
    ir_map m;
    assert_int_equal(ir_map_init(&m, 0, 100000), 0);
    ir_rng r;
    ir_rng_seed(&r, 7);
    size_t n = 0;
    for (int step = 0; step < 60000; step++) {
        unsigned k = (unsigned)ir_rng_below(&r, KEYS);
        char key[64];
        size_t len = key_of(k, key);
        if (ir_rng_below(&r, 3) == 0) {
            assert_int_equal(ir_map_del(&m, key, len), present[k]);
            n -= present[k];
            present[k] = false;
        } else {
            uint64_t v = ir_rng_next(&r);
            assert_int_equal(ir_map_put(&m, key, len, v), 0);
            n += !present[k];
            present[k] = true;
            ref[k] = v;
        }
        assert_int_equal(ir_map_count(&m), n);
        unsigned probe = (unsigned)ir_rng_below(&r, KEYS);
        len = key_of(probe, key);
        uint64_t got = 0;
        assert_int_equal(ir_map_get(&m, key, len, &got), present[probe]);
        if (present[probe]) assert_true(got == ref[probe]);
    }
    /* Every key, at the end, and the pool holds no more than twice the live keys. */
    size_t live_long = 0;
    for (unsigned k = 0; k < KEYS; k++) {
        char key[64];
        size_t len = key_of(k, key);
        uint64_t got;
        assert_int_equal(ir_map_get(&m, key, len, &got), present[k]);
        if (present[k]) assert_true(got == ref[k]);
        if (present[k] && len > IR_MAP_INLINE_KEY) live_long += len;
    }
    assert_true(m.plen <= 2 * live_long + 64 * 2);
    ir_map_free(&m);
}

/* Keys that all hash home to a few slots (a tiny table, many keys) form long
 * runs that wrap around the end; deleting from their middle must keep every
 * other key reachable. */
static void deletes_inside_wrapped_runs(void **state) {
    ir_map m;
    assert_int_equal(ir_map_init(&m, 0, 12), 0); /* 16 slots, at most 12 entries */
    uint64_t keys[12];
    for (uint64_t i = 0; i < 12; i++) {
        keys[i] = i * 0x9E3779B97F4A7C15ull;
        assert_int_equal(ir_map_put(&m, &keys[i], sizeof keys[i], i), 0);
    }
    assert_int_equal(m.mask, 15);
    uint64_t extra = 99;
    assert_int_equal(ir_map_put(&m, &extra, sizeof extra, 1), -1); /* the cap */
    assert_false(ir_map_get(&m, &extra, sizeof extra, NULL));
    for (size_t d = 0; d < 12; d++) {
        assert_true(ir_map_del(&m, &keys[d], sizeof keys[d]));
        assert_false(ir_map_del(&m, &keys[d], sizeof keys[d]));
        for (size_t i = d + 1; i < 12; i++) {
            uint64_t v;
            assert_true(ir_map_get(&m, &keys[i], sizeof keys[i], &v));
            assert_int_equal(v, i);
        }
    }
    assert_int_equal(ir_map_count(&m), 0);
    /* Room again under the cap. */
    assert_int_equal(ir_map_put(&m, &extra, sizeof extra, 5), 0);
    ir_map_free(&m);
}

static void edge_keys_and_iteration(void **state) {
    ir_map m;
    assert_int_equal(ir_map_init(&m, 1000, 1000), 0);
    assert_int_equal(ir_map_put(&m, "", 0, 1), 0); /* the empty key is a key */
    assert_int_equal(ir_map_put(&m, "a\0b", 3, 2), 0);
    assert_int_equal(ir_map_put(&m, "a", 1, 3), 0);
    static char big[IR_MAP_MAX_KEY + 1];
    memset(big, 'x', sizeof big);
    assert_int_equal(ir_map_put(&m, big, IR_MAP_MAX_KEY, 4), 0);
    assert_int_equal(ir_map_put(&m, big, IR_MAP_MAX_KEY + 1, 5), -1);
    assert_int_equal(ir_map_put(&m, "a", 1, 30), 0); /* overwrite */
    assert_int_equal(ir_map_add(&m, "a", 1, 31), 1); /* present: left alone */
    assert_int_equal(ir_map_add(&m, "b", 1, 32), 0); /* absent: added */
    assert_true(ir_map_del(&m, "b", 1));
    assert_int_equal(ir_map_count(&m), 4);
    uint64_t sum = 0, v;
    size_t seen = 0, len;
    const void *k;
    for (size_t it = 0; ir_map_next(&m, &it, &k, &len, &v);) {
        uint64_t again;
        assert_true(ir_map_get(&m, k, len, &again));
        assert_int_equal(again, v);
        sum += v;
        seen++;
    }
    assert_int_equal(seen, 4);
    assert_int_equal(sum, 1 + 2 + 30 + 4);
    assert_true(ir_map_bytes(&m) >= IR_MAP_MAX_KEY);
    ir_map_clear(&m);
    assert_int_equal(ir_map_count(&m), 0);
    assert_false(ir_map_get(&m, "a", 1, NULL));
    ir_map_free(&m);
    assert_int_equal(ir_map_init(&m, 0, 0), -1); /* a cap is required */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_a_reference_model),
        cmocka_unit_test(deletes_inside_wrapped_runs),
        cmocka_unit_test(edge_keys_and_iteration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
