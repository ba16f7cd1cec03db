/* test_bad_upstream.c: the HTTP/1.1 client against a hand-written server that
 * misbehaves: interim statuses nobody asked for, a status under 100, framing
 * that breaks after the head, a head dribbled in, endless 100 Continue, and an
 * unsolicited response on an idle pooled connection. */
#include "net/loopback_fixture.h"

typedef struct script {
    uv_tcp_t listener;
    uv_tcp_t conns[4];
    int nconns;
    const char *resp[4]; /* what the n-th request gets (the last one repeats) */
    int nresp;
    /* h2: binary answers, resp[i] (h2len[i] bytes) on the first read of the i-th
     * connection, later reads ignored */
    bool h2;
    size_t h2len[4];
    int answered[4];
    int nreq;
    const char *later; /* written on the same connection later_ms after the first answer */
    uint64_t later_ms;
    uint64_t drip_ms;   /* > 0: the answer goes out a byte every drip_ms */
    const char *repeat; /* set: written every drip_ms after the answer, forever */
    uv_timer_t drip, late;
    uv_tcp_t *cur;
    const char *text;
    size_t pos;
    char buf[4096];
} script;

static void sc_write(uv_tcp_t *c, const char *s, size_t n) {
    if (uv_is_closing((uv_handle_t *)c)) return;
    uv_buf_t b = uv_buf_init((char *)s, (unsigned)n);
    assert_int_equal(uv_try_write((uv_stream_t *)c, &b, 1), (int)n);
}

static void sc_drip(uv_timer_t *t) {
    script *d = t->data;
    if (!d->cur || uv_is_closing((uv_handle_t *)d->cur)) {
        uv_timer_stop(t);
        return;
    }
    if (d->text[d->pos]) {
        sc_write(d->cur, d->text + d->pos++, 1);
    } else if (d->repeat) {
        sc_write(d->cur, d->repeat, strlen(d->repeat));
    } else {
        uv_timer_stop(t);
    }
}

static void sc_late(uv_timer_t *t) {
    script *d = t->data;
    if (d->cur) sc_write(d->cur, d->later, strlen(d->later));
}

static void sc_alloc(uv_handle_t *h, size_t s, uv_buf_t *b) {
    script *d = h->data;
    *b = uv_buf_init(d->buf, sizeof d->buf);
}

static void sc_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
    script *d = s->data;
    if (n < 0) {
        if ((uv_tcp_t *)s == d->cur) d->cur = NULL;
        if (!uv_is_closing((uv_handle_t *)s)) uv_close((uv_handle_t *)s, NULL);
        return;
    }
    if (n == 0) return;
    if (d->h2) {
        int i = (int)((uv_tcp_t *)s - d->conns);
        if (!d->answered[i]++) sc_write((uv_tcp_t *)s, d->resp[i], d->h2len[i]);
        return;
    }
    const char *text = d->resp[d->nreq < d->nresp ? d->nreq : d->nresp - 1];
    d->nreq++;
    d->cur = (uv_tcp_t *)s;
    d->text = text;
    d->pos = 0;
    if (d->drip_ms) {
        uv_timer_start(&d->drip, sc_drip, d->drip_ms, d->drip_ms);
    } else {
        sc_write(d->cur, text, strlen(text));
        if (d->repeat) {
            d->pos = strlen(text);
            uv_timer_start(&d->drip, sc_drip, 10, 10);
        }
    }
    if (d->later && d->nreq == 1) uv_timer_start(&d->late, sc_late, d->later_ms, 0);
}

static void sc_conn(uv_stream_t *l, int status) {
    script *d = l->data;
    assert_true(d->nconns < 4);
    uv_tcp_t *c = &d->conns[d->nconns++];
    uv_tcp_init(l->loop, c);
    c->data = d;
    assert_int_equal(uv_accept(l, (uv_stream_t *)c), 0);
    uv_read_start((uv_stream_t *)c, sc_alloc, sc_read);
}

static uint16_t sc_start(fx *f, script *d) {
    uv_timer_init(&f->loop, &d->drip);
    uv_timer_init(&f->loop, &d->late);
    d->drip.data = d->late.data = d;
    uint16_t port = raw_listen(f, &d->listener, "127.0.0.1", d, sc_conn);
    assert_true(port > 0);
    return port;
}

static void sc_stop(script *d) {
    uv_close((uv_handle_t *)&d->listener, NULL);
    uv_close((uv_handle_t *)&d->drip, NULL);
    uv_close((uv_handle_t *)&d->late, NULL);
}

/* One request to the script; returns the call (body freed). */
static call sc_call(fx *f, uint16_t port, uint64_t head_ms) {
    call c;
    call_init(&c);
    irn_client_req r = mkreq(f, "POST", "/v1/completions");
    r.port = port;
    r.body = "{}";
    r.body_len = 2;
    r.head_timeout_ns = head_ms * MS;
    do_call(f, &r, &c);
    ir_buf_free(&c.body);
    return c;
}

/* Each answer fails before any head reaches on_head. */
static void test_bad_heads(void **st) {
    static const char *const bad[] = {
        /* 101 to a request that asked for no upgrade */
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
        /* an interim status the client does not know, then a good answer */
        "HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        /* no status */
        "HTTP/1.1 000 Zero\r\nContent-Length: 2\r\n\r\nok",
        /* a chunk size past 64 bits right after the head */
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nxx\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fx f;
        fx_setup(&f, NULL, NULL);
        script d;
        memset(&d, 0, sizeof d);
        d.resp[0] = bad[i];
        d.nresp = 1;
        uint16_t port = sc_start(&f, &d);
        call c = sc_call(&f, port, 3000);
        assert_int_equal(c.err, IRN_EPARSE);
        assert_int_equal(c.nheads, 0);
        sc_stop(&d);
        fx_teardown(&f);
    }
}

/* 103 Early Hints (and 100) are skipped; the final answer comes through. */
static void test_early_hints_skipped(void **st) {
    fx f;
    fx_setup(&f, NULL, NULL);
    script d;
    memset(&d, 0, sizeof d);
    d.resp[0] = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    d.nresp = 1;
    uint16_t port = sc_start(&f, &d);
    call c = sc_call(&f, port, 3000);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.status, 200);
    assert_int_equal(c.nheads, 1);
    sc_stop(&d);
    fx_teardown(&f);
}

/* A bad chunk size that comes in a later read than the head: the head was not
 * given out yet (it waits for the first body byte), so the failure is clean. */
static void test_bad_chunk_after_head_read(void **st) {
    fx f;
    fx_setup(&f, NULL, NULL);
    script d;
    memset(&d, 0, sizeof d);
    d.resp[0] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    d.nresp = 1;
    d.later = "ffffffffffffffffff\r\n";
    d.later_ms = 30;
    uint16_t port = sc_start(&f, &d);
    call c = sc_call(&f, port, 3000);
    assert_int_equal(c.err, IRN_EPARSE);
    assert_int_equal(c.nheads, 0);
    sc_stop(&d);
    fx_teardown(&f);
}

/* The head timeout is a deadline for the whole head: a byte every 10 ms, or a
 * 100 Continue every 10 ms, do not move it (the idle timeout is 3 s). */
static void test_head_deadline_is_absolute(void **st) {
    for (int k = 0; k < 2; k++) {
        fx f;
        fx_setup(&f, NULL, NULL);
        script d;
        memset(&d, 0, sizeof d);
        if (k == 0) {
            d.resp[0] =
                "HTTP/1.1 200 OK\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n"
                "Content-Length: 2\r\n\r\nok";
            d.drip_ms = 10;
        } else {
            d.resp[0] = "HTTP/1.1 100 Continue\r\n\r\n";
            d.repeat = "HTTP/1.1 100 Continue\r\n\r\n";
        }
        d.nresp = 1;
        uint16_t port = sc_start(&f, &d);
        uint64_t t0 = uv_hrtime();
        call c = sc_call(&f, port, 150);
        uint64_t ms = (uv_hrtime() - t0) / MS;
        assert_int_equal(c.err, IRN_EHEAD_TIMEOUT);
        assert_int_equal(c.nheads, 0);
        assert_true(ms >= 140 && ms < 1500); /* the idle timeout is 3 s */
        sc_stop(&d);
        fx_teardown(&f);
    }
}

/* A response on an idle pooled connection that nobody asked for closes that
 * connection: the next request goes on a new one and gets its own answer. */
static void test_unsolicited_bytes_on_idle_connection(void **st) {
    fx f;
    fx_setup(&f, NULL, NULL);
    script d;
    memset(&d, 0, sizeof d);
    d.resp[0] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    d.resp[1] = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood";
    d.nresp = 2;
    d.later = "HTTP/1.1 200 OK\r\nX-Evil: 1\r\nContent-Length: 13\r\n\r\nEVIL-RESPONSE";
    d.later_ms = 30;
    uint16_t port = sc_start(&f, &d);
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "GET", "/x");
    r.port = port;
    do_call(&f, &r, &c);
    assert_int_equal(c.err, 0);
    assert_string_equal(c.body.data, "hello");
    ir_buf_free(&c.body);
    /* the stray bytes come 30 ms after the answer; a loaded machine may run that timer
     * late, so wait for the close for up to 1.5 s, far inside the pool's 30-s idle
     * timeout (which would close it too, and so must not be what this sees) */
    irn_pool_stats ps;
    uint64_t t0 = uv_hrtime();
    do {
        run_for(&f, 5);
        irn_pool_stats_get(f.pool, &ps);
    } while (ps.idle != 0 && uv_hrtime() - t0 < 1500 * MS);
    assert_int_equal(ps.idle, 0); /* closed when the stray bytes came */
    call_init(&c);
    do_call(&f, &r, &c);
    assert_int_equal(c.err, 0);
    assert_string_equal(c.body.data, "good");
    ir_buf_free(&c.body);
    irn_pool_stats_get(f.pool, &ps);
    assert_int_equal(ps.conns_created, 2);
    assert_int_equal(ps.conns_reused, 0);
    sc_stop(&d);
    fx_teardown(&f);
}

/* h2c: an engine's protocol error (DATA before HEADERS, a PUSH_PROMISE though
 * push is off) makes nghttp2 send GOAWAY and give up on the session: the
 * connection is closed, the request fails retryably (no head reached anyone),
 * and the next request opens a new connection instead of finding a dead one. */
static void test_h2_protocol_error_closes(void **st) {
    static const char data_first[] = "\0\0\0\4\0\0\0\0\0"
                                     "\0\0\1\0\0\0\0\0\1x";
    /* SETTINGS, then the ACK of the client's (ENABLE_PUSH 0 holds from there) */
    static const char push[] = "\0\0\0\4\0\0\0\0\0"
                               "\0\0\0\4\1\0\0\0\0"
                               "\0\0\7\5\4\0\0\0\1\0\0\0\2\x82\x84\x86";
    static const char ok[] = "\0\0\0\4\0\0\0\0\0"
                             "\0\0\1\1\5\0\0\0\1\x88"; /* HEADERS :status 200, END_STREAM */
    const char *bad[2] = {data_first, push};
    size_t badlen[2] = {sizeof data_first - 1, sizeof push - 1};
    for (int k = 0; k < 2; k++) {
        fx f;
        irn_pool_cfg pc;
        irn_pool_cfg_init(&pc);
        pc.http2 = true;
        fx_setup(&f, NULL, &pc);
        script d;
        memset(&d, 0, sizeof d);
        d.h2 = true;
        d.resp[0] = bad[k];
        d.h2len[0] = badlen[k];
        d.resp[1] = ok;
        d.h2len[1] = sizeof ok - 1;
        uint16_t port = sc_start(&f, &d);
        uint64_t t0 = uv_hrtime();
        call c = sc_call(&f, port, 3000);
        assert_int_equal(c.err, IRN_ECLOSED_EARLY);
        assert_int_equal(c.nheads, 0);
        assert_true((uv_hrtime() - t0) / MS < 1000);
        c = sc_call(&f, port, 3000);
        assert_int_equal(c.err, 0);
        assert_int_equal(c.status, 200);
        assert_int_equal(d.nconns, 2);
        sc_stop(&d);
        fx_teardown(&f);
    }
}

int main(void) {
    if (getenv("NETDEBUG")) ir_log_set_level(IR_LOG_DEBUG);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_heads),
        cmocka_unit_test(test_early_hints_skipped),
        cmocka_unit_test(test_bad_chunk_after_head_read),
        cmocka_unit_test(test_head_deadline_is_absolute),
        cmocka_unit_test(test_unsolicited_bytes_on_idle_connection),
        cmocka_unit_test(test_h2_protocol_error_closes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
