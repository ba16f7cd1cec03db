/* sse.c: incremental text/event-stream decoder and encoder (WHATWG rules). */
#include "core/ir_core.h"

#include <string.h>

void ir_sse_init(ir_sse_decoder *d, size_t max_event, ir_sse_cb cb, void *ud) {
    memset(d, 0, sizeof *d);
    d->max_event = max_event ? max_event : (1u << 20);
    ir_buf_init(&d->line, d->max_event);
    ir_buf_init(&d->data, d->max_event);
    ir_buf_init(&d->event, 256);
    ir_buf_init(&d->id, 256);
    d->cb = cb;
    d->ud = ud;
}

void ir_sse_free(ir_sse_decoder *d) {
    ir_buf_free(&d->line);
    ir_buf_free(&d->data);
    ir_buf_free(&d->event);
    ir_buf_free(&d->id);
}

static int dispatch(ir_sse_decoder *d) {
    int rc = 0;
    if (d->has_data) {
        size_t n = d->data.len;
        if (n && d->data.data[n - 1] == '\n') n--; /* the last data line's newline */
        ir_sse_event ev = {
            .event = d->event.len ? d->event.data : "",
            .data = d->data.data ? d->data.data : "",
            .data_len = n,
            .id = d->has_id ? (d->id.data ? d->id.data : "") : NULL,
        };
        if (d->data.data) d->data.data[n] = '\0';
        rc = d->cb ? d->cb(d->ud, &ev) : 0;
    }
    ir_buf_reset(&d->data);
    ir_buf_reset(&d->event);
    ir_buf_reset(&d->id);
    d->has_data = false;
    d->has_id = false;
    return rc;
}

static int process_line(ir_sse_decoder *d, const char *p, size_t n) {
    if (n == 0) return dispatch(d);
    if (p[0] == ':') return 0; /* comment */
    const char *colon = memchr(p, ':', n);
    size_t flen = colon ? (size_t)(colon - p) : n;
    const char *v = colon ? colon + 1 : p + n;
    size_t vlen = colon ? n - flen - 1 : 0;
    if (vlen && v[0] == ' ') {
        v++;
        vlen--;
    }
    if (flen == 4 && memcmp(p, "data", 4) == 0) {
        if (ir_buf_append(&d->data, v, vlen) || ir_buf_append(&d->data, "\n", 1)) return -1;
        d->has_data = true;
    } else if (flen == 5 && memcmp(p, "event", 5) == 0) {
        ir_buf_reset(&d->event);
        if (ir_buf_append(&d->event, v, vlen)) return -1;
    } else if (flen == 2 && memcmp(p, "id", 2) == 0) {
        if (!memchr(v, '\0', vlen)) {
            ir_buf_reset(&d->id);
            if (ir_buf_append(&d->id, v, vlen)) return -1;
            d->has_id = true;
        }
    }
    /* "retry" and unknown fields are ignored. */
    return 0;
}

int ir_sse_feed(ir_sse_decoder *d, const char *p, size_t n) {
    size_t i = 0;
    if (n == 0) return 0;
    if (!d->bom_checked) {
        /* A UTF-8 BOM may open the stream; it can arrive split across chunks. */
        static const unsigned char bom[3] = {0xEF, 0xBB, 0xBF};
        while (i < n && d->line.len < 3 && (unsigned char)p[i] == bom[d->line.len]) {
            ir_buf_append(&d->line, p + i, 1);
            i++;
        }
        if (d->line.len == 3) {
            ir_buf_reset(&d->line);
            d->bom_checked = true;
        } else if (i < n || d->line.len == 0) {
            /* Not a BOM after all: the bytes kept so far are ordinary text. */
            d->bom_checked = true;
        } else {
            return 0; /* still a possible BOM prefix */
        }
    }
    while (i < n) {
        char c = p[i];
        if (d->last_was_cr) {
            d->last_was_cr = false;
            if (c == '\n') {
                i++;
                continue;
            }
        }
        /* Find the end of the current line within this chunk. */
        size_t j = i;
        while (j < n && p[j] != '\n' && p[j] != '\r') j++;
        if (j == n) {
            if (ir_buf_append(&d->line, p + i, n - i)) return -1;
            break;
        }
        int rc;
        if (d->line.len) {
            if (ir_buf_append(&d->line, p + i, j - i)) return -1;
            rc = process_line(d, d->line.data, d->line.len);
            ir_buf_reset(&d->line);
        } else {
            rc = process_line(d, p + i, j - i);
        }
        if (p[j] == '\r') d->last_was_cr = true;
        i = j + 1;
        if (rc) return rc;
    }
    return 0;
}

int ir_sse_encode_data(ir_buf *out, const char *payload, size_t n) {
    size_t start = 0;
    for (;;) {
        const char *nl = n > start ? memchr(payload + start, '\n', n - start) : NULL;
        size_t end = nl ? (size_t)(nl - payload) : n;
        if (ir_buf_append(out, "data: ", 6) || ir_buf_append(out, payload + start, end - start) ||
            ir_buf_append(out, "\n", 1))
            return -1;
        if (!nl) break;
        start = end + 1;
    }
    return ir_buf_append(out, "\n", 1);
}
