/* Data-parallel replicas (dp.c): data_parallel_size N expands a replica into N
 * routing targets <id>/dp<r>, in its place and in rank order, with kv_events ports
 * plus r and the X-data-parallel-rank header; bad sizes, ids, endpoints and counts
 * are config errors naming their key paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "config_fixture.h"
#include "gateway/gateway.h"

static const char *conf = "models:\n  - name: m\n"
                          "replicas:\n"
                          "  - {id: a, url: \"http://127.0.0.1:1\"}\n"
                          "  - id: big\n"
                          "    url: \"http://127.0.0.1:2/base\"\n"
                          "    data_parallel_size: 3\n"
                          "    max_concurrency: 7\n"
                          "    headers: {Authorization: Bearer k}\n"
                          "    kv_events: {endpoint: \"tcp://127.0.0.1:5557\", replay_endpoint: "
                          "\"tcp://127.0.0.1:6000\", topic: kv}\n"
                          "  - {id: z, url: \"http://127.0.0.1:3\", data_parallel_size: 1}\n";

static void expands_in_rank_order(void **state) {
    (void)state;
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = fx_load(conf, &c, &e);
    assert_non_null(owner);
    assert_int_equal(e.n, 0);
    assert_int_equal(c.replicas.n, 5);
    const gw_replica_cfg *r = c.replicas.items;
    const char *ids[] = {"a", "big/dp0", "big/dp1", "big/dp2", "z"};
    for (size_t i = 0; i < 5; i++) assert_string_equal(r[i].id, ids[i]);
    assert_false(r[0].dp_target);
    assert_false(r[4].dp_target);
    assert_null(r[0].kv_events.endpoint);
    for (int k = 0; k < 3; k++) {
        const gw_replica_cfg *t = &r[1 + k];
        char ep[64], rep[64];
        snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", 5557 + k);
        snprintf(rep, sizeof rep, "tcp://127.0.0.1:%d", 6000 + k);
        assert_true(t->dp_target);
        assert_int_equal(t->dp_rank, k);
        assert_string_equal(t->kv_events.endpoint, ep);
        assert_string_equal(t->kv_events.replay_endpoint, rep);
        assert_string_equal(t->kv_events.topic, "kv");
        assert_string_equal(t->url, "http://127.0.0.1:2/base");
        assert_int_equal(t->max_concurrency, 7); /* caps are per rank */
    }
    /* The fleet: one slot per target, each pinned by its header after the
     * configured ones. */
    gw_fleet f;
    char err[256];
    assert_int_equal(gw_fleet_init(&f, &c, err, sizeof err), 0);
    assert_int_equal(f.nreplicas, 5);
    assert_int_equal(f.replicas[0].nextra, 0);
    for (int k = 0; k < 3; k++) {
        const gw_replica *t = &f.replicas[1 + k];
        assert_int_equal(t->nextra, 2);
        assert_string_equal(t->extra[0].name, "Authorization");
        assert_memory_equal(t->extra[1].name, "x-data-parallel-rank", t->extra[1].name_len);
        char v[12]; /* room for any int: -O1 sees k's range as int's */
        snprintf(v, sizeof v, "%d", k);
        assert_int_equal(t->extra[1].value_len, strlen(v));
        assert_memory_equal(t->extra[1].value, v, strlen(v));
    }
    gw_fleet_free(&f);
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
}

/* One bad replica per file: each error names its key path. */
static void errors_name_paths(void **state) {
    (void)state;
    char longid[80];
    memset(longid, 'x', 61);
    longid[61] = 0;
    char text[1024];
    struct {
        const char *rep, *path;
    } cases[] = {
        {"{id: r, url: \"http://h:1\", data_parallel_size: 0}", "replicas[0].data_parallel_size"},
        {"{id: r, url: \"http://h:1\", data_parallel_size: 65}", "replicas[0].data_parallel_size"},
        {"{id: r, url: \"http://h:1\", data_parallel_size: two}", "replicas[0].data_parallel_size"},
        {"{id: r, url: \"http://h:1\", data_parallel_size: 2, kv_events: {endpoint: "
         "\"ipc:///tmp/kv\"}}",
         "replicas[0].kv_events.endpoint"},
        {"{id: r, url: \"http://h:1\", data_parallel_size: 2, kv_events: {endpoint: "
         "\"tcp://h:65535\"}}",
         "replicas[0].kv_events.endpoint"},
        {"{id: r, url: \"http://h:1\", data_parallel_size: 4, kv_events: {endpoint: "
         "\"tcp://h:5557\", replay_endpoint: \"tcp://h:65533\"}}",
         "replicas[0].kv_events.replay_endpoint"},
        {"{id: r, url: \"http://h:1\", data_parallel_size: 2, headers: {X-Data-Parallel-Rank: "
         "\"1\"}}",
         "replicas[0].headers"},
        {NULL, "replicas[0].id"}, /* an id whose targets' ids pass 64 bytes */
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(cases); i++) {
        char rep[256];
        if (cases[i].rep)
            snprintf(rep, sizeof rep, "%s", cases[i].rep);
        else
            snprintf(rep, sizeof rep, "{id: %s, url: \"http://h:1\", data_parallel_size: 10}",
                     longid);
        snprintf(text, sizeof text, "models:\n  - name: m\nreplicas:\n  - %s\n", rep);
        fx_expect_error(i, text, cases[i].path);
    }
    /* Too many targets in all: 5 replicas of 64 ranks. */
    size_t n = snprintf(text, sizeof text, "models:\n  - name: m\nreplicas:\n");
    for (int i = 0; i < 5; i++)
        n += snprintf(text + n, sizeof text - n,
                      "  - {id: r%d, url: \"http://h:%d\", data_parallel_size: 64}\n", i, i + 1);
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = fx_load(text, &c, &e);
    assert_true(fx_has_error(&e, "replicas: 320 routing targets"));
    assert_int_equal(c.replicas.n, 5); /* left as it was */
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
}

/* Loads a file with the given replicas (each a flow mapping on its own line). */
static ir_cfg *load_replicas(const char *reps, gw_config *c, ir_cfg_errors *e) {
    static char text[2048];
    snprintf(text, sizeof text, "models:\n  - name: m\nreplicas:\n%s", reps);
    return fx_load(text, c, e);
}

#define EV(id, port, dp, ep, rep)                                                                  \
    "  - {id: " id ", url: \"http://h:" port "\", data_parallel_size: " dp                         \
    ", kv_events: {endpoint: \"" ep "\"" rep "}}\n"

/* Rank r binds its sockets' ports plus r: configured replicas whose sockets would
 * share a port on one host are refused, naming the later key; apart, or on other
 * hosts, they load. */
static void overlapping_event_ports(void **state) {
    (void)state;
    static const struct {
        const char *reps, *path;
    } bad[] = {
        /* two engines on one host, 5557 and 5558, two ranks each: 5558 is both's */
        {EV("a", "1", "2", "tcp://h:5557", "") EV("b", "2", "2", "tcp://h:5558", ""),
         "replicas[1].kv_events.endpoint: 'tcp://h:5558' takes ports 5558..5559 of h"},
        /* the host's case does not matter; one rank meets the other's second */
        {EV("a", "1", "3", "tcp://gpu-0:5557", "") EV("b", "2", "1", "tcp://GPU-0:5559", ""),
         "replicas[1].kv_events.endpoint"},
        /* a replay socket in another engine's publisher ranks */
        {EV("a", "1", "2", "tcp://h:5557", "")
             EV("b", "2", "1", "tcp://h:6000", ", replay_endpoint: \"tcp://h:5558\""),
         "replicas[1].kv_events.replay_endpoint"},
        /* one engine's own replay socket in its publisher's ranks */
        {EV("a", "1", "4", "tcp://h:5557", ", replay_endpoint: \"tcp://h:5560\""),
         "replicas[0].kv_events.replay_endpoint"},
        /* the same endpoint twice */
        {EV("a", "1", "1", "tcp://[::1]:5557", "") EV("b", "2", "1", "tcp://[::1]:5557", ""),
         "replicas[1].kv_events.endpoint"},
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(bad); i++) {
        gw_config c;
        ir_cfg_errors e;
        ir_cfg *owner = load_replicas(bad[i].reps, &c, &e);
        if (!fx_has_error(&e, bad[i].path)) fail_msg("case %zu: no error for %s", i, bad[i].path);
        ir_cfg_free(owner);
        ir_cfg_errors_free(&e);
    }
    static const char *good[] = {
        /* N ports apart, replay sockets past both */
        EV("a", "1", "2", "tcp://h:5557", ", replay_endpoint: \"tcp://h:5600\"")
            EV("b", "2", "2", "tcp://h:5559", ", replay_endpoint: \"tcp://h:5602\""),
        /* the same ports on other hosts, as DNS group members have */
        EV("a", "1", "2", "tcp://10.0.0.1:5557", "") EV("b", "2", "2", "tcp://10.0.0.2:5557", ""),
        /* ipc endpoints have no ports */
        EV("a", "1", "1", "ipc:///tmp/a", "") EV("b", "2", "1", "ipc:///tmp/b", ""),
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(good); i++) {
        gw_config c;
        ir_cfg_errors e;
        ir_cfg *owner = load_replicas(good[i], &c, &e);
        for (size_t k = 0; k < e.n; k++) fprintf(stderr, "  got: %s\n", e.msgs[k]);
        assert_int_equal(e.n, 0);
        ir_cfg_free(owner);
        ir_cfg_errors_free(&e);
    }
}

static void endpoint_offsets(void **state) {
    (void)state;
    char out[64];
    assert_int_equal(gw_dp_endpoint("tcp://h:5557", 0, out, sizeof out), 0);
    assert_string_equal(out, "tcp://h:5557");
    assert_int_equal(gw_dp_endpoint("tcp://[::1]:5557", 3, out, sizeof out), 0);
    assert_string_equal(out, "tcp://[::1]:5560");
    assert_int_equal(gw_dp_endpoint("tcp://h:65534", 1, out, sizeof out), 0);
    assert_string_equal(out, "tcp://h:65535");
    assert_int_equal(gw_dp_endpoint("tcp://h:65535", 1, out, sizeof out), -1);
    assert_int_equal(gw_dp_endpoint("ipc:///tmp/x", 1, out, sizeof out), -1);
    assert_int_equal(gw_dp_endpoint("tcp://h:", 1, out, sizeof out), -1);
    assert_int_equal(gw_dp_endpoint("tcp://h:12x", 1, out, sizeof out), -1);
    assert_int_equal(gw_dp_endpoint("tcp://h:5557", -1, out, sizeof out), -1);
    assert_int_equal(gw_dp_endpoint("tcp://a-long-host-name:5557", 1, out, 12), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(expands_in_rank_order),
        cmocka_unit_test(errors_name_paths),
        cmocka_unit_test(endpoint_offsets),
        cmocka_unit_test(overlapping_event_ports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
