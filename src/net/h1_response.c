/* h1_response.c: HTTP/1.1 response parsing on llhttp, with limits, no sockets.
 *
 * The upstream client (client.c) feeds it what it reads; the fuzz target
 * tests/fuzz/fuzz_http_response.c feeds it arbitrary bytes. Interim heads (100,
 * 103) are skipped; the final head is held back and reaches on_head with the
 * first body byte or the end of the response, so a response whose framing
 * breaks before that fails with no head at all. */
#include "net/net_internal.h"

#include <stdlib.h>
#include <string.h>

static irn__h1r *resp_parser(llhttp_t *ll) {
    return ll->data;
}

static int r_field(llhttp_t *ll, const char *at, size_t len) {
    irn__h1r *p = resp_parser(ll);
    return p->head_seen ? 0 : (irn__hdrs_name(&p->hdrs, at, len) ? -1 : 0);
}
static int r_field_done(llhttp_t *ll) {
    irn__h1r *p = resp_parser(ll);
    return p->head_seen ? 0 : (irn__hdrs_name_done(&p->hdrs) ? -1 : 0);
}
static int r_value(llhttp_t *ll, const char *at, size_t len) {
    irn__h1r *p = resp_parser(ll);
    return p->head_seen ? 0 : (irn__hdrs_value(&p->hdrs, at, len) ? -1 : 0);
}
static int r_value_done(llhttp_t *ll) {
    irn__h1r *p = resp_parser(ll);
    return p->head_seen ? 0 : (irn__hdrs_value_done(&p->hdrs) ? -1 : 0);
}

/* Hands the final head to on_head once; false when the owner wants to stop. */
static bool deliver_head(irn__h1r *p) {
    if (p->head_delivered) return true;
    p->head_delivered = true;
    irn__hdrs_fill(&p->hdrs, p->harr);
    return p->cbs->on_head(p->ud, p->status, p->harr, p->hdrs.n);
}

/* Whether element s[0..n) of a Transfer-Encoding list is a coding this parser decodes:
 * chunked (llhttp's), or identity, which changes nothing. Parameters are ignored. */
static bool coding_known(const char *s, size_t n) {
    const char *semi = memchr(s, ';', n);
    if (semi) n = (size_t)(semi - s);
    while (n && (*s == ' ' || *s == '\t')) s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    return n == 0 || irn__streq_ci(s, n, "chunked") || irn__streq_ci(s, n, "identity");
}

/* A body in any other transfer coding (gzip, deflate) would reach the client still
 * coded, under headers that no longer say so: such a response is refused. */
static bool codings_known(const irn__h1r *p) {
    for (size_t i = 0; i < p->hdrs.n; i++) {
        irn_header h = irn__hdrs_at(&p->hdrs, i);
        if (!irn__streq_ci(h.name, h.name_len, "transfer-encoding")) continue;
        const char *v = h.value;
        size_t left = h.value_len;
        for (;;) {
            const char *comma = memchr(v, ',', left);
            size_t n = comma ? (size_t)(comma - v) : left;
            if (!coding_known(v, n)) return false;
            if (!comma) break;
            v += n + 1, left -= n + 1;
        }
    }
    return true;
}

static int r_headers_complete(llhttp_t *ll) {
    irn__h1r *p = resp_parser(ll);
    int status = ll->status_code;
    if (status == 100 || status == 103) {
        p->in_1xx = true; /* informational: skipped */
        irn__hdrs_reset(&p->hdrs);
        return 0;
    }
    /* 101 answers an Upgrade, which the client never asks for; other 1xx are
     * unknown to it; a status under 100 or over 599 is no status. */
    if (status < 200 || status > 599) {
        p->why = status == 101 ? "101 unasked" : "bad status";
        return -1;
    }
    if ((ll->flags & F_TRANSFER_ENCODING) && !codings_known(p)) { /* llhttp saw the header */
        p->why = "a transfer coding other than chunked";
        return -1;
    }
    p->head_seen = true;
    p->status = status;
    if (p->cbs->on_final && !p->cbs->on_final(p->ud, status)) return -1;
    /* 1: no body follows. An answer to HEAD, a 204 and a 304 end with their head,
     * whatever Content-Length or Transfer-Encoding say (RFC 9112 6.3). */
    return p->head_method || status == 204 || status == 304 ? 1 : 0;
}

static int r_body(llhttp_t *ll, const char *at, size_t len) {
    irn__h1r *p = resp_parser(ll);
    if (!deliver_head(p)) return -1;
    int rc = p->cbs->on_body(p->ud, at, len);
    return rc < 0 ? -1 : rc > 0 ? HPE_PAUSED : 0;
}

static int r_message_complete(llhttp_t *ll) {
    irn__h1r *p = resp_parser(ll);
    if (p->in_1xx) {
        p->in_1xx = false;
        return 0;
    }
    if (!deliver_head(p)) return -1;
    p->msg_done = true;
    return HPE_PAUSED;
}

static const llhttp_settings_t resp_settings = {
    .on_header_field = r_field,
    .on_header_field_complete = r_field_done,
    .on_header_value = r_value,
    .on_header_value_complete = r_value_done,
    .on_headers_complete = r_headers_complete,
    .on_body = r_body,
    .on_message_complete = r_message_complete,
};

int irn__h1r_init(irn__h1r *p, size_t max_header_bytes, size_t max_headers, const irn__h1r_cbs *cbs,
                  void *ud) {
    memset(p, 0, sizeof *p);
    p->harr = calloc(max_headers ? max_headers : 1, sizeof *p->harr);
    if (!p->harr) return -1;
    irn__hdrs_init(&p->hdrs, max_header_bytes, max_headers);
    p->cbs = cbs;
    p->ud = ud;
    return 0;
}

void irn__h1r_free(irn__h1r *p) {
    irn__hdrs_free(&p->hdrs);
    free(p->harr);
    p->harr = NULL;
}

void irn__h1r_start(irn__h1r *p, bool head_method) {
    llhttp_init(&p->ll, HTTP_RESPONSE, &resp_settings);
    p->ll.data = p;
    irn__hdrs_reset(&p->hdrs);
    p->in_1xx = p->head_seen = p->head_delivered = p->msg_done = false;
    p->head_method = head_method;
    p->status = 0;
    p->why = NULL;
}

irn__h1r_ev irn__h1r_feed(irn__h1r *p, const char *data, size_t n, size_t *used) {
    llhttp_errno_t e = llhttp_execute(&p->ll, data, n);
    const char *stop = e == HPE_PAUSED ? llhttp_get_error_pos(&p->ll) : data + n;
    *used = (size_t)(stop - data);
    if (p->msg_done) return IRN__H1R_DONE;
    if (e == HPE_PAUSED) { /* on_body asked for a pause */
        llhttp_resume(&p->ll);
        return IRN__H1R_PAUSED;
    }
    if (e != HPE_OK) {
        if (!p->why) p->why = llhttp_errno_name(e);
        return IRN__H1R_ERROR;
    }
    return IRN__H1R_MORE;
}

bool irn__h1r_eof(irn__h1r *p) {
    if (!p->head_seen || !llhttp_message_needs_eof(&p->ll)) return false;
    llhttp_errno_t e = llhttp_finish(&p->ll);
    return (e == HPE_OK || e == HPE_PAUSED) && p->msg_done;
}

bool irn__h1r_keep_alive(const irn__h1r *p) {
    return llhttp_should_keep_alive(&p->ll);
}
