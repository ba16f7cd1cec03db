/* stream.c: stage 9, the engine's answer back to the client: the head, the body
 * with backpressure both ways, and the end of each attempt. An attempt that failed
 * before any byte reached the client goes back to the forward stage via r->again. */
#include "gateway/request.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

void gw_stream_on_drain(irn_resp *resp, void *ud) {
    gw_req *r = ud;
    if (r->paused && r->up) {
        r->paused = false;
        irn_client_resume(r->up);
    }
}

/* A 502, 503 or 504 before anything reached the client: another replica may do. */
static bool retry_status(gw_req *r, int status) {
    const gw_config *cfg = &r->w->app->cfg;
    return (status == 502 || status == 503 || status == 504) &&
           r->attempt < cfg->retry.max_attempts && ir_now_ns() < r->deadline;
}

static bool is_event_stream(const irn_header *h, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (h[i].name_len == 12 && strncasecmp(h[i].name, "content-type", 12) == 0)
            return memmem(h[i].value, h[i].value_len, "text/event-stream", 17) != NULL;
    return false;
}

static void on_head(void *ud, int status, const irn_header *h, size_t n) {
    gw_req *r = ud;
    if (gw_req_client_left(r)) {
        irn_client_cancel(r->up); /* on_done ends the response */
        return;
    }
    if (status >= 400) gw_predict_undo(r); /* an error: the engine cached nothing */
    if (retry_status(r, status)) {
        r->last_status = status;
        r->retry_on_done = true;
        if (status != 503) gw_replica_failed(&r->w->app->fleet, r->rep, ir_now_ns());
        irn_client_cancel(r->up);
        return;
    }
    gw_lease_head(r->rep, r->lease);
    r->lease_pending = false;
    if (!r->resp) return;
    size_t k;
    int64_t cl;
    irn_header *out = gw_headers_for_client(r, h, n, &k, &cl);
    if (!out) {
        irn_client_cancel(r->up);
        return;
    }
    r->head_sent = true;
    r->status = status;
    r->streamed = status < 300 && is_event_stream(h, n);
    int rc = irn_resp_start(r->resp, status, out, k, cl);
    gw_count_response(&r->w->app->stats, status);
    if (rc) irn_client_cancel(r->up);
}

static void on_body(void *ud, const char *data, size_t len) {
    gw_req *r = ud;
    if (!r->resp || r->client_gone) return;
    gw_predict_keep_tail(r, data, len);
    if (r->streamed && !r->first_byte_seen && len) {
        r->first_byte_seen = true;
        gw_metrics_first_byte(r);
    }
    int64_t q = irn_resp_write(r->resp, data, len);
    if (q < 0) {
        if (q == IRN_ENOBUFS && !gw_req_client_left(r)) {
            /* Its queue passed server.max_write_queue even though the engine is held at half
             * of it: the client is dropped, and the engine is not blamed for it. */
            IR_WARN("proxy", "request %s: the client reads too slowly; closing it", r->rid);
            irn_resp_close(r->resp);
            r->resp = NULL;
            gw_req_mark_gone(r);
        }
        gw_req_client_left(r); /* IRN_ECLOSED: gone, even if on_abort has not fired yet */
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

/* The engine refused with a retryable status (on_head cancelled the attempt). */
static void refused(gw_req *r) {
    r->retry_on_done = false;
    gw_req_release(r);
    char msg[96];
    snprintf(msg, sizeof msg, "every attempt failed; the last replica answered %d", r->last_status);
    r->again(r, r->last_status, msg);
}

/* The attempt failed before its head: nothing reached the client. */
static void failed_before_head(gw_req *r, int err) {
    gw_app *app = r->w->app;
    r->last_err = err;
    bool again = retryable(err);
    /* A malformed answer (IRN_EPARSE: a bad status line, chunk size or 1xx) counts
     * against the replica like a dead connection or a timeout. */
    if (again || err == IRN_EHEAD_TIMEOUT || err == IRN_EPARSE)
        gw_replica_failed(&app->fleet, r->rep, ir_now_ns());
    gw_predict_undo(r);
    atomic_fetch_add_explicit(&app->stats.upstream_errors, 1, memory_order_relaxed);
    IR_DEBUG("proxy", "request %s: replica %s failed: %s", r->rid, r->rep->cfg->id,
             irn_strerror(err));
    gw_req_release(r);
    char msg[160];
    snprintf(msg, sizeof msg, "upstream failed: %s", irn_strerror(err));
    if (again)
        r->again(r, 502, msg);
    else if (err == IRN_EHEAD_TIMEOUT)
        gw_req_answer_error(r, 504, NULL, "the engine did not answer in time", NULL, 0);
    else
        gw_req_answer_error(r, 502, NULL, msg, NULL, 0);
}

/* The response broke after it started: it is never replayed; the client sees the
 * connection end without a clean finish. */
static void broke_mid_stream(gw_req *r) {
    r->aborted = true;
    gw_predict_release(r);
    atomic_fetch_add_explicit(&r->w->app->stats.upstream_errors, 1, memory_order_relaxed);
    gw_req_release(r);
    if (r->resp) {
        irn_resp_close(r->resp);
        r->resp = NULL;
    }
}

static void on_done(void *ud, int err) {
    gw_req *r = ud;
    r->up = NULL;
    gw_req_client_left(r); /* before deciding: a failure the client caused is no engine's */
    if (r->retry_on_done) {
        refused(r);
    } else if (err == 0) {
        gw_replica_succeeded(r->rep);
        gw_predict_release(r);
        gw_predict_feedback(r);
        gw_req_release(r);
        gw_req_end_client(r);
    } else if (r->client_gone) {
        gw_predict_release(r);
        gw_req_release(r);
        gw_req_end_client(r);
    } else if (!r->head_sent) {
        failed_before_head(r, err);
    } else {
        broke_mid_stream(r);
    }
    gw_req_done(r);
}

const irn_client_cbs gw_stream_cbs = {on_head, on_body, on_done};
