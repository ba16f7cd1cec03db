/* The gateway's fleet: caps never overshoot under races, candidates are only
 * healthy replicas that serve the model, the splice changes only `model`, and
 * config errors name their paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <string.h>

#include "gateway/gateway.h"
#include "../../fuzz/splice_model.h"

static const char *conf_text =
    "models:\n"
    "  - name: m-a\n"
    "    aliases: [a]\n"
    "  - name: m-b\n"
    "    policy: least_request\n"
    "replicas:\n"
    "  - {id: r0, url: \"http://127.0.0.1:1\", models: [m-a], max_concurrency: 3, max_pending: 2}\n"
    "  - {id: r1, url: \"http://127.0.0.1:2\", models: [m-a, m-b]}\n"
    "  - {id: r2, url: \"http://127.0.0.1:3\", models: [m-b]}\n"
    "  - {id: r3, url: \"http://127.0.0.1:4\"}\n";

static ir_cfg *load(const char *text, gw_config *c, ir_cfg_errors *e) {
    memset(e, 0, sizeof *e);
    ir_cfg *owner = ir_cfg_load_text(text, strlen(text), &gw_config_schema, c, e);
    if (owner) gw_config_check(c, e);
    return owner;
}

static void config_defaults_and_fleet(void **state) {
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = load(conf_text, &c, &e);
    assert_non_null(owner);
    assert_int_equal(e.n, 0);
    assert_string_equal(c.server.listen, "0.0.0.0:8080");
    assert_string_equal(c.server.admin_listen, "127.0.0.1:9090");
    assert_int_equal(c.retry.max_attempts, 3);
    assert_int_equal(c.retry.backoff_ns, 25000000);
    assert_string_equal(c.routing.default_policy, "round_robin");
    gw_fleet f;
    char err[256];
    assert_int_equal(gw_fleet_init(&f, &c, err, sizeof err), 0);
    assert_ptr_equal(gw_fleet_model(&f, "a", 1), &f.models[0]);
    assert_ptr_equal(gw_fleet_model(&f, "m-b", 3), &f.models[1]);
    assert_null(gw_fleet_model(&f, "m", 1));
    assert_string_equal(irp_policy_name(f.models[1].policy), "least_request");
    assert_true(gw_replica_serves(&f.replicas[0], 0));
    assert_false(gw_replica_serves(&f.replicas[0], 1));
    assert_true(gw_replica_serves(&f.replicas[3], 1)); /* no models: serves all */
    gw_fleet_free(&f);
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
}

static void config_errors_name_paths(void **state) {
    const char *bad = "models:\n"
                      "  - name: m\n"
                      "    aliases: [x, m]\n"
                      "    policy: no_such_policy\n"
                      "replicas:\n"
                      "  - {id: r0, url: \"ftp://x\"}\n"
                      "  - {id: r0, url: \"http://h:1\", models: [nope], max_concurency: 3}\n"
                      "server: {listen: \"nowhere\", workers: -1, request_timeout: 5 parsecs}\n"
                      "retry: {backoff: fast}\n"
                      "unknown_section: 1\n";
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = load(bad, &c, &e);
    if (owner) {
        gw_config_check(&c, &e);
        ir_cfg_free(owner);
    }
    const char *want[] = {"models[0].policy", "replicas[0].url", "replicas[1].max_concurency",
                          "server.listen",    "server.workers",  "server.request_timeout",
                          "retry.backoff",    "unknown_section"};
    for (size_t i = 0; i < IR_ARRAY_LEN(want); i++) {
        bool seen = false;
        for (size_t k = 0; k < e.n; k++) seen |= strncmp(e.msgs[k], want[i], strlen(want[i])) == 0;
        if (!seen) {
            for (size_t k = 0; k < e.n; k++) fprintf(stderr, "  got: %s\n", e.msgs[k]);
            fail_msg("no error for %s", want[i]);
        }
    }
    ir_cfg_errors_free(&e);
    /* Cross-checks, on a file that is otherwise valid. */
    const char *clash = "models:\n  - {name: m, aliases: [x, m]}\n  - {name: x}\n"
                        "replicas:\n  - {id: r0, url: \"http://h:1\", models: [nope]}\n"
                        "  - {id: r0, url: \"http://h:2\", models: [m]}\n";
    owner = load(clash, &c, &e);
    const char *want2[] = {"models[0].aliases[1]", "models[1].name", "replicas[0].models[0]",
                           "replicas[1].id"};
    for (size_t i = 0; i < IR_ARRAY_LEN(want2); i++) {
        bool seen = false;
        for (size_t k = 0; k < e.n; k++)
            seen |= strncmp(e.msgs[k], want2[i], strlen(want2[i])) == 0;
        if (!seen) fail_msg("no error for %s", want2[i]);
    }
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
}

/* ---- caps under races ---- */

typedef struct {
    gw_replica *r;
    _Atomic int *violations;
    int iters;
} racer;

static void *race(void *arg) {
    racer *x = arg;
    for (int i = 0; i < x->iters; i++) {
        if (gw_lease_take(x->r, (gw_lease_tokens){10, 10, true})) {
            if (atomic_load(&x->r->in_flight) > (uint32_t)x->r->cfg->max_concurrency ||
                atomic_load(&x->r->pending) > (uint32_t)x->r->cfg->max_pending)
                atomic_fetch_add(x->violations, 1);
            if (i % 2) {
                gw_lease_head(x->r, (gw_lease_tokens){10, 10, true});
                gw_lease_release(x->r, false, (gw_lease_tokens){10, 10, true});
            } else {
                gw_lease_release(x->r, true, (gw_lease_tokens){10, 10, true});
            }
        }
    }
    return NULL;
}

static void caps_never_overshoot(void **state) {
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = load(conf_text, &c, &e);
    gw_fleet f;
    char err[256];
    assert_int_equal(gw_fleet_init(&f, &c, err, sizeof err), 0);
    gw_replica *r = &f.replicas[0]; /* max_concurrency 3, max_pending 2 */
    _Atomic int violations = 0;
    pthread_t th[4];
    racer x = {r, &violations, 200000};
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, race, &x);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&violations), 0);
    assert_int_equal(atomic_load(&r->in_flight), 0);
    assert_int_equal(atomic_load(&r->pending), 0);
    assert_int_equal(atomic_load(&r->prompt_tokens), 0);
    assert_int_equal(atomic_load(&r->pending_tokens), 0);
    assert_int_equal(atomic_load(&r->pending_uncached), 0);
    assert_int_equal(atomic_load(&r->pending_work), 0);
    /* Sequentially: the pending cap binds first, then the concurrency cap. The
     * prefill clock starts when pending leaves 0 and again at a head with others
     * still pending; pending_work sums u * (2c + u). */
    atomic_store(&r->prefill_since, 0);
    assert_true(gw_lease_take(r, (gw_lease_tokens){30, 10, true})); /* 10 * (40 + 10) */
    uint64_t t1 = atomic_load(&r->prefill_since);
    assert_true(t1 > 0);
    assert_true(gw_lease_take(r, (gw_lease_tokens){1, 1, true}));
    assert_int_equal(atomic_load(&r->prefill_since), t1);
    assert_int_equal(atomic_load(&r->pending_work), 500 + 1);
    assert_false(gw_lease_take(r, (gw_lease_tokens){1, 1, true})); /* 2 pending */
    gw_lease_head(r, (gw_lease_tokens){30, 10, true});
    uint64_t t2 = atomic_load(&r->prefill_since);
    assert_true(t2 >= t1);
    assert_int_equal(atomic_load(&r->pending_work), 1);
    assert_true(gw_lease_take(r, (gw_lease_tokens){1, 1, true})); /* 3 in flight */
    gw_lease_head(r, (gw_lease_tokens){1, 1, true});
    assert_false(gw_lease_take(r, (gw_lease_tokens){1, 1, true}));
    gw_lease_release(r, true, (gw_lease_tokens){1, 1, true}); /* left before its first byte */
    assert_int_equal(atomic_load(&r->pending), 0);
    assert_int_equal(atomic_load(&r->pending_work), 0);
    /* A request that does not stream (pends false) takes a concurrency slot only: a
     * replica whose pending slots are all taken is still offered to it, and it counts
     * nothing pending (its head comes after the whole answer, not after the prefill). */
    gw_lease_release(r, false, (gw_lease_tokens){30, 10, true});
    gw_lease_release(r, false, (gw_lease_tokens){1, 1, true});
    assert_int_equal(atomic_load(&r->in_flight), 0);
    assert_true(gw_lease_take(r, (gw_lease_tokens){7, 7, true}));
    assert_true(gw_lease_take(r, (gw_lease_tokens){7, 7, true})); /* 2 pending: full */
    irp_candidate cand[8];
    const char *why[8];
    size_t healthy;
    gw_fleet_candidates_why(&f, 0, ir_now_ns(), true, NULL, cand, &healthy, why);
    assert_string_equal(why[0], "full");
    gw_fleet_candidates_why(&f, 0, ir_now_ns(), false, NULL, cand, &healthy, why);
    assert_null(why[0]);
    assert_true(gw_lease_take(r, (gw_lease_tokens){5, 5, false}));
    assert_int_equal(atomic_load(&r->in_flight), 3);
    assert_int_equal(atomic_load(&r->pending), 2);
    assert_int_equal(atomic_load(&r->pending_tokens), 14);
    assert_int_equal(atomic_load(&r->prompt_tokens), 19);
    assert_false(gw_lease_take(r, (gw_lease_tokens){5, 5, false})); /* max_concurrency binds */
    gw_fleet_candidates_why(&f, 0, ir_now_ns(), false, NULL, cand, &healthy, why);
    assert_string_equal(why[0], "full");
    gw_lease_release(r, false, (gw_lease_tokens){5, 5, false});
    assert_int_equal(atomic_load(&r->pending), 2);
    assert_int_equal(atomic_load(&r->pending_tokens), 14);
    gw_lease_release(r, true, (gw_lease_tokens){7, 7, true});
    gw_lease_release(r, true, (gw_lease_tokens){7, 7, true});
    assert_int_equal(atomic_load(&r->in_flight), 0);
    assert_int_equal(atomic_load(&r->prompt_tokens), 0);
    assert_int_equal(atomic_load(&r->pending_tokens), 0);
    gw_fleet_free(&f);
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
}

/* No candidate is ever unhealthy, ejected, full, or a replica that does not
 * serve the model, whatever the fleet's state. */
static void candidates_are_eligible(void **state) {
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = load(conf_text, &c, &e);
    gw_fleet f;
    char err[256];
    assert_int_equal(gw_fleet_init(&f, &c, err, sizeof err), 0);
    ir_rng rng;
    ir_rng_seed(&rng, 5);
    uint64_t now = 1000000000000ull;
    /* One of each policy for the whole test: making one per check cost minutes. */
    irp_policy *pol[32];
    size_t npol = 0;
    for (const irp_vtable *const *v = irp_all(); *v && npol < 32; v++)
        pol[npol++] = irp_policy_new((*v)->name, NULL);
    for (int iter = 0; iter < 20000; iter++) {
        for (size_t i = 0; i < f.nreplicas; i++) {
            gw_replica *r = &f.replicas[i];
            atomic_store(&r->healthy, ir_rng_below(&rng, 4) != 0);
            atomic_store(&r->ejected_until, ir_rng_below(&rng, 4) == 0 ? now + 5 : 0);
            atomic_store(&r->in_flight, (uint32_t)ir_rng_below(&rng, 5));
            atomic_store(&r->pending, (uint32_t)ir_rng_below(&rng, 3));
        }
        uint64_t excl[GW_MAX_REPLICAS / 64] = {ir_rng_below(&rng, 16)};
        uint32_t model = (uint32_t)ir_rng_below(&rng, 2);
        irp_candidate cand[GW_MAX_REPLICAS];
        size_t healthy;
        size_t n = gw_fleet_candidates(&f, model, now, true, ir_rng_below(&rng, 2) ? excl : NULL,
                                       cand, &healthy);
        assert_true(n <= healthy);
        for (size_t k = 0; k < n; k++) {
            gw_replica *r = &f.replicas[cand[k].replica];
            assert_true(gw_replica_serves(r, model));
            assert_true(atomic_load(&r->healthy));
            assert_true(atomic_load(&r->ejected_until) <= now);
            assert_true(atomic_load(&r->in_flight) < (uint32_t)r->cfg->max_concurrency);
            assert_true(atomic_load(&r->pending) < (uint32_t)r->cfg->max_pending);
            /* and every policy picks among them */
            for (size_t v = 0; v < npol; v++) {
                irp_request q = {.rng = &rng};
                assert_true(irp_choose(pol[v], &q, cand, n) < n);
            }
        }
    }
    for (size_t v = 0; v < npol; v++) irp_policy_free(pol[v]);
    gw_fleet_free(&f);
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
}

/* Each replica left out is left out for its reason, the first that applies, in
 * the order /admin/explain documents; an offered one has none. */
static void left_out_for_a_reason(void **state) {
    (void)state;
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = load(conf_text, &c, &e);
    gw_fleet f;
    char err[256];
    assert_int_equal(gw_fleet_init(&f, &c, err, sizeof err), 0);
    uint64_t now = 1000000000000ull;
    for (size_t i = 0; i < f.nreplicas; i++) atomic_store(&f.replicas[i].healthy, 1);
    /* model m-a (0): r0 full (3 in flight of 3), r1 ejected, r2 serves only m-b, r3 excluded */
    atomic_store(&f.replicas[0].in_flight, 3);
    atomic_store(&f.replicas[1].ejected_until, now + 1);
    uint64_t excl[GW_MAX_REPLICAS / 64] = {1u << 3};
    irp_candidate cand[GW_MAX_REPLICAS];
    const char *why[GW_MAX_REPLICAS];
    size_t healthy;
    size_t n = gw_fleet_candidates_why(&f, 0, now, true, excl, cand, &healthy, why);
    assert_int_equal(n, 0);
    assert_int_equal(healthy, 2); /* r0 and r3 serve m-a and are up */
    assert_string_equal(why[0], "full");
    assert_string_equal(why[1], "ejected");
    assert_string_equal(why[2], "does not serve the model");
    assert_string_equal(why[3], "already tried");
    /* an unhealthy replica is unhealthy before it is ejected; r3 free is offered */
    atomic_store(&f.replicas[1].healthy, 0);
    n = gw_fleet_candidates_why(&f, 0, now, true, NULL, cand, &healthy, why);
    assert_int_equal(n, 1);
    assert_int_equal(cand[0].replica, 3);
    assert_null(why[3]);
    assert_string_equal(why[1], "unhealthy");
    /* r0 with room but its pending slots taken (2 of 2) is full too */
    atomic_store(&f.replicas[0].in_flight, 0);
    atomic_store(&f.replicas[0].pending, 2);
    n = gw_fleet_candidates_why(&f, 0, now, true, NULL, cand, &healthy, why);
    assert_string_equal(why[0], "full");
    atomic_store(&f.replicas[0].pending, 1);
    n = gw_fleet_candidates_why(&f, 0, now, true, NULL, cand, &healthy, why);
    assert_int_equal(n, 2);
    assert_null(why[0]);
    gw_fleet_free(&f);
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
}

/* Failures that hit every replica never eject more than half of them, and
 * each ejection backs off longer than the last. */
static void ejection_is_capped(void **state) {
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = load(conf_text, &c, &e);
    gw_fleet f;
    char err[256];
    assert_int_equal(gw_fleet_init(&f, &c, err, sizeof err), 0);
    uint64_t now = 1000000000000ull;
    for (int round = 0; round < 10; round++)
        for (size_t i = 0; i < f.nreplicas; i++) gw_replica_failed(&f, &f.replicas[i], now);
    size_t ejected = 0;
    for (size_t i = 0; i < f.nreplicas; i++)
        ejected += atomic_load(&f.replicas[i].ejected_until) > now;
    assert_int_equal(ejected, 2); /* 50% of 4 */
    /* A replica ejected again later stays out twice as long. */
    gw_replica *r = &f.replicas[0];
    uint64_t first = atomic_load(&r->ejected_until) - now;
    uint64_t later = now + first + 1;
    for (int k = 0; k < 3; k++) gw_replica_failed(&f, r, later);
    assert_int_equal(atomic_load(&r->ejected_until) - later, 2 * first);
    gw_fleet_free(&f);
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
}

/* ---- the splice ---- */

static void splice_changes_only_model(void **state) {
    static const char *bodies[] = {
        "{\"model\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"hi \\u00e9\"}]}",
        "{ \"messages\" : [] , \"model\" : \"a\" , \"x\": {\"model\": \"inner\"} }",
        "{\"model\":\"a\",\"model\":\"b\",\"n\":1.50}",
        "{\"prompt\":\"x\"}",
        "{}",
        "  {\"max_tokens\": 3}  ",
        "{\"model\":null,\"prompt\":\"p\"}",
    };
    const char *names[] = {"inferrail/sim-8b", "m\"odd\\name", "日本"};
    for (size_t i = 0; i < IR_ARRAY_LEN(bodies); i++) {
        for (size_t k = 0; k < IR_ARRAY_LEN(names); k++) {
            const char *b = bodies[i];
            ir_json_span sp;
            int rc = ir_json_scan_key(b, strlen(b), "model", &sp, 0);
            assert_true(rc != IR_JSON_INVALID);
            ir_buf out;
            ir_buf_init(&out, 0);
            assert_int_equal(
                splice_model_ref(b, strlen(b), &sp, rc == IR_JSON_FOUND, names[k], &out), 0);
            json_error_t e;
            json_t *before = json_loads(b, 0, &e), *after = json_loadb(out.data, out.len, 0, &e);
            assert_non_null(after);
            assert_string_equal(json_string_value(json_object_get(after, "model")), names[k]);
            json_object_del(before, "model");
            json_object_del(after, "model");
            assert_true(json_equal(before, after));
            /* Byte for byte: only the model's own bytes differ. */
            if (rc == IR_JSON_FOUND) {
                assert_memory_equal(out.data, b, sp.start);
                size_t tail = strlen(b) - sp.end;
                assert_memory_equal(out.data + out.len - tail, b + sp.end, tail);
            }
            json_decref(before);
            json_decref(after);
            ir_buf_free(&out);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(config_defaults_and_fleet), cmocka_unit_test(config_errors_name_paths),
        cmocka_unit_test(caps_never_overshoot),      cmocka_unit_test(candidates_are_eligible),
        cmocka_unit_test(splice_changes_only_model), cmocka_unit_test(ejection_is_capped),
        cmocka_unit_test(left_out_for_a_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
