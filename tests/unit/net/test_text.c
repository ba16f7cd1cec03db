/* The net layer's small text helpers against byte-at-a-time references. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_text_matches_reference),
        cmocka_unit_test(streq_ci),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
