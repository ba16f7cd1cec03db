/* fuzz_http_request.c: the HTTP/1.1 request parser on arbitrary bytes.
 *
 * The first input byte picks a chunk size; the rest is parsed twice, in one
 * piece and in chunks, and both runs must produce the same requests and the
 * same final status. Small limits make the limit paths reachable. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/ir_net.h"

static int run(const char *data, size_t len, size_t chunk, ir_buf *out) {
    irn_h1_limits lim = {.max_header_bytes = 2048, .max_headers = 16, .max_body_bytes = 4096};
    irn_h1_parser *p = irn_h1_parser_new(&lim);
    if (!p) abort();
    int status = 0;
    size_t off = 0;
    while (off < len && !status) {
        size_t n = len - off < chunk ? len - off : chunk;
        size_t pos = 0;
        int guard = 0;
        bool kick = false;
        while ((pos < n || kick) && !status) {
            if (++guard > 100000) abort(); /* no progress: a hang */
            size_t used = 0;
            irn_h1_event ev = irn_h1_parser_feed(p, data + off + pos, n - pos, &used);
            if (used > n - pos) abort();
            pos += used;
            kick = false;
            if (ev == IRN_H1_MORE) {
                if (pos != n) abort();
                break;
            } else if (ev == IRN_H1_HEADERS) {
                if (!irn_h1_parser_request(p)) abort();
                kick = true;
            } else if (ev == IRN_H1_REQUEST) {
                irn_request *r = irn_h1_parser_take(p);
                if (!r) abort();
                ir_buf_appendf(out, "%s %s %s %s %zu %d|", r->method, r->path, r->query, r->target,
                               r->nheaders, r->keep_alive);
                for (size_t i = 0; i < r->nheaders; i++) {
                    ir_buf_append(out, r->headers[i].name, r->headers[i].name_len);
                    ir_buf_append(out, r->headers[i].value, r->headers[i].value_len);
                    (void)irn_request_header(r, r->headers[i].name);
                }
                ir_buf_append(out, r->body.data ? r->body.data : "", r->body.len);
                irn_request_free(r);
            } else {
                const char *msg = NULL;
                status = irn_h1_parser_error(p, &msg);
                if (!msg || (status != 400 && status != 413 && status != 431 && status != 500))
                    abort();
            }
        }
        off += n;
    }
    irn_h1_parser_free(p);
    return status;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t chunk = 1 + data[0] % 17;
    const char *in = (const char *)data + 1;
    size_t len = size - 1;
    ir_buf a, b;
    ir_buf_init(&a, 0);
    ir_buf_init(&b, 0);
    int sa = run(in, len, len ? len : 1, &a);
    int sb = run(in, len, chunk, &b);
    /* Chunking changes nothing: same requests, same final status. */
    if (sa != sb || a.len != b.len || (a.len && memcmp(a.data, b.data, a.len) != 0)) abort();
    ir_buf_free(&a);
    ir_buf_free(&b);
    return 0;
}
