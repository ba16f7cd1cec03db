/* test_h2_bounds.c: an h2c server session (socket-free) against a client that
 * opens no window (SETTINGS_INITIAL_WINDOW_SIZE 0): the response bytes of all
 * its streams are one bounded queue, producers are told to pause and are
 * drained as for HTTP/1.1, and streams that cannot be written are reset. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/h2s_fixture.h"

#define NSTREAMS 8
#define CHUNK    (16 * 1024)
#define MAXQ     (64 * 1024)
#define HIGH     (32 * 1024)
#define LOW      (8 * 1024)

typedef struct tb {
    h2s_fx s; /* its wire: server -> client bytes not yet given to the client */
    nghttp2_session *cli;
    irn_resp *resp[NSTREAMS];
    int nresp;
    int aborts;
    int drains;
    int closed_streams;
} tb;

static void on_abort(irn_resp *resp, void *ud) {
    tb *t = ud;
    t->aborts++;
    for (int i = 0; i < t->nresp; i++)
        if (t->resp[i] == resp) t->resp[i] = NULL;
    irn_resp_end(resp);
}

static void on_drain(irn_resp *resp, void *ud) {
    ((tb *)ud)->drains++;
}

static void on_request(void *ud, irn_request *req, irn_resp *resp) {
    tb *t = ud;
    irn_resp_on_abort(resp, on_abort, t);
    irn_resp_on_drain(resp, on_drain, t);
    assert_int_equal(irn_resp_start(resp, 200, NULL, 0, -1), 0);
    t->resp[t->nresp++] = resp;
}

static int cli_close(nghttp2_session *s, int32_t id, uint32_t code, void *ud) {
    ((tb *)ud)->closed_streams++;
    return 0;
}

/* Client -> server until neither side has anything to say. */
static void exchange(tb *t) {
    for (int round = 0; round < 16; round++) {
        bool moved = false;
        const uint8_t *data;
        ssize_t n;
        while ((n = nghttp2_session_mem_send(t->cli, &data)) > 0) {
            irn__h2s_feed(t->s.h, (const char *)data, (size_t)n);
            moved = true;
        }
        irn__h2s_flush(t->s.h);
        if (t->s.wire.len) {
            assert_true(
                nghttp2_session_mem_recv(t->cli, (uint8_t *)t->s.wire.data, t->s.wire.len) >= 0);
            ir_buf_reset(&t->s.wire);
            moved = true;
        }
        if (!moved) return;
    }
}

static void setup(tb *t, uint32_t window) {
    memset(t, 0, sizeof *t);
    irn_server_cfg cfg;
    irn_server_cfg_init(&cfg);
    cfg.max_write_queue = MAXQ;
    cfg.write_high_water = HIGH;
    cfg.write_low_water = LOW;
    cfg.h2_stall_timeout_ns = 100 * 1000000ull;
    cfg.on_request = on_request;
    cfg.ud = t;
    h2s_fx_start(&t->s, &cfg);
    irn__h2s_feed(t->s.h, H2S_PREFACE, sizeof H2S_PREFACE - 1);

    nghttp2_session_callbacks *cbs;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, cli_close);
    assert_int_equal(nghttp2_session_client_new(&t->cli, cbs, t), 0);
    nghttp2_session_callbacks_del(cbs);
    /* The client's own preface is what nghttp2 sends first; the server read ours. */
    nghttp2_settings_entry iv[1] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window}};
    assert_int_equal(nghttp2_submit_settings(t->cli, NGHTTP2_FLAG_NONE, iv, 1), 0);
}

/* nghttp2's client session starts with the preface, which the test already fed:
 * skip it from the first bytes it sends. */
static void skip_client_preface(tb *t) {
    const uint8_t *data;
    ssize_t n = nghttp2_session_mem_send(t->cli, &data);
    assert_true(n >= 24);
    irn__h2s_feed(t->s.h, (const char *)data + 24, (size_t)n - 24);
}

static void open_streams(tb *t, int n) {
    const nghttp2_nv nv[] = {
        {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0},
        {(uint8_t *)":path", (uint8_t *)"/x", 5, 2, 0},
        {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
        {(uint8_t *)":authority", (uint8_t *)"t", 10, 1, 0},
    };
    for (int i = 0; i < n; i++)
        assert_true(nghttp2_submit_request(t->cli, NULL, nv, 4, NULL, NULL) > 0);
    exchange(t);
    assert_int_equal(t->nresp, n);
}

static void teardown(tb *t) {
    for (int i = 0; i < t->nresp; i++)
        if (t->resp[i]) irn_resp_end(t->resp[i]);
    h2s_fx_free(&t->s);
    nghttp2_session_del(t->cli);
}

/* Every write reports the connection's queue, so the third stream's producer is
 * told to pause although its own stream holds one chunk; writes stop at twice
 * max_write_queue for the connection, not 64 MiB. */
static void test_conn_queue_is_bounded(void **state) {
    tb t;
    setup(&t, 0);
    skip_client_preface(&t);
    open_streams(&t, NSTREAMS);
    char chunk[CHUNK];
    memset(chunk, 'x', sizeof chunk);
    size_t accepted = 0;
    int refused = 0;
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < NSTREAMS; i++) {
            int64_t q = irn_resp_write(t.resp[i], chunk, sizeof chunk);
            if (q == IRN_ENOBUFS) {
                refused++;
                continue;
            }
            assert_true(q >= 0);
            accepted += CHUNK;
            assert_int_equal((size_t)q, accepted); /* the connection's bytes, not the stream's */
            if (accepted >= HIGH) assert_true(q >= HIGH);
        }
    }
    exchange(&t);
    assert_true(accepted <= 2 * MAXQ);
    assert_true(refused > 0);
    assert_int_equal(t.drains, 0);
    teardown(&t);
}

/* Bytes that cannot go out for h2_stall_timeout: their streams are reset and
 * the handlers get on_abort; the connection stays. */
static void test_stalled_streams_are_reset(void **state) {
    tb t;
    setup(&t, 0);
    skip_client_preface(&t);
    open_streams(&t, 3);
    char chunk[CHUNK];
    memset(chunk, 'x', sizeof chunk);
    for (int i = 0; i < 2; i++) assert_true(irn_resp_write(t.resp[i], chunk, sizeof chunk) > 0);
    exchange(&t);
    assert_true(t.s.timer_ms > 0 && t.s.timer_ms <= 100); /* the stall deadline is armed */
    usleep(120 * 1000);
    irn__h2s_on_timer(t.s.h);
    exchange(&t);
    assert_int_equal(t.aborts, 2);
    assert_int_equal(t.closed_streams, 2);
    assert_false(t.s.done);
    assert_non_null(t.resp[2]); /* nothing queued on it: not stalled */
    assert_int_equal(irn_resp_queued(t.resp[2]), 0);
    teardown(&t);
}

/* Once the client opens its window the queue empties and every producer that
 * was told to pause is drained. */
static void test_drain_after_window_opens(void **state) {
    tb t;
    setup(&t, 0);
    skip_client_preface(&t);
    open_streams(&t, 2);
    char chunk[CHUNK];
    memset(chunk, 'x', sizeof chunk);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 2; i++) assert_true(irn_resp_write(t.resp[i], chunk, sizeof chunk) > 0);
    assert_true(irn_resp_queued(t.resp[0]) >= HIGH);
    exchange(&t);
    assert_int_equal(t.drains, 0);
    nghttp2_settings_entry iv[1] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
    nghttp2_submit_settings(t.cli, NGHTTP2_FLAG_NONE, iv, 1);
    nghttp2_submit_window_update(t.cli, NGHTTP2_FLAG_NONE, 0, 1 << 20);
    exchange(&t);
    assert_int_equal(irn_resp_queued(t.resp[0]), 0);
    assert_int_equal(t.drains, 2);
    teardown(&t);
}

int main(void) {
    if (getenv("H2DEBUG")) ir_log_set_level(IR_LOG_DEBUG);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conn_queue_is_bounded),
        cmocka_unit_test(test_stalled_streams_are_reset),
        cmocka_unit_test(test_drain_after_window_opens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
