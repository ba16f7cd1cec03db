/* No load-blind fallback. Under skewed load, a prompt that no replica holds
 * (a cache miss) goes to a lightly loaded replica with prefix_hash, kv_aware
 * and cost_model; SGLang's cache_aware sends it to the replica with the
 * smallest tree even when that replica is the most loaded (below its balance
 * thresholds it never looks at load), which is how one worker ends up taking
 * all the traffic. Both behaviours are shown on the same requests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "policy/ir_policy.h"
#include "policy_fixture.h"

/* Replica 2 is the most loaded (40 in flight, 12 of them queued for prefill)
 * and, being new or just restarted, holds the smallest tree. */
static void skewed_fleet(irp_candidate *c) {
    fx_fleet(c, 3);
    c[0].in_flight = 2;
    c[1].in_flight = 3, c[1].pending = 1, c[1].pending_prompt_tokens = 800;
    c[2].in_flight = 40, c[2].pending = 12, c[2].pending_prompt_tokens = 9600;
}

typedef struct miss {
    char text[128];
    ir_hash128 blocks[6];
    irp_request q;
} miss;

static void make_miss(miss *m, ir_rng *r, int i) {
    snprintf(m->text, sizeof m->text, "prompt %d: %016llx, never seen before by any replica", i,
             (unsigned long long)ir_rng_next(r));
    fx_blocks(m->blocks, 6, 5000 + (uint64_t)i, 6, 0);
    m->q = fx_request(r, m->blocks, 6);
    m->q.text = m->text;
    m->q.text_len = strlen(m->text);
}

static void ours_go_to_a_light_replica(void **state) {
    const char *names[] = {"prefix_hash", "kv_aware", "cost_model"};
    ir_rng r;
    ir_rng_seed(&r, 1);
    irp_candidate c[3];
    skewed_fleet(c);
    for (size_t p = 0; p < 3; p++) {
        irp_policy *pol = irp_policy_new(names[p], NULL);
        int per[3] = {0};
        for (int i = 0; i < 300; i++) {
            miss m;
            make_miss(&m, &r, i);
            per[irp_choose(pol, &m.q, c, 3)]++;
        }
        print_message("%s: misses per replica %d %d %d\n", names[p], per[0], per[1], per[2]);
        assert_int_equal(per[2], 0);
        if (p > 0) assert_int_equal(per[0], 300); /* the lightest: no queue, fewest in flight */
        irp_policy_free(pol);
    }
}

static void sglang_goes_to_the_smallest_tree(void **state) {
    irp_policy *pol = irp_policy_new("sglang_cache_aware", NULL);
    ir_rng r;
    ir_rng_seed(&r, 2);
    irp_candidate c[3];
    skewed_fleet(c);
    /* replicas 0 and 1 have served before; replica 2 has not */
    const char *old = "an earlier conversation that replicas 0 and 1 have both seen";
    irp_request q = {.prompt_tokens = 20, .rng = &r, .text = old, .text_len = strlen(old)};
    irp_policy_assigned(pol, 0, &q);
    irp_policy_assigned(pol, 1, &q);
    int to2 = 0;
    for (int i = 0; i < 300; i++) {
        miss m;
        make_miss(&m, &r, i);
        size_t k = irp_choose(pol, &m.q, c, 3);
        to2 += k == 2;
        /* not recorded: every miss sees the same trees, as within one burst */
    }
    print_message("sglang_cache_aware: %d of 300 misses to the most loaded replica\n", to2);
    assert_int_equal(to2, 300);
    /* recorded, as the gateway does: the burst still piles onto replica 2
     * until its tree outgrows the others' */
    int first_off = -1;
    for (int i = 0; i < 300 && first_off < 0; i++) {
        miss m;
        make_miss(&m, &r, 1000 + i);
        size_t k = irp_choose(pol, &m.q, c, 3);
        irp_policy_assigned(pol, c[k].replica, &m.q);
        if (k != 2) first_off = i;
    }
    assert_true(first_off >= 1);
    irp_policy_free(pol);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ours_go_to_a_light_replica),
        cmocka_unit_test(sglang_goes_to_the_smallest_tree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
