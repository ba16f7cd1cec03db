/* test_loopback.c: server and client talking over 127.0.0.1 in one uv loop. */
#include "net/loopback_fixture.h"

/* ---- tests ------------------------------------------------------------------------------- */

static void test_get_post_keepalive(void **st) {
    fx f;
    fx_setup(&f, NULL, NULL);
    for (int i = 0; i < 3; i++) {
        call c;
        call_init(&c);
        irn_client_req r = mkreq(&f, "GET", "/hello");
        do_call(&f, &r, &c);
        assert_int_equal(c.err, 0);
        assert_int_equal(c.status, 200);
        char want[64];
        snprintf(want, sizeof want, "hello GET 127.0.0.1:%d - 1.1", f.port);
        assert_string_equal(c.body.data, want);
        assert_non_null(strstr(c.peer_hdr, "127.0.0.1:"));
        ir_buf_free(&c.body);
    }
    /* POST with a 100 KiB body, echoed */
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
    /* 404 in the error shape */
    call_init(&c);
    r = mkreq(&f, "GET", "/missing");
    do_call(&f, &r, &c);
    assert_int_equal(c.status, 404);
    assert_non_null(strstr(c.body.data, "\"type\":\"NotFoundError\""));
    ir_buf_free(&c.body);

    irn_pool_stats ps;
    irn_pool_stats_get(f.pool, &ps);
    assert_int_equal(ps.conns_created, 1);
    assert_int_equal(ps.conns_reused, 4);
    irn_server_stats ss;
    irn_server_stats_get(f.srv, &ss);
    assert_int_equal(ss.conns_accepted, 1);
    assert_int_equal(ss.requests, 5);
    fx_teardown(&f);
}

static void test_streaming_chunked(void **st) {
    fx f;
    fx_setup(&f, NULL, NULL);
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "GET", "/stream");
    do_call(&f, &r, &c);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.status, 200);
    assert_string_equal(c.body.data, "part0;part1;part2;");
    ir_buf_free(&c.body);
    fx_teardown(&f);
}

/* A big response with a paused client: the server's writes back up, then
 * on_drain resumes the producer. A paused client gets no body bytes. */
static void backpressure(const char *path, size_t pause_after) {
    fx f;
    fx_setup(&f, NULL, NULL);
    /* 1000 * 16 KiB = 16 MiB: more than the kernel's socket buffers hold, so
     * the server's own queue must fill while the client is paused. */
    f.big_n = 1000;
    uv_timer_t rt;
    uv_timer_init(&f.loop, &rt);
    call c;
    call_init(&c);
    c.pause_after = pause_after;
    c.resume_timer = &rt;
    rt.data = &c;
    irn_client_req r = mkreq(&f, "GET", path);
    assert_int_equal(irn_client_request(f.pool, &r, &CBS, &c, &c.h), 0);
    run_until(&f, &c.done);
    assert_int_equal(c.err, 0);
    assert_true(c.paused);
    assert_int_equal(c.while_paused, 0); /* paused means no on_body until resumed */
    assert_int_equal(c.body.len, 1000 * FX_CHUNK);
    assert_true(f.drains >= 1);
    ir_buf_free(&c.body);
    uv_close((uv_handle_t *)&rt, NULL);
    fx_teardown(&f);
}

static void test_backpressure(void **st) {
    backpressure("/big", 512 * 1024 + 1);
}

/* Chunked: one read holds several body spans, and the pause lands between two of them. */
static void test_backpressure_chunked(void **st) {
    backpressure("/bigchunked", 512 * 1024 + 1);
}

/* A pause in the last body span: the response must still complete after the resume, with
 * nothing left to read from the socket. */
static void test_backpressure_last_span(void **st) {
    backpressure("/big", 1000 * FX_CHUNK);
    backpressure("/bigchunked", 1000 * FX_CHUNK);
}

/* ---- a raw TCP client ------------------------------------------------------------------- */

typedef struct raw {
    uv_tcp_t tcp;
    uv_connect_t cr;
    uv_write_t wr;
    const char *out;
    size_t outlen;
    ir_buf in;
    int done;
    char rbuf[65536];
} raw;

static void raw_alloc(uv_handle_t *h, size_t s, uv_buf_t *b) {
    raw *r = h->data;
    *b = uv_buf_init(r->rbuf, sizeof r->rbuf);
}

static void raw_closed(uv_handle_t *h) {
    raw *r = h->data;
    r->done = 1;
}

static void raw_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
    raw *r = s->data;
    if (n > 0) ir_buf_append(&r->in, b->base, (size_t)n);
    if (n < 0) uv_close((uv_handle_t *)s, raw_closed);
}

static void raw_connected(uv_connect_t *cr, int status) {
    raw *r = cr->data;
    assert_int_equal(status, 0);
    uv_buf_t b = uv_buf_init((char *)r->out, (unsigned)r->outlen);
    assert_int_equal(uv_write(&r->wr, (uv_stream_t *)&r->tcp, &b, 1, NULL), 0);
    uv_read_start((uv_stream_t *)&r->tcp, raw_alloc, raw_read);
}

/* Sends `out`, reads until the server closes. */
static void raw_exchange(fx *f, const char *out, size_t len, ir_buf *in) {
    raw *r = calloc(1, sizeof *r);
    r->out = out;
    r->outlen = len;
    ir_buf_init(&r->in, 0);
    uv_tcp_init(&f->loop, &r->tcp);
    r->tcp.data = r;
    r->cr.data = r;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", f->port, &a);
    assert_int_equal(uv_tcp_connect(&r->cr, &r->tcp, (struct sockaddr *)&a, raw_connected), 0);
    run_until(f, &r->done);
    *in = r->in;
    free(r);
}

static void test_pipelined_in_order(void **st) {
    fx f;
    fx_setup(&f, NULL, NULL);
    const char *req = "GET /p0 HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /p1 HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /p2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    ir_buf in;
    raw_exchange(&f, req, strlen(req), &in);
    /* 4 responses, in request order: done, done, hello, done; the last closes */
    const char *p = in.data;
    const char *order[] = {"done", "done", "hello", "done"};
    for (int i = 0; i < 4; i++) {
        p = strstr(p, "HTTP/1.1 200 OK\r\n");
        assert_non_null(p);
        p = strstr(p, "\r\n\r\n");
        assert_non_null(p);
        p += 4;
        assert_memory_equal(p, order[i], strlen(order[i]));
    }
    assert_non_null(strstr(in.data, "Connection: close\r\n"));
    ir_buf_free(&in);
    irn_server_stats ss;
    irn_server_stats_get(f.srv, &ss);
    assert_int_equal(ss.requests, 4);
    fx_teardown(&f);
}

/* More pipelined requests in one write than the server answers in one callback
 * (H1_PER_TURN, 16): the rest are taken up on later turns of the loop, every one
 * answered, in order. */
static void test_pipelined_many(void **st) {
    fx f;
    fx_setup(&f, NULL, NULL);
    ir_buf out;
    ir_buf_init(&out, 0);
    for (int i = 0; i < 100; i++)
        assert_int_equal(ir_buf_appendf(&out, "GET /hello HTTP/1.1\r\nHost: h%d\r\n%s\r\n", i,
                                        i == 99 ? "Connection: close\r\n" : ""),
                         0);
    ir_buf in;
    raw_exchange(&f, out.data, out.len, &in);
    const char *p = in.data;
    for (int i = 0; i < 100; i++) {
        char want[32];
        snprintf(want, sizeof want, "hello GET h%d ", i);
        p = strstr(p, want);
        assert_non_null(p);
    }
    ir_buf_free(&in);
    ir_buf_free(&out);
    irn_server_stats ss;
    irn_server_stats_get(f.srv, &ss);
    assert_int_equal(ss.requests, 100);
    fx_teardown(&f);
}

/* Two servers sharing one set of counters: each connection either accepts counts
 * there, and a connection leaves the open count when it ends. */
static void test_shared_counters(void **st) {
    irn_server_counters n = {0};
    irn_server_cfg cfg;
    irn_server_cfg_init(&cfg);
    cfg.counters = &n;
    fx f;
    fx_setup(&f, &cfg, NULL);
    fx_add_host_b(&f, &cfg);
    const char *close = "GET /hello HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    ir_buf in;
    raw_exchange(&f, close, strlen(close), &in); /* a connection to srv that ends */
    ir_buf_free(&in);
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "GET", "/hello");
    r.port = (uint16_t)f.port_b; /* one to srv_b that the pool keeps */
    do_call(&f, &r, &c);
    assert_int_equal(c.status, 200);
    ir_buf_free(&c.body);
    assert_int_equal(atomic_load(&n.conns_accepted), 2);
    assert_int_equal(atomic_load(&n.accept_pauses), 0);
    uint64_t open = atomic_load(&n.conns_active);
    assert_true(open >= 1 && open <= 2); /* srv_b's; srv's may not have been freed yet */
    fx_teardown(&f);
    assert_int_equal(atomic_load(&n.conns_active), 0);
    assert_int_equal(atomic_load(&n.conns_accepted), 2);
}

static void test_server_errors(void **st) {
    irn_server_cfg cfg;
    irn_server_cfg_init(&cfg);
    cfg.max_header_bytes = 2048;
    cfg.max_body_bytes = 1000;
    cfg.body_timeout_ns = 100 * MS;
    cfg.header_timeout_ns = 150 * MS;
    fx f;
    fx_setup(&f, &cfg, NULL);
    ir_buf in, big;
    /* bad syntax */
    const char *bad = "GET / HTTP/1.1\r\nHost: x\r\nBad\x01: y\r\n\r\n";
    raw_exchange(&f, bad, strlen(bad), &in);
    assert_non_null(strstr(in.data, "HTTP/1.1 400 Bad Request\r\n"));
    assert_non_null(strstr(in.data, "Content-Type: application/json\r\n"));
    assert_non_null(strstr(in.data, "Connection: close\r\n"));
    assert_non_null(strstr(in.data, "\"type\":\"BadRequestError\""));
    ir_buf_free(&in);
    /* headers too large */
    ir_buf_init(&big, 0);
    ir_buf_append_str(&big, "GET / HTTP/1.1\r\nX: ");
    for (int i = 0; i < 4000; i++) ir_buf_append_str(&big, "y");
    ir_buf_append_str(&big, "\r\n\r\n");
    raw_exchange(&f, big.data, big.len, &in);
    assert_non_null(strstr(in.data, "HTTP/1.1 431 "));
    ir_buf_free(&in);
    ir_buf_free(&big);
    /* body too large, with Expect: no 100 Continue */
    const char *tl = "POST /echo HTTP/1.1\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n";
    raw_exchange(&f, tl, strlen(tl), &in);
    assert_int_equal(strncmp(in.data, "HTTP/1.1 413 ", 13), 0);
    assert_null(strstr(in.data, "100 Continue"));
    assert_non_null(strstr(in.data, "\"code\":413"));
    ir_buf_free(&in);
    /* rejected by on_headers: no 100 Continue */
    const char *rj = "POST /reject HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n";
    raw_exchange(&f, rj, strlen(rj), &in);
    assert_int_equal(strncmp(in.data, "HTTP/1.1 413 ", 13), 0);
    ir_buf_free(&in);
    /* accepted Expect: 100 Continue first, then the answer */
    const char *ok = "POST /echo HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n"
                     "Connection: close\r\n\r\nhi";
    raw_exchange(&f, ok, strlen(ok), &in);
    assert_int_equal(strncmp(in.data, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n", 42), 0);
    assert_non_null(strstr(in.data, "\r\n\r\nhi"));
    ir_buf_free(&in);
    /* body timeout */
    const char *part = "POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc";
    raw_exchange(&f, part, strlen(part), &in);
    assert_int_equal(strncmp(in.data, "HTTP/1.1 408 ", 13), 0);
    ir_buf_free(&in);
    /* partial headers time out with 408; an idle connection closes quietly */
    const char *ph = "GET / HTTP/1.1\r\nHost";
    raw_exchange(&f, ph, strlen(ph), &in);
    assert_int_equal(strncmp(in.data, "HTTP/1.1 408 ", 13), 0);
    ir_buf_free(&in);
    raw_exchange(&f, "", 0, &in);
    assert_int_equal(in.len, 0);
    ir_buf_free(&in);
    /* HTTP/1.0 without keep-alive closes after the response */
    const char *h10 = "GET /hello HTTP/1.0\r\n\r\n";
    raw_exchange(&f, h10, strlen(h10), &in);
    assert_non_null(strstr(in.data, "Content-Length: 17\r\n"));
    assert_non_null(strstr(in.data, "\r\n\r\nhello GET - - 1.0"));
    ir_buf_free(&in);
    irn_server_stats ss;
    irn_server_stats_get(f.srv, &ss);
    assert_int_equal(ss.errors_sent, 6);
    fx_teardown(&f);
}

/* Dresses the server's own answers: the request's path (or "none"), plus two
 * headers the server must drop. */
static void on_error_hook(void *ud, const irn_request *req, irn_error_answer *e) {
    (void)ud;
    snprintf(e->buf, sizeof e->buf, "%s", req ? req->path : "none");
    e->headers[e->nheaders++] = (irn_header){"X-Req", 5, e->buf, strlen(e->buf)};
    e->headers[e->nheaders++] = (irn_header){"Content-Length", 14, "1", 1};
    e->headers[e->nheaders++] = (irn_header){"X-Bad", 5, "a\r\nb", 4};
    if (e->status == 413) e->type = "Custom";
}

static void test_server_error_hook(void **st) {
    irn_server_cfg cfg;
    irn_server_cfg_init(&cfg);
    cfg.on_error = on_error_hook;
    fx f;
    fx_setup(&f, &cfg, NULL);
    ir_buf in;
    /* an on_headers rejection: the hook sees the request */
    const char *rj = "POST /reject HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n";
    raw_exchange(&f, rj, strlen(rj), &in);
    assert_int_equal(strncmp(in.data, "HTTP/1.1 413 ", 13), 0);
    assert_non_null(strstr(in.data, "\r\nX-Req: /reject\r\n"));
    assert_non_null(strstr(in.data, "\"type\":\"Custom\""));
    assert_null(strstr(in.data, "Content-Length: 1\r\n"));
    assert_null(strstr(in.data, "X-Bad"));
    assert_non_null(strstr(in.data, "Connection: close\r\n\r\n{"));
    ir_buf_free(&in);
    /* a request that could not be read: no request to show */
    const char *bad = "NOT HTTP\r\n\r\n";
    raw_exchange(&f, bad, strlen(bad), &in);
    assert_int_equal(strncmp(in.data, "HTTP/1.1 400 ", 13), 0);
    assert_non_null(strstr(in.data, "\r\nX-Req: none\r\n"));
    ir_buf_free(&in);
    fx_teardown(&f);
}

static void test_client_abort_fires_on_abort(void **st) {
    fx f;
    fx_setup(&f, NULL, NULL);
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "GET", "/slow");
    assert_int_equal(irn_client_request(f.pool, &r, &CBS, &c, &c.h), 0);
    uv_timer_t t;
    uv_timer_init(&f.loop, &t);
    t.data = &c;
    /* Cancelled once the server holds it: a cancel before the request is sent (a
     * loaded machine can take 50 ms to connect) leaves the server nothing to abort. */
    run_until(&f, &f.nheld);
    uv_timer_start(&t, cancel_cb, 0, 0);
    run_until(&f, &c.done);
    assert_int_equal(c.err, IRN_ECANCELED);
    uint64_t start = uv_hrtime();
    while (f.aborts == 0 && uv_hrtime() - start < 5000 * MS) uv_run(&f.loop, UV_RUN_ONCE);
    assert_int_equal(f.aborts, 1);
    assert_int_equal(f.nheld, 1);
    assert_null(f.held[0]);
    uv_close((uv_handle_t *)&t, NULL);
    fx_teardown(&f);
}

static void test_head_timeout(void **st) {
    fx f;
    fx_setup(&f, NULL, NULL);
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "GET", "/slow");
    r.head_timeout_ns = 100 * MS;
    uint64_t t0 = uv_hrtime();
    do_call(&f, &r, &c);
    assert_int_equal(c.err, IRN_EHEAD_TIMEOUT);
    assert_true(uv_hrtime() - t0 >= 90 * MS);
    uint64_t start = uv_hrtime();
    while (f.aborts == 0 && uv_hrtime() - start < 5000 * MS) uv_run(&f.loop, UV_RUN_ONCE);
    assert_int_equal(f.aborts, 1);
    fx_teardown(&f);
}

static void test_connect_refused(void **st) {
    fx f;
    fx_setup(&f, NULL, NULL);
    /* a port nobody listens on: open a server, note its port, close it */
    irn_server_cfg cfg;
    irn_server_cfg_init(&cfg);
    cfg.host = "127.0.0.1";
    cfg.on_request = fx_on_request;
    cfg.ud = &f;
    irn_server *tmp;
    assert_int_equal(irn_server_new(&f.loop, &cfg, &tmp), 0);
    int port = irn_server_port(tmp);
    int closed = 0;
    irn_server_close(tmp, set_flag, &closed);
    run_until(&f, &closed);
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "GET", "/hello");
    r.port = (uint16_t)port;
    do_call(&f, &r, &c);
    assert_int_equal(c.err, IRN_ECONNECT);
    /* a name that needs the resolver */
    call_init(&c);
    r = mkreq(&f, "GET", "/hello");
    r.host = "localhost";
    do_call(&f, &r, &c);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.status, 200);
    ir_buf_free(&c.body);
    fx_teardown(&f);
}

/* ---- a server that reads the request and closes without answering ---------------- */

typedef struct dropper {
    uv_tcp_t listener;
    uv_tcp_t conns[4];
    int nconns;
    char buf[4096];
} dropper;

static void drop_alloc(uv_handle_t *h, size_t s, uv_buf_t *b) {
    dropper *d = h->data;
    *b = uv_buf_init(d->buf, sizeof d->buf);
}

static void drop_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
    if (!uv_is_closing((uv_handle_t *)s)) uv_close((uv_handle_t *)s, NULL);
}

static void drop_conn(uv_stream_t *l, int status) {
    dropper *d = l->data;
    uv_tcp_t *c = &d->conns[d->nconns++];
    uv_tcp_init(l->loop, c);
    c->data = d;
    uv_accept(l, (uv_stream_t *)c);
    uv_read_start((uv_stream_t *)c, drop_alloc, drop_read);
}

static void test_closed_before_response(void **st) {
    fx f;
    fx_setup(&f, NULL, NULL);
    dropper d;
    memset(&d, 0, sizeof d);
    uint16_t port = raw_listen(&f, &d.listener, "127.0.0.1", &d, drop_conn);
    assert_true(port > 0);
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "GET", "/x");
    r.port = port;
    do_call(&f, &r, &c);
    assert_int_equal(c.err, IRN_ECLOSED_EARLY);
    assert_int_equal(c.nheads, 0);
    uv_close((uv_handle_t *)&d.listener, NULL);
    fx_teardown(&f);
}

/* A pooled connection the server closed: the next request must not fail. */
static void test_stale_pooled_connection(void **st) {
    irn_server_cfg cfg;
    irn_server_cfg_init(&cfg);
    cfg.header_timeout_ns = 50 * MS; /* the server drops idle keep-alive conns fast */
    fx f;
    fx_setup(&f, &cfg, NULL);
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "GET", "/hello");
    do_call(&f, &r, &c);
    assert_int_equal(c.err, 0);
    ir_buf_free(&c.body);
    /* let the server close it; the pool notices (or a retry covers the race) */
    uint64_t start = uv_hrtime();
    while (uv_hrtime() - start < 150 * MS) uv_run(&f.loop, UV_RUN_NOWAIT);
    call_init(&c);
    do_call(&f, &r, &c);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.status, 200);
    ir_buf_free(&c.body);
    fx_teardown(&f);
}

/* A server that answers the first request on each connection and drops the
 * connection at the second: the client must retry the reused one once. */
typedef struct flaky {
    uv_tcp_t listener;
    uv_tcp_t conns[4];
    int reqs[4];
    uv_write_t wr[4];
    int nconns;
    char buf[4096];
} flaky;

static void flaky_alloc(uv_handle_t *h, size_t s, uv_buf_t *b) {
    flaky *d = ((uv_tcp_t *)h)->data;
    *b = uv_buf_init(d->buf, sizeof d->buf);
}

static void flaky_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
    flaky *d = s->data;
    int i = (int)((uv_tcp_t *)s - d->conns);
    if (n > 0 && d->reqs[i]++ == 0) {
        static char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        uv_buf_t w = uv_buf_init(ok, sizeof ok - 1);
        uv_write(&d->wr[i], s, &w, 1, NULL);
        return;
    }
    if (n != 0 && !uv_is_closing((uv_handle_t *)s)) uv_close((uv_handle_t *)s, NULL);
}

static void flaky_conn(uv_stream_t *l, int status) {
    flaky *d = l->data;
    uv_tcp_t *c = &d->conns[d->nconns++];
    uv_tcp_init(l->loop, c);
    c->data = d;
    uv_accept(l, (uv_stream_t *)c);
    uv_read_start((uv_stream_t *)c, flaky_alloc, flaky_read);
}

static void test_retry_reused_connection(void **st) {
    fx f;
    fx_setup(&f, NULL, NULL);
    flaky d;
    memset(&d, 0, sizeof d);
    uint16_t port = raw_listen(&f, &d.listener, "127.0.0.1", &d, flaky_conn);
    assert_true(port > 0);
    for (int i = 0; i < 2; i++) {
        call c;
        call_init(&c);
        irn_client_req r = mkreq(&f, "GET", "/x");
        r.port = port;
        do_call(&f, &r, &c);
        assert_int_equal(c.err, 0);
        assert_int_equal(c.status, 200);
        assert_string_equal(c.body.data, "ok");
        ir_buf_free(&c.body);
    }
    irn_pool_stats ps;
    irn_pool_stats_get(f.pool, &ps);
    assert_int_equal(ps.retries, 1);
    assert_int_equal(ps.conns_created, 2);
    assert_int_equal(d.nconns, 2);
    uv_close((uv_handle_t *)&d.listener, NULL);
    fx_teardown(&f);
}

static void test_graceful_close(void **st) {
    fx f;
    fx_setup(&f, NULL, NULL);
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "GET", "/stream");
    assert_int_equal(irn_client_request(f.pool, &r, &CBS, &c, &c.h), 0);
    /* wait until the request is in the handler, then close gracefully */
    uint64_t start = uv_hrtime();
    while (!f.stream_resp && uv_hrtime() - start < 5000 * MS) uv_run(&f.loop, UV_RUN_ONCE);
    assert_non_null(f.stream_resp);
    irn_server_close(f.srv, set_flag, &f.srv_closed);
    run_until(&f, &c.done);
    assert_int_equal(c.err, 0);
    assert_string_equal(c.body.data, "part0;part1;part2;");
    run_until(&f, &f.srv_closed);
    ir_buf_free(&c.body);
    fx_teardown(&f); /* the server is gone already */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_post_keepalive),
        cmocka_unit_test(test_streaming_chunked),
        cmocka_unit_test(test_backpressure),
        cmocka_unit_test(test_backpressure_chunked),
        cmocka_unit_test(test_backpressure_last_span),
        cmocka_unit_test(test_pipelined_in_order),
        cmocka_unit_test(test_pipelined_many),
        cmocka_unit_test(test_shared_counters),
        cmocka_unit_test(test_server_errors),
        cmocka_unit_test(test_server_error_hook),
        cmocka_unit_test(test_client_abort_fires_on_abort),
        cmocka_unit_test(test_head_timeout),
        cmocka_unit_test(test_connect_refused),
        cmocka_unit_test(test_closed_before_response),
        cmocka_unit_test(test_stale_pooled_connection),
        cmocka_unit_test(test_retry_reused_connection),
        cmocka_unit_test(test_graceful_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
