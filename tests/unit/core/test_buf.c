/* Buffers with caps, arenas, RNG and URL parsing. */
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

static void arena_alloc_and_cap(void **state) {
    ir_arena *a = ir_arena_new(128, 1024);
    char *s = ir_arena_strdup(a, "abc");
    assert_string_equal(s, "abc");
    void *big = ir_arena_alloc(a, 600); /* larger than a chunk */
    assert_non_null(big);
    assert_int_equal(((uintptr_t)big) % 16, 0);
    assert_null(ir_arena_alloc(a, 600)); /* would pass the 1024 cap */
    ir_arena_reset(a);
    assert_int_equal(ir_arena_used(a), 0);
    assert_non_null(ir_arena_alloc(a, 600));
    ir_arena_free(a);
}

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

/* LIFO reuse up to the cap; under ASan (max forced to 0) nothing is kept. */
static void freelist_recycles_up_to_cap(void **state) {
    (void)state;
    ir_freelist f;
    ir_freelist_init(&f, 2);
    void *a = malloc(32), *b = malloc(32), *c = malloc(32);
    assert_null(ir_freelist_pop(&f));
    if (f.max == 0) { /* AddressSanitizer build */
        assert_false(ir_freelist_push(&f, a));
        free(a), free(b), free(c);
        return;
    }
    assert_true(ir_freelist_push(&f, a));
    assert_true(ir_freelist_push(&f, b));
    assert_false(ir_freelist_push(&f, c)); /* full: the caller frees it */
    free(c);
    assert_ptr_equal(ir_freelist_pop(&f), b);
    assert_true(ir_freelist_push(&f, b));
    assert_ptr_equal(ir_freelist_pop(&f), b);
    assert_ptr_equal(ir_freelist_pop(&f), a);
    assert_null(ir_freelist_pop(&f));
    assert_int_equal(f.n, 0);
    free(a), free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buf_respects_cap),          cmocka_unit_test(freelist_recycles_up_to_cap),
        cmocka_unit_test(buf_fixed_never_grows),     cmocka_unit_test(buf_rearm_keeps_or_frees),
        cmocka_unit_test(buf_appendf_long),          cmocka_unit_test(arena_alloc_and_cap),
        cmocka_unit_test(rng_is_seeded_and_uniform), cmocka_unit_test(url_parsing),
        cmocka_unit_test(json_string_escapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
