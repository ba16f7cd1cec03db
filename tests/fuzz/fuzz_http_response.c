/* fuzz_http_response.c: the upstream client's HTTP/1.1 response parser
 * (src/net/h1_response.c) on arbitrary bytes, as an engine could send them.
 *
 * The first input byte picks a chunk size (bits 0-3), whether the request was
 * HEAD (bit 4) and whether every body span pauses the parser (bit 5), as a
 * paused proxy does. The rest is parsed twice, in one piece and in chunks; both
 * runs must see the same heads, bodies and outcome, and every callback keeps to
 * the contract: one head per response, with or before its first body byte, and
 * a final status of 200 or more. Responses follow one another while the
 * connection may be kept alive; the end of the input is the peer's close. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/net_internal.h"

typedef struct run {
    ir_buf *out;
    bool pause_each;
    bool head_given;
    int final_status;
} run;

static bool on_final(void *ud, int status) {
    run *r = ud;
    if (status < 200 || status > 999 || r->final_status) abort();
    r->final_status = status;
    return true;
}

static bool on_head(void *ud, int status, const irn_header *h, size_t n) {
    run *r = ud;
    if (r->head_given || status != r->final_status || n > 8) abort();
    r->head_given = true;
    ir_buf_appendf(r->out, "H%d %zu|", status, n);
    for (size_t i = 0; i < n; i++) {
        ir_buf_append(r->out, h[i].name, h[i].name_len);
        ir_buf_append_lit(r->out, ":");
        ir_buf_append(r->out, h[i].value, h[i].value_len);
        ir_buf_append_lit(r->out, "|");
    }
    return true;
}

static int on_body(void *ud, const char *at, size_t len) {
    run *r = ud;
    if (!r->head_given) abort(); /* a body byte before its head */
    ir_buf_append(r->out, at, len);
    return r->pause_each && len ? 1 : 0;
}

static const irn__h1r_cbs cbs = {.on_final = on_final, .on_head = on_head, .on_body = on_body};

/* Parses data in pieces of chunk bytes; returns the outcome: 'D' done (every
 * response complete), 'E' error, 'M' more was expected, 'C' done by the close. */
static char parse(const char *data, size_t len, size_t chunk, uint8_t flags, ir_buf *out) {
    run r = {.out = out, .pause_each = flags & 0x20};
    irn__h1r p;
    if (irn__h1r_init(&p, 1024, 8, &cbs, &r) != 0) abort();
    irn__h1r_start(&p, flags & 0x10);
    char outcome = 'M';
    size_t off = 0, guard = 0;
    while (off < len && outcome == 'M') {
        size_t n = len - off < chunk ? len - off : chunk, used = 0;
        if (++guard > 4 * len + 16) abort(); /* no progress: a hang */
        irn__h1r_ev ev = irn__h1r_feed(&p, data + off, n, &used);
        if (used > n || (ev == IRN__H1R_MORE && used != n)) abort();
        off += used;
        if (ev == IRN__H1R_ERROR) {
            if (!p.why) abort();
            outcome = 'E';
        } else if (ev == IRN__H1R_DONE) {
            if (!r.head_given) abort();
            ir_buf_append_lit(out, "|D|");
            if (!irn__h1r_keep_alive(&p) || off == len) {
                outcome = 'D';
            } else { /* the next response on a kept-alive connection */
                r.head_given = false;
                r.final_status = 0;
                irn__h1r_start(&p, flags & 0x10);
            }
        }
    }
    if (outcome == 'M' && irn__h1r_eof(&p)) outcome = 'C';
    ir_buf_appendf(out, "%c", outcome);
    irn__h1r_free(&p);
    return outcome;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t flags = data[0];
    size_t chunk = 1 + (flags & 0x0f);
    const char *in = (const char *)data + 1;
    size_t len = size - 1;
    ir_buf a, b;
    ir_buf_init(&a, 0);
    ir_buf_init(&b, 0);
    char oa = parse(in, len, len ? len : 1, flags, &a);
    char ob = parse(in, len, chunk, flags, &b);
    /* Chunking changes nothing: same heads, bodies and outcome. */
    if (oa != ob || a.len != b.len || (a.len && memcmp(a.data, b.data, a.len) != 0)) abort();
    ir_buf_free(&a);
    ir_buf_free(&b);
    return 0;
}
