/* kv_events endpoints named by host name (kvsub_dns.c): which hosts are DNS names
 * that the subscriber looks up itself, and the endpoint it then connects to, the
 * address in the host's place (in brackets for IPv6, so that ZMQ_IPV6 is set). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_and_literals),
        cmocka_unit_test(address_in_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
