/* misc.c: the seeded random numbers and URL parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "core/ir_core.h"

static void rng_is_seeded_and_uniform(void **state) {
    ir_rng a, b;
    ir_rng_seed(&a, 42);
    ir_rng_seed(&b, 42);
    int counts[4] = {0};
    for (int i = 0; i < 40000; i++) {
        uint64_t x = ir_rng_below(&a, 4);
        assert_int_equal(x, ir_rng_below(&b, 4));
        counts[x]++;
    }
    for (int i = 0; i < 4; i++) assert_in_range(counts[i], 9500, 10500);
}

static void url_parsing(void **state) {
    ir_url u;
    assert_int_equal(ir_url_parse("http://127.0.0.1:8001", &u), 0);
    assert_string_equal(u.host, "127.0.0.1");
    assert_int_equal(u.port, 8001);
    assert_string_equal(u.path, "");
    assert_int_equal(ir_url_parse("http://example.com/v1/", &u), 0);
    assert_int_equal(u.port, 80);
    assert_string_equal(u.path, "/v1");
    assert_int_equal(ir_url_parse("http://[::1]:9000", &u), 0);
    assert_string_equal(u.host, "::1");
    assert_int_equal(u.port, 9000);
    assert_int_equal(ir_url_parse("https://x:1", &u), -1);
    assert_int_equal(ir_url_parse("http://", &u), -1);
    assert_int_equal(ir_url_parse("http://h:0", &u), -1);
    assert_int_equal(ir_url_parse("http://h:99999", &u), -1);
    assert_int_equal(ir_url_parse("http://a b:1", &u), -1);
    char host[64];
    uint16_t port;
    assert_int_equal(ir_hostport_parse("0.0.0.0:8080", host, sizeof host, &port), 0);
    assert_int_equal(port, 8080);
    assert_int_equal(ir_hostport_parse(":9090", host, sizeof host, &port), 0);
    assert_string_equal(host, "0.0.0.0");
    assert_int_equal(ir_hostport_parse("nope", host, sizeof host, &port), -1);
}

/* A link-local address's zone (RFC 4007) inside the brackets: written %eth0 or %2,
 * or percent-encoded as a URL writes it (RFC 6874: %25eth0); kept as %zone. */
static void ipv6_zones(void **state) {
    (void)state;
    ir_url u;
    assert_int_equal(ir_url_parse("http://[fe80::1%eth0]:8000/base", &u), 0);
    assert_string_equal(u.host, "fe80::1%eth0");
    assert_int_equal(u.port, 8000);
    assert_string_equal(u.path, "/base");
    assert_int_equal(ir_url_parse("http://[fe80::1%25eth0]:8000", &u), 0);
    assert_string_equal(u.host, "fe80::1%eth0");
    assert_int_equal(ir_url_parse("http://[fe80::1%2]", &u), 0);
    assert_string_equal(u.host, "fe80::1%2");
    assert_int_equal(u.port, 80);
    assert_int_equal(ir_url_parse("http://[fe80::1%25]:1", &u), 0); /* zone "25" */
    assert_string_equal(u.host, "fe80::1%25");
    /* An empty zone, a zone with what an interface name never has, a zone outside
     * brackets. */
    assert_int_equal(ir_url_parse("http://[fe80::1%]:1", &u), -1);
    assert_int_equal(ir_url_parse("http://[fe80::1%eth:0]:1", &u), -1);
    assert_int_equal(ir_url_parse("http://[fe80::1%et%h0]:1", &u), -1);
    assert_int_equal(ir_url_parse("http://[fe80::1%et h0]:1", &u), -1);
    assert_int_equal(ir_url_parse("http://host%eth0:1", &u), -1);
    char host[64];
    uint16_t port;
    assert_int_equal(ir_hostport_parse("[fe80::1%25lo]:5557", host, sizeof host, &port), 0);
    assert_string_equal(host, "fe80::1%lo");
    assert_int_equal(port, 5557);
    assert_int_equal(ir_hostport_parse("[fe80::1%lo]:5557", host, 10, &port), -1); /* no room */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rng_is_seeded_and_uniform),
        cmocka_unit_test(url_parsing),
        cmocka_unit_test(ipv6_zones),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
