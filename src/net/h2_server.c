/* h2_server.c: h2c server sessions on nghttp2, socket-free.
 *
 * server.c hands a connection over (prior-knowledge preface or a 101 upgrade)
 * and from then on feeds the bytes it reads into irn__h2s_feed; frames go out
 * through io->write. Each stream collects its request (pseudo-headers,
 * headers, body within the server's limits) and is dispatched to on_request
 * once the client ended it, outside nghttp2's callbacks. Responses are
 * buffered per stream and framed by nghttp2 as flow control allows.
 *
 * Re-entrancy: nghttp2_session_mem_recv/mem_send only run from the loop
 * (reads, write completions, timers); the irn_resp calls only submit frames
 * and schedule a flush, so no user callback ever fires inside an irn_resp
 * call. Our stream object lives exactly as long as nghttp2's stream: it is
 * freed in on_stream_close (or with the session). */
#include "net/net_internal.h"

#include <nghttp2/nghttp2.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define STREAM_WINDOW    (1 << 20) /* receive window we advertise per stream */
#define CONN_WINDOW      (4 << 20)
#define DEFAULT_STREAMS  256
#define DEFAULT_CONN_BUF (64u * 1024 * 1024)

/* Work per turn of the loop. One read is up to 64 KiB, which can hold a thousand
 * streams opened and reset, or seven thousand SETTINGS frames: handled in one
 * nghttp2_session_mem_recv, that is a millisecond of CPU while every other
 * connection of the loop waits. So input goes to nghttp2 in slices of whole frames
 * (at most SLICE_FRAMES frames, 30-40 us of CPU for streams opened and reset, or
 * SLICE_BYTES bytes), one slice per turn of the
 * loop (irn__h2s_feed_some; server.c holds the rest and stops reading). */
#define SLICE_FRAMES 32
#define SLICE_BYTES  (64 * 1024)
/* Frames that ask work of the server and carry nothing for a request: SETTINGS and
 * PING (not acks), PRIORITY, empty DATA that does not end its stream, and frame
 * types nghttp2 ignores. A token bucket per connection: CALM_BURST of them at once,
 * CALM_PER_SEC more each second; past that, GOAWAY(ENHANCE_YOUR_CALM) and close.
 * (nghttp2's own guards stay: at most 1,000 SETTINGS/PING acks queued, and
 * RST_STREAM at 1,000 at once then 33 a second; see irn__h2s_new.) */
#define CALM_BURST   1000
#define CALM_PER_SEC 100
#define MAGIC_LEN    24 /* the client preface, which nghttp2 reads first */

typedef struct irn__h2s_stream h2st;

struct irn__h2s_stream {
    irn__h2s *h;
    h2st *prev, *next;
    int32_t id;
    irn_request *req; /* until dispatched */
    irn_resp *resp;   /* dispatched and not yet ended by the handler */
    irn__hdrs hdrs;
    size_t pseudo_bytes;
    const char *method, *path; /* in req->arena */
    bool have_authority;
    bool too_big; /* a header limit was hit: 431 once the head is in */
    size_t held;  /* request body bytes counted in h->buffered */
    ir_buf out;   /* response bytes not yet framed, from out_off */
    size_t out_off;
    uint64_t deadline; /* body timeout (ms, ir_now); 0: none */
    uint64_t stalled;  /* ms since response bytes wait with none going out; 0: none wait */
    int err_status;    /* the stream was answered by the server itself */
    bool headers_done;
    bool ready; /* the request is complete: dispatch it */
    bool dispatched;
    bool submitted; /* the response HEADERS were submitted */
    bool ended;     /* no more response body */
    bool rst_after; /* answered early: the client may still be sending */
    bool draining;  /* our END_STREAM left: the client's DATA is read and dropped */
    size_t drained; /* bytes dropped so far */
};

/* RFC 9113 8.1: a response sent before the request ended may be followed by
 * RST_STREAM(NO_ERROR). Clients that are still uploading treat that reset as
 * a failure (curl 7.88 exits 92 without the status; Node's http2 client never
 * emits the response), so the server first keeps reading and dropping the rest
 * of the body, with the window open, until the client ends the stream. Only a
 * client that sends more than DRAIN_MAX_BYTES, or takes longer than
 * DRAIN_MAX_MS, gets the RST_STREAM(NO_ERROR). */
#define DRAIN_MAX_BYTES (16u << 20)
#define DRAIN_MAX_MS    2000

struct irn__h2s {
    nghttp2_session *s;
    irn_server_cfg cfg;
    irn_h1_limits lim;
    irn_server_stats *st;
    irn_server_stats own_st;
    char peer[64];
    irn__h2s_io io;
    h2st *streams;
    size_t nstreams;
    size_t buffered; /* request bodies held + response bytes not yet framed */
    size_t max_buffered;
    size_t out_bytes; /* response bytes not yet framed, all streams */
    size_t max_out;   /* cap of out_bytes + the socket queue */
    uint64_t body_ms, idle_ms, stall_ms;
    uint64_t idle_since;
    int busy;
    bool want_flush;
    bool dead; /* the connection is gone (or the session failed) */
    bool goaway;
    bool done_called;
    /* Where the input stands, frame by frame (see slice). */
    size_t magic_left; /* preface bytes still to come */
    size_t frame_left; /* payload bytes of the frame under way */
    uint8_t fh[9];     /* a frame header split between two reads */
    size_t fh_have;
    uint64_t calm_tokens, calm_ms; /* the control frame budget, and when it was topped up */
};

/* ---- streams ----------------------------------------------------------------- */

static size_t out_pending(const h2st *st) {
    return st->out.len - st->out_off;
}

/* n response bytes left the stream's buffer (framed or dropped). */
static void out_gone(irn__h2s *h, size_t n) {
    h->buffered = h->buffered > n ? h->buffered - n : 0;
    h->out_bytes = h->out_bytes > n ? h->out_bytes - n : 0;
}

static void stream_release_bytes(h2st *st) {
    irn__h2s *h = st->h;
    out_gone(h, out_pending(st));
    h->buffered = h->buffered > st->held ? h->buffered - st->held : 0;
    st->held = 0;
    ir_buf_free(&st->out);
    st->out_off = 0;
}

static h2st *stream_new(irn__h2s *h, int32_t id) {
    h2st *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    irn_request *req =
        irn__request_new(h->cfg.cache, h->lim.max_body_bytes, h->lim.max_arena_bytes);
    if (!req) {
        free(st);
        return NULL;
    }
    req->content_length = -1;
    req->query = "";
    req->peer = "";
    st->req = req;
    st->h = h;
    st->id = id;
    st->deadline = irn__now_ms() + h->idle_ms; /* the header block must complete */
    irn__hdrs_init(&st->hdrs, h->lim.max_header_bytes + 1, h->lim.max_headers);
    ir_buf_init(&st->out, 0);
    st->next = h->streams;
    if (h->streams) h->streams->prev = st;
    h->streams = st;
    h->nstreams++;
    return st;
}

static void stream_free(h2st *st) {
    irn__h2s *h = st->h;
    stream_release_bytes(st);
    if (st->prev)
        st->prev->next = st->next;
    else
        h->streams = st->next;
    if (st->next) st->next->prev = st->prev;
    h->nstreams--;
    if (!h->nstreams) h->idle_since = irn__now_ms();
    irn_request_free(st->req);
    irn__hdrs_free(&st->hdrs);
    free(st);
}

/* Takes the response away from the stream (the handler still owns it). */
static irn_resp *stream_detach(h2st *st) {
    irn_resp *resp = st->resp;
    st->resp = NULL;
    if (resp) {
        resp->h2s = NULL;
        resp->aborted = true;
    }
    return resp;
}

static void schedule(irn__h2s *h) {
    if (!h->dead && h->io.schedule) h->io.schedule(h->io.ctx);
}

/* ---- the response body source ----------------------------------------------------- */

static ssize_t read_out(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
                        uint32_t *flags, nghttp2_data_source *src, void *ud) {
    h2st *st = src->ptr;
    irn__h2s *h = st->h;
    size_t avail = out_pending(st);
    size_t n = avail < length ? avail : length;
    if (n) {
        memcpy(buf, st->out.data + st->out_off, n);
        st->out_off += n;
        out_gone(h, n);
        if (st->out_off == st->out.len) {
            if (st->out.cap > 256 * 1024)
                ir_buf_free(&st->out); /* a big burst went out: give the memory back */
            else
                ir_buf_reset(&st->out);
            st->out_off = 0;
        } else if (st->out_off >= st->out.len - st->out_off) {
            ir_buf_consume(&st->out, st->out_off); /* amortised: at least half moved out */
            st->out_off = 0;
        }
    }
    st->stalled = n < avail ? irn__now_ms() : 0; /* progress: the stall clock restarts */
    if (!st->ended && n == avail) {
        if (n == 0) return NGHTTP2_ERR_DEFERRED;
    } else if (st->ended && n == avail) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    }
    return (ssize_t)n;
}

static int submit_response(h2st *st, const nghttp2_nv *nv, size_t n) {
    nghttp2_data_provider prd;
    prd.source.ptr = st;
    prd.read_callback = read_out;
    int rv = nghttp2_submit_response(st->h->s, st->id, nv, n, &prd);
    if (rv == 0) st->submitted = true;
    return rv;
}

#define NV(n, v, vl)                                                                               \
    { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), NGHTTP2_NV_FLAG_NONE }

/* The server answers the stream itself (400, 408, 413, 431, ...). */
static void answer_error(h2st *st, int status, const char *msg) {
    irn__h2s *h = st->h;
    if (st->submitted || st->dispatched) return;
    st->err_status = status;
    st->ready = false;
    st->deadline = 0;
    h->buffered = h->buffered > st->held ? h->buffered - st->held : 0;
    st->held = 0;
    if (h->st) h->st->errors_sent++;
    ir_buf_reset(&st->out);
    st->out_off = 0;
    irn_error_answer e;
    if (irn__error_answer_make(&h->cfg, st->req, status, msg, &e, &st->out) != 0)
        ir_buf_reset(&st->out);
    h->buffered += st->out.len;
    h->out_bytes += st->out.len;
    if (st->out.len) st->stalled = irn__now_ms();
    char sb[8], lb[24];
    int sl = snprintf(sb, sizeof sb, "%d", status);
    int ll = snprintf(lb, sizeof lb, "%zu", st->out.len);
    nghttp2_nv nv[3 + IRN_ERROR_MAX_HEADERS] = {NV(":status", sb, (size_t)sl),
                                                NV("content-type", "application/json", 16),
                                                NV("content-length", lb, (size_t)ll)};
    size_t n = 3;
    char names[IRN_ERROR_MAX_HEADERS][64]; /* h2 wants them lower case */
    for (size_t i = 0; i < e.nheaders; i++) {
        const irn_header *hd = &e.headers[i];
        if (hd->name_len >= sizeof names[i]) continue;
        for (size_t k = 0; k < hd->name_len; k++) {
            char ch = hd->name[k];
            names[i][k] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
        }
        nv[n++] = (nghttp2_nv){(uint8_t *)names[i], (uint8_t *)hd->value, hd->name_len,
                               hd->value_len, NGHTTP2_NV_FLAG_NONE};
    }
    st->ended = true;
    st->rst_after = true;
    IR_DEBUG("net", "%s: h2 stream %d: %d %s", h->peer, st->id, status, msg ? msg : "");
    if (submit_response(st, nv, n) != 0)
        nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
    /* Only now: the headers may point into the request's arena (nghttp2 copied them). */
    irn_request_free(st->req);
    st->req = NULL;
}

/* ---- nghttp2 callbacks -------------------------------------------------------------- */

static h2st *stream_of(irn__h2s *h, int32_t id) {
    return nghttp2_session_get_stream_user_data(h->s, id);
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *frame, void *ud) {
    irn__h2s *h = ud;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    h2st *st = stream_new(h, frame->hd.stream_id);
    if (!st) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    nghttp2_session_set_stream_user_data(s, frame->hd.stream_id, st);
    return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *ud) {
    irn__h2s *h = ud;
    h2st *st = stream_of(h, frame->hd.stream_id);
    if (!st || st->err_status || st->too_big || st->headers_done || !st->req)
        return 0; /* trailers: ignored */
    const char *n = (const char *)name, *v = (const char *)value;
    if (namelen && n[0] == ':') {
        st->pseudo_bytes += namelen + valuelen + 2;
        if (st->pseudo_bytes > h->lim.max_header_bytes) {
            st->too_big = true;
            return 0;
        }
        ir_arena *a = st->req->arena;
        if (irn__streq_ci(n, namelen, ":method")) {
            st->method = ir_arena_strndup(a, v, valuelen);
        } else if (irn__streq_ci(n, namelen, ":path")) {
            st->path = ir_arena_strndup(a, v, valuelen);
        } else if (irn__streq_ci(n, namelen, ":authority")) {
            st->have_authority = true;
            n = "host";
            namelen = 4;
            goto regular;
        }
        return 0;
    }
    if (st->have_authority && irn__streq_ci(n, namelen, "host")) return 0;
regular:;
    int r = irn__hdrs_name(&st->hdrs, n, namelen);
    if (!r) r = irn__hdrs_name_done(&st->hdrs);
    if (!r) r = irn__hdrs_value(&st->hdrs, v, valuelen);
    if (!r) r = irn__hdrs_value_done(&st->hdrs);
    if (r) st->too_big = true;
    return 0;
}

/* The request head is in: build the irn_request, check the limits, ask
 * on_headers. */
static void headers_complete(irn__h2s *h, h2st *st, bool end_stream) {
    st->headers_done = true;
    st->deadline = 0;
    if (st->too_big) {
        answer_error(st, 431, "Request header fields too large");
        return;
    }
    irn_request *req = st->req;
    ir_arena *a = req->arena;
    if (!st->method || !st->path || !st->path[0]) {
        answer_error(st, 400, "Invalid HTTP/2 request: no :method or :path");
        return;
    }
    req->method = st->method;
    req->target = st->path;
    if (irn__split_target(req) || irn__hdrs_to_request(&st->hdrs, req)) {
        answer_error(st, 500, "Out of memory");
        return;
    }
    irn__hdrs_free(&st->hdrs);
    const char *cl = irn_request_header(req, "content-length");
    if (cl) {
        char *end = NULL;
        long long v = strtoll(cl, &end, 10);
        if (end != cl && v >= 0) req->content_length = v;
    }
    req->keep_alive = true;
    req->http_major = 2;
    req->http_minor = 0;
    req->peer = ir_arena_strdup(a, h->peer);
    if (!req->peer) req->peer = "";
    if (req->content_length > 0 && (uint64_t)req->content_length > h->lim.max_body_bytes) {
        char msg[96];
        answer_error(st, 413, irn__body_too_large(h->lim.max_body_bytes, msg, sizeof msg));
        return;
    }
    if (h->cfg.on_headers) {
        int status = h->cfg.on_headers(h->cfg.ud, req);
        if (status) {
            answer_error(st, status >= 400 && status <= 599 ? status : 400, NULL);
            return;
        }
    }
    if (end_stream)
        st->ready = true;
    else
        st->deadline = irn__now_ms() + h->body_ms;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *frame, void *ud) {
    irn__h2s *h = ud;
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    h2st *st = stream_of(h, frame->hd.stream_id);
    if (!st || st->err_status) return 0;
    bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    if (frame->hd.type == NGHTTP2_HEADERS && !st->headers_done) {
        headers_complete(h, st, end_stream);
    } else if (end_stream && st->headers_done && st->req) {
        st->ready = true;
        st->deadline = 0;
    }
    return 0;
}

/* The client keeps sending past the drain's bounds: ask it to stop. */
static void stop_draining(h2st *st) {
    st->draining = false;
    st->deadline = 0;
    nghttp2_submit_rst_stream(st->h->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_NO_ERROR);
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *ud) {
    irn__h2s *h = ud;
    h2st *st = stream_of(h, id);
    if (st && st->draining) {
        st->drained += len;
        if (st->drained > DRAIN_MAX_BYTES) stop_draining(st);
        return 0;
    }
    if (!st || st->err_status || !st->req || st->dispatched) return 0;
    if (h->buffered + len > h->max_buffered) {
        /* The connection holds too much: refuse this (unprocessed) request. */
        st->err_status = 503;
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
        return 0;
    }
    if (ir_buf_append(&st->req->body, data, len) != 0) {
        char msg[96];
        answer_error(st, 413, irn__body_too_large(h->lim.max_body_bytes, msg, sizeof msg));
        return 0;
    }
    st->held += len;
    h->buffered += len;
    return 0;
}

static int on_frame_send(nghttp2_session *s, const nghttp2_frame *frame, void *ud) {
    irn__h2s *h = ud;
    if ((frame->hd.type != NGHTTP2_DATA && frame->hd.type != NGHTTP2_HEADERS) ||
        !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    h2st *st = stream_of(h, frame->hd.stream_id);
    if (st && st->rst_after && nghttp2_session_get_stream_remote_close(s, st->id) == 0) {
        /* The whole response is out: drop the rest of the body (see DRAIN_MAX_BYTES). */
        st->rst_after = false;
        st->draining = true;
        st->deadline = irn__now_ms() + DRAIN_MAX_MS;
    }
    return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t error_code, void *ud) {
    irn__h2s *h = ud;
    h2st *st = stream_of(h, id);
    if (!st) return 0;
    nghttp2_session_set_stream_user_data(s, id, NULL);
    irn_resp *resp = stream_detach(st);
    stream_free(st);
    if (resp && resp->on_abort) resp->on_abort(resp, resp->abort_ud);
    return 0;
}

/* ---- pumping ------------------------------------------------------------------------- */

static void session_done(irn__h2s *h, bool graceful) {
    if (h->done_called) return;
    h->done_called = true;
    if (h->io.timer) h->io.timer(h->io.ctx, 0);
    if (h->io.done) h->io.done(h->io.ctx, graceful);
}

static size_t io_queued(const irn__h2s *h) {
    return h->io.queued ? h->io.queued(h->io.ctx) : 0;
}

static size_t out_queued(void *ctx) {
    return io_queued(ctx);
}

static int out_write(void *ctx, const ir_buf *b) {
    irn__h2s *h = ctx;
    uv_buf_t part = uv_buf_init(b->data, (unsigned)b->len);
    int rc = h->io.write ? h->io.write(h->io.ctx, &part, 1) : 0;
    if (rc != 0) h->dead = true;
    return rc;
}

/* Frames what nghttp2 has to send, while the socket queue is short. */
static void pump(irn__h2s *h) {
    if (h->busy) {
        h->want_flush = true;
        return;
    }
    if (h->dead || h->done_called) return;
    h->busy++;
    const irn__h2_out out = {.ctx = h,
                             .queued = out_queued,
                             .write = out_write,
                             .want_flush = &h->want_flush,
                             .dead = &h->dead};
    if (irn__h2_send(h->s, &out) != 0) h->dead = true;
    h->busy--;
    if (h->dead) {
        session_done(h, false);
        return;
    }
    bool idle_after_goaway = h->goaway && !h->nstreams;
    if ((!nghttp2_session_want_read(h->s) || idle_after_goaway) &&
        !nghttp2_session_want_write(h->s))
        session_done(h, true);
}

static void dispatch_ready(irn__h2s *h) {
    h->busy++;
    for (h2st *st = h->streams; st; st = st->next) {
        if (!st->ready || st->dispatched || st->err_status || !st->req || h->dead) continue;
        irn_resp *resp = irn__resp_new(st->req, &h->cfg);
        if (!resp) {
            answer_error(st, 500, "Out of memory");
            continue;
        }
        st->dispatched = true;
        st->ready = false;
        st->deadline = 0;
        irn_request *req = st->req;
        st->req = NULL;
        resp->ops = &irn__h2_resp_ops;
        resp->h2s = st;
        st->resp = resp;
        if (h->st) h->st->requests++;
        h->cfg.on_request(h->cfg.ud, req, resp);
    }
    h->busy--;
}

static void check_drains(irn__h2s *h) {
    if (h->dead) return;
    size_t q = io_queued(h);
    h->busy++;
    /* One queue for the connection: nobody drains while it is above the mark. */
    for (h2st *st = h->streams; st && !h->dead; st = st->next) {
        irn_resp *resp = st->resp;
        if (resp && resp->above_high && h->out_bytes + q <= resp->low) {
            resp->above_high = false;
            if (resp->on_drain) resp->on_drain(resp, resp->drain_ud);
        }
    }
    h->busy--;
}

static void rearm(irn__h2s *h) {
    if (h->dead || h->done_called || !h->io.timer) return;
    uint64_t next = 0;
    for (h2st *st = h->streams; st; st = st->next) {
        if (st->deadline && (!next || st->deadline < next)) next = st->deadline;
        uint64_t stall = st->stalled ? st->stalled + h->stall_ms : 0;
        if (stall && (!next || stall < next)) next = stall;
    }
    if (!h->nstreams && h->idle_ms) {
        uint64_t idle = h->idle_since + h->idle_ms;
        if (!next || idle < next) next = idle;
    }
    if (!next) {
        h->io.timer(h->io.ctx, 0);
        return;
    }
    uint64_t now = irn__now_ms();
    h->io.timer(h->io.ctx, next > now ? next - now : 1);
}

/* After anything happened: send, let producers resume, re-arm the timer. */
static void settle(irn__h2s *h) {
    pump(h);
    check_drains(h);
    if (h->want_flush) pump(h);
    rearm(h);
}

/* ---- session API ----------------------------------------------------------------------- */

irn__h2s *irn__h2s_new(const irn_server_cfg *cfg, const irn_h1_limits *lim, irn_server_stats *st,
                       const char *peer, const irn__h2s_io *io) {
    irn__h2s *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->cfg = *cfg;
    h->cfg.host = NULL;
    h->lim = *lim;
    if (!h->lim.max_header_bytes) h->lim.max_header_bytes = 64 * 1024;
    if (!h->lim.max_headers) h->lim.max_headers = 100;
    if (!h->lim.max_body_bytes) h->lim.max_body_bytes = 16u * 1024 * 1024;
    if (!h->lim.max_arena_bytes) h->lim.max_arena_bytes = 64u * 1024 * 1024;
    if (!h->cfg.write_high_water) h->cfg.write_high_water = 256 * 1024;
    if (!h->cfg.write_low_water) h->cfg.write_low_water = 64 * 1024;
    if (!h->cfg.max_write_queue) h->cfg.max_write_queue = 8u * 1024 * 1024;
    if (!h->cfg.h2_max_streams) h->cfg.h2_max_streams = DEFAULT_STREAMS;
    h->max_buffered = h->cfg.h2_max_conn_buffer ? h->cfg.h2_max_conn_buffer : DEFAULT_CONN_BUF;
    h->max_out = 2 * h->cfg.max_write_queue;
    h->stall_ms =
        irn__ns_to_ms(cfg->h2_stall_timeout_ns ? cfg->h2_stall_timeout_ns : 60ull * 1000000000);
    h->body_ms = irn__ns_to_ms(cfg->body_timeout_ns ? cfg->body_timeout_ns : 60ull * 1000000000);
    h->idle_ms =
        irn__ns_to_ms(cfg->header_timeout_ns ? cfg->header_timeout_ns : 30ull * 1000000000);
    h->st = st ? st : &h->own_st;
    snprintf(h->peer, sizeof h->peer, "%s", peer ? peer : "");
    h->io = *io;
    h->idle_since = irn__now_ms();
    h->magic_left = MAGIC_LEN;
    h->calm_tokens = CALM_BURST;
    h->calm_ms = h->idle_since;
    nghttp2_session_callbacks *cbs = NULL;
    nghttp2_option *opt = NULL;
    if (nghttp2_session_callbacks_new(&cbs) != 0 || nghttp2_option_new(&opt) != 0) {
        nghttp2_session_callbacks_del(cbs);
        free(h);
        return NULL;
    }
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    /* Our response header blocks may be this big (handler headers are capped too). */
    nghttp2_option_set_max_send_header_block_length(opt, 256 * 1024);
    nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
    /* No priority tree, so closed streams need not be kept: a connection that opened
     * and reset a thousand streams frees them at once, not when it closes. */
    nghttp2_option_set_no_closed_streams(opt, 1);
    int rv = nghttp2_session_server_new2(&h->s, cbs, h, opt);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_option_del(opt);
    if (rv != 0) {
        free(h);
        return NULL;
    }
    return h;
}

int irn__h2s_start(irn__h2s *h, const uint8_t *settings, size_t settings_len, irn_request *req) {
    nghttp2_settings_entry iv[3] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, h->cfg.h2_max_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
         (uint32_t)(h->lim.max_header_bytes + 32 * h->lim.max_headers + 1024)},
    };
    int rv = nghttp2_submit_settings(h->s, NGHTTP2_FLAG_NONE, iv, 3);
    if (rv == 0)
        rv = nghttp2_session_set_local_window_size(h->s, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW);
    if (rv == 0 && req) {
        h2st *st = stream_new(h, 1);
        if (!st) {
            irn_request_free(req);
            rv = -1;
        } else {
            irn_request_free(st->req);
            st->req = req;
            req->http_major = 2;
            req->http_minor = 0;
            req->keep_alive = true;
            st->headers_done = true;
            st->ready = true;
            st->deadline = 0;
            int head = strcmp(req->method, "HEAD") == 0;
            rv = nghttp2_session_upgrade2(h->s, settings, settings_len, head, st);
            if (rv != 0) stream_free(st);
        }
    } else if (req) {
        irn_request_free(req);
    }
    if (rv != 0) {
        h->dead = true;
        session_done(h, false);
        return IRN_EINVAL;
    }
    dispatch_ready(h);
    settle(h);
    return 0;
}

/* Whether the frame whose header is hd is one the control budget counts. */
static bool costs_calm(const uint8_t *hd) {
    size_t len = (size_t)hd[0] << 16 | (size_t)hd[1] << 8 | hd[2];
    uint8_t type = hd[3], flags = hd[4];
    switch (type) {
    case NGHTTP2_SETTINGS:
    case NGHTTP2_PING:
        return !(flags & NGHTTP2_FLAG_ACK);
    case NGHTTP2_PRIORITY:
        return true;
    case NGHTTP2_DATA:
        return len == 0 && !(flags & NGHTTP2_FLAG_END_STREAM);
    default:
        return type > NGHTTP2_CONTINUATION; /* extension frames: ignored, but parsed */
    }
}

/* Takes one frame from the control budget; false when it is spent. */
static bool calm_take(irn__h2s *h) {
    uint64_t now = irn__now_ms();
    uint64_t earned = (now - h->calm_ms) * CALM_PER_SEC / 1000;
    if (earned) {
        h->calm_tokens = IR_MIN(CALM_BURST, h->calm_tokens + earned);
        h->calm_ms = now;
    }
    if (!h->calm_tokens) return false;
    h->calm_tokens--;
    return true;
}

/* How many of the len bytes at p the next slice hands nghttp2: the preface, then
 * whole frames until SLICE_FRAMES frames or SLICE_BYTES bytes (a frame that the
 * input ends in goes in part; nghttp2 keeps its state), counted in *nframes. It
 * stops before a frame the control budget refuses, and sets *calm. */
static size_t slice(irn__h2s *h, const uint8_t *p, size_t len, size_t *nframes, bool *calm) {
    size_t pos = IR_MIN(len, h->magic_left), frames = 0;
    h->magic_left -= pos;
    while (pos < len) {
        if (h->frame_left) {
            size_t n = IR_MIN(h->frame_left, len - pos);
            pos += n;
            h->frame_left -= n;
            continue;
        }
        if (!h->fh_have && (frames >= SLICE_FRAMES || pos >= SLICE_BYTES)) break;
        size_t start = pos, n = IR_MIN(sizeof h->fh - h->fh_have, len - pos);
        memcpy(h->fh + h->fh_have, p + pos, n);
        h->fh_have += n;
        pos += n;
        if (h->fh_have < sizeof h->fh) break; /* the rest of the header comes later */
        h->fh_have = 0;
        frames++;
        if (costs_calm(h->fh) && !calm_take(h)) {
            *calm = true;
            *nframes = frames;
            return start;
        }
        h->frame_left = (size_t)h->fh[0] << 16 | (size_t)h->fh[1] << 8 | h->fh[2];
    }
    *nframes = frames;
    return pos;
}

/* The client sends more control frames than any client needs. */
static void enhance_your_calm(irn__h2s *h) {
    IR_DEBUG("net", "%s: h2: too many control frames; GOAWAY(ENHANCE_YOUR_CALM)", h->peer);
    h->goaway = true;
    nghttp2_session_terminate_session(h->s, NGHTTP2_ENHANCE_YOUR_CALM);
}

int irn__h2s_feed_some(irn__h2s *h, const char *data, size_t len, size_t *used) {
    *used = 0;
    if (h->dead || h->done_called) return IRN_ECLOSED;
    bool calm = false;
    size_t frames = 0;
    size_t n = slice(h, (const uint8_t *)data, len, &frames, &calm);
    h->busy++;
    ssize_t r = n ? nghttp2_session_mem_recv(h->s, (const uint8_t *)data, n) : 0;
    h->busy--;
    if (r < 0) {
        IR_DEBUG("net", "%s: h2: %s", h->peer, nghttp2_strerror((int)r));
        pump(h); /* a GOAWAY nghttp2 may have queued */
        session_done(h, true);
        return IRN_EINVAL;
    }
    *used = calm ? len : n; /* past the budget, the rest is dropped */
    if (calm) enhance_your_calm(h);
    dispatch_ready(h);
    settle(h);
    return calm ? IRN_ECLOSED : (int)frames;
}

int irn__h2s_feed(irn__h2s *h, const char *data, size_t len) {
    size_t used = 0;
    do {
        int rc = irn__h2s_feed_some(h, data, len, &used);
        if (rc < 0) return rc;
        data += used;
        len -= used;
    } while (len);
    return 0;
}

void irn__h2s_flush(irn__h2s *h) {
    settle(h);
}

void irn__h2s_on_written(irn__h2s *h) {
    settle(h);
}

void irn__h2s_on_timer(irn__h2s *h) {
    if (h->dead || h->done_called) return;
    uint64_t now = irn__now_ms();
    for (h2st *st = h->streams; st; st = st->next) {
        if (st->stalled && out_pending(st) && now >= st->stalled + h->stall_ms) {
            /* Its bytes cannot go out: the client keeps the window shut or does not
             * read. The reset frees them; on_abort tells the handler. */
            IR_DEBUG("net", "%s: h2 stream %d: %zu response bytes stalled", h->peer, st->id,
                     out_pending(st));
            st->stalled = 0;
            nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
            continue;
        }
        if (!st->deadline || st->deadline > now || st->dispatched) continue;
        if (st->draining) {
            stop_draining(st);
            continue;
        }
        if (!st->headers_done) {
            /* A header block left open blocks the whole connection. */
            IR_DEBUG("net", "%s: h2: timed out in a header block", h->peer);
            h->dead = true;
            session_done(h, false);
            return;
        }
        answer_error(st, 408, "Timed out waiting for the request body");
    }
    if (!h->nstreams && h->idle_ms && now >= h->idle_since + h->idle_ms) {
        irn__h2s_shutdown(h); /* an idle connection: GOAWAY, then close */
        return;
    }
    settle(h);
}

void irn__h2s_shutdown(irn__h2s *h) {
    if (h->goaway || h->dead || h->done_called) return;
    h->goaway = true;
    nghttp2_submit_goaway(h->s, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(h->s),
                          NGHTTP2_NO_ERROR, NULL, 0);
    if (!h->busy)
        settle(h);
    else
        h->want_flush = true;
}

bool irn__h2s_idle(const irn__h2s *h) {
    return h->nstreams == 0;
}

void irn__h2s_mark_aborted(irn__h2s *h) {
    for (h2st *st = h->streams; st; st = st->next)
        if (st->resp) st->resp->aborted = true; /* on_abort still comes, from irn__h2s_free */
}

void irn__h2s_free(irn__h2s *h) {
    if (!h) return;
    h->dead = true;
    /* One at a time: an on_abort may end other responses of this session. */
    for (;;) {
        h2st *st = h->streams;
        while (st && !st->resp) st = st->next;
        if (!st) break;
        irn_resp *resp = stream_detach(st);
        if (resp->on_abort) resp->on_abort(resp, resp->abort_ud);
    }
    nghttp2_session_del(h->s);
    while (h->streams) stream_free(h->streams);
    free(h);
}

/* ---- responses -------------------------------------------------------------------------- */

static int h2_resp_start(irn_resp *resp, int status, const irn_header *headers, size_t nheaders,
                         int64_t content_length) {
    h2st *st = resp->h2s;
    if (status < 200) return IRN_EINVAL; /* no interim responses through this API */
    if (!st || st->h->dead || resp->aborted) {
        resp->state = IRN__RESP_STARTED;
        return IRN_ECLOSED;
    }
    irn__h2s *h = st->h;
    if (nheaders > h->lim.max_headers + 64) return IRN_EINVAL;
    nghttp2_nv *nv = calloc(nheaders + 3, sizeof *nv);
    ir_buf names; /* lower-cased names, NUL-separated; offsets until filled in */
    ir_buf_init(&names, h->lim.max_header_bytes + 4096);
    if (!nv) return IRN_ENOMEM;
    char sb[8], lb[24];
    int sl = snprintf(sb, sizeof sb, "%d", status);
    size_t n = 0;
    nv[n++] = (nghttp2_nv)NV(":status", sb, (size_t)sl);
    size_t *offs = calloc(nheaders + 1, sizeof *offs);
    int rc = offs ? 0 : IRN_ENOMEM;
    for (size_t i = 0; rc == 0 && i < nheaders; i++) {
        const irn_header *hd = &headers[i];
        size_t nl = hd->name_len ? hd->name_len : strlen(hd->name);
        size_t vl = hd->value_len ? hd->value_len : strlen(hd->value);
        if (!nl || irn__bad_text(hd->name, nl, true) || irn__bad_text(hd->value, vl, true)) {
            rc = IRN_EINVAL;
            break;
        }
        if (irn__h1_only_header(hd->name, nl)) continue;
        offs[n] = names.len;
        for (size_t k = 0; rc == 0 && k < nl; k++) {
            char ch = hd->name[k];
            if (ch >= 'A' && ch <= 'Z') ch = (char)(ch - 'A' + 'a');
            rc = ir_buf_append(&names, &ch, 1);
        }
        if (rc == 0) rc = ir_buf_append(&names, "", 1);
        if (rc != 0) {
            rc = IRN_ENOMEM;
            break;
        }
        nv[n].namelen = nl;
        nv[n].value = (uint8_t *)hd->value;
        nv[n].valuelen = vl;
        n++;
    }
    for (size_t i = 1; rc == 0 && i < n; i++) nv[i].name = (uint8_t *)names.data + offs[i];
    bool is_head = strcmp(resp->req->method, "HEAD") == 0;
    bool bodyless_status = status == 204 || status == 304;
    if (rc == 0 && !bodyless_status && content_length >= 0) {
        int ll = snprintf(lb, sizeof lb, "%lld", (long long)content_length);
        nv[n++] = (nghttp2_nv)NV("content-length", lb, (size_t)ll);
    }
    if (rc == 0 && submit_response(st, nv, n) != 0) rc = IRN_ECLOSED;
    free(offs);
    free(nv);
    ir_buf_free(&names);
    if (rc != 0) return rc;
    resp->no_body = is_head || bodyless_status;
    resp->content_length = bodyless_status ? -1 : content_length;
    resp->state = IRN__RESP_STARTED;
    schedule(h);
    return 0;
}

static size_t h2_resp_queued(const irn_resp *resp) {
    h2st *st = resp->h2s;
    if (!st || st->h->dead) return 0;
    return st->h->out_bytes + io_queued(st->h);
}

static int64_t h2_resp_write(irn_resp *resp, const void *data, size_t len, bool last) {
    (void)last; /* END_STREAM goes with the end, after the buffered bytes */
    if (!resp || resp->state != IRN__RESP_STARTED) return IRN_EINVAL;
    h2st *st = resp->h2s;
    if (!st || resp->aborted || st->h->dead) return IRN_ECLOSED;
    irn__h2s *h = st->h;
    if (resp->no_body || len == 0) return (int64_t)h2_resp_queued(resp);
    if (resp->content_length >= 0 && resp->written + len > (uint64_t)resp->content_length)
        return IRN_EINVAL;
    if (out_pending(st) >= resp->maxq || h->out_bytes + io_queued(h) >= h->max_out ||
        h->buffered >= h->max_buffered)
        return IRN_ENOBUFS;
    if (ir_buf_append(&st->out, data, len) != 0) return IRN_ENOMEM;
    if (!st->stalled) st->stalled = irn__now_ms(); /* until read_out frames some */
    h->buffered += len;
    h->out_bytes += len;
    resp->written += len;
    nghttp2_session_resume_data(h->s, st->id);
    schedule(h);
    size_t q = h2_resp_queued(resp);
    if (q >= resp->high) resp->above_high = true;
    return (int64_t)q;
}

static int h2_resp_end(irn_resp *resp) {
    h2st *st = resp->h2s;
    int rc = 0;
    if (st && !st->h->dead && !resp->aborted && resp->state == IRN__RESP_NEW) {
        rc = irn__resp_default_500(resp);
    }
    if (st) {
        irn__h2s *h = st->h;
        st->resp = NULL;
        st->ended = true;
        h->buffered = h->buffered > st->held ? h->buffered - st->held : 0;
        st->held = 0;
        bool short_body = !resp->no_body && resp->content_length >= 0 &&
                          resp->written < (uint64_t)resp->content_length;
        if (!h->dead) {
            if (!st->submitted || short_body) {
                if (short_body) IR_WARN("net", "h2 response shorter than its content-length");
                nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
            } else {
                nghttp2_session_resume_data(h->s, st->id);
            }
            schedule(h);
        }
    }
    irn__resp_release(resp);
    return rc;
}

static int h2_resp_close(irn_resp *resp) {
    h2st *st = resp->h2s;
    if (st) {
        irn__h2s *h = st->h;
        st->resp = NULL; /* no on_abort: the handler chose this */
        st->ended = true;
        if (!h->dead) {
            nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
            schedule(h);
        }
    }
    irn__resp_release(resp);
    return 0;
}

static int h2_resp_send_head(irn_resp *resp) {
    return resp->state == IRN__RESP_STARTED ? 0 : IRN_EINVAL; /* submitted at start */
}

const irn__resp_ops irn__h2_resp_ops = {
    .start = h2_resp_start,
    .write = h2_resp_write,
    .send_head = h2_resp_send_head,
    .end = h2_resp_end,
    .close = h2_resp_close,
    .queued = h2_resp_queued,
};
