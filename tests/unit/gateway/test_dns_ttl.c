/* gw_dns_srv_ttl: the smallest SRV answer TTL of a raw DNS reply, built here byte
 * by byte: CNAMEs and other answers are passed over, a TTL with its top bit set
 * reads as 0 (RFC 2181), and a reply cut anywhere, with a reserved label type or
 * without an SRV answer gives -1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "gateway/gateway.h"

typedef struct msg {
    unsigned char b[512];
    size_t n;
} msg;

static void put(msg *m, const void *p, size_t n) {
    assert_true(m->n + n <= sizeof m->b);
    memcpy(m->b + m->n, p, n);
    m->n += n;
}

static void put16(msg *m, unsigned v) {
    unsigned char x[2] = {(unsigned char)(v >> 8), (unsigned char)v};
    put(m, x, 2);
}

static void put32(msg *m, uint32_t v) {
    put16(m, v >> 16);
    put16(m, v & 0xffff);
}

static void name(msg *m, const char *dotted) {
    while (*dotted) {
        size_t l = strcspn(dotted, ".");
        unsigned char c = (unsigned char)l;
        put(m, &c, 1);
        put(m, dotted, l);
        dotted += l + (dotted[l] == '.');
    }
    put(m, "", 1);
}

static void header(msg *m, unsigned qd, unsigned an) {
    m->n = 0;
    put16(m, 0x1234), put16(m, 0x8180), put16(m, qd), put16(m, an), put16(m, 0), put16(m, 0);
    if (qd) name(m, "_http._tcp.srv.test"), put16(m, 33), put16(m, 1);
}

/* One answer: its owner a pointer to the question's name (offset 12). */
static void answer(msg *m, unsigned type, uint32_t ttl) {
    put16(m, 0xC00C);
    put16(m, type), put16(m, 1), put32(m, ttl);
    if (type == 33) {
        msg rd = {0};
        put16(&rd, 0), put16(&rd, 0), put16(&rd, 8080), name(&rd, "m5.test");
        put16(m, (unsigned)rd.n), put(m, rd.b, rd.n);
    } else {
        msg rd = {0};
        name(&rd, "other.test");
        put16(m, (unsigned)rd.n), put(m, rd.b, rd.n);
    }
}

static void smallest_srv_ttl(void **state) {
    (void)state;
    msg m;
    uint32_t ttl = 99;
    header(&m, 1, 1), answer(&m, 33, 30);
    assert_int_equal(gw_dns_srv_ttl(m.b, m.n, &ttl), 0);
    assert_int_equal(ttl, 30);
    header(&m, 1, 4), answer(&m, 5, 1), answer(&m, 33, 300), answer(&m, 33, 7), answer(&m, 33, 60);
    assert_int_equal(gw_dns_srv_ttl(m.b, m.n, &ttl), 0);
    assert_int_equal(ttl, 7); /* the CNAME's 1 is not an SRV's */
    header(&m, 1, 1), answer(&m, 33, 0x80000005u);
    assert_int_equal(gw_dns_srv_ttl(m.b, m.n, &ttl), 0);
    assert_int_equal(ttl, 0);
}

static void no_srv_answer(void **state) {
    (void)state;
    msg m;
    uint32_t ttl = 5;
    header(&m, 1, 0);
    assert_int_equal(gw_dns_srv_ttl(m.b, m.n, &ttl), -1);
    header(&m, 1, 1), answer(&m, 5, 10);
    assert_int_equal(gw_dns_srv_ttl(m.b, m.n, &ttl), -1);
    assert_int_equal(ttl, 5);
    assert_int_equal(gw_dns_srv_ttl(NULL, 0, &ttl), -1);
}

static void cut_anywhere(void **state) {
    (void)state;
    msg m;
    header(&m, 1, 2), answer(&m, 5, 10), answer(&m, 33, 20);
    uint32_t ttl;
    for (size_t n = 0; n < m.n; n++) assert_int_equal(gw_dns_srv_ttl(m.b, n, &ttl), -1);
    assert_int_equal(gw_dns_srv_ttl(m.b, m.n, &ttl), 0);
    assert_int_equal(ttl, 20);
}

static void bad_labels(void **state) {
    (void)state;
    msg m;
    uint32_t ttl;
    header(&m, 1, 1), answer(&m, 33, 20);
    m.b[12] = 0x45; /* the question's first label: type 01, reserved */
    assert_int_equal(gw_dns_srv_ttl(m.b, m.n, &ttl), -1);
    /* More questions than the reply holds. */
    header(&m, 1, 1), answer(&m, 33, 20);
    m.b[5] = 9;
    assert_int_equal(gw_dns_srv_ttl(m.b, m.n, &ttl), -1);
    /* A name of 200 one-byte labels is longer than a name can be. */
    m.n = 0;
    put16(&m, 0), put16(&m, 0), put16(&m, 1), put16(&m, 0), put16(&m, 0), put16(&m, 0);
    for (int i = 0; i < 200; i++) put(&m, "\x01x", 2);
    put(&m, "", 1), put16(&m, 33), put16(&m, 1);
    assert_int_equal(gw_dns_srv_ttl(m.b, m.n, &ttl), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(smallest_srv_ttl),
        cmocka_unit_test(no_srv_answer),
        cmocka_unit_test(cut_anywhere),
        cmocka_unit_test(bad_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
