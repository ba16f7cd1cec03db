/* libFuzzer: calibrate's reader of an engine's usage (bench_cal_usage). Whatever
 * the bytes: no read past them (an exact-size copy, so ASan sees one), and every
 * answer is -1 or a count that is never negative. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size ? size : 1);
    if (!s) return 0;
    memcpy(s, data, size);
    static const char *const keys[] = {"prompt_tokens", "cached_tokens", "completion_tokens"};
    for (size_t i = 0; i < 3; i++) {
        double v = bench_cal_usage(s, size, keys[i]);
        if (v < 0 && v != -1) __builtin_trap();
    }
    free(s);
    return 0;
}
