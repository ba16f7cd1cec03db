/* resp.c: the public irn_resp_* functions, for HTTP/1.1 and h2 alike.
 *
 * Each response carries a small table of what its protocol does (irn__resp_ops:
 * server.c's for HTTP/1.1, h2_server.c's for h2, as h2o's protocol handlers
 * do); the functions here check their arguments, build what both protocols
 * share (the default 500, whole responses, error bodies) and call the table. */
#include "net/net_internal.h"

#include <string.h>

int irn_resp_start(irn_resp *resp, int status, const irn_header *headers, size_t nheaders,
                   int64_t content_length) {
    if (!resp || resp->state != IRN__RESP_NEW || status < 100 || status > 999) return IRN_EINVAL;
    return resp->ops->start(resp, status, headers, nheaders, content_length);
}

int64_t irn_resp_write(irn_resp *resp, const void *data, size_t len) {
    if (!resp) return IRN_EINVAL;
    return resp->ops->write(resp, data, len, false);
}

int irn_resp_send_head(irn_resp *resp) {
    if (!resp) return IRN_EINVAL;
    return resp->ops->send_head(resp);
}

int irn_resp_end(irn_resp *resp) {
    if (!resp) return IRN_EINVAL;
    return resp->ops->end(resp);
}

int irn_resp_finish(irn_resp *resp, const void *data, size_t len) {
    if (!resp) return IRN_EINVAL;
    int64_t w = len ? resp->ops->write(resp, data, len, true) : 0;
    int rc = irn_resp_end(resp);
    return w < 0 ? (int)w : rc;
}

int irn_resp_close(irn_resp *resp) {
    if (!resp) return IRN_EINVAL;
    return resp->ops->close(resp);
}

size_t irn_resp_queued(const irn_resp *resp) {
    return resp->ops->queued(resp);
}

bool irn_resp_aborted(const irn_resp *resp) {
    return resp->aborted;
}

void irn_resp_on_abort(irn_resp *resp, irn_resp_cb cb, void *ud) {
    resp->on_abort = cb;
    resp->abort_ud = ud;
}

void irn_resp_on_drain(irn_resp *resp, irn_resp_cb cb, void *ud) {
    resp->on_drain = cb;
    resp->drain_ud = ud;
}

int irn__resp_default_500(irn_resp *resp) {
    IR_WARN("net", "handler ended %s %s without a response", resp->req->method, resp->req->path);
    ir_buf body;
    ir_buf_init(&body, 4096);
    irn_error_body(&body, 500, NULL, "The handler produced no response");
    irn_header ct = {"Content-Type", 12, "application/json", 16};
    int rc = irn_resp_start(resp, 500, &ct, 1, (int64_t)body.len);
    if (rc == 0) irn_resp_write(resp, body.data, body.len);
    ir_buf_free(&body);
    return rc;
}

int irn_resp_send(irn_resp *resp, int status, const char *content_type, const void *body,
                  size_t len, const irn_header *extra, size_t nextra) {
    if (!resp || resp->state != IRN__RESP_NEW || nextra > 64) return IRN_EINVAL;
    irn_header hs[65];
    size_t n = 0;
    if (content_type)
        hs[n++] = (irn_header){"Content-Type", 12, content_type, strlen(content_type)};
    for (size_t i = 0; i < nextra; i++) hs[n++] = extra[i];
    int rc = irn_resp_start(resp, status, hs, n, (int64_t)len);
    if (rc == 0 && len) {
        int64_t w = irn_resp_write(resp, body, len);
        if (w < 0) rc = (int)w;
    }
    int rc2 = irn_resp_end(resp);
    return rc ? rc : rc2;
}

int irn_resp_send_error(irn_resp *resp, int status, const char *type, const char *message) {
    ir_buf body;
    ir_buf_init(&body, 1024 * 1024);
    if (irn_error_body(&body, status, type, message) != 0) {
        ir_buf_free(&body);
        return irn_resp_send(resp, status, "application/json", "{}", 2, NULL, 0);
    }
    int rc = irn_resp_send(resp, status, "application/json", body.data, body.len, NULL, 0);
    ir_buf_free(&body);
    return rc;
}
