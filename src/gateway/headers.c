/* headers.c: which headers cross the gateway, each way. */
#include "gateway/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Hop-by-hop by RFC 9110's fixed list, or set by the gateway itself. */
static bool stops_always(const char *name, size_t n) {
#define H(s)                                                                                       \
    { s, sizeof s - 1 }
    static const struct {
        const char *s;
        size_t n;
    } stop[] = {H("connection"), H("keep-alive"), H("proxy-connection"), H("te"), H("trailer"),
                H("transfer-encoding"), H("upgrade"), H("proxy-authenticate"),
                H("proxy-authorization"), H("http2-settings"),
                /* the gateway's own (the rank pin is its routing decision: dp.c) */
                H("host"), H("content-length"), H("expect"), H("x-request-id"),
                H("x-data-parallel-rank")};
#undef H
    for (size_t i = 0; i < IR_ARRAY_LEN(stop); i++)
        if (stop[i].n == n && strncasecmp(stop[i].s, name, n) == 0) return true;
    return false;
}

static bool is_space(char c) {
    return c == ' ' || c == '\t';
}

/* Whether a Connection header among hs[0..n) names `name`. */
static bool connection_names(const irn_header *hs, size_t n, const char *name, size_t len) {
    for (size_t i = 0; i < n; i++) {
        if (hs[i].name_len != 10 || strncasecmp(hs[i].name, "connection", 10) != 0) continue;
        const char *v = hs[i].value, *end = v + hs[i].value_len;
        while (v < end) {
            const char *comma = memchr(v, ',', (size_t)(end - v));
            const char *te = comma ? comma : end;
            while (v < te && is_space(*v)) v++;
            const char *tb = te;
            while (tb > v && is_space(tb[-1])) tb--;
            if ((size_t)(tb - v) == len && strncasecmp(v, name, len) == 0) return true;
            v = comma ? comma + 1 : end;
        }
    }
    return false;
}

bool gw_header_stops_here(const irn_header *hs, size_t n, const irn_header *h) {
    return stops_always(h->name, h->name_len) || connection_names(hs, n, h->name, h->name_len);
}

int gw_headers_for_engine(gw_req *r) {
    const irn_request *req = r->req;
    r->fwd = ir_arena_alloc(req->arena, (req->nheaders + 2) * sizeof *r->fwd);
    if (!r->fwd) return -1;
    for (size_t i = 0; i < req->nheaders; i++) {
        const irn_header *h = &req->headers[i];
        if (!gw_header_stops_here(req->headers, req->nheaders, h)) r->fwd[r->nfwd++] = *h;
    }
    r->fwd[r->nfwd++] = (irn_header){"x-request-id", 12, r->rid, strlen(r->rid)};
    return 0;
}

/* A header with a number, its value in the arena. Returns how many it wrote (0, 1). */
static size_t prediction_header(gw_req *r, irn_header *h, const char *name, uint64_t v) {
    char *s = ir_arena_alloc(r->req->arena, 24);
    if (!s) return 0;
    int len = snprintf(s, 24, "%llu", (unsigned long long)v);
    *h = (irn_header){name, strlen(name), s, (size_t)len};
    return 1;
}

/* An engine's response header the client never sees: the gateway's own x-inferrail-*
 * (it sets them itself, and an engine must not forge them), and a name that is not an
 * RFC 9110 token (an empty one included), which the client side would refuse to
 * write after the response had started. */
static bool engine_may_not_send(const irn_header *h) {
    static const char own[] = "x-inferrail-";
    if (h->name_len >= sizeof own - 1 && (h->name[0] | 0x20) == 'x' &&
        strncasecmp(h->name, own, sizeof own - 1) == 0)
        return true;
    return !gw_header_name_ok(h->name, h->name_len);
}

irn_header *gw_headers_for_client(gw_req *r, const irn_header *h, size_t n, size_t *nout,
                                  int64_t *cl) {
    irn_header *out = ir_arena_alloc(r->req->arena, (n + 6) * sizeof *out);
    if (!out) return NULL;
    size_t k = 0;
    *cl = -1;
    for (size_t i = 0; i < n; i++) {
        if (h[i].name_len == 14 && strncasecmp(h[i].name, "content-length", 14) == 0) {
            *cl = strtoll(h[i].value, NULL, 10);
            continue;
        }
        if (gw_header_stops_here(h, n, &h[i]) || engine_may_not_send(&h[i])) continue;
        out[k++] = h[i];
    }
    out[k++] = (irn_header){"x-request-id", 12, r->rid, strlen(r->rid)};
    out[k++] = (irn_header){"x-inferrail-replica", 19, r->rep->cfg->id, strlen(r->rep->cfg->id)};
    if (r->prompt.state == GW_PREDICT_OK) {
        k += prediction_header(r, &out[k], "x-inferrail-prompt-tokens", r->prompt_tokens);
        k += prediction_header(r, &out[k], "x-inferrail-cached-tokens", r->predicted_cached);
    }
    *nout = k;
    return out;
}
