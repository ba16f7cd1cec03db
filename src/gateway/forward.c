/* forward.c: stage 8, one attempt on one replica, and the next one after a backoff
 * when an attempt failed before any byte reached the client. */
#include "gateway/request.h"

#include <stdlib.h>
#include <string.h>

static void again(gw_req *r, int status, const char *msg);

/* No replica took the request. */
static void no_replica(gw_req *r, gw_choice why) {
    irn_header ra = {"retry-after", 11, "1", 1};
    if (why == GW_NONE_HEALTHY) {
        gw_req_fail_with(r, 503, NULL, "no healthy replica serves this model", &ra, 1);
        return;
    }
    atomic_fetch_add_explicit(&r->w->app->stats.rejected_full, 1, memory_order_relaxed);
    gw_req_fail_with(r, 503, NULL, "every replica of this model is at capacity", &ra, 1);
}

/* The replica's base path, then the client's target whole (query included). */
static char *upstream_path(gw_req *r) {
    const char *base = r->rep->url.path;
    size_t bl = strlen(base), tl = strlen(r->req->target);
    char *path = ir_arena_alloc(r->req->arena, bl + tl + 1);
    if (!path) return NULL;
    memcpy(path, base, bl);
    memcpy(path + bl, r->req->target, tl + 1);
    return path;
}

static int send_upstream(gw_req *r, uint64_t now) {
    const gw_config *cfg = gw_live(r->w->app);
    char *path = upstream_path(r);
    size_t nh;
    irn_header *hs = gw_upstream_headers(r->w->app, r->rep, r->req, r->fwd, r->nfwd, &nh);
    if (!path || !hs) return IRN_ENOMEM;
    if (r->tr) hs = gw_trace_headers(r, hs, &nh);
    uint64_t left = r->deadline - now;
    uint64_t wait =
        r->unary ? cfg->upstream.non_streaming_timeout_ns : cfg->upstream.response_timeout_ns;
    uint64_t head = wait < left ? wait : left;
    irn_client_req q = {.host = r->rep->url.host,
                        .port = r->rep->url.port,
                        .method = r->req->method,
                        .path = path,
                        .headers = hs,
                        .nheaders = nh,
                        .body = r->nparts ? NULL : r->body,
                        .body_len = r->nparts ? 0 : r->body_len,
                        .body_parts = r->nparts ? r->parts : NULL,
                        .nbody_parts = r->nparts,
                        .connect_timeout_ns = cfg->upstream.connect_timeout_ns,
                        .head_timeout_ns = head,
                        .idle_timeout_ns = cfg->upstream.idle_timeout_ns};
    r->up_status = 0;
    return irn_client_request(r->w->pool, &q, &gw_stream_cbs, r, &r->up);
}

void gw_forward(gw_req *r) {
    uint64_t now = ir_now_ns();
    if (now >= r->deadline) {
        const gw_config *cfg = gw_live(r->w->app);
        bool nst =
            r->unary && cfg->upstream.non_streaming_timeout_ns > cfg->server.request_timeout_ns;
        gw_req_fail(r, 504,
                    nst ? "non_streaming_timeout passed before an engine answered"
                        : "request_timeout passed before an engine answered");
        return;
    }
    gw_choice c = gw_choose(r);
    if (c != GW_CHOSEN) {
        no_replica(r, c);
        return;
    }
    r->attempt++;
    r->again = again;
    r->last_replica = r->rep->cfg->id;
    r->last_rep = r->rep;
    r->tried[r->rep->index / 64] |= 1ull << (r->rep->index % 64);
    gw_predict_record(r);
    if (send_upstream(r, now)) {
        r->up = NULL;
        gw_predict_undo(r);
        gw_req_release(r);
        gw_req_fail(r, 502, "cannot start the upstream request");
        return;
    }
    r->up_sent = now;
    r->up_head = 0;
    gw_req_wait_head(r);
}

static void on_backoff(uv_timer_t *t) {
    gw_req *r = t->data;
    gw_req_close_timer(r);
    if (gw_req_client_left(r)) {
        gw_req_end_client(r);
        return; /* the timer's close callback frees r */
    }
    gw_forward(r);
}

/* The backoff before attempt number r->attempt + 1: doubling, capped, and never
 * past the deadline; none for a request moved off a replica that went down. */
static uint64_t backoff_ns(gw_req *r, uint64_t now) {
    const gw_retry_cfg *c = &gw_live(r->w->app)->retry;
    if (r->move_now) {
        r->move_now = false;
        return 0;
    }
    uint64_t b = c->backoff_ns;
    for (int i = 1; i < r->attempt && b < c->max_backoff_ns; i++) b *= 2;
    if (b > c->max_backoff_ns) b = c->max_backoff_ns;
    if (now + b >= r->deadline) b = r->deadline > now ? r->deadline - now : 0;
    return b;
}

/* Waits the backoff, then tries again; or answers when nothing is left. The caller
 * still refers to r and calls gw_req_done. */
static void again(gw_req *r, int status, const char *msg) {
    const gw_config *cfg = gw_live(r->w->app);
    uint64_t now = ir_now_ns();
    if (gw_req_client_left(r)) {
        gw_req_end_client(r);
        return;
    }
    if (r->attempt >= cfg->retry.max_attempts || now >= r->deadline) {
        gw_req_answer_error(r, status, NULL, msg, NULL, 0);
        return;
    }
    atomic_fetch_add_explicit(&r->w->app->stats.retries, 1, memory_order_relaxed);
    gw_metrics_retry(r);
    if (!r->timer) {
        r->timer = malloc(sizeof *r->timer);
        if (!r->timer) {
            gw_req_answer_error(r, 500, NULL, "out of memory", NULL, 0);
            return;
        }
        uv_timer_init(&r->w->loop, r->timer);
        r->timer->data = r;
    }
    uv_timer_start(r->timer, on_backoff, (backoff_ns(r, now) + 999999) / 1000000, 0);
}
