/* libFuzzer: the readers of an engine's usage in the tail of its answer
 * (gw_reported_cached, gw_reported_completion). Whatever the bytes: no read past
 * them (an exact-size copy, so ASan sees one), and an answer is -1, the no-details
 * marker, or a count that is never negative; the tail as the gateway keeps it (its
 * last GW_TAIL_BYTES, gw_predict_keep_tail fed the bytes in pieces) holds the
 * input's last bytes and reads the same as a buffer of that size. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_usage(const char *tail, size_t size, int64_t *cached, int64_t *done) {
    *cached = gw_reported_cached(tail, size);
    *done = gw_reported_completion(tail, size);
    if (*cached < 0 && *cached != -1 && *cached != GW_USAGE_NO_DETAILS) __builtin_trap();
    if (*done < -1) __builtin_trap();
}

/* The bytes fed as a stream would be, in pieces of a size picked by the input's
 * length, then read from the tail kept; returns the answers. */
static void kept_tail(gw_req *r, const char *data, size_t size, int64_t *cached, int64_t *done) {
    size_t piece = 1 + size % 97;
    r->prompt.state = GW_PREDICT_OK;
    r->tail_len = 0;
    for (size_t off = 0; off < size; off += piece)
        gw_predict_keep_tail(r, data + off, size - off < piece ? size - off : piece);
    size_t want = size < GW_TAIL_BYTES ? size : GW_TAIL_BYTES;
    if (r->tail_len != want || (want && memcmp(r->tail, data + size - want, want)))
        __builtin_trap();
    read_usage(r->tail, r->tail_len, cached, done);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static gw_req *r;
    if (!r && !(r = calloc(1, sizeof *r))) return 0;
    char *tail = malloc(size ? size : 1);
    if (!tail) return 0;
    memcpy(tail, data, size);
    int64_t cached, done, kc, kd;
    read_usage(tail, size, &cached, &done);
    kept_tail(r, tail, size, &kc, &kd);
    /* the kept tail reads as the input's last bytes do, in a buffer of their size */
    size_t want = size < GW_TAIL_BYTES ? size : GW_TAIL_BYTES;
    int64_t lc, ld;
    char *last = malloc(want ? want : 1); /* exact size again */
    if (!last) abort();
    memcpy(last, tail + size - want, want);
    read_usage(last, want, &lc, &ld);
    free(last);
    if (kc != lc || kd != ld || (size <= GW_TAIL_BYTES && (kc != cached || kd != done)))
        __builtin_trap();
    free(tail);
    return 0;
}
