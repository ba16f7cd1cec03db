/* The targeted JSON key scanner against jansson, on generated and mutated documents. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "core/ir_core.h"

static void known_cases(void **state) {
    ir_json_span sp;
    const char *d1 = " {\"a\": [1, {\"model\": \"inner\"}], \"model\" : \"x\\\"y\", \"b\": null} ";
    assert_int_equal(ir_json_scan_key(d1, strlen(d1), "model", &sp, 0), IR_JSON_FOUND);
    assert_true(sp.is_string);
    assert_memory_equal(d1 + sp.start, "\"x\\\"y\"", sp.end - sp.start);
    /* the last duplicate wins; escaped key names count */
    const char *d2 = "{\"model\":\"a\",\"mod\\u0065l\":\"b\"}";
    assert_int_equal(ir_json_scan_key(d2, strlen(d2), "model", &sp, 0), IR_JSON_FOUND);
    assert_memory_equal(d2 + sp.start, "\"b\"", 3);
    const char *d3 = "{\"messages\":[]}";
    assert_int_equal(ir_json_scan_key(d3, strlen(d3), "model", &sp, 0), IR_JSON_ABSENT);
    assert_false(sp.obj_empty);
    assert_int_equal(ir_json_scan_key("{}", 2, "model", &sp, 0), IR_JSON_ABSENT);
    assert_true(sp.obj_empty);
    const char *bad[] = {"",
                         "[]",
                         "{",
                         "{\"model\":}",
                         "{\"model\":\"x\",}",
                         "{\"a\":01}",
                         "{\"a\":\"\x01\"}",
                         "{} x",
                         "{\"a\":tru}",
                         "{\"a\":\"\\x\"}",
                         "{\"a\":1.}",
                         "{\"a\":nan}",
                         "{\"a\":-Inf}",
                         "{\"a\":--1}",
                         "{\"a\" 1}"};
    for (size_t i = 0; i < IR_ARRAY_LEN(bad); i++)
        assert_int_equal(ir_json_scan_key(bad[i], strlen(bad[i]), "model", &sp, 0),
                         IR_JSON_INVALID);
    /* json.loads' extras: NaN, Infinity, -Infinity, integers of any size */
    const char *py = "{\"a\": [NaN, Infinity, -Infinity, 123456789012345678901234567890], "
                     "\"model\": -Infinity}";
    assert_int_equal(ir_json_scan_key(py, strlen(py), "model", &sp, 0), IR_JSON_FOUND);
    assert_int_equal(sp.end - sp.start, 9);
    const char *num = "{\"model\": 12.5e3}";
    assert_int_equal(ir_json_scan_key(num, strlen(num), "model", &sp, 0), IR_JSON_FOUND);
    assert_false(sp.is_string);
    /* depth cap */
    char deep[700];
    size_t k = 0;
    deep[k++] = '{';
    strcpy(deep + k, "\"a\":");
    k += 4;
    for (int i = 0; i < 300; i++) deep[k++] = '[';
    for (int i = 0; i < 300; i++) deep[k++] = ']';
    deep[k++] = '}';
    assert_int_equal(ir_json_scan_key(deep, k, "model", &sp, 64), IR_JSON_INVALID);
    assert_int_equal(ir_json_scan_key(deep, k, "model", &sp, 512), IR_JSON_ABSENT);
}

static void unescape_utf8(void **state) {
    ir_buf b;
    ir_buf_init(&b, 0);
    const char *t = "\"a\\u00e9\\ud83d\\ude00\\n\"";
    assert_int_equal(ir_json_unescape(t, strlen(t), &b), 0);
    assert_string_equal(b.data, "a\xc3\xa9\xf0\x9f\x98\x80\n");
    ir_buf_free(&b);
}

/* ---- property: agrees with jansson ---- */

static const char *keys[] = {"model", "mod\\u0065l", "messages", "a", "b", "\\u006dodel"};
static const char *scalars[] = {"1",           "-0.5e+2",         "true",    "false",
                                "null",        "\"m\"",           "\"sim\"", "\"x\\\"y\"",
                                "\"\\u00e9\"", "\"\xe6\x97\xa5\""};

static void gen_value(ir_rng *r, ir_buf *o, int depth) {
    int k = (int)ir_rng_below(r, depth > 3 ? 1 : 3);
    if (k == 0) {
        ir_buf_append_str(o, scalars[ir_rng_below(r, IR_ARRAY_LEN(scalars))]);
    } else if (k == 1) {
        ir_buf_append_str(o, "[");
        int n = (int)ir_rng_below(r, 4);
        for (int i = 0; i < n; i++) {
            if (i) ir_buf_append_str(o, ", ");
            gen_value(r, o, depth + 1);
        }
        ir_buf_append_str(o, "]");
    } else {
        ir_buf_append_str(o, "{");
        int n = (int)ir_rng_below(r, 4);
        for (int i = 0; i < n; i++) {
            if (i) ir_buf_append_str(o, ",");
            ir_buf_appendf(o, " \"%s\" : ", keys[ir_rng_below(r, IR_ARRAY_LEN(keys))]);
            gen_value(r, o, depth + 1);
        }
        ir_buf_append_str(o, "}");
    }
}

static void agrees_with_jansson(void **state) {
    ir_rng r;
    ir_rng_seed(&r, 77);
    ir_buf doc;
    ir_buf_init(&doc, 0);
    int found = 0, absent = 0, invalid = 0;
    for (int iter = 0; iter < 20000; iter++) {
        ir_buf_reset(&doc);
        ir_buf_append_str(&doc, "{");
        int n = (int)ir_rng_below(&r, 5);
        for (int i = 0; i < n; i++) {
            if (i) ir_buf_append_str(&doc, ",");
            ir_buf_appendf(&doc, "\"%s\":", keys[ir_rng_below(&r, IR_ARRAY_LEN(keys))]);
            gen_value(&r, &doc, 0);
        }
        ir_buf_append_str(&doc, "}");
        /* Sometimes break it: truncate or flip a byte. */
        if (ir_rng_below(&r, 3) == 0 && doc.len > 1) {
            if (ir_rng_below(&r, 2))
                doc.len = ir_rng_below(&r, doc.len);
            else
                doc.data[ir_rng_below(&r, doc.len)] = (char)"{}[]\",:x0\\ "[ir_rng_below(&r, 12)];
        }
        ir_json_span sp;
        int rc = ir_json_scan_key(doc.data, doc.len, "model", &sp, 0);
        json_error_t e;
        json_t *j = json_loadb(doc.data, doc.len, JSON_ALLOW_NUL, &e);
        if (rc == IR_JSON_INVALID) {
            invalid++;
            assert_true(j == NULL || !json_is_object(j));
        } else {
            if (!j)
                fail_msg("scanner accepts, jansson rejects (%s): %.*s", e.text, (int)doc.len,
                         doc.data);
            json_t *m = json_object_get(j, "model");
            if (rc == IR_JSON_ABSENT) {
                absent++;
                assert_null(m);
            } else {
                found++;
                assert_non_null(m);
                json_t *v = json_loadb(doc.data + sp.start, sp.end - sp.start,
                                       JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
                assert_non_null(v);
                assert_true(json_equal(v, m));
                json_decref(v);
            }
        }
        json_decref(j);
    }
    assert_true(found > 1000 && absent > 1000 && invalid > 1000);
    ir_buf_free(&doc);
}

/* Strings of 0 to 40 bytes with one byte of each kind the string scanner stops at
 * (a quote, an escape, a control byte, UTF-8 valid and not, DEL) at each position:
 * the scanner and jansson agree on every one (its eight-byte skipping included). */
static void string_bytes_at_every_position(void **state) {
    (void)state;
    static const char *const odd[] = {"\"",       "\\n",      "\\u00e9", "\\x",  "\x01", "\x1f",
                                      "\xc3\xa9", "\xe2\x82", "\xff",    "\x7f", " ",    "\t"};
    ir_buf doc;
    ir_buf_init(&doc, 0);
    for (size_t len = 0; len <= 40; len++)
        for (size_t at = 0; at <= len; at++)
            for (size_t k = 0; k < IR_ARRAY_LEN(odd); k++) {
                ir_buf_reset(&doc);
                ir_buf_append_str(&doc, "{\"model\":\"");
                for (size_t i = 0; i < len; i++) {
                    if (i == at) ir_buf_append_str(&doc, odd[k]);
                    ir_buf_append_str(&doc, "a");
                }
                ir_buf_append_str(&doc, "\"}");
                ir_json_span sp;
                int rc = ir_json_scan_key(doc.data, doc.len, "model", &sp, 0);
                json_error_t e;
                json_t *j = json_loadb(doc.data, doc.len, JSON_ALLOW_NUL, &e);
                if ((rc == IR_JSON_FOUND) != (j != NULL))
                    fail_msg("scanner %d, jansson %s: %.*s", rc, j ? "reads it" : e.text,
                             (int)doc.len, doc.data);
                json_decref(j);
            }
    ir_buf_free(&doc);
}

/* ir_json_append_string writes valid JSON and valid UTF-8 whatever it is given: valid
 * sequences are kept, every invalid byte becomes \ufffd, and jansson reads it back. */
static void append_string_always_utf8(void **state) {
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80",
         "\"caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80\""},
        {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""}, /* a lone surrogate, CESU-8 */
        {"a\xc0\xaf"
         "b",
         "\"a\\ufffd\\ufffdb\""},             /* overlong */
        {"x\xe6\x97", "\"x\\ufffd\\ufffd\""}, /* cut short */
        {"\xff\"\n", "\"\\ufffd\\\"\\n\""},
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(cases); i++) {
        ir_buf b;
        ir_buf_init(&b, 0);
        assert_int_equal(ir_json_append_string(&b, cases[i].in, strlen(cases[i].in)), 0);
        assert_int_equal(b.len, strlen(cases[i].want));
        assert_memory_equal(b.data, cases[i].want, b.len);
        json_error_t e;
        json_t *v = json_loadb(b.data, b.len, JSON_DECODE_ANY, &e);
        assert_non_null(v);
        json_decref(v);
        ir_buf_free(&b);
    }
    ir_rng r;
    ir_rng_seed(&r, 7);
    for (int round = 0; round < 2000; round++) { /* random bytes: jansson always accepts */
        char in[32];
        for (size_t k = 0; k < sizeof in; k++) in[k] = (char)ir_rng_next(&r);
        ir_buf b;
        ir_buf_init(&b, 0);
        assert_int_equal(ir_json_append_string(&b, in, sizeof in), 0);
        json_error_t e;
        json_t *v = json_loadb(b.data, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
        assert_non_null(v);
        json_decref(v);
        ir_buf_free(&b);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(known_cases),
        cmocka_unit_test(unescape_utf8),
        cmocka_unit_test(agrees_with_jansson),
        cmocka_unit_test(string_bytes_at_every_position),
        cmocka_unit_test(append_string_always_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
