/* test_h2.c: h2c server and client over 127.0.0.1 in one uv loop. */
#include "net/loopback_fixture.h"

#include <nghttp2/nghttp2.h>

/* The fixture with h2c on at the server; http2: the pool speaks h2c too. */
static void h2_setup(fx *f, const irn_server_cfg *extra, bool http2) {
    irn_server_cfg cfg;
    if (extra)
        cfg = *extra;
    else
        irn_server_cfg_init(&cfg);
    cfg.h2c = true;
    irn_pool_cfg pc;
    irn_pool_cfg_init(&pc);
    pc.http2 = http2;
    fx_setup(f, &cfg, &pc);
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_h2_get_post(void **st) {
    fx f;
    h2_setup(&f, NULL, true);
    for (int i = 0; i < 3; i++) {
        call c;
        call_init(&c);
        irn_client_req r = mkreq(&f, "GET", "/hello");
        irn_header xh = {"X-Test", 6, "Yes", 3};
        r.headers = &xh;
        r.nheaders = 1;
        do_call(&f, &r, &c);
        assert_int_equal(c.err, 0);
        assert_int_equal(c.status, 200);
        char want[128];
        snprintf(want, sizeof want, "hello GET 127.0.0.1:%d Yes 2.0", f.port);
        assert_string_equal(c.body.data, want);
        assert_non_null(strstr(c.peer_hdr, "127.0.0.1:"));
        ir_buf_free(&c.body);
    }
    size_t n = 100 * 1024;
    char *payload = malloc(n);
    for (size_t i = 0; i < n; i++) payload[i] = (char)('a' + i % 26);
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "POST", "/echo");
    r.body = payload;
    r.body_len = n;
    do_call(&f, &r, &c);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.status, 200);
    assert_int_equal(c.body.len, n);
    assert_memory_equal(c.body.data, payload, n);
    ir_buf_free(&c.body);
    free(payload);
    call_init(&c);
    r = mkreq(&f, "GET", "/missing");
    do_call(&f, &r, &c);
    assert_int_equal(c.status, 404);
    assert_non_null(strstr(c.body.data, "\"type\":\"NotFoundError\""));
    ir_buf_free(&c.body);

    irn_pool_stats ps;
    irn_pool_stats_get(f.pool, &ps);
    assert_int_equal(ps.conns_created, 1);
    assert_int_equal(ps.requests, 5);
    irn_server_stats ss;
    irn_server_stats_get(f.srv, &ss);
    assert_int_equal(ss.conns_accepted, 1);
    assert_int_equal(ss.h2_conns, 1);
    assert_int_equal(ss.requests, 5);
    fx_teardown(&f);
}

/* :path splits into path and query as an HTTP/1.1 target does: query "" when
 * there is none. */
static void test_h2_target_split(void **st) {
    fx f;
    h2_setup(&f, NULL, true);
    const char *paths[] = {"/target", "/target?a=1&b=?"};
    const char *want[] = {"/target||/target", "/target|a=1&b=?|/target?a=1&b=?"};
    for (int i = 0; i < 2; i++) {
        call c;
        call_init(&c);
        irn_client_req r = mkreq(&f, "GET", paths[i]);
        do_call(&f, &r, &c);
        assert_int_equal(c.status, 200);
        assert_string_equal(c.body.data, want[i]);
        ir_buf_free(&c.body);
    }
    fx_teardown(&f);
}

/* A body in parts is framed as one body, in order, over several DATA frames. */
static void test_h2_body_parts(void **st) {
    fx f;
    h2_setup(&f, NULL, true);
    size_t n = 100 * 1024;
    char *payload = malloc(n);
    for (size_t i = 0; i < n; i++) payload[i] = (char)('a' + i % 26);
    irn_part parts[] = {{payload, 40000}, {"", 0}, {"<mid>", 5}, {payload + 40000, n - 40000}};
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "POST", "/echo");
    r.body_parts = parts;
    r.nbody_parts = 4;
    do_call(&f, &r, &c);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.status, 200);
    assert_int_equal(c.body.len, n + 5);
    assert_memory_equal(c.body.data, payload, 40000);
    assert_memory_equal(c.body.data + 40000, "<mid>", 5);
    assert_memory_equal(c.body.data + 40005, payload + 40000, n - 40000);
    ir_buf_free(&c.body);
    free(payload);
    fx_teardown(&f);
}

static void test_h2_concurrent(void **st) {
    fx f;
    h2_setup(&f, NULL, true);
    enum { N = 50 };
    call cs[N];
    char bodies[N][32];
    int all = 0;
    for (int i = 0; i < N; i++) {
        call_init(&cs[i]);
        irn_client_req r = mkreq(&f, i % 2 ? "POST" : "GET", i % 2 ? "/echo" : "/hello");
        if (i % 2) {
            snprintf(bodies[i], sizeof bodies[i], "body-%d", i);
            r.body = bodies[i];
            r.body_len = strlen(bodies[i]);
        }
        assert_int_equal(irn_client_request(f.pool, &r, &CBS, &cs[i], &cs[i].h), 0);
    }
    uint64_t start = uv_hrtime();
    while (!all) {
        uv_run(&f.loop, UV_RUN_ONCE);
        all = 1;
        for (int i = 0; i < N; i++) all &= cs[i].done;
        if (uv_hrtime() - start > 5000 * MS) fail_msg("timed out");
    }
    for (int i = 0; i < N; i++) {
        assert_int_equal(cs[i].err, 0);
        assert_int_equal(cs[i].status, 200);
        if (i % 2)
            assert_string_equal(cs[i].body.data, bodies[i]);
        else
            assert_non_null(strstr(cs[i].body.data, "hello GET"));
        ir_buf_free(&cs[i].body);
    }
    irn_pool_stats ps;
    irn_pool_stats_get(f.pool, &ps);
    assert_int_equal(ps.conns_created, 1);
    irn_server_stats ss;
    irn_server_stats_get(f.srv, &ss);
    assert_int_equal(ss.conns_accepted, 1);
    assert_int_equal(ss.requests, N);
    fx_teardown(&f);
}

/* A 3.2 MiB response to a paused client: flow control stops the server, whose
 * writes then report the queue; after resume on_drain restarts the producer. */
static void test_h2_flow_control(void **st) {
    fx f;
    h2_setup(&f, NULL, true);
    call c;
    call_init(&c);
    c.pause_after = 1; /* at the first body bytes */
    irn_client_req r = mkreq(&f, "GET", "/big");
    assert_int_equal(irn_client_request(f.pool, &r, &CBS, &c, &c.h), 0);
    /* until it pauses (a loaded machine may take a while), then 300 ms more for the
     * server to run into the window */
    for (uint64_t t0 = uv_hrtime(); !c.paused && uv_hrtime() - t0 < 5000 * MS;) run_for(&f, 5);
    run_for(&f, 300);
    assert_true(c.paused);
    assert_false(c.done);
    /* Held by the client: at most the first delivery plus the stream window. */
    size_t got = c.body.len;
    assert_true(got < 1024 * 1024);
    /* The server stopped producing at the high-water mark. */
    assert_true(f.big_step < f.big_n);
    assert_true(f.big_max_q < 1024 * 1024);
    assert_int_equal(c.body.len, got); /* nothing delivered while paused */
    irn_client_resume(c.h);
    run_until(&f, &c.done);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.body.len, (size_t)f.big_n * FX_CHUNK);
    assert_true(f.drains >= 1);
    ir_buf_free(&c.body);
    fx_teardown(&f);
}

static void test_h2_cancel_aborts(void **st) {
    fx f;
    h2_setup(&f, NULL, true);
    uv_timer_t t;
    uv_timer_init(&f.loop, &t);
    call c;
    call_init(&c);
    t.data = &c;
    irn_client_req r = mkreq(&f, "GET", "/slow");
    assert_int_equal(irn_client_request(f.pool, &r, &CBS, &c, &c.h), 0);
    /* Cancelled once the server holds it: a cancel before its HEADERS go out (a loaded
     * machine can take 50 ms to connect) leaves the server nothing to abort. */
    run_until(&f, &f.nheld);
    uv_timer_start(&t, cancel_cb, 0, 0);
    run_until(&f, &c.done);
    assert_int_equal(c.err, IRN_ECANCELED);
    assert_int_equal(c.nheads, 0);
    run_until(&f, &f.aborts);
    assert_int_equal(f.aborts, 1);
    /* The connection is still good for more. */
    call_init(&c);
    r = mkreq(&f, "GET", "/hello");
    do_call(&f, &r, &c);
    assert_int_equal(c.status, 200);
    ir_buf_free(&c.body);
    irn_pool_stats ps;
    irn_pool_stats_get(f.pool, &ps);
    assert_int_equal(ps.conns_created, 1);
    uv_close((uv_handle_t *)&t, NULL);
    fx_teardown(&f);
}

/* The server's own answers carry the request's path, or "none" (the name goes out in
 * lower case, as h2 requires). */
static void on_error_hook(void *ud, const irn_request *req, irn_error_answer *e) {
    (void)ud;
    snprintf(e->buf, sizeof e->buf, "%s", req ? req->path : "none");
    e->headers[e->nheaders++] = (irn_header){"X-Req", 5, e->buf, strlen(e->buf)};
}

static void test_h2_server_errors(void **st) {
    irn_server_cfg cfg;
    irn_server_cfg_init(&cfg);
    cfg.on_error = on_error_hook;
    cfg.max_body_bytes = 1024;
    cfg.max_header_bytes = 2048;
    fx f;
    h2_setup(&f, &cfg, true);
    char big[4096];
    memset(big, 'b', sizeof big);
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "POST", "/echo");
    r.body = big;
    r.body_len = sizeof big;
    do_call(&f, &r, &c);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.status, 413);
    assert_non_null(strstr(c.body.data, "\"code\":413"));
    assert_string_equal(c.req_hdr, "/echo");
    ir_buf_free(&c.body);

    big[3000] = '\0';
    irn_header hh = {"X-Big", 5, big, 3000};
    call_init(&c);
    r = mkreq(&f, "GET", "/hello");
    r.headers = &hh;
    r.nheaders = 1;
    do_call(&f, &r, &c);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.status, 431);
    assert_string_equal(c.req_hdr, "none");
    ir_buf_free(&c.body);

    call_init(&c);
    r = mkreq(&f, "GET", "/reject");
    do_call(&f, &r, &c);
    assert_int_equal(c.status, 413);
    assert_string_equal(c.req_hdr, "/reject");
    ir_buf_free(&c.body);

    /* still one connection, still working */
    call_init(&c);
    r = mkreq(&f, "GET", "/hello");
    do_call(&f, &r, &c);
    assert_int_equal(c.status, 200);
    ir_buf_free(&c.body);
    irn_server_stats ss;
    irn_server_stats_get(f.srv, &ss);
    assert_int_equal(ss.errors_sent, 3);
    assert_int_equal(ss.conns_accepted, 1);
    fx_teardown(&f);
}

static void test_h2_client_errors(void **st) {
    fx f;
    h2_setup(&f, NULL, true);
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "GET", "/rst");
    do_call(&f, &r, &c);
    assert_int_equal(c.err, IRN_ECLOSED_EARLY);
    assert_int_equal(c.nheads, 0);
    ir_buf_free(&c.body);

    call_init(&c);
    r = mkreq(&f, "GET", "/rstmid");
    assert_int_equal(irn_client_request(f.pool, &r, &CBS, &c, &c.h), 0);
    while (c.body.len < 7) uv_run(&f.loop, UV_RUN_ONCE);
    assert_int_equal(f.nheld, 1);
    irn_resp_close(f.held[0]);
    f.held[0] = NULL;
    run_until(&f, &c.done);
    assert_int_equal(c.err, IRN_ECLOSED_MID);
    assert_int_equal(c.status, 200);
    ir_buf_free(&c.body);

    /* head timeout: the stream is reset, the server sees an abort */
    call_init(&c);
    r = mkreq(&f, "GET", "/slow");
    r.head_timeout_ns = 100 * MS;
    do_call(&f, &r, &c);
    assert_int_equal(c.err, IRN_EHEAD_TIMEOUT);
    run_until(&f, &f.aborts);

    /* connect refused */
    call_init(&c);
    r = mkreq(&f, "GET", "/hello");
    r.port = 1;
    do_call(&f, &r, &c);
    assert_int_equal(c.err, IRN_ECONNECT);
    fx_teardown(&f);
}

/* An h1 pool against the h2c-enabled server: plain HTTP/1.1 as before. */
static void test_h1_on_h2c_server(void **st) {
    fx f;
    h2_setup(&f, NULL, false);
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "GET", "/hello");
    do_call(&f, &r, &c);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.status, 200);
    assert_non_null(strstr(c.body.data, " 1.1"));
    ir_buf_free(&c.body);
    irn_server_stats ss;
    irn_server_stats_get(f.srv, &ss);
    assert_int_equal(ss.h2_conns, 0);
    fx_teardown(&f);
}

/* ---- Upgrade: h2c from a raw socket, the h2 side driven by nghttp2's client --------- */

typedef struct up {
    uv_tcp_t tcp;
    uv_connect_t cr;
    ir_buf in;
    bool switched;
    nghttp2_session *s;
    int status;
    ir_buf body;
    int done;
    int closed;
    char rbuf[65536];
} up;

static void up_send(up *u) {
    for (;;) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(u->s, &data);
        assert_true(n >= 0);
        if (n == 0) break;
        uv_buf_t b = uv_buf_init((char *)data, (unsigned)n);
        assert_int_equal(uv_try_write((uv_stream_t *)&u->tcp, &b, 1), n);
    }
}

static int up_header(nghttp2_session *s, const nghttp2_frame *fr, const uint8_t *name, size_t nl,
                     const uint8_t *value, size_t vl, uint8_t flags, void *ud) {
    up *u = ud;
    if (nl == 7 && memcmp(name, ":status", 7) == 0) u->status = atoi((const char *)value);
    return 0;
}

static int up_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *ud) {
    up *u = ud;
    assert_int_equal(id, 1);
    ir_buf_append(&u->body, data, len);
    return 0;
}

static int up_close(nghttp2_session *s, int32_t id, uint32_t code, void *ud) {
    up *u = ud;
    assert_int_equal(id, 1);
    assert_int_equal(code, 0);
    u->done = 1;
    return 0;
}

static void up_alloc(uv_handle_t *h, size_t s, uv_buf_t *b) {
    up *u = h->data;
    *b = uv_buf_init(u->rbuf, sizeof u->rbuf);
}

static void up_closed(uv_handle_t *h) {
    up *u = h->data;
    u->closed = 1;
}

static const uint8_t up_settings[] = {0, 3, 0, 0, 0, 100, 0, 4, 0, 1, 0, 0};

static void up_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b) {
    up *u = st->data;
    if (n < 0) {
        uv_close((uv_handle_t *)st, up_closed);
        return;
    }
    if (n == 0) return;
    const char *p = b->base;
    size_t len = (size_t)n;
    if (!u->switched) {
        ir_buf_append(&u->in, p, len);
        const char *end = strstr(u->in.data, "\r\n\r\n");
        if (!end) return;
        assert_memory_equal(u->in.data, "HTTP/1.1 101 ", 13);
        u->switched = true;
        p = end + 4;
        len = u->in.len - (size_t)(p - u->in.data);
        nghttp2_session_callbacks *cbs;
        nghttp2_session_callbacks_new(&cbs);
        nghttp2_session_callbacks_set_on_header_callback(cbs, up_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, up_data);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, up_close);
        assert_int_equal(nghttp2_session_client_new(&u->s, cbs, u), 0);
        nghttp2_session_callbacks_del(cbs);
        assert_int_equal(nghttp2_session_upgrade2(u->s, up_settings, sizeof up_settings, 0, NULL),
                         0);
        nghttp2_settings_entry iv[2] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100},
                                        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 65536}};
        nghttp2_submit_settings(u->s, NGHTTP2_FLAG_NONE, iv, 2);
    }
    if (len) assert_true(nghttp2_session_mem_recv(u->s, (const uint8_t *)p, len) >= 0);
    up_send(u);
    if (u->done && !uv_is_closing((uv_handle_t *)st)) uv_close((uv_handle_t *)st, up_closed);
}

static void up_connected(uv_connect_t *cr, int status) {
    up *u = cr->data;
    assert_int_equal(status, 0);
    /* HTTP2-Settings: base64url of up_settings */
    static const char req[] = "POST /echo HTTP/1.1\r\nHost: up.example\r\n"
                              "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                              "HTTP2-Settings: AAMAAABkAAQAAQAA\r\nContent-Length: 5\r\n\r\n"
                              "hello";
    uv_buf_t b = uv_buf_init((char *)req, sizeof req - 1);
    assert_int_equal(uv_try_write((uv_stream_t *)&u->tcp, &b, 1), (int)(sizeof req - 1));
    uv_read_start((uv_stream_t *)&u->tcp, up_alloc, up_read);
}

static void test_h2_upgrade(void **st) {
    fx f;
    h2_setup(&f, NULL, true);
    up *u = calloc(1, sizeof *u);
    ir_buf_init(&u->in, 0);
    ir_buf_init(&u->body, 0);
    uv_tcp_init(&f.loop, &u->tcp);
    u->tcp.data = u;
    u->cr.data = u;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", f.port, &a);
    assert_int_equal(uv_tcp_connect(&u->cr, &u->tcp, (struct sockaddr *)&a, up_connected), 0);
    run_until(&f, &u->closed);
    assert_true(u->switched);
    assert_int_equal(u->status, 200);
    assert_int_equal(u->body.len, 5);
    assert_memory_equal(u->body.data, "hello", 5);
    irn_server_stats ss;
    irn_server_stats_get(f.srv, &ss);
    assert_int_equal(ss.h2_conns, 1);
    assert_int_equal(ss.requests, 1);
    nghttp2_session_del(u->s);
    ir_buf_free(&u->in);
    ir_buf_free(&u->body);
    free(u);
    fx_teardown(&f);
}

/* irn_server_close: GOAWAY; the stream in flight still completes. */
static void test_h2_graceful_close(void **st) {
    fx f;
    h2_setup(&f, NULL, true);
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "GET", "/slow");
    assert_int_equal(irn_client_request(f.pool, &r, &CBS, &c, &c.h), 0);
    run_until(&f, &f.nheld);
    irn_server_close(f.srv, set_flag, &f.srv_closed);
    run_for(&f, 50);
    assert_false(f.srv_closed);
    irn_resp_send(f.held[0], 200, "text/plain", "late", 4, NULL, 0);
    run_until(&f, &c.done);
    assert_int_equal(c.err, 0);
    assert_string_equal(c.body.data, "late");
    ir_buf_free(&c.body);
    run_until(&f, &f.srv_closed);
    fx_teardown(&f); /* the server is gone already */
}

int main(void) {
    if (getenv("H2DEBUG")) ir_log_set_level(IR_LOG_DEBUG);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h2_get_post),       cmocka_unit_test(test_h2_body_parts),
        cmocka_unit_test(test_h2_target_split),   cmocka_unit_test(test_h2_concurrent),
        cmocka_unit_test(test_h2_flow_control),   cmocka_unit_test(test_h2_cancel_aborts),
        cmocka_unit_test(test_h2_server_errors),  cmocka_unit_test(test_h2_client_errors),
        cmocka_unit_test(test_h1_on_h2c_server),  cmocka_unit_test(test_h2_upgrade),
        cmocka_unit_test(test_h2_graceful_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
