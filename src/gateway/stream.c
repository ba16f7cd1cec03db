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
    const gw_config *cfg = gw_live(r->w->app);
    return (status == 502 || status == 503 || status == 504) &&
           r->attempt < cfg->retry.max_attempts && ir_now_ns() < r->deadline;
}

/* Whether the engine's head says text/event-stream. */
static bool is_event_stream(const irn_header *h, size_t n) {
    static const char ct[] = "content-type", es[] = "text/event-stream";
    for (size_t i = 0; i < n; i++)
        if (h[i].name_len == sizeof ct - 1 && strncasecmp(h[i].name, ct, sizeof ct - 1) == 0)
            return h[i].value_len >= sizeof es - 1 &&
                   strncasecmp(h[i].value, es, sizeof es - 1) == 0;
    return false;
}

/* The request stops counting as pending (waiting for its prefill) at the first byte
 * of a successful answer's body, not at its head: an engine that streams sends the
 * head at once (vLLM's server starts the response before the first token) and the
 * first chunk after the prefill, so pending measures the prefill queue. */
static void prefill_done(gw_req *r) {
    if (!r->lease_pending) return;
    gw_lease_head(r->rep, r->lease);
    r->lease_pending = false;
}

static void on_head(void *ud, int status, const irn_header *h, size_t n) {
    gw_req *r = ud;
    r->up_head = ir_now_ns();
    r->up_status = status;
    gw_req_unwait(r);
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
    if (status < 200 || status >= 300) prefill_done(r);
    if (!r->resp) return;
    size_t k;
    int64_t cl;
    irn_header *out = gw_headers_for_client(r, h, n, &k, &cl);
    if (!out) {
        irn_client_cancel(r->up);
        return;
    }
    /* A head the client side refuses to write (a status past 999, say) goes nowhere:
     * the attempt fails before any byte reached the client, as if the engine broke. */
    if (irn_resp_start(r->resp, status, out, k, cl)) {
        IR_WARN("proxy", "request %s: replica %s sent a response head that cannot be forwarded",
                r->rid, r->rep->cfg->id);
        irn_client_cancel(r->up);
        return;
    }
    r->head_sent = true;
    r->sse = is_event_stream(h, n);
    r->status = status;
    r->streamed = status < 300 && r->sse;
    gw_count_response(&r->w->app->stats, status);
}

/* Keeps the last 4 bytes of an event stream, to tell whether it stopped between
 * two events. */
static void keep_sse_end(gw_req *r, const char *data, size_t len) {
    for (size_t i = len > 4 ? len - 4 : 0; i < len; i++) {
        memmove(r->sse_end, r->sse_end + 1, 3);
        r->sse_end[3] = data[i];
    }
    r->sse_seen = (uint8_t)IR_MIN((size_t)r->sse_seen + len, 4);
}

static void on_body(void *ud, const char *data, size_t len) {
    gw_req *r = ud;
    if (len) prefill_done(r);
    if (!r->resp || r->client_gone) return;
    gw_predict_keep_tail(r, data, len);
    if (r->sse) keep_sse_end(r, data, len);
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

/* Failures before the head reached the client. The client side holds an engine's head
 * until its first body byte, so one that broke (IRN_ECLOSED_MID) or stalled
 * (IRN_EIDLE_TIMEOUT) after its head sent the client nothing either: tried again. */
static bool retryable(int err) {
    return err == IRN_ECONNECT || err == IRN_ECONNECT_TIMEOUT || err == IRN_ECLOSED_EARLY ||
           err == IRN_ERESOLVE || err == IRN_ECLOSED_MID || err == IRN_EIDLE_TIMEOUT;
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
    snprintf(msg, sizeof msg, "upstream failed: %s%s", irn_strerror(err),
             err == IRN_ECLOSED_MID || err == IRN_EIDLE_TIMEOUT ? " (after its response head)"
                                                                : "");
    if (again)
        r->again(r, err == IRN_EIDLE_TIMEOUT ? 504 : 502, msg);
    else if (err == IRN_EHEAD_TIMEOUT)
        gw_req_answer_error(r, 504, NULL, "the engine did not answer in time", NULL, 0);
    else
        gw_req_answer_error(r, 502, NULL, msg, NULL, 0);
}

/* Whether the bytes sent so far end an event (a blank line ends it). */
static bool at_event_boundary(const gw_req *r) {
    const char *t = r->sse_end;
    if (r->sse_seen < 2 || t[3] != '\n') return false;
    return t[2] == '\n' || (r->sse_seen == 4 && memcmp(t, "\r\n\r\n", 4) == 0);
}

/* An event stream that stalled past upstream.idle_timeout between two events ends
 * with an error event, which the OpenAI SDKs raise (an APIError), as vLLM reports
 * an error mid-stream: `data: {"error": {...}}`. */
static bool end_with_error_event(gw_req *r) {
    if (!r->sse || !r->resp || !at_event_boundary(r)) return false;
    ir_buf b;
    ir_buf_init(&b, 1 << 12);
    ir_buf_append_lit(&b, "data: ");
    irn_error_body(&b, 504, "upstream_stalled",
                   "the engine stopped sending mid-stream for longer than upstream.idle_timeout");
    /* irn_error_body ends the JSON with a newline: one more ends the event. */
    if (b.len && b.data[b.len - 1] != '\n') ir_buf_append_lit(&b, "\n");
    ir_buf_append_lit(&b, "\n");
    int64_t q = irn_resp_write(r->resp, b.data, b.len);
    ir_buf_free(&b);
    if (q < 0) return false;
    gw_req_end_client(r);
    return true;
}

/* The response broke after it started: it is never replayed. The client sees the
 * connection end without a clean finish, unless the engine stalled between two
 * events of a stream, which then ends with an error event. */
static void broke_mid_stream(gw_req *r, int err) {
    gw_app *app = r->w->app;
    r->aborted = true;
    gw_predict_release(r);
    atomic_fetch_add_explicit(&app->stats.upstream_errors, 1, memory_order_relaxed);
    if (err == IRN_EIDLE_TIMEOUT) {
        atomic_fetch_add_explicit(&app->stats.stalled_streams, 1, memory_order_relaxed);
        IR_WARN("proxy", "request %s: replica %s stalled mid-response for over %llu ms", r->rid,
                r->rep->cfg->id,
                (unsigned long long)(gw_live(app)->upstream.idle_timeout_ns / 1000000));
    }
    gw_req_release(r);
    if (err == IRN_EIDLE_TIMEOUT && end_with_error_event(r)) return;
    if (r->resp) {
        irn_resp_close(r->resp);
        r->resp = NULL;
    }
}

/* The attempt was cancelled because its replica went down before answering: it
 * goes to another one at once, and does not count as an attempt. */
static void moved(gw_req *r) {
    r->moving = false;
    gw_predict_undo(r);
    gw_req_release(r);
    r->attempt--;
    r->move_now = true;
    r->again(r, 502, "the replica was marked down before it answered");
}

void gw_stream_move_hung(gw_worker *w) {
    gw_req *next;
    for (gw_req *r = w->waiting; r; r = next) {
        next = r->wnext;
        if (!r->up || !r->rep || atomic_load_explicit(&r->rep->healthy, memory_order_relaxed))
            continue;
        gw_req_unwait(r);
        r->moving = true;
        atomic_fetch_add_explicit(&w->app->stats.moved_hung, 1, memory_order_relaxed);
        IR_INFO("proxy", "request %s: replica %s was marked down before answering; moving it",
                r->rid, r->rep->cfg->id);
        irn_client_cancel(r->up); /* on_done moves it */
    }
}

static void on_done(void *ud, int err) {
    gw_req *r = ud;
    gw_req_unwait(r);
    r->up = NULL;
    gw_req_client_left(r); /* before deciding: a failure the client caused is no engine's */
    if (r->retry_on_done) {
        refused(r);
    } else if (r->moving && !r->client_gone && !r->head_sent) {
        moved(r);
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
        broke_mid_stream(r, err);
    }
    gw_req_done(r);
}

const irn_client_cbs gw_stream_cbs = {on_head, on_body, on_done};
