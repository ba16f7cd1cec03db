/* libFuzzer: the readers of an engine's usage in the tail of its answer
 * (gw_reported_cached, gw_reported_completion). Whatever the bytes: no read past
 * them (an exact-size copy, so ASan sees one), and an answer is -1, the no-details
 * marker, or a count that is never negative; the tail as the gateway keeps it (its
 * last GW_TAIL_BYTES) reads the same as a buffer of that size. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *tail = malloc(size ? size : 1);
    if (!tail) return 0;
    memcpy(tail, data, size);
    int64_t cached = gw_reported_cached(tail, size);
    int64_t done = gw_reported_completion(tail, size);
    if (cached < 0 && cached != -1 && cached != GW_USAGE_NO_DETAILS) __builtin_trap();
    if (done < -1) __builtin_trap();
    free(tail);
    return 0;
}
