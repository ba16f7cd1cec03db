/* json.c: JSON helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "core/ir_core.h"

static void json_string_escapes(void **state) {
    ir_buf b;
    ir_buf_init(&b, 0);
    const char in[] = "a\"b\\c\n\x01\xc3\xa9";
    assert_int_equal(ir_json_append_string(&b, in, sizeof in - 1), 0);
    assert_string_equal(b.data, "\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\"");
    json_error_t err;
    json_t *v = json_loads(b.data, JSON_DECODE_ANY, &err);
    assert_non_null(v);
    assert_string_equal(json_string_value(v), in);
    json_decref(v);
    ir_buf_free(&b);
}

/* Exact for round trips, short for people. */
static void json_reals(void **state) {
    json_t *v = json_pack("{s:f,s:f,s:i}", "a", 86.2612866, "b", 0.1, "n", 3);
    ir_buf b;
    ir_buf_init(&b, 0);
    assert_int_equal(ir_json_append(&b, v, false), 0);
    assert_string_equal(b.data, "{\"a\":86.261286600000005,\"b\":0.10000000000000001,\"n\":3}");
    b.len = 0;
    assert_int_equal(ir_json_append_readable(&b, v), 0);
    assert_string_equal(b.data, "{\"a\":86.2612866,\"b\":0.1,\"n\":3}");
    json_decref(v);
    ir_buf_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(json_string_escapes),
        cmocka_unit_test(json_reals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
