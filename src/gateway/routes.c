/* routes.c: stage 1's table: which paths the client port has, and the answers it
 * gives without an engine (/health, /v1/models, 404, 405). */
#include "gateway/request.h"

#include <string.h>

/* vLLM's POST routes whose JSON body names the model, so the gateway can pick a
 * replica of it: the two it predicts first, then those it routes by load alone. */
static const char *const proxied[] = {"/v1/chat/completions",
                                      "/v1/completions",
                                      "/v1/responses",
                                      "/tokenize",
                                      "/detokenize",
                                      "/v1/embeddings",
                                      "/pooling",
                                      "/classify",
                                      "/score",
                                      "/v1/score",
                                      "/rerank",
                                      "/v1/rerank",
                                      "/v2/rerank",
                                      "/invocations"};
#define PREDICTED 2

static int proxied_index(const char *p) {
    for (size_t i = 0; i < IR_ARRAY_LEN(proxied); i++)
        if (strcmp(p, proxied[i]) == 0) return (int)i;
    return -1;
}

bool gw_route_predicts(const char *path) {
    int i = proxied_index(path);
    return i >= 0 && i < PREDICTED;
}

static bool is_preflight(const irn_request *req) {
    return strcmp(req->method, "OPTIONS") == 0 &&
           irn_headers_find(req->headers, req->nheaders, "origin") &&
           irn_headers_find(req->headers, req->nheaders, "access-control-request-method");
}

gw_route gw_route_of(const irn_request *req, const char **allow) {
    const char *p = req->path;
    bool proxy = proxied_index(p) >= 0;
    bool local =
        strcmp(p, "/v1/models") == 0 || strcmp(p, "/health") == 0 || strcmp(p, "/ready") == 0;
    if ((proxy || local) && is_preflight(req)) return GW_ROUTE_PREFLIGHT;
    if (proxy) {
        *allow = "POST";
        return strcmp(req->method, "POST") == 0 ? GW_ROUTE_PROXY : GW_ROUTE_BAD_METHOD;
    }
    if (local) {
        *allow = "GET, HEAD";
        return strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0
                   ? GW_ROUTE_LOCAL
                   : GW_ROUTE_BAD_METHOD;
    }
    return GW_ROUTE_NONE;
}

void gw_dress_answer(gw_worker *w, const irn_request *req, irn_error_answer *e) {
    gw_request_id(w, req, e->buf, sizeof e->buf);
    e->headers[e->nheaders++] = (irn_header){"x-request-id", 12, e->buf, strlen(e->buf)};
    const char *allow = NULL;
    gw_route k = req ? gw_route_of(req, &allow) : GW_ROUTE_NONE;
    if (req && k == GW_ROUTE_NONE && e->status == 404) {
        e->type = e->message = "Not Found";
    } else if (req && k == GW_ROUTE_BAD_METHOD && e->status == 405) {
        e->type = e->message = "Method Not Allowed";
        e->headers[e->nheaders++] = (irn_header){"allow", 5, allow, strlen(allow)};
    }
}

static void answer_local(gw_worker *w, irn_request *req, irn_resp *resp, const irn_header *rid) {
    if (strcmp(req->path, "/health") == 0) {
        irn_resp_send(resp, 200, NULL, "", 0, rid, 1);
        return;
    }
    if (strcmp(req->path, "/ready") == 0) {
        gw_ready_answer(w->app, resp, rid, 1);
        return;
    }
    ir_buf b;
    ir_buf_init(&b, 0);
    gw_cards_render(w->app->cards, &b);
    irn_resp_send(resp, 200, "application/json", b.data, b.len, rid, 1);
    ir_buf_free(&b);
}

/* A CORS preflight, answered as vLLM's server answers it by default (Starlette's
 * CORSMiddleware with --allowed-origins, --allowed-methods and --allowed-headers all
 * "*"). The actual request's answer carries the engine's own CORS headers, so an
 * engine started with narrower origins still has the last word in the browser. */
static void answer_preflight(irn_request *req, irn_resp *resp, const irn_header *rid) {
    const irn_header *want =
        irn_headers_find(req->headers, req->nheaders, "access-control-request-headers");
    irn_header h[] = {
        rid[0],
        {"access-control-allow-origin", 27, "*", 1},
        {"access-control-allow-methods", 28, "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT", 44},
        {"access-control-max-age", 22, "600", 3},
        {"access-control-allow-headers", 28, want ? want->value : "", want ? want->value_len : 0},
    };
    irn_resp_send(resp, 200, "text/plain; charset=utf-8", "OK", 2, h, want ? 5 : 4);
}

void gw_answer_locally(gw_worker *w, irn_request *req, irn_resp *resp, gw_route k) {
    /* Every response carries a request id, local ones too (headers[0]). */
    irn_error_answer e = {.status = k == GW_ROUTE_NONE         ? 404
                                    : k == GW_ROUTE_BAD_METHOD ? 405
                                                               : 200};
    gw_dress_answer(w, req, &e);
    gw_count_response(&w->app->stats, e.status);
    gw_metrics_error_unrouted(w->app, e.status);
    if (k == GW_ROUTE_PREFLIGHT) {
        answer_preflight(req, resp, e.headers);
        return;
    }
    if (k == GW_ROUTE_LOCAL) {
        answer_local(w, req, resp, e.headers);
        return;
    }
    ir_buf b;
    ir_buf_init(&b, 0);
    irn_error_body(&b, e.status, e.type, e.message);
    irn_resp_send(resp, e.status, "application/json", b.data, b.len, e.headers, e.nheaders);
    ir_buf_free(&b);
}
