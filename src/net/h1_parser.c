/* h1_parser.c: HTTP/1.1 request parsing on llhttp, with limits, no sockets.
 *
 * llhttp pauses (HPE_PAUSED) at the end of the headers and at the end of each
 * message, so the caller can act before any body byte or any byte of the next
 * pipelined request is parsed. */
#include "net/net_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct irn_h1_parser {
    llhttp_t ll;
    llhttp_settings_t settings; /* llhttp keeps a pointer: must live as long */
    irn_h1_limits lim;
    irn__hdrs hdrs;
    ir_buf url;
    irn_request *req; /* built at the end of the headers */
    irn_cache *cache; /* optional */
    size_t head_bytes;
    bool msg_started;
    bool headers_done;
    bool complete; /* the last feed returned IRN_H1_REQUEST */
    bool paused;
    bool upgraded;
    int cb_status; /* a limit hit inside a callback */
    const char *cb_msg;
    int err_status;
    const char *err_msg;
    char err_buf[160];
};

static irn_h1_parser *req_parser(llhttp_t *ll) {
    return ll->data;
}

static int fail(irn_h1_parser *p, int status, const char *msg) {
    p->cb_status = status;
    p->cb_msg = msg;
    return -1;
}

static int hdrs_err(irn_h1_parser *p, int r) {
    if (r == IRN_HDRS_TOO_MANY) return fail(p, 431, "Too many request headers");
    return fail(p, 431, "Request header fields too large");
}

static int on_message_begin(llhttp_t *ll) {
    req_parser(ll)->msg_started = true;
    return 0;
}

static int on_url(llhttp_t *ll, const char *at, size_t len) {
    irn_h1_parser *p = req_parser(ll);
    if (ir_buf_append(&p->url, at, len) != 0) return fail(p, 431, "Request line too long");
    return 0;
}

static int on_header_field(llhttp_t *ll, const char *at, size_t len) {
    irn_h1_parser *p = req_parser(ll);
    if (p->headers_done) return 0; /* trailers are ignored */
    int r = irn__hdrs_name(&p->hdrs, at, len);
    return r ? hdrs_err(p, r) : 0;
}

static int on_header_field_complete(llhttp_t *ll) {
    irn_h1_parser *p = req_parser(ll);
    if (p->headers_done) return 0;
    int r = irn__hdrs_name_done(&p->hdrs);
    return r ? hdrs_err(p, r) : 0;
}

static int on_header_value(llhttp_t *ll, const char *at, size_t len) {
    irn_h1_parser *p = req_parser(ll);
    if (p->headers_done) return 0;
    int r = irn__hdrs_value(&p->hdrs, at, len);
    return r ? hdrs_err(p, r) : 0;
}

static int on_header_value_complete(llhttp_t *ll) {
    irn_h1_parser *p = req_parser(ll);
    if (p->headers_done) return 0;
    int r = irn__hdrs_value_done(&p->hdrs);
    return r ? hdrs_err(p, r) : 0;
}

static int build_request(irn_h1_parser *p) {
    irn_request *req = irn__request_new(p->cache, p->lim.max_body_bytes, p->lim.max_arena_bytes);
    if (!req) return -1;
    p->req = req;
    ir_arena *a = req->arena;
    llhttp_t *ll = &p->ll;
    req->method = ir_arena_strdup(a, llhttp_method_name((llhttp_method_t)ll->method));
    req->target = ir_arena_strndup(a, p->url.data ? p->url.data : "", p->url.len);
    if (!req->method || !req->target) return -1;
    if (irn__split_target(req)) return -1;
    if (irn__hdrs_to_request(&p->hdrs, req)) return -1;
    req->content_length = (ll->flags & F_CONTENT_LENGTH) ? (int64_t)ll->content_length : -1;
    req->chunked = (ll->flags & F_CHUNKED) != 0;
    req->http_major = ll->http_major;
    req->http_minor = ll->http_minor;
    req->keep_alive = llhttp_should_keep_alive(ll) != 0;
    if (ll->upgrade || ll->method == HTTP_CONNECT) {
        /* No upgrades here: answer the request, then close. */
        req->keep_alive = false;
        p->upgraded = true;
    }
    const irn_header *ex = irn_headers_find(req->headers, req->nheaders, "expect");
    bool has_body = req->chunked || req->content_length > 0;
    req->expect_continue = ex && has_body &&
                           irn__streq_ci(ex->value, ex->value_len, "100-continue") &&
                           (req->http_major > 1 || req->http_minor >= 1);
    req->peer = "";
    return 0;
}

static int on_headers_complete(llhttp_t *ll) {
    irn_h1_parser *p = req_parser(ll);
    p->headers_done = true;
    if (build_request(p) != 0) return fail(p, 500, "Out of memory");
    if ((ll->flags & F_CONTENT_LENGTH) && ll->content_length > p->lim.max_body_bytes)
        return fail(p, 413,
                    irn__body_too_large(p->lim.max_body_bytes, p->err_buf, sizeof p->err_buf));
    /* One allocation for a body of known length (none for a recycled buffer that fits). */
    if ((ll->flags & F_CONTENT_LENGTH) && ll->content_length <= 1024 * 1024)
        (void)ir_buf_reserve(&p->req->body, (size_t)ll->content_length);
    return HPE_PAUSED;
}

static int on_body(llhttp_t *ll, const char *at, size_t len) {
    irn_h1_parser *p = req_parser(ll);
    if (!p->req || ir_buf_append(&p->req->body, at, len) != 0)
        return fail(p, 413,
                    irn__body_too_large(p->lim.max_body_bytes, p->err_buf, sizeof p->err_buf));
    return 0;
}

static int on_message_complete(llhttp_t *ll) {
    irn_h1_parser *p = req_parser(ll);
    if (!p->req) return fail(p, 400, "Incomplete request");
    p->complete = true;
    return HPE_PAUSED;
}

irn_h1_parser *irn_h1_parser_new(const irn_h1_limits *lim) {
    irn_h1_parser *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (lim) p->lim = *lim;
    if (!p->lim.max_header_bytes) p->lim.max_header_bytes = 64 * 1024;
    if (!p->lim.max_headers) p->lim.max_headers = 100;
    if (!p->lim.max_body_bytes) p->lim.max_body_bytes = 16u * 1024 * 1024;
    if (!p->lim.max_arena_bytes) p->lim.max_arena_bytes = 64u * 1024 * 1024;
    llhttp_settings_init(&p->settings);
    p->settings.on_message_begin = on_message_begin;
    p->settings.on_url = on_url;
    p->settings.on_header_field = on_header_field;
    p->settings.on_header_field_complete = on_header_field_complete;
    p->settings.on_header_value = on_header_value;
    p->settings.on_header_value_complete = on_header_value_complete;
    p->settings.on_headers_complete = on_headers_complete;
    p->settings.on_body = on_body;
    p->settings.on_message_complete = on_message_complete;
    llhttp_init(&p->ll, HTTP_REQUEST, &p->settings);
    p->ll.data = p;
    irn__hdrs_init(&p->hdrs, p->lim.max_header_bytes + 1, p->lim.max_headers);
    ir_buf_init(&p->url, p->lim.max_header_bytes);
    return p;
}

void irn_h1_parser_set_cache(irn_h1_parser *p, irn_cache *cache) {
    p->cache = cache;
}

void irn_h1_parser_free(irn_h1_parser *p) {
    if (!p) return;
    irn_request_free(p->req);
    irn__hdrs_free(&p->hdrs);
    ir_buf_free(&p->url);
    free(p);
}

static void next_message(irn_h1_parser *p) {
    irn_request_free(p->req);
    p->req = NULL;
    irn__hdrs_reset(&p->hdrs);
    ir_buf_reset(&p->url);
    p->head_bytes = 0;
    p->msg_started = false;
    p->headers_done = false;
    p->complete = false;
}

static irn_h1_event set_error(irn_h1_parser *p, int status, const char *msg) {
    p->err_status = status;
    p->err_msg = msg;
    return IRN_H1_ERROR;
}

irn_h1_event irn_h1_parser_feed(irn_h1_parser *p, const char *data, size_t len, size_t *consumed) {
    *consumed = 0;
    if (p->err_status) return IRN_H1_ERROR;
    if (p->complete) {
        next_message(p);
        if (p->upgraded) return set_error(p, 400, "Protocol upgrades are not supported");
    }
    if (p->paused) {
        llhttp_resume(&p->ll);
        p->paused = false;
    }
    if (!data) data = "";
    bool in_head = !p->headers_done;
    /* In the head, llhttp sees at most one byte past the limit: it would scan a
     * whole 64 KiB read of one header value before its callback could stop it. */
    if (in_head && len > p->lim.max_header_bytes - p->head_bytes + 1)
        len = p->lim.max_header_bytes - p->head_bytes + 1;
    llhttp_errno_t e = llhttp_execute(&p->ll, data, len);
    size_t used = len;
    if (e != HPE_OK) {
        const char *pos = llhttp_get_error_pos(&p->ll);
        if (pos && pos >= data && pos <= data + len) used = (size_t)(pos - data);
    }
    *consumed = used;
    if (in_head && (e == HPE_OK || e == HPE_PAUSED)) {
        p->head_bytes += used;
        if (p->head_bytes > p->lim.max_header_bytes)
            return set_error(p, 431, "Request header fields too large");
    }
    switch (e) {
    case HPE_OK:
        return IRN_H1_MORE;
    case HPE_PAUSED:
        p->paused = true;
        return p->complete ? IRN_H1_REQUEST : IRN_H1_HEADERS;
    default:
        break;
    }
    /* An error found past the header limit reports the limit, whatever the
     * chunking (a split input would have hit the limit first). */
    if (in_head && p->head_bytes + used > p->lim.max_header_bytes)
        return set_error(p, 431, "Request header fields too large");
    if (p->cb_status) return set_error(p, p->cb_status, p->cb_msg);
    const char *reason = llhttp_get_error_reason(&p->ll);
    snprintf(p->err_buf, sizeof p->err_buf, "Invalid HTTP request: %s (%s)",
             reason ? reason : "parse error", llhttp_errno_name(e));
    return set_error(p, 400, p->err_buf);
}

irn_request *irn_h1_parser_request(irn_h1_parser *p) {
    return p->headers_done ? p->req : NULL;
}

irn_request *irn_h1_parser_take(irn_h1_parser *p) {
    if (!p->complete) return NULL;
    irn_request *r = p->req;
    p->req = NULL;
    return r;
}

int irn_h1_parser_error(const irn_h1_parser *p, const char **message) {
    if (message) *message = p->err_status ? p->err_msg : NULL;
    return p->err_status;
}

bool irn_h1_parser_idle(const irn_h1_parser *p) {
    return p->complete || !p->msg_started;
}
