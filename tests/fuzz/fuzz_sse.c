/* fuzz_sse: the text/event-stream decoder (src/core/sse.c).
 *
 * The first byte picks a chunk size; the rest is the stream. It is decoded
 * twice, whole and in chunks of that size, with a small cap on one event. The
 * decoder must not crash, and when neither run hits the cap the two must yield
 * the same events (its header promises output independent of chunking). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/ir_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Appends each event as "event|id|data\x1e" to the ir_buf. */
static int log_event(void *ud, const ir_sse_event *ev) {
    ir_buf *log = ud;
    if (!ev->event || !ev->data || strlen(ev->event) > 256) abort();
    ir_buf_appendf(log, "%s|%s|", ev->event, ev->id ? ev->id : "-");
    ir_buf_append(log, ev->data, ev->data_len);
    ir_buf_append(log, "\x1e", 1);
    return 0;
}

/* Decodes in chunks of `chunk` bytes; returns the first non-zero feed result. */
static int decode(const char *p, size_t n, size_t chunk, ir_buf *log) {
    ir_sse_decoder d;
    ir_sse_init(&d, 512, log_event, log);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i += chunk)
        rc = ir_sse_feed(&d, p + i, n - i < chunk ? n - i : chunk);
    if (rc == 0) rc = ir_sse_feed(&d, "\n\n", 2); /* end the last event */
    ir_sse_free(&d);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    size_t chunk = 1 + data[0] % 17;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    ir_buf whole, pieces;
    ir_buf_init(&whole, 1 << 22);
    ir_buf_init(&pieces, 1 << 22);
    int a = decode(p, n, n ? n : 1, &whole);
    int b = decode(p, n, chunk, &pieces);
    if ((a != 0 && a != -1) || (b != 0 && b != -1)) abort();
    if (a == 0 && b == 0 &&
        (whole.len != pieces.len || (whole.len && memcmp(whole.data, pieces.data, whole.len) != 0)))
        abort();
    ir_buf_free(&whole);
    ir_buf_free(&pieces);
    return 0;
}
