/* h2_send.c: the h2 send loop that the server (h2_server.c) and the client
 * (h2_client.c) share: nghttp2's frames, coalesced into socket writes, while the
 * socket queue is short. */
#include "net/net_internal.h"

#include <nghttp2/nghttp2.h>

static int flush(const irn__h2_out *out, ir_buf *batch) {
    if (!batch->len) return 0;
    int rc = out->write(out->ctx, batch);
    ir_buf_reset(batch);
    return rc;
}

/* One round: frames until nghttp2 has nothing more, the queue is full, or the
 * connection died. */
static int send_round(struct nghttp2_session *s, const irn__h2_out *out, ir_buf *batch) {
    while (!(out->dead && *out->dead) && out->queued(out->ctx) + batch->len < IRN__H2_PUMP_LIMIT) {
        const uint8_t *data = NULL;
        ssize_t n = nghttp2_session_mem_send(s, &data);
        if (n < 0) return IRN_EPARSE;
        if (n == 0) break;
        if (ir_buf_append(batch, data, (size_t)n) != 0) return IRN_ENOMEM;
        if (batch->len >= IRN__H2_SEND_BATCH) {
            int rc = flush(out, batch);
            if (rc) return rc;
        }
    }
    return out->dead && *out->dead ? IRN_ECLOSED : flush(out, batch);
}

int irn__h2_send(struct nghttp2_session *s, const irn__h2_out *out) {
    ir_buf batch;
    ir_buf_init(&batch, 0);
    int rc;
    do {
        *out->want_flush = false;
        rc = send_round(s, out, &batch);
    } while (rc == 0 && *out->want_flush);
    ir_buf_free(&batch);
    return rc;
}
