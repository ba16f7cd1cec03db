/* DNS groups with KV events and data-parallel ranks (discovery_cfg.c, discovery.c,
 * members.c, kvsub.c): the keys parse, bad ones are errors naming their paths; a
 * member's targets get their ids, ranks and endpoints (the member's address, the
 * group's ports plus r); a joining target opens its own KV event stream (the
 * subscriber starting if none ran) and a leaving one closes it; a departed slot is
 * taken back only for the same endpoints. Every endpoint is on loopback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "config_fixture.h"
#include "gateway/gateway.h"

static const char *conf = "models: [{name: m}]\n"
                          "discovery:\n"
                          "  dns:\n"
                          "    - name: plain\n"
                          "      url: \"http://plain.test:8000\"\n"
                          "    - name: vllm\n"
                          "      url: \"http://vllm.test:8000/base\"\n"
                          "      data_parallel_size: 2\n"
                          "      max_concurrency: 5\n"
                          "      kv_events: {port: 5557, replay_port: 5560, topic: kv}\n";

static void keys_parse(void **state) {
    (void)state;
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = fx_load(conf, &c, &e);
    assert_non_null(owner);
    assert_int_equal(e.n, 0);
    const gw_dns_group_cfg *g = c.discovery.dns.items;
    assert_int_equal(g[0].data_parallel_size, 1);
    assert_int_equal(g[0].kv_events.port, 0);
    assert_int_equal(g[0].kv_events.replay_port, 0);
    assert_string_equal(g[0].kv_events.topic, "");
    assert_int_equal(g[1].data_parallel_size, 2);
    assert_int_equal(g[1].kv_events.port, 5557);
    assert_int_equal(g[1].kv_events.replay_port, 5560);
    assert_string_equal(g[1].kv_events.topic, "kv");
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
}

static void errors_name_paths(void **state) {
    (void)state;
    static const struct {
        const char *group, *path;
    } cases[] = {
        {"data_parallel_size: 0", "discovery.dns[0].data_parallel_size"},
        {"data_parallel_size: 65", "discovery.dns[0].data_parallel_size"},
        {"kv_events: {port: 70000}", "discovery.dns[0].kv_events.port"},
        {"kv_events: {port: x}", "discovery.dns[0].kv_events.port"},
        {"kv_events: {replay_port: 5558}", "discovery.dns[0].kv_events.port"},
        {"kv_events: {topic: kv}", "discovery.dns[0].kv_events.port"},
        {"kv_events: {port: 5557, endpoint: \"tcp://h:1\"}", "discovery.dns[0].kv_events"},
        {"data_parallel_size: 4, kv_events: {port: 65533}", "discovery.dns[0].kv_events.port"},
        {"data_parallel_size: 4, kv_events: {port: 5557, replay_port: 65534}",
         "discovery.dns[0].kv_events.replay_port"},
        /* ranks 0..1 publish on 5557, 5558: a replay on 5558 collides */
        {"data_parallel_size: 2, kv_events: {port: 5557, replay_port: 5558}",
         "discovery.dns[0].kv_events.replay_port"},
        {"kv_events: {port: 5557, replay_port: 5557}", "discovery.dns[0].kv_events.replay_port"},
        {"data_parallel_size: 2, kv_events: {port: 5560, replay_port: 5559}",
         "discovery.dns[0].kv_events.replay_port"},
        /* ports from SRV records: in place of a port, not beside it; names well formed */
        {"kv_events: {port: 5557, port_srv: _ev._tcp.g.test}",
         "discovery.dns[0].kv_events.port_srv"},
        {"kv_events: {port_srv: _ev._tcp.g.test, replay_port: 5560, replay_port_srv: "
         "_r._tcp.g.test}",
         "discovery.dns[0].kv_events.replay_port_srv"},
        {"kv_events: {replay_port_srv: _r._tcp.g.test}", "discovery.dns[0].kv_events.port"},
        {"kv_events: {port_srv: \"a..b\"}", "discovery.dns[0].kv_events.port_srv"},
        {"kv_events: {port_srv: \"\"}", "discovery.dns[0].kv_events.port_srv"},
        {"kv_events: {port_srv: \"_ev._tcp.g test\"}", "discovery.dns[0].kv_events.port_srv"},
        {"kv_events: {port: 5557, replay_port_srv: \"tcp://x:1\"}",
         "discovery.dns[0].kv_events.replay_port_srv"},
    };
    char text[512];
    for (size_t i = 0; i < IR_ARRAY_LEN(cases); i++) {
        snprintf(text, sizeof text,
                 "models: [{name: m}]\ndiscovery:\n  dns:\n    - {name: g, url: "
                 "\"http://g.test:1\", %s}\n",
                 cases[i].group);
        fx_expect_error(i, text, cases[i].path);
    }
    /* A group's host is a DNS name c-ares can ask for (a 64-byte label failed at run
     * time only); an address literal is left to c-ares. */
    snprintf(
        text, sizeof text,
        "models: [{name: m}]\ndiscovery:\n  dns:\n    - {name: g, url: \"http://%s.test:1\"}\n",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    fx_expect_error(100, text, "discovery.dns[0].url");
    for (int k = 0; k < 2; k++) {
        snprintf(text, sizeof text,
                 "models: [{name: m}]\ndiscovery:\n  dns:\n    - {name: g, url: \"http://%s:1\"}\n",
                 k ? "[::1]" : "127.0.0.1");
        gw_config c;
        ir_cfg_errors e;
        ir_cfg *owner = fx_load(text, &c, &e);
        assert_int_equal(e.n, 0);
        ir_cfg_free(owner);
        ir_cfg_errors_free(&e);
    }
    /* The name leaves room for /dp<N-1>: 18 bytes fit alone, not with 10 ranks. */
    const char *name18 = "abcdefghijklmnopqr";
    for (int dp = 1; dp <= 10; dp += 9) {
        snprintf(text, sizeof text,
                 "models: [{name: m}]\ndiscovery:\n  dns:\n    - {name: %s, url: "
                 "\"http://g.test:1\", data_parallel_size: %d}\n",
                 name18, dp);
        gw_config c;
        ir_cfg_errors e;
        ir_cfg *owner = fx_load(text, &c, &e);
        if (dp == 1)
            assert_int_equal(e.n, 0);
        else
            assert_true(fx_has_error(&e, "discovery.dns[0].name: must be 1 to 14"));
        ir_cfg_free(owner);
        ir_cfg_errors_free(&e);
    }
}

/* kv_events' ports from SRV records: the names parse, alone or beside the other
 * socket's fixed port, and count as following events. */
static void srv_keys_parse(void **state) {
    (void)state;
    static const char *text =
        "models: [{name: m}]\n"
        "discovery:\n"
        "  dns:\n"
        "    - name: a\n"
        "      url: \"http://vllm.ns.svc:8000\"\n"
        "      kv_events: {port_srv: _kv-events._tcp.vllm.ns.svc, replay_port_srv: "
        "_kv-replay._tcp.vllm.ns.svc.}\n"
        "    - name: b\n"
        "      url: \"http://vllm.ns.svc:8000\"\n"
        "      data_parallel_size: 2\n"
        "      kv_events: {port_srv: _kv-events._tcp.vllm.ns.svc, replay_port: 5560}\n"
        "    - name: c\n"
        "      url: \"http://vllm.ns.svc:8000\"\n";
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = fx_load(text, &c, &e);
    assert_non_null(owner);
    assert_int_equal(e.n, 0);
    const gw_dns_group_cfg *g = c.discovery.dns.items;
    assert_int_equal(g[0].kv_events.port, 0);
    assert_string_equal(g[0].kv_events.port_srv, "_kv-events._tcp.vllm.ns.svc");
    assert_string_equal(g[0].kv_events.replay_port_srv, "_kv-replay._tcp.vllm.ns.svc.");
    assert_true(gw_dns_wants_events(&g[0].kv_events));
    assert_string_equal(g[1].kv_events.port_srv, "_kv-events._tcp.vllm.ns.svc");
    assert_null(g[1].kv_events.replay_port_srv);
    assert_int_equal(g[1].kv_events.replay_port, 5560);
    assert_true(gw_dns_wants_events(&g[1].kv_events));
    assert_null(g[2].kv_events.port_srv);
    assert_false(gw_dns_wants_events(&g[2].kv_events));
    /* A member's own ports (as SRV records give them) make its endpoints, plus r. */
    gw_dns_target_cfg t;
    assert_int_equal(gw_dns_target_ports(&g[1], "", "10.1.2.3", 8000, 1, 6000, 6100, &t), 0);
    assert_string_equal(t.id, "b-10.1.2.3-8000/dp1");
    assert_string_equal(t.cfg.kv_events.endpoint, "tcp://10.1.2.3:6001");
    assert_string_equal(t.cfg.kv_events.replay_endpoint, "tcp://10.1.2.3:6101");
    assert_int_equal(gw_dns_target_ports(&g[1], "", "fd00::7", 8000, 0, 6000, 0, &t), 0);
    assert_string_equal(t.cfg.kv_events.endpoint, "tcp://[fd00::7]:6000");
    assert_null(t.cfg.kv_events.replay_endpoint);
    /* no port found for it: no events (a replay port alone is none) */
    assert_int_equal(gw_dns_target_ports(&g[0], "", "10.1.2.3", 8000, 0, 0, 6100, &t), 0);
    assert_null(t.cfg.kv_events.endpoint);
    assert_null(t.cfg.kv_events.replay_endpoint);
    /* a port whose last rank passes 65535 cannot be a target's */
    assert_int_equal(gw_dns_target_ports(&g[1], "", "10.1.2.3", 8000, 1, 65535, 0, &t), -1);
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
}

static void targets(void **state) {
    (void)state;
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = fx_load(conf, &c, &e);
    assert_non_null(owner);
    const gw_dns_group_cfg *g = c.discovery.dns.items;
    gw_dns_target_cfg t;
    /* No ranks, no events: one target, the member itself. */
    assert_int_equal(gw_dns_target(&g[0], "", "127.0.0.2", 8000, 0, &t), 0);
    assert_string_equal(t.id, "plain-127.0.0.2-8000");
    assert_string_equal(t.url, "http://127.0.0.2:8000");
    assert_false(t.cfg.dp_target);
    assert_null(t.cfg.kv_events.endpoint);
    assert_null(t.cfg.kv_events.replay_endpoint);
    assert_int_equal(gw_dns_target(&g[0], "", "127.0.0.2", 8000, 1, &t), -1);
    /* Two ranks with events: each its id, rank and ports plus r on the member's address. */
    for (int r = 0; r < 2; r++) {
        char id[64], ep[64], rep[64];
        assert_int_equal(gw_dns_target(&g[1], "/base", "127.0.0.3", 8000, r, &t), 0);
        snprintf(id, sizeof id, "vllm-127.0.0.3-8000/dp%d", r);
        snprintf(ep, sizeof ep, "tcp://127.0.0.3:%d", 5557 + r);
        snprintf(rep, sizeof rep, "tcp://127.0.0.3:%d", 5560 + r);
        assert_string_equal(t.id, id);
        assert_string_equal(t.cfg.id, id);
        assert_string_equal(t.url, "http://127.0.0.3:8000/base");
        assert_true(t.cfg.dp_target);
        assert_int_equal(t.cfg.dp_rank, r);
        assert_string_equal(t.cfg.kv_events.endpoint, ep);
        assert_string_equal(t.cfg.kv_events.replay_endpoint, rep);
        assert_string_equal(t.cfg.kv_events.topic, "kv");
        assert_int_equal(t.cfg.max_concurrency, 5);
    }
    assert_int_equal(gw_dns_target(&g[1], "", "127.0.0.3", 8000, 2, &t), -1);
    /* IPv6 members: brackets in the url and the endpoints. */
    assert_int_equal(gw_dns_target(&g[1], "", "::1", 8000, 1, &t), 0);
    assert_string_equal(t.id, "vllm-::1-8000/dp1");
    assert_string_equal(t.url, "http://[::1]:8000");
    assert_string_equal(t.cfg.kv_events.endpoint, "tcp://[::1]:5558");
    /* The longest IPv6 address still fits. */
    assert_int_equal(
        gw_dns_target(&g[1], "", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 65535, 1, &t), 0);
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Until slot's stream is open (want) or closed, within 5 s. */
static bool stream_is(gw_fleet *f, int slot, bool want) {
    for (int i = 0; i < 500; i++) {
        if ((gw_kvsub_replica(f, (uint32_t)slot) != NULL) == want) return true;
        sleep_ms(10);
    }
    return false;
}

/* A fleet from fleet_text; the targets of conf's groups join and leave it as
 * discovery makes them (conf's strings outlive them). started: the fleet has a
 * subscriber before any member joins. */
static void streams_follow_members(const char *fleet_text, bool started) {
    gw_config c, gc;
    ir_cfg_errors e, ge;
    ir_cfg *owner = fx_load(fleet_text, &c, &e), *gowner = fx_load(conf, &gc, &ge);
    assert_non_null(owner);
    assert_non_null(gowner);
    assert_int_equal(e.n, 0);
    gw_fleet f;
    char err[256];
    assert_int_equal(gw_fleet_init(&f, &c, err, sizeof err), 0);
    assert_int_equal(atomic_load(&f.kvsub) != NULL, started);
    const gw_dns_group_cfg *groups = gc.discovery.dns.items, *g = &groups[1];
    gw_dns_target_cfg t0, t1;
    assert_int_equal(gw_dns_target(g, "", "127.0.0.2", 8000, 0, &t0), 0);
    assert_int_equal(gw_dns_target(g, "", "127.0.0.2", 8000, 1, &t1), 0);
    int a = gw_fleet_join(&f, t0.id, t0.url, &t0.cfg);
    int b = gw_fleet_join(&f, t1.id, t1.url, &t1.cfg);
    assert_true(a >= 0 && b >= 0 && a != b);
    /* the slot keeps its own copies of the endpoints */
    memset(t1.events, 0, sizeof t1.events);
    assert_string_equal(f.replicas[b].cfg->kv_events.endpoint, "tcp://127.0.0.2:5558");
    assert_string_equal(f.replicas[b].cfg->kv_events.replay_endpoint, "tcp://127.0.0.2:5561");
    assert_non_null(atomic_load(&f.kvsub)); /* started for them when none ran */
    assert_true(stream_is(&f, a, true));
    assert_true(stream_is(&f, b, true));
    int src = gw_index_source(&f, (uint32_t)a);
    assert_true(src == GW_KV_SOURCE_EVENTS || src == GW_KV_SOURCE_STALE); /* nobody publishes */
    /* a member without events has no stream */
    gw_dns_target_cfg p;
    assert_int_equal(gw_dns_target(&groups[0], "", "127.0.0.4", 8000, 0, &p), 0);
    int q = gw_fleet_join(&f, p.id, p.url, &p.cfg);
    assert_true(q >= 0);
    sleep_ms(150);
    assert_null(gw_kvsub_replica(&f, (uint32_t)q));
    assert_int_equal(gw_index_source(&f, (uint32_t)q), GW_KV_SOURCE_APPROX);
    /* rank 1 leaves: its stream closes, rank 0's stays */
    gw_fleet_leave(&f, (uint32_t)b);
    assert_true(stream_is(&f, b, false));
    assert_non_null(gw_kvsub_replica(&f, (uint32_t)a));
    /* it comes back with the same endpoints: its own slot, a stream again */
    gw_dns_target_cfg again;
    assert_int_equal(gw_dns_target(g, "", "127.0.0.2", 8000, 1, &again), 0);
    assert_int_equal(gw_fleet_join(&f, again.id, again.url, &again.cfg), b);
    assert_true(stream_is(&f, b, true));
    /* it leaves, and comes back with other endpoints (a reload): a new slot */
    gw_fleet_leave(&f, (uint32_t)b);
    snprintf(again.events[0], sizeof again.events[0], "tcp://127.0.0.2:6001");
    int b2 = gw_fleet_join(&f, again.id, again.url, &again.cfg);
    assert_true(b2 >= 0 && b2 != b);
    assert_true(stream_is(&f, b2, true));
    assert_true(stream_is(&f, b, false));
    assert_string_equal(f.replicas[b2].cfg->kv_events.endpoint, "tcp://127.0.0.2:6001");
    gw_fleet_leave(&f, (uint32_t)a);
    assert_true(stream_is(&f, a, false));
    gw_fleet_free(&f);
    ir_cfg_free(owner);
    ir_cfg_free(gowner);
    ir_cfg_errors_free(&e);
    ir_cfg_errors_free(&ge);
}

static void streams_open_and_close(void **state) {
    (void)state;
    /* A group with kv_events starts the subscriber with the fleet. */
    streams_follow_members(conf, true);
}

static void subscriber_starts_late(void **state) {
    (void)state;
    /* No events anywhere at start (a reload adds a group's kv_events later): the
     * first member with kv_events starts the subscriber. */
    streams_follow_members("models: [{name: m}]\n"
                           "discovery:\n  dns: [{name: g, url: \"http://g.test:8000\"}]\n",
                           false);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keys_parse),
        cmocka_unit_test(errors_name_paths),
        cmocka_unit_test(srv_keys_parse),
        cmocka_unit_test(targets),
        cmocka_unit_test(streams_open_and_close),
        cmocka_unit_test(subscriber_starts_late),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
