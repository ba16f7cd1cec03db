/* Consistent hashing with bounded loads: the load bound holds, a hot key spills
 * to its next replica, and membership changes move few keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "index/ir_index.h"

static void bound_holds_and_hot_key_spills(void **state) {
    uint64_t ids[5] = {11, 22, 33, 44, 55};
    uint32_t loads[5] = {0};
    /* One hot key, 200 requests that never finish: the load stays within c of the mean. */
    for (int k = 0; k < 200; k++) {
        size_t i = irx_bounded_hash_pick(0xfeedULL, ids, loads, 5, 1.25);
        assert_true(i < 5);
        uint32_t total = 0;
        for (int j = 0; j < 5; j++) total += loads[j];
        assert_true((double)loads[i] + 1 <= ceil(1.25 * (total + 1) / 5.0));
        loads[i]++;
    }
    /* Nobody above c times the mean (40), and the key's own replica filled up to it. */
    uint32_t zero[5] = {0};
    size_t first = irx_bounded_hash_pick(0xfeedULL, ids, zero, 5, 1.25);
    for (int j = 0; j < 5; j++) assert_true(loads[j] <= 50);
    assert_int_equal(loads[first], 50);
    /* Unloaded, the same key always goes to the same replica. */
    for (int k = 0; k < 10; k++)
        assert_int_equal(irx_bounded_hash_pick(0xfeedULL, ids, zero, 5, 1.25), first);
    /* Its preferred replica full, it goes elsewhere, and back when it drains. */
    uint32_t busy[5] = {0};
    busy[first] = 10;
    assert_int_not_equal(irx_bounded_hash_pick(0xfeedULL, ids, busy, 5, 1.25), first);
    assert_int_equal(irx_bounded_hash_pick(12345, ids, zero, 0, 1.25), SIZE_MAX);
    assert_true(irx_bounded_hash_pick(12345, ids, zero, 1, 0.5) == 0);
}

static void membership_changes_move_few_keys(void **state) {
    uint64_t ids[9];
    uint32_t zero[9] = {0};
    for (int i = 0; i < 9; i++) ids[i] = 1000 + (uint64_t)i * 7;
    int moved = 0, spread[9] = {0};
    for (uint64_t key = 1; key <= 9000; key++) {
        uint64_t k = key * 0x9e3779b97f4a7c15ULL;
        size_t a = irx_bounded_hash_pick(k, ids, zero, 8, 1.25); /* 8 replicas */
        size_t b = irx_bounded_hash_pick(k, ids, zero, 9, 1.25); /* a ninth joins */
        spread[b]++;
        if (b != a) {
            moved++;
            assert_int_equal(b, 8); /* a key only ever moves to the newcomer */
        }
    }
    assert_true(moved > 700 && moved < 1300); /* about 1/9 of 9,000 */
    for (int i = 0; i < 9; i++) assert_true(spread[i] > 700 && spread[i] < 1300);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bound_holds_and_hot_key_spills),
        cmocka_unit_test(membership_changes_move_few_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
