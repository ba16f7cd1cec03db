/* loopback_fixture.h: what the net tests over 127.0.0.1 share: a uv loop with
 * a test server (and optionally a second one, host B) and a client pool, the
 * server's request handlers, a recorder for client calls, and a bare TCP
 * listener for hand-written servers.
 *
 * Header-only (static inline) because every tests/unit/<dir>/test_*.c is
 * built as an executable of its own. */
#ifndef IR_TEST_LOOPBACK_FIXTURE_H
#define IR_TEST_LOOPBACK_FIXTURE_H

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

#define FX_CHUNK    16384 /* /big writes chunks of this size */
#define FX_MAX_HELD 64

typedef struct fx {
    uv_loop_t loop;
    irn_cache *cache; /* given to every server and the pool: the tests run on recycled structs */
    irn_server *srv;
    irn_pool *pool;
    int port;
    irn_server *srv_b; /* fx_add_host_b: a second server, same handlers */
    int port_b;
    int srv_closed, srv_b_closed, pool_closed;
    /* what the handlers saw and did */
    int aborts;
    int drains;
    int expect_seen;
    irn_resp *held[FX_MAX_HELD]; /* /slow, /rstmid: kept open; an abort clears its slot */
    int nheld;
    int big_n; /* /big: this many chunks (200 unless the test changes it) */
    int big_step;
    int64_t big_max_q; /* the most irn_resp_write reported queued */
    uv_timer_t stream_timer;
    irn_resp *stream_resp;
    int stream_step;
    uv_timer_t pipe_timers[3]; /* /p0 /p1 /p2: answered from timers, the first last */
} fx;

/* ---- the server's handlers ---------------------------------------------------------- */

static inline void fx_on_abort(irn_resp *resp, void *ud) {
    fx *f = ud;
    f->aborts++;
    for (int i = 0; i < f->nheld; i++)
        if (f->held[i] == resp) f->held[i] = NULL;
    irn_resp_end(resp);
}

static inline void fx_stream_tick(uv_timer_t *t) {
    fx *f = t->data;
    char buf[32];
    int n = snprintf(buf, sizeof buf, "part%d;", f->stream_step);
    if (f->stream_step++ < 3) {
        irn_resp_write(f->stream_resp, buf, (size_t)n);
        uv_timer_start(t, fx_stream_tick, 5, 0);
    } else {
        irn_resp_end(f->stream_resp);
        f->stream_resp = NULL;
    }
}

static inline void fx_pipe_tick(uv_timer_t *t) {
    irn_resp *resp = t->data;
    const char *body = "done";
    irn_resp_send(resp, 200, "text/plain", body, strlen(body), NULL, 0);
}

static inline void fx_big_drain(irn_resp *resp, void *ud);

/* Writes /big's chunks until the queue reaches the high-water mark, then
 * waits for on_drain. */
static inline void fx_big_fill(fx *f, irn_resp *resp) {
    static char chunk[FX_CHUNK];
    memset(chunk, 'z', sizeof chunk);
    while (f->big_step < f->big_n) {
        int64_t q = irn_resp_write(resp, chunk, sizeof chunk);
        assert_true(q >= 0);
        if (q > f->big_max_q) f->big_max_q = q;
        f->big_step++;
        if ((size_t)q >= 256 * 1024) {
            irn_resp_on_drain(resp, fx_big_drain, f);
            return;
        }
    }
    irn_resp_end(resp);
}

static inline void fx_big_drain(irn_resp *resp, void *ud) {
    fx *f = ud;
    f->drains++;
    fx_big_fill(f, resp);
}

static inline int fx_on_headers(void *ud, irn_request *req) {
    fx *f = ud;
    if (req->expect_continue) f->expect_seen++;
    if (strcmp(req->path, "/reject") == 0) return 413;
    return 0;
}

static inline void fx_hold(fx *f, irn_resp *resp) {
    assert_true(f->nheld < FX_MAX_HELD);
    f->held[f->nheld++] = resp;
}

/* /hello: "hello <method> <host header|-> <x-test header|-> <major>.<minor>"
 * and the peer in X-Peer; /echo: the body back; /stream: three chunks 5 ms
 * apart; /big: big_n chunks with backpressure (/bigchunked: the same, chunked);
 * /target: "<path>|<query, or (null)>|<target>"; /p0../p2: answered later;
 * /slow: never answered; /rst: dropped unanswered; /rstmid: dropped after
 * part of a body (by the test, through held). */
static inline void fx_on_request(void *ud, irn_request *req, irn_resp *resp) {
    fx *f = ud;
    const char *p = req->path;
    irn_resp_on_abort(resp, fx_on_abort, f);
    if (strcmp(p, "/hello") == 0) {
        char info[256];
        const char *host = irn_request_header(req, "host");
        const char *xt = irn_request_header(req, "x-test");
        int n = snprintf(info, sizeof info, "hello %s %s %s %d.%d", req->method, host ? host : "-",
                         xt ? xt : "-", req->http_major, req->http_minor);
        irn_header xh = {"X-Peer", 6, req->peer, strlen(req->peer)};
        irn_resp_send(resp, 200, "text/plain", info, (size_t)n, &xh, 1);
    } else if (strcmp(p, "/target") == 0) {
        char info[512];
        int n = snprintf(info, sizeof info, "%s|%s|%s", req->path,
                         req->query ? req->query : "(null)", req->target);
        irn_resp_send(resp, 200, "text/plain", info, (size_t)n, NULL, 0);
    } else if (strcmp(p, "/echo") == 0) {
        irn_resp_send(resp, 200, "application/octet-stream", req->body.data, req->body.len, NULL,
                      0);
    } else if (strcmp(p, "/stream") == 0) {
        irn_resp_start(resp, 200, NULL, 0, -1);
        f->stream_resp = resp;
        f->stream_step = 0;
        f->stream_timer.data = f;
        uv_timer_start(&f->stream_timer, fx_stream_tick, 5, 0);
    } else if (strcmp(p, "/big") == 0 || strcmp(p, "/bigchunked") == 0) {
        bool chunked = p[4] != '\0'; /* several body spans per client read */
        irn_resp_start(resp, 200, NULL, 0, chunked ? -1 : (int64_t)f->big_n * FX_CHUNK);
        f->big_step = 0;
        fx_big_fill(f, resp);
    } else if (p[0] == '/' && p[1] == 'p' && p[2] >= '0' && p[2] <= '2' && !p[3]) {
        int i = p[2] - '0';
        f->pipe_timers[i].data = resp;
        uv_timer_start(&f->pipe_timers[i], fx_pipe_tick, (uint64_t)(30 - 10 * i), 0);
    } else if (strcmp(p, "/slow") == 0) {
        fx_hold(f, resp); /* only an abort ends it */
    } else if (strcmp(p, "/rst") == 0) {
        irn_resp_close(resp); /* before any response byte */
    } else if (strcmp(p, "/rstmid") == 0) {
        irn_resp_start(resp, 200, NULL, 0, -1);
        irn_resp_write(resp, "partial", 7);
        fx_hold(f, resp);
    } else {
        irn_resp_send_error(resp, 404, NULL, "Not Found");
    }
}

/* ---- setup and teardown -------------------------------------------------------------- */

/* A server on 127.0.0.1 (a free port) with the handlers above; its port. */
static inline int fx_server_new(fx *f, const irn_server_cfg *extra, irn_server **out) {
    irn_server_cfg cfg;
    if (extra)
        cfg = *extra;
    else
        irn_server_cfg_init(&cfg);
    cfg.host = "127.0.0.1";
    cfg.port = 0;
    cfg.on_request = fx_on_request;
    cfg.on_headers = fx_on_headers;
    cfg.ud = f;
    cfg.cache = f->cache;
    assert_int_equal(irn_server_new(&f->loop, &cfg, out), 0);
    int port = irn_server_port(*out);
    assert_true(port > 0);
    return port;
}

/* srv_cfg / pool_cfg: NULL for the defaults (srv_cfg->h2c turns h2c on). */
static inline void fx_setup(fx *f, const irn_server_cfg *srv_cfg, const irn_pool_cfg *pool_cfg) {
    memset(f, 0, sizeof *f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    f->cache = irn_cache_new();
    assert_non_null(f->cache);
    f->port = fx_server_new(f, srv_cfg, &f->srv);
    irn_pool_cfg pc;
    if (pool_cfg)
        pc = *pool_cfg;
    else
        irn_pool_cfg_init(&pc);
    pc.cache = f->cache;
    f->pool = irn_pool_new(&f->loop, &pc);
    assert_non_null(f->pool);
    f->big_n = 200; /* 3.2 MiB */
    uv_timer_init(&f->loop, &f->stream_timer);
    for (int i = 0; i < 3; i++) uv_timer_init(&f->loop, &f->pipe_timers[i]);
}

/* A second server, for tests that need two upstream hosts. */
static inline void fx_add_host_b(fx *f, const irn_server_cfg *srv_cfg) {
    f->port_b = fx_server_new(f, srv_cfg, &f->srv_b);
}

/* Runs the loop until *flag becomes true, failing after 5 s. */
static inline void run_until(fx *f, const int *flag) {
    uint64_t start = uv_hrtime();
    while (!*flag) {
        uv_run(&f->loop, UV_RUN_ONCE);
        if (uv_hrtime() - start > 5000 * MS) fail_msg("timed out");
    }
}

/* Runs the loop for about ms milliseconds. */
static inline void run_for(fx *f, uint64_t ms) {
    uint64_t start = uv_hrtime();
    while (uv_hrtime() - start < ms * MS) uv_run(&f->loop, UV_RUN_NOWAIT);
}

static inline void set_flag(void *ud) {
    *(int *)ud = 1;
}

static inline void close_walk(uv_handle_t *h, void *arg) {
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

/* Closes the servers (at once), the pool and the loop. A test that closed a
 * server itself (irn_server_close with set_flag on srv_closed/srv_b_closed)
 * must have waited for that flag. */
static inline void fx_teardown(fx *f) {
    if (!f->srv_closed) {
        irn_server_close(f->srv, set_flag, &f->srv_closed);
        irn_server_close_all(f->srv);
    }
    if (f->srv_b && !f->srv_b_closed) {
        irn_server_close(f->srv_b, set_flag, &f->srv_b_closed);
        irn_server_close_all(f->srv_b);
    }
    irn_pool_close(f->pool, set_flag, &f->pool_closed);
    uv_close((uv_handle_t *)&f->stream_timer, NULL);
    for (int i = 0; i < 3; i++) uv_close((uv_handle_t *)&f->pipe_timers[i], NULL);
    run_until(f, &f->srv_closed);
    if (f->srv_b) run_until(f, &f->srv_b_closed);
    run_until(f, &f->pool_closed);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    uv_walk(&f->loop, close_walk, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    irn_cache_free(f->cache);
}

/* ---- a client call recorder ------------------------------------------------------------ */

typedef struct call {
    int status;
    int done;
    int err;
    int nheads;
    ir_buf body;
    char peer_hdr[64]; /* the response's X-Peer */
    char req_hdr[64];  /* the response's X-Req, set by the tests' on_error hooks */
    irn_client *h;
    size_t pause_after; /* > 0: pause once the body holds this many bytes */
    bool paused;        /* it did */
    bool resumed;
    size_t while_paused;      /* body bytes delivered between pause and resume: must stay 0 */
    uv_timer_t *resume_timer; /* set: resume 200 ms after pausing (its data is the call) */
} call;

static inline void c_head(void *ud, int status, const irn_header *h, size_t n) {
    call *c = ud;
    c->status = status;
    c->nheads++;
    const irn_header *p = irn_headers_find(h, n, "x-peer");
    if (p) snprintf(c->peer_hdr, sizeof c->peer_hdr, "%s", p->value);
    p = irn_headers_find(h, n, "x-req");
    if (p) snprintf(c->req_hdr, sizeof c->req_hdr, "%s", p->value);
}

static inline void c_resume_cb(uv_timer_t *t) {
    call *c = t->data;
    c->resumed = true;
    irn_client_resume(c->h);
}

static inline void c_body(void *ud, const char *d, size_t n) {
    call *c = ud;
    assert_false(c->done); /* nothing after on_done */
    if (c->paused && !c->resumed) c->while_paused += n;
    assert_int_equal(ir_buf_append(&c->body, d, n), 0);
    if (c->pause_after && !c->paused && c->body.len >= c->pause_after) {
        c->paused = true;
        irn_client_pause(c->h);
        if (c->resume_timer) uv_timer_start(c->resume_timer, c_resume_cb, 200, 0);
    }
}

static inline void c_done(void *ud, int err) {
    call *c = ud;
    assert_int_equal(c->done, 0); /* exactly once */
    c->err = err;
    c->done = 1;
}

static const irn_client_cbs CBS = {c_head, c_body, c_done};

static inline void call_init(call *c) {
    memset(c, 0, sizeof *c);
    ir_buf_init(&c->body, 0);
}

/* A request to the first server (set .port = f->port_b for host B). */
static inline irn_client_req mkreq(fx *f, const char *method, const char *path) {
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

/* Starts the request and runs the loop until it is done. */
static inline void do_call(fx *f, irn_client_req *r, call *c) {
    assert_int_equal(irn_client_request(f->pool, r, &CBS, c, &c->h), 0);
    assert_false(c->done); /* never synchronous */
    run_until(f, &c->done);
}

/* A timer callback that cancels its call (twice: the second is harmless). */
static inline void cancel_cb(uv_timer_t *t) {
    call *c = t->data;
    irn_client_cancel(c->h);
    irn_client_cancel(c->h);
}

/* ---- hand-written servers ------------------------------------------------------------ */

/* Listens on ip (IPv4 or IPv6), a free port; l->data = data. Returns the
 * port, or 0 when ip cannot be bound (l is initialised either way). */
static inline uint16_t raw_listen(fx *f, uv_tcp_t *l, const char *ip, void *data,
                                  uv_connection_cb cb) {
    uv_tcp_init(&f->loop, l);
    l->data = data;
    struct sockaddr_storage ss;
    int len = sizeof ss;
    if (strchr(ip, ':'))
        assert_int_equal(uv_ip6_addr(ip, 0, (struct sockaddr_in6 *)&ss), 0);
    else
        assert_int_equal(uv_ip4_addr(ip, 0, (struct sockaddr_in *)&ss), 0);
    if (uv_tcp_bind(l, (struct sockaddr *)&ss, 0) != 0 || uv_listen((uv_stream_t *)l, 8, cb) != 0)
        return 0;
    uv_tcp_getsockname(l, (struct sockaddr *)&ss, &len);
    if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

#endif
