/* Traces: traceparent headers parse and format as W3C says (bad ones refused);
 * the OTLP JSON encoding is valid JSON with the ids, times and attributes in
 * the mapping's shapes; sampling follows the trace id and the ratio; the
 * exporter posts every queued span, and a queue whose collector is stuck drops
 * and counts spans while submit never waits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "obs/ir_obs.h"

static const char *TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

static void traceparent_round_trip(void **st) {
    (void)st;
    iro_span_ctx c;
    assert_int_equal(iro_traceparent_parse(TP, strlen(TP), &c), 0);
    assert_int_equal(c.trace_id[0], 0x4b);
    assert_int_equal(c.trace_id[15], 0x36);
    assert_int_equal(c.span_id[0], 0x00);
    assert_int_equal(c.span_id[7], 0xb7);
    assert_int_equal(c.flags, 1);
    char out[56];
    iro_traceparent_format(&c, out);
    assert_string_equal(out, TP);
    /* surrounding blanks are allowed; a later version may carry more */
    const char *padded = " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00 ";
    assert_int_equal(iro_traceparent_parse(padded, strlen(padded), &c), 0);
    assert_int_equal(c.flags, 0);
    const char *v1 = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra";
    assert_int_equal(iro_traceparent_parse(v1, strlen(v1), &c), 0);
}

static void traceparent_refused(void **st) {
    (void)st;
    static const char *const bad[] = {
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      /* no flags */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   /* upper case */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   /* zero trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   /* zero span id */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* version ff */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", /* v00 with more */
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* separator */
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",   /* not hex */
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  /* v01, no dash */
    };
    iro_span_ctx c = {.flags = 7};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(iro_traceparent_parse(bad[i], strlen(bad[i]), &c), -1);
        assert_int_equal(c.flags, 7); /* untouched */
    }
    /* given by length: the bytes after len do not count */
    assert_int_equal(iro_traceparent_parse(TP, 54, &c), -1);
}

static iro_span sample_span(void) {
    iro_span s = {.name = "route", .kind = IRO_SPAN_INTERNAL, .status = IRO_STATUS_OK};
    iro_span_ctx c;
    iro_traceparent_parse(TP, strlen(TP), &c);
    memcpy(s.trace_id, c.trace_id, 16);
    memcpy(s.span_id, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
    memcpy(s.parent_id, c.span_id, 8);
    s.start_ns = 1700000000123456789ull;
    s.end_ns = 1700000000223456789ull;
    iro_span_str(&s, "inferrail.policy", "kv_\"aware\"");
    iro_span_int(&s, "inferrail.candidates", 3);
    iro_span_double(&s, "inferrail.engine.kv_usage", 0.25);
    iro_span_bool(&s, "inferrail.predicted", true);
    return s;
}

static json_t *attr_value(json_t *span, const char *key) {
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(span, "attributes"), i, a) {
        if (strcmp(json_string_value(json_object_get(a, "key")), key) == 0)
            return json_object_get(a, "value");
    }
    return NULL;
}

static void encodes_otlp_json(void **st) {
    (void)st;
    iro_span s[2] = {sample_span(), sample_span()};
    memset(s[1].parent_id, 0, 8); /* a root: no parentSpanId */
    ir_buf b;
    ir_buf_init(&b, 1 << 20);
    assert_int_equal(iro_otlp_encode(&b, "inferrail-gateway", s, 2), 0);
    json_error_t e;
    json_t *doc = json_loads(b.data, 0, &e);
    assert_non_null(doc);
    json_t *rs = json_array_get(json_object_get(doc, "resourceSpans"), 0);
    json_t *res = json_array_get(json_object_get(json_object_get(rs, "resource"), "attributes"), 0);
    assert_string_equal(json_string_value(json_object_get(res, "key")), "service.name");
    json_t *spans = json_object_get(json_array_get(json_object_get(rs, "scopeSpans"), 0), "spans");
    assert_int_equal(json_array_size(spans), 2);
    json_t *sp = json_array_get(spans, 0);
    assert_string_equal(json_string_value(json_object_get(sp, "traceId")),
                        "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_string_equal(json_string_value(json_object_get(sp, "spanId")), "0102030405060708");
    assert_string_equal(json_string_value(json_object_get(sp, "parentSpanId")), "00f067aa0ba902b7");
    assert_string_equal(json_string_value(json_object_get(sp, "name")), "route");
    assert_int_equal(json_integer_value(json_object_get(sp, "kind")), 1);
    assert_string_equal(json_string_value(json_object_get(sp, "startTimeUnixNano")),
                        "1700000000123456789");
    assert_string_equal(json_string_value(json_object_get(sp, "endTimeUnixNano")),
                        "1700000000223456789");
    assert_string_equal(
        json_string_value(json_object_get(attr_value(sp, "inferrail.policy"), "stringValue")),
        "kv_\"aware\"");
    assert_string_equal(
        json_string_value(json_object_get(attr_value(sp, "inferrail.candidates"), "intValue")),
        "3");
    assert_true(json_real_value(json_object_get(attr_value(sp, "inferrail.engine.kv_usage"),
                                                "doubleValue")) == 0.25);
    assert_true(json_is_true(json_object_get(attr_value(sp, "inferrail.predicted"), "boolValue")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(sp, "status"), "code")), 1);
    assert_null(json_object_get(json_array_get(spans, 1), "parentSpanId"));
    json_decref(doc);
    /* a buffer too small is an error, never a cut body */
    ir_buf small;
    ir_buf_init(&small, 64);
    assert_int_equal(iro_otlp_encode(&small, "x", s, 2), -1);
    ir_buf_free(&small);
    ir_buf_free(&b);
}

static void attributes_are_capped(void **st) {
    (void)st;
    iro_span s = {.name = "x"};
    for (int i = 0; i < IRO_SPAN_ATTRS + 5; i++) iro_span_int(&s, "k", i);
    assert_int_equal(s.nattrs, IRO_SPAN_ATTRS);
    char longv[300];
    memset(longv, 'a', sizeof longv - 1);
    longv[sizeof longv - 1] = 0;
    iro_span t = {.name = "x"};
    iro_span_str(&t, "k", longv);
    assert_int_equal(strlen(t.attrs[0].v.s), IRO_ATTR_STR_MAX - 1);
}

static void random_ids_differ(void **st) {
    (void)st;
    uint8_t a[16], b[16], z[16] = {0};
    iro_trace_random_id(a, 16);
    iro_trace_random_id(b, 16);
    assert_memory_not_equal(a, b, 16);
    assert_memory_not_equal(a, z, 16);
}

typedef struct sink {
    _Atomic int posts;
    _Atomic size_t bytes;
    _Atomic int spans;
    atomic_bool fail, block;
} sink;

static int count_spans(const char *body) {
    int n = 0;
    for (const char *p = body; (p = strstr(p, "\"spanId\"")); p++) n++;
    return n;
}

static int sink_post(void *ud, const char *body, size_t len, char *err, size_t errlen) {
    sink *k = ud;
    while (atomic_load(&k->block)) usleep(1000);
    atomic_fetch_add(&k->posts, 1);
    atomic_fetch_add(&k->bytes, len);
    if (atomic_load(&k->fail)) {
        snprintf(err, errlen, "refused");
        return -1;
    }
    atomic_fetch_add(&k->spans, count_spans(body));
    return 0;
}

static void sampling_follows_trace_id(void **st) {
    (void)st;
    sink k = {0};
    char err[128];
    iro_tracer_cfg c = {.sample_ratio = 0.25, .post = sink_post, .post_ud = &k};
    iro_tracer *t = iro_tracer_new(&c, err, sizeof err);
    assert_non_null(t);
    int kept = 0;
    for (int i = 0; i < 4000; i++) {
        uint8_t id[16];
        iro_trace_random_id(id, 16);
        bool s = iro_tracer_sampled(t, id);
        assert_true(s == iro_tracer_sampled(t, id));
        kept += s;
    }
    assert_in_range(kept, 700, 1300); /* 1000 expected */
    uint8_t low[16] = {0}, high[16];
    memset(high, 0xff, 16);
    assert_true(iro_tracer_sampled(t, low));
    assert_false(iro_tracer_sampled(t, high));
    iro_tracer_free(t);
    c.sample_ratio = 0;
    t = iro_tracer_new(&c, err, sizeof err);
    assert_false(iro_tracer_sampled(t, low));
    iro_tracer_free(t);
    assert_false(iro_tracer_sampled(NULL, low));
}

static void exports_every_span(void **st) {
    (void)st;
    sink k = {0};
    char err[128];
    iro_tracer_cfg c = {.sample_ratio = 1, .batch = 7, .post = sink_post, .post_ud = &k};
    iro_tracer *t = iro_tracer_new(&c, err, sizeof err);
    assert_non_null(t);
    iro_span s = sample_span();
    for (int i = 0; i < 100; i++) assert_int_equal(iro_tracer_submit(t, &s), 0);
    iro_tracer_free(t); /* posts what is queued */
    assert_int_equal(atomic_load(&k.spans), 100);
    assert_true(atomic_load(&k.posts) >= 100 / 7);
}

static void full_queue_drops_and_counts(void **st) {
    (void)st;
    sink k = {0};
    atomic_store(&k.block, true);
    char err[128];
    iro_tracer_cfg c = {
        .sample_ratio = 1, .queue = 16, .batch = 4, .post = sink_post, .post_ud = &k};
    iro_tracer *t = iro_tracer_new(&c, err, sizeof err);
    iro_span s = sample_span();
    int taken = 0;
    for (int i = 0; i < 200; i++) taken += iro_tracer_submit(t, &s) == 0;
    /* the exporter holds at most one batch, the queue 16 */
    assert_in_range(taken, 16, 20);
    iro_tracer_stats stt;
    iro_tracer_stats_get(t, &stt);
    assert_int_equal(stt.dropped, 200 - taken);
    atomic_store(&k.fail, true);
    atomic_store(&k.block, false);
    iro_tracer_free(t);
    /* what was taken failed to post and is counted so */
    assert_int_equal(atomic_load(&k.spans), 0);
}

static void failing_then_recovering(void **st) {
    (void)st;
    sink k = {0};
    atomic_store(&k.fail, true);
    char err[128];
    iro_tracer_cfg c = {.sample_ratio = 1, .post = sink_post, .post_ud = &k};
    iro_tracer *t = iro_tracer_new(&c, err, sizeof err);
    iro_span s = sample_span();
    iro_tracer_submit(t, &s);
    iro_tracer_stats stt;
    for (int i = 0; i < 10000; i++) {
        iro_tracer_stats_get(t, &stt);
        if (stt.failed) break;
        usleep(1000);
    }
    assert_int_equal(stt.failed, 1);
    assert_true(stt.failing);
    atomic_store(&k.fail, false);
    iro_tracer_submit(t, &s);
    for (int i = 0; i < 10000; i++) {
        iro_tracer_stats_get(t, &stt);
        if (stt.exported) break;
        usleep(1000);
    }
    assert_int_equal(stt.exported, 1);
    assert_false(stt.failing);
    iro_tracer_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(traceparent_round_trip),  cmocka_unit_test(traceparent_refused),
        cmocka_unit_test(encodes_otlp_json),       cmocka_unit_test(attributes_are_capped),
        cmocka_unit_test(random_ids_differ),       cmocka_unit_test(sampling_follows_trace_id),
        cmocka_unit_test(exports_every_span),      cmocka_unit_test(full_queue_drops_and_counts),
        cmocka_unit_test(failing_then_recovering),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
