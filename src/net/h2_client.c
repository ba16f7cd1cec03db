/* h2_client.c: the pool's h2c (prior knowledge) connections on nghttp2.
 *
 * Requests to one host:port share a connection (another one is opened when
 * its streams run out or it received GOAWAY). Every request belongs to one
 * connection from irn_client_request until on_done, and on_done fires from
 * the loop only: from a read (stream closed), from the connection's flush
 * timer (cancelled before it was sent, resumed after the end), or from the
 * connection's close callback (connection failures), never from an API call.
 *
 * Flow control: automatic WINDOW_UPDATEs are off. Received bytes are given
 * back to the connection window at once and to the stream window when they
 * reach on_body, so a paused request holds at most its stream window
 * (cfg.h2_stream_window) and the server stops sending it.
 *
 * A request that got nothing is sent again, once, on another connection when the
 * server refused it unprocessed (REFUSED_STREAM, or above a GOAWAY's last stream id:
 * RFC 9113 8.7), or when a connection that had served before closed under it (it
 * was closing idle, as the HTTP/1.1 pool's stale connections). A connection whose
 * session or socket is over while finished responses still hold bytes for paused
 * clients winds down instead of closing: it fails its open streams, stops reading,
 * and closes once the held bytes are delivered. */
#include "net/net_internal.h"

#include <nghttp2/nghttp2.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CONN_WINDOW    (16 << 20)
#define DEFAULT_WINDOW (256 * 1024)
#define STREAMS_GUESS  100 /* streams per connection before the server's SETTINGS */
#define MAX_REFUSALS   4   /* a request the server refuses unprocessed is sent again up to this */

typedef struct h2conn h2conn;
typedef struct irn__h2c_stream h2cs;

struct irn__h2c_pool {
    uv_loop_t *loop;
    irn_pool_cfg cfg;
    irn_pool_stats *st;
    uint64_t idle_ms;
    uint32_t window;
    h2conn *conns;
    bool closing;
    irn_close_cb on_empty;
    void *ud;
    char readbuf[IRN__READ_BUF_SIZE];
};

struct h2conn {
    irn__h2c_pool *hp;
    h2conn *prev, *next;
    uv_tcp_t tcp;
    uv_timer_t timer;  /* connect timeout, stream deadlines, idle */
    uv_timer_t ftimer; /* deferred work: submit, deliver, flush */
    uv_connect_t creq;
    uv_getaddrinfo_t gai;
    nghttp2_session *s;
    h2cs *streams;
    size_t nstreams;
    size_t queued; /* socket bytes in flight */
    uint64_t connect_deadline;
    uint64_t idle_since;
    int nclosed;
    int busy;
    int fail_err; /* the error for requests that got nothing */
    bool closing;
    bool gai_pending;
    bool reading;
    bool ready; /* connected, session up */
    bool goaway;
    bool winding; /* over, but finished streams hold bytes for paused clients */
    bool want_flush;
    uint64_t served; /* streams that ended well here: a later one's connection is reused */
    char host[256];
    uint16_t port;
};

struct irn__h2c_stream {
    irn_client *cl;
    h2conn *c;
    h2cs *prev, *next;
    int32_t id; /* 0 until submitted */
    nghttp2_nv *nv;
    size_t nnv;
    char *nvmem;
    size_t body_off;
    irn__hdrs rh;
    irn_header *harr;
    int status;
    size_t c_max_head; /* cap of the request's header block */
    ir_buf pend;       /* body bytes held while paused */
    size_t pend_off;
    uint64_t head_deadline, idle_deadline;
    bool head_seen;      /* the final head was received */
    bool head_delivered; /* ... and given to on_head (with the first body byte or the end) */
    bool remote_done;    /* END_STREAM received */
    bool closed;         /* nghttp2 closed the stream; waiting to deliver */
    bool reused;         /* linked to a connection that had served a stream before */
    uint8_t refusals;    /* times the server refused it unprocessed */
    bool parse_err;
    int close_err;
};

static void conn_close(h2conn *c, int err);
static void conn_schedule(h2conn *c);
static void conn_rearm(h2conn *c);
static h2conn *conn_pick(irn__h2c_pool *hp, const irn_client *cl);

/* ---- streams ------------------------------------------------------------------- */

static void stream_unlink(h2cs *st) {
    h2conn *c = st->c;
    if (!c) return;
    if (st->prev)
        st->prev->next = st->next;
    else
        c->streams = st->next;
    if (st->next) st->next->prev = st->prev;
    st->prev = st->next = NULL;
    st->c = NULL;
    if (--c->nstreams == 0) c->idle_since = irn__now_ms();
    if (c->s && st->id && !st->closed) nghttp2_session_set_stream_user_data(c->s, st->id, NULL);
}

static void stream_link(h2conn *c, h2cs *st) {
    st->c = c;
    st->reused = c->served > 0;
    /* The wait for the head starts now: a stream held back for the server's limit on
     * streams (submit_waiting) times out like one the server is slow to answer. */
    if (st->cl->head_ms) st->head_deadline = irn__now_ms() + st->cl->head_ms;
    st->prev = NULL;
    st->next = c->streams;
    if (c->streams) c->streams->prev = st;
    c->streams = st;
    c->nstreams++;
}

static void stream_free(h2cs *st) {
    irn__hdrs_free(&st->rh);
    ir_buf_free(&st->pend);
    free(st->harr);
    free(st->nv);
    free(st->nvmem);
    free(st);
}

/* Delivers on_done and frees the request. */
static void stream_finish(h2cs *st, int err) {
    irn_client *cl = st->cl;
    if (err == 0 && st->c) st->c->served++;
    stream_unlink(st);
    stream_free(st);
    cl->h2 = NULL;
    if (cl->err) err = cl->err;
    if (cl->cbs.on_done) cl->cbs.on_done(cl->ud, err);
    irn__client_release(cl);
}

/* The outcome of a stream that nghttp2 closed. */
static int stream_outcome(const h2cs *st, uint32_t error_code) {
    const irn_client *cl = st->cl;
    if (cl->err) return cl->err;
    if (st->parse_err) return IRN_EPARSE;
    if (st->remote_done && st->head_delivered) return 0;
    /* A stream reset for a protocol error (ours, e.g. DATA past content-length,
     * or the server's) is a malformed response, not a retryable close. */
    if (error_code == NGHTTP2_PROTOCOL_ERROR && !st->head_delivered) return IRN_EPARSE;
    return cl->got_bytes ? IRN_ECLOSED_MID : IRN_ECLOSED_EARLY;
}

static size_t pend_len(const h2cs *st) {
    return st->pend.len - st->pend_off;
}

/* Sends st again, from the start, while it got nothing, on a connection with room
 * for it (conn_pick: perhaps the same one, now that the server's limit on streams is
 * known): a stream the server refused unprocessed up to MAX_REFUSALS times, one whose
 * connection closed under it once. False when it may not be. */
static bool stream_requeue(h2cs *st, bool refused) {
    irn_client *cl = st->cl;
    h2conn *old = st->c;
    irn__h2c_pool *hp = old ? old->hp : NULL;
    if (!hp || hp->closing || cl->canceled || cl->got_bytes || cl->err) return false;
    if (refused ? st->refusals >= MAX_REFUSALS : cl->retried) return false;
    if (refused)
        st->refusals++;
    else
        cl->retried = true;
    st->id = 0; /* stream_unlink leaves the old session alone */
    st->closed = st->head_seen = st->head_delivered = st->remote_done = st->parse_err = false;
    st->close_err = st->status = 0;
    st->body_off = 0;
    st->head_deadline = st->idle_deadline = 0;
    irn__hdrs_reset(&st->rh);
    hp->st->retries++;
    stream_unlink(st);
    h2conn *c = conn_pick(hp, cl);
    if (!c) { /* out of memory: a stream that fails from the loop */
        cl->err = IRN_ENOMEM;
        return false;
    }
    stream_link(c, st);
    conn_rearm(c);
    if (c->ready) conn_schedule(c);
    return true;
}

/* Hands held bytes to on_body (and their window back), while not paused. */
static void stream_deliver(h2cs *st) {
    irn_client *cl = st->cl;
    h2conn *c = st->c;
    while (pend_len(st) && !cl->paused && !cl->canceled) {
        size_t n = pend_len(st);
        const char *p = st->pend.data + st->pend_off;
        st->pend_off += n;
        if (cl->cbs.on_body) cl->cbs.on_body(cl->ud, p, n);
        if (c && c->s && !st->closed && !c->closing)
            nghttp2_session_consume_stream(c->s, st->id, n);
    }
    if (!pend_len(st)) {
        ir_buf_free(&st->pend);
        st->pend_off = 0;
    }
}

/* ---- nghttp2 callbacks -------------------------------------------------------------- */

static h2cs *stream_of(h2conn *c, int32_t id) {
    return nghttp2_session_get_stream_user_data(c->s, id);
}

/* The final head reaches on_head with the first body byte or at the end of the
 * response: a stream reset before that (DATA past its content-length) fails
 * without a head, while nothing of it can have reached anyone. */
static void deliver_head(h2cs *st) {
    if (!st->head_seen || st->head_delivered) return;
    st->head_delivered = true;
    irn_client *cl = st->cl;
    if (!cl->canceled && cl->cbs.on_head) {
        irn__hdrs_fill(&st->rh, st->harr);
        cl->cbs.on_head(cl->ud, st->status, st->harr, st->rh.n);
    }
    irn__hdrs_free(&st->rh);
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *frame, void *ud) {
    h2cs *st = stream_of(ud, frame->hd.stream_id);
    if (st) st->cl->got_bytes = true;
    return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *ud) {
    h2cs *st = stream_of(ud, frame->hd.stream_id);
    if (!st || st->head_seen) return 0; /* trailers: ignored */
    const char *n = (const char *)name, *v = (const char *)value;
    if (namelen && n[0] == ':') {
        if (irn__streq_ci(n, namelen, ":status") && valuelen == 3) {
            st->status = (v[0] - '0') * 100 + (v[1] - '0') * 10 + (v[2] - '0');
        }
        return 0;
    }
    int r = irn__hdrs_name(&st->rh, n, namelen);
    if (!r) r = irn__hdrs_name_done(&st->rh);
    if (!r) r = irn__hdrs_value(&st->rh, v, valuelen);
    if (!r) r = irn__hdrs_value_done(&st->rh);
    if (r) {
        st->parse_err = true; /* over a cap: the stream is reset */
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return 0;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *frame, void *ud) {
    h2conn *c = ud;
    if (frame->hd.type == NGHTTP2_GOAWAY) {
        c->goaway = true; /* no new requests here; refused ones close with REFUSED_STREAM */
        return 0;
    }
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    h2cs *st = stream_of(c, frame->hd.stream_id);
    if (!st) return 0;
    irn_client *cl = st->cl;
    if (cl->idle_ms && !cl->paused) st->idle_deadline = irn__now_ms() + cl->idle_ms;
    if (frame->hd.type == NGHTTP2_HEADERS && !st->head_seen) {
        if (st->status == 100 || st->status == 103) {
            irn__hdrs_reset(&st->rh); /* informational: skipped (the head deadline stays) */
            st->status = 0;
        } else if (st->status < 200 || st->status > 599) {
            /* no 101 in HTTP/2, no other interim status this client knows, and no
             * status over 599 */
            st->parse_err = true;
            nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_PROTOCOL_ERROR);
            return 0;
        } else {
            st->head_seen = true;
            st->head_deadline = 0;
        }
    }
    bool bodiless = st->head_seen && (st->status == 204 || st->status == 304);
    bool end = frame->hd.flags & NGHTTP2_FLAG_END_STREAM;
    if (end || bodiless) {
        st->remote_done = true;
        deliver_head(st);
        /* The response is whole (a 204 or 304 ends with its head, as over HTTP/1.1):
         * a request body not yet sent is not wanted any more (RFC 9113 8.1), and
         * the stream is reset so that it ends now, not after an upload that a server
         * that answered early may never take. */
        if (!end || !nghttp2_session_get_stream_local_close(s, st->id))
            nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_NO_ERROR);
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *ud) {
    h2conn *c = ud;
    nghttp2_session_consume_connection(s, len);
    h2cs *st = stream_of(c, id);
    if (!st) return 0;
    irn_client *cl = st->cl;
    if (cl->canceled) return 0;
    if (!st->head_seen) {
        st->parse_err = true; /* nghttp2 lets DATA after a 1xx through */
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, id, NGHTTP2_PROTOCOL_ERROR);
        return 0;
    }
    deliver_head(st);
    if (cl->canceled || st->remote_done) return 0; /* DATA after a 204 or 304: dropped */
    if (cl->idle_ms && !cl->paused) st->idle_deadline = irn__now_ms() + cl->idle_ms;
    if (cl->paused || pend_len(st)) {
        /* Held, unconsumed: the stream window bounds this. */
        if (ir_buf_append(&st->pend, data, len) != 0) {
            cl->err = IRN_ENOMEM;
            nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, id, NGHTTP2_INTERNAL_ERROR);
        }
        return 0;
    }
    if (cl->cbs.on_body && len) cl->cbs.on_body(cl->ud, (const char *)data, len);
    if (!c->closing) nghttp2_session_consume_stream(s, id, len);
    return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t error_code, void *ud) {
    h2conn *c = ud;
    h2cs *st = stream_of(c, id);
    if (!st) return 0;
    nghttp2_session_set_stream_user_data(s, id, NULL);
    if (error_code == NGHTTP2_REFUSED_STREAM && stream_requeue(st, true))
        return 0; /* unprocessed */
    st->closed = true;
    int err = stream_outcome(st, error_code);
    if (err == 0 && pend_len(st) && !st->cl->canceled) {
        st->close_err = 0; /* delivered on resume, then on_done(0) */
        return 0;
    }
    stream_finish(st, err);
    return 0;
}

/* ---- winding down ------------------------------------------------------------------------- */

/* A stream that ended whole and holds bytes for its paused client. */
static bool held(const h2cs *st) {
    return st->closed && !st->close_err && pend_len(st) && !st->cl->canceled;
}

static bool holds_finished(const h2conn *c) {
    for (const h2cs *st = c->streams; st; st = st->next)
        if (held(st)) return true;
    return false;
}

/* The session or the socket is over: closes c, unless finished responses still hold
 * bytes for paused clients. Then the streams still open fail (err, or as on_closed
 * would fail them), nothing more is read or sent, and conn_work closes c once the held
 * bytes are delivered. */
static void conn_over(h2conn *c, int err) {
    if (c->winding || !holds_finished(c)) {
        if (!c->winding) conn_close(c, err);
        return;
    }
    c->winding = c->goaway = true;
    if (c->reading) uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = false;
    for (h2cs *st = c->streams; st; st = st->next) {
        if (st->closed) continue;
        st->closed = true;
        st->close_err = err ? err : st->head_delivered ? IRN_ECLOSED_MID : IRN_ECLOSED_EARLY;
    }
    conn_schedule(c);
}

/* ---- writing ---------------------------------------------------------------------------- */

static void pump(h2conn *c);

static void on_cwrite(uv_write_t *w, int status) {
    irn__wreq *r = (irn__wreq *)w;
    h2conn *c = w->data;
    c->queued -= r->n;
    free(r);
    if (c->closing) return;
    if (status < 0) {
        conn_over(c, 0);
        return;
    }
    pump(c);
}

static size_t cqueued(void *ctx) {
    return ((h2conn *)ctx)->queued;
}

static int cwrite(void *ctx, const ir_buf *b) {
    h2conn *c = ctx;
    uv_buf_t ub = uv_buf_init(b->data, (unsigned)b->len);
    size_t n = 0;
    int rc = irn__write_copy((uv_stream_t *)&c->tcp, &ub, 1, 0, c, on_cwrite, &n);
    c->queued += n;
    return rc;
}

static void pump(h2conn *c) {
    if (c->busy) {
        c->want_flush = true;
        return;
    }
    if (c->closing || c->winding || !c->s) return;
    c->busy++;
    const irn__h2_out out = {
        .ctx = c, .queued = cqueued, .write = cwrite, .want_flush = &c->want_flush};
    int rc = irn__h2_send(c->s, &out);
    c->busy--;
    if (rc != 0) {
        conn_close(c, 0);
        return;
    }
    /* Neither side has anything more to say: the server's GOAWAY and no stream is
     * left, or a protocol error made nghttp2 send GOAWAY and give up on the
     * session (its streams would never finish): the connection goes, and with
     * it the streams, so their leases are released and new requests get a new
     * connection. */
    if (!nghttp2_session_want_read(c->s) && !nghttp2_session_want_write(c->s)) {
        if (c->nstreams)
            IR_DEBUG("net", "h2 %s:%u: session over with %zu streams open", c->host, c->port,
                     c->nstreams);
        conn_over(c, 0);
    }
}

/* ---- submitting ------------------------------------------------------------------------- */

static ssize_t read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length,
                         uint32_t *flags, nghttp2_data_source *src, void *ud) {
    h2cs *st = src->ptr;
    irn_client *cl = st->cl;
    size_t left = cl->body_len - st->body_off;
    size_t n = left < length ? left : length;
    if (n) irn__parts_copy(cl->body, cl->nbody, st->body_off, (char *)buf, n);
    st->body_off += n;
    if (st->body_off == cl->body_len) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static void stream_submit(h2conn *c, h2cs *st) {
    irn_client *cl = st->cl;
    nghttp2_data_provider prd;
    prd.source.ptr = st;
    prd.read_callback = read_body;
    int32_t id =
        nghttp2_submit_request(c->s, NULL, st->nv, st->nnv, cl->has_body ? &prd : NULL, st);
    if (id < 0) {
        /* out of stream ids, or the session is going away */
        c->goaway = true;
        st->closed = true;
        st->close_err = IRN_ECLOSED_EARLY;
        return;
    }
    st->id = id; /* the head's deadline runs from stream_link */
    /* st->nv stays until the request ends: a refused stream is sent again */
}

static size_t known_capacity(const h2conn *c);

/* Submits the streams not sent yet, oldest first, while the server's limit on
 * concurrent streams has room: nghttp2 would queue the others where no deadline or
 * cancel reaches them (with a limit of 0, for ever). */
static void submit_waiting(h2conn *c) {
    if (!c->ready || !c->s) return;
    size_t open = 0;
    h2cs *last = NULL;
    for (h2cs *st = c->streams; st; st = st->next) {
        open += st->id && !st->closed;
        last = st;
    }
    size_t cap = known_capacity(c);
    for (h2cs *st = last; st && open < cap; st = st->prev)
        if (!st->id && !st->closed && !st->cl->canceled) {
            stream_submit(c, st);
            open += st->id != 0;
        }
}

/* Deferred work: submit new requests, deliver what resumed or ended, send. */
static void conn_work(h2conn *c) {
    if (c->closing) return;
    c->busy++;
    if (!c->winding) submit_waiting(c);
    for (h2cs *st = c->streams, *next; st && !c->closing; st = next) {
        next = st->next;
        irn_client *cl = st->cl;
        if (cl->canceled && (!st->id || st->closed)) {
            stream_finish(st, IRN_ECANCELED); /* never sent, or done but held */
            continue;
        }
        if (st->closed && st->close_err) {
            stream_finish(st, st->close_err);
            continue;
        }
        if (pend_len(st) && !cl->paused) stream_deliver(st);
        if (st->closed && !pend_len(st)) stream_finish(st, 0);
    }
    c->busy--;
    if (c->winding && !c->nstreams) {
        conn_close(c, 0);
        return;
    }
    pump(c);
    conn_rearm(c);
}

static void on_ftimer(uv_timer_t *t) {
    conn_work(t->data);
}

static void conn_schedule(h2conn *c) {
    if (c->closing || uv_is_active((uv_handle_t *)&c->ftimer)) return;
    uv_timer_start(&c->ftimer, on_ftimer, 0, 0);
}

/* ---- timers ------------------------------------------------------------------------------ */

static void on_timer(uv_timer_t *t);

static void conn_rearm(h2conn *c) {
    if (c->closing) return;
    uint64_t next = c->ready ? 0 : c->connect_deadline;
    for (h2cs *st = c->streams; st; st = st->next) {
        if (st->head_deadline && (!next || st->head_deadline < next)) next = st->head_deadline;
        if (st->idle_deadline && !st->cl->paused && (!next || st->idle_deadline < next))
            next = st->idle_deadline;
    }
    if (c->ready && !c->nstreams) {
        uint64_t idle = c->idle_since + c->hp->idle_ms;
        if (!next || idle < next) next = idle;
    }
    if (!next) {
        uv_timer_stop(&c->timer);
        return;
    }
    uint64_t now = irn__now_ms();
    uv_timer_start(&c->timer, on_timer, next > now ? next - now : 1, 0);
}

static void stream_fail(h2conn *c, h2cs *st, int err) {
    if (!st->cl->err) st->cl->err = err;
    st->head_deadline = st->idle_deadline = 0;
    if (st->id && !st->closed) {
        nghttp2_submit_rst_stream(c->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
    } else {
        st->close_err = err;
        st->closed = true;
    }
}

static void on_timer(uv_timer_t *t) {
    h2conn *c = t->data;
    if (c->closing) return;
    uint64_t now = irn__now_ms();
    if (!c->ready) {
        if (c->connect_deadline && now >= c->connect_deadline)
            conn_close(c, IRN_ECONNECT_TIMEOUT);
        else
            conn_rearm(c);
        return;
    }
    if (!c->nstreams && now >= c->idle_since + c->hp->idle_ms) {
        conn_close(c, 0); /* idle in the pool long enough */
        return;
    }
    for (h2cs *st = c->streams; st; st = st->next) {
        if (st->head_deadline && now >= st->head_deadline)
            stream_fail(c, st, IRN_EHEAD_TIMEOUT);
        else if (st->idle_deadline && !st->cl->paused && now >= st->idle_deadline)
            stream_fail(c, st, IRN_EIDLE_TIMEOUT);
    }
    conn_work(c);
}

/* ---- connection ---------------------------------------------------------------------------- */

static void on_closed(uv_handle_t *h) {
    h2conn *c = h->data;
    if (++c->nclosed < 3) return;
    irn__h2c_pool *hp = c->hp;
    if (c->s) nghttp2_session_del(c->s);
    c->s = NULL;
    while (c->streams) {
        h2cs *st = c->streams;
        /* A connection that had served closed (cleanly) under a request that got
         * nothing: most likely the server let it go while idle. Sent again. */
        if (st->reused && !st->closed && !c->fail_err && stream_requeue(st, false)) continue;
        int err = st->closed && !pend_len(st) ? st->close_err : 0;
        /* Before its head a request may be tried again (the gateway does): on a
         * connection that broke for another stream's fault, this one did no wrong. */
        if (!err)
            err = st->head_delivered ? IRN_ECLOSED_MID
                                     : (c->fail_err ? c->fail_err : IRN_ECLOSED_EARLY);
        stream_finish(st, err);
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        hp->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    free(c);
    if (hp->closing && !hp->conns && hp->on_empty) hp->on_empty(hp->ud);
}

static void really_close(h2conn *c) {
    uv_close((uv_handle_t *)&c->tcp, on_closed);
    uv_close((uv_handle_t *)&c->timer, on_closed);
    uv_close((uv_handle_t *)&c->ftimer, on_closed);
}

static void conn_close(h2conn *c, int err) {
    if (c->closing) return;
    c->closing = true;
    if (err && !c->fail_err) c->fail_err = err;
    if (c->gai_pending) {
        uv_cancel((uv_req_t *)&c->gai); /* on_gai finishes the close */
        return;
    }
    really_close(c);
}

static void on_calloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
    h2conn *c = h->data;
    *buf = uv_buf_init(c->hp->readbuf, sizeof c->hp->readbuf);
}

static void on_cread(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    h2conn *c = s->data;
    if (c->closing || nread == 0) return;
    if (nread < 0) {
        conn_over(c, 0);
        return;
    }
    c->busy++;
    ssize_t r = nghttp2_session_mem_recv(c->s, (const uint8_t *)buf->base, (size_t)nread);
    c->busy--;
    if (c->closing) return;
    if (r < 0) {
        IR_DEBUG("net", "h2 %s:%u: %s", c->host, c->port, nghttp2_strerror((int)r));
        conn_close(c, IRN_EPARSE);
        return;
    }
    conn_work(c);
}

static int h2_session_new(h2conn *c) {
    nghttp2_session_callbacks *cbs = NULL;
    nghttp2_option *opt = NULL;
    if (nghttp2_session_callbacks_new(&cbs) != 0) return -1;
    if (nghttp2_option_new(&opt) != 0) {
        nghttp2_session_callbacks_del(cbs);
        return -1;
    }
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    nghttp2_option_set_no_auto_window_update(opt, 1);
    nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
    int rv = nghttp2_session_client_new2(&c->s, cbs, c, opt);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_option_del(opt);
    if (rv != 0) return -1;
    nghttp2_settings_entry iv[3] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, c->hp->window},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
         (uint32_t)(c->hp->cfg.max_header_bytes + 32 * c->hp->cfg.max_headers)},
    };
    rv = nghttp2_submit_settings(c->s, NGHTTP2_FLAG_NONE, iv, 3);
    if (rv == 0)
        rv = nghttp2_session_set_local_window_size(c->s, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW);
    return rv;
}

static void on_connect(uv_connect_t *req, int status) {
    h2conn *c = req->handle->data;
    if (c->closing) return;
    if (status < 0) {
        IR_DEBUG("net", "connect %s:%u: %s", c->host, c->port, uv_strerror(status));
        conn_close(c, IRN_ECONNECT);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    if (h2_session_new(c) != 0) {
        conn_close(c, IRN_ENOMEM);
        return;
    }
    c->ready = true;
    c->idle_since = irn__now_ms();
    if (uv_read_start((uv_stream_t *)&c->tcp, on_calloc, on_cread) == 0) c->reading = true;
    conn_work(c);
}

static void do_connect(h2conn *c, const struct sockaddr *sa) {
    if (uv_tcp_connect(&c->creq, &c->tcp, sa, on_connect) != 0) conn_close(c, IRN_ECONNECT);
}

static void on_gai(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
    h2conn *c = req->data;
    c->gai_pending = false;
    if (c->closing) {
        uv_freeaddrinfo(res);
        really_close(c);
        return;
    }
    struct sockaddr_storage ss;
    int rc = irn__addrinfo_take(status, res, &ss);
    if (rc)
        conn_close(c, rc);
    else
        do_connect(c, (struct sockaddr *)&ss);
}

static h2conn *conn_new(irn__h2c_pool *hp, const irn_client *cl) {
    h2conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->hp = hp;
    snprintf(c->host, sizeof c->host, "%s", cl->host);
    c->port = cl->port;
    uv_tcp_init(hp->loop, &c->tcp);
    uv_timer_init(hp->loop, &c->timer);
    uv_timer_init(hp->loop, &c->ftimer);
    c->tcp.data = c;
    c->timer.data = c;
    c->ftimer.data = c;
    c->gai.data = c;
    c->next = hp->conns;
    if (hp->conns) hp->conns->prev = c;
    hp->conns = c;
    hp->st->conns_created++;
    if (cl->connect_ms) c->connect_deadline = irn__now_ms() + cl->connect_ms;
    conn_rearm(c);
    struct sockaddr_storage ss;
    int rc = irn__resolve(hp->loop, &c->gai, on_gai, c->host, c->port, &ss);
    if (rc == 0)
        do_connect(c, (struct sockaddr *)&ss);
    else if (rc == 1)
        c->gai_pending = true;
    else
        conn_close(c, rc);
    return c;
}

static size_t known_capacity(const h2conn *c) {
    uint32_t m = nghttp2_session_get_remote_settings(c->s, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
    return m > 4096 ? 4096 : m;
}

/* Streams c may carry: the server's limit, or before its SETTINGS the limit another
 * connection to the same server learnt (else STREAMS_GUESS), so that requests its
 * server refused for the limit do not all move to one new connection. */
static size_t conn_capacity(const h2conn *c) {
    if (c->ready && c->s) return known_capacity(c);
    for (const h2conn *o = c->hp->conns; o; o = o->next)
        if (o != c && o->ready && o->s && !o->closing && o->port == c->port &&
            strcmp(o->host, c->host) == 0)
            return known_capacity(o);
    return STREAMS_GUESS;
}

/* A connection to cl's host with room for one more stream, or a new one (NULL: OOM). */
static h2conn *conn_pick(irn__h2c_pool *hp, const irn_client *cl) {
    h2conn *c = hp->conns;
    for (; c; c = c->next)
        if (!c->closing && !c->goaway && c->port == cl->port && c->nstreams < conn_capacity(c) &&
            strcmp(c->host, cl->host) == 0)
            break;
    if (c)
        hp->st->conns_reused++;
    else
        c = conn_new(hp, cl);
    return c;
}

/* ---- public (internal) API --------------------------------------------------------------------
 */

irn__h2c_pool *irn__h2c_pool_new(uv_loop_t *loop, const irn_pool_cfg *cfg, irn_pool_stats *st,
                                 irn_close_cb on_empty, void *ud) {
    irn__h2c_pool *hp = calloc(1, sizeof *hp);
    if (!hp) return NULL;
    hp->loop = loop;
    hp->cfg = *cfg;
    hp->st = st;
    hp->idle_ms = irn__ns_to_ms(cfg->idle_timeout_ns ? cfg->idle_timeout_ns : 30ull * 1000000000);
    hp->window = cfg->h2_stream_window ? cfg->h2_stream_window : DEFAULT_WINDOW;
    if (hp->window > (1u << 31) - 1) hp->window = (1u << 31) - 1;
    hp->on_empty = on_empty;
    hp->ud = ud;
    return hp;
}

/* What the request's header block leaves out: connection-specific fields, and
 * Host (it became :authority). */
static bool h1_only(const char *n, size_t nl) {
    return irn__h1_only_header(n, nl) || irn__streq_ci(n, nl, "host");
}

/* The request's header block, copied: one allocation for the strings. */
static int build_nv(h2cs *st, const irn_client *cl, const char *method, const char *path,
                    const irn_header *headers, size_t nheaders) {
    /* No printf: this runs for every upstream request. */
    char authority[300], clen[24];
    const irn_header *host = irn_headers_find(headers, nheaders, "host");
    ir_buf a;
    ir_buf_fixed(&a, authority, sizeof authority);
    if (host) {
        (void)ir_buf_append(&a, host->value, IR_MIN(host->value_len, sizeof authority - 1));
    } else {
        /* Too long to fit: cut short, as the host is checked when connecting. */
        (void)irn__append_authority(&a, cl->host, strlen(cl->host), cl->port);
    }
    bool wants_length = cl->has_body || strcasecmp(method, "POST") == 0 ||
                        strcasecmp(method, "PUT") == 0 || strcasecmp(method, "PATCH") == 0;
    ir_buf cb;
    ir_buf_fixed(&cb, clen, sizeof clen);
    (void)ir_buf_append_uint(&cb, cl->body_len);
    const char *fixed[5][2] = {{":method", method},
                               {":scheme", "http"},
                               {":authority", authority},
                               {":path", path},
                               {"content-length", clen}};
    size_t nfixed = wants_length ? 5 : 4;
    size_t total = 0;
    for (size_t i = 0; i < nfixed; i++) total += strlen(fixed[i][0]) + strlen(fixed[i][1]) + 2;
    for (size_t i = 0; i < nheaders; i++) {
        size_t nl = headers[i].name_len ? headers[i].name_len : strlen(headers[i].name);
        size_t vl = headers[i].value_len ? headers[i].value_len : strlen(headers[i].value);
        total += nl + vl + 2;
    }
    if (total > st->c_max_head) return IRN_EINVAL;
    st->nvmem = malloc(total ? total : 1);
    st->nv = calloc(nfixed + nheaders, sizeof *st->nv);
    if (!st->nvmem || !st->nv) return IRN_ENOMEM;
    char *p = st->nvmem;
    size_t n = 0;
    for (size_t i = 0; i < nfixed + nheaders; i++) {
        const char *name, *value;
        size_t nl, vl;
        if (i < nfixed) {
            name = fixed[i][0];
            value = fixed[i][1];
            nl = strlen(name);
            vl = strlen(value);
        } else {
            const irn_header *h = &headers[i - nfixed];
            name = h->name;
            value = h->value;
            nl = h->name_len ? h->name_len : strlen(name);
            vl = h->value_len ? h->value_len : strlen(value);
            if (h1_only(name, nl)) continue;
        }
        nghttp2_nv *nv = &st->nv[n++];
        nv->name = (uint8_t *)p;
        for (size_t k = 0; k < nl; k++)
            p[k] = (name[k] >= 'A' && name[k] <= 'Z') ? (char)(name[k] - 'A' + 'a') : name[k];
        p[nl] = '\0';
        p += nl + 1;
        nv->value = (uint8_t *)p;
        memcpy(p, value, vl);
        p[vl] = '\0';
        p += vl + 1;
        nv->namelen = nl;
        nv->valuelen = vl;
        nv->flags = NGHTTP2_NV_FLAG_NONE;
    }
    st->nnv = n;
    return 0;
}

int irn__h2c_request(irn__h2c_pool *hp, irn_client *cl, const char *method, const char *path,
                     const irn_header *headers, size_t nheaders) {
    if (hp->closing) return IRN_ESHUTDOWN;
    h2cs *st = calloc(1, sizeof *st);
    if (!st) return IRN_ENOMEM;
    st->cl = cl;
    st->c_max_head = hp->cfg.max_header_bytes;
    st->harr = malloc(hp->cfg.max_headers * sizeof *st->harr); /* filled before it is read */
    irn__hdrs_init(&st->rh, hp->cfg.max_header_bytes, hp->cfg.max_headers);
    ir_buf_init(&st->pend, 0);
    int rc = st->harr ? build_nv(st, cl, method, path, headers, nheaders) : IRN_ENOMEM;
    if (rc != 0) {
        stream_free(st);
        return rc;
    }
    h2conn *c = conn_pick(hp, cl);
    if (!c) {
        stream_free(st);
        return IRN_ENOMEM;
    }
    cl->h2 = st;
    stream_link(c, st);
    conn_rearm(c);
    if (c->ready) conn_schedule(c);
    return 0;
}

void irn__h2c_pool_close(irn__h2c_pool *hp) {
    hp->closing = true;
    for (h2conn *c = hp->conns; c; c = c->next) {
        for (h2cs *st = c->streams; st; st = st->next) {
            st->cl->canceled = true;
            st->cl->err = IRN_ECANCELED;
        }
        conn_close(c, IRN_ECANCELED);
    }
}

bool irn__h2c_pool_empty(const irn__h2c_pool *hp) {
    return hp->conns == NULL;
}

void irn__h2c_pool_free(irn__h2c_pool *hp) {
    free(hp);
}

void irn__h2c_cancel(irn_client *cl) {
    h2cs *st = cl->h2;
    if (!st || cl->canceled) return;
    cl->canceled = true;
    cl->err = IRN_ECANCELED;
    h2conn *c = st->c;
    if (!c || c->closing) return;
    if (st->id && !st->closed && c->s)
        nghttp2_submit_rst_stream(c->s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
    conn_schedule(c);
}

void irn__h2c_pause(irn_client *cl) {
    if (cl->paused) return;
    cl->paused = true;
}

void irn__h2c_resume(irn_client *cl) {
    if (!cl->paused) return;
    cl->paused = false;
    h2cs *st = cl->h2;
    if (!st || !st->c) return;
    if (cl->idle_ms && cl->got_bytes) st->idle_deadline = irn__now_ms() + cl->idle_ms;
    conn_schedule(st->c); /* held bytes go out from the loop */
}
