/* kv_aware: the predicted hit fraction against normalised load. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "policy/ir_policy.h"
#include "policy_fixture.h"

static size_t pick(irp_policy *p, ir_rng *r, uint64_t prompt, irp_candidate *c, size_t n) {
    irp_request q = {.prompt_tokens = prompt, .rng = r, .predicted = true};
    return irp_choose(p, &q, c, n);
}

/* Equal loads: the replica holding most of the prompt wins. */
static void prefers_the_cached_replica(void **state) {
    irp_policy *p = irp_policy_new("kv_aware", NULL);
    ir_rng r;
    ir_rng_seed(&r, 1);
    irp_candidate c[4];
    fx_fleet(c, 4);
    for (size_t i = 0; i < 4; i++) c[i].in_flight = 2;
    c[2].predicted_cached_tokens = 900;
    c[1].predicted_cached_tokens = 300;
    for (int i = 0; i < 100; i++) assert_int_equal(pick(p, &r, 1000, c, 4), 2);
    /* busier, but not by much: still the cached one (0.9 - 10/10 > 0 - 2/10) */
    c[2].in_flight = 10;
    c[1].predicted_cached_tokens = 0;
    assert_int_equal(pick(p, &r, 1000, c, 4), 2);
    irp_policy_free(p);
}

/* An overloaded cached replica loses to an idle one; a light one does not. */
static void unless_it_is_overloaded(void **state) {
    irp_policy *p = irp_policy_new("kv_aware", NULL);
    ir_rng r;
    ir_rng_seed(&r, 2);
    irp_candidate c[3];
    fx_fleet(c, 3);
    c[0].predicted_cached_tokens = 900;
    c[0].in_flight = 30;
    c[1].in_flight = 1;
    c[2].in_flight = 0;
    for (int i = 0; i < 100; i++) assert_int_equal(pick(p, &r, 1000, c, 3), 2);
    /* below the floor (4 in flight) a cached replica keeps its prompts */
    c[0].in_flight = 3;
    for (int i = 0; i < 100; i++) assert_int_equal(pick(p, &r, 1000, c, 3), 0);
    /* heavier load weight: the same replica now loses */
    irp_config cfg;
    irp_config_defaults(&cfg);
    cfg.load_weight = 4.0;
    irp_policy *heavy = irp_policy_new("kv_aware", &cfg);
    assert_int_equal(pick(heavy, &r, 1000, c, 3), 2);
    irp_policy_free(heavy);
    irp_policy_free(p);
}

/* Equal scores are broken at random, evenly; no prompt tokens means no hit. */
static void ties_at_random(void **state) {
    irp_policy *p = irp_policy_new("kv_aware", NULL);
    ir_rng r;
    ir_rng_seed(&r, 3);
    irp_candidate c[4];
    fx_fleet(c, 4);
    c[3].in_flight = 1;
    c[3].predicted_cached_tokens = 50; /* ignored: prompt_tokens 0 */
    int per[4] = {0};
    for (int i = 0; i < 30000; i++) per[pick(p, &r, 0, c, 4)]++;
    assert_int_equal(per[3], 0);
    for (int i = 0; i < 3; i++) assert_in_range(per[i], 9300, 10700);
    irp_policy_free(p);
}

/* hit_tolerance: a hit below 5% of the prompt does not decide (a short system prompt
 * that every request shares), so equal loads share the misses; fewer in flight wins
 * among near-equal scores; a real hit still wins. With the tolerance at 0 the
 * replicas holding the short prefix take every miss. */
static void small_differences_tie(void **state) {
    ir_rng r;
    ir_rng_seed(&r, 4);
    irp_candidate c[3];
    for (int t = 0; t < 2; t++) {
        irp_config cfg;
        irp_config_defaults(&cfg);
        cfg.hit_tolerance = t ? 0.05 : 0.0;
        irp_policy *p = irp_policy_new("kv_aware", &cfg);
        fx_fleet(c, 3);
        c[0].predicted_cached_tokens = c[1].predicted_cached_tokens = 96;
        int per[3] = {0};
        for (int i = 0; i < 3000; i++) per[pick(p, &r, 4000, c, 3)]++;
        if (t)
            for (int i = 0; i < 3; i++) assert_in_range(per[i], 850, 1150);
        else
            assert_int_equal(per[2], 0);
        irp_policy_free(p);
    }
    irp_policy *p = irp_policy_new("kv_aware", NULL);
    fx_fleet(c, 3);
    c[0].in_flight = c[1].in_flight = c[2].in_flight = 1;
    c[0].predicted_cached_tokens = 96;
    c[1].predicted_cached_tokens = 2000; /* a real hit still wins */
    for (int i = 0; i < 100; i++) assert_int_equal(pick(p, &r, 4000, c, 3), 1);
    /* near-equal scores go to the fewest in flight, past a slightly higher score:
     * 160/4000 cached with 100 in flight (0.04 - 1.00) against nothing cached with
     * 99 (0 - 0.99) */
    fx_fleet(c, 2);
    c[0].predicted_cached_tokens = 160;
    c[0].in_flight = 100;
    c[1].in_flight = 99;
    for (int i = 0; i < 100; i++) assert_int_equal(pick(p, &r, 4000, c, 2), 1);
    irp_policy_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prefers_the_cached_replica),
        cmocka_unit_test(unless_it_is_overloaded),
        cmocka_unit_test(ties_at_random),
        cmocka_unit_test(small_differences_tie),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
