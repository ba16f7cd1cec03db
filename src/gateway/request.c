/* request.c: the request object and its lifecycle: ids, answers, counting, leases,
 * freeing. The bottom of the request path (see request.h). */
#include "gateway/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool gw_request_id_ok(const char *s) {
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        /* letters, digits and the punctuation of ids in the field (tenant/uuid, base64):
         * never a space, a quote or a backslash, which would bend a text log line */
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("-_.:/+=@~", c)))
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

void gw_request_id(gw_worker *w, const irn_request *req, char *out, size_t n) {
    const char *crid = req ? irn_request_header(req, "x-request-id") : NULL;
    if (crid && gw_request_id_ok(crid))
        snprintf(out, n, "%s", crid);
    else
        gw_request_id_new(&w->rng, out);
}

void gw_count_response(gw_stats *st, int status) {
    atomic_fetch_add_explicit(status >= 500   ? &st->responses_5xx
                              : status >= 400 ? &st->responses_4xx
                                              : &st->responses_2xx,
                              1, memory_order_relaxed);
}

static void on_client_gone(irn_resp *resp, void *ud);

gw_req *gw_req_new(gw_worker *w, irn_request *req, irn_resp *resp) {
    gw_req *r = ir_freelist_pop(&w->greqs);
    if (r) {
        memset(r, 0, sizeof *r);
    } else {
        r = calloc(1, sizeof *r);
        if (!r) return NULL;
    }
    w->live++;
    r->w = w;
    r->req = req;
    r->resp = resp;
    r->arrival = ir_now_ns();
    r->deadline = r->arrival + gw_live(w->app)->server.request_timeout_ns;
    r->body = req->body.data ? req->body.data : "";
    r->body_len = req->body.len;
    gw_request_id(w, req, r->rid, sizeof r->rid);
    if (w->app->tracer) gw_trace_begin(r);
    irn_resp_on_abort(resp, on_client_gone, r);
    irn_resp_on_drain(resp, gw_stream_on_drain, r);
    return r;
}

void gw_req_answer_error(gw_req *r, int status, const char *type, const char *msg,
                         const irn_header *extra, size_t nextra) {
    if (!r->resp) return;
    ir_buf b;
    ir_buf_init(&b, 1 << 16);
    irn_error_body(&b, status, type, msg);
    irn_header hs[8];
    size_t n = 0;
    hs[n++] = (irn_header){"x-request-id", 12, r->rid, strlen(r->rid)};
    for (size_t i = 0; i < nextra && n < IR_ARRAY_LEN(hs); i++) hs[n++] = extra[i];
    irn_resp_send(r->resp, status, "application/json", b.data, b.len, hs, n);
    ir_buf_free(&b);
    r->resp = NULL;
    r->status = status;
    gw_count_response(&r->w->app->stats, status);
    gw_metrics_error(r, status);
}

void gw_req_fail_with(gw_req *r, int status, const char *type, const char *msg,
                      const irn_header *extra, size_t nextra) {
    gw_req_answer_error(r, status, type, msg, extra, nextra);
    gw_req_close_timer(r);
    gw_req_done(r);
}

void gw_req_fail(gw_req *r, int status, const char *msg) {
    gw_req_fail_with(r, status, NULL, msg, NULL, 0);
}

void gw_req_done(gw_req *r) {
    if (r->resp || r->up || r->timer || r->timers_closing || r->tokwork) return;
    gw_finish(r);
    gw_policy_put(r->policy);
    r->policy = NULL;
    gw_prompt_free(&r->prompt);
    r->w->live--;
    if (ir_freelist_push(&r->w->greqs, r)) return;
    free(r);
}

void gw_req_mark_gone(gw_req *r) {
    if (r->client_gone) return;
    r->client_gone = true;
    if (r->w->cutting) { /* the drain closed its connection: counted as cut, not as left */
        r->cut = true;
        atomic_fetch_add_explicit(&r->w->app->stats.cut_at_shutdown, 1, memory_order_relaxed);
        return;
    }
    atomic_fetch_add_explicit(&r->w->app->stats.client_disconnects, 1, memory_order_relaxed);
    gw_metrics_disconnect(r);
}

/* on_abort is not the only news of the client leaving: once the net layer has marked
 * the response aborted (its connection closes in this loop iteration, a write got
 * IRN_ECLOSED), on_abort comes only later, from the close callback, and never if the
 * response is ended first. An upstream event in the same iteration would end it first
 * (libuv runs close callbacks last, newest first), so the gateway asks here. */
bool gw_req_client_left(gw_req *r) {
    if (!r->client_gone && r->resp && irn_resp_aborted(r->resp)) gw_req_mark_gone(r);
    return r->client_gone;
}

void gw_req_end_client(gw_req *r) {
    if (!r->resp) return;
    irn_resp_end(r->resp);
    r->resp = NULL;
}

void gw_req_release(gw_req *r) {
    if (!r->rep) return;
    irp_request q = {.prompt_tokens = r->prompt_tokens, .rng = &r->w->rng};
    irp_policy_released(r->policy, r->rep->index, &q);
    gw_lease_release(r->rep, r->lease_pending, r->lease);
    r->rep = NULL;
    r->lease_pending = false;
}

void gw_req_wait_head(gw_req *r) {
    if (r->waiting) return;
    gw_worker *w = r->w;
    r->waiting = true;
    r->wprev = NULL;
    r->wnext = w->waiting;
    if (w->waiting) w->waiting->wprev = r;
    w->waiting = r;
}

void gw_req_unwait(gw_req *r) {
    if (!r->waiting) return;
    if (r->wprev)
        r->wprev->wnext = r->wnext;
    else
        r->w->waiting = r->wnext;
    if (r->wnext) r->wnext->wprev = r->wprev;
    r->waiting = false;
    r->wprev = r->wnext = NULL;
}

static void on_timer_closed(uv_handle_t *h) {
    gw_req *r = h->data;
    free(h);
    r->timers_closing--;
    gw_req_done(r);
}

/* The timer is done with as soon as it fires or the request ends: closing it is what
 * lets gw_req_done free the request (a timer left open leaked every retried one). */
void gw_req_close_timer(gw_req *r) {
    if (!r->timer) return;
    uv_timer_stop(r->timer);
    uv_close((uv_handle_t *)r->timer, on_timer_closed);
    r->timer = NULL;
    r->timers_closing++;
}

static void on_client_gone(irn_resp *resp, void *ud) {
    gw_req *r = ud;
    gw_req_mark_gone(r);
    if (r->up) {
        irn_client_cancel(r->up); /* the engine sees the close and frees the slot */
        return;                   /* the stream's done callback ends the response */
    }
    gw_req_close_timer(r);
    gw_req_end_client(r);
    gw_req_done(r);
}
