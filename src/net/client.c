/* client.c: the HTTP/1.1 client and its per-loop connection pool.
 *
 * A request owns at most one connection at a time. Every failure travels one
 * road: the connection is closed, and its close callback delivers on_done, so
 * on_done never fires from inside an API call. */
#include "net/net_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct cconn cconn;
typedef struct phost phost;

/* One host:port the pool has connections to, with its idle ones. An entry
 * lives while any connection (busy or idle) points at it, so requests to a
 * busy upstream neither allocate nor free one. */
struct phost {
    phost *hnext; /* hash bucket chain */
    cconn *idle;  /* idle connections, most recently used first */
    size_t nidle;
    size_t nconns; /* connections pointing here */
    uint32_t hash;
    uint16_t port;
    size_t hlen;
    char host[]; /* NUL-terminated */
};

struct irn_pool {
    uv_loop_t *loop;
    irn_pool_cfg cfg;
    uint64_t idle_ms;
    uv_timer_t anchor; /* makes the close callback asynchronous */
    cconn *all;        /* every connection not yet freed */
    /* Hash table of host entries, nbuckets a power of two. Not core's ir_map: with
     * it (a key of port + host built per lookup) the gateway ran 42 more
     * instructions per proxied request (bench/gateway/instructions.sh, 16,825
     * against 16,783). */
    phost **hosts;
    size_t nbuckets, nhosts;
    irn_pool_stats st;
    bool closing;
    bool anchor_closed;
    irn_close_cb close_cb;
    void *close_ud;
    irn__h2c_pool *h2; /* cfg.http2: requests go there */
    char readbuf[IRN__READ_BUF_SIZE];
};

typedef enum { CS_RESOLVING, CS_CONNECTING, CS_ACTIVE, CS_IDLE } cstate;
/* CT_KICK: deliver held bytes from the loop after a resume. */
typedef enum { CT_NONE, CT_CONNECT, CT_HEAD, CT_READ, CT_POOL, CT_KICK } ctimer;

struct cconn {
    irn_pool *pool;
    cconn *prev, *next;   /* pool->all */
    cconn *iprev, *inext; /* host->idle */
    uv_tcp_t tcp;
    uv_timer_t timer;
    irn__lazy tz; /* tk's deadline */
    uv_connect_t creq;
    uv_getaddrinfo_t gai;
    uv_write_t wreq;
    cstate st;
    ctimer tk;
    int nclosed;
    bool closing;
    bool gai_pending;
    bool reading;
    bool write_pending;
    bool reused;     /* the current request came from the pool */
    bool parse_held; /* llhttp stopped in on_body for a pause: a resume runs it on */
    irn_client *cl;
    irn__h1r rp; /* the response parser, restarted for each request */
    phost *host;
    /* Response bytes read but not parsed because the request paused (a pause
     * stops on_body at once, even inside one read); at most one read's worth. */
    ir_buf held;
};

static void conn_close(cconn *c);
static int connect_new(irn_client *cl);

/* ---- pool bookkeeping --------------------------------------------------------- */

static void pool_maybe_done(irn_pool *pool) {
    if (!pool->closing || pool->all || !pool->anchor_closed) return;
    if (pool->h2 && !irn__h2c_pool_empty(pool->h2)) return;
    irn_close_cb cb = pool->close_cb;
    void *ud = pool->close_ud;
    if (cb) cb(ud);
    irn__h2c_pool_free(pool->h2);
    free(pool->hosts); /* the entries went with the last connections */
    free(pool);
}

/* ---- host entries ------------------------------------------------------------- */

static uint32_t host_hash(const char *host, size_t hl, uint16_t port) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < hl; i++) h = (h ^ (unsigned char)host[i]) * 16777619u;
    h = (h ^ (port & 0xffu)) * 16777619u;
    return (h ^ (uint32_t)(port >> 8)) * 16777619u;
}

static phost *host_find(const irn_pool *pool, const char *host, size_t hl, uint16_t port,
                        uint32_t hash) {
    if (!pool->nbuckets) return NULL;
    for (phost *h = pool->hosts[hash & (pool->nbuckets - 1)]; h; h = h->hnext)
        if (h->hash == hash && h->port == port && h->hlen == hl && memcmp(h->host, host, hl) == 0)
            return h;
    return NULL;
}

static int hosts_grow(irn_pool *pool) {
    size_t n = pool->nbuckets ? pool->nbuckets * 2 : 8;
    phost **b = calloc(n, sizeof *b);
    if (!b) return -1;
    for (size_t i = 0; i < pool->nbuckets; i++) {
        for (phost *h = pool->hosts[i], *next; h; h = next) {
            next = h->hnext;
            h->hnext = b[h->hash & (n - 1)];
            b[h->hash & (n - 1)] = h;
        }
    }
    free(pool->hosts);
    pool->hosts = b;
    pool->nbuckets = n;
    return 0;
}

/* Finds or adds the entry for host:port and counts one more connection on it. */
static phost *host_ref(irn_pool *pool, const char *host, uint16_t port) {
    size_t hl = strlen(host);
    uint32_t hash = host_hash(host, hl, port);
    phost *h = host_find(pool, host, hl, port, hash);
    if (!h) {
        if (pool->nhosts >= pool->nbuckets && hosts_grow(pool) != 0) return NULL;
        h = calloc(1, sizeof *h + hl + 1);
        if (!h) return NULL;
        h->hash = hash;
        h->port = port;
        h->hlen = hl;
        memcpy(h->host, host, hl + 1);
        phost **slot = &pool->hosts[hash & (pool->nbuckets - 1)];
        h->hnext = *slot;
        *slot = h;
        pool->nhosts++;
    }
    h->nconns++;
    return h;
}

/* A connection to h is gone; the last one takes the entry with it. */
static void host_unref(irn_pool *pool, phost *h) {
    if (--h->nconns) return;
    phost **p = &pool->hosts[h->hash & (pool->nbuckets - 1)];
    while (*p != h) p = &(*p)->hnext;
    *p = h->hnext;
    pool->nhosts--;
    free(h);
}

static void idle_unlink(cconn *c) {
    if (c->st != CS_IDLE) return;
    phost *h = c->host;
    if (c->iprev)
        c->iprev->inext = c->inext;
    else
        h->idle = c->inext;
    if (c->inext) c->inext->iprev = c->iprev;
    c->iprev = c->inext = NULL;
    h->nidle--;
    c->pool->st.idle--;
    c->st = CS_ACTIVE;
}

static void client_finish(irn_client *cl, int err) {
    cl->conn = NULL;
    if (cl->cbs.on_done) cl->cbs.on_done(cl->ud, err);
    irn__client_release(cl);
}

/* ---- timers and reads ----------------------------------------------------------- */

static void on_ctimer(uv_timer_t *t);
static void deliver_held(cconn *c);

/* Lazy (irn__lazy): a busy connection moves between deadlines several times per
 * request, and each uv_timer_start/stop is a heap operation. */
static void ctimer_set(cconn *c, ctimer k, uint64_t ms) {
    c->tk = ms ? k : CT_NONE;
    if (ms) irn__lazy_set(&c->tz, &c->timer, on_ctimer, ms);
}

static void on_calloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
    cconn *c = h->data;
    *buf = uv_buf_init(c->pool->readbuf, sizeof c->pool->readbuf);
}

static void on_cread(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void cread_start(cconn *c) {
    if (c->reading || c->closing) return;
    if (uv_read_start((uv_stream_t *)&c->tcp, on_calloc, on_cread) == 0) c->reading = true;
}

static void cread_stop(cconn *c) {
    if (!c->reading) return;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = false;
}

/* Records the request's error (the first one wins) and closes. */
static void conn_fail(cconn *c, int err) {
    if (c->cl && !c->cl->err) c->cl->err = err;
    conn_close(c);
}

/* The connection died before the response completed. */
static void conn_broken(cconn *c) {
    irn_client *cl = c->cl;
    if (!cl || c->closing) {
        conn_close(c);
        return;
    }
    if (cl->got_bytes) {
        conn_fail(c, IRN_ECLOSED_MID);
        return;
    }
    if (c->reused && !cl->retried && !cl->canceled && !c->pool->closing) {
        /* A stale pooled connection: the server closed it while it idled. */
        cl->retried = true;
        c->cl = NULL;
        cl->conn = NULL;
        if (connect_new(cl) == 0) {
            c->pool->st.retries++;
            conn_close(c);
            return;
        }
        c->cl = cl;
        cl->conn = c;
    }
    conn_fail(c, IRN_ECLOSED_EARLY);
}

static void on_ctimer(uv_timer_t *t) {
    cconn *c = t->data;
    if (c->tk == CT_NONE) {
        c->tz.armed = 0; /* cleared since it was armed */
        return;
    }
    if (!irn__lazy_fired(&c->tz, t, on_ctimer)) return;
    ctimer k = c->tk;
    c->tk = CT_NONE;
    switch (k) {
    case CT_CONNECT:
        conn_fail(c, IRN_ECONNECT_TIMEOUT);
        break;
    case CT_HEAD:
        conn_fail(c, IRN_EHEAD_TIMEOUT);
        break;
    case CT_READ:
        conn_fail(c, IRN_EIDLE_TIMEOUT);
        break;
    case CT_POOL:
        conn_close(c);
        break;
    case CT_KICK:
        deliver_held(c);
        break;
    case CT_NONE:
        break;
    }
}

/* ---- response parsing -------------------------------------------------------------- */

/* The parser's callbacks (h1_response.c). The final head reaches on_head only
 * with the first body byte or the end of the response: a response whose framing
 * breaks before that (a bad chunk size, say) fails before its head, while
 * nothing of it can have reached anyone. Each returns false (or -1) when the
 * request went away in a callback. */
static bool resp_final(void *ud, int status) {
    cconn *c = ud;
    irn_client *cl = c->cl;
    (void)status;
    if (!cl || cl->canceled) return false;
    /* The head is in: from here the idle timer bounds the wait for each byte. */
    ctimer_set(c, cl->idle_ms ? CT_READ : CT_NONE, cl->idle_ms);
    return true;
}

static bool resp_head(void *ud, int status, const irn_header *headers, size_t n) {
    cconn *c = ud;
    irn_client *cl = c->cl;
    if (!cl || cl->canceled) return false;
    if (cl->cbs.on_head) cl->cbs.on_head(cl->ud, status, headers, n);
    return !c->closing && !cl->canceled;
}

static int resp_body(void *ud, const char *at, size_t len) {
    cconn *c = ud;
    irn_client *cl = c->cl;
    if (!cl || cl->canceled || c->closing) return -1;
    if (cl->cbs.on_body && len) cl->cbs.on_body(cl->ud, at, len);
    if (c->closing || cl->canceled) return -1;
    return cl->paused ? 1 : 0; /* the rest of the read waits in held */
}

static const irn__h1r_cbs resp_cbs = {
    .on_final = resp_final,
    .on_head = resp_head,
    .on_body = resp_body,
};

static void pool_put(cconn *c) {
    irn_pool *pool = c->pool;
    phost *h = c->host;
    if (pool->closing || h->nidle >= pool->cfg.max_idle_per_host) {
        conn_close(c);
        return;
    }
    c->st = CS_IDLE;
    c->iprev = NULL;
    c->inext = h->idle;
    if (h->idle) h->idle->iprev = c;
    h->idle = c;
    h->nidle++;
    pool->st.idle++;
    ctimer_set(c, CT_POOL, pool->idle_ms);
    cread_start(c); /* notices the server closing it */
}

/* The response is complete. */
static void conn_complete(cconn *c, bool reusable) {
    irn_client *cl = c->cl;
    c->cl = NULL;
    ctimer_set(c, CT_NONE, 0);
    if (reusable && !c->write_pending && !c->pool->closing)
        pool_put(c);
    else
        conn_close(c);
    client_finish(cl, 0);
}

/* Parses response bytes; what a pause leaves unparsed goes to held (data may be
 * held's own bytes). */
static void feed(cconn *c, const char *data, size_t n) {
    size_t used = 0;
    irn__h1r_ev ev = irn__h1r_feed(&c->rp, data, n, &used);
    if (c->closing) return; /* cancelled from a callback */
    bool from_held = data == c->held.data;
    switch (ev) {
    case IRN__H1R_DONE:
        if (from_held) ir_buf_reset(&c->held); /* pooled connections hold nothing */
        conn_complete(c, used == n && irn__h1r_keep_alive(&c->rp));
        return;
    case IRN__H1R_PAUSED: /* the request paused in on_body */
        c->parse_held = true;
        if (from_held)
            ir_buf_consume(&c->held, used);
        else if (used < n && ir_buf_append(&c->held, data + used, n - used) != 0)
            conn_fail(c, IRN_ENOMEM); /* cannot happen: held is empty and fits a read */
        return;
    case IRN__H1R_ERROR:
        if (from_held) ir_buf_reset(&c->held);
        IR_DEBUG("net", "%s:%u: bad response: %s", c->host->host, c->host->port, c->rp.why);
        conn_fail(c, IRN_EPARSE);
        return;
    case IRN__H1R_MORE:
        if (from_held) ir_buf_reset(&c->held);
        return;
    }
}

/* After a resume, from the loop: held bytes first, then the socket again. With
 * nothing held, llhttp still runs on from where the pause stopped it: the
 * pause may have come in the last body span, before the message's end. */
static void deliver_held(cconn *c) {
    irn_client *cl = c->cl;
    if (!cl || cl->paused) return;
    if (c->parse_held) {
        c->parse_held = false;
        feed(c, c->held.len ? c->held.data : "", c->held.len);
    }
    if (c->closing || c->cl != cl || cl->paused || c->held.len) return;
    cread_start(c);
    if (cl->idle_ms) ctimer_set(c, CT_READ, cl->idle_ms);
}

static void on_cread(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    cconn *c = s->data;
    if (c->closing || nread == 0) return;
    irn_client *cl = c->cl;
    if (c->st == CS_IDLE || !cl) {
        conn_close(c); /* EOF or stray bytes on an idle connection */
        return;
    }
    if (nread < 0) {
        if (nread == UV_EOF && irn__h1r_eof(&c->rp)) {
            conn_complete(c, false); /* a close-delimited body ended */
            return;
        }
        conn_broken(c);
        return;
    }
    cl->got_bytes = true;
    /* The head timer is a deadline for the whole head (1xx lines included): bytes
     * dribbled in do not move it. Without one, the idle timer runs between bytes. */
    if (cl->idle_ms && c->tk != CT_HEAD) ctimer_set(c, CT_READ, cl->idle_ms);
    feed(c, buf->base, (size_t)nread);
}

/* ---- connecting and sending ------------------------------------------------------------ */

static void on_cwrite(uv_write_t *w, int status) {
    cconn *c = w->handle->data;
    c->write_pending = false;
    if (c->closing || status == 0) return;
    /* With response bytes in, let the read side decide (a server may answer
     * early and close without reading the whole body). */
    if (!c->cl || !c->cl->got_bytes) conn_broken(c);
}

static void send_request(cconn *c) {
    irn_client *cl = c->cl;
    c->st = CS_ACTIVE;
    irn__h1r_start(&c->rp, cl->head_method);
    c->parse_held = false;
    ir_buf_reset(&c->held);
    uv_buf_t bufs[1 + IRN_MAX_BODY_PARTS];
    unsigned nb = 1 + cl->nbody;
    bufs[0] = uv_buf_init(cl->head.data, (unsigned)cl->head.len);
    for (unsigned i = 0; i < cl->nbody; i++)
        bufs[1 + i] = uv_buf_init((char *)cl->body[i].data, (unsigned)cl->body[i].len);
    /* Most requests fit the socket buffer: write them now, without a queued
     * write (whose completion costs libuv an epoll_ctl per request). */
    int w = uv_try_write((uv_stream_t *)&c->tcp, bufs, nb);
    if (w < 0 && w != UV_EAGAIN) {
        conn_broken(c);
        return;
    }
    size_t done = w > 0 ? (size_t)w : 0;
    for (unsigned i = 0; i < nb && done; i++) {
        size_t k = done < bufs[i].len ? done : bufs[i].len;
        bufs[i].base += k;
        bufs[i].len -= k;
        done -= k;
    }
    unsigned first = 0; /* the first buffer not written whole; none is empty */
    while (first < nb && !bufs[first].len) first++;
    if (first < nb) {
        c->write_pending = true;
        int r = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, bufs + first, nb - first, on_cwrite);
        if (r != 0) {
            c->write_pending = false;
            conn_broken(c);
            return;
        }
    }
    ctimer_set(c, CT_HEAD, cl->head_ms);
    if (!cl->paused) cread_start(c);
}

static void on_connect(uv_connect_t *req, int status) {
    cconn *c = req->handle->data;
    if (c->closing) return;
    if (status < 0) {
        IR_DEBUG("net", "connect %s:%u: %s", c->host->host, c->host->port, uv_strerror(status));
        conn_fail(c, IRN_ECONNECT);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    send_request(c);
}

static void do_connect(cconn *c, const struct sockaddr *sa) {
    c->st = CS_CONNECTING;
    if (uv_tcp_connect(&c->creq, &c->tcp, sa, on_connect) != 0) conn_fail(c, IRN_ECONNECT);
}

static void really_close(cconn *c);

static void on_gai(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
    cconn *c = req->data;
    c->gai_pending = false;
    if (c->closing) {
        uv_freeaddrinfo(res);
        really_close(c);
        return;
    }
    struct sockaddr_storage ss;
    int rc = irn__addrinfo_take(status, res, &ss);
    if (rc)
        conn_fail(c, rc);
    else
        do_connect(c, (struct sockaddr *)&ss);
}

static void on_cconn_closed(uv_handle_t *h) {
    cconn *c = h->data;
    if (++c->nclosed < 2) return;
    irn_pool *pool = c->pool;
    irn_client *cl = c->cl;
    if (c->prev)
        c->prev->next = c->next;
    else
        pool->all = c->next;
    if (c->next) c->next->prev = c->prev;
    host_unref(pool, c->host);
    irn__h1r_free(&c->rp);
    ir_buf_free(&c->held);
    free(c);
    if (cl) client_finish(cl, cl->err ? cl->err : IRN_ECLOSED_EARLY);
    pool_maybe_done(pool);
}

static void really_close(cconn *c) {
    uv_close((uv_handle_t *)&c->tcp, on_cconn_closed);
    uv_close((uv_handle_t *)&c->timer, on_cconn_closed);
}

static void conn_close(cconn *c) {
    if (c->closing) return;
    idle_unlink(c);
    c->closing = true;
    if (c->gai_pending) {
        uv_cancel((uv_req_t *)&c->gai); /* on_gai finishes the close */
        return;
    }
    really_close(c);
}

static cconn *conn_alloc(irn_pool *pool, const char *host, uint16_t port) {
    cconn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    if (irn__h1r_init(&c->rp, pool->cfg.max_header_bytes, pool->cfg.max_headers, &resp_cbs, c)) {
        free(c);
        return NULL;
    }
    c->host = host_ref(pool, host, port);
    if (!c->host) {
        irn__h1r_free(&c->rp);
        free(c);
        return NULL;
    }
    c->pool = pool;
    ir_buf_init(&c->held, IRN__READ_BUF_SIZE);
    uv_tcp_init(pool->loop, &c->tcp);
    uv_timer_init(pool->loop, &c->timer);
    c->tcp.data = c;
    c->timer.data = c;
    c->gai.data = c;
    c->next = pool->all;
    if (pool->all) pool->all->prev = c;
    pool->all = c;
    pool->st.conns_created++;
    return c;
}

/* Attaches a fresh connection to cl. Failures after allocation arrive later. */
static int connect_new(irn_client *cl) {
    cconn *c = conn_alloc(cl->pool, cl->host, cl->port);
    if (!c) return IRN_ENOMEM;
    c->cl = cl;
    cl->conn = c;
    ctimer_set(c, CT_CONNECT, cl->connect_ms);
    struct sockaddr_storage ss;
    int rc = irn__resolve(cl->pool->loop, &c->gai, on_gai, cl->host, cl->port, &ss);
    if (rc == 0) {
        do_connect(c, (struct sockaddr *)&ss);
    } else if (rc == 1) {
        c->st = CS_RESOLVING;
        c->gai_pending = true;
    } else {
        conn_fail(c, rc);
    }
    return 0;
}

/* ---- public API ----------------------------------------------------------------------- */

void irn_pool_cfg_init(irn_pool_cfg *cfg) {
    memset(cfg, 0, sizeof *cfg);
}

static void h2_empty(void *ud) {
    pool_maybe_done(ud);
}

irn_pool *irn_pool_new(uv_loop_t *loop, const irn_pool_cfg *cfg) {
    if (!loop) return NULL;
    irn_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return NULL;
    pool->loop = loop;
    if (cfg) pool->cfg = *cfg;
    if (!pool->cfg.max_idle_per_host) pool->cfg.max_idle_per_host = 16;
    if (!pool->cfg.idle_timeout_ns) pool->cfg.idle_timeout_ns = 30ull * 1000000000;
    if (!pool->cfg.max_header_bytes) pool->cfg.max_header_bytes = 64 * 1024;
    if (!pool->cfg.max_headers) pool->cfg.max_headers = 100;
    pool->idle_ms = irn__ns_to_ms(pool->cfg.idle_timeout_ns);
    if (pool->cfg.http2) {
        pool->h2 = irn__h2c_pool_new(loop, &pool->cfg, &pool->st, h2_empty, pool);
        if (!pool->h2) {
            free(pool);
            return NULL;
        }
    }
    uv_timer_init(loop, &pool->anchor);
    pool->anchor.data = pool;
    return pool;
}

void irn_pool_stats_get(const irn_pool *pool, irn_pool_stats *st) {
    *st = pool->st;
}

static void on_anchor_closed(uv_handle_t *h) {
    irn_pool *pool = h->data;
    pool->anchor_closed = true;
    pool_maybe_done(pool);
}

void irn_pool_close(irn_pool *pool, irn_close_cb cb, void *ud) {
    if (pool->closing) return;
    pool->closing = true;
    pool->close_cb = cb;
    pool->close_ud = ud;
    for (cconn *c = pool->all; c; c = c->next) {
        if (c->cl) {
            c->cl->canceled = true;
            c->cl->err = IRN_ECANCELED;
        }
        conn_close(c);
    }
    if (pool->h2) irn__h2c_pool_close(pool->h2);
    uv_close((uv_handle_t *)&pool->anchor, on_anchor_closed);
}

/* The body as parts (none empty), from req->body or req->body_parts. */
static int take_body(irn_client *cl, const irn_client_req *req) {
    const irn_part one = {req->body, req->body_len};
    const irn_part *p = req->body_parts ? req->body_parts : &one;
    size_t n = req->body_parts ? req->nbody_parts : req->body ? 1 : 0;
    if ((req->body && req->body_parts) || n > IRN_MAX_BODY_PARTS) return -1;
    cl->has_body = req->body || req->body_parts;
    for (size_t i = 0; i < n; i++) {
        if (!p[i].len) continue;
        if (!p[i].data) return -1;
        cl->body[cl->nbody++] = p[i];
        cl->body_len += p[i].len;
    }
    return 0;
}

int irn_client_request(irn_pool *pool, const irn_client_req *req, const irn_client_cbs *cbs,
                       void *ud, irn_client **out) {
    if (out) *out = NULL;
    if (!pool || !req || !cbs || !cbs->on_done || !req->host || !req->port) return IRN_EINVAL;
    if (pool->closing) return IRN_ESHUTDOWN;
    const char *method =
        req->method ? req->method : (req->body || req->body_parts ? "POST" : "GET");
    const char *path = req->path ? req->path : "/";
    size_t hl = strlen(req->host), ml = strlen(method), pl = strlen(path);
    if (!hl || hl >= sizeof((irn_client *)0)->host || irn__bad_text(req->host, hl, false) || !ml ||
        irn__bad_text(method, ml, false) || irn__bad_text(path, pl, false))
        return IRN_EINVAL;
    for (size_t i = 0; pool->h2 && i < req->nheaders; i++) {
        const irn_header *h = &req->headers[i];
        size_t nl = h->name_len ? h->name_len : strlen(h->name);
        size_t vl = h->value_len ? h->value_len : strlen(h->value);
        if (!nl || irn__bad_text(h->name, nl, false) || irn__bad_text(h->value, vl, true))
            return IRN_EINVAL;
    }
    irn_client *cl = irn__client_alloc(pool->cfg.cache, pool->cfg.max_header_bytes);
    if (!cl) return IRN_ENOMEM;
    cl->pool = pool;
    cl->cbs = *cbs;
    cl->ud = ud;
    if (take_body(cl, req) != 0) {
        irn__client_release(cl);
        return IRN_EINVAL;
    }
    memcpy(cl->host, req->host, hl + 1);
    cl->port = req->port;
    cl->head_method = strcasecmp(method, "HEAD") == 0;
    cl->connect_ms = irn__ns_to_ms(req->connect_timeout_ns);
    cl->head_ms = irn__ns_to_ms(req->head_timeout_ns);
    cl->idle_ms = irn__ns_to_ms(req->idle_timeout_ns);
    if (pool->h2) {
        int rc = irn__h2c_request(pool->h2, cl, method, path, req->headers, req->nheaders);
        if (rc != 0) {
            irn__client_release(cl);
            return rc;
        }
        pool->st.requests++;
        if (out) *out = cl;
        return 0;
    }
    /* Plain appends, no printf: this runs for every upstream request. */
    ir_buf *hd = &cl->head;
    (void)ir_buf_reserve(hd, 512); /* a hint: one allocation for a typical head */
    int rc = ir_buf_append(hd, method, ml) || ir_buf_append_lit(hd, " ") ||
             ir_buf_append(hd, path, pl) || ir_buf_append_lit(hd, " HTTP/1.1\r\n");
    if (!irn_headers_find(req->headers, req->nheaders, "host")) {
        rc |= ir_buf_append_lit(hd, "Host: ") ||
              irn__append_authority(hd, cl->host, hl, cl->port) || ir_buf_append_lit(hd, "\r\n");
    }
    for (size_t i = 0; rc == 0 && i < req->nheaders; i++) {
        const irn_header *h = &req->headers[i];
        size_t nl = h->name_len ? h->name_len : strlen(h->name);
        size_t vl = h->value_len ? h->value_len : strlen(h->value);
        if (!nl || irn__bad_text(h->name, nl, false) || irn__bad_text(h->value, vl, true)) rc = -1;
        if (rc || irn__streq_ci(h->name, nl, "content-length") ||
            irn__streq_ci(h->name, nl, "transfer-encoding"))
            continue;
        rc |= ir_buf_append(hd, h->name, nl) || ir_buf_append_lit(hd, ": ") ||
              ir_buf_append(hd, h->value, vl) || ir_buf_append_lit(hd, "\r\n");
    }
    bool wants_length = cl->has_body || strcasecmp(method, "POST") == 0 ||
                        strcasecmp(method, "PUT") == 0 || strcasecmp(method, "PATCH") == 0;
    if (wants_length)
        rc |= ir_buf_append_lit(hd, "Content-Length: ") || ir_buf_append_uint(hd, cl->body_len) ||
              ir_buf_append_lit(hd, "\r\n");
    rc |= ir_buf_append_lit(hd, "\r\n");
    if (rc != 0) {
        irn__client_release(cl);
        return IRN_EINVAL;
    }
    pool->st.requests++;
    phost *h = host_find(pool, cl->host, hl, cl->port, host_hash(cl->host, hl, cl->port));
    cconn *c = h ? h->idle : NULL;
    if (c) {
        idle_unlink(c);
        pool->st.conns_reused++;
        c->reused = true;
        c->cl = cl;
        cl->conn = c;
        ctimer_set(c, CT_NONE, 0);
        send_request(c);
    } else if ((rc = connect_new(cl)) != 0) {
        irn__client_release(cl);
        return rc;
    }
    if (out) *out = cl;
    return 0;
}

void irn_client_cancel(irn_client *cl) {
    if (!cl || cl->canceled) return;
    if (cl->pool->h2) {
        irn__h2c_cancel(cl);
        return;
    }
    cl->canceled = true;
    cl->err = IRN_ECANCELED;
    if (cl->conn) conn_close(cl->conn);
}

void irn_client_pause(irn_client *cl) {
    if (!cl || cl->paused) return;
    if (cl->pool->h2) {
        irn__h2c_pause(cl);
        return;
    }
    cl->paused = true;
    cconn *c = cl->conn;
    if (!c || c->closing || c->st != CS_ACTIVE) return;
    cread_stop(c);
    if (c->tk == CT_READ) ctimer_set(c, CT_NONE, 0);
}

void irn_client_resume(irn_client *cl) {
    if (!cl || !cl->paused) return;
    if (cl->pool->h2) {
        irn__h2c_resume(cl);
        return;
    }
    cl->paused = false;
    cconn *c = cl->conn;
    if (!c || c->closing || c->st != CS_ACTIVE) return;
    if (c->parse_held) { /* from the loop, not from inside the caller's callback */
        c->tk = CT_KICK;
        irn__lazy_set(&c->tz, &c->timer, on_ctimer, 0);
        return;
    }
    cread_start(c);
    if (cl->got_bytes && cl->idle_ms) ctimer_set(c, CT_READ, cl->idle_ms);
}

bool irn_client_got_bytes(const irn_client *cl) {
    return cl->got_bytes;
}
