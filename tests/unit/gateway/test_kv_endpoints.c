/* kv_events endpoints named by host name (kvsub_dns.c): which hosts are DNS names
 * that the subscriber looks up itself, and the endpoint it then connects to, the
 * address in the host's place (in brackets for IPv6, so that ZMQ_IPV6 is set).
 * Link-local IPv6 hosts with zones (ip6zone.c) in replica URLs and endpoints: the
 * problems found, the config errors naming their keys, a URL's %25 for libzmq. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "config_fixture.h"
#include "gateway/gateway.h"

static void names_and_literals(void **state) {
    (void)state;
    char h[256];
    assert_true(gw_ep_dns_host("tcp://vllm-0.pool.svc:5557", h, sizeof h));
    assert_string_equal(h, "vllm-0.pool.svc");
    assert_true(gw_ep_dns_host("tcp://localhost:5557", h, sizeof h));
    assert_string_equal(h, "localhost");
    /* Addresses are connected as they are. */
    assert_false(gw_ep_dns_host("tcp://127.0.0.1:5557", h, sizeof h));
    assert_false(gw_ep_dns_host("tcp://[::1]:5557", h, sizeof h));
    assert_false(gw_ep_dns_host("tcp://[fe80::1%eth0]:5557", h, sizeof h));
    /* Not tcp://host:port. */
    assert_false(gw_ep_dns_host("ipc:///tmp/kv", h, sizeof h));
    assert_false(gw_ep_dns_host("tcp://:5557", h, sizeof h));
    assert_false(gw_ep_dns_host("tcp://host", h, sizeof h));
    assert_false(gw_ep_dns_host(NULL, h, sizeof h));
    /* A name longer than the room for it. */
    assert_false(gw_ep_dns_host("tcp://a-long-name:1", h, 6));
}

static void address_in_place(void **state) {
    (void)state;
    char out[128];
    assert_int_equal(gw_ep_at_addr("tcp://v6only.test:5557", "::1", out, sizeof out), 0);
    assert_string_equal(out, "tcp://[::1]:5557");
    assert_int_equal(gw_ep_at_addr("tcp://both.test:6001", "10.0.0.7", out, sizeof out), 0);
    assert_string_equal(out, "tcp://10.0.0.7:6001");
    assert_int_equal(gw_ep_at_addr("tcp://h:5557", "2001:db8::1", out, sizeof out), 0);
    assert_string_equal(out, "tcp://[2001:db8::1]:5557");
    assert_int_equal(gw_ep_at_addr("ipc:///tmp/kv", "::1", out, sizeof out), -1);
    assert_int_equal(gw_ep_at_addr("tcp://h:5557", "2001:db8::1", out, 16), -1);
}

static void zone_problems(void **state) {
    (void)state;
    char why[256];
    /* Fine: a link-local address with an interface (lo is everywhere) or a number;
     * other addresses and names without one. */
    assert_null(gw_ip6_zone_problem("fe80::1%lo", why, sizeof why));
    assert_null(gw_ip6_zone_problem("fe80::abcd:1%2", why, sizeof why));
    assert_null(gw_ip6_zone_problem("febf::1%lo", why, sizeof why)); /* the /10's end */
    assert_null(gw_ip6_zone_problem("::1", why, sizeof why));
    assert_null(gw_ip6_zone_problem("2001:db8::1", why, sizeof why));
    assert_null(gw_ip6_zone_problem("10.0.0.1", why, sizeof why));
    assert_null(gw_ip6_zone_problem("vllm-0.pool", why, sizeof why));
    /* A link-local address needs one; others take none; it must be an interface. */
    assert_non_null(gw_ip6_zone_problem("fe80::1", why, sizeof why));
    assert_non_null(strstr(why, "needs a zone"));
    assert_non_null(gw_ip6_zone_problem("2001:db8::1%lo", why, sizeof why));
    assert_non_null(strstr(why, "link-local"));
    assert_non_null(gw_ip6_zone_problem("fec0::1%lo", why, sizeof why)); /* past fe80::/10 */
    assert_non_null(gw_ip6_zone_problem("fe80::1%no-such-if0", why, sizeof why));
    assert_non_null(strstr(why, "'no-such-if0'"));
    assert_non_null(gw_ip6_zone_problem("fe80::1%0", why, sizeof why));
    assert_non_null(gw_ip6_zone_problem("host%lo", why, sizeof why));
    /* Endpoints: the host in brackets, %25 read as a URL's %. */
    assert_null(gw_ep_zone_problem("tcp://[fe80::1%lo]:5557", why, sizeof why));
    assert_null(gw_ep_zone_problem("tcp://[fe80::1%25lo]:5557", why, sizeof why));
    assert_null(gw_ep_zone_problem("tcp://10.0.0.1:5557", why, sizeof why));
    assert_null(gw_ep_zone_problem(NULL, why, sizeof why));
    assert_non_null(gw_ep_zone_problem("tcp://[fe80::1]:5557", why, sizeof why));
    assert_non_null(gw_ep_zone_problem("tcp://[fe80::1%no-such-if0]:5557", why, sizeof why));
}

static void zone_errors_name_keys(void **state) {
    (void)state;
    char text[512];
    struct {
        const char *rep, *path;
    } cases[] = {
        {"{id: r, url: \"http://[fe80::1]:8000\"}", "replicas[0].url: the link-local"},
        {"{id: r, url: \"http://[fe80::1%no-such-if0]:8000\"}", "replicas[0].url: zone"},
        {"{id: r, url: \"http://[2001:db8::1%lo]:8000\"}", "replicas[0].url: a zone"},
        {"{id: r, url: \"http://[fe80::1%lo]:1\", kv_events: {endpoint: "
         "\"tcp://[fe80::1%no-such-if0]:5557\"}}",
         "replicas[0].kv_events.endpoint: zone"},
        {"{id: r, url: \"http://[fe80::1%lo]:1\", kv_events: {endpoint: "
         "\"tcp://[fe80::1%lo]:5557\", replay_endpoint: \"tcp://[fe80::2]:5558\"}}",
         "replicas[0].kv_events.replay_endpoint: the link-local"},
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(cases); i++) {
        snprintf(text, sizeof text, "models:\n  - name: m\nreplicas:\n  - %s\n", cases[i].rep);
        fx_expect_error(i, text, cases[i].path);
    }
    /* Good zones load, with ranks' ports moved past the zone. */
    snprintf(text, sizeof text,
             "models:\n  - name: m\nreplicas:\n  - {id: r, url: \"http://[fe80::1%%25lo]:8000\", "
             "data_parallel_size: 2, kv_events: {endpoint: \"tcp://[fe80::1%%lo]:5557\", "
             "replay_endpoint: \"tcp://[fe80::1%%25lo]:5560\"}}\n");
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = fx_load(text, &c, &e);
    for (size_t k = 0; k < e.n; k++) fprintf(stderr, "  got: %s\n", e.msgs[k]);
    assert_int_equal(e.n, 0);
    const gw_replica_cfg *r = c.replicas.items;
    assert_int_equal(c.replicas.n, 2);
    assert_string_equal(r[1].kv_events.endpoint, "tcp://[fe80::1%lo]:5558");
    assert_string_equal(r[1].kv_events.replay_endpoint, "tcp://[fe80::1%25lo]:5561");
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
}

static void zone_unescaped_for_libzmq(void **state) {
    (void)state;
    char ep[64];
    strcpy(ep, "tcp://[fe80::1%25eth0]:5557");
    gw_ep_unescape_zone(ep);
    assert_string_equal(ep, "tcp://[fe80::1%eth0]:5557");
    strcpy(ep, "tcp://[fe80::1%eth0]:5557"); /* already bare */
    gw_ep_unescape_zone(ep);
    assert_string_equal(ep, "tcp://[fe80::1%eth0]:5557");
    strcpy(ep, "tcp://[fe80::1%25]:5557"); /* interface number 25 */
    gw_ep_unescape_zone(ep);
    assert_string_equal(ep, "tcp://[fe80::1%25]:5557");
    strcpy(ep, "tcp://h%25x:5557"); /* no brackets: left alone */
    gw_ep_unescape_zone(ep);
    assert_string_equal(ep, "tcp://h%25x:5557");
    gw_ep_unescape_zone(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(zone_problems),
        cmocka_unit_test(zone_errors_name_keys),
        cmocka_unit_test(zone_unescaped_for_libzmq),
        cmocka_unit_test(names_and_literals),
        cmocka_unit_test(address_in_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
