/* cost_model: the lowest estimated TTFT, behind its guards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/ir_core.h"
#include "policy/ir_policy.h"
#include "policy_fixture.h"

/* A prompt of 5000 tokens: replica 0 holds 4992 of them, the others none. */
static irp_request five_k(ir_rng *r) {
    return (irp_request){.prompt_tokens = 5000, .rng = r, .predicted = true};
}

/* The estimate is queue + P(u, c), worked by hand for the defaults
 * (a = 100 us, b = 3.3 ns, d = 5 ms), and the lowest one wins. */
static void lowest_ttft_wins(void **state) {
    irp_config cfg;
    irp_config_defaults(&cfg);
    irp_policy *p = irp_policy_new("cost_model", &cfg);
    ir_rng r;
    ir_rng_seed(&r, 1);
    irp_request q = five_k(&r);
    irp_candidate c[3];
    fx_fleet(c, 3);
    c[0].predicted_cached_tokens = 4992;
    /* P(5000, 0) = 0.5 + 3.3e-9 * 5000 * 2500 + 0.005 */
    assert_float_equal(irp_cost_ttft(&cfg, &q, &c[1]), 0.54625, 1e-9);
    /* P(8, 4992) = 0.0008 + 3.3e-9 * 8 * 4996 + 0.005 */
    assert_float_equal(irp_cost_ttft(&cfg, &q, &c[0]), 0.0059318944, 1e-9);
    for (int i = 0; i < 20; i++) assert_int_equal(irp_choose(p, &q, c, 3), 0);

    /* Three prompts of 5000 tokens queued ahead on replica 0, nothing cached:
     * Q = 0.1e-3 * 15000 + 3.3e-9 * 15000^2 / 6 + 3 * 0.005 = 1.63875 s.
     * (The others have as many in flight, decoding, so the bound holds.) */
    for (size_t i = 0; i < 3; i++) c[i].in_flight = 3;
    c[0].pending = 3;
    c[0].pending_prompt_tokens = 15000;
    assert_float_equal(irp_cost_ttft(&cfg, &q, &c[0]), 1.63875 + 0.0059318944, 1e-9);
    size_t k = irp_choose(p, &q, c, 3);
    assert_true(k == 1 || k == 2);
    /* ...but if those three were cache hits (24 uncached tokens), it is short */
    c[0].pending_uncached_tokens = 24;
    assert_int_equal(irp_choose(p, &q, c, 3), 0);

    /* The engine's queue counts when fresh: 5 waiting, each taken as this prompt */
    c[0].pending = 0;
    c[0].pending_prompt_tokens = c[0].pending_uncached_tokens = 0;
    c[0].engine_waiting = 5;
    assert_int_equal(irp_choose(p, &q, c, 3), 0); /* stale: ignored */
    c[0].engine_fresh = true;
    assert_float_equal(irp_cost_ttft(&cfg, &q, &c[0]), 5 * 0.54625 + 0.0059318944, 1e-9);
    k = irp_choose(p, &q, c, 3);
    assert_true(k == 1 || k == 2);
    irp_policy_free(p);
}

/* The queue's attention term from pending_work: the same 15000 tokens as one prompt
 * of 13000 and two of 1000 cost more than three of 5000 (the sum of squares), and the
 * oldest one's time in prefill comes off, at most one mean prefill. */
static void queue_counts_mixed_lengths_and_the_head(void **state) {
    irp_config cfg;
    irp_config_defaults(&cfg);
    ir_rng r;
    ir_rng_seed(&r, 1);
    irp_request q = five_k(&r);
    irp_candidate c[1];
    fx_fleet(c, 1);
    c[0].pending = 3;
    c[0].pending_prompt_tokens = 15000;
    double own = 0.54625;                   /* P(5000, 0), this prompt on a cold replica */
    c[0].pending_work = 3ull * 5000 * 5000; /* u * (2c + u) with c = 0 */
    assert_float_equal(irp_cost_ttft(&cfg, &q, &c[0]), 1.63875 + own, 1e-9);
    c[0].pending_work = 13000ull * 13000 + 2ull * 1000 * 1000;
    /* 0.1e-3 * 15000 + 3.3e-9 * (13000^2 + 2 * 1000^2) / 2 + 3 * 0.005 */
    double mixed = 1.5 + 3.3e-9 * 171e6 / 2 + 0.015;
    assert_float_equal(irp_cost_ttft(&cfg, &q, &c[0]), mixed + own, 1e-9);
    /* 0.2 s into the oldest one's prefill: 0.2 s less */
    c[0].pending_head_s = 0.2;
    assert_float_equal(irp_cost_ttft(&cfg, &q, &c[0]), mixed - 0.2 + own, 1e-9);
    /* a head that ran past the mean prefill: one mean prefill (mixed / 3) off, no more */
    c[0].pending_head_s = 5.0;
    assert_float_equal(irp_cost_ttft(&cfg, &q, &c[0]), mixed * 2 / 3 + own, 1e-9);
    /* nothing pending: the clock is ignored */
    c[0].pending = 0;
    c[0].pending_prompt_tokens = c[0].pending_work = 0;
    assert_float_equal(irp_cost_ttft(&cfg, &q, &c[0]), own, 1e-9);
}

/* A CPU-tier hit is priced between a GPU hit and a recompute: 4992 tokens loaded at
 * 5 us each (25 ms), then P(8, 4992) for the rest. */
static void cpu_tier_priced_between(void **state) {
    irp_config cfg;
    irp_config_defaults(&cfg);
    irp_policy *p = irp_policy_new("cost_model", &cfg);
    ir_rng r;
    ir_rng_seed(&r, 1);
    irp_request q = five_k(&r);
    irp_candidate c[3];
    fx_fleet(c, 3);
    c[0].predicted_cached_tokens = 4992; /* on the GPU */
    c[1].predicted_cpu_tokens = 4992;    /* on the CPU */
    double gpu = irp_cost_ttft(&cfg, &q, &c[0]), cpu = irp_cost_ttft(&cfg, &q, &c[1]);
    double none = irp_cost_ttft(&cfg, &q, &c[2]);
    assert_float_equal(cpu, 4992 * 5e-6 + 0.0059318944, 1e-9);
    assert_true(gpu < cpu && cpu < none);
    assert_int_equal(irp_choose(p, &q, c, 3), 0);
    c[0].predicted_cached_tokens = 0;
    assert_int_equal(irp_choose(p, &q, c, 3), 1); /* the CPU hit beats a recompute */
    /* CPU tokens never count beyond the prompt's uncached part */
    c[1].predicted_cached_tokens = 4000;
    c[1].predicted_cpu_tokens = 4992;
    assert_float_equal(irp_cost_ttft(&cfg, &q, &c[1]), 1000 * 5e-6 + 0.005, 1e-9);
    irp_policy_free(p);
}

/* Bounded load: a cached replica above c times the mean is passed over. */
static void bounded_load_guard(void **state) {
    irp_policy *p = irp_policy_new("cost_model", NULL);
    ir_rng r;
    ir_rng_seed(&r, 2);
    irp_request q = five_k(&r);
    irp_candidate c[3];
    fx_fleet(c, 3);
    c[0].predicted_cached_tokens = 4992;
    c[0].in_flight = 11; /* c = cost_load_factor 2: cap = ceil(2 * (15 + 1) / 3) = 11 */
    c[1].in_flight = c[2].in_flight = 2;
    for (int i = 0; i < 50; i++) assert_int_not_equal(irp_choose(p, &q, c, 3), 0);
    c[0].in_flight = 10; /* cap = ceil(2 * 15 / 3) = 10: 10 + 1 > 10 */
    for (int i = 0; i < 50; i++) assert_int_not_equal(irp_choose(p, &q, c, 3), 0);
    c[0].in_flight = 9; /* cap = ceil(2 * 14 / 3) = 10: fits */
    for (int i = 0; i < 50; i++) assert_int_equal(irp_choose(p, &q, c, 3), 0);
    irp_policy_free(p);
}

/* KV pressure: avoided while another replica has room; chosen when all are full. */
static void kv_pressure_guard(void **state) {
    irp_policy *p = irp_policy_new("cost_model", NULL);
    ir_rng r;
    ir_rng_seed(&r, 3);
    irp_request q = five_k(&r);
    irp_candidate c[3];
    fx_fleet(c, 3);
    c[0].predicted_cached_tokens = 4992;
    for (size_t i = 0; i < 3; i++) c[i].engine_fresh = true, c[i].engine_kv_usage = 0.5;
    c[0].engine_kv_usage = 0.99;
    for (int i = 0; i < 50; i++) assert_int_not_equal(irp_choose(p, &q, c, 3), 0);
    c[1].engine_kv_usage = c[2].engine_kv_usage = 0.97;
    for (int i = 0; i < 50; i++) assert_int_equal(irp_choose(p, &q, c, 3), 0);
    c[0].engine_fresh = false; /* a stale report is not pressure */
    c[0].engine_kv_usage = 0.99;
    c[1].engine_kv_usage = c[2].engine_kv_usage = 0.5;
    assert_int_equal(irp_choose(p, &q, c, 3), 0);
    irp_policy_free(p);
}

/* Distinct replicas a prefix reaches in 200 choices at even load; `sent`: each
 * choice is sent (the assigned hook, with the chosen replica's prediction), as the
 * gateway does, so the replicas' written tokens move as they would. */
static int reach(irp_policy *p, ir_rng *r, const ir_hash128 *b, size_t nb, irp_candidate *c,
                 size_t n, bool sent, bool *has0) {
    bool seen[8] = {false};
    int distinct = 0;
    for (int i = 0; i < 200; i++) {
        irp_request q = fx_request(r, b, nb);
        size_t k = irp_choose(p, &q, c, n);
        distinct += !seen[k];
        seen[k] = true;
        q.assigned_cached_tokens = c[k].predicted_cached_tokens;
        if (sent) irp_policy_assigned(p, c[k].replica, &q);
    }
    *has0 = seen[0];
    return distinct;
}

/* Hot-prefix replication: a prefix whose arrivals would take more than
 * hot_util of one replica's prefill is spread over k replicas, warm first,
 * while a quiet prefix stays on its warm replica. */
static void hot_prefix_replicated(void **state) {
    irp_config cfg;
    irp_config_defaults(&cfg);
    cfg.hot_window_s = 1.0;
    ir_rng r;
    ir_rng_seed(&r, 4);
    ir_hash128 hot[125], quiet[125];
    fx_blocks(hot, 125, 11, 125, 0);
    fx_blocks(quiet, 125, 12, 125, 0);
    irp_candidate c[4];
    fx_fleet(c, 4);
    c[0].predicted_cached_tokens = 1984; /* of 2005: both prefixes warm on replica 0 */
    for (uint32_t lim = 0; lim <= 2; lim += 2) {
        cfg.hot_replicas = lim;
        irp_policy *p = irp_policy_new("cost_model", &cfg);
        bool has0;
        assert_int_equal(reach(p, &r, hot, 125, c, 4, false, &has0), 1); /* no rate yet */
        assert_true(has0);
        /* 400 arrivals within milliseconds: about 400/s against a warm cost of
         * about 6.7 ms: 2.7 replicas' worth at 0.7 each, so k = 4 (or the cap 2) */
        irp_request q = fx_request(&r, hot, 125);
        q.assigned_cached_tokens = 1984;
        for (int i = 0; i < 400; i++) irp_policy_assigned(p, 0, &q);
        assert_int_equal(reach(p, &r, hot, 125, c, 4, true, &has0), lim ? 2 : 4);
        assert_true(has0);
        assert_int_equal(reach(p, &r, quiet, 125, c, 4, false, &has0), 1);
        assert_true(has0);
        irp_policy_free(p);
    }
}

/* A shared system prompt makes every conversation one hot prefix; the hot set must
 * count as warm only what the conversations share (their system prompt), not a
 * conversation's own history, so a conversation stays with the replica that holds
 * its history while the others are only a little less queued. Counting the whole
 * prompt warm on every member sent it to the least queued member instead. */
static void hot_prefix_keeps_conversations(void **state) {
    irp_config cfg;
    irp_config_defaults(&cfg);
    cfg.hot_window_s = 1.0;
    irp_policy *p = irp_policy_new("cost_model", &cfg);
    ir_rng r;
    ir_rng_seed(&r, 6);
    /* 300 chats of 40 blocks within milliseconds: the same 12-block system
     * prompt, then each its own history. */
    ir_hash128 b[40];
    for (uint64_t chat = 0; chat < 300; chat++) {
        fx_blocks(b, 40, 77, 12, 1000 + chat);
        irp_request q = fx_request(&r, b, 40);
        irp_policy_assigned(p, (uint32_t)(chat % 3), &q);
    }
    /* chat 5000's next turn: replica 1 holds its 39 usable blocks, the others
     * only the system prompt; replica 1 has one short prompt waiting */
    fx_blocks(b, 40, 77, 12, 5000);
    irp_candidate c[3];
    fx_fleet(c, 3);
    c[0].predicted_cached_tokens = c[2].predicted_cached_tokens = 12 * FX_BLOCK;
    c[1].predicted_cached_tokens = 39 * FX_BLOCK;
    c[1].in_flight = c[1].pending = 1;
    c[1].pending_prompt_tokens = c[1].pending_uncached_tokens = 20;
    for (int i = 0; i < 50; i++) {
        irp_request q = fx_request(&r, b, 40);
        assert_int_equal(irp_choose(p, &q, c, 3), 1);
    }
    /* the prefix is hot (a quiet one would stay anyway): the same prompt, with
     * its history on every replica, is spread to the idle ones */
    c[0].predicted_cached_tokens = c[2].predicted_cached_tokens = 39 * FX_BLOCK;
    bool seen[3] = {false};
    for (int i = 0; i < 50; i++) {
        irp_request q = fx_request(&r, b, 40);
        seen[irp_choose(p, &q, c, 3)] = true;
    }
    assert_true(seen[0] && seen[2] && !seen[1]);
    irp_policy_free(p);
}

/* The hot set is exactly the k eligible replicas that hold the most of the
 * prefix, for every k (checks the selection, not only its first member). */
static void hot_set_is_the_top_k(void **state) {
    ir_rng r;
    ir_rng_seed(&r, 8);
    ir_hash128 b[64];
    fx_blocks(b, 64, 21, 64, 0);
    for (uint32_t k = 2; k < 16; k++) {
        irp_config cfg;
        irp_config_defaults(&cfg);
        cfg.hot_window_s = 1.0;
        cfg.hot_replicas = k;
        irp_policy *p = irp_policy_new("cost_model", &cfg);
        irp_candidate c[16];
        fx_fleet(c, 16);
        uint64_t v[16];
        for (size_t i = 0; i < 16; i++) /* distinct, shuffled, some equal to others' order */
            v[i] = c[i].predicted_cached_tokens = (uint64_t)((i * 7) % 16) * 60;
        irp_request q = fx_request(&r, b, 64);
        for (int i = 0; i < 3000; i++) irp_policy_assigned(p, 0, &q);
        bool seen[16] = {false};
        for (int i = 0; i < 600; i++) seen[irp_choose(p, &q, c, 16)] = true;
        for (size_t i = 0; i < 16; i++) {
            size_t better = 0;
            for (size_t j = 0; j < 16; j++) better += v[j] > v[i];
            assert_int_equal(seen[i], better < k);
        }
        irp_policy_free(p);
    }
}

/* Session affinity: a session returns to its replica while that replica
 * passes the guards; off by default. */
static void session_affinity(void **state) {
    irp_config cfg;
    irp_config_defaults(&cfg);
    ir_rng r;
    ir_rng_seed(&r, 5);
    irp_candidate c[3];
    fx_fleet(c, 3);
    c[0].replica = 7, c[1].replica = 4, c[2].replica = 9; /* by replica, not by index */
    c[1].in_flight = c[2].in_flight = 1;
    c[1].pending = c[2].pending = 1;
    c[1].pending_prompt_tokens = c[2].pending_prompt_tokens = 500;
    irp_request q = {.prompt_tokens = 300, .rng = &r, .session = "alice", .session_len = 5};
    irp_policy *off = irp_policy_new("cost_model", &cfg);
    irp_policy_assigned(off, 9, &q);
    assert_int_equal(irp_choose(off, &q, c, 3), 0);
    irp_policy_free(off);

    cfg.session_affinity = true;
    irp_policy *p = irp_policy_new("cost_model", &cfg);
    assert_int_equal(irp_choose(p, &q, c, 3), 0); /* no history: lowest TTFT */
    irp_policy_assigned(p, 9, &q);
    for (int i = 0; i < 20; i++) assert_int_equal(irp_choose(p, &q, c, 3), 2);
    irp_request bob = q;
    bob.session = "bob";
    bob.session_len = 3;
    assert_int_equal(irp_choose(p, &bob, c, 3), 0);
    c[2].in_flight = 9; /* above the bound: the session moves */
    assert_int_not_equal(irp_choose(p, &q, c, 3), 2);
    irp_policy_free(p);
}

/* A hot prefix with replication and random departures: no assignment takes
 * a replica above ceil(c * mean). */
static void bounded_under_a_hot_prefix(void **state) {
    for (uint32_t floor = 1; floor <= 8; floor += 7) {
        irp_config cfg;
        irp_config_defaults(&cfg);
        cfg.cost_load_floor = floor;
        irp_policy *p = irp_policy_new("cost_model", &cfg);
        ir_rng r;
        ir_rng_seed(&r, 6);
        irp_candidate c[8];
        fx_fleet(c, 8);
        ir_hash128 a[64];
        for (int step = 0; step < 20000; step++) {
            uint64_t total = fx_total_in_flight(c, 8);
            if (total && ir_rng_below(&r, 100) < 48) {
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
            fx_blocks(a, 64, ir_rng_below(&r, 10) ? 3 : 1000 + (uint64_t)step, 60, (uint64_t)step);
            for (size_t i = 0; i < 8; i++) c[i].predicted_cached_tokens = i == 1 ? 60 * 16 : 0;
            irp_request q = fx_request(&r, a, 64);
            size_t k = irp_choose(p, &q, c, 8);
            c[k].in_flight++;
            irp_policy_assigned(p, c[k].replica, &q);
            /* above the floor, never above c times the mean */
            assert_true(c[k].in_flight <= floor || fx_within_bound(c, 8, k, cfg.cost_load_factor));
        }
        irp_policy_free(p);
    }
}

/* Equal estimates go to the fewest in flight: a prompt no replica holds, with no
 * prefill queued anywhere, lands on the replica with the fewest decodes, not on
 * a random one (random placement of new prefixes left one replica with three
 * times another's prefixes). Remaining ties stay random. */
static void ties_go_to_fewest_in_flight(void **state) {
    irp_config cfg;
    irp_config_defaults(&cfg);
    irp_policy *p = irp_policy_new("cost_model", &cfg);
    ir_rng r;
    ir_rng_seed(&r, 7);
    irp_request q = five_k(&r);
    irp_candidate c[3];
    fx_fleet(c, 3);
    c[0].in_flight = 4, c[1].in_flight = 2, c[2].in_flight = 3;
    for (int i = 0; i < 50; i++) assert_int_equal(irp_choose(p, &q, c, 3), 1);
    c[2].in_flight = 2;
    int seen[3] = {0};
    for (int i = 0; i < 200; i++) seen[irp_choose(p, &q, c, 3)]++;
    assert_int_equal(seen[0], 0);
    assert_true(seen[1] > 50 && seen[2] > 50);
    /* A better estimate still beats a lighter load */
    c[0].predicted_cached_tokens = 4992;
    assert_int_equal(irp_choose(p, &q, c, 3), 0);
    (void)state;
    irp_policy_free(p);
}

/* A prefix lost to a clear of its home's view (a cache reset, an engine restart)
 * goes back to that home, the replica its last arrival went to, although another
 * replica's queue is shorter; one merely evicted (no clear since) does not; a
 * replica that holds more of it still wins. */
static void cleared_prefix_goes_home(void **state) {
    irp_config cfg;
    irp_config_defaults(&cfg);
    irp_policy *p = irp_policy_new("cost_model", &cfg);
    ir_rng r;
    ir_rng_seed(&r, 8);
    /* a group of questions after a 30-block system prompt, sent to replica 2 */
    ir_hash128 b[40];
    for (uint64_t q = 0; q < 3; q++) {
        fx_blocks(b, 40, 55, 30, 900 + q);
        irp_request rq = fx_request(&r, b, 40);
        irp_policy_assigned(p, 2, &rq);
    }
    fx_blocks(b, 40, 55, 30, 999);
    irp_candidate c[3];
    fx_fleet(c, 3);
    /* nothing cached anywhere; replica 2 has a short prompt waiting */
    c[2].in_flight = c[2].pending = 1;
    c[2].pending_prompt_tokens = c[2].pending_uncached_tokens = 100;
    irp_request rq = fx_request(&r, b, 40);
    assert_int_not_equal(irp_choose(p, &rq, c, 3), 2); /* evicted: not home */
    c[0].cleared_ns = ir_now_ns();                     /* another replica's clear */
    rq = fx_request(&r, b, 40);
    assert_int_not_equal(irp_choose(p, &rq, c, 3), 2);
    c[2].cleared_ns = ir_now_ns(); /* the home's view emptied since */
    for (int i = 0; i < 50; i++) {
        rq = fx_request(&r, b, 40);
        assert_int_equal(irp_choose(p, &rq, c, 3), 2);
    }
    /* a replica holding some of the prompt beats the cleared home */
    c[1].predicted_cached_tokens = 4 * FX_BLOCK;
    rq = fx_request(&r, b, 40);
    assert_int_equal(irp_choose(p, &rq, c, 3), 1);
    /* once the prefix has been sent home after the clear, home is warm or evicted
     * again: the rule no longer applies */
    c[1].predicted_cached_tokens = 0;
    rq = fx_request(&r, b, 40);
    irp_policy_assigned(p, 2, &rq);
    rq = fx_request(&r, b, 40);
    assert_int_not_equal(irp_choose(p, &rq, c, 3), 2);
    (void)state;
    irp_policy_free(p);
}

/* The floor of the bound: with a few requests in flight, the bound alone would
 * send a warm prompt to a cold replica (cap = ceil(2 * 4 / 3) = 3 with 3 in flight
 * on the warm one); under cost_load_floor the estimate decides. */
static void load_floor_keeps_warm(void **state) {
    for (uint32_t floor = 1; floor <= 8; floor += 7) {
        irp_config cfg;
        irp_config_defaults(&cfg);
        cfg.cost_load_floor = floor;
        irp_policy *p = irp_policy_new("cost_model", &cfg);
        ir_rng r;
        ir_rng_seed(&r, 9);
        irp_request q = five_k(&r);
        irp_candidate c[3];
        fx_fleet(c, 3);
        c[0].predicted_cached_tokens = 4992;
        c[0].in_flight = 3; /* decoding: nothing pending */
        for (int i = 0; i < 50; i++) {
            size_t k = irp_choose(p, &q, c, 3);
            if (floor == 1)
                assert_int_not_equal(k, 0);
            else
                assert_int_equal(k, 0);
        }
        irp_policy_free(p);
    }
}

/* work_weight: a cold prefill elsewhere wins only when the warm replica's wait is
 * longer than (1 + work_weight) times what the miss adds. */
static void work_weight_prefers_warm(void **state) {
    irp_config cfg;
    irp_config_defaults(&cfg);
    ir_rng r;
    ir_rng_seed(&r, 10);
    irp_request q = five_k(&r);
    irp_candidate c[2];
    fx_fleet(c, 2);
    c[0].predicted_cached_tokens = 4992;
    /* replica 0 has a cold 6,000-token prefill waiting: Q = 0.6 + 3.3e-9 * 6000^2 / 2
     * + 0.005 = 0.664 s, more than the 0.54 s the miss adds, less than twice it */
    c[0].in_flight = c[0].pending = 1;
    c[0].pending_prompt_tokens = c[0].pending_uncached_tokens = 6000;
    double warm = irp_cost_ttft(&cfg, &q, &c[0]), cold = irp_cost_ttft(&cfg, &q, &c[1]);
    assert_true(warm > cold);
    for (double w = 0; w <= 1; w += 1) {
        cfg.work_weight = w;
        irp_policy *p = irp_policy_new("cost_model", &cfg);
        for (int i = 0; i < 20; i++) assert_int_equal(irp_choose(p, &q, c, 2), w > 0 ? 0 : 1);
        irp_policy_free(p);
    }
}

/* tie_tolerance: a difference in the estimate below tie_tolerance times the prompt's
 * cold prefill is no difference. A 96-token prefix (a shared system prompt) of a
 * 5000-token prompt saves 2 * (96 * 100 us + pairs) = about 20 ms of a 546 ms
 * cold prefill (3.7%): under the default 5% the candidates tie and the one with
 * fewer in flight wins; at 0 the prefix decides. A real hit (1000 tokens, about
 * 20%) wins over the in-flight count either way. */
static void small_differences_tie(void **state) {
    irp_config cfg;
    irp_config_defaults(&cfg);
    ir_rng r;
    ir_rng_seed(&r, 12);
    irp_request q = five_k(&r);
    irp_candidate c[3];
    fx_fleet(c, 3);
    c[0].predicted_cached_tokens = c[1].predicted_cached_tokens = 96;
    c[0].in_flight = c[1].in_flight = 1;
    for (int t = 0; t < 2; t++) {
        cfg.tie_tolerance = t ? 0.05 : 0.0;
        irp_policy *p = irp_policy_new("cost_model", &cfg);
        size_t seen[3] = {0};
        for (int i = 0; i < 60; i++) seen[irp_choose(p, &q, c, 3)]++;
        if (t) {
            assert_int_equal(seen[2], 60);
        } else {
            assert_int_equal(seen[2], 0);
            assert_true(seen[0] > 0 && seen[1] > 0); /* equal scores, equal loads: at random */
        }
        irp_policy_free(p);
    }
    cfg.tie_tolerance = 0.05;
    c[0].predicted_cached_tokens = 1000;
    irp_policy *p = irp_policy_new("cost_model", &cfg);
    for (int i = 0; i < 20; i++) assert_int_equal(irp_choose(p, &q, c, 3), 0);
    /* everything within the tolerance of the lowest ties, not a chain of near ones:
     * 1000 cached on 0 ties 990 on 1 (fewer in flight wins), never 2's 96 */
    c[1].predicted_cached_tokens = 990;
    c[1].in_flight = 0;
    for (int i = 0; i < 20; i++) assert_int_equal(irp_choose(p, &q, c, 3), 1);
    irp_policy_free(p);
}

/* Among equal scores and equal loads, a miss goes to the replica that has written
 * the fewest uncached tokens into its cache (what each assigned request missed
 * there), as SGLang's policy sends a miss to its smallest tree. A replica counts as
 * at most its cache's size behind the one that wrote the most. */
static void misses_go_where_least_was_written(void **state) {
    ir_rng r;
    ir_rng_seed(&r, 13);
    irp_request q = five_k(&r);
    irp_candidate c[3];
    fx_fleet(c, 3);
    irp_policy *p = irp_policy_new("cost_model", NULL);
    size_t seen[3] = {0};
    for (int i = 0; i < 60; i++) seen[irp_choose(p, &q, c, 3)]++;
    assert_true(seen[0] > 0 && seen[1] > 0 && seen[2] > 0); /* nothing written: at random */
    irp_request sent = q;
    sent.prompt_tokens = 10000;
    irp_policy_assigned(p, 0, &sent);
    sent.prompt_tokens = 4000;
    irp_policy_assigned(p, 1, &sent);
    for (int i = 0; i < 20; i++) assert_int_equal(irp_choose(p, &q, c, 3), 2);
    sent.prompt_tokens = 7000;
    sent.assigned_cached_tokens = 1000; /* 6,000 written */
    irp_policy_assigned(p, 2, &sent);
    for (int i = 0; i < 20; i++) assert_int_equal(irp_choose(p, &q, c, 3), 1);
    /* fewer in flight still comes first */
    c[1].in_flight = 1;
    for (int i = 0; i < 20; i++) assert_int_equal(irp_choose(p, &q, c, 3), 2);
    c[1].in_flight = 0;
    /* caches of 100 blocks (1,600 tokens): 1 and 2 both count as 8,400, so they tie */
    for (size_t i = 0; i < 3; i++) c[i].kv_capacity_blocks = 100;
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < 60; i++) seen[irp_choose(p, &q, c, 3)]++;
    assert_int_equal(seen[0], 0);
    assert_true(seen[1] > 0 && seen[2] > 0);
    /* a replica that leaves (its slot reused later) starts from nothing */
    for (size_t i = 0; i < 3; i++) c[i].kv_capacity_blocks = 0;
    irp_policy_replica_removed(p, 0);
    for (int i = 0; i < 20; i++) assert_int_equal(irp_choose(p, &q, c, 3), 0);
    irp_policy_free(p);
}

/* A prefix never seen (held nowhere) goes, among equal scores, to the replica that
 * has written the least, before the fewest in flight: where it lands its later
 * arrivals follow (llm-d's groups landed 5, 4 and 3 to a replica by the in-flight
 * count). A prefix seen before keeps the old order: the fewest in flight first. */
static void new_prefix_goes_where_least_was_written(void **state) {
    ir_rng r;
    ir_rng_seed(&r, 5);
    irp_candidate c[3];
    fx_fleet(c, 3);
    irp_policy *p = irp_policy_new("cost_model", NULL);
    ir_hash128 a[40], b[40], fresh[40];
    fx_blocks(a, 40, 100, 30, 1);
    fx_blocks(b, 40, 200, 30, 2);
    irp_request q = fx_request(&r, a, 40);
    irp_policy_assigned(p, 0, &q); /* group A's first user: replica 0 wrote 645 tokens */
    q = fx_request(&r, b, 40);
    irp_policy_assigned(p, 1, &q); /* group B's: replica 1 */
    c[2].in_flight = 3;            /* busier (decodes), but has written nothing */
    fx_blocks(fresh, 40, 300, 30, 3);
    irp_request f = fx_request(&r, fresh, 40);
    for (int i = 0; i < 20; i++) assert_int_equal(irp_choose(p, &f, c, 3), 2);
    /* group A's second user: seen before, and (to the index) held nowhere: the fewest
     * in flight, as before, not the least written */
    fx_blocks(a, 40, 100, 30, 4);
    q = fx_request(&r, a, 40);
    c[0].in_flight = 1;
    for (int i = 0; i < 20; i++) assert_int_equal(irp_choose(p, &q, c, 3), 1);
    (void)state;
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
    ir_hash128 b[8];
    char sess[16];
    for (int i = 0; i < 20000; i++) {
        fx_blocks(b, 8, ir_rng_below(&r, 50), 8, 0);
        int sl = snprintf(sess, sizeof sess, "u%d", (int)ir_rng_below(&r, 100));
        irp_request q = fx_request(&r, b, 8);
        q.session = sess;
        q.session_len = (size_t)sl;
        size_t k = irp_choose(w->p, &q, c, 4);
        irp_policy_assigned(w->p, c[k].replica, &q);
        irp_policy_released(w->p, c[k].replica, &q);
    }
    return NULL;
}

/* Shared by worker threads (run under TSan by make tsan-threaded). */
static void threads_share_one_instance(void **state) {
    irp_config cfg;
    irp_config_defaults(&cfg);
    cfg.session_affinity = true;
    irp_policy *p = irp_policy_new("cost_model", &cfg);
    pthread_t t[4];
    worker_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (worker_arg){.p = p, .seed = (uint64_t)i + 1};
        assert_int_equal(pthread_create(&t[i], NULL, worker, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    irp_policy_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lowest_ttft_wins),
        cmocka_unit_test(queue_counts_mixed_lengths_and_the_head),
        cmocka_unit_test(cpu_tier_priced_between),
        cmocka_unit_test(bounded_load_guard),
        cmocka_unit_test(kv_pressure_guard),
        cmocka_unit_test(hot_prefix_replicated),
        cmocka_unit_test(hot_set_is_the_top_k),
        cmocka_unit_test(hot_prefix_keeps_conversations),
        cmocka_unit_test(ties_go_to_fewest_in_flight),
        cmocka_unit_test(cleared_prefix_goes_home),
        cmocka_unit_test(load_floor_keeps_warm),
        cmocka_unit_test(work_weight_prefers_warm),
        cmocka_unit_test(small_differences_tie),
        cmocka_unit_test(misses_go_where_least_was_written),
        cmocka_unit_test(new_prefix_goes_where_least_was_written),
        cmocka_unit_test(session_affinity),
        cmocka_unit_test(bounded_under_a_hot_prefix),
        cmocka_unit_test(threads_share_one_instance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
