/* h2s_fixture.h: what the tests of the socket-free h2c server session
 * (irn__h2s, net_internal.h) share: a session whose io records what the server
 * sends, and builders of raw HTTP/2 frames for a client written by hand.
 *
 * Header-only (static inline) because every tests/unit/<dir>/test_*.c is
 * built as an executable of its own. */
#ifndef IR_TEST_H2S_FIXTURE_H
#define IR_TEST_H2S_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <nghttp2/nghttp2.h>

#include "net/net_internal.h"

/* The client connection preface, before its SETTINGS frame. */
#define H2S_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

typedef struct h2s_fx {
    irn__h2s *h;
    ir_buf wire;       /* what the server sent (the test takes bytes out as it reads them) */
    uint64_t timer_ms; /* the last timer the session asked for */
    bool done;         /* the session said it is over */
} h2s_fx;

static inline int h2s_fx_write(void *ctx, const uv_buf_t *parts, int n) {
    h2s_fx *f = ctx;
    for (int i = 0; i < n; i++) ir_buf_append(&f->wire, parts[i].base, parts[i].len);
    return 0;
}
static inline size_t h2s_fx_queued(void *ctx) {
    (void)ctx;
    return 0;
}
static inline void h2s_fx_schedule(void *ctx) {
    (void)ctx;
}
static inline void h2s_fx_timer(void *ctx, uint64_t ms) {
    ((h2s_fx *)ctx)->timer_ms = ms;
}
static inline void h2s_fx_done(void *ctx, bool graceful) {
    (void)graceful;
    ((h2s_fx *)ctx)->done = true;
}

/* Zeroes f and starts an h2c session (prior knowledge: the server's SETTINGS
 * are in f->wire) for cfg, whose h2c it sets; cfg's handlers and ud are the
 * test's. Free with h2s_fx_free. */
static inline void h2s_fx_start(h2s_fx *f, irn_server_cfg *cfg) {
    memset(f, 0, sizeof *f);
    ir_buf_init(&f->wire, 0);
    cfg->h2c = true;
    irn_h1_limits lim = {0};
    irn__h2s_io io = {f, h2s_fx_write, h2s_fx_queued, h2s_fx_schedule, h2s_fx_timer, h2s_fx_done};
    f->h = irn__h2s_new(cfg, &lim, NULL, "test:1", &io);
    assert_non_null(f->h);
    assert_int_equal(irn__h2s_start(f->h, NULL, 0, NULL), 0);
}

static inline void h2s_fx_free(h2s_fx *f) {
    irn__h2s_free(f->h);
    ir_buf_free(&f->wire);
}

/* ---- raw frames ---------------------------------------------------------------- */

/* Appends a frame: its 9-byte header, then len bytes of payload. */
static inline void h2_frame(ir_buf *b, uint8_t type, uint8_t flags, uint32_t stream,
                            const void *payload, size_t len) {
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

/* The client's preface and an empty SETTINGS frame. */
static inline void h2_preface(ir_buf *b) {
    assert_int_equal(ir_buf_append_str(b, H2S_PREFACE), 0);
    h2_frame(b, NGHTTP2_SETTINGS, 0, 0, NULL, 0);
}

/* GET /x, END_HEADERS and END_STREAM (static table, literals without indexing). */
static inline void h2_get_request(ir_buf *b, uint32_t stream) {
    static const uint8_t block[] = {0x82, 0x86, 0x04, 2, '/', 'x', 0x01, 1, 'x'};
    h2_frame(b, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, stream, block,
             sizeof block);
}

/* Counts the frames in w of a type (with ack set or not), and the error code of
 * its GOAWAY (-1: none). */
static inline int h2_count_frames(const ir_buf *w, uint8_t type, bool ack, int *goaway_code) {
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

#endif
