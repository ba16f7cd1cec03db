/* test_loopback.c: server and client talking over 127.0.0.1 in one uv loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/ir_net.h"

#define MS 1000000ull

/* ---- fixture: a loop, a server, a pool ------------------------------------------ */

typedef struct fx {
    uv_loop_t loop;
    irn_server *srv;
    irn_pool *pool;
    int port;
    int aborts;
    int drains;
    int srv_closed, pool_closed;
    irn_resp *held; /* /slow: the response kept open */
    uv_timer_t stream_timer;
    irn_resp *stream_resp;
    int stream_step;
    int pipe_pending; /* /p: responses answered from timers */
    uv_timer_t pipe_timers[3];
    irn_resp *pipe_resps[3];
    int expect_seen;
} fx;

static void on_abort(irn_resp *resp, void *ud) {
    fx *f = ud;
    f->aborts++;
    if (f->held == resp) f->held = NULL;
    irn_resp_end(resp);
}

static void stream_tick(uv_timer_t *t) {
    fx *f = t->data;
    char buf[32];
    int n = snprintf(buf, sizeof buf, "part%d;", f->stream_step);
    if (f->stream_step++ < 3) {
        irn_resp_write(f->stream_resp, buf, (size_t)n);
        uv_timer_start(t, stream_tick, 5, 0);
    } else {
        irn_resp_end(f->stream_resp);
        f->stream_resp = NULL;
    }
}

static void pipe_tick(uv_timer_t *t) {
    irn_resp *resp = t->data;
    const char *body = "done";
    irn_resp_send(resp, 200, "text/plain", body, strlen(body), NULL, 0);
}

static void big_drain(irn_resp *resp, void *ud);

static void big_fill(fx *f, irn_resp *resp) {
    static char chunk[16384];
    memset(chunk, 'z', sizeof chunk);
    /* 1000 * 16 KiB = 16 MiB: more than the kernel's socket buffers hold, so
     * the server's own queue must fill while the client is paused. */
    while (f->stream_step < 1000) {
        int64_t q = irn_resp_write(resp, chunk, sizeof chunk);
        assert_true(q >= 0);
        f->stream_step++;
        if ((size_t)q >= 256 * 1024) {
            irn_resp_on_drain(resp, big_drain, f);
            return;
        }
    }
    irn_resp_end(resp);
}

static void big_drain(irn_resp *resp, void *ud) {
    fx *f = ud;
    f->drains++;
    big_fill(f, resp);
}

static int on_headers(void *ud, irn_request *req) {
    fx *f = ud;
    if (req->expect_continue) f->expect_seen++;
    if (strcmp(req->path, "/reject") == 0) return 413;
    return 0;
}

static void on_request(void *ud, irn_request *req, irn_resp *resp) {
    fx *f = ud;
    irn_resp_on_abort(resp, on_abort, f);
    if (strcmp(req->path, "/hello") == 0) {
        irn_header xh = {"X-Peer", 6, req->peer, strlen(req->peer)};
        irn_resp_send(resp, 200, "text/plain", "hello", 5, &xh, 1);
    } else if (strcmp(req->path, "/echo") == 0) {
        irn_resp_send(resp, 200, "application/octet-stream", req->body.data, req->body.len, NULL,
                      0);
    } else if (strcmp(req->path, "/stream") == 0) {
        irn_resp_start(resp, 200, NULL, 0, -1);
        f->stream_resp = resp;
        f->stream_step = 0;
        f->stream_timer.data = f;
        uv_timer_start(&f->stream_timer, stream_tick, 5, 0);
    } else if (strcmp(req->path, "/big") == 0) {
        irn_resp_start(resp, 200, NULL, 0, 1000 * 16384);
        f->stream_step = 0;
        big_fill(f, resp);
    } else if (strncmp(req->path, "/p", 2) == 0) {
        /* answered later, the first one last */
        int i = req->path[2] - '0';
        assert_true(i >= 0 && i < 3);
        f->pipe_timers[i].data = resp;
        uv_timer_start(&f->pipe_timers[i], pipe_tick, (uint64_t)(30 - 10 * i), 0);
    } else if (strcmp(req->path, "/slow") == 0) {
        f->held = resp; /* only an abort ends it */
    } else {
        irn_resp_send_error(resp, 404, NULL, "Not Found");
    }
}

static void fx_setup(fx *f, const irn_server_cfg *extra) {
    memset(f, 0, sizeof *f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    irn_server_cfg cfg;
    if (extra)
        cfg = *extra;
    else
        irn_server_cfg_init(&cfg);
    cfg.host = "127.0.0.1";
    cfg.port = 0;
    cfg.on_request = on_request;
    cfg.on_headers = on_headers;
    cfg.ud = f;
    assert_int_equal(irn_server_new(&f->loop, &cfg, &f->srv), 0);
    f->port = irn_server_port(f->srv);
    assert_true(f->port > 0);
    f->pool = irn_pool_new(&f->loop, NULL);
    assert_non_null(f->pool);
    uv_timer_init(&f->loop, &f->stream_timer);
    for (int i = 0; i < 3; i++) uv_timer_init(&f->loop, &f->pipe_timers[i]);
}

/* Runs the loop until *flag becomes true, failing after 5 s. */
static void run_until(fx *f, const int *flag) {
    uint64_t start = uv_hrtime();
    while (!*flag) {
        uv_run(&f->loop, UV_RUN_ONCE);
        if (uv_hrtime() - start > 5000 * MS) fail_msg("timed out");
    }
}

static void set_flag(void *ud) {
    *(int *)ud = 1;
}

static void close_walk(uv_handle_t *h, void *arg) {
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

static void fx_teardown(fx *f) {
    irn_server_close(f->srv, set_flag, &f->srv_closed);
    irn_server_close_all(f->srv);
    irn_pool_close(f->pool, set_flag, &f->pool_closed);
    uv_close((uv_handle_t *)&f->stream_timer, NULL);
    for (int i = 0; i < 3; i++) uv_close((uv_handle_t *)&f->pipe_timers[i], NULL);
    run_until(f, &f->srv_closed);
    run_until(f, &f->pool_closed);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    uv_walk(&f->loop, close_walk, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
}

/* ---- a client call recorder ----------------------------------------------------------- */

typedef struct call {
    int status;
    int done;
    int err;
    int nheads;
    ir_buf body;
    char peer_hdr[64];
    irn_client *h;
    bool pause_once;
    uv_timer_t *resume_timer;
} call;

static void c_head(void *ud, int status, const irn_header *h, size_t n) {
    call *c = ud;
    c->status = status;
    c->nheads++;
    const irn_header *p = irn_headers_find(h, n, "x-peer");
    if (p) snprintf(c->peer_hdr, sizeof c->peer_hdr, "%s", p->value);
}

static void c_body(void *ud, const char *d, size_t n) {
    call *c = ud;
    assert_int_equal(ir_buf_append(&c->body, d, n), 0);
}

static void c_done(void *ud, int err) {
    call *c = ud;
    c->err = err;
    c->done = 1;
}

static const irn_client_cbs CBS = {c_head, c_body, c_done};

static void call_init(call *c) {
    memset(c, 0, sizeof *c);
    ir_buf_init(&c->body, 0);
}

static irn_client_req mkreq(fx *f, const char *method, const char *path) {
    irn_client_req r;
    memset(&r, 0, sizeof r);
    r.host = "127.0.0.1";
    r.port = (uint16_t)f->port;
    r.method = method;
    r.path = path;
    r.connect_timeout_ns = 2000 * MS;
    r.head_timeout_ns = 3000 * MS;
    r.idle_timeout_ns = 3000 * MS;
    return r;
}

static void do_call(fx *f, irn_client_req *r, call *c) {
    assert_int_equal(irn_client_request(f->pool, r, &CBS, c, &c->h), 0);
    assert_false(c->done); /* never synchronous */
    run_until(f, &c->done);
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_get_post_keepalive(void **st) {
    fx f;
    fx_setup(&f, NULL);
    for (int i = 0; i < 3; i++) {
        call c;
        call_init(&c);
        irn_client_req r = mkreq(&f, "GET", "/hello");
        do_call(&f, &r, &c);
        assert_int_equal(c.err, 0);
        assert_int_equal(c.status, 200);
        assert_int_equal(c.body.len, 5);
        assert_memory_equal(c.body.data, "hello", 5);
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
    fx_setup(&f, NULL);
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

static void resume_cb(uv_timer_t *t) {
    call *c = t->data;
    irn_client_resume(c->h);
}

static void c_body_pausing(void *ud, const char *d, size_t n) {
    call *c = ud;
    assert_int_equal(ir_buf_append(&c->body, d, n), 0);
    if (c->pause_once && c->body.len > 512 * 1024) {
        c->pause_once = false;
        irn_client_pause(c->h);
        uv_timer_start(c->resume_timer, resume_cb, 200, 0);
    }
}

/* A big response with a paused client: the server's writes back up, then
 * on_drain resumes the producer. */
static void test_backpressure(void **st) {
    fx f;
    fx_setup(&f, NULL);
    uv_timer_t rt;
    uv_timer_init(&f.loop, &rt);
    call c;
    call_init(&c);
    c.pause_once = true;
    c.resume_timer = &rt;
    rt.data = &c;
    irn_client_cbs cbs = {c_head, c_body_pausing, c_done};
    irn_client_req r = mkreq(&f, "GET", "/big");
    assert_int_equal(irn_client_request(f.pool, &r, &cbs, &c, &c.h), 0);
    run_until(&f, &c.done);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.body.len, 1000 * 16384);
    assert_true(f.drains >= 1);
    ir_buf_free(&c.body);
    uv_close((uv_handle_t *)&rt, NULL);
    fx_teardown(&f);
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
    fx_setup(&f, NULL);
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

static void test_server_errors(void **st) {
    irn_server_cfg cfg;
    irn_server_cfg_init(&cfg);
    cfg.max_header_bytes = 2048;
    cfg.max_body_bytes = 1000;
    cfg.body_timeout_ns = 100 * MS;
    cfg.header_timeout_ns = 150 * MS;
    fx f;
    fx_setup(&f, &cfg);
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
    assert_non_null(strstr(in.data, "Content-Length: 5\r\n"));
    assert_non_null(strstr(in.data, "hello"));
    ir_buf_free(&in);
    irn_server_stats ss;
    irn_server_stats_get(f.srv, &ss);
    assert_int_equal(ss.errors_sent, 6);
    fx_teardown(&f);
}

static void cancel_cb(uv_timer_t *t) {
    irn_client_cancel(t->data);
}

static void test_client_abort_fires_on_abort(void **st) {
    fx f;
    fx_setup(&f, NULL);
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "GET", "/slow");
    assert_int_equal(irn_client_request(f.pool, &r, &CBS, &c, &c.h), 0);
    uv_timer_t t;
    uv_timer_init(&f.loop, &t);
    t.data = c.h;
    uv_timer_start(&t, cancel_cb, 50, 0);
    run_until(&f, &c.done);
    assert_int_equal(c.err, IRN_ECANCELED);
    uint64_t start = uv_hrtime();
    while (f.aborts == 0 && uv_hrtime() - start < 5000 * MS) uv_run(&f.loop, UV_RUN_ONCE);
    assert_int_equal(f.aborts, 1);
    assert_null(f.held);
    uv_close((uv_handle_t *)&t, NULL);
    fx_teardown(&f);
}

static void test_head_timeout(void **st) {
    fx f;
    fx_setup(&f, NULL);
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
    fx_setup(&f, NULL);
    /* a port nobody listens on: open a server, note its port, close it */
    irn_server_cfg cfg;
    irn_server_cfg_init(&cfg);
    cfg.host = "127.0.0.1";
    cfg.on_request = on_request;
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
    fx_setup(&f, NULL);
    dropper d;
    memset(&d, 0, sizeof d);
    uv_tcp_init(&f.loop, &d.listener);
    d.listener.data = &d;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    assert_int_equal(uv_tcp_bind(&d.listener, (struct sockaddr *)&a, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&d.listener, 8, drop_conn), 0);
    int len = sizeof a;
    uv_tcp_getsockname(&d.listener, (struct sockaddr *)&a, &len);
    call c;
    call_init(&c);
    irn_client_req r = mkreq(&f, "GET", "/x");
    r.port = ntohs(a.sin_port);
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
    fx_setup(&f, &cfg);
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
    fx_setup(&f, NULL);
    flaky d;
    memset(&d, 0, sizeof d);
    uv_tcp_init(&f.loop, &d.listener);
    d.listener.data = &d;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    assert_int_equal(uv_tcp_bind(&d.listener, (struct sockaddr *)&a, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&d.listener, 8, flaky_conn), 0);
    int len = sizeof a;
    uv_tcp_getsockname(&d.listener, (struct sockaddr *)&a, &len);
    for (int i = 0; i < 2; i++) {
        call c;
        call_init(&c);
        irn_client_req r = mkreq(&f, "GET", "/x");
        r.port = ntohs(a.sin_port);
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
    fx_setup(&f, NULL);
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
    /* teardown without the server */
    irn_pool_close(f.pool, set_flag, &f.pool_closed);
    uv_close((uv_handle_t *)&f.stream_timer, NULL);
    for (int i = 0; i < 3; i++) uv_close((uv_handle_t *)&f.pipe_timers[i], NULL);
    run_until(&f, &f.pool_closed);
    uv_run(&f.loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f.loop), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_post_keepalive),
        cmocka_unit_test(test_streaming_chunked),
        cmocka_unit_test(test_backpressure),
        cmocka_unit_test(test_pipelined_in_order),
        cmocka_unit_test(test_server_errors),
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
