/* upstream_headers.c: what the gateway adds to the headers of a request to an
 * engine: a replica's configured headers (an API key) and X-Forwarded-For. */
#include "gateway/gateway.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* RFC 9110's tchar. Letters, digits and '-' (nearly every byte of a header name) are
 * decided without a call: every engine response header is checked on the proxy path. */
static bool token_char(unsigned char c) {
    if ((unsigned)((c | 0x20) - 'a') < 26u || (unsigned)(c - '0') < 10u || c == '-') return true;
    return c && strchr("!#$%&'*+.^_`|~", c);
}

bool gw_header_name_ok(const char *name, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (!token_char((unsigned char)name[i])) return false;
    return len > 0;
}

/* Headers the gateway or the connection own: never configurable. */
static bool reserved(const char *name) {
    static const char *const r[] = {
        "host", "content-length", "transfer-encoding", "connection",   "keep-alive",      "upgrade",
        "te",   "trailer",        "proxy-connection",  "x-request-id", "x-forwarded-for", NULL};
    for (size_t i = 0; r[i]; i++)
        if (strcasecmp(name, r[i]) == 0) return true;
    return false;
}

void gw_check_replica_headers(const gw_replica_cfg *r, size_t i, ir_cfg_errors *errs) {
    const char *k;
    json_t *v;
    json_object_foreach(r->headers.obj, k, v) {
        if (strlen(k) > 256 || !gw_header_name_ok(k, strlen(k))) {
            ir_cfg_errors_add(errs, "replicas[%zu].headers: '%s' is not a header name", i, k);
            continue;
        }
        if (reserved(k)) {
            ir_cfg_errors_add(errs, "replicas[%zu].headers.%s: set by the gateway itself", i, k);
            continue;
        }
        const char *s = json_string_value(v);
        if (!s) {
            ir_cfg_errors_add(errs, "replicas[%zu].headers.%s: must be a string (quote it)", i, k);
            continue;
        }
        if (strpbrk(s, "\r\n") || strlen(s) > 8192)
            ir_cfg_errors_add(errs, "replicas[%zu].headers.%s: no line breaks, at most 8192 bytes",
                              i, k);
    }
}

/* A data-parallel target's pin: X-data-parallel-rank with its rank (dp.c). */
static void dp_header(gw_replica *r) {
    const gw_replica_cfg *c = r->cfg;
    if (!c->dp_target) return;
    snprintf(r->dp_value, sizeof r->dp_value, "%lld", (long long)c->dp_rank);
    r->extra[r->nextra++] =
        (irn_header){GW_DP_HEADER, strlen(GW_DP_HEADER), r->dp_value, strlen(r->dp_value)};
}

int gw_replica_headers_init(gw_replica *r) {
    json_t *obj = r->cfg->headers.obj;
    size_t n = (obj ? json_object_size(obj) : 0) + (r->cfg->dp_target ? 1 : 0);
    if (n == 0) return 0;
    r->extra = calloc(n, sizeof *r->extra);
    if (!r->extra) return -1;
    const char *k;
    json_t *v;
    if (obj) json_object_foreach(obj, k, v) {
            const char *s = json_string_value(v);
            if (!s) continue; /* refused by the check */
            r->extra[r->nextra++] = (irn_header){k, strlen(k), s, strlen(s)};
        }
    dp_header(r);
    return 0;
}

static bool replaced(const gw_replica *rep, const irn_header *h) {
    for (size_t i = 0; i < rep->nextra; i++)
        if (h->name_len == rep->extra[i].name_len &&
            strncasecmp(h->name, rep->extra[i].name, h->name_len) == 0)
            return true;
    return false;
}

/* "a, b" of the client's X-Forwarded-For headers and its address, without the port. */
static bool forwarded_for(irn_request *req, irn_header *out) {
    const char *peer = req->peer ? req->peer : "";
    size_t plen = strlen(peer);
    const char *colon = strrchr(peer, ':');
    if (colon) plen = (size_t)(colon - peer);
    if (plen >= 2 && peer[0] == '[' && peer[plen - 1] == ']') peer++, plen -= 2;
    size_t total = plen + 1;
    for (size_t i = 0; i < req->nheaders; i++)
        if (strcasecmp(req->headers[i].name, "x-forwarded-for") == 0)
            total += req->headers[i].value_len + 2;
    char *v = ir_arena_alloc(req->arena, total);
    if (!v) return false;
    size_t len = 0;
    for (size_t i = 0; i < req->nheaders; i++) {
        const irn_header *h = &req->headers[i];
        if (strcasecmp(h->name, "x-forwarded-for") != 0 || h->value_len == 0) continue;
        memcpy(v + len, h->value, h->value_len);
        len += h->value_len;
        memcpy(v + len, ", ", 2);
        len += 2;
    }
    memcpy(v + len, peer, plen);
    len += plen;
    v[len] = '\0';
    *out = (irn_header){"x-forwarded-for", 15, v, len};
    return true;
}

irn_header *gw_upstream_headers(const gw_app *app, const gw_replica *rep, irn_request *req,
                                const irn_header *fwd, size_t nfwd, size_t *n) {
    bool xff = gw_live(app)->upstream.x_forwarded_for;
    *n = 0;
    if (!xff && rep->nextra == 0) {
        *n = nfwd;
        return (irn_header *)fwd;
    }
    irn_header *out = ir_arena_alloc(req->arena, (nfwd + rep->nextra + 1) * sizeof *out);
    if (!out) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < nfwd; i++) {
        if (replaced(rep, &fwd[i])) continue;
        if (xff && fwd[i].name_len == 15 && strncasecmp(fwd[i].name, "x-forwarded-for", 15) == 0)
            continue;
        out[k++] = fwd[i];
    }
    for (size_t i = 0; i < rep->nextra; i++) out[k++] = rep->extra[i];
    if (xff && !forwarded_for(req, &out[k++])) return NULL;
    *n = k;
    return out;
}
