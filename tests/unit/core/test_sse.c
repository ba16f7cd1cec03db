/* SSE decoder: known cases, and the same events under any chunking. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "core/ir_core.h"

typedef struct {
    ir_buf log; /* "event|id|data\x1e" per event */
    int count;
} collect;

static int on_event(void *ud, const ir_sse_event *ev) {
    collect *c = ud;
    ir_buf_appendf(&c->log, "%s|%s|", ev->event, ev->id ? ev->id : "-");
    ir_buf_append(&c->log, ev->data, ev->data_len);
    ir_buf_append(&c->log, "\x1e", 1);
    c->count++;
    return 0;
}

static void decode_chunks(const char *in, size_t n, const size_t *cuts, size_t ncuts, collect *c) {
    ir_sse_decoder d;
    ir_buf_init(&c->log, 0);
    c->count = 0;
    ir_sse_init(&d, 1 << 16, on_event, c);
    size_t at = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : n;
        assert_int_equal(ir_sse_feed(&d, in + at, end - at), 0);
        at = end;
    }
    ir_sse_free(&d);
}

static void basic_events(void **state) {
    const char *in = "\xEF\xBB\xBF: comment\r\ndata: {\"a\":1}\r\n\r\n"
                     "event: x\nid: 7\ndata: line1\ndata:line2\n\n"
                     "data\n\n"
                     "retry: 5\n\n"
                     "data: [DONE]\r\r";
    collect c;
    decode_chunks(in, strlen(in), NULL, 0, &c);
    assert_int_equal(c.count, 4);
    assert_string_equal(c.log.data, "|-|{\"a\":1}\x1ex|7|line1\nline2\x1e|-|\x1e|-|[DONE]\x1e");
    ir_buf_free(&c.log);
}

static void event_size_cap(void **state) {
    ir_sse_decoder d;
    collect c = {0};
    ir_buf_init(&c.log, 0);
    ir_sse_init(&d, 16, on_event, &c);
    assert_int_equal(ir_sse_feed(&d, "data: 0123456789abcdefghij\n\n", 28), -1);
    ir_sse_free(&d);
    ir_buf_free(&c.log);
}

static void encode_roundtrip(void **state) {
    ir_buf out;
    ir_buf_init(&out, 0);
    const char *payloads[] = {"", "x", "a\nb", "trail\n", "{\"k\": \"v\"}"};
    for (size_t i = 0; i < IR_ARRAY_LEN(payloads); i++)
        assert_int_equal(ir_sse_encode_data(&out, payloads[i], strlen(payloads[i])), 0);
    collect c;
    decode_chunks(out.data, out.len, NULL, 0, &c);
    assert_int_equal(c.count, 5);
    assert_string_equal(c.log.data,
                        "|-|\x1e|-|x\x1e|-|a\nb\x1e|-|trail\n\x1e|-|{\"k\": \"v\"}\x1e");
    ir_buf_free(&c.log);
    ir_buf_free(&out);
}

/* Property: for random streams, every chunking yields exactly the events of
 * feeding the whole stream at once. */
static void any_chunking_same_events(void **state) {
    static const char *atoms[] = {"data: ",       "data:",    "event: e", "id: 3", ": c",
                                  "\n",           "\r\n",     "\r",       "x",     "{\"y\":2}",
                                  "\xEF\xBB\xBF", "retry: 1", "data",     "é",     " "};
    ir_rng r;
    ir_rng_seed(&r, 2024);
    for (int iter = 0; iter < 3000; iter++) {
        ir_buf in;
        ir_buf_init(&in, 0);
        int natoms = 1 + (int)ir_rng_below(&r, 40);
        for (int i = 0; i < natoms; i++)
            ir_buf_append_str(&in, atoms[ir_rng_below(&r, IR_ARRAY_LEN(atoms))]);
        collect whole, parts;
        decode_chunks(in.data, in.len, NULL, 0, &whole);
        size_t cuts[16];
        size_t ncuts = ir_rng_below(&r, 16);
        for (size_t i = 0; i < ncuts; i++) cuts[i] = ir_rng_below(&r, in.len + 1);
        /* sort the cut points */
        for (size_t i = 1; i < ncuts; i++)
            for (size_t j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
                size_t t = cuts[j];
                cuts[j] = cuts[j - 1];
                cuts[j - 1] = t;
            }
        decode_chunks(in.data, in.len, cuts, ncuts, &parts);
        assert_int_equal(whole.count, parts.count);
        assert_int_equal(whole.log.len, parts.log.len);
        if (whole.log.len) assert_memory_equal(whole.log.data, parts.log.data, whole.log.len);
        /* byte-at-a-time too */
        size_t *every = malloc(sizeof(size_t) * (in.len + 1));
        for (size_t i = 0; i < in.len; i++) every[i] = i;
        collect bytes;
        decode_chunks(in.data, in.len, every, in.len, &bytes);
        assert_int_equal(whole.count, bytes.count);
        if (whole.log.len) assert_memory_equal(whole.log.data, bytes.log.data, whole.log.len);
        free(every);
        ir_buf_free(&whole.log);
        ir_buf_free(&parts.log);
        ir_buf_free(&bytes.log);
        ir_buf_free(&in);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(basic_events),
        cmocka_unit_test(event_size_cap),
        cmocka_unit_test(encode_roundtrip),
        cmocka_unit_test(any_chunking_same_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
