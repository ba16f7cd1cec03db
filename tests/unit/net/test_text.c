/* The net layer's small text helpers against byte-at-a-time references. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <string.h>

#include "net/net_internal.h"

static bool reference_bad(const char *s, size_t n, bool allow_space) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\r' || c == '\n' || c == '\0' || (!allow_space && c <= ' ')) return true;
    }
    return false;
}

/* Every byte value at every position of strings up to 19 bytes long (the word loop
 * and the tail), on a background of each kind of plain byte. */
static void bad_text_matches_reference(void **state) {
    (void)state;
    const char backgrounds[] = {'a', '~', (char)0x80, (char)0xff, '!', ' ', '\t'};
    char s[24];
    for (size_t bg = 0; bg < sizeof backgrounds; bg++)
        for (size_t n = 0; n < 20; n++)
            for (size_t at = 0; at < n; at++)
                for (int c = 0; c < 256; c++) {
                    memset(s, backgrounds[bg], sizeof s);
                    s[at] = (char)c;
                    for (int sp = 0; sp < 2; sp++)
                        if (irn__bad_text(s, n, sp) != reference_bad(s, n, sp))
                            fail_msg("n=%zu at=%zu byte=%d background=%d allow_space=%d", n, at, c,
                                     backgrounds[bg], sp);
                }
    /* bytes past n are not looked at */
    memcpy(s, "abcdefgh\r", 9);
    assert_false(irn__bad_text(s, 8, true));
    assert_true(irn__bad_text(s, 9, true));
}

static void streq_ci(void **state) {
    (void)state;
    assert_true(irn__streq_ci("Content-Length", 14, "content-length"));
    assert_false(irn__streq_ci("Content-Lengt", 13, "content-length"));
    assert_false(irn__streq_ci("Content-Lengthx", 15, "content-length"));
    assert_false(irn__streq_ci("Content_Length", 14, "content-length"));
    assert_true(irn__streq_ci("", 0, ""));
}

/* A link-local address's zone is its socket's scope id (an interface name or a
 * number), never silently 0; the Host header leaves it out. */
static void ipv6_zones(void **state) {
    (void)state;
    unsigned lo = if_nametoindex("lo");
    assert_true(lo > 0);
    assert_int_equal(irn_ip6_zone_index("lo"), lo);
    assert_int_equal(irn_ip6_zone_index("7"), 7);
    assert_int_equal(irn_ip6_zone_index("4294967295"), 4294967295u);
    assert_int_equal(irn_ip6_zone_index("4294967296"), 0);
    assert_int_equal(irn_ip6_zone_index("no-such-if0"), 0);
    assert_int_equal(irn_ip6_zone_index(""), 0);
    struct sockaddr_storage ss;
    assert_int_equal(irn__addr_numeric("fe80::1%lo", 8000, &ss), 0);
    const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)&ss;
    assert_int_equal(v6->sin6_family, AF_INET6);
    assert_int_equal(v6->sin6_scope_id, lo);
    assert_int_equal(ntohs(v6->sin6_port), 8000);
    assert_int_equal(irn__addr_numeric("[fe80::1%3]", 1, &ss), 0);
    assert_int_equal(((const struct sockaddr_in6 *)&ss)->sin6_scope_id, 3);
    assert_int_equal(irn__addr_numeric("fe80::1%no-such-if0", 1, &ss), UV_EINVAL);
    assert_int_equal(irn__addr_numeric("fe80::1", 1, &ss), 0);
    assert_int_equal(((const struct sockaddr_in6 *)&ss)->sin6_scope_id, 0);
    ir_buf b;
    ir_buf_init(&b, 256);
    assert_int_equal(irn__append_authority(&b, "fe80::1%eth0", 12, 8000), 0);
    assert_int_equal(b.len, strlen("[fe80::1]:8000"));
    assert_memory_equal(b.data, "[fe80::1]:8000", b.len);
    ir_buf_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_text_matches_reference),
        cmocka_unit_test(streq_ci),
        cmocka_unit_test(ipv6_zones),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
