/* test_pool.c: the HTTP/1.1 client pool against two loopback servers (idle
 * connections kept per host), and the exact request head the client sends. */
#include "net/loopback_fixture.h"

/* Host 0 is the fixture's first server (A), host 1 its second (B). */
static irn_client_req host_req(fx *f, int i) {
    irn_client_req r = mkreq(f, "GET", "/hello");
    if (i) r.port = (uint16_t)f->port_b;
    return r;
}

static void setup_two(fx *f, const irn_pool_cfg *pc) {
    fx_setup(f, NULL, pc);
    fx_add_host_b(f, NULL);
}

/* Starts a GET /hello on host i. */
static void start(fx *f, int i, call *c, const irn_client_cbs *cbs) {
    call_init(c);
    irn_client_req r = host_req(f, i);
    assert_int_equal(irn_client_request(f->pool, &r, cbs, c, &c->h), 0);
    assert_false(c->done);
}

/* Checks a finished call and frees its body (the peer stays in peer_hdr). */
static void check_ok(call *c) {
    assert_int_equal(c->err, 0);
    assert_int_equal(c->status, 200);
    ir_buf_free(&c->body);
}

static void get(fx *f, int i, call *c) {
    start(f, i, c, &CBS);
    run_until(f, &c->done);
    check_ok(c);
}

static irn_pool_stats pstats(fx *f) {
    irn_pool_stats st;
    irn_pool_stats_get(f->pool, &st);
    return st;
}

static irn_server_stats sstats(fx *f, int i) {
    irn_server_stats st;
    irn_server_stats_get(i ? f->srv_b : f->srv, &st);
    return st;
}

/* ---- tests ------------------------------------------------------------------------------- */

/* Alternating A, B, A, B...: each host's one connection is reused. */
static void test_reuse_per_host(void **st) {
    fx f;
    setup_two(&f, NULL);
    char first[2][64];
    for (int k = 0; k < 8; k++) {
        int i = k % 2;
        call c;
        get(&f, i, &c);
        if (k < 2)
            snprintf(first[i], sizeof first[i], "%s", c.peer_hdr);
        else
            assert_string_equal(c.peer_hdr, first[i]); /* same client socket as before */
    }
    irn_pool_stats ps = pstats(&f);
    assert_int_equal(ps.requests, 8);
    assert_int_equal(ps.conns_created, 2);
    assert_int_equal(ps.conns_reused, 6);
    assert_int_equal(ps.idle, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sstats(&f, i).conns_accepted, 1);
        assert_int_equal(sstats(&f, i).requests, 4);
    }
    fx_teardown(&f);
}

/* Two at once to each host: with max_idle_per_host = 1 each host keeps one
 * idle connection (a global cap would keep one in all). */
static void test_cap_is_per_host(void **st) {
    irn_pool_cfg pc;
    irn_pool_cfg_init(&pc);
    pc.max_idle_per_host = 1;
    fx f;
    setup_two(&f, &pc);
    call cs[4];
    for (int k = 0; k < 4; k++) start(&f, k / 2, &cs[k], &CBS);
    for (int k = 0; k < 4; k++) {
        run_until(&f, &cs[k].done);
        check_ok(&cs[k]);
    }
    irn_pool_stats ps = pstats(&f);
    assert_int_equal(ps.conns_created, 4);
    assert_int_equal(ps.conns_reused, 0);
    assert_int_equal(ps.idle, 2);
    /* The surplus connection of each host is closed: each server ends up
     * with one open connection. */
    uint64_t t0 = uv_hrtime();
    while (sstats(&f, 0).conns_active != 1 || sstats(&f, 1).conns_active != 1) {
        uv_run(&f.loop, UV_RUN_ONCE);
        if (uv_hrtime() - t0 > 5000 * MS) fail_msg("surplus connections not closed");
    }
    /* Both hosts are now served from the pool. */
    call c;
    get(&f, 1, &c);
    get(&f, 0, &c);
    ps = pstats(&f);
    assert_int_equal(ps.conns_created, 4);
    assert_int_equal(ps.conns_reused, 2);
    assert_int_equal(ps.idle, 2);
    fx_teardown(&f);
}

static char last_peer[64]; /* the peer of the call that finished last */

static void c_done_note(void *ud, int err) {
    call *c = ud;
    c_done(ud, err);
    snprintf(last_peer, sizeof last_peer, "%s", c->peer_hdr);
}

/* The connection returned last is the one reused first. */
static void test_most_recent_first(void **st) {
    fx f;
    setup_two(&f, NULL);
    const irn_client_cbs cbs = {c_head, c_body, c_done_note};
    call a, b;
    start(&f, 0, &a, &cbs);
    start(&f, 0, &b, &cbs);
    run_until(&f, &a.done);
    run_until(&f, &b.done);
    check_ok(&a);
    check_ok(&b);
    assert_string_not_equal(a.peer_hdr, b.peer_hdr);
    char want[64];
    snprintf(want, sizeof want, "%s", last_peer);
    call c;
    get(&f, 1, &c); /* another host in between changes nothing */
    get(&f, 0, &c);
    assert_string_equal(c.peer_hdr, want);
    assert_int_equal(pstats(&f).conns_created, 3);
    fx_teardown(&f);
}

/* Idle connections of every host expire after idle_timeout. */
static void test_idle_timeout(void **st) {
    irn_pool_cfg pc;
    irn_pool_cfg_init(&pc);
    pc.idle_timeout_ns = 50 * MS;
    fx f;
    setup_two(&f, &pc);
    call c;
    get(&f, 0, &c);
    get(&f, 1, &c);
    assert_int_equal(pstats(&f).idle, 2);
    /* the 50-ms idle timeout closes both; a loaded machine may run its timer late */
    for (uint64_t t0 = uv_hrtime(); pstats(&f).idle && uv_hrtime() - t0 < 5000 * MS;)
        run_for(&f, 5);
    assert_int_equal(pstats(&f).idle, 0);
    get(&f, 0, &c);
    get(&f, 1, &c);
    assert_int_equal(pstats(&f).conns_created, 4);
    assert_int_equal(pstats(&f).conns_reused, 0);
    fx_teardown(&f);
}

/* Timers are lazy (re-armed only for an earlier deadline): a pooled connection's idle
 * deadline passing while it serves a request must not close it, and a head timeout
 * shorter than the idle deadline armed before it must still fire on time. */
static void test_deadlines_move(void **st) {
    irn_pool_cfg pc;
    irn_pool_cfg_init(&pc);
    pc.idle_timeout_ns = 40 * MS;
    fx f;
    fx_setup(&f, NULL, &pc);
    call c;
    get(&f, 0, &c);
    /* The request takes the idle connection at once (before the loop runs again), and
     * /slow is answered only once the idle deadline armed at 40 ms has passed. (It was
     * /p0, answered 30 ms in, 20 ms after the deadline was armed: a busy machine that
     * ran those 20 ms long let the deadline close the connection before the request.) */
    call_init(&c);
    irn_client_req r = mkreq(&f, "GET", "/slow");
    assert_int_equal(irn_client_request(f.pool, &r, &CBS, &c, &c.h), 0);
    run_until(&f, &f.nheld);
    run_for(&f, 80);
    assert_false(c.done);
    irn_resp_send(f.held[0], 200, "text/plain", "late", 4, NULL, 0);
    run_until(&f, &c.done);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.status, 200);
    ir_buf_free(&c.body);
    assert_int_equal(pstats(&f).conns_reused, 1);
    assert_int_equal(pstats(&f).conns_created, 1);
    fx_teardown(&f);

    pc.idle_timeout_ns = 60000 * MS; /* armed first, and far later than the head timeout */
    fx_setup(&f, NULL, &pc);
    get(&f, 0, &c);
    call_init(&c);
    r = mkreq(&f, "GET", "/slow");
    r.head_timeout_ns = 30 * MS;
    do_call(&f, &r, &c); /* fails the test after 5 s if the head timeout never fires */
    assert_int_equal(c.err, IRN_EHEAD_TIMEOUT);
    assert_int_equal(pstats(&f).conns_reused, 1);
    ir_buf_free(&c.body);
    fx_teardown(&f);
}

/* A host whose server went away: its idle connection leaves the pool, the
 * other host's stays. */
static void test_stale_host(void **st) {
    fx f;
    setup_two(&f, NULL);
    call c;
    get(&f, 0, &c);
    get(&f, 1, &c);
    irn_server_close(f.srv, set_flag, &f.srv_closed);
    run_until(&f, &f.srv_closed);
    uint64_t t0 = uv_hrtime();
    while (pstats(&f).idle != 1) {
        uv_run(&f.loop, UV_RUN_ONCE);
        if (uv_hrtime() - t0 > 5000 * MS) fail_msg("stale connection kept");
    }
    get(&f, 1, &c);
    assert_int_equal(pstats(&f).conns_reused, 1);
    fx_teardown(&f);
}

/* ---- the request head, byte for byte --------------------------------------------------- */

/* A server that records what it gets on its one connection and answers an
 * empty 200 once `want` bytes are in. */
typedef struct cap {
    uv_tcp_t listener;
    uv_tcp_t conn;
    uv_write_t wr;
    bool accepted;
    ir_buf in;
    size_t want;
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

/* Its port, 0 when ip cannot be bound. */
static uint16_t cap_listen(fx *f, cap *k, const char *ip) {
    memset(k, 0, sizeof *k);
    ir_buf_init(&k->in, 0);
    return raw_listen(f, &k->listener, ip, k, cap_conn);
}

static void cap_free(cap *k) {
    ir_buf_free(&k->in);
    uv_close((uv_handle_t *)&k->listener, NULL);
}

/* Sends r to the capturing server; it must get `expect` and then `extra`
 * more bytes (a body not spelled out in expect). */
static void cap_check(fx *f, cap *k, irn_client_req *r, const char *expect, size_t extra) {
    ir_buf_reset(&k->in);
    k->want = strlen(expect) + extra;
    call c;
    call_init(&c);
    assert_int_equal(irn_client_request(f->pool, r, &CBS, &c, &c.h), 0);
    run_until(f, &c.done);
    check_ok(&c);
    assert_int_equal(k->in.len, k->want);
    assert_memory_equal(k->in.data, expect, strlen(expect));
}

static void test_request_bytes(void **st) {
    fx f;
    fx_setup(&f, NULL, NULL);
    cap k;
    uint16_t port = cap_listen(&f, &k, "127.0.0.1");
    assert_true(port > 0);
    char expect[512];

    irn_client_req r;
    memset(&r, 0, sizeof r);
    r.host = "127.0.0.1";
    r.port = port;
    snprintf(expect, sizeof expect, "GET / HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n", port);
    cap_check(&f, &k, &r, expect, 0);

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
    cap_check(&f, &k, &r, expect, 0);

    /* a caller Host replaces ours; PUT without a body still says 0 */
    irn_header host = {"Host", 4, "api.example", 11};
    r.method = "PUT";
    r.path = NULL;
    r.headers = &host;
    r.nheaders = 1;
    r.body = NULL;
    r.body_len = 0;
    cap_check(&f, &k, &r, "PUT / HTTP/1.1\r\nHost: api.example\r\nContent-Length: 0\r\n\r\n", 0);

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
    cap_check(&f, &k, &r, expect, sizeof big);

    /* a body in parts goes out in order as one body (empty parts skipped), even
     * when the socket takes only some of it at once */
    static char big2[234567];
    memset(big2, 'r', sizeof big2);
    irn_part parts[] = {{big, sizeof big}, {"", 0}, {"<m>", 3}, {big2, sizeof big2}};
    r.body = NULL;
    r.body_len = 0;
    r.body_parts = parts;
    r.nbody_parts = 4;
    snprintf(expect, sizeof expect,
             "POST / HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nContent-Length: %zu\r\n\r\n", port,
             sizeof big + 3 + sizeof big2);
    cap_check(&f, &k, &r, expect, sizeof big + 3 + sizeof big2);
    const char *got = k.in.data + strlen(expect);
    assert_memory_equal(got, big, sizeof big);
    assert_memory_equal(got + sizeof big, "<m>", 3);
    assert_memory_equal(got + sizeof big + 3, big2, sizeof big2);
    /* a body and parts together, or too many parts: refused */
    irn_client *h = NULL;
    r.body = "x";
    r.body_len = 1;
    assert_int_equal(irn_client_request(f.pool, &r, &CBS, NULL, &h), IRN_EINVAL);
    irn_part many[IRN_MAX_BODY_PARTS + 1] = {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 1}};
    r.body = NULL;
    r.body_parts = many;
    r.nbody_parts = IRN_MAX_BODY_PARTS + 1;
    assert_int_equal(irn_client_request(f.pool, &r, &CBS, NULL, &h), IRN_EINVAL);
    assert_null(h);
    r.body_parts = NULL;
    r.nbody_parts = 0;
    assert_int_equal(pstats(&f).conns_created, 1);
    cap_free(&k);

    /* an IPv6 literal goes in brackets (where the machine has ::1) */
    cap k6;
    uint16_t port6 = cap_listen(&f, &k6, "::1");
    if (port6) {
        memset(&r, 0, sizeof r);
        r.host = "::1";
        r.port = port6;
        r.path = "/v6";
        snprintf(expect, sizeof expect, "GET /v6 HTTP/1.1\r\nHost: [::1]:%u\r\n\r\n", port6);
        cap_check(&f, &k6, &r, expect, 0);
    } else {
        print_message("no IPv6 loopback: the bracketed Host is not checked\n");
    }
    cap_free(&k6);
    fx_teardown(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse_per_host),    cmocka_unit_test(test_cap_is_per_host),
        cmocka_unit_test(test_most_recent_first), cmocka_unit_test(test_idle_timeout),
        cmocka_unit_test(test_deadlines_move),    cmocka_unit_test(test_stale_host),
        cmocka_unit_test(test_request_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
