/* test_h2_floods.c: an h2c server session (socket-free) fed hostile input as raw
 * frames: input goes to nghttp2 in bounded slices of whole frames (so that one
 * read of a thousand streams opened and reset cannot hold the loop), frame
 * headers split anywhere are followed, and a client past the control frame
 * budget gets GOAWAY(ENHANCE_YOUR_CALM) while one under it is served.
 * tests/stress's hostile scenario sends the same floods through the gateway. */
#include <stdlib.h>
#include <string.h>

#include "net/h2s_fixture.h"

#define MAX_SLICE_FRAMES 32 /* SLICE_FRAMES in h2_server.c */
#define CALM_BURST       1000

typedef struct tf {
    h2s_fx s;
    int requests;
} tf;

static void on_request(void *ud, irn_request *req, irn_resp *resp) {
    ((tf *)ud)->requests++;
    irn_resp_send(resp, 200, "text/plain", "ok", 2, NULL, 0);
}

static void setup(tf *t) {
    memset(t, 0, sizeof *t);
    irn_server_cfg cfg;
    irn_server_cfg_init(&cfg);
    cfg.on_request = on_request;
    cfg.ud = t;
    h2s_fx_start(&t->s, &cfg);
}

static void teardown(tf *t) {
    h2s_fx_free(&t->s);
}

/* A thousand streams opened and reset in one read: each call takes whole frames,
 * at most MAX_SLICE_FRAMES, and leaves the rest to the next. */
static void test_rapid_reset_in_slices(void **state) {
    tf t;
    setup(&t);
    ir_buf in;
    ir_buf_init(&in, 0);
    h2_preface(&in);
    static const uint8_t cancel[4] = {0, 0, 0, NGHTTP2_CANCEL};
    for (uint32_t s = 1; s < 2 * 1000; s += 2) {
        static const uint8_t block[] = {0x83, 0x86, 0x04, 2, '/', 'x', 0x01, 1, 'x'};
        h2_frame(&in, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, s, block, sizeof block);
        h2_frame(&in, NGHTTP2_RST_STREAM, 0, s, cancel, sizeof cancel);
    }
    size_t pos = 0, calls = 0, frames = 0;
    int rc = 0;
    while (pos < in.len) {
        size_t used = 0;
        rc = irn__h2s_feed_some(t.s.h, in.data + pos, in.len - pos, &used);
        if (rc < 0) break;
        assert_true(rc <= MAX_SLICE_FRAMES);
        assert_true(used > 0);
        frames += (size_t)rc;
        pos += used;
        calls++;
    }
    /* nghttp2's reset rate limit (1,000 at once) may end it: with a GOAWAY. */
    int code;
    if (rc < 0) assert_int_equal(h2_count_frames(&t.s.wire, NGHTTP2_GOAWAY, false, &code), 1);
    assert_true(calls >= frames / MAX_SLICE_FRAMES);
    assert_true(frames >= 1000); /* most of the 2,001 frames went in, 32 at a time */
    assert_int_equal(t.requests, 0);
    ir_buf_free(&in);
    teardown(&t);
}

/* 2,000 SETTINGS frames from a client that reads its acks: at most CALM_BURST are
 * served, then GOAWAY(ENHANCE_YOUR_CALM), and the session is done. */
static void test_settings_flood_gets_calm(void **state) {
    tf t;
    setup(&t);
    ir_buf in;
    ir_buf_init(&in, 0);
    h2_preface(&in);
    for (int i = 0; i < 2000; i++) h2_frame(&in, NGHTTP2_SETTINGS, 0, 0, NULL, 0);
    assert_int_equal(irn__h2s_feed(t.s.h, in.data, in.len), IRN_ECLOSED);
    int code;
    assert_int_equal(h2_count_frames(&t.s.wire, NGHTTP2_GOAWAY, false, &code), 1);
    assert_int_equal(code, NGHTTP2_ENHANCE_YOUR_CALM);
    int acks = h2_count_frames(&t.s.wire, NGHTTP2_SETTINGS, true, NULL);
    /* The frames of the last slice before the refused one go unacked: the GOAWAY
     * ends the session first. */
    assert_true(acks >= CALM_BURST - MAX_SLICE_FRAMES && acks <= CALM_BURST);
    assert_true(t.s.done);
    ir_buf_free(&in);
    teardown(&t);
}

/* Fewer PINGs than the budget, with every frame header split byte by byte, then a
 * request: all acked, the request answered, no GOAWAY. */
static void test_pings_under_budget_served(void **state) {
    tf t;
    setup(&t);
    ir_buf in;
    ir_buf_init(&in, 0);
    h2_preface(&in);
    static const uint8_t opaque[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int i = 0; i < 500; i++) h2_frame(&in, NGHTTP2_PING, 0, 0, opaque, sizeof opaque);
    h2_get_request(&in, 1);
    for (size_t i = 0; i < in.len; i++) assert_true(irn__h2s_feed(t.s.h, in.data + i, 1) >= 0);
    int code;
    assert_int_equal(h2_count_frames(&t.s.wire, NGHTTP2_PING, true, NULL), 500);
    assert_int_equal(h2_count_frames(&t.s.wire, NGHTTP2_GOAWAY, false, &code), 0);
    assert_int_equal(t.requests, 1);
    assert_false(t.s.done);
    ir_buf_free(&in);
    teardown(&t);
}

/* Large DATA frames are not held to the frame count only: a slice stops at 64 KiB of
 * whole frames, and a frame the input ends in goes in part. */
static void test_data_slices_by_bytes(void **state) {
    tf t;
    setup(&t);
    ir_buf in;
    ir_buf_init(&in, 0);
    h2_preface(&in);
    h2_frame(&in, NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, NULL, 0); /* the server's windows apply */
    static const uint8_t block[] = {0x83, 0x86, 0x04, 2, '/', 'x', 0x01, 1, 'x'};
    h2_frame(&in, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, block, sizeof block);
    static uint8_t chunk[16384];
    for (int i = 0; i < 8; i++)
        h2_frame(&in, NGHTTP2_DATA, i == 7 ? NGHTTP2_FLAG_END_STREAM : 0, 1, chunk, sizeof chunk);
    size_t used = 0;
    assert_true(irn__h2s_feed_some(t.s.h, in.data, in.len, &used) >= 0);
    assert_true(used >= 64 * 1024 && used < in.len);
    size_t pos = used;
    while (pos < in.len) {
        assert_true(irn__h2s_feed_some(t.s.h, in.data + pos, in.len - pos, &used) >= 0);
        pos += used;
    }
    assert_int_equal(t.requests, 1);
    ir_buf_free(&in);
    teardown(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rapid_reset_in_slices),
        cmocka_unit_test(test_settings_flood_gets_calm),
        cmocka_unit_test(test_pings_under_budget_served),
        cmocka_unit_test(test_data_slices_by_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
