/* The gateway's load signals: load.* config defaults and errors with their
 * paths, the freshness rule the candidates see (a report older than max_age
 * is missing, so the policies fall back to the gateway's own counts), the
 * oldest age a reader saw, and the metrics and state the reports show. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "gateway/gateway.h"

static const char *conf_text = "models:\n"
                               "  - name: m\n"
                               "replicas:\n"
                               "  - {id: r0, url: \"http://127.0.0.1:1\"}\n"
                               "  - {id: r1, url: \"http://127.0.0.1:2\"}\n";

static ir_cfg *load(const char *text, gw_config *c, ir_cfg_errors *e) {
    memset(e, 0, sizeof *e);
    ir_cfg *owner = ir_cfg_load_text(text, strlen(text), &gw_config_schema, c, e);
    if (owner) gw_config_check(c, e);
    return owner;
}

static bool has_error(const ir_cfg_errors *e, const char *needle) {
    for (size_t i = 0; i < e->n; i++)
        if (strstr(e->msgs[i], needle)) return true;
    return false;
}

static void config_defaults(void **st) {
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = load(conf_text, &c, &e);
    assert_non_null(owner);
    assert_int_equal(e.n, 0);
    assert_int_equal(c.load.scrape_interval_ns, 100000000);
    assert_int_equal(c.load.scrape_timeout_ns, 100000000);
    assert_int_equal(c.load.max_age_ns, 250000000);
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
}

static void config_errors(void **st) {
    const struct {
        const char *load, *want;
    } cases[] = {
        {"load: {scrape_interval: 5ms}\n", "load.scrape_interval: at least 10ms"},
        {"load: {max_age: 50ms}\n", "load.max_age: 50 ms is shorter than load.scrape_interval"},
        {"load: {max_age: 0s}\n", "load.max_age: must be greater than 0"},
        {"load: {scrape_timeout: 0s}\n", "load.scrape_timeout: must be greater than 0"},
        {"load: {scrape_timeout: soon}\n", "load.scrape_timeout"},
        {"load: {scrape_intervall: 1s}\n", "load.scrape_intervall"},
        {"observability: {decision_log: {sample_rate: 0.5}}\n",
         "observability.decision_log.path: required when sample_rate is above 0"},
        {"observability: {decision_log: {sample_rate: 2, path: /tmp/x}}\n",
         "observability.decision_log.sample_rate"},
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(cases); i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s", conf_text, cases[i].load);
        gw_config c;
        ir_cfg_errors e;
        ir_cfg *owner = load(text, &c, &e);
        if (!has_error(&e, cases[i].want)) {
            for (size_t k = 0; k < e.n; k++) print_error("  got: %s\n", e.msgs[k]);
            fail_msg("case %zu: no error with '%s'", i, cases[i].want);
        }
        ir_cfg_free(owner);
        ir_cfg_errors_free(&e);
    }
}

typedef struct fixture {
    gw_config c;
    ir_cfg *owner;
    gw_fleet f;
} fixture;

static void fleet_up(fixture *x) {
    ir_cfg_errors e;
    x->owner = load(conf_text, &x->c, &e);
    assert_non_null(x->owner);
    ir_cfg_errors_free(&e);
    char err[256];
    assert_int_equal(gw_fleet_init(&x->f, &x->c, err, sizeof err), 0);
}

static void fleet_down(fixture *x) {
    gw_fleet_free(&x->f);
    ir_cfg_free(x->owner);
}

static void report(gw_replica *r, uint64_t at, uint32_t running, uint32_t waiting, double kv) {
    atomic_store(&r->engine.running, running);
    atomic_store(&r->engine.waiting, waiting);
    atomic_store(&r->engine.kv_usage_ppm, (uint32_t)(kv * 1e6));
    atomic_store(&r->engine.at_ns, at);
}

static void freshness(void **st) {
    fixture x;
    fleet_up(&x);
    uint64_t now = 10ull * 1000000000ull, ms = 1000000;
    irp_candidate c[2];
    size_t healthy;
    /* No report yet: not fresh. */
    assert_int_equal(gw_fleet_candidates(&x.f, 0, now, true, NULL, c, &healthy), 2);
    assert_false(c[0].engine_fresh);
    assert_false(c[1].engine_fresh);
    assert_int_equal(gw_engine_report_age(&x.f.replicas[0], now), UINT64_MAX);
    /* r0 reported 80 ms ago, r1 300 ms ago (past max_age, 250 ms). */
    report(&x.f.replicas[0], now - 80 * ms, 5, 2, 0.5);
    report(&x.f.replicas[1], now - 300 * ms, 9, 9, 0.9);
    assert_int_equal(gw_fleet_candidates(&x.f, 0, now, true, NULL, c, &healthy), 2);
    assert_true(c[0].engine_fresh);
    assert_int_equal(c[0].engine_running, 5);
    assert_int_equal(c[0].engine_waiting, 2);
    assert_true(c[0].engine_kv_usage == 0.5);
    assert_false(c[1].engine_fresh); /* stale: its numbers are not handed out */
    assert_int_equal(c[1].engine_running, 0);
    assert_int_equal(c[1].engine_waiting, 0);
    assert_int_equal(gw_engine_report_age(&x.f.replicas[0], now), 80 * ms);
    /* The oldest age a reader saw, saturated at twice max_age for stale ones. */
    assert_int_equal(atomic_load(&x.f.replicas[0].engine.max_age_seen_ns), 80 * ms);
    assert_int_equal(atomic_load(&x.f.replicas[1].engine.max_age_seen_ns), 300 * ms);
    gw_fleet_candidates(&x.f, 0, now + 10000 * ms, true, NULL, c, &healthy);
    assert_int_equal(atomic_load(&x.f.replicas[1].engine.max_age_seen_ns), 500 * ms);
    assert_false(c[0].engine_fresh);
    /* Exactly max_age is still fresh; one ns more is not. */
    report(&x.f.replicas[0], now - 250 * ms, 1, 1, 0.1);
    gw_fleet_candidates(&x.f, 0, now, true, NULL, c, &healthy);
    assert_true(c[0].engine_fresh);
    gw_fleet_candidates(&x.f, 0, now + 1, true, NULL, c, &healthy);
    assert_false(c[0].engine_fresh);
    fleet_down(&x);
}

static void metrics_and_state(void **st) {
    gw_app *app = calloc(1, sizeof *app);
    assert_non_null(app);
    ir_cfg_errors e;
    app->cfg_owner = load(conf_text, &app->cfg, &e);
    ir_cfg_errors_free(&e);
    char err[256];
    assert_int_equal(gw_fleet_init(&app->fleet, &app->cfg, err, sizeof err), 0);
    report(&app->fleet.replicas[0], ir_now_ns(), 7, 3, 0.25);
    atomic_store(&app->fleet.replicas[0].engine.prefix_hits, 1234);
    assert_int_equal(gw_metrics_init(app), 0);
    ir_buf b;
    ir_buf_init(&b, 0);
    assert_int_equal(gw_metrics_render(app, &b), 0); /* no scraper: its counters read 0 */
    const char *want[] = {
        "inferrail_replica_engine_running{replica=\"r0\"} 7\n",
        "inferrail_replica_engine_waiting{replica=\"r0\"} 3\n",
        "inferrail_replica_engine_kv_usage{replica=\"r0\"} 0.25\n",
        "inferrail_replica_engine_prefix_cache_hits_total{replica=\"r0\"} 1234\n",
        "inferrail_replica_engine_fresh{replica=\"r0\"} 1\n",
        "inferrail_replica_engine_fresh{replica=\"r1\"} 0\n",
        "inferrail_replica_report_age_seconds{replica=\"r1\"} +Inf\n",
        "# TYPE inferrail_replica_engine_prefix_cache_queries_total counter\n",
        "inferrail_load_scrapes_total{replica=\"r1\",result=\"unreadable\"} 0\n",
        "inferrail_decision_log_records_total{result=\"dropped\"} 0\n",
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(want); i++)
        if (!strstr(b.data, want[i])) fail_msg("missing: %s\n%s", want[i], b.data);
    /* one registry: each family has one HELP */
    assert_null(strstr(strstr(b.data, "# HELP inferrail_replica_engine_running ") + 1,
                       "# HELP inferrail_replica_engine_running "));
    /* r1 leaves: none of its engine series stays, and the hook makes none again */
    gw_fleet_leave(&app->fleet, 1);
    for (int k = 0; k < 2; k++) {
        ir_buf_reset(&b);
        assert_int_equal(gw_metrics_render(app, &b), 0);
        assert_null(strstr(b.data, "replica=\"r1\""));
        assert_non_null(strstr(b.data, "inferrail_replica_engine_running{replica=\"r0\"} 7\n"));
    }
    ir_buf_reset(&b);
    gw_engine_state_json(app, &app->fleet.replicas[1], ir_now_ns(), &b);
    assert_non_null(strstr(b.data, "\"engine\":{\"age_ms\":null,\"fresh\":false"));
    ir_buf_reset(&b);
    gw_engine_state_json(app, &app->fleet.replicas[0], ir_now_ns(), &b);
    assert_non_null(strstr(b.data, "\"fresh\":true,\"running\":7,\"waiting\":3"));
    ir_buf_free(&b);
    gw_metrics_free(app);
    gw_fleet_free(&app->fleet);
    ir_cfg_free(app->cfg_owner);
    free(app);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(config_defaults),
        cmocka_unit_test(config_errors),
        cmocka_unit_test(freshness),
        cmocka_unit_test(metrics_and_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
