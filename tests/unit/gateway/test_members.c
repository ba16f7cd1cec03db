/* Fleet membership at run time (members.c) and the discovery config checks:
 * joins publish a slot, leaves take it out of the candidates, the KV index and
 * the metrics, the same id comes back to its own slot, a departed slot is reused
 * only after its quarantine, a full fleet refuses, and a reader thread racing
 * joins and leaves never sees a non-member. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "gateway/gateway.h"

static const char *conf_text = "models: [{name: m}]\n"
                               "discovery:\n"
                               "  dns: [{name: g, url: \"http://pool.test:8000\"}]\n";

typedef struct env {
    gw_config c;
    ir_cfg *owner;
    gw_fleet f;
    gw_replica_cfg tmpl;
} env;

static void setup_env(env *e, const char *text) {
    ir_cfg_errors errs = {0};
    e->owner = ir_cfg_load_text(text, strlen(text), &gw_config_schema, &e->c, &errs);
    assert_non_null(e->owner);
    gw_config_check(&e->c, &errs);
    assert_int_equal(errs.n, 0);
    ir_cfg_errors_free(&errs);
    char err[256];
    assert_int_equal(gw_fleet_init(&e->f, &e->c, err, sizeof err), 0);
    e->tmpl = (gw_replica_cfg){.max_concurrency = 8, .max_pending = 8};
}

static void teardown_env(env *e) {
    gw_fleet_free(&e->f);
    ir_cfg_free(e->owner);
}

static size_t candidates(env *e) {
    irp_candidate out[GW_MAX_REPLICAS];
    size_t healthy;
    return gw_fleet_candidates(&e->f, 0, ir_now_ns(), true, NULL, out, &healthy);
}

static int hook_joined, hook_left;
static char hook_last[80];
static void on_member(void *ud, gw_replica *r, bool joined) {
    (void)ud;
    if (joined)
        hook_joined++;
    else
        hook_left++;
    snprintf(hook_last, sizeof hook_last, "%s", r->cfg->id);
}

static int other_calls;
static void on_other(void *ud, gw_replica *r, bool joined) {
    (void)ud;
    (void)r;
    (void)joined;
    other_calls++;
}

static void join_leave_rejoin(void **state) {
    env e;
    setup_env(&e, conf_text);
    /* two listeners (the metrics and the scraper, in the gateway): both are told */
    assert_int_equal(gw_fleet_listen(&e.f, on_member, NULL), 0);
    assert_int_equal(gw_fleet_listen(&e.f, on_other, &e), 0);
    other_calls = 0;
    assert_int_equal(e.f.nslots, GW_MAX_REPLICAS);
    assert_int_equal(e.f.nreplicas, 0);
    assert_int_equal(candidates(&e), 0);
    int a = gw_fleet_join(&e.f, "g-127.0.0.2-8000", "http://127.0.0.2:8000", &e.tmpl);
    int b = gw_fleet_join(&e.f, "g-127.0.0.3-8000", "http://127.0.0.3:8000", &e.tmpl);
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    assert_int_equal(candidates(&e), 2);
    assert_string_equal(e.f.replicas[b].cfg->id, "g-127.0.0.3-8000");
    assert_string_equal(e.f.replicas[b].url.host, "127.0.0.3");
    assert_true(gw_replica_serves(&e.f.replicas[b], 0));
    assert_true(irx_capacity(e.f.index, (uint32_t)b) > 0);
    /* joining again is a no-op: the same slot */
    assert_int_equal(gw_fleet_join(&e.f, "g-127.0.0.3-8000", "http://127.0.0.3:8000", &e.tmpl), b);
    atomic_store(&e.f.replicas[b].requests, 5);
    gw_fleet_leave(&e.f, (uint32_t)b);
    assert_false(gw_replica_member(&e.f.replicas[b]));
    assert_int_equal(candidates(&e), 1);
    assert_int_equal(irx_capacity(e.f.index, (uint32_t)b), 0);
    /* the metrics registry hears of it (its hook): b left, after a and b joined */
    assert_int_equal(hook_joined, 2);
    assert_int_equal(hook_left, 1);
    assert_string_equal(hook_last, "g-127.0.0.3-8000");
    /* a new address takes a fresh slot, not the departed one (in quarantine) */
    int c = gw_fleet_join(&e.f, "g-127.0.0.4-8000", "http://127.0.0.4:8000", &e.tmpl);
    assert_int_equal(c, 2);
    /* the departed id comes back to its own slot */
    assert_int_equal(gw_fleet_join(&e.f, "g-127.0.0.3-8000", "http://127.0.0.3:8000", &e.tmpl), b);
    assert_true(gw_replica_member(&e.f.replicas[b]));
    assert_int_equal(candidates(&e), 3);
    /* the same id under another base path (a reload changed its group's url): a new
     * slot with the new url, the old one left to finish */
    gw_fleet_leave(&e.f, (uint32_t)b);
    int d = gw_fleet_join(&e.f, "g-127.0.0.3-8000", "http://127.0.0.3:8000/v2", &e.tmpl);
    assert_true(d >= 0 && d != b);
    assert_string_equal(e.f.replicas[d].url.path, "/v2");
    assert_false(gw_replica_member(&e.f.replicas[b]));
    assert_int_equal(gw_fleet_join(&e.f, "g-127.0.0.3-8000", "http://127.0.0.3:8000/v2", &e.tmpl),
                     d);
    assert_int_equal(other_calls, hook_joined + hook_left);
    /* one that stops listening is told nothing more */
    gw_fleet_unlisten(&e.f, on_other, &e);
    int before = other_calls;
    gw_fleet_leave(&e.f, 0);
    gw_fleet_join(&e.f, "g-127.0.0.9-8000", "http://127.0.0.9:8000", &e.tmpl);
    assert_int_equal(other_calls, before);
    teardown_env(&e);
}

/* A replica that leaves and comes back to its slot starts afresh in every model's
 * policy (replica_removed, replica_added): SGLang's policy no longer matches the
 * text it sent there before. */
static void policies_hear_of_members(void **state) {
    env e;
    setup_env(&e, "models: [{name: m, policy: sglang_cache_aware}]\n"
                  "discovery:\n"
                  "  dns: [{name: g, url: \"http://pool.test:8000\"}]\n");
    int a = gw_fleet_join(&e.f, "g-127.0.0.2-8000", "http://127.0.0.2:8000", &e.tmpl);
    int b = gw_fleet_join(&e.f, "g-127.0.0.3-8000", "http://127.0.0.3:8000", &e.tmpl);
    irp_policy *p = atomic_load(&e.f.models[0].policy);
    assert_non_null(p);
    const char *text = "You are a helpful assistant. Answer briefly and cite sources.";
    ir_rng rng;
    ir_rng_seed(&rng, 1);
    irp_request q = {.prompt_tokens = 16, .rng = &rng, .text = text, .text_len = strlen(text)};
    irp_request part = q;
    part.text_len = 30; /* half of it on a: above SGLang's 0.3 match threshold */
    irp_policy_assigned(p, (uint32_t)a, &part);
    irp_policy_assigned(p, (uint32_t)b, &q);
    irp_candidate c[GW_MAX_REPLICAS];
    size_t healthy;
    size_t n = gw_fleet_candidates(&e.f, 0, ir_now_ns(), true, NULL, c, &healthy);
    assert_int_equal(n, 2);
    assert_int_equal(c[irp_choose(p, &q, c, n)].replica, (uint32_t)b); /* the longest match */
    gw_fleet_leave(&e.f, (uint32_t)b);
    assert_int_equal(gw_fleet_join(&e.f, "g-127.0.0.3-8000", "http://127.0.0.3:8000", &e.tmpl), b);
    n = gw_fleet_candidates(&e.f, 0, ir_now_ns(), true, NULL, c, &healthy);
    assert_int_equal(n, 2);
    for (int i = 0; i < 20; i++) assert_int_equal(c[irp_choose(p, &q, c, n)].replica, (uint32_t)a);
    teardown_env(&e);
}

static void full_fleet_and_quarantine(void **state) {
    env e;
    setup_env(&e, conf_text);
    char id[64], url[64];
    for (int i = 0; i < GW_MAX_REPLICAS; i++) {
        snprintf(id, sizeof id, "g-10.0.%d.%d-80", i / 256, i % 256);
        snprintf(url, sizeof url, "http://10.0.%d.%d:80", i / 256, i % 256);
        assert_int_equal(gw_fleet_join(&e.f, id, url, &e.tmpl), i);
    }
    assert_int_equal(gw_fleet_join(&e.f, "g-127.9.9.9-80", "http://127.9.9.9:80", &e.tmpl), -1);
    gw_fleet_leave(&e.f, 7);
    /* still in quarantine: no room */
    assert_int_equal(gw_fleet_join(&e.f, "g-127.9.9.9-80", "http://127.9.9.9:80", &e.tmpl), -1);
    atomic_store(&e.f.replicas[7].left_at, ir_now_ns() - GW_SLOT_QUARANTINE_NS - 1);
    atomic_store(&e.f.replicas[7].in_flight, 1); /* a request still runs on it */
    assert_int_equal(gw_fleet_join(&e.f, "g-127.9.9.9-80", "http://127.9.9.9:80", &e.tmpl), -1);
    atomic_store(&e.f.replicas[7].in_flight, 0);
    assert_int_equal(gw_fleet_join(&e.f, "g-127.9.9.9-80", "http://127.9.9.9:80", &e.tmpl), 7);
    assert_string_equal(e.f.replicas[7].cfg->id, "g-127.9.9.9-80");
    assert_int_equal(atomic_load(&e.f.replicas[7].requests), 0);
    teardown_env(&e);
}

typedef struct race {
    env *e;
    _Atomic int stop;
    _Atomic uint64_t bad;
} race;

static void *reader(void *arg) {
    race *r = arg;
    while (!atomic_load(&r->stop)) {
        irp_candidate out[GW_MAX_REPLICAS];
        size_t healthy;
        size_t n = gw_fleet_candidates(&r->e->f, 0, ir_now_ns(), true, NULL, out, &healthy);
        for (size_t i = 0; i < n; i++) {
            const gw_replica *rep = &r->e->f.replicas[out[i].replica];
            if (strncmp(rep->cfg->id, "g-", 2) != 0) atomic_fetch_add(&r->bad, 1);
        }
    }
    return NULL;
}

static void readers_race_membership(void **state) {
    env e;
    setup_env(&e, conf_text);
    race r = {.e = &e};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, reader, &r), 0);
    for (int round = 0; round < 2000; round++) {
        char id[64], url[64];
        int i = round % 16;
        snprintf(id, sizeof id, "g-127.0.1.%d-80", i);
        snprintf(url, sizeof url, "http://127.0.1.%d:80", i);
        int slot = gw_fleet_join(&e.f, id, url, &e.tmpl);
        assert_true(slot >= 0);
        if (round % 3) gw_fleet_leave(&e.f, (uint32_t)slot);
    }
    atomic_store(&r.stop, 1);
    pthread_join(t, NULL);
    assert_int_equal(atomic_load(&r.bad), 0);
    assert_true(e.f.nreplicas <= 16);
    teardown_env(&e);
}

typedef struct ejector {
    gw_fleet *f;
    uint32_t slot;
    pthread_barrier_t *go;
} ejector;

static void *eject_one(void *arg) {
    ejector *e = arg;
    pthread_barrier_wait(e->go);
    for (int i = 0; i < 3; i++) gw_replica_failed(e->f, &e->f->replicas[e->slot], ir_now_ns());
    return NULL;
}

/* Eight workers failing eight replicas at the same moment never eject more than
 * max_ejection_percent (50%) of them together. (Without fleet.eject_mu the window
 * between the count and the ejection is a few instructions wide: this catches an
 * overshoot only now and then, not on every run.) */
static void racing_ejections_stay_capped(void **state) {
    ir_log_set_level(IR_LOG_ERROR); /* 200 ejection warnings otherwise */
    for (int round = 0; round < 50; round++) {
        env e;
        setup_env(
            &e,
            "models: [{name: m}]\n"
            "health: {unhealthy_threshold: 3, max_ejection_percent: 50}\n"
            "replicas:\n"
            "  - {id: a, url: \"http://127.0.0.1:1\"}\n  - {id: b, url: \"http://127.0.0.1:2\"}\n"
            "  - {id: c, url: \"http://127.0.0.1:3\"}\n  - {id: d, url: \"http://127.0.0.1:4\"}\n"
            "  - {id: e, url: \"http://127.0.0.1:5\"}\n  - {id: f, url: \"http://127.0.0.1:6\"}\n"
            "  - {id: g, url: \"http://127.0.0.1:7\"}\n  - {id: h, url: \"http://127.0.0.1:8\"}\n");
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 8);
        pthread_t t[8];
        ejector ej[8];
        for (uint32_t i = 0; i < 8; i++) {
            ej[i] = (ejector){&e.f, i, &go};
            pthread_create(&t[i], NULL, eject_one, &ej[i]);
        }
        for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
        pthread_barrier_destroy(&go);
        uint64_t now = ir_now_ns();
        size_t out = 0;
        for (size_t i = 0; i < 8; i++) out += !gw_replica_available(&e.f.replicas[i], now);
        assert_int_equal(out, 4);
        teardown_env(&e);
    }
}

static void discovery_config_errors(void **state) {
    const char *bad =
        "models: [{name: m}]\n"
        "discovery:\n"
        "  nameservers: [\"nowhere\", \"127.0.0.1:5353\"]\n"
        "  dns:\n"
        "    - {name: \"bad name!\", url: \"http://a:1/v1\", models: [x], refresh: 1ms}\n"
        "    - {name: g, url: \"http://b:1\"}\n"
        "    - {name: g, url: \"http://c:1\", srv: true}\n";
    gw_config c;
    ir_cfg_errors errs = {0};
    ir_cfg *owner = ir_cfg_load_text(bad, strlen(bad), &gw_config_schema, &c, &errs);
    assert_non_null(owner);
    gw_config_check(&c, &errs);
    const char *want[] = {"discovery.dns[0].name",      "discovery.dns[0].url",
                          "discovery.dns[0].models[0]", "discovery.dns[0].refresh",
                          "discovery.dns[2].name",      "discovery.nameservers[0]"};
    for (size_t w = 0; w < IR_ARRAY_LEN(want); w++) {
        bool found = false;
        for (size_t i = 0; i < errs.n && !found; i++) found = strstr(errs.msgs[i], want[w]) != NULL;
        if (!found) fail_msg("no error names %s", want[w]);
    }
    assert_int_equal(errs.n, IR_ARRAY_LEN(want));
    ir_cfg_errors_free(&errs);
    ir_cfg_free(owner);
    /* neither replicas nor groups */
    const char *none = "models: [{name: m}]\n";
    memset(&errs, 0, sizeof errs);
    owner = ir_cfg_load_text(none, strlen(none), &gw_config_schema, &c, &errs);
    assert_non_null(owner);
    gw_config_check(&c, &errs);
    assert_int_equal(errs.n, 1);
    assert_non_null(strstr(errs.msgs[0], "replicas: at least one replica"));
    ir_cfg_errors_free(&errs);
    ir_cfg_free(owner);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(join_leave_rejoin),       cmocka_unit_test(full_fleet_and_quarantine),
        cmocka_unit_test(readers_race_membership), cmocka_unit_test(racing_ejections_stay_capped),
        cmocka_unit_test(discovery_config_errors), cmocka_unit_test(policies_hear_of_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
