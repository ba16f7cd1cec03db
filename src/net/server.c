/* server.c: the HTTP/1.1 server on libuv.
 *
 * One connection parses at most one request ahead: once a request is
 * dispatched, parsing stops until its response ends (pipelined bytes wait in
 * the connection's input buffer), so responses go out in order. Reading goes
 * on meanwhile, to notice a client that leaves, until the buffered input
 * reaches a cap.
 *
 * With cfg.h2c a connection that starts with the HTTP/2 preface, or whose
 * first request asks for `Upgrade: h2c`, is handed to an h2 session
 * (h2_server.c) that owns the protocol from then on; this file keeps the
 * socket, the timers and the write queue. */
#include "net/net_internal.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LINGER_MS 2000
/* Work per turn of the loop, so that no client holds the loop for long (one turn
 * is what every other connection may wait for):
 * - requests answered at once from one connection's pipelined input: the rest
 *   waits (64 KiB of pipelined 404s took 2.5 ms of CPU in one read before);
 * - h2c input goes to nghttp2 in slices (SLICE_FRAMES in h2_server.c);
 * - what was held back is taken up on later turns, connection after connection
 *   in order (the `more` queue), while the turn has used less than TURN_CPU_NS of
 *   CPU (the thread's clock, read only where input could wait); a read of more
 *   than SMALL_READ bytes that finds the turn spent is held back too (for h2c,
 *   all of it; a smaller one gets its first slice), so an ordinary request is
 *   still served in the turn it arrives;
 * - connections accepted: the rest wait in the kernel's queue. */
#define H1_PER_TURN     16
#define TURN_CPU_NS     (100 * 1000)
#define SMALL_READ      4096
#define ACCEPT_PER_TURN 8

typedef struct conn conn;

struct irn_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_check_t turn;              /* after each poll: the turn's counts start again */
    uv_idle_t more;               /* active while input waits in the `more` queue */
    uv_timer_t resume;            /* opens the listener again after a pause (pause_accepting) */
    int nclosed;                  /* of turn, more and resume, closed after the last connection */
    struct sockaddr_storage addr; /* where the listener is bound, its port included */
    bool paused;                  /* the listener is closed until `resume` fires */
    bool listener_down;           /* paused, and the listener's close has completed */
    uint64_t pause_logged_ns;     /* when a pause was last logged */
    unsigned accepted;            /* connections accepted this turn */
    uint64_t turn_cpu;            /* the thread's CPU clock when this turn was first
                                     asked about (turn_spent); 0: not yet */
    bool accept_waiting;          /* a connection waits for uv_accept: past ACCEPT_PER_TURN */
    conn *more_head, *more_tail;  /* connections whose input waits for a turn */
    irn_server_cfg cfg;
    irn_h1_limits lim;
    uint64_t header_ms, body_ms;
    conn *conns;
    irn_server_stats st;
    bool closing;
    bool listener_closed;
    irn_close_cb close_cb;
    void *close_ud;
    int port;
    char readbuf[IRN__READ_BUF_SIZE];
};

typedef enum { T_NONE, T_HEADER, T_BODY, T_RESUME, T_LINGER, T_H2 } timer_kind;

static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define H2_PREFACE_LEN (sizeof h2_preface - 1)

struct conn {
    irn_server *srv;
    conn *prev, *next;
    uv_tcp_t tcp;
    uv_timer_t timer;
    irn__lazy tz;                /* tk's deadline */
    uv_timer_t ftimer;           /* h2: deferred flushes */
    conn *more_prev, *more_next; /* in srv's `more` queue */
    bool more_queued;
    uv_shutdown_t shut;
    irn_h1_parser *parser; /* NULL once the connection speaks h2 */
    irn__h2s *h2;
    ir_buf in;     /* bytes read but not parsed yet */
    size_t in_off; /* h2: of those, the bytes nghttp2 already has */
    irn_resp *resp;
    size_t queued;
    int nclosed;
    timer_kind tk;
    bool closing; /* uv_close was called */
    bool reading;
    bool dead_input; /* no more requests on this connection */
    bool lingering;  /* shut down our side, draining theirs */
    bool peer_eof;
    bool processing;
    bool kick;    /* the parser has to be fed again, even with no bytes */
    bool sniffed; /* h2c: the start of the connection was checked for the preface */
    char peer[64];
};

static void conn_process(conn *c);
static void h2_input(conn *c);
static void conn_close(conn *c);

/* One of cfg.counters' fields (when given) up or down by one. */
#define COUNT(srv, field, op)                                                                      \
    do {                                                                                           \
        if ((srv)->cfg.counters)                                                                   \
            atomic_fetch_##op##_explicit(&(srv)->cfg.counters->field, 1, memory_order_relaxed);    \
    } while (0)
static void conn_finish(conn *c);

/* ---- timers, reading ------------------------------------------------------ */

static void on_timer(uv_timer_t *t);

/* Lazy (irn__lazy): only an earlier deadline re-arms the uv timer. */
static void timer_set(conn *c, timer_kind k, uint64_t ms) {
    c->tk = k;
    irn__lazy_set(&c->tz, &c->timer, on_timer, ms);
}

static void timer_stop(conn *c) {
    c->tk = T_NONE;
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
    conn *c = h->data;
    *buf = uv_buf_init(c->srv->readbuf, sizeof c->srv->readbuf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void h2_read(conn *c, const char *data, size_t len);

static void read_start(conn *c) {
    if (c->reading || c->closing || c->peer_eof) return;
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0) c->reading = true;
}

static void read_stop(conn *c) {
    if (!c->reading) return;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = false;
}

/* ---- the `more` queue: input held back for a later turn ------------------------ */

/* Whether this turn of the loop has used TURN_CPU_NS of CPU, counted from the
 * first time it is asked (the `more` queue asks first thing, before the poll). */
static bool turn_spent(irn_server *srv) {
    uint64_t now = ir_thread_cpu_ns();
    if (!srv->turn_cpu) {
        srv->turn_cpu = now;
        return false;
    }
    return now - srv->turn_cpu >= TURN_CPU_NS;
}

static void more_unlink(conn *c) {
    if (!c->more_queued) return;
    irn_server *srv = c->srv;
    if (c->more_prev)
        c->more_prev->more_next = c->more_next;
    else
        srv->more_head = c->more_next;
    if (c->more_next)
        c->more_next->more_prev = c->more_prev;
    else
        srv->more_tail = c->more_prev;
    c->more_prev = c->more_next = NULL;
    c->more_queued = false;
}

/* Runs once a turn while the queue holds anyone (an active idle handle also keeps
 * the loop from blocking in its poll): each connection queued gets one unit of its
 * input taken up, in order, while the turn's budget lasts; one that has more left
 * goes to the back. */
static void on_more(uv_idle_t *i) {
    irn_server *srv = i->data;
    conn *last = srv->more_tail;
    while (srv->more_head && !turn_spent(srv)) {
        conn *c = srv->more_head;
        more_unlink(c);
        if (c->h2)
            h2_input(c);
        else
            conn_process(c);
        if (c == last) break;
    }
    if (!srv->more_head) uv_idle_stop(i);
}

/* c's input waits for a later turn of the loop. */
static void more_later(conn *c) {
    irn_server *srv = c->srv;
    if (c->closing || c->more_queued) return;
    c->more_prev = srv->more_tail;
    if (srv->more_tail)
        srv->more_tail->more_next = c;
    else
        srv->more_head = c;
    srv->more_tail = c;
    c->more_queued = true;
    if (!uv_is_active((uv_handle_t *)&srv->more)) uv_idle_start(&srv->more, on_more);
}

static bool more_pending(const conn *c) {
    return c->more_queued;
}

static size_t in_cap(const conn *c) {
    return c->srv->lim.max_header_bytes + IRN__READ_BUF_SIZE;
}

/* ---- writing ---------------------------------------------------------------- */

static void on_write(uv_write_t *w, int status) {
    irn__wreq *r = (irn__wreq *)w;
    conn *c = w->data;
    c->queued -= r->n;
    free(r);
    if (c->closing) return;
    if (status < 0) {
        conn_close(c);
        return;
    }
    if (c->h2) {
        irn__h2s_on_written(c->h2);
        return;
    }
    irn_resp *resp = c->resp;
    if (resp && resp->above_high && c->queued <= resp->low) {
        resp->above_high = false;
        if (resp->on_drain) resp->on_drain(resp, resp->drain_ud);
    } else if (!resp && c->queued == 0 && c->srv->closing && !c->dead_input && c->in.len == 0 &&
               c->parser && irn_h1_parser_idle(c->parser)) {
        conn_finish(c); /* shutting down: this one just became idle */
    }
}

static int conn_write(conn *c, const uv_buf_t *parts, int nparts) {
    if (c->closing) return IRN_ECLOSED;
    size_t total = 0;
    for (int i = 0; i < nparts; i++) total += parts[i].len;
    if (!total) return 0;
    /* Nothing queued: write at once, and copy only what the socket did not
     * take. A queued write would cost libuv an epoll_ctl when it completes. */
    size_t skip = 0;
    if (c->queued == 0) {
        int w = uv_try_write((uv_stream_t *)&c->tcp, parts, (unsigned)nparts);
        if (w < 0 && w != UV_EAGAIN) {
            conn_close(c);
            return IRN_ECLOSED;
        }
        if (w > 0) skip = (size_t)w;
        if (skip == total) return 0;
    }
    size_t n = 0;
    int rc = irn__write_copy((uv_stream_t *)&c->tcp, parts, nparts, skip, c, on_write, &n);
    if (rc == IRN_ECLOSED) conn_close(c);
    c->queued += n;
    return rc;
}

/* ---- closing ------------------------------------------------------------------ */

static void server_maybe_done(irn_server *srv);

static void on_turn_closed(uv_handle_t *h) {
    irn_server *srv = h->data;
    srv->nclosed++;
    server_maybe_done(srv);
}

static void server_maybe_done(irn_server *srv) {
    if (!srv->closing || !srv->listener_closed || srv->conns) return;
    if (srv->nclosed < 3) {
        /* Closed last: the connections that finish after irn_server_close may still
         * have held-back input to take up, and turn_spent needs the turn's budget
         * restarted after each poll (closed first, every turn would count as spent
         * and held-back input would never be taken up). */
        if (!uv_is_closing((uv_handle_t *)&srv->more)) {
            uv_close((uv_handle_t *)&srv->more, on_turn_closed);
            uv_close((uv_handle_t *)&srv->turn, on_turn_closed);
            uv_close((uv_handle_t *)&srv->resume, on_turn_closed);
        }
        return;
    }
    irn_close_cb cb = srv->close_cb;
    void *ud = srv->close_ud;
    srv->close_cb = NULL;
    if (cb) cb(ud);
    free(srv);
}

static void on_conn_closed(uv_handle_t *h) {
    conn *c = h->data;
    if (++c->nclosed < 3) return;
    irn_server *srv = c->srv;
    if (c->h2) {
        irn__h2s *h2 = c->h2;
        c->h2 = NULL;
        irn__h2s_free(h2); /* on_abort for the open streams */
    }
    irn_resp *resp = c->resp;
    c->resp = NULL;
    if (resp) {
        resp->c = NULL;
        resp->aborted = true;
        if (resp->on_abort) resp->on_abort(resp, resp->abort_ud);
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    irn_h1_parser_free(c->parser);
    ir_buf_free(&c->in);
    free(c);
    srv->st.conns_active--;
    COUNT(srv, conns_active, sub);
    server_maybe_done(srv);
}

static void conn_close(conn *c) {
    if (c->closing) return;
    c->closing = true;
    if (c->resp) c->resp->aborted = true;
    if (c->h2) irn__h2s_mark_aborted(c->h2);
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
    uv_close((uv_handle_t *)&c->timer, on_conn_closed);
    uv_close((uv_handle_t *)&c->ftimer, on_conn_closed);
    more_unlink(c);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
    conn *c = req->data;
    if (c->closing) return;
    if (status < 0 || c->peer_eof) {
        conn_close(c);
        return;
    }
    /* Drain what the client still sends for a moment, so that unread input
     * does not turn our close into a reset that destroys the response. */
    timer_set(c, T_LINGER, LINGER_MS);
    read_start(c);
}

/* Stops taking requests; closes once the queued output is out. */
static void conn_finish(conn *c) {
    if (c->closing || c->lingering) return;
    c->dead_input = true;
    c->lingering = true;
    timer_stop(c);
    c->shut.data = c;
    if (uv_shutdown(&c->shut, (uv_stream_t *)&c->tcp, on_shutdown) != 0) conn_close(c);
}

/* The server's own answer; req: the request whose head was read, or NULL. */
static void send_error(conn *c, int status, const char *msg, const irn_request *req) {
    irn_server *srv = c->srv;
    srv->st.errors_sent++;
    irn_error_answer e;
    ir_buf body, head;
    ir_buf_init(&body, 4096);
    ir_buf_init(&head, srv->lim.max_header_bytes + 4096);
    int rc = irn__error_answer_make(&srv->cfg, req, status, msg, &e, &body);
    rc |= ir_buf_appendf(&head,
                         "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                         "Content-Length: %zu\r\n",
                         status, irn_status_reason(status), body.len);
    for (size_t i = 0; rc == 0 && i < e.nheaders; i++) {
        const irn_header *h = &e.headers[i];
        rc = ir_buf_append(&head, h->name, h->name_len) || ir_buf_append(&head, ": ", 2) ||
             ir_buf_append(&head, h->value, h->value_len) || ir_buf_append(&head, "\r\n", 2);
    }
    rc |= ir_buf_append_str(&head, "Connection: close\r\n\r\n");
    if (rc != 0) {
        ir_buf_free(&body);
        ir_buf_free(&head);
        conn_close(c);
        return;
    }
    uv_buf_t parts[2] = {uv_buf_init(head.data, (unsigned)head.len),
                         uv_buf_init(body.data, (unsigned)body.len)};
    IR_DEBUG("net", "%s: %d %s", c->peer, status, msg ? msg : "");
    int r = conn_write(c, parts, 2);
    ir_buf_free(&body);
    ir_buf_free(&head);
    if (r == 0) conn_finish(c);
}

/* ---- timer and reads ------------------------------------------------------ */

static void on_timer(uv_timer_t *t) {
    conn *c = t->data;
    if (c->tk == T_NONE) {
        c->tz.armed = 0; /* cleared since it was armed */
        return;
    }
    if (!irn__lazy_fired(&c->tz, t, on_timer)) return;
    timer_kind k = c->tk;
    c->tk = T_NONE;
    switch (k) {
    case T_H2:
        if (c->h2) irn__h2s_on_timer(c->h2);
        break;
    case T_HEADER:
        if (!c->parser)
            conn_close(c);
        else if (more_pending(c))
            timer_set(c, T_HEADER, c->srv->header_ms); /* its input waits for a turn */
        else if (irn_h1_parser_idle(c->parser) && c->queued > 0 && !c->resp)
            timer_set(c, T_HEADER, c->srv->header_ms); /* still sending: not idle yet */
        else if (irn_h1_parser_idle(c->parser))
            conn_close(c); /* an idle keep-alive connection: close quietly */
        else
            send_error(c, 408, "Timed out waiting for the request headers", NULL);
        break;
    case T_BODY:
        send_error(c, 408, "Timed out waiting for the request body",
                   c->parser ? irn_h1_parser_request(c->parser) : NULL);
        break;
    case T_RESUME:
        conn_process(c);
        break;
    case T_LINGER:
        conn_close(c);
        break;
    case T_NONE:
        break;
    }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    conn *c = s->data;
    if (nread == 0 || c->closing) return;
    if (nread < 0) {
        read_stop(c);
        c->peer_eof = true;
        /* A request in flight is aborted (nginx-style: a half-close counts as
         * leaving). Otherwise flush what is queued, then close. */
        if (c->h2 || c->resp || c->lingering || c->queued == 0 || nread != UV_EOF)
            conn_close(c);
        else
            conn_finish(c);
        return;
    }
    if (c->dead_input) return; /* draining after the last response */
    if (c->h2) {
        h2_read(c, buf->base, (size_t)nread);
        return;
    }
    if (ir_buf_append(&c->in, buf->base, (size_t)nread) != 0) {
        conn_close(c);
        return;
    }
    if (c->resp || more_pending(c)) {
        if (c->in.len >= in_cap(c)) read_stop(c);
        return;
    }
    if ((size_t)nread > SMALL_READ && turn_spent(c->srv)) {
        more_later(c); /* a large read when the turn is spent: taken up in order */
        return;
    }
    conn_process(c);
}

/* ---- h2c ------------------------------------------------------------------------ */

static int h2io_write(void *ctx, const uv_buf_t *parts, int nparts) {
    return conn_write(ctx, parts, nparts);
}

static size_t h2io_queued(void *ctx) {
    return ((conn *)ctx)->queued;
}

static void on_ftimer(uv_timer_t *t) {
    conn *c = t->data;
    if (c->h2 && !c->closing) irn__h2s_flush(c->h2);
}

static void h2io_schedule(void *ctx) {
    conn *c = ctx;
    if (c->closing || uv_is_active((uv_handle_t *)&c->ftimer)) return;
    uv_timer_start(&c->ftimer, on_ftimer, 0, 0);
}

static void h2io_timer(void *ctx, uint64_t ms) {
    conn *c = ctx;
    if (c->closing || c->lingering) return;
    if (ms)
        timer_set(c, T_H2, ms);
    else
        timer_stop(c);
}

static void h2io_done(void *ctx, bool graceful) {
    conn *c = ctx;
    if (graceful)
        conn_finish(c);
    else
        conn_close(c);
}

/* Held input (c->in) to the h2 session, one slice at a time; reading waits meanwhile. */
static void h2_input(conn *c) {
    size_t used = 0;
    int rc = irn__h2s_feed_some(c->h2, c->in.data + c->in_off, c->in.len - c->in_off, &used);
    if (c->closing) return;
    c->in_off = rc >= 0 ? c->in_off + used : c->in.len;
    if (c->in_off == c->in.len) {
        ir_buf_reset(&c->in); /* no memmove per slice: the buffer empties at once */
        c->in_off = 0;
    }
    if (c->in.len) {
        read_stop(c);
        more_later(c);
    } else if (!c->lingering) {
        read_start(c);
    }
}

/* A read on an h2 connection: one slice now (unless it is large and the turn is
 * spent), the rest held for the next turns. */
static void h2_read(conn *c, const char *data, size_t len) {
    if (!c->in.len && (len <= SMALL_READ || !turn_spent(c->srv))) {
        size_t used = 0;
        int rc = irn__h2s_feed_some(c->h2, data, len, &used);
        if (rc < 0 || c->closing) return;
        data += used;
        len -= used;
        if (!len) return;
    }
    if (ir_buf_append(&c->in, data, len) != 0) {
        conn_close(c);
        return;
    }
    read_stop(c);
    more_later(c);
}

/* Hands the connection to an h2 session. req: the Upgrade request (taken). */
static void conn_to_h2(conn *c, const uint8_t *settings, size_t slen, irn_request *req) {
    irn_server *srv = c->srv;
    irn__h2s_io io = {c, h2io_write, h2io_queued, h2io_schedule, h2io_timer, h2io_done};
    timer_stop(c);
    irn_h1_parser_free(c->parser);
    c->parser = NULL;
    c->h2 = irn__h2s_new(&srv->cfg, &srv->lim, &srv->st, c->peer, &io);
    if (!c->h2) {
        irn_request_free(req);
        conn_close(c);
        return;
    }
    srv->st.h2_conns++;
    if (irn__h2s_start(c->h2, settings, slen, req) != 0) {
        conn_close(c);
        return;
    }
    if (c->closing || c->lingering || !c->in.len) return;
    if (!turn_spent(srv)) {
        h2_input(c); /* the bytes after the preface / the upgrade request */
        return;
    }
    read_stop(c);
    more_later(c);
}

/* Whether req asks for h2c (RFC 7540 3.2) with valid HTTP2-Settings, decoded
 * into settings (512 bytes). Otherwise it is served as HTTP/1.1. */
static bool wants_upgrade(const conn *c, const irn_request *req, uint8_t *settings, size_t *slen) {
    const char *up = irn_request_header(req, "upgrade");
    const char *hs = irn_request_header(req, "http2-settings");
    if (!up || !hs || !irn__has_token(up, strlen(up), "h2c") || req->http_major != 1 ||
        req->http_minor != 1 || c->srv->closing)
        return false;
    return irn__base64url_decode(hs, strlen(hs), settings, 512, slen) == 0 && *slen % 6 == 0;
}

/* Answers 101 and switches; req becomes stream 1. */
static void do_upgrade(conn *c, irn_request *req, const uint8_t *settings, size_t slen) {
    static const char sw[] = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                             "Upgrade: h2c\r\n\r\n";
    uv_buf_t b = uv_buf_init((char *)sw, sizeof sw - 1);
    if (conn_write(c, &b, 1) != 0) {
        irn_request_free(req);
        return;
    }
    req->peer = ir_arena_strdup(req->arena, c->peer);
    if (!req->peer) req->peer = "";
    conn_to_h2(c, settings, slen, req);
}

/* h2c prior knowledge: 1 switched, 0 not h2, -1 not known yet. */
static int sniff_preface(conn *c) {
    size_t n = c->in.len < H2_PREFACE_LEN ? c->in.len : H2_PREFACE_LEN;
    if (memcmp(c->in.data, h2_preface, n) != 0) return 0;
    if (n < H2_PREFACE_LEN) return -1;
    conn_to_h2(c, NULL, 0, NULL);
    return 1;
}

/* ---- requests ---------------------------------------------------------------- */

static void dispatch(conn *c, irn_request *req) {
    irn_server *srv = c->srv;
    irn_resp *resp = irn__resp_new(req, &srv->cfg);
    if (!resp) {
        send_error(c, 500, "Out of memory", req);
        irn_request_free(req);
        return;
    }
    req->peer = ir_arena_strdup(req->arena, c->peer);
    if (!req->peer) req->peer = "";
    resp->ops = &irn__h1_resp_ops;
    resp->c = c;
    c->resp = resp;
    timer_stop(c);
    srv->st.requests++;
    srv->cfg.on_request(srv->cfg.ud, req, resp);
}

/* No request in progress and no input left: wait for the next head. */
static void conn_await(conn *c) {
    if (c->tk != T_HEADER && c->tk != T_BODY) timer_set(c, T_HEADER, c->srv->header_ms);
    if (c->in.len < in_cap(c)) read_start(c);
}

static void conn_process(conn *c) {
    if (c->processing || c->h2 || !c->parser) return;
    irn_server *srv = c->srv;
    if (srv->cfg.h2c && !c->sniffed && c->in.len) {
        int r = sniff_preface(c);
        if (r < 0) {
            read_start(c);
            return;
        }
        c->sniffed = true;
        if (r > 0) return;
    }
    c->processing = true;
    size_t pos = 0, served = 0;
    while (!c->closing && !c->dead_input && !c->resp && (pos < c->in.len || c->kick)) {
        size_t used = 0;
        irn_h1_event ev = irn_h1_parser_feed(c->parser, c->in.data + pos, c->in.len - pos, &used);
        pos += used;
        c->kick = false;
        if (ev == IRN_H1_MORE) break;
        if (ev == IRN_H1_HEADERS) {
            irn_request *req = irn_h1_parser_request(c->parser);
            c->kick = true;
            if (req->chunked || req->content_length > 0)
                timer_set(c, T_BODY, srv->body_ms);
            else
                timer_stop(c);
            if (srv->cfg.on_headers) {
                int st = srv->cfg.on_headers(srv->cfg.ud, req);
                if (st) {
                    send_error(c, st >= 400 && st <= 599 ? st : 400, NULL, req);
                    break;
                }
            }
            if (req->expect_continue) {
                static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                uv_buf_t b = uv_buf_init((char *)cont, sizeof cont - 1);
                conn_write(c, &b, 1);
            }
        } else if (ev == IRN_H1_REQUEST) {
            irn_request *req = irn_h1_parser_take(c->parser);
            uint8_t settings[512];
            size_t slen = 0;
            if (srv->cfg.h2c && wants_upgrade(c, req, settings, &slen)) {
                ir_buf_consume(&c->in, pos);
                c->processing = false;
                do_upgrade(c, req, settings, slen);
                return;
            }
            dispatch(c, req);
            if (++served >= H1_PER_TURN && !c->resp) {
                more_later(c); /* answered at once, and more may be pipelined */
                break;
            }
        } else {
            const char *msg = NULL;
            int st = irn_h1_parser_error(c->parser, &msg);
            send_error(c, st, msg, irn_h1_parser_request(c->parser));
            break;
        }
    }
    ir_buf_consume(&c->in, pos);
    c->processing = false;
    if (c->closing || c->dead_input) return;
    if (!c->resp) {
        if (srv->closing && irn_h1_parser_idle(c->parser) && c->in.len == 0) {
            conn_finish(c);
            return;
        }
        conn_await(c);
        return;
    }
    if (c->in.len < in_cap(c)) read_start(c);
}

/* ---- responses ----------------------------------------------------------------- */

static int h1_resp_start(irn_resp *resp, int status, const irn_header *headers, size_t nheaders,
                         int64_t content_length) {
    conn *c = resp->c;
    if (!c || c->closing) {
        resp->state = IRN__RESP_STARTED;
        return IRN_ECLOSED;
    }
    irn_request *req = resp->req;
    bool close = !req->keep_alive || c->srv->closing;
    bool http10 = req->http_major == 1 && req->http_minor == 0;
    /* Held back: the head leaves with the first body bytes (or at the end), one
     * write instead of two. Built in place: a recycled response keeps its buffer. */
    ir_buf *head = &resp->head;
    ir_buf_rearm(head, c->srv->lim.max_header_bytes + 4096, SIZE_MAX);
    (void)ir_buf_reserve(head, 512); /* a hint: one allocation for a typical head */
    int rc = ir_buf_append_lit(head, "HTTP/1.1 ") || ir_buf_append_uint(head, (uint64_t)status) ||
             ir_buf_append_lit(head, " ") || ir_buf_append_str(head, irn_status_reason(status)) ||
             ir_buf_append_lit(head, "\r\n");
    for (size_t i = 0; rc == 0 && i < nheaders; i++) {
        const irn_header *h = &headers[i];
        size_t nl = h->name_len ? h->name_len : strlen(h->name);
        size_t vl = h->value_len ? h->value_len : strlen(h->value);
        if (!nl || irn__bad_text(h->name, nl, true) || irn__bad_text(h->value, vl, true)) {
            ir_buf_reset(head);
            return IRN_EINVAL;
        }
        if (irn__streq_ci(h->name, nl, "content-length") ||
            irn__streq_ci(h->name, nl, "transfer-encoding"))
            continue;
        if (irn__streq_ci(h->name, nl, "connection")) {
            if (irn__has_token(h->value, vl, "close")) close = true;
            continue;
        }
        rc = ir_buf_append(head, h->name, nl) || ir_buf_append(head, ": ", 2) ||
             ir_buf_append(head, h->value, vl) || ir_buf_append(head, "\r\n", 2);
    }
    bool is_head = strcmp(req->method, "HEAD") == 0;
    bool bodyless_status = status < 200 || status == 204 || status == 304;
    resp->no_body = is_head || bodyless_status;
    if (bodyless_status) {
        /* no framing headers at all */
    } else if (content_length >= 0) {
        rc |= ir_buf_append_lit(head, "Content-Length: ") ||
              ir_buf_append_uint(head, (uint64_t)content_length) || ir_buf_append_lit(head, "\r\n");
    } else if (!is_head) {
        if (http10) {
            resp->eof_framed = true;
            close = true;
        } else {
            resp->chunked = true;
            rc |= ir_buf_append_str(head, "Transfer-Encoding: chunked\r\n");
        }
    }
    if (close)
        rc |= ir_buf_append_str(head, "Connection: close\r\n");
    else if (http10)
        rc |= ir_buf_append_str(head, "Connection: keep-alive\r\n");
    rc |= ir_buf_append(head, "\r\n", 2);
    if (rc != 0) {
        ir_buf_reset(head);
        return IRN_ENOMEM;
    }
    resp->content_length = bodyless_status ? -1 : content_length;
    resp->close_after = close;
    resp->state = IRN__RESP_STARTED;
    return 0;
}

/* Writes parts, preceded by the held-back head when there is one. */
static int resp_write_parts(irn_resp *resp, uv_buf_t *parts, int nparts) {
    conn *c = resp->c;
    if (resp->head.len == 0) return conn_write(c, parts, nparts);
    uv_buf_t all[8];
    all[0] = uv_buf_init(resp->head.data, (unsigned)resp->head.len);
    for (int i = 0; i < nparts && i < 7; i++) all[i + 1] = parts[i];
    int rc = conn_write(c, all, nparts + 1);
    ir_buf_reset(&resp->head); /* sent (conn_write copies what the socket did not take) */
    return rc;
}

static int64_t h1_resp_write(irn_resp *resp, const void *data, size_t len, bool last) {
    if (!resp || resp->state != IRN__RESP_STARTED) return IRN_EINVAL;
    conn *c = resp->c;
    if (!c || c->closing || resp->aborted) return IRN_ECLOSED;
    if (resp->no_body || len == 0) return (int64_t)c->queued;
    if (resp->content_length >= 0 && resp->written + len > (uint64_t)resp->content_length)
        return IRN_EINVAL;
    if (c->queued >= resp->maxq) return IRN_ENOBUFS;
    int rc;
    if (resp->chunked) {
        char hdr[24]; /* the chunk size in hex, then CRLF */
        int hn = 0;
        for (int sh = 60; sh >= 0; sh -= 4)
            if ((len >> sh) || hn || !sh) hdr[hn++] = "0123456789abcdef"[(len >> sh) & 15];
        hdr[hn++] = '\r';
        hdr[hn++] = '\n';
        uv_buf_t parts[4] = {uv_buf_init(hdr, (unsigned)hn),
                             uv_buf_init((char *)data, (unsigned)len), uv_buf_init("\r\n", 2),
                             uv_buf_init("0\r\n\r\n", 5)};
        rc = resp_write_parts(resp, parts, last ? 4 : 3);
        if (rc == 0 && last) resp->term_written = true;
    } else {
        uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
        rc = resp_write_parts(resp, &b, 1);
    }
    if (rc != 0) return rc;
    resp->written += len;
    if (c->queued >= resp->high) resp->above_high = true;
    return (int64_t)c->queued;
}

static int h1_resp_end(irn_resp *resp) {
    conn *c = resp->c;
    int rc = 0;
    if (c && !c->closing && resp->state == IRN__RESP_NEW) {
        rc = irn__resp_default_500(resp);
        c = resp->c;
    }
    if (c) {
        c->resp = NULL;
        if (!c->closing) {
            if (resp->chunked && !resp->term_written) {
                uv_buf_t b = uv_buf_init("0\r\n\r\n", 5);
                rc = resp_write_parts(resp, &b, 1);
            } else if (resp->head.len) {
                rc = resp_write_parts(resp, NULL, 0);
            }
            bool short_body = !resp->no_body && resp->content_length >= 0 &&
                              resp->written < (uint64_t)resp->content_length;
            if (short_body) IR_WARN("net", "response shorter than its Content-Length; closing");
            if (c->closing) {
                /* the write failed */
            } else if (resp->close_after || resp->eof_framed || short_body || c->srv->closing) {
                conn_finish(c);
            } else if (!c->processing && (c->in.len || c->kick)) {
                timer_set(c, T_RESUME, 0); /* pipelined input: parse it from the loop */
            } else if (!c->processing) {
                conn_await(c); /* nothing buffered: no need for a trip through the loop */
            }
        }
    }
    irn__resp_release(resp);
    return rc;
}

static size_t h1_resp_queued(const irn_resp *resp) {
    return resp->c ? resp->c->queued : 0;
}
static int h1_resp_close(irn_resp *resp) {
    conn *c = resp->c;
    if (c) {
        c->resp = NULL; /* no on_abort: the handler chose this */
        if (!c->closing) conn_close(c);
    }
    irn__resp_release(resp);
    return 0;
}

static int h1_resp_send_head(irn_resp *resp) {
    if (resp->state != IRN__RESP_STARTED) return IRN_EINVAL;
    if (!resp->c || resp->c->closing || resp->aborted) return IRN_ECLOSED;
    return resp->head.len ? resp_write_parts(resp, NULL, 0) : 0;
}

const irn__resp_ops irn__h1_resp_ops = {
    .start = h1_resp_start,
    .write = h1_resp_write,
    .send_head = h1_resp_send_head,
    .end = h1_resp_end,
    .close = h1_resp_close,
    .queued = h1_resp_queued,
};

/* ---- accepting ------------------------------------------------------------------- */

static void accept_one(irn_server *srv);
static void pause_accepting(irn_server *srv, int status);

static void on_connection(uv_stream_t *ls, int status) {
    irn_server *srv = ls->data;
    if (status == UV_EMFILE || status == UV_ENFILE) {
        pause_accepting(srv, status);
        return;
    }
    if (status < 0) {
        IR_WARN("net", "accept: %s", uv_strerror(status));
        return;
    }
    if (srv->accepted >= ACCEPT_PER_TURN) {
        srv->accept_waiting = true; /* libuv stops watching the listener until uv_accept */
        return;
    }
    accept_one(srv);
}

/* After the poll phase: the next turn may accept ACCEPT_PER_TURN again, starting
 * with the connection left waiting, whose uv_accept lets libuv watch the listener
 * again. */
static void on_turn(uv_check_t *t) {
    irn_server *srv = t->data;
    srv->accepted = 0;
    srv->turn_cpu = 0;
    if (!srv->accept_waiting || srv->closing) return;
    srv->accept_waiting = false;
    accept_one(srv);
}

static void accept_one(irn_server *srv) {
    srv->accepted++;
    conn *c = calloc(1, sizeof *c);
    if (!c) {
        srv->accept_waiting = true; /* tried again next turn */
        return;
    }
    c->srv = srv;
    uv_tcp_init(srv->loop, &c->tcp);
    uv_timer_init(srv->loop, &c->timer);
    uv_timer_init(srv->loop, &c->ftimer);
    c->tcp.data = c;
    c->timer.data = c;
    c->ftimer.data = c;
    ir_buf_init(&c->in, 0);
    c->next = srv->conns;
    if (srv->conns) srv->conns->prev = c;
    srv->conns = c;
    srv->st.conns_active++;
    COUNT(srv, conns_active, add);
    if (uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)&c->tcp) != 0) {
        conn_close(c);
        return;
    }
    srv->st.conns_accepted++;
    COUNT(srv, conns_accepted, add);
    c->parser = irn_h1_parser_new(&srv->lim);
    if (c->parser) irn_h1_parser_set_cache(c->parser, srv->cfg.cache);
    if (!c->parser ||
        (srv->cfg.max_connections && srv->st.conns_active > srv->cfg.max_connections)) {
        conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    struct sockaddr_storage ss;
    int sl = sizeof ss;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &sl) == 0) {
        char ip[INET6_ADDRSTRLEN] = "";
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            uv_ip6_name(a, ip, sizeof ip);
            snprintf(c->peer, sizeof c->peer, "[%s]:%u", ip, ntohs(a->sin6_port));
        } else {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            uv_ip4_name(a, ip, sizeof ip);
            snprintf(c->peer, sizeof c->peer, "%s:%u", ip, ntohs(a->sin_port));
        }
    }
    timer_set(c, T_HEADER, srv->header_ms);
    read_start(c);
}

void irn_server_cfg_init(irn_server_cfg *cfg) {
    memset(cfg, 0, sizeof *cfg);
}

static int resolve_listen(const char *host, uint16_t port, struct sockaddr_storage *out) {
    struct sockaddr_storage ss;
    if (irn__addr_numeric(host, port, &ss) != 0) {
        struct addrinfo hints, *res = NULL;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE;
        if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res) return UV_EAI_NONAME;
        memset(&ss, 0, sizeof ss);
        memcpy(&ss, res->ai_addr, res->ai_addrlen);
        freeaddrinfo(res);
        if (ss.ss_family == AF_INET6)
            ((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
        else
            ((struct sockaddr_in *)&ss)->sin_port = htons(port);
    }
    *out = ss;
    return 0;
}

static socklen_t addr_len(const struct sockaddr_storage *ss) {
    return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* A bind without SO_REUSEPORT conflicts with every socket that listens on the
 * port, SO_REUSEPORT or not; SO_REUSEADDR only lets it past TIME_WAIT leftovers
 * and sockets that are bound without listening. */
int irn_listen_probe(const char *host, uint16_t port) {
    if (port == 0) return 0;
    struct sockaddr_storage ss;
    int rc = resolve_listen(host, port, &ss);
    if (rc) return rc;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int one = 1;
    rc = 0;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&ss, addr_len(&ss)) != 0)
        rc = -errno;
    close(fd);
    return rc;
}

static int bind_addr(const struct sockaddr_storage *ss, bool reuseport, int backlog, int *out_fd) {
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) ||
        bind(fd, (const struct sockaddr *)ss, addr_len(ss)) != 0 || listen(fd, backlog) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    *out_fd = fd;
    return 0;
}

/* The listener on fd (which it owns from now on, closed on failure). */
static int open_listener(irn_server *srv, int fd) {
    uv_tcp_init(srv->loop, &srv->listener);
    srv->listener.data = srv;
    int rc = uv_tcp_open(&srv->listener, fd);
    if (rc != 0) close(fd);
    if (rc == 0) rc = uv_listen((uv_stream_t *)&srv->listener, srv->cfg.backlog, on_connection);
    return rc; /* on failure the handle is initialised: the caller closes it */
}

/* ---- out of file descriptors ------------------------------------------------------
 * An accept that fails for want of a file descriptor fails again at once, and libuv
 * calls on_connection in a loop that never returns to the event loop (its spare
 * descriptor, when it has one, is taken by another thread of the process the moment it
 * frees it): the whole loop, admin port and SIGTERM included, would wait for nobody.
 * So the listener is closed, which ends libuv's loop, and bound again ACCEPT_PAUSE_MS
 * later (again and again while descriptors lack); clients meanwhile queue in other
 * workers' listeners or are refused. */
#define ACCEPT_PAUSE_MS 250
#define PAUSE_LOG_NS    (10ull * 1000000000ull)

static void on_listener_paused(uv_handle_t *h);
static void on_resume(uv_timer_t *t);

/* Closes the listener and tries to open it again ACCEPT_PAUSE_MS later. */
static void close_for_a_while(irn_server *srv) {
    srv->listener_down = false;
    uv_close((uv_handle_t *)&srv->listener, on_listener_paused);
    uv_timer_start(&srv->resume, on_resume, ACCEPT_PAUSE_MS, 0);
}

static void pause_accepting(irn_server *srv, int status) {
    if (srv->paused || srv->closing) return;
    srv->paused = true;
    srv->accept_waiting = false; /* nothing waits in a closed listener */
    srv->st.accept_pauses++;
    COUNT(srv, accept_pauses, add);
    uint64_t now = uv_hrtime();
    if (!srv->pause_logged_ns || now - srv->pause_logged_ns >= PAUSE_LOG_NS) {
        srv->pause_logged_ns = now;
        IR_WARN("net",
                "accept: %s: not accepting for %d ms (server.max_connections bounds what a worker "
                "holds; logged at most every 10 s)",
                uv_strerror(status), ACCEPT_PAUSE_MS);
    }
    close_for_a_while(srv);
}

static void on_listener_closed(uv_handle_t *h);

static void on_listener_paused(uv_handle_t *h) {
    irn_server *srv = h->data;
    srv->listener_down = true;
    if (srv->closing) on_listener_closed(h); /* irn_server_close came meanwhile */
}

static void on_resume(uv_timer_t *t) {
    irn_server *srv = t->data;
    if (srv->closing) return;
    int fd = -1;
    if (!srv->listener_down || bind_addr(&srv->addr, srv->cfg.reuseport, srv->cfg.backlog, &fd)) {
        uv_timer_start(&srv->resume, on_resume, ACCEPT_PAUSE_MS, 0); /* not yet */
        return;
    }
    if (open_listener(srv, fd) != 0) {
        close_for_a_while(srv); /* still paused */
        return;
    }
    srv->paused = false;
}

static void free_on_close(uv_handle_t *h) {
    free(h->data);
}

int irn_server_new(uv_loop_t *loop, const irn_server_cfg *cfg, irn_server **out) {
    *out = NULL;
    if (!loop || !cfg || !cfg->on_request) return IRN_EINVAL;
    irn_server *srv = calloc(1, sizeof *srv);
    if (!srv) return IRN_ENOMEM;
    srv->loop = loop;
    srv->cfg = *cfg;
    srv->cfg.host = NULL;
    irn_server_cfg *c = &srv->cfg;
    if (!c->backlog) c->backlog = 511;
    if (!c->header_timeout_ns) c->header_timeout_ns = 30ull * 1000000000;
    if (!c->body_timeout_ns) c->body_timeout_ns = 60ull * 1000000000;
    if (!c->write_high_water) c->write_high_water = 256 * 1024;
    if (!c->write_low_water) c->write_low_water = 64 * 1024;
    if (c->write_low_water > c->write_high_water) c->write_low_water = c->write_high_water;
    if (!c->max_write_queue) c->max_write_queue = 8u * 1024 * 1024;
    srv->lim =
        (irn_h1_limits){c->max_header_bytes, c->max_headers, c->max_body_bytes, c->max_arena_bytes};
    if (!srv->lim.max_header_bytes) srv->lim.max_header_bytes = 64 * 1024;
    srv->header_ms = irn__ns_to_ms(c->header_timeout_ns);
    srv->body_ms = irn__ns_to_ms(c->body_timeout_ns);
    int fd = -1;
    int rc = resolve_listen(cfg->host, cfg->port, &srv->addr);
    if (rc == 0) rc = bind_addr(&srv->addr, cfg->reuseport, c->backlog, &fd);
    if (rc != 0) {
        free(srv);
        return rc;
    }
    if ((rc = open_listener(srv, fd)) != 0) {
        /* The handle is initialised: its memory goes back through the loop. */
        uv_close((uv_handle_t *)&srv->listener, free_on_close);
        return rc;
    }
    struct sockaddr_storage ss;
    int sl = sizeof ss;
    if (uv_tcp_getsockname(&srv->listener, (struct sockaddr *)&ss, &sl) == 0) {
        srv->addr = ss; /* with the port bound, for a pause's bind again */
        srv->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
    }
    uv_timer_init(loop, &srv->resume); /* active only while paused: the loop waits for it */
    srv->resume.data = srv;
    uv_check_init(loop, &srv->turn);
    srv->turn.data = srv;
    uv_idle_init(loop, &srv->more);
    srv->more.data = srv;
    uv_check_start(&srv->turn, on_turn);
    uv_unref((uv_handle_t *)&srv->turn); /* the listener keeps the loop alive, not this */
    *out = srv;
    return 0;
}

int irn_server_port(const irn_server *srv) {
    return srv->port;
}

void irn_server_stats_get(const irn_server *srv, irn_server_stats *st) {
    *st = srv->st;
}

static void on_listener_closed(uv_handle_t *h) {
    irn_server *srv = h->data;
    srv->listener_closed = true;
    server_maybe_done(srv);
}

void irn_server_close(irn_server *srv, irn_close_cb cb, void *ud) {
    if (srv->closing) return;
    srv->closing = true;
    srv->close_cb = cb;
    srv->close_ud = ud;
    uv_timer_stop(&srv->resume);
    if (!srv->paused)
        uv_close((uv_handle_t *)&srv->listener, on_listener_closed);
    else if (srv->listener_down)
        on_listener_closed((uv_handle_t *)&srv->listener); /* else on_listener_paused does */
    for (conn *c = srv->conns; c; c = c->next) {
        if (c->closing || c->lingering) continue;
        if (c->h2)
            irn__h2s_shutdown(c->h2); /* GOAWAY; ends once its streams are done */
        else if (!c->resp && c->queued == 0 && c->in.len == 0 && c->parser &&
                 irn_h1_parser_idle(c->parser))
            conn_close(c);
    }
}

void irn_server_close_all(irn_server *srv) {
    for (conn *c = srv->conns; c; c = c->next) conn_close(c);
}
