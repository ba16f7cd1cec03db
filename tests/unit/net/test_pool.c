/* test_pool.c: the HTTP/1.1 client pool against two loopback servers (idle
 * connections kept per host), and the exact request head the client sends. */
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

/* ---- fixture: a loop, two servers (hosts A and B), one pool ------------------------- */

typedef struct px {
    uv_loop_t loop;
    irn_server *srv[2];
    int port[2];
    irn_pool *pool;
    int closed;
} px;

static void on_request(void *ud, irn_request *req, irn_resp *resp) {
    irn_header xh = {"X-Peer", 6, req->peer, strlen(req->peer)};
    irn_resp_send(resp, 200, "text/plain", "hi", 2, &xh, 1);
}

static void px_setup(px *p, const irn_pool_cfg *pc) {
    memset(p, 0, sizeof *p);
    assert_int_equal(uv_loop_init(&p->loop), 0);
    for (int i = 0; i < 2; i++) {
        irn_server_cfg cfg;
        irn_server_cfg_init(&cfg);
        cfg.host = "127.0.0.1";
        cfg.on_request = on_request;
        assert_int_equal(irn_server_new(&p->loop, &cfg, &p->srv[i]), 0);
        p->port[i] = irn_server_port(p->srv[i]);
    }
    p->pool = irn_pool_new(&p->loop, pc);
    assert_non_null(p->pool);
}

static void run_until(px *p, const int *flag) {
    uint64_t start = uv_hrtime();
    while (!*flag) {
        uv_run(&p->loop, UV_RUN_ONCE);
        if (uv_hrtime() - start > 5000 * MS) fail_msg("timed out");
    }
}

static void run_for(px *p, uint64_t ms) {
    uint64_t start = uv_hrtime();
    while (uv_hrtime() - start < ms * MS) uv_run(&p->loop, UV_RUN_NOWAIT);
}

static void count_closed(void *ud) {
    (*(int *)ud)++;
}

static void close_walk(uv_handle_t *h, void *arg) {
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

static void px_teardown(px *p) {
    int want = 1;
    irn_pool_close(p->pool, count_closed, &p->closed);
    for (int i = 0; i < 2; i++) {
        if (!p->srv[i]) continue;
        irn_server_close(p->srv[i], count_closed, &p->closed);
        irn_server_close_all(p->srv[i]);
        want++;
    }
    uint64_t start = uv_hrtime();
    while (p->closed < want) {
        uv_run(&p->loop, UV_RUN_ONCE);
        if (uv_hrtime() - start > 5000 * MS) fail_msg("timed out closing");
    }
    uv_run(&p->loop, UV_RUN_DEFAULT);
    uv_walk(&p->loop, close_walk, NULL);
    uv_run(&p->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&p->loop), 0);
}

/* ---- calls ------------------------------------------------------------------------------- */

typedef struct call {
    int status, done, err;
    int order; /* 1 + how many calls finished before this one */
    char peer[64];
} call;

static int finished; /* calls finished so far in the current test */

static void c_head(void *ud, int status, const irn_header *h, size_t n) {
    call *c = ud;
    c->status = status;
    const irn_header *p = irn_headers_find(h, n, "x-peer");
    if (p) snprintf(c->peer, sizeof c->peer, "%s", p->value);
}

static void c_body(void *ud, const char *d, size_t n) {}

static void c_done(void *ud, int err) {
    call *c = ud;
    c->err = err;
    c->done = 1;
    c->order = ++finished;
}

static const irn_client_cbs CBS = {c_head, c_body, c_done};

/* Starts a GET / on host i (0: A, 1: B). */
static void start(px *p, int i, call *c) {
    memset(c, 0, sizeof *c);
    irn_client_req r;
    memset(&r, 0, sizeof r);
    r.host = "127.0.0.1";
    r.port = (uint16_t)p->port[i];
    r.connect_timeout_ns = 2000 * MS;
    r.head_timeout_ns = 3000 * MS;
    assert_int_equal(irn_client_request(p->pool, &r, &CBS, c, NULL), 0);
    assert_false(c->done);
}

static void get(px *p, int i, call *c) {
    start(p, i, c);
    run_until(p, &c->done);
    assert_int_equal(c->err, 0);
    assert_int_equal(c->status, 200);
}

static irn_pool_stats pstats(px *p) {
    irn_pool_stats st;
    irn_pool_stats_get(p->pool, &st);
    return st;
}

static irn_server_stats sstats(px *p, int i) {
    irn_server_stats st;
    irn_server_stats_get(p->srv[i], &st);
    return st;
}

/* ---- tests ------------------------------------------------------------------------------- */

/* Alternating A, B, A, B...: each host's one connection is reused. */
static void test_reuse_per_host(void **st) {
    px p;
    px_setup(&p, NULL);
    char first[2][64];
    for (int k = 0; k < 8; k++) {
        int i = k % 2;
        call c;
        get(&p, i, &c);
        if (k < 2)
            snprintf(first[i], sizeof first[i], "%s", c.peer);
        else
            assert_string_equal(c.peer, first[i]); /* same client socket as before */
    }
    irn_pool_stats ps = pstats(&p);
    assert_int_equal(ps.requests, 8);
    assert_int_equal(ps.conns_created, 2);
    assert_int_equal(ps.conns_reused, 6);
    assert_int_equal(ps.idle, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sstats(&p, i).conns_accepted, 1);
        assert_int_equal(sstats(&p, i).requests, 4);
    }
    px_teardown(&p);
}

/* Two at once to each host: with max_idle_per_host = 1 each host keeps one
 * idle connection (a global cap would keep one in all). */
static void test_cap_is_per_host(void **st) {
    irn_pool_cfg pc;
    irn_pool_cfg_init(&pc);
    pc.max_idle_per_host = 1;
    px p;
    px_setup(&p, &pc);
    call cs[4];
    for (int k = 0; k < 4; k++) start(&p, k / 2, &cs[k]);
    for (int k = 0; k < 4; k++) {
        run_until(&p, &cs[k].done);
        assert_int_equal(cs[k].err, 0);
    }
    irn_pool_stats ps = pstats(&p);
    assert_int_equal(ps.conns_created, 4);
    assert_int_equal(ps.conns_reused, 0);
    assert_int_equal(ps.idle, 2);
    /* The surplus connection of each host is closed: each server ends up
     * with one open connection. */
    uint64_t t0 = uv_hrtime();
    while (sstats(&p, 0).conns_active != 1 || sstats(&p, 1).conns_active != 1) {
        uv_run(&p.loop, UV_RUN_ONCE);
        if (uv_hrtime() - t0 > 5000 * MS) fail_msg("surplus connections not closed");
    }
    /* Both hosts are now served from the pool. */
    call c;
    get(&p, 1, &c);
    get(&p, 0, &c);
    ps = pstats(&p);
    assert_int_equal(ps.conns_created, 4);
    assert_int_equal(ps.conns_reused, 2);
    assert_int_equal(ps.idle, 2);
    px_teardown(&p);
}

/* The connection returned last is the one reused first. */
static void test_most_recent_first(void **st) {
    px p;
    px_setup(&p, NULL);
    finished = 0;
    call a, b;
    start(&p, 0, &a);
    start(&p, 0, &b);
    run_until(&p, &a.done);
    run_until(&p, &b.done);
    assert_string_not_equal(a.peer, b.peer);
    const char *last = a.order > b.order ? a.peer : b.peer;
    char want[64];
    snprintf(want, sizeof want, "%s", last);
    call c;
    get(&p, 1, &c); /* another host in between changes nothing */
    get(&p, 0, &c);
    assert_string_equal(c.peer, want);
    assert_int_equal(pstats(&p).conns_created, 3);
    px_teardown(&p);
}

/* Idle connections of every host expire after idle_timeout. */
static void test_idle_timeout(void **st) {
    irn_pool_cfg pc;
    irn_pool_cfg_init(&pc);
    pc.idle_timeout_ns = 50 * MS;
    px p;
    px_setup(&p, &pc);
    call c;
    get(&p, 0, &c);
    get(&p, 1, &c);
    assert_int_equal(pstats(&p).idle, 2);
    run_for(&p, 200);
    assert_int_equal(pstats(&p).idle, 0);
    get(&p, 0, &c);
    get(&p, 1, &c);
    assert_int_equal(pstats(&p).conns_created, 4);
    assert_int_equal(pstats(&p).conns_reused, 0);
    px_teardown(&p);
}

/* A host whose server went away: its idle connection leaves the pool, the
 * other host's stays. */
static void test_stale_host(void **st) {
    px p;
    px_setup(&p, NULL);
    call c;
    get(&p, 0, &c);
    get(&p, 1, &c);
    int closed = 0;
    irn_server_close(p.srv[0], count_closed, &closed);
    p.srv[0] = NULL;
    run_until(&p, &closed);
    uint64_t t0 = uv_hrtime();
    while (pstats(&p).idle != 1) {
        uv_run(&p.loop, UV_RUN_ONCE);
        if (uv_hrtime() - t0 > 5000 * MS) fail_msg("stale connection kept");
    }
    get(&p, 1, &c);
    assert_int_equal(pstats(&p).conns_reused, 1);
    px_teardown(&p);
}

/* ---- the request head, byte for byte --------------------------------------------------- */

typedef struct cap {
    uv_tcp_t listener;
    uv_tcp_t conn;
    uv_write_t wr;
    bool accepted;
    ir_buf in;
    size_t want; /* answer once this many bytes are in */
    char rbuf[4096];
} cap;

static void cap_alloc(uv_handle_t *h, size_t s, uv_buf_t *b) {
    cap *k = h->data;
    *b = uv_buf_init(k->rbuf, sizeof k->rbuf);
}

static void cap_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
    cap *k = s->data;
    if (n < 0) {
        if (!uv_is_closing((uv_handle_t *)s)) uv_close((uv_handle_t *)s, NULL);
        return;
    }
    ir_buf_append(&k->in, b->base, (size_t)n);
    if (n > 0 && k->in.len == k->want) {
        static char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        uv_buf_t w = uv_buf_init(ok, sizeof ok - 1);
        uv_write(&k->wr, s, &w, 1, NULL);
    }
}

static void cap_conn(uv_stream_t *l, int status) {
    cap *k = l->data;
    assert_false(k->accepted); /* one connection, kept alive */
    k->accepted = true;
    uv_tcp_init(l->loop, &k->conn);
    k->conn.data = k;
    uv_accept(l, (uv_stream_t *)&k->conn);
    uv_read_start((uv_stream_t *)&k->conn, cap_alloc, cap_read);
}

/* Listens on ip, port 0; returns the port, 0 when ip cannot be bound. */
static uint16_t cap_listen(px *p, cap *k, const char *ip) {
    memset(k, 0, sizeof *k);
    ir_buf_init(&k->in, 0);
    uv_tcp_init(&p->loop, &k->listener);
    k->listener.data = k;
    struct sockaddr_storage ss;
    int len = sizeof ss;
    if (strchr(ip, ':'))
        assert_int_equal(uv_ip6_addr(ip, 0, (struct sockaddr_in6 *)&ss), 0);
    else
        assert_int_equal(uv_ip4_addr(ip, 0, (struct sockaddr_in *)&ss), 0);
    if (uv_tcp_bind(&k->listener, (struct sockaddr *)&ss, 0) != 0 ||
        uv_listen((uv_stream_t *)&k->listener, 8, cap_conn) != 0)
        return 0;
    uv_tcp_getsockname(&k->listener, (struct sockaddr *)&ss, &len);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port); /* same offset for IPv6 */
}

static void cap_free(cap *k) {
    ir_buf_free(&k->in);
    uv_close((uv_handle_t *)&k->listener, NULL);
}

/* Sends r to the capturing server and checks the bytes it got. */
static void cap_check(px *p, cap *k, irn_client_req *r, const char *expect) {
    ir_buf_reset(&k->in);
    k->want = strlen(expect);
    call c;
    memset(&c, 0, sizeof c);
    assert_int_equal(irn_client_request(p->pool, r, &CBS, &c, NULL), 0);
    run_until(p, &c.done);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.status, 200);
    assert_string_equal(k->in.data, expect);
}

static void test_request_bytes(void **st) {
    px p;
    px_setup(&p, NULL);
    cap k;
    uint16_t port = cap_listen(&p, &k, "127.0.0.1");
    assert_true(port > 0);
    char expect[512];

    irn_client_req r;
    memset(&r, 0, sizeof r);
    r.host = "127.0.0.1";
    r.port = port;
    snprintf(expect, sizeof expect, "GET / HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n", port);
    cap_check(&p, &k, &r, expect);

    /* POST with caller headers (their framing headers dropped) and a body */
    irn_header hs[] = {{"X-A", 3, "1", 1},
                       {"Content-Length", 14, "99", 2},
                       {"Transfer-Encoding", 17, "chunked", 7},
                       {"x-b", 0, "two words", 0}};
    r.method = "POST";
    r.path = "/v1/completions?x=1";
    r.headers = hs;
    r.nheaders = 4;
    r.body = "hello";
    r.body_len = 5;
    snprintf(expect, sizeof expect,
             "POST /v1/completions?x=1 HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nX-A: 1\r\n"
             "x-b: two words\r\nContent-Length: 5\r\n\r\nhello",
             port);
    cap_check(&p, &k, &r, expect);

    /* a caller Host replaces ours; PUT without a body still says 0 */
    irn_header host = {"Host", 4, "api.example", 11};
    r.method = "PUT";
    r.path = NULL;
    r.headers = &host;
    r.nheaders = 1;
    r.body = NULL;
    r.body_len = 0;
    cap_check(&p, &k, &r, "PUT / HTTP/1.1\r\nHost: api.example\r\nContent-Length: 0\r\n\r\n");

    /* a body without a method is a POST; a long body gets a long length */
    static char big[123456];
    memset(big, 'q', sizeof big);
    r.method = NULL;
    r.headers = NULL;
    r.nheaders = 0;
    r.body = big;
    r.body_len = sizeof big;
    snprintf(expect, sizeof expect,
             "POST / HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nContent-Length: 123456\r\n\r\n", port);
    ir_buf_reset(&k.in);
    k.want = strlen(expect) + sizeof big;
    call c;
    memset(&c, 0, sizeof c);
    assert_int_equal(irn_client_request(p.pool, &r, &CBS, &c, NULL), 0);
    run_until(&p, &c.done);
    assert_int_equal(c.err, 0);
    assert_int_equal(k.in.len, k.want);
    assert_memory_equal(k.in.data, expect, strlen(expect));

    assert_int_equal(pstats(&p).conns_created, 1);
    cap_free(&k);

    /* an IPv6 literal goes in brackets (where the machine has ::1) */
    cap k6;
    uint16_t port6 = cap_listen(&p, &k6, "::1");
    if (port6) {
        memset(&r, 0, sizeof r);
        r.host = "::1";
        r.port = port6;
        r.path = "/v6";
        snprintf(expect, sizeof expect, "GET /v6 HTTP/1.1\r\nHost: [::1]:%u\r\n\r\n", port6);
        cap_check(&p, &k6, &r, expect);
    } else {
        print_message("no IPv6 loopback: the bracketed Host is not checked\n");
    }
    cap_free(&k6);
    px_teardown(&p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse_per_host),    cmocka_unit_test(test_cap_is_per_host),
        cmocka_unit_test(test_most_recent_first), cmocka_unit_test(test_idle_timeout),
        cmocka_unit_test(test_stale_host),        cmocka_unit_test(test_request_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
