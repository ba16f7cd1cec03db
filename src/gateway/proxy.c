/* proxy.c: a worker thread: its loop, listener and upstream pool, and the life
 * of one proxied request: route, choose, forward, stream back, retry. */
#include "gateway/gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct gw_worker {
    gw_app *app;
    uint32_t id;
    uv_loop_t loop;
    uv_thread_t thread;
    uv_async_t wake;
    uv_timer_t grace;
    irn_server *srv;
    irn_pool *pool;
    irn_cache *cache;  /* recycled net structs, for this loop */
    ir_freelist greqs; /* recycled gw_req */
    ir_rng rng;
    _Atomic uint64_t stop_grace_ns; /* set by gw_worker_stop, read on the loop */
    _Atomic int stop_requested;
    bool stopping, started;
    uint64_t live; /* requests in this worker */
    int port;
};

/* One client request through its attempts. Freed once the client response is
 * ended and no upstream request or timer refers to it. */
typedef struct gw_req {
    gw_worker *w;
    irn_request *req;
    irn_resp *resp; /* NULL once ended */
    const gw_model *model;
    const char *body;
    size_t body_len;
    ir_buf spliced; /* the body with `model` rewritten, when it was */
    char rid[160];
    uint64_t arrival, deadline;
    uint64_t prompt_tokens;
    int attempt;
    uint64_t tried[GW_MAX_REPLICAS / 64];
    gw_replica *rep; /* the replica of the current lease */
    const char *last_replica;
    bool lease_pending;
    irn_client *up;
    irn_header *fwd; /* headers for the engine, in the request's arena */
    size_t nfwd;
    uv_timer_t *timer;  /* backoff between attempts; NULL once closing */
    int timers_closing; /* closed timers whose close callback is still due */
    bool head_sent, client_gone, retry_on_done, paused;
    int last_status; /* the last retryable engine answer, for the final error */
    int status;      /* what the client got, for the access log */
    int last_err;
} gw_req;

static void attempt(gw_req *r);

void gw_unknown_model_message(const char *name, size_t len, char *out, size_t cap) {
    if (len <= GW_SHOWN_NAME) {
        snprintf(out, cap, "The model `%.*s` does not exist.", (int)len, name);
        return;
    }
    size_t cut = GW_SHOWN_NAME; /* at a character boundary */
    while (cut > 0 && ((unsigned char)name[cut] & 0xC0) == 0x80) cut--;
    snprintf(out, cap, "The model `%.*s\u2026` (%zu bytes) does not exist.", (int)cut, name, len);
}

enum { GW_KEEP_BYTES = 16 * 1024 + 1 }; /* splice buffer capacity a recycled gw_req keeps */

/* ---- small helpers ---------------------------------------------------------------------- */

bool gw_request_id_ok(const char *s) {
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.' || c == ':'))
            return false;
        if (n >= 128) return false;
    }
    return n > 0;
}

void gw_request_id_new(ir_rng *r, char out[33]) {
    static const char hx[] = "0123456789abcdef";
    for (int w = 0; w < 2; w++) { /* 128 random bits, 4 per digit, low bits first */
        uint64_t bits = ir_rng_next(r);
        for (int i = 0; i < 16; i++, bits >>= 4) out[w * 16 + i] = hx[bits & 15];
    }
    out[32] = '\0';
}

static bool is_hop_by_hop(const char *name, size_t n) {
#define H(s)                                                                                       \
    { s, sizeof s - 1 }
    static const struct {
        const char *s;
        size_t n;
    } hop[] = {H("connection"),
               H("keep-alive"),
               H("proxy-connection"),
               H("te"),
               H("trailer"),
               H("transfer-encoding"),
               H("upgrade"),
               H("proxy-authenticate"),
               H("proxy-authorization"),
               H("host"),
               H("content-length"),
               H("expect"),
               H("x-request-id"),
               H("http2-settings")};
#undef H
    for (size_t i = 0; i < IR_ARRAY_LEN(hop); i++)
        if (hop[i].n == n && strncasecmp(hop[i].s, name, n) == 0) return true;
    return false;
}

/* Whether a Connection header among hs[0..n) names `name` (RFC 9110 7.6.1: every
 * header it lists is hop-by-hop). */
static bool connection_names(const irn_header *hs, size_t n, const char *name, size_t len) {
    for (size_t i = 0; i < n; i++) {
        if (hs[i].name_len != 10 || strncasecmp(hs[i].name, "connection", 10) != 0) continue;
        const char *v = hs[i].value, *end = v + hs[i].value_len;
        while (v < end) {
            const char *comma = memchr(v, ',', (size_t)(end - v));
            const char *te = comma ? comma : end;
            while (v < te && (*v == ' ' || *v == '\t')) v++;
            const char *tb = te;
            while (tb > v && (tb[-1] == ' ' || tb[-1] == '\t')) tb--;
            if ((size_t)(tb - v) == len && strncasecmp(v, name, len) == 0) return true;
            v = comma ? comma + 1 : end;
        }
    }
    return false;
}

/* Whether a header stops at the gateway: hop-by-hop by RFC 9110 or named by Connection,
 * or one the gateway sets itself (host, content-length, expect, x-request-id). */
static bool not_forwarded(const irn_header *hs, size_t n, const irn_header *h) {
    return is_hop_by_hop(h->name, h->name_len) || connection_names(hs, n, h->name, h->name_len);
}

/* inferrail_responses_total: every answer the client port gives, by class. */
static void count_response(gw_stats *st, int status) {
    atomic_fetch_add_explicit(status >= 500   ? &st->responses_5xx
                              : status >= 400 ? &st->responses_4xx
                                              : &st->responses_2xx,
                              1, memory_order_relaxed);
}

static void send_error(gw_req *r, int status, const char *type, const char *msg,
                       const irn_header *extra, size_t nextra) {
    if (!r->resp) return;
    ir_buf b;
    ir_buf_init(&b, 1 << 16);
    irn_error_body(&b, status, type, msg);
    irn_header hs[8];
    size_t n = 0;
    hs[n++] = (irn_header){"x-request-id", 12, r->rid, strlen(r->rid)};
    for (size_t i = 0; i < nextra && n < 8; i++) hs[n++] = extra[i];
    irn_resp_send(r->resp, status, "application/json", b.data, b.len, hs, n);
    ir_buf_free(&b);
    r->resp = NULL;
    r->status = status;
    count_response(&r->w->app->stats, status);
}

static void req_maybe_free(gw_req *r) {
    if (r->resp || r->up || r->timer || r->timers_closing) return;
    if (r->w->app->cfg.logging.access_log)
        IR_INFO("access", "id=%s model=%s replica=%s status=%d attempts=%d ms=%.3f%s", r->rid,
                r->model ? r->model->cfg->name : "-", r->last_replica ? r->last_replica : "-",
                r->status, r->attempt, (double)(ir_now_ns() - r->arrival) / 1e6,
                r->client_gone ? " client_gone=1" : "");
    r->w->live--;
    if (r->spliced.cap <= GW_KEEP_BYTES && ir_freelist_push(&r->w->greqs, r)) return;
    ir_buf_free(&r->spliced);
    free(r);
}

/* Counts the client's leaving, once. */
static void mark_gone(gw_req *r) {
    if (r->client_gone) return;
    r->client_gone = true;
    atomic_fetch_add_explicit(&r->w->app->stats.client_disconnects, 1, memory_order_relaxed);
}

/* Whether the client left. on_abort is not the only news of it: once the net layer has
 * marked the response aborted (its connection closes in this loop iteration, a write got
 * IRN_ECLOSED), on_abort comes only later, from the close callback, and never if the
 * response is ended first. An upstream event in the same iteration would end it first
 * (libuv runs close callbacks last, newest first), so the gateway asks here. */
static bool client_left(gw_req *r) {
    if (!r->client_gone && r->resp && irn_resp_aborted(r->resp)) mark_gone(r);
    return r->client_gone;
}

static void end_client(gw_req *r) {
    if (!r->resp) return;
    irn_resp_end(r->resp);
    r->resp = NULL;
}

/* ---- the lease ------------------------------------------------------------------------- */

static void release(gw_req *r) {
    if (!r->rep) return;
    gw_lease_release(r->rep, r->lease_pending, r->prompt_tokens);
    r->rep = NULL;
    r->lease_pending = false;
}

/* Candidates come from the fleet (untried replicas first); a lease is taken on
 * the policy's choice, and a choice that lost a race for its last slot is
 * dropped and the policy asked again. */
static gw_replica *choose(gw_req *r, bool *fleet_full, bool *none_healthy) {
    gw_fleet *f = &r->w->app->fleet;
    uint64_t now = ir_now_ns();
    irp_candidate cand[GW_MAX_REPLICAS];
    *fleet_full = *none_healthy = false;
    for (int pass = 0; pass < 2; pass++) {
        size_t healthy = 0;
        size_t n = gw_fleet_candidates(f, r->model->index, now, pass == 0 ? r->tried : NULL, cand,
                                       &healthy);
        if (healthy == 0) {
            *none_healthy = true;
            return NULL;
        }
        irp_request q = {.prompt_tokens = r->prompt_tokens, .rng = &r->w->rng};
        while (n > 0) {
            size_t k = irp_choose(r->model->policy, &q, cand, n);
            gw_replica *rep = &f->replicas[cand[k].replica];
            if (gw_lease_take(rep, r->prompt_tokens)) return rep;
            cand[k] = cand[--n];
        }
    }
    *fleet_full = true;
    return NULL;
}

/* ---- upstream callbacks -------------------------------------------------------------------- */

static void on_drain(irn_resp *resp, void *ud) {
    gw_req *r = ud;
    if (r->paused && r->up) {
        r->paused = false;
        irn_client_resume(r->up);
    }
}

static void on_up_head(void *ud, int status, const irn_header *h, size_t n) {
    gw_req *r = ud;
    const gw_config *cfg = &r->w->app->cfg;
    if (client_left(r)) {
        irn_client_cancel(r->up); /* on_up_done ends the response */
        return;
    }
    if ((status == 502 || status == 503 || status == 504) && r->attempt < cfg->retry.max_attempts &&
        ir_now_ns() < r->deadline) {
        /* Nothing reached the client yet: try another replica. */
        r->last_status = status;
        r->retry_on_done = true;
        if (status != 503) gw_replica_failed(&r->w->app->fleet, r->rep, ir_now_ns());
        irn_client_cancel(r->up);
        return;
    }
    gw_lease_head(r->rep);
    r->lease_pending = false;
    if (!r->resp) return;
    irn_header *out = ir_arena_alloc(r->req->arena, (n + 4) * sizeof *out);
    size_t k = 0;
    int64_t cl = -1;
    for (size_t i = 0; out && i < n; i++) {
        if (h[i].name_len == 14 && strncasecmp(h[i].name, "content-length", 14) == 0) {
            cl = strtoll(h[i].value, NULL, 10);
            continue;
        }
        if (not_forwarded(h, n, &h[i])) continue;
        out[k++] = h[i];
    }
    if (!out) {
        irn_client_cancel(r->up);
        return;
    }
    out[k++] = (irn_header){"x-request-id", 12, r->rid, strlen(r->rid)};
    out[k++] = (irn_header){"x-inferrail-replica", 19, r->rep->cfg->id, strlen(r->rep->cfg->id)};
    r->head_sent = true;
    r->status = status;
    int rc = irn_resp_start(r->resp, status, out, k, cl);
    count_response(&r->w->app->stats, status);
    if (rc) irn_client_cancel(r->up);
}

static void on_up_body(void *ud, const char *data, size_t len) {
    gw_req *r = ud;
    if (!r->resp || r->client_gone) return;
    int64_t q = irn_resp_write(r->resp, data, len);
    if (q < 0) {
        if (q == IRN_ENOBUFS && !client_left(r)) {
            /* Its queue passed server.max_write_queue even though the engine is held at half
             * of it: the client is dropped, and the engine is not blamed for it. */
            IR_WARN("proxy", "request %s: the client reads too slowly; closing it", r->rid);
            irn_resp_close(r->resp);
            r->resp = NULL;
            mark_gone(r);
        }
        client_left(r); /* IRN_ECLOSED: gone, even if on_abort has not fired yet */
        irn_client_cancel(r->up);
        return;
    }
    if ((uint64_t)q >= r->w->app->cfg.server.max_write_queue / 2 && !r->paused) {
        /* The client reads slower than the engine writes: hold the engine. */
        r->paused = true;
        irn_client_pause(r->up);
    }
}

static bool retryable(int err) {
    return err == IRN_ECONNECT || err == IRN_ECONNECT_TIMEOUT || err == IRN_ECLOSED_EARLY ||
           err == IRN_ERESOLVE;
}

static void on_backoff(uv_timer_t *t);
static void on_timer_closed(uv_handle_t *h) {
    gw_req *r = h->data;
    free(h);
    r->timers_closing--;
    req_maybe_free(r);
}

/* The timer is done with as soon as it fires or the request ends: closing it is what
 * lets req_maybe_free free the request (a timer left open leaked every retried one). */
static void close_timer(gw_req *r) {
    if (!r->timer) return;
    uv_timer_stop(r->timer);
    uv_close((uv_handle_t *)r->timer, on_timer_closed);
    r->timer = NULL;
    r->timers_closing++;
}

/* Waits the backoff, then tries again; or answers when nothing is left. */
static void retry_or_fail(gw_req *r, int status, const char *msg) {
    const gw_config *cfg = &r->w->app->cfg;
    uint64_t now = ir_now_ns();
    if (client_left(r)) {
        end_client(r);
        return;
    }
    if (r->attempt >= cfg->retry.max_attempts || now >= r->deadline) {
        send_error(r, status, NULL, msg, NULL, 0);
        return;
    }
    atomic_fetch_add_explicit(&r->w->app->stats.retries, 1, memory_order_relaxed);
    uint64_t backoff = cfg->retry.backoff;
    for (int i = 1; i < r->attempt && backoff < cfg->retry.max_backoff; i++) backoff *= 2;
    if (backoff > cfg->retry.max_backoff) backoff = cfg->retry.max_backoff;
    if (now + backoff >= r->deadline) backoff = r->deadline > now ? r->deadline - now : 0;
    if (!r->timer) {
        r->timer = malloc(sizeof *r->timer);
        if (!r->timer) {
            send_error(r, 500, NULL, "out of memory", NULL, 0);
            return;
        }
        uv_timer_init(&r->w->loop, r->timer);
        r->timer->data = r;
    }
    uv_timer_start(r->timer, on_backoff, (backoff + 999999) / 1000000, 0);
}

static void on_backoff(uv_timer_t *t) {
    gw_req *r = t->data;
    close_timer(r);
    if (client_left(r)) {
        end_client(r);
        return;
    }
    attempt(r);
}

static void on_up_done(void *ud, int err) {
    gw_req *r = ud;
    r->up = NULL;
    gw_app *app = r->w->app;
    uint64_t now = ir_now_ns();
    client_left(r); /* before deciding: a failure caused by the client leaving is no engine's */
    if (r->retry_on_done) {
        r->retry_on_done = false;
        release(r);
        char msg[96];
        snprintf(msg, sizeof msg, "every attempt failed; the last replica answered %d",
                 r->last_status);
        retry_or_fail(r, r->last_status, msg);
        req_maybe_free(r);
        return;
    }
    if (err == 0) {
        gw_replica_succeeded(r->rep);
        release(r);
        end_client(r);
    } else if (r->client_gone) {
        release(r);
        end_client(r);
    } else if (!r->head_sent) {
        r->last_err = err;
        bool again = retryable(err);
        if (again || err == IRN_EHEAD_TIMEOUT) gw_replica_failed(&app->fleet, r->rep, now);
        atomic_fetch_add_explicit(&app->stats.upstream_errors, 1, memory_order_relaxed);
        IR_DEBUG("proxy", "request %s: replica %s failed: %s", r->rid, r->rep->cfg->id,
                 irn_strerror(err));
        release(r);
        if (again) {
            char msg[160];
            snprintf(msg, sizeof msg, "upstream failed: %s", irn_strerror(err));
            retry_or_fail(r, 502, msg);
        } else if (err == IRN_EHEAD_TIMEOUT) {
            send_error(r, 504, NULL, "the engine did not answer in time", NULL, 0);
        } else {
            char msg[160];
            snprintf(msg, sizeof msg, "upstream failed: %s", irn_strerror(err));
            send_error(r, 502, NULL, msg, NULL, 0);
        }
    } else {
        /* The response broke after it started: it is never replayed; the
         * client sees the connection end without a clean finish. */
        atomic_fetch_add_explicit(&app->stats.upstream_errors, 1, memory_order_relaxed);
        release(r);
        if (r->resp) {
            irn_resp_close(r->resp);
            r->resp = NULL;
        }
    }
    req_maybe_free(r);
}

static const irn_client_cbs up_cbs = {on_up_head, on_up_body, on_up_done};

static void on_client_gone(irn_resp *resp, void *ud) {
    gw_req *r = ud;
    mark_gone(r);
    if (r->up) {
        irn_client_cancel(r->up); /* the engine sees the close and frees the slot */
        return;                   /* on_up_done ends the response */
    }
    if (r->timer) close_timer(r);
    end_client(r);
    req_maybe_free(r);
}

/* ---- attempts -------------------------------------------------------------------------------- */

static void attempt(gw_req *r) {
    gw_app *app = r->w->app;
    const gw_config *cfg = &app->cfg;
    uint64_t now = ir_now_ns();
    if (now >= r->deadline) {
        send_error(r, 504, NULL, "request_timeout passed before an engine answered", NULL, 0);
        close_timer(r);
        req_maybe_free(r);
        return;
    }
    bool full, none;
    gw_replica *rep = choose(r, &full, &none);
    if (!rep) {
        irn_header ra = {"retry-after", 11, "1", 1};
        if (none)
            send_error(r, 503, NULL, "no healthy replica serves this model", &ra, 1);
        else {
            atomic_fetch_add_explicit(&app->stats.rejected_full, 1, memory_order_relaxed);
            send_error(r, 503, NULL, "every replica of this model is at capacity", &ra, 1);
        }
        close_timer(r);
        req_maybe_free(r);
        return;
    }
    r->attempt++;
    r->rep = rep;
    r->last_replica = rep->cfg->id;
    r->lease_pending = true;
    r->tried[rep->index / 64] |= 1ull << (rep->index % 64);
    /* The replica's base path, then the client's target whole (query included). */
    size_t bl = strlen(rep->url.path), tl = strlen(r->req->target);
    char *path = ir_arena_alloc(r->req->arena, bl + tl + 1);
    if (path) {
        memcpy(path, rep->url.path, bl);
        memcpy(path + bl, r->req->target, tl + 1);
    }
    uint64_t left = r->deadline - now;
    uint64_t head = cfg->upstream.response_timeout < left ? cfg->upstream.response_timeout : left;
    irn_client_req q = {.host = rep->url.host,
                        .port = rep->url.port,
                        .method = r->req->method,
                        .path = path,
                        .headers = r->fwd,
                        .nheaders = r->nfwd,
                        .body = r->body,
                        .body_len = r->body_len,
                        .connect_timeout_ns = cfg->upstream.connect_timeout,
                        .head_timeout_ns = head,
                        .idle_timeout_ns = cfg->upstream.idle_timeout};
    int rc = path ? irn_client_request(r->w->pool, &q, &up_cbs, r, &r->up) : IRN_ENOMEM;
    if (rc) {
        r->up = NULL;
        release(r);
        send_error(r, 502, NULL, "cannot start the upstream request", NULL, 0);
        close_timer(r);
        req_maybe_free(r);
    }
}

/* ---- the request handler ----------------------------------------------------------------------
 */

static void answer_local(gw_worker *w, irn_request *req, irn_resp *resp, const irn_header *rid) {
    if (strcmp(req->path, "/health") == 0) {
        irn_resp_send(resp, 200, NULL, "", 0, rid, 1);
        return;
    }
    ir_buf b;
    ir_buf_init(&b, 0);
    gw_cards_render(w->app->cards, &b);
    irn_resp_send(resp, 200, "application/json", b.data, b.len, rid, 1);
    ir_buf_free(&b);
}

typedef enum { ROUTE_NONE, ROUTE_PROXY, ROUTE_LOCAL, ROUTE_BAD_METHOD } route_kind;

static route_kind route_of(const irn_request *req, const char **allow) {
    const char *p = req->path;
    bool proxy = strcmp(p, "/v1/chat/completions") == 0 || strcmp(p, "/v1/completions") == 0;
    bool local = strcmp(p, "/v1/models") == 0 || strcmp(p, "/health") == 0;
    if (proxy) {
        *allow = "POST";
        return strcmp(req->method, "POST") == 0 ? ROUTE_PROXY : ROUTE_BAD_METHOD;
    }
    if (local) {
        *allow = "GET, HEAD";
        return strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0
                   ? ROUTE_LOCAL
                   : ROUTE_BAD_METHOD;
    }
    return ROUTE_NONE;
}

/* The id a response carries: the client's x-request-id when well formed, else a new
 * one. req is NULL for a request the server could not read. */
static void request_id(gw_worker *w, const irn_request *req, char *out, size_t n) {
    const char *crid = req ? irn_request_header(req, "x-request-id") : NULL;
    if (crid && gw_request_id_ok(crid))
        snprintf(out, n, "%s", crid);
    else
        gw_request_id_new(&w->rng, out);
}

/* Dresses an answer the gateway gives without an engine: the request id, and for a
 * route it does not have, vLLM's 404/405 type and message and Allow. on_request and
 * the server's own answers (on_error: headers-stage rejections, 400, 408, 413, 431)
 * both come here, so the two look alike. */
static void dress_answer(gw_worker *w, const irn_request *req, irn_error_answer *e) {
    request_id(w, req, e->buf, sizeof e->buf);
    e->headers[e->nheaders++] = (irn_header){"x-request-id", 12, e->buf, strlen(e->buf)};
    const char *allow = NULL;
    route_kind k = req ? route_of(req, &allow) : ROUTE_NONE;
    if (req && k == ROUTE_NONE && e->status == 404) {
        e->type = e->message = "Not Found";
    } else if (req && k == ROUTE_BAD_METHOD && e->status == 405) {
        e->type = e->message = "Method Not Allowed";
        e->headers[e->nheaders++] = (irn_header){"allow", 5, allow, strlen(allow)};
    }
}

/* The server answers by itself (headers-stage rejections, 400, 408, 413, 431): the
 * request never reaches on_request, so it is counted here. */
static void on_error(void *ud, const irn_request *req, irn_error_answer *e) {
    gw_worker *w = ud;
    atomic_fetch_add_explicit(&w->app->stats.requests, 1, memory_order_relaxed);
    count_response(&w->app->stats, e->status);
    dress_answer(w, req, e);
}

/* Rejections decided by the headers alone are answered before any body is read
 * (and before 100 Continue is sent); the server's answer goes through on_error. */
static int on_headers(void *ud, irn_request *req) {
    /* Without Expect: 100-continue the body is on its way anyway: on_request
     * answers, the same way, and the connection stays open. */
    if (!req->expect_continue) return 0;
    const char *allow;
    route_kind k = route_of(req, &allow);
    if (k == ROUTE_NONE) return 404;
    if (k == ROUTE_BAD_METHOD) return 405;
    return 0;
}

static int splice_model(gw_req *r, const ir_json_span *sp, bool found, const char *name) {
    size_t most = r->req->body.len + strlen(name) * 6 + 32; /* every byte of name escaped */
    ir_buf_rearm(&r->spliced, most, GW_KEEP_BYTES);
    (void)ir_buf_reserve(&r->spliced, most); /* one allocation, none when recycled */
    if (gw_splice_model(r->req->body.data ? r->req->body.data : "", r->req->body.len, sp, found,
                        name, &r->spliced))
        return -1;
    r->body = r->spliced.data;
    r->body_len = r->spliced.len;
    return 0;
}

static void on_request(void *ud, irn_request *req, irn_resp *resp) {
    gw_worker *w = ud;
    gw_app *app = w->app;
    atomic_fetch_add_explicit(&app->stats.requests, 1, memory_order_relaxed);
    const char *allow = NULL;
    route_kind k = route_of(req, &allow);
    if (k != ROUTE_PROXY) {
        /* Every response carries a request id, local ones too (headers[0]). */
        irn_error_answer e = {.status = k == ROUTE_NONE ? 404 : k == ROUTE_BAD_METHOD ? 405 : 200};
        dress_answer(w, req, &e);
        count_response(&app->stats, e.status);
        if (k == ROUTE_LOCAL) {
            answer_local(w, req, resp, e.headers);
            return;
        }
        ir_buf b;
        ir_buf_init(&b, 0);
        irn_error_body(&b, e.status, e.type, e.message);
        irn_resp_send(resp, e.status, "application/json", b.data, b.len, e.headers, e.nheaders);
        ir_buf_free(&b);
        return;
    }
    gw_req *r = ir_freelist_pop(&w->greqs);
    if (r) { /* recycled: keeps the splice buffer's memory */
        ir_buf spliced = r->spliced;
        memset(r, 0, sizeof *r);
        r->spliced = spliced;
    } else {
        r = calloc(1, sizeof *r);
    }
    if (!r) {
        irn_resp_send_error(resp, 500, NULL, "out of memory");
        return;
    }
    w->live++;
    r->w = w;
    r->req = req;
    r->resp = resp;
    r->arrival = ir_now_ns();
    r->deadline = r->arrival + app->cfg.server.request_timeout;
    request_id(w, req, r->rid, sizeof r->rid);
    irn_resp_on_abort(resp, on_client_gone, r);
    irn_resp_on_drain(resp, on_drain, r);

    if (app->cfg.logging.log_prompts)
        IR_DEBUG("proxy", "request %s body: %.*s", r->rid, (int)IR_MIN(req->body.len, 65536),
                 req->body.data ? req->body.data : "");
    /* Only `model` is read, by a scanner that follows JSON's rules. */
    ir_json_span sp;
    int found =
        ir_json_scan_key(req->body.data ? req->body.data : "", req->body.len, "model", &sp, 256);
    if (found == IR_JSON_INVALID) {
        send_error(r, 400, NULL, "The request body is not a valid JSON object.", NULL, 0);
        req_maybe_free(r);
        return;
    }
    r->body = req->body.data ? req->body.data : "";
    r->body_len = req->body.len;
    const gw_model *m = NULL;
    if (found == IR_JSON_FOUND && sp.is_string) {
        ir_buf name; /* decoded, never longer than the token */
        ir_buf_init(&name, sp.end - sp.start + 1);
        if (ir_json_unescape(req->body.data + sp.start, sp.end - sp.start, &name) == 0)
            m = gw_fleet_model(&app->fleet, name.data ? name.data : "", name.len);
        if (!m) {
            char msg[GW_SHOWN_NAME + 96];
            gw_unknown_model_message(name.data ? name.data : "", name.len, msg, sizeof msg);
            send_error(r, 404, "NotFoundError", msg, NULL, 0);
            ir_buf_free(&name);
            req_maybe_free(r);
            return;
        }
        bool alias = strlen(m->cfg->name) != name.len || memcmp(m->cfg->name, name.data, name.len);
        ir_buf_free(&name);
        if (alias && splice_model(r, &sp, true, m->cfg->name)) {
            send_error(r, 413, NULL, "The request body is too large.", NULL, 0);
            req_maybe_free(r);
            return;
        }
    } else if (found == IR_JSON_ABSENT ||
               (found == IR_JSON_FOUND && !sp.is_string && sp.end - sp.start == 4 &&
                memcmp(req->body.data + sp.start, "null", 4) == 0)) {
        if (app->fleet.nmodels != 1) {
            send_error(r, 400, NULL, "`model` is required: this gateway serves several models.",
                       NULL, 0);
            req_maybe_free(r);
            return;
        }
        m = &app->fleet.models[0];
        if (splice_model(r, &sp, found == IR_JSON_FOUND, m->cfg->name)) {
            send_error(r, 413, NULL, "The request body is too large.", NULL, 0);
            req_maybe_free(r);
            return;
        }
    } else {
        send_error(r, 400, NULL, "`model` must be a string.", NULL, 0);
        req_maybe_free(r);
        return;
    }
    r->model = m;
    r->prompt_tokens = r->body_len / 4; /* until a tokenizer exists */
    /* Headers for the engine: the client's, less hop-by-hop ones, plus the request id. */
    r->fwd = ir_arena_alloc(req->arena, (req->nheaders + 2) * sizeof *r->fwd);
    if (!r->fwd) {
        send_error(r, 431, NULL, "Request headers too large.", NULL, 0);
        req_maybe_free(r);
        return;
    }
    for (size_t i = 0; i < req->nheaders; i++) {
        const irn_header *h = &req->headers[i];
        if (!not_forwarded(req->headers, req->nheaders, h)) r->fwd[r->nfwd++] = *h;
    }
    r->fwd[r->nfwd++] = (irn_header){"x-request-id", 12, r->rid, strlen(r->rid)};
    attempt(r);
}

/* ---- the worker thread -------------------------------------------------------------------------
 */

static void on_grace(uv_timer_t *t) {
    gw_worker *w = t->data;
    if (w->srv) irn_server_close_all(w->srv);
}

static void on_server_closed(void *ud) {
    gw_worker *w = ud;
    w->srv = NULL;
    uv_timer_stop(&w->grace);
    uv_close((uv_handle_t *)&w->grace, NULL);
    irn_pool_close(w->pool, NULL, NULL);
    w->pool = NULL;
    uv_close((uv_handle_t *)&w->wake, NULL);
}

static void on_wake(uv_async_t *a) {
    gw_worker *w = a->data;
    if (!atomic_load(&w->stop_requested) || w->stopping) return;
    w->stopping = true;
    uint64_t grace = atomic_load(&w->stop_grace_ns);
    uv_timer_start(&w->grace, on_grace, (grace + 999999) / 1000000, 0);
    irn_server_close(w->srv, on_server_closed, w);
}

static void worker_main(void *arg) {
    gw_worker *w = arg;
    if (w->app->cfg.server.busy_poll) {
        /* Never block in epoll: a sleeping thread costs a wakeup per event, which a VM makes
         * expensive. Returns once the loop has nothing left, as UV_RUN_DEFAULT would. */
        while (uv_run(&w->loop, UV_RUN_NOWAIT)) continue;
        return;
    }
    uv_run(&w->loop, UV_RUN_DEFAULT);
}

gw_worker *gw_worker_new(gw_app *app, uint32_t id) {
    gw_worker *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->app = app;
    w->id = id;
    uint64_t seed = app->cfg.routing.seed ? (uint64_t)app->cfg.routing.seed : ir_now_ns();
    ir_rng_seed(&w->rng, seed * 0x9E3779B97F4A7C15ull + id);
    ir_freelist_init(&w->greqs, 256);
    w->cache = irn_cache_new();
    if (!w->cache || uv_loop_init(&w->loop)) {
        irn_cache_free(w->cache);
        free(w);
        return NULL;
    }
    return w;
}

int gw_worker_start(gw_worker *w) {
    gw_app *app = w->app;
    const gw_config *c = &app->cfg;
    irn_server_cfg sc;
    irn_server_cfg_init(&sc);
    sc.host = app->listen_host;
    sc.port = app->listen_port;
    sc.reuseport = true;
    sc.backlog = 4096;
    sc.max_header_bytes = c->server.max_header_bytes;
    sc.max_headers = (size_t)c->server.max_headers;
    sc.max_body_bytes = c->server.max_body_bytes;
    sc.header_timeout_ns = c->server.header_read_timeout;
    sc.body_timeout_ns = c->server.request_timeout;
    sc.max_write_queue = c->server.max_write_queue;
    sc.write_high_water = c->server.max_write_queue / 2;
    sc.write_low_water = c->server.max_write_queue / 8;
    sc.max_connections = (size_t)c->server.max_connections;
    sc.h2c = true; /* clients may speak h2c: prior knowledge or Upgrade */
    sc.on_headers = on_headers;
    sc.on_request = on_request;
    sc.on_error = on_error;
    sc.ud = w;
    sc.cache = w->cache;
    int rc = irn_server_new(&w->loop, &sc, &w->srv);
    if (rc) return rc;
    w->port = irn_server_port(w->srv);
    irn_pool_cfg pc;
    irn_pool_cfg_init(&pc);
    pc.max_idle_per_host = (size_t)c->upstream.max_idle_per_replica;
    pc.idle_timeout_ns = c->upstream.keepalive_timeout;
    pc.http2 = c->upstream.http2;
    pc.cache = w->cache;
    w->pool = irn_pool_new(&w->loop, &pc);
    uv_async_init(&w->loop, &w->wake, on_wake);
    w->wake.data = w;
    uv_timer_init(&w->loop, &w->grace);
    w->grace.data = w;
    rc = uv_thread_create(&w->thread, worker_main, w);
    if (rc == 0) w->started = true;
    return rc;
}

int gw_worker_port(const gw_worker *w) {
    return w->port;
}

void gw_worker_stop(gw_worker *w, uint64_t grace_ns) {
    atomic_store(&w->stop_grace_ns, grace_ns);
    atomic_store(&w->stop_requested, 1);
    uv_async_send(&w->wake);
}

void gw_worker_join(gw_worker *w) {
    if (w->started) uv_thread_join(&w->thread);
    w->started = false;
}

void gw_worker_free(gw_worker *w) {
    if (!w) return;
    uv_loop_close(&w->loop);
    irn_cache_free(w->cache); /* the loop has ended: nothing refers to it */
    gw_req *r;
    while ((r = ir_freelist_pop(&w->greqs))) {
        ir_buf_free(&r->spliced);
        free(r);
    }
    free(w);
}
