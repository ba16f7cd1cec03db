/* fuzz_h2_server.c: an h2c server session (h2_server.c) on arbitrary bytes.
 *
 * The session runs socket-free: the client preface is prepended, the input
 * is fed in chunks (the first byte picks the size), output frames are
 * dropped. The handler answers by path so that every response path runs:
 * /s send, /w streamed writes, /c irn_resp_close, /h held until the end,
 * /e ended without a response, anything else 404. Small limits make the
 * 413/431 paths reachable; timers and GOAWAY run at the end. The socket holds
 * what the session writes until the input says it went out (the low bit of a
 * chunk's first byte), so the write queue's limits, the streams' backpressure
 * and their draining run too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/net_internal.h"

typedef struct fz {
    irn_resp *held[8];
    int nheld;
    bool scheduled;
    bool done;
    size_t out_bytes;
    size_t queued; /* written, not yet "on the wire" */
} fz;

static int io_write(void *ctx, const uv_buf_t *parts, int n) {
    fz *f = ctx;
    for (int i = 0; i < n; i++) f->out_bytes += parts[i].len, f->queued += parts[i].len;
    return 0;
}
static size_t io_queued(void *ctx) {
    return ((fz *)ctx)->queued;
}
static void io_schedule(void *ctx) {
    ((fz *)ctx)->scheduled = true;
}
static void io_timer(void *ctx, uint64_t ms) {}
static void io_done(void *ctx, bool graceful) {
    ((fz *)ctx)->done = true;
}

static void on_abort(irn_resp *resp, void *ud) {
    fz *f = ud;
    for (int i = 0; i < f->nheld; i++)
        if (f->held[i] == resp) f->held[i] = NULL;
    irn_resp_end(resp);
}

static int on_headers(void *ud, irn_request *req) {
    return strcmp(req->path, "/reject") == 0 ? 403 : 0;
}

static void on_request(void *ud, irn_request *req, irn_resp *resp) {
    fz *f = ud;
    irn_resp_on_abort(resp, on_abort, f);
    (void)irn_request_header(req, "host");
    switch (req->path[0] == '/' ? req->path[1] : 0) {
    case 's':
        irn_resp_send(resp, 200, "text/plain", req->body.data ? req->body.data : "", req->body.len,
                      NULL, 0);
        break;
    case 'w': {
        irn_header h = {"X-Mixed-Case", 12, "v", 1};
        irn_resp_start(resp, 200, &h, 1, -1);
        for (int i = 0; i < 4; i++) irn_resp_write(resp, "0123456789abcdef", 16);
        irn_resp_finish(resp, "end", 3);
        break;
    }
    case 'c':
        irn_resp_close(resp);
        break;
    case 'h':
        if (f->nheld < 8) {
            irn_resp_start(resp, 200, NULL, 0, 100);
            irn_resp_write(resp, "part", 4);
            f->held[f->nheld++] = resp;
            break;
        }
        irn_resp_end(resp);
        break;
    case 'e':
        irn_resp_end(resp); /* the server answers 500 */
        break;
    default:
        irn_resp_send_error(resp, 404, NULL, "Not Found");
        break;
    }
}

/* The socket's writes complete: what was queued is on the wire. */
static void written(irn__h2s *h, fz *f) {
    if (!f->queued || f->done) return;
    f->queued = 0;
    irn__h2s_on_written(h);
}

static void flush_if(irn__h2s *h, fz *f) {
    for (int i = 0; f->scheduled && i < 8; i++) {
        f->scheduled = false;
        irn__h2s_flush(h);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    ir_log_set_level(IR_LOG_OFF);
    size_t chunk = 1 + (size_t)data[0] * 37;
    data++;
    size--;
    fz f;
    memset(&f, 0, sizeof f);
    irn_server_cfg cfg;
    irn_server_cfg_init(&cfg);
    cfg.h2c = true;
    cfg.h2_max_streams = 16;
    cfg.h2_max_conn_buffer = 64 * 1024;
    cfg.max_write_queue = 4096;
    cfg.on_request = on_request;
    cfg.on_headers = on_headers;
    cfg.ud = &f;
    irn_h1_limits lim = {.max_header_bytes = 2048, .max_headers = 16, .max_body_bytes = 4096};
    irn__h2s_io io = {&f, io_write, io_queued, io_schedule, io_timer, io_done};
    irn__h2s *h = irn__h2s_new(&cfg, &lim, NULL, "fuzz:1", &io);
    if (!h) abort();
    if (irn__h2s_start(h, NULL, 0, NULL) != 0) abort();
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    irn__h2s_feed(h, preface, sizeof preface - 1);
    for (size_t off = 0; off < size && !f.done;) {
        size_t n = size - off < chunk ? size - off : chunk;
        bool drains = data[off] & 1;
        irn__h2s_feed(h, (const char *)data + off, n);
        flush_if(h, &f);
        if (drains) written(h, &f);
        flush_if(h, &f);
        off += n;
    }
    /* Answer what is held, then the timers and a graceful close. */
    written(h, &f);
    for (int i = 0; i < f.nheld; i++) {
        if (!f.held[i]) continue;
        irn_resp *r = f.held[i];
        f.held[i] = NULL;
        irn_resp_finish(r, "0123456789", 10); /* short of its length: reset */
    }
    flush_if(h, &f);
    written(h, &f);
    irn__h2s_on_timer(h);
    irn__h2s_shutdown(h);
    flush_if(h, &f);
    written(h, &f);
    flush_if(h, &f);
    irn__h2s_free(h); /* aborts whatever is left */
    return 0;
}
