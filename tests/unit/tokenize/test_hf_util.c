/* hf_util.c: the tokenizer's byte buffer keeps to its cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "tokenize/hf_internal.h"

static void buf_stops_at_its_cap(void **state) {
    hf_buf b = {.max = 10};
    assert_int_equal(hf_buf_add(&b, "0123456789", 10), 0);
    assert_int_equal(hf_buf_addc(&b, 'x'), -1);
    assert_int_equal(hf_buf_add_cp(&b, 0x4E2D), -1);
    assert_int_equal(b.len, 10);
    assert_string_equal(b.p, "0123456789");
    assert_true(b.cap <= b.max + 1); /* never more memory than the cap needs */
    b.len = 8;
    assert_int_equal(hf_buf_add(&b, "abc", 3), -1); /* 11 bytes: refused whole */
    assert_int_equal(b.len, 8);
    assert_int_equal(hf_buf_add(&b, "ab", 2), 0);
    hf_buf_free(&b);
}

/* A zeroed buffer takes the module's default cap, checked before any allocation. */
static void zeroed_buf_has_the_default_cap(void **state) {
    hf_buf b = {0};
    assert_int_equal(hf_buf_reserve(&b, HF_BUF_MAX + 1), -1);
    assert_null(b.p);
    assert_int_equal(hf_buf_add(&b, "ok", 2), 0);
    assert_int_equal(hf_buf_reserve(&b, HF_BUF_MAX - 1), -1); /* 2 + (max - 1) > max */
    assert_string_equal(b.p, "ok");
    hf_buf_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buf_stops_at_its_cap),
        cmocka_unit_test(zeroed_buf_has_the_default_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
