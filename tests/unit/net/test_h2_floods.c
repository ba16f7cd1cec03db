/* test_h2_floods.c: an h2c server session (socket-free) fed hostile input as raw
 * frames: input goes to nghttp2 in bounded slices of whole frames (so that one
 * read of a thousand streams opened and reset cannot hold the loop), frame
 * headers split anywhere are followed, and a client past the control frame
 * budget gets GOAWAY(ENHANCE_YOUR_CALM) while one under it is served.
 * tests/stress's hostile scenario sends the same floods through the gateway. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "net/net_internal.h"

#define MAX_SLICE_FRAMES 32 /* SLICE_FRAMES in h2_server.c */
#define CALM_BURST       1000

typedef struct tf {
    irn__h2s *h;
    ir_buf wire; /* what the server sent */
    int requests;
    bool done;
} tf;

static int io_write(void *ctx, const uv_buf_t *parts, int n) {
    tf *t = ctx;
    for (int i = 0; i < n; i++) ir_buf_append(&t->wire, parts[i].base, parts[i].len);
    return 0;
}
static size_t io_queued(void *ctx) {
    return 0;
}
static void io_schedule(void *ctx) {}
static void io_timer(void *ctx, uint64_t ms) {}
static void io_done(void *ctx, bool graceful) {
    ((tf *)ctx)->done = true;
}

static void on_request(void *ud, irn_request *req, irn_resp *resp) {
    ((tf *)ud)->requests++;
    irn_resp_send(resp, 200, "text/plain", "ok", 2, NULL, 0);
}

static void setup(tf *t) {
    memset(t, 0, sizeof *t);
    ir_buf_init(&t->wire, 0);
    irn_server_cfg cfg;
    irn_server_cfg_init(&cfg);
    cfg.h2c = true;
    cfg.on_request = on_request;
    cfg.ud = t;
    irn_h1_limits lim = {0};
    irn__h2s_io io = {t, io_write, io_queued, io_schedule, io_timer, io_done};
    t->h = irn__h2s_new(&cfg, &lim, NULL, "test:1", &io);
    assert_non_null(t->h);
    assert_int_equal(irn__h2s_start(t->h, NULL, 0, NULL), 0);
}

static void teardown(tf *t) {
    irn__h2s_free(t->h);
    ir_buf_free(&t->wire);
}

static void frame(ir_buf *b, uint8_t type, uint8_t flags, uint32_t stream, const void *payload,
                  size_t len) {
    uint8_t hd[9] = {(uint8_t)(len >> 16),
                     (uint8_t)(len >> 8),
                     (uint8_t)len,
                     type,
                     flags,
                     (uint8_t)(stream >> 24 & 0x7f),
                     (uint8_t)(stream >> 16),
                     (uint8_t)(stream >> 8),
                     (uint8_t)stream};
    assert_int_equal(ir_buf_append(b, hd, sizeof hd), 0);
    if (len) assert_int_equal(ir_buf_append(b, payload, len), 0);
}

static void preface(ir_buf *b) {
    assert_int_equal(ir_buf_append_str(b, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0);
    frame(b, NGHTTP2_SETTINGS, 0, 0, NULL, 0);
}

/* GET /x, END_HEADERS and END_STREAM (static table, literals without indexing). */
static void get_request(ir_buf *b, uint32_t stream) {
    static const uint8_t block[] = {0x82, 0x86, 0x04, 2, '/', 'x', 0x01, 1, 'x'};
    frame(b, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, stream, block,
          sizeof block);
}

/* Counts the server's frames of a type (with ack set or not), and the error code of
 * its GOAWAY (-1: none). */
static int count_frames(const ir_buf *w, uint8_t type, bool ack, int *goaway_code) {
    int n = 0;
    if (goaway_code) *goaway_code = -1;
    for (size_t i = 0; i + 9 <= w->len;) {
        const uint8_t *p = (const uint8_t *)w->data + i;
        size_t len = (size_t)p[0] << 16 | (size_t)p[1] << 8 | p[2];
        if (p[3] == type && ((p[4] & NGHTTP2_FLAG_ACK) != 0) == ack) n++;
        if (p[3] == NGHTTP2_GOAWAY && goaway_code && len >= 8)
            *goaway_code = p[13] << 24 | p[14] << 16 | p[15] << 8 | p[16];
        i += 9 + len;
    }
    return n;
}

/* A thousand streams opened and reset in one read: each call takes whole frames,
 * at most MAX_SLICE_FRAMES, and leaves the rest to the next. */
static void test_rapid_reset_in_slices(void **state) {
    tf t;
    setup(&t);
    ir_buf in;
    ir_buf_init(&in, 0);
    preface(&in);
    static const uint8_t cancel[4] = {0, 0, 0, NGHTTP2_CANCEL};
    for (uint32_t s = 1; s < 2 * 1000; s += 2) {
        static const uint8_t block[] = {0x83, 0x86, 0x04, 2, '/', 'x', 0x01, 1, 'x'};
        frame(&in, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, s, block, sizeof block);
        frame(&in, NGHTTP2_RST_STREAM, 0, s, cancel, sizeof cancel);
    }
    size_t pos = 0, calls = 0, frames = 0;
    int rc = 0;
    while (pos < in.len) {
        size_t used = 0;
        rc = irn__h2s_feed_some(t.h, in.data + pos, in.len - pos, &used);
        if (rc < 0) break;
        assert_true(rc <= MAX_SLICE_FRAMES);
        assert_true(used > 0);
        frames += (size_t)rc;
        pos += used;
        calls++;
    }
    /* nghttp2's reset rate limit (1,000 at once) may end it: with a GOAWAY. */
    int code;
    if (rc < 0) assert_int_equal(count_frames(&t.wire, NGHTTP2_GOAWAY, false, &code), 1);
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
    preface(&in);
    for (int i = 0; i < 2000; i++) frame(&in, NGHTTP2_SETTINGS, 0, 0, NULL, 0);
    assert_int_equal(irn__h2s_feed(t.h, in.data, in.len), IRN_ECLOSED);
    int code;
    assert_int_equal(count_frames(&t.wire, NGHTTP2_GOAWAY, false, &code), 1);
    assert_int_equal(code, NGHTTP2_ENHANCE_YOUR_CALM);
    int acks = count_frames(&t.wire, NGHTTP2_SETTINGS, true, NULL);
    /* The frames of the last slice before the refused one go unacked: the GOAWAY
     * ends the session first. */
    assert_true(acks >= CALM_BURST - MAX_SLICE_FRAMES && acks <= CALM_BURST);
    assert_true(t.done);
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
    preface(&in);
    static const uint8_t opaque[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int i = 0; i < 500; i++) frame(&in, NGHTTP2_PING, 0, 0, opaque, sizeof opaque);
    get_request(&in, 1);
    for (size_t i = 0; i < in.len; i++) assert_true(irn__h2s_feed(t.h, in.data + i, 1) >= 0);
    int code;
    assert_int_equal(count_frames(&t.wire, NGHTTP2_PING, true, NULL), 500);
    assert_int_equal(count_frames(&t.wire, NGHTTP2_GOAWAY, false, &code), 0);
    assert_int_equal(t.requests, 1);
    assert_false(t.done);
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
    preface(&in);
    frame(&in, NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, NULL, 0); /* the server's windows apply */
    static const uint8_t block[] = {0x83, 0x86, 0x04, 2, '/', 'x', 0x01, 1, 'x'};
    frame(&in, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, block, sizeof block);
    static uint8_t chunk[16384];
    for (int i = 0; i < 8; i++)
        frame(&in, NGHTTP2_DATA, i == 7 ? NGHTTP2_FLAG_END_STREAM : 0, 1, chunk, sizeof chunk);
    size_t used = 0;
    assert_true(irn__h2s_feed_some(t.h, in.data, in.len, &used) >= 0);
    assert_true(used >= 64 * 1024 && used < in.len);
    size_t pos = used;
    while (pos < in.len) {
        assert_true(irn__h2s_feed_some(t.h, in.data + pos, in.len - pos, &used) >= 0);
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
