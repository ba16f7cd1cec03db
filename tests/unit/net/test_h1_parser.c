/* test_h1_parser.c: the socket-free HTTP/1.1 request parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/ir_net.h"

/* Feeds one chunk, handling events as a server would. Appends one line per
 * complete request to out. Returns 0 or the error status. */
static int drive(irn_h1_parser *p, const char *data, size_t len, ir_buf *out, int *nheaders_ev) {
    size_t pos = 0;
    bool kick = false;
    while (pos < len || kick) {
        size_t used = 0;
        irn_h1_event ev = irn_h1_parser_feed(p, data + pos, len - pos, &used);
        pos += used;
        kick = false;
        if (ev == IRN_H1_MORE) {
            assert_int_equal(pos, len);
            break;
        }
        if (ev == IRN_H1_HEADERS) {
            irn_request *r = irn_h1_parser_request(p);
            assert_non_null(r);
            assert_int_equal(r->body.len, 0);
            if (nheaders_ev) (*nheaders_ev)++;
            kick = true;
        } else if (ev == IRN_H1_REQUEST) {
            irn_request *r = irn_h1_parser_take(p);
            assert_non_null(r);
            ir_buf_appendf(out, "%s %s [%s|%s] ka=%d ec=%d ch=%d cl=%lld h=", r->method, r->target,
                           r->path, r->query, r->keep_alive, r->expect_continue, r->chunked,
                           (long long)r->content_length);
            for (size_t i = 0; i < r->nheaders; i++)
                ir_buf_appendf(out, "%s=%s;", r->headers[i].name, r->headers[i].value);
            ir_buf_appendf(out, " body(%zu)=", r->body.len);
            ir_buf_append(out, r->body.data ? r->body.data : "", r->body.len);
            ir_buf_append_str(out, "\n");
            irn_request_free(r);
        } else {
            return irn_h1_parser_error(p, NULL);
        }
    }
    return 0;
}

static int parse_all(const char *data, size_t len, const irn_h1_limits *lim, ir_buf *out) {
    irn_h1_parser *p = irn_h1_parser_new(lim);
    int st = drive(p, data, len, out, NULL);
    irn_h1_parser_free(p);
    return st;
}

static const char PIPE[] =
    "GET /a?x=1&y=2 HTTP/1.1\r\nHost: h\r\nX-Trail:  v  \r\n\r\n"
    "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello"
    "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0a\r\n0123456789\r\n0\r\n"
    "X-Trailer: t\r\n\r\n"
    "GET /d HTTP/1.1\r\nExpect: 100-continue\r\n\r\n"
    "PUT /e HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\nok"
    "GET /f HTTP/1.1\r\nConnection: close\r\n\r\n";

static void test_pipeline_whole(void **st) {
    ir_buf out;
    ir_buf_init(&out, 0);
    assert_int_equal(parse_all(PIPE, sizeof PIPE - 1, NULL, &out), 0);
    const char *want =
        "GET /a?x=1&y=2 [/a|x=1&y=2] ka=1 ec=0 ch=0 cl=-1 h=Host=h;X-Trail=v; body(0)=\n"
        "POST /b [/b|] ka=1 ec=0 ch=0 cl=5 h=Host=h;Content-Length=5;Content-Type=text/plain; "
        "body(5)=hello\n"
        "POST /c [/c|] ka=1 ec=0 ch=1 cl=-1 h=Transfer-Encoding=chunked; body(13)=abc0123456789\n"
        "GET /d [/d|] ka=1 ec=0 ch=0 cl=-1 h=Expect=100-continue; body(0)=\n"
        "PUT /e [/e|] ka=1 ec=1 ch=0 cl=2 h=Expect=100-Continue;Content-Length=2; body(2)=ok\n"
        "GET /f [/f|] ka=0 ec=0 ch=0 cl=-1 h=Connection=close; body(0)=\n";
    assert_string_equal(out.data, want);
    ir_buf_free(&out);
}

/* Property: any split of the input into chunks gives the same requests. */
static void test_pipeline_random_splits(void **st) {
    ir_buf want, got;
    ir_buf_init(&want, 0);
    ir_buf_init(&got, 0);
    size_t len = sizeof PIPE - 1;
    assert_int_equal(parse_all(PIPE, len, NULL, &want), 0);
    ir_rng rng;
    ir_rng_seed(&rng, 42);
    for (int iter = 0; iter < 500; iter++) {
        ir_buf_reset(&got);
        irn_h1_parser *p = irn_h1_parser_new(NULL);
        int hev = 0;
        size_t pos = 0;
        size_t maxchunk = 1 + ir_rng_below(&rng, iter % 2 ? 8 : 64);
        while (pos < len) {
            size_t n = 1 + ir_rng_below(&rng, maxchunk);
            if (n > len - pos) n = len - pos;
            /* a copy, so that ASan sees any read past the chunk */
            char *chunk = malloc(n);
            memcpy(chunk, PIPE + pos, n);
            assert_int_equal(drive(p, chunk, n, &got, &hev), 0);
            free(chunk);
            pos += n;
        }
        assert_int_equal(hev, 6);
        assert_string_equal(got.data, want.data);
        irn_h1_parser_free(p);
    }
    ir_buf_free(&want);
    ir_buf_free(&got);
}

static void test_headers_event_before_body(void **st) {
    irn_h1_parser *p = irn_h1_parser_new(NULL);
    const char *h = "POST /x HTTP/1.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n";
    size_t used;
    assert_int_equal(irn_h1_parser_feed(p, h, strlen(h), &used), IRN_H1_HEADERS);
    assert_int_equal(used, strlen(h));
    irn_request *r = irn_h1_parser_request(p);
    assert_true(r->expect_continue);
    assert_string_equal(irn_request_header(r, "EXPECT"), "100-continue");
    assert_null(irn_request_header(r, "nope"));
    assert_false(irn_h1_parser_idle(p));
    assert_int_equal(irn_h1_parser_feed(p, "", 0, &used), IRN_H1_MORE);
    assert_int_equal(irn_h1_parser_feed(p, "ab", 2, &used), IRN_H1_MORE);
    assert_int_equal(irn_h1_parser_feed(p, "cdGET", 5, &used), IRN_H1_REQUEST);
    assert_int_equal(used, 2);
    r = irn_h1_parser_take(p);
    assert_int_equal(r->body.len, 4);
    assert_memory_equal(r->body.data, "abcd", 4);
    irn_request_free(r);
    assert_true(irn_h1_parser_idle(p));
    irn_h1_parser_free(p);
}

static void test_untaken_request_is_freed(void **st) {
    irn_h1_parser *p = irn_h1_parser_new(NULL);
    const char *in = "GET / HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\n";
    ir_buf out;
    ir_buf_init(&out, 0);
    size_t used, pos = 0;
    int n = 0;
    for (int i = 0; i < 10 && n < 2; i++) {
        irn_h1_event ev = irn_h1_parser_feed(p, in + pos, strlen(in) - pos, &used);
        pos += used;
        if (ev == IRN_H1_REQUEST) n++;
    }
    assert_int_equal(n, 2);
    irn_h1_parser_free(p); /* second one never taken */
    ir_buf_free(&out);
}

static void test_http10(void **st) {
    ir_buf out;
    ir_buf_init(&out, 0);
    const char *in = "GET /a HTTP/1.0\r\n\r\n";
    assert_int_equal(parse_all(in, strlen(in), NULL, &out), 0);
    assert_non_null(strstr(out.data, "ka=0"));
    ir_buf_reset(&out);
    in = "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
    assert_int_equal(parse_all(in, strlen(in), NULL, &out), 0);
    assert_non_null(strstr(out.data, "ka=1"));
    ir_buf_free(&out);
}

static void test_limits(void **st) {
    ir_buf out, big;
    ir_buf_init(&out, 0);
    ir_buf_init(&big, 0);
    irn_h1_limits lim = {.max_header_bytes = 1024, .max_headers = 5, .max_body_bytes = 100};
    /* headers too large, in one chunk and byte by byte */
    ir_buf_append_str(&big, "GET / HTTP/1.1\r\nX-Big: ");
    for (int i = 0; i < 2000; i++) ir_buf_append_str(&big, "a");
    ir_buf_append_str(&big, "\r\n\r\n");
    assert_int_equal(parse_all(big.data, big.len, &lim, &out), 431);
    irn_h1_parser *p = irn_h1_parser_new(&lim);
    int stt = 0;
    for (size_t i = 0; i < big.len && !stt; i++) stt = drive(p, big.data + i, 1, &out, NULL);
    assert_int_equal(stt, 431);
    const char *msg = NULL;
    assert_int_equal(irn_h1_parser_error(p, &msg), 431);
    assert_non_null(msg);
    irn_h1_parser_free(p);
    /* a long request line */
    ir_buf_reset(&big);
    ir_buf_append_str(&big, "GET /");
    for (int i = 0; i < 2000; i++) ir_buf_append_str(&big, "a");
    ir_buf_append_str(&big, " HTTP/1.1\r\n\r\n");
    assert_int_equal(parse_all(big.data, big.len, &lim, &out), 431);
    /* too many headers */
    const char *many = "GET / HTTP/1.1\r\na: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\ne: 5\r\nf: 6\r\n\r\n";
    assert_int_equal(parse_all(many, strlen(many), &lim, &out), 431);
    const char *five = "GET / HTTP/1.1\r\na: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\ne: 5\r\n\r\n";
    assert_int_equal(parse_all(five, strlen(five), &lim, &out), 0);
    /* body too large: declared, and chunked */
    const char *cl = "POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n";
    assert_int_equal(parse_all(cl, strlen(cl), &lim, &out), 413);
    ir_buf_reset(&big);
    ir_buf_append_str(&big, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 11; i++) ir_buf_append_str(&big, "a\r\n0123456789\r\n");
    ir_buf_append_str(&big, "0\r\n\r\n");
    assert_int_equal(parse_all(big.data, big.len, &lim, &out), 413);
    /* bad syntax */
    const char *bad[] = {
        "GET / HTTP/1.1\r\nBad\x01Header: x\r\n\r\n",
        "NOPE\r\n\r\n",
        "GET / HTTP/9.9\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n",
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(bad); i++)
        if (parse_all(bad[i], strlen(bad[i]), &lim, &out) != 400) fail_msg("bad[%zu]", i);
    ir_buf_free(&out);
    ir_buf_free(&big);
}

static void test_error_sticks(void **st) {
    irn_h1_parser *p = irn_h1_parser_new(NULL);
    size_t used;
    assert_int_equal(irn_h1_parser_feed(p, "BAD BAD BAD\r\n", 13, &used), IRN_H1_ERROR);
    assert_int_equal(irn_h1_parser_feed(p, "GET / HTTP/1.1\r\n\r\n", 18, &used), IRN_H1_ERROR);
    assert_int_equal(used, 0);
    assert_int_equal(irn_h1_parser_error(p, NULL), 400);
    irn_h1_parser_free(p);
}

static void test_upgrade_ends_connection(void **st) {
    ir_buf out;
    ir_buf_init(&out, 0);
    const char *in = "GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\nGARBAGE";
    assert_int_equal(parse_all(in, strlen(in), NULL, &out), 400);
    assert_non_null(strstr(out.data, "ka=0"));
    ir_buf_free(&out);
}

static void test_error_body(void **st) {
    ir_buf b;
    ir_buf_init(&b, 0);
    irn_error_body(&b, 400, NULL, "bad \"x\"");
    assert_string_equal(
        b.data,
        "{\"error\":{\"message\":\"bad \\\"x\\\"\",\"type\":\"BadRequestError\",\"param\":null,"
        "\"code\":400}}");
    ir_buf_reset(&b);
    irn_error_body(&b, 413, NULL, NULL);
    assert_non_null(strstr(b.data, "\"type\":\"Payload Too Large\""));
    assert_non_null(strstr(b.data, "\"code\":413"));
    ir_buf_free(&b);
    assert_string_equal(irn_status_reason(431), "Request Header Fields Too Large");
    assert_string_equal(irn_strerror(IRN_ECLOSED_EARLY),
                        "connection closed before any response byte");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_whole),
        cmocka_unit_test(test_pipeline_random_splits),
        cmocka_unit_test(test_headers_event_before_body),
        cmocka_unit_test(test_untaken_request_is_freed),
        cmocka_unit_test(test_http10),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_error_sticks),
        cmocka_unit_test(test_upgrade_ends_connection),
        cmocka_unit_test(test_error_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
