/* prefix_hash: consistent hashing on the first blocks, with bounded loads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "policy/ir_policy.h"
#include "policy_fixture.h"

/* The same prefix always lands on the same replica while loads are even, and
 * prompts that share their first prefix_blocks blocks share a replica
 * whatever follows; many prefixes spread over the fleet. */
static void same_prefix_same_replica(void **state) {
    irp_policy *p = irp_policy_new("prefix_hash", NULL);
    ir_rng r;
    ir_rng_seed(&r, 1);
    irp_candidate c[8];
    fx_fleet(c, 8);
    int per[8] = {0};
    for (uint64_t pre = 1; pre <= 800; pre++) {
        ir_hash128 a[12], b[12], d[2];
        fx_blocks(a, 12, pre, 4, 1000 + pre);
        fx_blocks(b, 12, pre, 4, 5000 + pre); /* same first 4 blocks, other tail */
        fx_blocks(d, 2, pre, 2, 0);           /* shorter than prefix_blocks: block 1 names it */
        irp_request qa = fx_request(&r, a, 12), qb = fx_request(&r, b, 12);
        irp_request qd = fx_request(&r, d, 2), qd2 = fx_request(&r, a, 2);
        size_t ka = irp_choose(p, &qa, c, 8);
        assert_int_equal(ka, irp_choose(p, &qb, c, 8));
        assert_int_equal(ka, irp_choose(p, &qa, c, 8));
        assert_int_equal(irp_choose(p, &qd, c, 8), irp_choose(p, &qd2, c, 8));
        per[ka]++;
    }
    /* 64 points per replica: every replica's share within 50%..150% of 1/8 */
    for (int i = 0; i < 8; i++) assert_in_range(per[i], 50, 150);
    irp_policy_free(p);
}

/* Consistency: taking a replica out of the candidates moves only the prefixes
 * that were on it. */
static void removal_moves_only_its_keys(void **state) {
    irp_policy *p = irp_policy_new("prefix_hash", NULL);
    ir_rng r;
    ir_rng_seed(&r, 2);
    irp_candidate c[6], d[5];
    fx_fleet(c, 6);
    for (size_t i = 0, j = 0; i < 6; i++)
        if (i != 3) d[j++] = c[i];
    int moved = 0, were_on_3 = 0;
    for (uint64_t pre = 1; pre <= 600; pre++) {
        ir_hash128 a[4];
        fx_blocks(a, 4, pre, 4, 0);
        irp_request q = fx_request(&r, a, 4);
        uint32_t before = c[irp_choose(p, &q, c, 6)].replica;
        uint32_t after = d[irp_choose(p, &q, d, 5)].replica;
        were_on_3 += before == 3;
        if (before != 3) moved += before != after;
    }
    assert_int_equal(moved, 0);
    assert_true(were_on_3 > 50);
    irp_policy_free(p);
}

/* A hot prefix under bounded loads: every assignment keeps the chosen
 * replica within ceil(c * mean), and the prefix spills to more replicas. */
static void hot_prefix_bounded(void **state) {
    irp_config cfg;
    irp_config_defaults(&cfg);
    irp_policy *p = irp_policy_new("prefix_hash", &cfg);
    ir_rng r;
    ir_rng_seed(&r, 3);
    irp_candidate c[8];
    fx_fleet(c, 8);
    ir_hash128 a[8];
    int used[8] = {0};
    for (int step = 0; step < 20000; step++) {
        uint64_t total = fx_total_in_flight(c, 8);
        if (total && ir_rng_below(&r, 100) < 45) { /* a random request finishes */
            uint64_t k = ir_rng_below(&r, total);
            for (size_t i = 0; i < 8; i++) {
                if (k < c[i].in_flight) {
                    c[i].in_flight--;
                    break;
                }
                k -= c[i].in_flight;
            }
            continue;
        }
        /* 90% of arrivals share one prefix, the rest are unique */
        uint64_t pre = ir_rng_below(&r, 10) ? 7 : 100 + (uint64_t)step;
        fx_blocks(a, 8, pre, 8, 0);
        irp_request q = fx_request(&r, a, 8);
        size_t k = irp_choose(p, &q, c, 8);
        c[k].in_flight++;
        used[k] += pre == 7;
        assert_true(fx_within_bound(c, 8, k, cfg.load_factor));
    }
    int spread = 0;
    for (int i = 0; i < 8; i++) spread += used[i] > 0;
    assert_true(spread >= 4);
    irp_policy_free(p);
}

/* Not tokenized: the text's first bytes name the prefix; with neither blocks
 * nor text, the least loaded candidate wins. */
static void without_blocks(void **state) {
    irp_policy *p = irp_policy_new("prefix_hash", NULL);
    ir_rng r;
    ir_rng_seed(&r, 4);
    irp_candidate c[5];
    fx_fleet(c, 5);
    char t1[600], t2[600];
    int per[5] = {0};
    for (int i = 0; i < 200; i++) {
        snprintf(t1, sizeof t1, "system prompt %d %0300d question one", i, 0);
        snprintf(t2, sizeof t2, "system prompt %d %0300d another question entirely", i, 0);
        irp_request q1 = {.prompt_tokens = 100, .rng = &r, .text = t1, .text_len = strlen(t1)};
        irp_request q2 = {.prompt_tokens = 100, .rng = &r, .text = t2, .text_len = strlen(t2)};
        size_t k = irp_choose(p, &q1, c, 5);
        assert_int_equal(k, irp_choose(p, &q2, c, 5)); /* first 256 bytes equal */
        per[k]++;
    }
    for (int i = 0; i < 5; i++) assert_true(per[i] > 10);
    c[0].in_flight = c[1].in_flight = c[3].in_flight = c[4].in_flight = 3;
    irp_request bare = {.prompt_tokens = 100, .rng = &r};
    for (int i = 0; i < 50; i++) assert_int_equal(irp_choose(p, &bare, c, 5), 2);
    irp_policy_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_prefix_same_replica),
        cmocka_unit_test(removal_moves_only_its_keys),
        cmocka_unit_test(hot_prefix_bounded),
        cmocka_unit_test(without_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
