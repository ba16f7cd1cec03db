/* Routing policies: spread, seeds, invariants. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "policy/ir_policy.h"

static void make(irp_candidate *c, size_t n, ir_rng *r) {
    for (size_t i = 0; i < n; i++) {
        c[i] = (irp_candidate){.replica = (uint32_t)(i * 3 + 1),
                               .in_flight = (uint32_t)ir_rng_below(r, 5),
                               .pending = (uint32_t)ir_rng_below(r, 3)};
    }
}

static void registry(void **state) {
    assert_non_null(irp_find("round_robin"));
    assert_non_null(irp_find("random"));
    assert_non_null(irp_find("least_request"));
    assert_non_null(irp_find("p2c"));
    assert_null(irp_find("cost_model"));
    assert_null(irp_policy_new("kv_aware"));
    size_t n = 0;
    for (const irp_vtable *const *v = irp_all(); *v; v++) {
        assert_non_null(strstr(irp_names(), (*v)->name));
        n++;
    }
    assert_int_equal(n, 4);
}

static void round_robin_rotates(void **state) {
    irp_policy *p = irp_policy_new("round_robin");
    irp_candidate c[3];
    ir_rng r;
    ir_rng_seed(&r, 1);
    make(c, 3, &r);
    irp_request q = {.rng = &r};
    int counts[3] = {0};
    size_t prev = irp_choose(p, &q, c, 3);
    for (int i = 0; i < 300; i++) {
        size_t k = irp_choose(p, &q, c, 3);
        assert_int_equal(k, (prev + 1) % 3);
        prev = k;
        counts[k]++;
    }
    assert_int_equal(counts[0], 100);
    assert_int_equal(counts[1], 100);
    irp_policy_free(p);
}

/* Uniform choices under a fixed seed, and the same seed replays the same choices. */
static void random_uniform_and_seeded(void **state) {
    irp_policy *p = irp_policy_new("random");
    irp_candidate c[4];
    ir_rng r, r2;
    ir_rng_seed(&r, 42);
    make(c, 4, &r);
    ir_rng_seed(&r, 42);
    ir_rng_seed(&r2, 42);
    irp_request q = {.rng = &r}, q2 = {.rng = &r2};
    int counts[4] = {0};
    for (int i = 0; i < 40000; i++) {
        size_t k = irp_choose(p, &q, c, 4);
        assert_int_equal(k, irp_choose(p, &q2, c, 4));
        counts[k]++;
    }
    for (int i = 0; i < 4; i++) assert_in_range(counts[i], 9500, 10500);
    irp_policy_free(p);
}

static void least_request_picks_a_minimum(void **state) {
    irp_policy *p = irp_policy_new("least_request");
    ir_rng r;
    ir_rng_seed(&r, 3);
    irp_request q = {.rng = &r};
    for (int iter = 0; iter < 5000; iter++) {
        irp_candidate c[8];
        size_t n = 1 + ir_rng_below(&r, 8);
        make(c, n, &r);
        size_t k = irp_choose(p, &q, c, n);
        for (size_t i = 0; i < n; i++) assert_true(c[k].in_flight <= c[i].in_flight);
    }
    /* ties are broken evenly */
    irp_candidate t[3] = {{.replica = 0, .in_flight = 1},
                          {.replica = 1, .in_flight = 1},
                          {.replica = 2, .in_flight = 5}};
    int counts[3] = {0};
    for (int i = 0; i < 30000; i++) counts[irp_choose(p, &q, t, 3)]++;
    assert_int_equal(counts[2], 0);
    assert_in_range(counts[0], 14000, 16000);
    irp_policy_free(p);
}

static void p2c_never_picks_a_unique_maximum(void **state) {
    irp_policy *p = irp_policy_new("p2c");
    ir_rng r;
    ir_rng_seed(&r, 9);
    irp_request q = {.rng = &r};
    for (int iter = 0; iter < 5000; iter++) {
        irp_candidate c[8];
        size_t n = 2 + ir_rng_below(&r, 7);
        make(c, n, &r);
        size_t k = irp_choose(p, &q, c, n);
        uint32_t mx = 0;
        int nmax = 0;
        for (size_t i = 0; i < n; i++) mx = c[i].in_flight > mx ? c[i].in_flight : mx;
        for (size_t i = 0; i < n; i++) nmax += c[i].in_flight == mx;
        if (nmax == 1) assert_true(c[k].in_flight < mx);
    }
    irp_policy_free(p);
}

/* Whatever a policy does, it returns one of the offered candidates. */
static void choices_stay_in_range(void **state) {
    ir_rng r;
    ir_rng_seed(&r, 11);
    irp_request q = {.rng = &r};
    for (const irp_vtable *const *v = irp_all(); *v; v++) {
        irp_policy *p = irp_policy_new((*v)->name);
        for (int iter = 0; iter < 2000; iter++) {
            irp_candidate c[16];
            size_t n = 1 + ir_rng_below(&r, 16);
            make(c, n, &r);
            assert_true(irp_choose(p, &q, c, n) < n);
        }
        irp_policy_free(p);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registry),
        cmocka_unit_test(round_robin_rotates),
        cmocka_unit_test(random_uniform_and_seeded),
        cmocka_unit_test(least_request_picks_a_minimum),
        cmocka_unit_test(p2c_never_picks_a_unique_maximum),
        cmocka_unit_test(choices_stay_in_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
