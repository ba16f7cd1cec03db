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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rng_is_seeded_and_uniform),
        cmocka_unit_test(url_parsing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
