/* The gateway's metrics (metrics.c): the page of a fresh fleet, what the collect hook
 * reads from the fleet, and a replica that leaves taking its series off the page. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gateway/gateway.h"
#include "obs/ir_obs.h"

static gw_app *app_of(const char *text) {
    gw_app *app = calloc(1, sizeof *app);
    ir_cfg_errors e = {0};
    app->cfg_owner = ir_cfg_load_text(text, strlen(text), &gw_config_schema, &app->cfg, &e);
    assert_non_null(app->cfg_owner);
    char err[256];
    assert_int_equal(gw_fleet_init(&app->fleet, &app->cfg, err, sizeof err), 0);
    assert_int_equal(gw_metrics_init(app), 0);
    return app;
}

static void app_free(gw_app *app) {
    gw_metrics_free(app);
    gw_fleet_free(&app->fleet);
    ir_cfg_free(app->cfg_owner);
    free(app);
}

static void page_and_leave(void **state) {
    gw_app *app = app_of("models: [{name: m-a}, {name: m-b}]\n"
                         "replicas:\n"
                         "  - {id: r0, url: \"http://h:1\", models: [m-a]}\n"
                         "  - {id: r1, url: \"http://h:2\"}\n");
    atomic_store(&app->fleet.replicas[1].in_flight, 7);
    atomic_store(&app->fleet.replicas[1].ejections_total, 2);
    ir_buf b;
    ir_buf_init(&b, 0);
    assert_int_equal(gw_metrics_render(app, &b), 0);
    /* r0 serves m-a only; r1 both */
    assert_non_null(strstr(b.data, "inferrail_requests_total{model=\"m-a\",replica=\"r0\","
                                   "status=\"cancelled\"} 0\n"));
    assert_null(strstr(b.data, "model=\"m-b\",replica=\"r0\""));
    assert_non_null(strstr(b.data, "inferrail_requests_total{model=\"m-b\",replica=\"r1\","
                                   "status=\"aborted\"} 0\n"));
    assert_non_null(strstr(b.data, "inferrail_replica_in_flight{replica=\"r1\"} 7\n"));
    assert_non_null(strstr(b.data, "inferrail_ejections_total{replica=\"r1\"} 2\n"));
    assert_non_null(strstr(b.data, "# TYPE inferrail_ttft_seconds histogram\n"));
    assert_non_null(strstr(b.data,
                           "inferrail_ttft_seconds_bucket{model=\"m-a\",policy=\"round_robin\","
                           "replica=\"r0\",le=\"+Inf\"} 0\n"));
    assert_non_null(strstr(b.data, "inferrail_upstream_retries_total{model=\"m-b\"} 0\n"));
    /* r1 leaves the fleet (the membership hook takes its series off): none of its
     * series stays, r0's do */
    gw_fleet_leave(&app->fleet, 1);
    ir_buf_reset(&b);
    assert_int_equal(gw_metrics_render(app, &b), 0);
    assert_null(strstr(b.data, "replica=\"r1\""));
    assert_non_null(strstr(b.data, "inferrail_replica_in_flight{replica=\"r0\"} 0\n"));
    /* and comes back by the same id (as DNS members do): its series again, from zero */
    gw_metrics_replica_free(&app->fleet.replicas[1]);
    assert_int_equal(gw_metrics_replica_join(app, &app->fleet.replicas[1]), 0);
    atomic_store(&app->fleet.replicas[1].ejections_total, 0);
    ir_buf_reset(&b);
    assert_int_equal(gw_metrics_render(app, &b), 0);
    assert_non_null(strstr(b.data, "inferrail_requests_total{model=\"m-b\",replica=\"r1\","
                                   "status=\"2xx\"} 0\n"));
    assert_non_null(strstr(b.data, "inferrail_replica_in_flight{replica=\"r1\"} 7\n"));
    ir_buf_free(&b);
    app_free(app);
}

static void state_json(void **state) {
    gw_app *app = app_of("models: [{name: m}]\n"
                         "replicas:\n"
                         "  - {id: r0, url: \"http://h:1\"}\n");
    ir_buf b;
    ir_buf_init(&b, 0);
    gw_state_render(app, &b);
    json_error_t err;
    json_t *j = json_loadb(b.data, b.len, 0, &err);
    assert_non_null(j);
    json_t *r = json_array_get(json_object_get(j, "replicas"), 0);
    assert_string_equal(json_string_value(json_object_get(r, "id")), "r0");
    assert_true(json_is_object(json_object_get(r, "outcomes")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "outcomes"), "2xx")), 0);
    json_t *buckets = json_object_get(json_object_get(r, "ttft"), "buckets");
    assert_int_equal(json_array_size(buckets), iro_latency_nbuckets + 1);
    assert_true(
        json_is_null(json_array_get(json_array_get(buckets, json_array_size(buckets) - 1), 0)));
    /* no engine report yet: the engine object says so */
    json_t *eng = json_object_get(r, "engine");
    assert_true(json_is_object(eng));
    assert_true(json_is_null(json_object_get(eng, "age_ms")));
    assert_true(json_is_false(json_object_get(eng, "fresh")));
    json_t *m = json_array_get(json_object_get(j, "models"), 0);
    assert_string_equal(json_string_value(json_object_get(m, "policy")), "round_robin");
    json_decref(j);
    ir_buf_free(&b);
    app_free(app);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(page_and_leave),
        cmocka_unit_test(state_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
