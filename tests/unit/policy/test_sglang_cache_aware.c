/* sglang_cache_aware: SGLang's cache_aware policy, and its radix trees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "policy/ir_policy.h"
#include "policy_fixture.h"

static irp_request text_req(ir_rng *r, const char *t) {
    return (irp_request){
        .prompt_tokens = strlen(t) / 4 + 1, .rng = r, .text = t, .text_len = strlen(t)};
}

/* Routes t and records it where it went, as the gateway does. */
static size_t route(irp_policy *p, ir_rng *r, const char *t, irp_candidate *c, size_t n) {
    irp_request q = text_req(r, t);
    size_t k = irp_choose(p, &q, c, n);
    irp_policy_assigned(p, c[k].replica, &q);
    return k;
}

/* A match above cache_threshold goes to the replica that holds it; a miss to
 * the smallest tree; matching stops inside a node's label. */
static void match_then_smallest(void **state) {
    irp_policy *p = irp_policy_new("sglang_cache_aware", NULL);
    ir_rng r;
    ir_rng_seed(&r, 1);
    irp_candidate c[3];
    fx_fleet(c, 3);
    irp_request a = text_req(&r, "You are a helpful assistant. Question: what is 2+2?");
    irp_policy_assigned(p, 1, &a);
    irp_request b = text_req(&r, "Tell me a long story about a dragon and a knight");
    irp_policy_assigned(p, 2, &b);
    irp_policy_assigned(p, 2, &b);
    /* 29 of 44 bytes shared with replica 1's text: 0.63 > 0.3 */
    assert_int_equal(route(p, &r, "You are a helpful assistant. Why is the sky?", c, 3), 1);
    /* a miss goes to the smallest tree: replica 0, empty */
    assert_int_equal(route(p, &r, "zzzz unrelated", c, 3), 0);
    /* "Tell me a long" (14 bytes of 47): 0.297, not above 0.3: smallest tree
     * (replica 0 again, 14 bytes < 48 and < 80) */
    assert_int_equal(route(p, &r, "Tell me a longer tale of something else, please", c, 3), 0);
    /* both now held by replica 0, and matched in full there */
    assert_int_equal(route(p, &r, "Tell me a longer tale of something else, please", c, 3), 0);
    assert_int_equal(route(p, &r, "zzzz unrelated", c, 3), 0);
    irp_policy_free(p);
}

/* Imbalance (max - min > abs AND max > rel * min) overrides the cache. */
static void balance_check(void **state) {
    irp_config cfg;
    irp_config_defaults(&cfg);
    assert_int_equal(cfg.balance_abs_threshold, 64);
    irp_policy *p = irp_policy_new("sglang_cache_aware", &cfg);
    ir_rng r;
    ir_rng_seed(&r, 2);
    irp_candidate c[3];
    fx_fleet(c, 3);
    const char *t = "a shared system prompt that replica zero holds, plus a question";
    irp_request q = text_req(&r, t);
    irp_policy_assigned(p, 0, &q);
    c[0].in_flight = 70, c[1].in_flight = 10, c[2].in_flight = 7;
    assert_int_equal(irp_choose(p, &q, c, 3), 0); /* 63 <= 64: balanced, the cache wins */
    c[0].in_flight = 70, c[1].in_flight = 4, c[2].in_flight = 5;
    assert_int_equal(irp_choose(p, &q, c, 3), 1); /* 66 > 64 and 70 > 6: the least loaded */
    c[0].in_flight = 200, c[1].in_flight = 135, c[2].in_flight = 135;
    assert_int_equal(irp_choose(p, &q, c, 3), 0); /* 65 > 64 but 200 <= 202.5: balanced */
    c[0].in_flight = 210;
    assert_int_equal(irp_choose(p, &q, c, 3), 1); /* 75 > 64, 210 > 202.5: the first least */
    irp_policy_free(p);
}

/* Trees stay within max_tree_chars by evicting least recently used leaves:
 * ten 30-byte prompts that share "prefix-0" go to replica 0, capped at 100
 * bytes: 8 shared + 22 per prompt keeps the newest four. */
static void lru_eviction(void **state) {
    irp_config cfg;
    irp_config_defaults(&cfg);
    cfg.max_tree_chars = 100;
    cfg.cache_threshold = 0.9;
    irp_policy *p = irp_policy_new("sglang_cache_aware", &cfg);
    ir_rng r;
    ir_rng_seed(&r, 3);
    irp_candidate c[2];
    fx_fleet(c, 2);
    char t[10][64];
    for (int i = 0; i < 10; i++) {
        snprintf(t[i], sizeof t[i], "prefix-%02d-abcdefghijklmnopqrst", i);
        irp_request q = text_req(&r, t[i]);
        irp_policy_assigned(p, 0, &q);
    }
    /* held: a full match on replica 0; evicted: 8 of 30 bytes, a miss, which
     * goes to the smaller tree, replica 1's (empty) */
    for (int i = 0; i < 10; i++) {
        irp_request q = text_req(&r, t[i]);
        assert_int_equal(irp_choose(p, &q, c, 2), i >= 6 ? 0 : 1);
    }
    /* touch 07, then two new prompts: each evicts the oldest leaf held, 06
     * and then 08 (07 is newer now than 08 and 09) */
    irp_request q7 = text_req(&r, t[7]);
    irp_policy_assigned(p, 0, &q7);
    irp_request qx = text_req(&r, "prefix-0X-abcdefghijklmnopqrst");
    irp_request qy = text_req(&r, "prefix-0Y-abcdefghijklmnopqrst");
    irp_policy_assigned(p, 0, &qx);
    irp_policy_assigned(p, 0, &qy);
    const size_t want[10] = {[6] = 1, [7] = 0, [8] = 1, [9] = 0};
    for (int i = 6; i < 10; i++) {
        irp_request q = text_req(&r, t[i]);
        assert_int_equal(irp_choose(p, &q, c, 2), want[i]);
    }
    irp_policy_free(p);
}

/* A replica that leaves (or whose slot is reused) starts with an empty tree. */
static void removed_replica_forgotten(void **state) {
    irp_policy *p = irp_policy_new("sglang_cache_aware", NULL);
    ir_rng r;
    ir_rng_seed(&r, 4);
    irp_candidate c[2];
    fx_fleet(c, 2);
    const char *t = "the same long prompt, sent again and again to the same replica";
    irp_request q = text_req(&r, t);
    irp_policy_assigned(p, 1, &q);
    irp_request small = text_req(&r, "x");
    irp_policy_assigned(p, 0, &small);
    assert_int_equal(irp_choose(p, &q, c, 2), 1);
    irp_policy_replica_removed(p, 1);
    assert_int_equal(irp_choose(p, &q, c, 2), 1); /* a miss now: 1's tree is the smallest */
    irp_policy_assigned(p, 1, &q);
    irp_policy_assigned(p, 0, &q);
    irp_policy_replica_added(p, 0);
    irp_request other = text_req(&r, "unrelated");
    assert_int_equal(irp_choose(p, &other, c, 2), 0);
    irp_policy_free(p);
}

typedef struct worker_arg {
    irp_policy *p;
    uint64_t seed;
} worker_arg;

static void *worker(void *arg) {
    worker_arg *w = arg;
    ir_rng r;
    ir_rng_seed(&r, w->seed);
    irp_candidate c[4];
    fx_fleet(c, 4);
    char t[96];
    for (int i = 0; i < 5000; i++) {
        snprintf(t, sizeof t, "system %d: question %d", (int)ir_rng_below(&r, 20),
                 (int)ir_rng_below(&r, 1000));
        route(w->p, &r, t, c, 4);
        if (i % 1000 == 999) irp_policy_replica_removed(w->p, (uint32_t)ir_rng_below(&r, 4));
    }
    return NULL;
}

/* Trees shared by worker threads, with evictions (TSan runs this). */
static void threads_share_the_trees(void **state) {
    irp_config cfg;
    irp_config_defaults(&cfg);
    cfg.max_tree_chars = 2000;
    irp_policy *p = irp_policy_new("sglang_cache_aware", &cfg);
    pthread_t t[4];
    worker_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (worker_arg){.p = p, .seed = (uint64_t)i + 7};
        assert_int_equal(pthread_create(&t[i], NULL, worker, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    irp_policy_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(match_then_smallest),
        cmocka_unit_test(balance_check),
        cmocka_unit_test(lru_eviction),
        cmocka_unit_test(removed_replica_forgotten),
        cmocka_unit_test(threads_share_the_trees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
