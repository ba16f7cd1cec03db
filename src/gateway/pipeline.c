/* pipeline.c: the client port's callbacks, and a proxied request's path read as a
 * list of stages (request.h numbers them; docs/internals/gateway.md explains them). */
#include "gateway/request.h"

#include <string.h>

/* Stages 4 to 8, once the prompt is prepared (on the request's loop). */
static void after_prepare(gw_req *r) {
    gw_stage_hash(r);  /* 4 */
    gw_stage_match(r); /* 5 */
    if (gw_headers_for_engine(r)) {
        gw_req_fail(r, 431, "Request headers too large.");
        return;
    }
    gw_forward(r); /* 6 to 8; stream.c and finish.c take it from there (9, 10) */
}

void gw_on_request(void *ud, irn_request *req, irn_resp *resp) {
    gw_worker *w = ud;
    atomic_fetch_add_explicit(&w->app->stats.requests, 1, memory_order_relaxed);
    const char *allow = NULL;
    gw_route k = gw_route_of(req, &allow); /* 1: accept */
    if (k != GW_ROUTE_PROXY) {
        gw_answer_locally(w, req, resp, k);
        return;
    }
    gw_req *r = gw_req_new(w, req, resp);
    if (!r) {
        irn_resp_send_error(resp, 500, NULL, "out of memory");
        return;
    }
    if (gw_live(w->app)->logging.log_prompts)
        IR_DEBUG("proxy", "request %s body: %.*s", r->rid, (int)IR_MIN(req->body.len, 65536),
                 r->body);
    if (gw_stage_resolve(r)) return;    /* 2 */
    gw_stage_prepare(r, after_prepare); /* 3, then 4 to 10 */
}

/* The server answers by itself (headers-stage rejections, 400, 408, 413, 431): the
 * request never reaches gw_on_request, so it is counted here. */
void gw_on_error(void *ud, const irn_request *req, irn_error_answer *e) {
    gw_worker *w = ud;
    atomic_fetch_add_explicit(&w->app->stats.requests, 1, memory_order_relaxed);
    gw_count_response(&w->app->stats, e->status);
    gw_metrics_error_unrouted(w->app, e->status);
    gw_dress_answer(w, req, e);
}

/* Rejections decided by the headers alone are answered before any body is read
 * (and before 100 Continue is sent); the server's answer goes through gw_on_error.
 * Without Expect: 100-continue the body is on its way anyway: gw_on_request answers,
 * the same way, and the connection stays open. */
int gw_on_headers(void *ud, irn_request *req) {
    if (!req->expect_continue) return 0;
    const char *allow;
    gw_route k = gw_route_of(req, &allow);
    if (k == GW_ROUTE_NONE) return 404;
    if (k == GW_ROUTE_BAD_METHOD) return 405;
    return 0;
}
