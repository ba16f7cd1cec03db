/* buf.c: buffers with caps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "core/ir_core.h"

static void buf_respects_cap(void **state) {
    ir_buf b;
    ir_buf_init(&b, 10);
    assert_int_equal(ir_buf_append(&b, "hello", 5), 0);
    assert_int_equal(ir_buf_append(&b, "world", 5), 0);
    assert_int_equal(b.len, 10);
    assert_int_equal(ir_buf_append(&b, "!", 1), -1);
    assert_int_equal(b.len, 10);
    assert_string_equal(b.data, "helloworld");
    ir_buf_consume(&b, 5);
    assert_string_equal(b.data, "world");
    assert_int_equal(ir_buf_appendf(&b, "%d", 12345), 0);
    assert_int_equal(ir_buf_appendf(&b, "%d", 6), -1);
    ir_buf_free(&b);
}

/* A fixed buffer fills up to size - 1 bytes and then refuses, never reallocating. */
static void buf_fixed_never_grows(void **state) {
    (void)state;
    char mem[8];
    ir_buf b;
    ir_buf_fixed(&b, mem, sizeof mem);
    assert_string_equal(mem, "");
    assert_int_equal(ir_buf_append_lit(&b, "abc"), 0);
    assert_int_equal(ir_buf_append_uint(&b, 1234), 0);
    assert_ptr_equal(b.data, mem);
    assert_string_equal(mem, "abc1234");
    assert_int_equal(ir_buf_append_lit(&b, "x"), -1); /* would need an 9th byte */
    assert_ptr_equal(b.data, mem);
    assert_int_equal(b.len, 7);
    ir_buf_reset(&b);
    assert_int_equal(ir_buf_append_str(&b, "0123456"), 0);
    assert_string_equal(mem, "0123456");
}

/* rearm empties a buffer and keeps its memory only when it is small enough and fits the new cap. */
static void buf_rearm_keeps_or_frees(void **state) {
    (void)state;
    ir_buf b;
    ir_buf_init(&b, 0);
    assert_int_equal(ir_buf_append_lit(&b, "hello"), 0);
    char *mem = b.data;
    size_t cap = b.cap;
    ir_buf_rearm(&b, 100, 4096); /* kept */
    assert_ptr_equal(b.data, mem);
    assert_int_equal(b.cap, cap);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
    assert_int_equal(b.max, 100);
    ir_buf_rearm(&b, 100, cap - 1); /* bigger than worth keeping */
    assert_null(b.data);
    assert_int_equal(b.cap, 0);
    assert_int_equal(ir_buf_append_lit(&b, "hello"), 0);
    ir_buf_rearm(&b, 3, 4096); /* would break cap <= max + 1 */
    assert_null(b.data);
    assert_int_equal(ir_buf_append_lit(&b, "abcd"), -1);
    assert_int_equal(ir_buf_append_lit(&b, "abc"), 0);
    ir_buf_free(&b);
}

static void buf_appendf_long(void **state) {
    ir_buf b;
    ir_buf_init(&b, 0);
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    for (int i = 0; i < 10; i++) assert_int_equal(ir_buf_appendf(&b, "%s|", big), 0);
    assert_int_equal(b.len, 10 * 1000);
    size_t n;
    char *p = ir_buf_steal(&b, &n);
    assert_int_equal(n, 10000);
    assert_null(b.data);
    free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buf_respects_cap),
        cmocka_unit_test(buf_fixed_never_grows),
        cmocka_unit_test(buf_rearm_keeps_or_frees),
        cmocka_unit_test(buf_appendf_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
