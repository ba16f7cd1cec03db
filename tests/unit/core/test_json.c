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

/* A boolean field read as pydantic's lax mode reads it. */
static void json_lax_bools(void **state) {
    static const struct {
        const char *json;
        int rc;
        bool v;
    } cases[] = {
        {"true", 0, true},        {"false", 0, false},
        {"1", 0, true},           {"0", 0, false},
        {"1.0", 0, true},         {"0.0", 0, false},
        {"\"YES\"", 0, true},     {"\"off\"", 0, false},
        {"\"F\"", 0, false},      {"\"t\"", 0, true},
        {"2", -1, false},         {"-1", -1, false},
        {"0.5", -1, false},       {"null", -1, false},
        {"\"\"", -1, false},      {"\"truee\"", -1, false},
        {"\" true\"", -1, false}, {"[]", -1, false},
        {"{}", -1, false},        {"\"no\\u0000\"", -1, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *v = json_loads(cases[i].json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        assert_non_null(v);
        bool out = !cases[i].v;
        assert_int_equal(ir_json_lax_bool(v, &out), cases[i].rc);
        if (!cases[i].rc) assert_int_equal(out, cases[i].v);
        json_decref(v);
    }
}

/* Truth as Python's (and so Jinja's) bool() gives it. */
static void json_truth(void **state) {
    const char *falsy[] = {"null", "false", "0", "0.0", "\"\"", "[]", "{}"};
    const char *truthy[] = {"true", "1", "-1", "0.5", "\"false\"", "[0]", "{\"a\":0}"};
    assert_false(ir_json_truthy(NULL));
    for (size_t i = 0; i < 7; i++) {
        json_t *f = json_loads(falsy[i], JSON_DECODE_ANY, NULL),
               *t = json_loads(truthy[i], JSON_DECODE_ANY, NULL);
        assert_false(ir_json_truthy(f));
        assert_true(ir_json_truthy(t));
        json_decref(f);
        json_decref(t);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(json_string_escapes),
        cmocka_unit_test(json_reals),
        cmocka_unit_test(json_lax_bools),
        cmocka_unit_test(json_truth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
