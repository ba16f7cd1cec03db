/* Issue 12: --check reports field errors and cross-checks in one pass, replica
 * ids are restricted, a /v1 base URL and meaningless zeros are refused, the
 * admin port cannot be the client port, label values are escaped, and
 * readiness follows drain and replica health. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/gateway.h"

/* Loads text through a file, as --check does; returns the errors. */
static ir_cfg_errors load_errors(const char *text) {
    char path[] = "/tmp/ir-test-ops-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    gw_config c;
    ir_cfg_errors e = {0};
    ir_cfg *owner = gw_config_load(path, &c, &e);
    unlink(path);
    ir_cfg_free(owner);
    return e;
}

static void expect(const ir_cfg_errors *e, const char *const *want, size_t n) {
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t k = 0; k < e->n; k++) seen |= strstr(e->msgs[k], want[i]) != NULL;
        if (!seen) {
            for (size_t k = 0; k < e->n; k++) fprintf(stderr, "  got: %s\n", e->msgs[k]);
            fail_msg("no error containing '%s'", want[i]);
        }
    }
}

static void every_problem_in_one_pass(void **state) {
    ir_cfg_errors e = load_errors("server: {workers: -1}\n"
                                  "models:\n"
                                  "  - name: m\n"
                                  "replicas:\n"
                                  "  - {id: r0, url: \"http://h:1\", models: [nope]}\n"
                                  "  - {id: r0, url: \"http://h:2\"}\n");
    const char *want[] = {"server.workers", "replicas[1].id: 'r0' is used by replicas[0]",
                          "replicas[0].models[0]: 'nope' is not a configured model"};
    expect(&e, want, IR_ARRAY_LEN(want));
    ir_cfg_errors_free(&e);
}

static void replica_ids_are_plain(void **state) {
    assert_true(gw_replica_id_ok("gpu-0.a_b:1"));
    assert_false(gw_replica_id_ok("gpu 0 \"a\""));
    assert_false(gw_replica_id_ok("a\nb"));
    assert_false(gw_replica_id_ok(""));
    char longid[GW_REPLICA_ID_MAX + 2];
    memset(longid, 'a', sizeof longid - 1);
    longid[sizeof longid - 1] = '\0';
    assert_false(gw_replica_id_ok(longid));
    ir_cfg_errors e = load_errors("models: [{name: m}]\n"
                                  "replicas:\n"
                                  "  - {id: \"gpu 0 \\\"a\\\"\", url: \"http://h:1\"}\n");
    const char *want[] = {"replicas[0].id: must be 1 to 64 of"};
    expect(&e, want, 1);
    ir_cfg_errors_free(&e);
}

static void urls_ports_and_zeros(void **state) {
    ir_cfg_errors e = load_errors("server:\n"
                                  "  listen: 0.0.0.0:8080\n"
                                  "  admin_listen: 127.0.0.1:8080\n"
                                  "  request_timeout: 0s\n"
                                  "  max_body_bytes: 0\n"
                                  "health: {interval: 0ms}\n"
                                  "models: [{name: m}]\n"
                                  "replicas:\n"
                                  "  - {id: r0, url: \"http://h:1/v1\"}\n"
                                  "  - {id: r1, url: \"http://h:1/engine-a\"}\n");
    const char *want[] = {"replicas[0].url: 'http://h:1/v1' ends in /v1",
                          "server.admin_listen: '127.0.0.1:8080' overlaps",
                          "server.request_timeout: must be greater than 0",
                          "server.max_body_bytes: must be greater than 0",
                          "health.interval: must be greater than 0"};
    expect(&e, want, IR_ARRAY_LEN(want));
    for (size_t k = 0; k < e.n; k++) assert_null(strstr(e.msgs[k], "replicas[1].url"));
    assert_int_equal(e.n, IR_ARRAY_LEN(want));
    ir_cfg_errors_free(&e);
}

static void kv_events_config(void **state) {
    (void)state;
    ir_cfg_errors e = load_errors(
        "models: [{name: m}]\n"
        "replicas:\n"
        "  - {id: r0, url: \"http://h:1\", kv_events: {endpoint: \"tcp://*:5557\"}}\n"
        "  - {id: r1, url: \"http://h:2\", kv_events: {replay_endpoint: \"tcp://h:5558\"}}\n"
        "  - {id: r2, url: \"http://h:3\", kv_events: {endpoint: \"tcp://h:99999\", "
        "replay_endpoint: \"http://h:1\"}}\n"
        "  - {id: r3, url: \"http://h:4\", kv_events: {endpoint: \"tcp://h:5557\", "
        "replay_endpoint: \"tcp://h:5558\", topic: kv}}\n"
        "  - {id: r4, url: \"http://h:5\", kv_events: {endpont: \"tcp://h:5557\"}}\n");
    const char *want[] = {"replicas[0].kv_events.endpoint: 'tcp://*:5557' is not",
                          "replicas[1].kv_events.replay_endpoint: needs kv_events.endpoint",
                          "replicas[2].kv_events.endpoint: 'tcp://h:99999' is not",
                          "replicas[2].kv_events.replay_endpoint: 'http://h:1' is not",
                          "replicas[4].kv_events.endpont"};
    expect(&e, want, IR_ARRAY_LEN(want));
    for (size_t k = 0; k < e.n; k++) assert_null(strstr(e.msgs[k], "replicas[3]"));
    assert_int_equal(e.n, IR_ARRAY_LEN(want));
    ir_cfg_errors_free(&e);
}

static void readiness(void **state) {
    const char *text = "models: [{name: m-a}, {name: m-b}]\n"
                       "replicas:\n"
                       "  - {id: r0, url: \"http://h:1\", models: [m-a]}\n"
                       "  - {id: r1, url: \"http://h:2\", models: [m-b]}\n";
    gw_app *app = calloc(1, sizeof *app);
    ir_cfg_errors e = {0};
    app->cfg_owner = ir_cfg_load_text(text, strlen(text), &gw_config_schema, &app->cfg, &e);
    assert_non_null(app->cfg_owner);
    char err[256];
    assert_int_equal(gw_fleet_init(&app->fleet, &app->cfg, err, sizeof err), 0);
    uint64_t now = ir_now_ns();
    ir_buf b;
    ir_buf_init(&b, 0);
    assert_true(gw_app_ready(app, now, &b));
    ir_buf_reset(&b);
    atomic_store(&app->fleet.replicas[1].healthy, 0);
    assert_false(gw_app_ready(app, now, &b));
    assert_memory_equal(
        b.data, "{\"ready\":false,\"reason\":\"no healthy replica\",\"models\":[\"m-b\"]}", b.len);
    atomic_store(&app->fleet.replicas[1].healthy, 1);
    atomic_store(&app->stopping, 1);
    ir_buf_reset(&b);
    assert_false(gw_app_ready(app, now, &b));
    assert_non_null(memmem(b.data, b.len, "draining", 8));
    ir_buf_free(&b);
    gw_fleet_free(&app->fleet);
    ir_cfg_free(app->cfg_owner);
    free(app);
}

static const irn_header *find(const irn_header *h, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(h[i].name, name) == 0) return &h[i];
    return NULL;
}

static void upstream_headers(void **state) {
    const char *text =
        "models: [{name: m}]\n"
        "upstream: {x_forwarded_for: true}\n"
        "replicas:\n"
        "  - {id: r0, url: \"http://h:1\", headers: {Authorization: \"Bearer k0\"}}\n"
        "  - {id: r1, url: \"http://h:2\"}\n";
    gw_app *app = calloc(1, sizeof *app);
    ir_cfg_errors e = {0};
    app->cfg_owner = ir_cfg_load_text(text, strlen(text), &gw_config_schema, &app->cfg, &e);
    assert_non_null(app->cfg_owner);
    gw_config_check(&app->cfg, &e);
    assert_int_equal(e.n, 0);
    char err[256];
    assert_int_equal(gw_fleet_init(&app->fleet, &app->cfg, err, sizeof err), 0);
    irn_header in[] = {{"authorization", 13, "Bearer client", 13},
                       {"x-forwarded-for", 15, "10.0.0.1", 8},
                       {"accept", 6, "*/*", 3}};
    irn_request req;
    memset(&req, 0, sizeof req);
    req.headers = in;
    req.nheaders = 3;
    req.peer = "192.0.2.7:5555";
    req.arena = ir_arena_new(4096, 1 << 20);
    size_t n;
    const irn_header *h = gw_upstream_headers(app, &app->fleet.replicas[0], &req, in, 3, &n);
    assert_int_equal(n, 3);
    const irn_header *a = find(h, n, "Authorization");
    assert_non_null(a);
    assert_string_equal(a->value, "Bearer k0");
    assert_null(find(h, n, "authorization"));
    assert_string_equal(find(h, n, "x-forwarded-for")->value, "10.0.0.1, 192.0.2.7");
    /* r1 has no headers of its own: the client's Authorization passes through. */
    h = gw_upstream_headers(app, &app->fleet.replicas[1], &req, in, 3, &n);
    assert_string_equal(find(h, n, "authorization")->value, "Bearer client");
    ir_arena_free(req.arena);
    gw_fleet_free(&app->fleet);
    ir_cfg_free(app->cfg_owner);
    free(app);
    /* Names the gateway owns, and line breaks, are refused. */
    e = load_errors("models: [{name: m}]\n"
                    "replicas:\n"
                    "  - {id: r0, url: \"http://h:1\", headers: {Host: x, \"a b\": y, "
                    "X-Key: \"a\\nb\", X-N: 5}}\n");
    const char *want[] = {"headers.Host: set by the gateway", "'a b' is not a header name",
                          "headers.X-Key: no line breaks", "headers.X-N: must be a string"};
    expect(&e, want, IR_ARRAY_LEN(want));
    ir_cfg_errors_free(&e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_problem_in_one_pass),
        cmocka_unit_test(replica_ids_are_plain),
        cmocka_unit_test(urls_ports_and_zeros),
        cmocka_unit_test(kv_events_config),
        cmocka_unit_test(readiness),
        cmocka_unit_test(upstream_headers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
